package control

import (
	"context"
	"io"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/cpuclock"
	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
)

// benchFitProblem builds the local IRL problem of client 0 of env on a
// lattice preset as the default study does (sampled model, features,
// horizon, discount and IRL settings), with 20 demonstrations (the
// default episodes_per_client) of the true-reward lattice planner acting
// in the client's real simulator, snapped to the lattice: a stand-in for
// the PPO experts' demonstrations that needs no expert training, with the
// same mismatch between the real dynamics and the lattice model.
func benchFitProblem(b testing.TB, env, lattice string) (*mdp.MDP, *mat.Dense, []irl.Trajectory, irl.Config) {
	ctx := context.Background()
	s, err := New(DefaultConfig(), b.TempDir(), 1, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	p, err := s.probe(env, lattice)
	if err != nil {
		b.Fatal(err)
	}
	g, phi, err := p.Features()
	if err != nil {
		b.Fatal(err)
	}
	m, r, err := trueModel(ctx, g, env, 0, s.modelConfig(env, 0, 1), 1)
	if err != nil {
		b.Fatal(err)
	}
	h, err := s.horizon(env)
	if err != nil {
		b.Fatal(err)
	}
	// The true-reward lattice planner of the ladder's rung (a), acting in the
	// client's real simulator; its episodes snapped to the lattice as the
	// study snaps the experts' demonstrations.
	ws := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-6, Anderson: 20, Workers: 1})
	v := ws.ValueIteration(nil, r)
	ws.Close()
	pl, err := discretize.NewPlanner(g, v.Q)
	if err != nil {
		b.Fatal(err)
	}
	e, err := registry.Make(env, 0, nil, 0)
	if err != nil {
		b.Fatal(err)
	}
	st, ok := e.(interface{ State([]float64) []float64 })
	if !ok {
		b.Fatalf("%s: the simulator's state cannot be read", env)
	}
	const episodes = 20 // the default episodes_per_client
	var demos []irl.Trajectory
	for ep := range episodes {
		e.Reset(uint64(ep))
		states := [][]float64{st.State(make([]float64, g.StateDim()))}
		var acts [][]float64
		for {
			a := pl.Act(make([]float64, g.ActionDim()), states[len(states)-1])
			_, _, term, trunc := e.Step(a)
			acts = append(acts, a)
			states = append(states, st.State(make([]float64, g.StateDim())))
			if term || trunc {
				sts, acs, err := g.SnapTrajectory(states, acts, term)
				if err != nil {
					b.Fatal(err)
				}
				demos = append(demos, irl.Trajectory{States: sts, Actions: acs})
				break
			}
		}
	}
	m.Horizon = h
	c := s.cfg.IRL
	cfg := irl.Config{LearningRate: c.LearningRate, Temperature: c.Temperature, L2: c.L2, MaxIter: s.cfg.Env[env].IRLIterations,
		Optimizer: c.Optimizer, GradTol: c.GradTol, Absorbing: c.Absorbing,
		Solver: mdp.Options{Tol: c.SolverTol, Anderson: c.Anderson, Newton: c.Solver == "newton", Workers: 1}}
	return m, phi, demos, cfg
}

// BenchmarkLocalFit times one local MaxEnt fit of the default study on its
// lattices (fine Acrobot and CartPole, paper Pendulum; benchFitProblem) on one core, with
// the well-posed protocol's optimizer (newton) and with L-BFGS, which it
// replaced. cpu-s/fit is the process CPU time per fit; converged is 1 when
// ‖∇‖ ≤ irl.grad_tol was reached. Targets (issue 36): Acrobot ≤ 3 s,
// CartPole ≤ 1.5 s. Run with -benchtime 1x: a fit takes seconds.
func BenchmarkLocalFit(b *testing.B) {
	benchLocalFits(b, []string{irl.OptimizerNewton, irl.OptimizerLBFGS}, []struct{ env, lattice string }{
		{"Acrobot-v1", "fine"}, {"CartPole-v1", "fine"}, {"Pendulum-v1", "paper"}})
}

