package discretize

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
)

// Pendulum lattices of about 10⁴, 10⁵ and 10⁶ state–action pairs (5 torque levels).
var benchLattices = []struct {
	name         string
	nTheta, nDot int
}{
	{"1e4", 50, 40},
	{"1e5", 160, 125},
	{"1e6", 500, 400},
}

func benchGrid(nTheta, nDot int) *Grid {
	g, err := New(GridSpec{
		State:  []AxisSpec{{Name: "theta", N: nTheta, Lo: -math.Pi, Hi: math.Pi, Periodic: true}, {Name: "thetadot", N: nDot, Lo: -8, Hi: 8}},
		Action: []AxisSpec{{Name: "torque", N: 5, Lo: -2, Hi: 2}},
	})
	if err != nil {
		panic(err)
	}
	return g
}

func pendulumSim() (Simulator, error) { return classic.Make("Pendulum-v1") }

// BenchmarkSampleModel times building the sampled Pendulum model (K = 8,
// nearest successors) on both cores; pairs/s counts (cell, action) rows.
func BenchmarkSampleModel(b *testing.B) {
	for _, l := range benchLattices {
		g := benchGrid(l.nTheta, l.nDot)
		b.Run(l.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := SampleModel(context.Background(), g, pendulumSim, ModelConfig{Samples: 8}, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(g.NumPairs())*float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
		})
	}
}

// BenchmarkMaxEntStep times one MaxEnt IRL gradient step on the sampled
// Pendulum model with 4×4×4 RBF features plus a bias (65 features), as
// irl.MaxEnt runs it after its first evaluation: reward Φθ, warm-started soft
// value iteration at τ = 1e-3, soft policy, visit propagation, μ_π, and the
// step θ += 5e-3·∇, to the control study's tolerance 1e-8 (benchTol). It
// runs both solvers: newton (the study's default, mdp.Options.Newton) and
// fixed-point (sweeps with an Anderson history of 20, benchAnderson).
// value-sweeps and visit-sweeps count exact sweeps (for newton, one per
// Newton step plus the last); peak-MB is the live Go heap after the step
// (the model, Φ and the solver's buffers).
func BenchmarkMaxEntStep(b *testing.B) {
	spec := features.RBFSpec{Axes: []features.RBFAxis{
		features.UniformRBFAxis("theta", 4, -math.Pi, math.Pi, 2*math.Pi),
		features.UniformRBFAxis("thetadot", 4, -8, 8, 0),
		features.UniformRBFAxis("torque", 4, -2, 2, 0),
	}, Bias: true}
	for _, l := range benchLattices {
		g := benchGrid(l.nTheta, l.nDot)
		b.Run(l.name, func(b *testing.B) {
			m, err := SampleModel(context.Background(), g, pendulumSim, ModelConfig{Samples: 8}, 0)
			if err != nil {
				b.Fatal(err)
			}
			phi, err := PairFeatures(g, &spec)
			if err != nil {
				b.Fatal(err)
			}
			demos := benchDemos(m, 50, 200)
			for _, solver := range []string{"newton", "fixed-point"} {
				b.Run(solver, func(b *testing.B) {
					opts := mdp.Options{WarmStart: true, Tol: benchTol, Anderson: benchAnderson, Newton: solver == "newton"}
					o, err := irl.NewObjective(m, phi, demos, irl.Config{Solver: opts})
					if err != nil {
						b.Fatal(err)
					}
					defer o.Close()
					theta, grad := make([]float64, spec.Dim()), make([]float64, spec.Dim())
					o.Eval(grad, theta)
					floats.AddScaled(theta, 5e-3, grad)
					b.ReportAllocs()
					b.ResetTimer()
					var vs, xs int
					for b.Loop() {
						o.Eval(grad, theta)
						floats.AddScaled(theta, 5e-3, grad)
						v, x := o.Sweeps()
						vs, xs = vs+v, xs+x
					}
					b.StopTimer()
					runtime.GC()
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					b.ReportMetric(float64(ms.HeapInuse)/1e6, "peak-MB")
					b.ReportMetric(float64(m.NumPairs()), "pairs")
					b.ReportMetric(float64(vs)/float64(b.N), "value-sweeps/op")
					b.ReportMetric(float64(xs)/float64(b.N), "visit-sweeps/op")
				})
			}
		})
	}
}

// benchDemos returns n uniform-random-policy episodes of at most T steps.
func benchDemos(m *mdp.MDP, n, T int) []irl.Trajectory {
	rng := rand.New(rand.NewPCG(1, 2))
	pi := mdp.NewPolicy(m)
	var demos []irl.Trajectory
	for len(demos) < n {
		s, a := m.Rollout(rng, pi, T)
		if len(a) > 0 {
			demos = append(demos, irl.Trajectory{States: s, Actions: a})
		}
	}
	return demos
}

// The solver settings of the control study's IRL (experiments/control's
// default irl.solver_tol and irl.anderson; irl.solver is newton), so the
// benchmark times the step the study runs.
const benchTol, benchAnderson = 1e-8, 20
