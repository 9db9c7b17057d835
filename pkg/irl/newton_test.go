package irl

import (
	"context"
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

// TestNewtonMatchesOtherSolvers: Newton's method reaches the maximizer that
// L-BFGS and long gradient ascent reach, with ‖∇‖₂ ≤ GradTol, on small
// problems with terminal states, the absorbing treatment, a finite horizon
// and, without L2, a singular-free but weakly curved objective; it says
// why it stopped when it does not converge. Both ways into the Newton
// phase are among the cases: after accepted quasi-Newton steps, and from a
// first quasi-Newton step that failed.
func TestNewtonMatchesOtherSolvers(t *testing.T) {
	var quasi, fallback int
	cases := []struct {
		name      string
		seed      uint64
		horizon   int
		tau, l2   float64
		absorbing bool
	}{
		{"tau 1 l2 0.5", 9, 0, 1, 0.5, false},
		{"tau 0.3 l2 0.1 absorbing", 4, 0, 0.3, 0.1, true},
		{"tau 1 finite horizon", 5, 12, 1, 0.1, false},
		{"tau 1 no l2", 7, 0, 1, 0, false},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, phi, demos := smallProblem(c.seed, c.seed+1)
			if c.horizon > 0 {
				m.Horizon = c.horizon
			}
			base := Config{Temperature: c.tau, L2: c.l2, Absorbing: c.absorbing, GradTol: 1e-9, MaxIter: 100,
				Solver: mdp.Options{Tol: 1e-13}}
			cfg := base
			cfg.Optimizer = OptimizerNewton
			nt, err := MaxEnt(ctx, m, phi, demos, cfg)
			if err != nil {
				t.Fatal(err)
			}
			gn := nt.GradNorm[len(nt.GradNorm)-1]
			if !nt.Converged || gn > cfg.GradTol || nt.StopReason != "" {
				t.Fatalf("Newton: converged %v, ‖∇‖ %g after %d steps (%s)", nt.Converged, gn, nt.Iterations, nt.StopReason)
			}
			cfg = base
			cfg.Optimizer, cfg.MaxIter = OptimizerGD, 200000
			cfg.LearningRate, cfg.GradTol = 0.05, 1e-10
			ref, err := MaxEnt(ctx, m, phi, demos, cfg)
			if err != nil || !ref.Converged {
				t.Fatalf("gradient ascent reference: converged %v after %d steps, err %v", ref.Converged, ref.Iterations, err)
			}
			approx.Slices(t, "θ (Newton vs gradient ascent)", nt.Theta, ref.Theta, 1e-6, 1e-6)
			approx.Equal(t, "θ_abs", nt.AbsorbingReward, ref.AbsorbingReward, 1e-6, 1e-6)
			t.Logf("Newton: %d steps (%d quasi-Newton), %d evaluations, %d exact Hessians (%d products); gradient ascent %d steps; θ = %.4f",
				nt.Iterations, nt.QuasiNewtonSteps, nt.Evaluations, nt.HessianEvaluations, nt.HessianMatVecs, ref.Iterations, nt.Theta)
			if nt.Iterations > 15 {
				t.Errorf("Newton took %d steps", nt.Iterations)
			}
			if nt.QuasiNewtonSteps > 0 {
				quasi++
			} else {
				fallback++
			}
			if floats.Norm(nt.Theta, 2) == 0 {
				t.Error("θ = 0: the test problem has no signal")
			}
			// Budget exhausted: unconverged, and the result says why.
			cfg = base
			cfg.Optimizer, cfg.MaxIter = OptimizerNewton, 1
			one, err := MaxEnt(ctx, m, phi, demos, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if one.Converged || one.StopReason == "" {
				t.Fatalf("one Newton step: converged %v, stop reason %q", one.Converged, one.StopReason)
			}
		})
	}
	if quasi == 0 || fallback == 0 {
		t.Errorf("%d fits took quasi-Newton steps and %d switched at the first step; want both kinds", quasi, fallback)
	}
}

