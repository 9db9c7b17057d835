package irl

import (
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/cpuclock"

	"github.com/fedirl/fedirl/pkg/mdp/mdptest"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// benchProblem returns features and demonstrations for m: d random features and
// nDemo uniform-random-policy episodes of at most 50 steps.
func benchProblem(m *mdp.MDP, d, nDemo int) (*mat.Dense, []Trajectory) {
	phi := randomFeatures(7, m.NumPairs(), d)
	rng := rand.New(rand.NewPCG(8, 9))
	pi := mdp.NewPolicy(m)
	var demos []Trajectory
	for len(demos) < nDemo {
		s, a := m.Rollout(rng, pi, 50)
		if len(a) > 0 {
			demos = append(demos, Trajectory{States: s, Actions: a})
		}
	}
	return phi, demos
}

var benchCases = []struct {
	name string
	m    func() *mdp.MDP
	d    int
}{
	{"10000x5", func() *mdp.MDP { return mdptest.BandedMDP(10000, 5, 10, 0.99) }, 64},
	{"Grid20x20", func() *mdp.MDP { return mdptest.SlipperyGrid(20, 0.99) }, 16},
}

// BenchmarkGradientStep times one MaxEnt IRL step as MaxEnt runs it: reward
// Φθ, warm-started soft value iteration (τ = 1e-3, tol 1e-10), soft policy,
// visit propagation, μ_π and the update θ += 5e-3·∇. The first (cold) solve
// is excluded; value-sweeps/step and visit-sweeps/step count the iterations.
func BenchmarkGradientStep(b *testing.B) {
	for _, c := range benchCases {
		m := c.m()
		phi, demos := benchProblem(m, c.d, 50)
		b.Run(c.name, func(b *testing.B) {
			o, err := NewObjective(m, phi, demos, Config{Solver: mdp.Options{WarmStart: true}})
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			theta := make([]float64, c.d)
			grad := make([]float64, c.d)
			o.Eval(grad, theta)
			floats.AddScaled(theta, 5e-3, grad)
			b.ReportAllocs()
			sweeps, visitSweeps := 0, 0
			b.ResetTimer()
			cpu0 := cpuclock.ProcessCPU()
			for b.Loop() {
				o.Eval(grad, theta)
				floats.AddScaled(theta, 5e-3, grad)
				sweeps += o.vals.Iterations
				visitSweeps += o.ws.VisitIterations()
			}
			b.ReportMetric(float64(cpuclock.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(sweeps)/float64(b.N), "value-sweeps/step")
			b.ReportMetric(float64(visitSweeps)/float64(b.N), "visit-sweeps/step")
		})
	}
}

// BenchmarkGradientStepCold times one objective and gradient evaluation from a cold start.
func BenchmarkGradientStepCold(b *testing.B) {
	for _, c := range benchCases {
		m := c.m()
		phi, demos := benchProblem(m, c.d, 50)
		b.Run(c.name, func(b *testing.B) {
			o, err := NewObjective(m, phi, demos, Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			theta := make([]float64, c.d)
			for j := range theta {
				theta[j] = 0.1 * float64(j%3-1)
			}
			grad := make([]float64, c.d)
			o.Eval(grad, theta) // allocate the buffers; warm start is off, so every op is a cold solve
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuclock.ProcessCPU()
			for b.Loop() {
				o.Eval(grad, theta)
			}
			b.ReportMetric(float64(cpuclock.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(o.vals.Iterations), "value-sweeps")
			b.ReportMetric(float64(o.ws.VisitIterations()), "visit-sweeps")
		})
	}
}