// BenchmarkLocalFitUltra times one local fit on Pendulum's ultra lattice
// (200,000 states × 5 actions = 10⁶ pairs, a sampled model, horizon 200)
// with the well-posed protocol's optimizer, as BenchmarkLocalFit does;
// building the model and the demonstrations is not timed. Target (issue
// 36): ≤ 30 s. Run with -benchtime 1x.
func BenchmarkLocalFitUltra(b *testing.B) {
	benchLocalFits(b, []string{irl.OptimizerNewton}, []struct{ env, lattice string }{{"Pendulum-v1", "ultra"}})
}

func benchLocalFits(b *testing.B, opts []string, cases []struct{ env, lattice string }) {
	for _, c := range cases {
		b.Run(c.env+"-"+c.lattice, func(b *testing.B) {
			m, phi, demos, cfg := benchFitProblem(b, c.env, c.lattice)
			for _, opt := range opts {
				b.Run(opt, func(b *testing.B) {
					cfg := cfg
					cfg.Optimizer = opt
					var res irl.Result
					b.ResetTimer()
					cpu0 := cpuclock.ProcessCPU()
					for b.Loop() {
						var err error
						if res, err = irl.MaxEnt(context.Background(), m, phi, demos, cfg); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(cpuclock.ProcessCPU()-cpu0)/1e9/float64(b.N), "cpu-s/fit")
					b.ReportMetric(float64(res.Iterations), "iterations")
					b.ReportMetric(float64(res.Evaluations), "evaluations")
					b.ReportMetric(float64(res.ValueSweeps), "value-sweeps")
					b.ReportMetric(float64(res.VisitSweeps), "visit-sweeps")
					b.ReportMetric(float64(res.QuasiNewtonSteps), "quasi-newton-steps")
					b.ReportMetric(float64(res.HessianEvaluations), "exact-hessians")
					b.ReportMetric(float64(res.HessianMatVecs), "hessian-matvecs")
					conv := 0.0
					if res.Converged {
						conv = 1
					}
					b.ReportMetric(conv, "converged")
					b.ReportMetric(res.GradNorm[len(res.GradNorm)-1], "grad-norm")
					b.ReportMetric(float64(res.ReachableStates), "reachable-states")
					b.ReportMetric(float64(res.ModelStates), "states")
					b.ReportMetric(float64(m.Horizon), "horizon")
				})
			}
		})
	}
}

// BenchmarkHessianCartPole times one exact Hessian of the MaxEnt objective
// on CartPole's fine lattice (50,401 states × 2 actions, 65 features, the
// well-posed protocol's τ and λ) at θ₁ = 10⁻²·∇(0), about a Newton step's
// size from 0, on one core, with the column solves' relative residual
// 10⁻³: cold (no ψ to start the 65 column solves from) and warm (ψ from
// the Hessian at θ = 0, as the fit's second exact Hessian starts).
func BenchmarkHessianCartPole(b *testing.B) {
	m, phi, demos, cfg := benchFitProblem(b, "CartPole-v1", "fine")
	cfg.Solver.WarmStart, cfg.Solver.Workers = true, 1
	for _, warm := range []bool{false, true} {
		name := "cold"
		if warm {
			name = "warm"
		}
		b.Run(name, func(b *testing.B) {
			mv := 0
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				o, err := irl.NewObjective(m, phi, demos, cfg)
				if err != nil {
					b.Fatal(err)
				}
				theta, grad := make([]float64, o.Dim()), make([]float64, o.Dim())
				o.Eval(grad, theta)
				if warm {
					o.Hessian(nil, 1e-3)
				}
				for j := range theta {
					theta[j] = 1e-2 * grad[j]
				}
				o.Eval(grad, theta)
				b.StartTimer()
				cpu0 := cpuclock.ProcessCPU()
				_, st := o.Hessian(nil, 1e-3)
				cpu += cpuclock.ProcessCPU() - cpu0
				mv += st.MatVecs
				b.StopTimer()
				o.Close()
				b.StartTimer()
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(mv)/float64(b.N), "matvecs/op")
		})
	}
}