// TestNewtonLargerModel: on a 2000-state banded MDP at γ = 0.99 (the
// control study's discount), Newton converges to ‖∇‖ ≤ 10⁻⁶ in a few steps
// and agrees with L-BFGS where L-BFGS converges.
func TestNewtonLargerModel(t *testing.T) {
	m := mdptest.BandedMDP(2000, 3, 5, 0.99)
	phi, demos := benchProblem(m, 12, 40)
	ctx := context.Background()
	cfg := Config{Temperature: 1, L2: 0.1, Optimizer: OptimizerNewton, GradTol: 1e-6, MaxIter: 50,
		Solver: mdp.Options{Tol: 1e-10, Newton: true}}
	nt, err := MaxEnt(ctx, m, phi, demos, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !nt.Converged {
		t.Fatalf("Newton: ‖∇‖ %g after %d steps (%s)", nt.GradNorm[len(nt.GradNorm)-1], nt.Iterations, nt.StopReason)
	}
	cfg.Optimizer, cfg.MaxIter = OptimizerLBFGS, 500
	lb, err := MaxEnt(ctx, m, phi, demos, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Newton %d steps %d evaluations; L-BFGS %d steps %d evaluations, converged %v (%s)",
		nt.Iterations, nt.Evaluations, lb.Iterations, lb.Evaluations, lb.Converged, lb.StopReason)
	if lb.Converged {
		approx.Slices(t, "θ (Newton vs L-BFGS)", nt.Theta, lb.Theta, 1e-5, 1e-5)
	}
}

// TestBFGSUpdateSecant: the updated model satisfies the secant condition
// H⁺s = y, stays symmetric negative definite, and is left alone when
// sᵀy ≥ 0.
func TestBFGSUpdateSecant(t *testing.T) {
	h := mat.NewSymDense(3, []float64{-4, 1, 0, 1, -3, 0.5, 0, 0.5, -2})
	s := []float64{0.3, -0.2, 0.5}
	y := []float64{-1.1, 0.4, -0.9} // sᵀy < 0
	bfgsUpdate(h, make([]float64, 3), s, y)
	hs := mat.NewVecDense(3, nil)
	hs.MulVec(h, mat.NewVecDense(3, s))
	approx.Slices(t, "H⁺s", hs.RawVector().Data, y, 1e-12, 1e-12)
	var eig mat.EigenSym
	if !eig.Factorize(h, false) {
		t.Fatal("eigendecomposition failed")
	}
	for _, v := range eig.Values(nil) {
		if !(v < 0) {
			t.Fatalf("eigenvalues %v: H⁺ is not negative definite", eig.Values(nil))
		}
	}
	before := mat.NewSymDense(3, nil)
	before.CopySym(h)
	bfgsUpdate(h, make([]float64, 3), s, []float64{1, 0, 0}) // sᵀy > 0
	if !mat.Equal(h, before) {
		t.Fatal("an update with sᵀy > 0 changed H")
	}
}

// TestNewtonSolverSameFit: the fit with the Newton–Krylov dynamic
// programming (Eisenstat–Walker forcing, ILU(0)-preconditioned GMRES) is the
// fit with plain Anderson-accelerated fixed-point sweeps, which share none
// of that code: the same θ to the solvers' tolerance, both converged.
func TestNewtonSolverSameFit(t *testing.T) {
	m := mdptest.BandedMDP(1500, 3, 5, 0.98)
	phi, demos := benchProblem(m, 10, 40)
	ctx := context.Background()
	cfg := Config{Temperature: 1, L2: 0.1, Optimizer: OptimizerNewton, GradTol: 1e-7, MaxIter: 50, Absorbing: true,
		Solver: mdp.Options{Tol: 1e-11, Newton: true}}
	nt, err := MaxEnt(ctx, m, phi, demos, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Solver.Newton = false
	fp, err := MaxEnt(ctx, m, phi, demos, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Result{nt, fp} {
		if gn := r.GradNorm[len(r.GradNorm)-1]; !r.Converged || gn > cfg.GradTol {
			t.Fatalf("converged %v, ‖∇‖ %g after %d steps (%s)", r.Converged, gn, r.Iterations, r.StopReason)
		}
	}
	approx.Slices(t, "θ (Newton–Krylov vs fixed-point solver)", nt.Theta, fp.Theta, 1e-7, 1e-7)
	approx.Equal(t, "θ_abs", nt.AbsorbingReward, fp.AbsorbingReward, 1e-7, 1e-7)
	t.Logf("Newton–Krylov: %d steps, %d value sweeps; fixed point: %d steps, %d value sweeps", nt.Iterations, nt.ValueSweeps, fp.Iterations, fp.ValueSweeps)
}

// TestNewtonJudgesConvergenceAtSolverTol: Newton's method solves loosely
// while the gradient is large (inexactTol), but the gradient it reports at
// convergence is the one a fresh objective computes at θ with the
// configured solver tolerance, and within GradTol.
func TestNewtonJudgesConvergenceAtSolverTol(t *testing.T) {
	m, phi, demos := smallProblem(9, 10)
	cfg := Config{Temperature: 1, L2: 0.1, GradTol: 1e-6, MaxIter: 100, Optimizer: OptimizerNewton,
		Solver: mdp.Options{Tol: 1e-13}}
	res, err := MaxEnt(context.Background(), m, phi, demos, cfg)
	if err != nil || !res.Converged {
		t.Fatalf("converged %v, err %v", res.Converged, err)
	}
	if inexactTol(cfg.Solver.Tol, res.GradNorm[len(res.GradNorm)-2]) <= cfg.Solver.Tol {
		t.Fatalf("the step before convergence solved at the configured tolerance already; the test needs a looser one")
	}
	cfg, _ = cfg.withDefaults()
	o, err := NewObjective(m, phi, demos, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	theta := slices.Clone(res.Theta)
	grad := make([]float64, o.Dim())
	o.Eval(grad, theta)
	fresh := floats.Norm(grad, 2)
	if got := res.GradNorm[len(res.GradNorm)-1]; fresh > cfg.GradTol || math.Abs(fresh-got) > 1e-12 {
		t.Fatalf("‖∇‖ at θ: reported %.6g, fresh solve at tol %g %.6g (GradTol %g)", got, cfg.Solver.Tol, fresh, cfg.GradTol)
	}
}

// TestHessianAfterRestore: after keep at θ₁, an Eval at θ₂ and restore,
// Hessian is the Hessian at θ₁ (that of a fresh objective evaluated at θ₁),
// not at θ₂ — what Newton's switch from a failed quasi-Newton step relies
// on.
func TestHessianAfterRestore(t *testing.T) {
	m, phi, demos := smallProblem(9, 10)
	cfg := Config{Temperature: 1, L2: 0.1, Solver: mdp.Options{Tol: 1e-13, Newton: true}}
	d := phi.RawMatrix().Cols
	th1, th2 := make([]float64, d), make([]float64, d)
	for j := range d {
		th1[j], th2[j] = 0.3*float64(j%3)-0.2, 1.5-0.4*float64(j%4)
	}
	hessAt := func(o *Objective) *mat.SymDense {
		h, _ := o.Hessian(nil, 1e-12)
		return h
	}
	fresh, err := NewObjective(m, phi, demos, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	g := make([]float64, fresh.Dim())
	fresh.Eval(g, th1)
	want := hessAt(fresh)
	fresh.Eval(g, th2)
	other := hessAt(fresh)

	o, err := NewObjective(m, phi, demos, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	o.Eval(g, th1)
	o.keep()
	o.Eval(g, th2)
	o.restore()
	got := hessAt(o)
	if mat.EqualApprox(want, other, 1e-6) {
		t.Fatal("the Hessians at θ₁ and θ₂ coincide: the test cannot tell them apart")
	}
	if !mat.EqualApprox(got, want, 1e-8*mat.Norm(want, 1)) {
		var diff mat.Dense
		diff.Sub(got, want)
		t.Fatalf("Hessian after restore differs from the Hessian at θ₁ by %g (‖H‖ %g)", mat.Norm(&diff, 1), mat.Norm(want, 1))
	}
}
