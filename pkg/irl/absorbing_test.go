package irl

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

// oneStateTask is a single non-terminal state with two actions that both
// loop to it; φ(s,a) = [1, 1{a = 1}] (a bias and an action indicator).
// Demonstrations are truncated after T steps and take action 1 in a
// fraction f of the steps (the same fraction at every time step).
func oneStateTask(t *testing.T, gamma float64, T int, f float64, horizon int) (*mdp.MDP, *mat.Dense, []Trajectory) {
	t.Helper()
	b := mdp.NewBuilder(1, 2)
	b.Gamma, b.Horizon = gamma, horizon
	b.AddTransition(0, 0, 0, 1)
	b.AddTransition(0, 1, 0, 1)
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	phi := mat.NewDense(2, 2, []float64{1, 0, 1, 1})
	// 10 demonstrations; in demonstration i step t takes action 1 when
	// (i + 10t) mod 10 < 10f, so every time step has the fraction f.
	var demos []Trajectory
	for i := range 10 {
		var tr Trajectory
		for range T {
			tr.States = append(tr.States, 0)
			a := 0
			if float64(i) < 10*f {
				a = 1
			}
			tr.Actions = append(tr.Actions, a)
		}
		demos = append(demos, tr)
	}
	return m, phi, demos
}

// TestFiniteHorizonRemovesTruncationBias: with demonstrations truncated at
// T steps, the infinite-horizon model has μ_π[bias] = 1/(1−γ) for every θ
// while μ_D[bias] = (1−γ^T)/(1−γ), so the bias column's gap is the constant
// −γ^T/(1−γ) that no θ can close (and L2 turns it into θ_bias =
// −γ^T/(λ(1−γ))). With the model's horizon set to T the gap closes, and the
// action preference is the closed form θ₁ = τ·logit(f).
func TestFiniteHorizonRemovesTruncationBias(t *testing.T) {
	const gamma, T, f, tau, l2 = 0.99, 200, 0.7, 0.5, 1e-3
	ctx := context.Background()
	cfg := Config{Temperature: tau, L2: l2, Optimizer: OptimizerLBFGS, MaxIter: 200, GradTol: 1e-8}

	m, phi, demos := oneStateTask(t, gamma, T, f, 0)
	inf, err := MaxEnt(ctx, m, phi, demos, cfg)
	if err != nil {
		t.Fatal(err)
	}
	wantGap := -math.Pow(gamma, T) / (1 - gamma)
	approx.Equal(t, "infinite-horizon bias gap μ_D − μ_π", inf.EmpiricalFeatures[0]-inf.ExpectedFeatures[0], wantGap, 1e-6, 1e-6)
	approx.Equal(t, "infinite-horizon θ_bias", inf.Theta[0], wantGap/l2, 1e-4, 0)
	approx.Equal(t, "infinite-horizon bias gradient at θ = 0 (Result.Gradient0)", inf.Gradient0[0], wantGap, 1e-9, 1e-9)

	m, phi, demos = oneStateTask(t, gamma, T, f, T)
	fin, err := MaxEnt(ctx, m, phi, demos, Config{Temperature: tau, Optimizer: OptimizerLBFGS, MaxIter: 200, GradTol: 1e-8})
	if err != nil {
		t.Fatal(err)
	}
	if !fin.Converged {
		t.Fatalf("finite-horizon fit did not converge: ‖∇‖ = %g", fin.GradNorm[len(fin.GradNorm)-1])
	}
	for j := range 2 {
		approx.Equal(t, "finite-horizon feature gap", fin.EmpiricalFeatures[j]-fin.ExpectedFeatures[j], 0, 1e-8, 0)
	}
	approx.Equal(t, "θ₁ = τ·logit(f)", fin.Theta[1], tau*math.Log(f/(1-f)), 1e-6, 0)
	approx.Equal(t, "finite-horizon θ_bias (unidentified, stays at 0)", fin.Theta[0], 0, 1e-9, 0)
}

// TestAbsorbingMatchesExplicitAbsorbingState checks Config.Absorbing
// against a hand-built problem: the same MDP with each terminal state
// replaced by an explicit self-looping state with its own indicator
// feature, and every terminated demonstration padded with absorbing steps
// up to the horizon. Objective, gradient, μ_D and the learned θ must agree.
func TestAbsorbingMatchesExplicitAbsorbingState(t *testing.T) {
	const S, A, H = 10, 3, 12
	m := mdptest.RandomMDP(5, S, A, 3, 1, 0.95, H)
	rng := rand.New(rand.NewPCG(3, 4))
	d := 4
	phi := mat.NewDense(S*A, d, nil)
	for k := range S * A {
		if m.IsTerminal(k / A) {
			continue
		}
		for j := range d {
			phi.Set(k, j, rng.NormFloat64())
		}
	}
	// Demonstrations: rollouts of a random policy, final state included.
	pi := mdp.NewPolicy(m)
	var demos []Trajectory
	terminated := 0
	for range 30 {
		st, ac := m.Rollout(rng, pi, H)
		if len(ac) == 0 {
			continue
		}
		if m.IsTerminal(st[len(st)-1]) {
			terminated++
		}
		demos = append(demos, Trajectory{States: st, Actions: ac})
	}
	if terminated == 0 || terminated == len(demos) {
		t.Fatalf("%d of %d demonstrations terminated: the test needs both kinds", terminated, len(demos))
	}

	// The explicit problem.
	b := mdp.NewBuilder(S, A)
	b.Gamma, b.Horizon, b.Init = m.Gamma, m.Horizon, m.Init
	for s := range S {
		for a := range A {
			if m.IsTerminal(s) {
				b.AddTransition(s, a, s, 1)
				continue
			}
			next, prob := m.Successors(s, a)
			for i, n := range next {
				b.AddTransition(s, a, int(n), prob[i])
			}
		}
	}
	me, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	phiE := mat.NewDense(S*A, d+1, nil)
	for k := range S * A {
		if m.IsTerminal(k / A) {
			phiE.Set(k, d, 1)
		} else {
			copy(phiE.RawRowView(k)[:d], phi.RawRowView(k))
		}
	}
	var padded []Trajectory
	for _, tr := range demos {
		p := Trajectory{States: append([]int(nil), tr.States...), Actions: append([]int(nil), tr.Actions...)}
		if last := p.States[len(p.States)-1]; m.IsTerminal(last) {
			for len(p.Actions) < H {
				p.Actions = append(p.Actions, 0)
				p.States = append(p.States, last)
			}
		}
		padded = append(padded, p)
	}

	cfg := Config{Temperature: 0.7, L2: 0.1}
	acfg := cfg
	acfg.Absorbing = true
	oa, err := NewObjective(m, phi, demos, acfg)
	if err != nil {
		t.Fatal(err)
	}
	defer oa.Close()
	oe, err := NewObjective(me, phiE, padded, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer oe.Close()
	if oa.Dim() != d+1 {
		t.Fatalf("absorbing objective has %d features, want %d", oa.Dim(), d+1)
	}
	approx.Slices(t, "μ_D", oa.EmpiricalFeatures(), oe.EmpiricalFeatures(), 1e-12, 1e-12)
	for range 5 {
		theta := make([]float64, d+1)
		for j := range theta {
			theta[j] = rng.NormFloat64()
		}
		ga, ge := make([]float64, d+1), make([]float64, d+1)
		objA, _ := oa.Eval(ga, theta)
		objE, _ := oe.Eval(ge, theta)
		approx.Equal(t, "objective", objA, objE, 1e-9, 1e-9)
		approx.Slices(t, "gradient", ga, ge, 1e-9, 1e-9)
	}

	res, err := MaxEnt(context.Background(), m, phi, demos, Config{Temperature: 0.7, L2: 0.1, Absorbing: true, Optimizer: OptimizerLBFGS, MaxIter: 100, GradTol: 1e-8})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := MaxEnt(context.Background(), me, phiE, padded, Config{Temperature: 0.7, L2: 0.1, Optimizer: OptimizerLBFGS, MaxIter: 100, GradTol: 1e-8})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Theta) != d {
		t.Fatalf("Theta has %d entries, want %d (θ_abs separate)", len(res.Theta), d)
	}
	approx.Slices(t, "θ", res.Theta, ref.Theta[:d], 1e-5, 1e-5)
	approx.Equal(t, "θ_abs", res.AbsorbingReward, ref.Theta[d], 1e-5, 1e-5)
	approx.Equal(t, "absorbing μ_D", res.AbsorbingEmpirical, ref.EmpiricalFeatures[d], 1e-12, 1e-12)
}

// TestLBFGSMatchesGradientAscent: L-BFGS and many small gradient-ascent
// steps reach the same maximizer of the (strictly concave with L2)
// objective, where the gradient vanishes.
func TestLBFGSMatchesGradientAscent(t *testing.T) {
	m, phi, demos := smallProblem(9, 1)
	ctx := context.Background()
	lb, err := MaxEnt(ctx, m, phi, demos, Config{Temperature: 1, L2: 0.5, Optimizer: OptimizerLBFGS, MaxIter: 200, GradTol: 1e-9})
	if err != nil {
		t.Fatal(err)
	}
	if !lb.Converged {
		t.Fatalf("L-BFGS did not converge: ‖∇‖ = %g", lb.GradNorm[len(lb.GradNorm)-1])
	}
	gd, err := MaxEnt(ctx, m, phi, demos, Config{Temperature: 1, L2: 0.5, Optimizer: OptimizerGD, LearningRate: 0.05, MaxIter: 20000, GradTol: 1e-10})
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "θ (L-BFGS vs gradient ascent)", lb.Theta, gd.Theta, 1e-6, 1e-6)
	if lb.Iterations >= gd.Iterations/10 {
		t.Errorf("L-BFGS took %d iterations, gradient ascent %d", lb.Iterations, gd.Iterations)
	}
	if n := floats.Norm(lb.Theta, 2); n == 0 {
		t.Error("θ = 0: the test problem has no signal")
	}
}

// TestLBFGSWarmStart: L-BFGS started at its own optimum (Config.Theta0, as
// the federation warm-starts a round) stops at once with that θ and its
// log-likelihood, instead of restarting from zero.
func TestLBFGSWarmStart(t *testing.T) {
	m, phi, demos := smallProblem(4, 2)
	cfg := Config{Temperature: 1, L2: 0.5, Optimizer: OptimizerLBFGS, MaxIter: 200, GradTol: 1e-8}
	first, err := MaxEnt(context.Background(), m, phi, demos, cfg)
	if err != nil || !first.Converged {
		t.Fatalf("cold start: converged %v, err %v", first.Converged, err)
	}
	cfg.Theta0 = first.Theta
	warm, err := MaxEnt(context.Background(), m, phi, demos, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !warm.Converged || warm.Iterations != 0 {
		t.Fatalf("warm start at the optimum: converged %v after %d iterations, want 0", warm.Converged, warm.Iterations)
	}
	approx.Slices(t, "θ", warm.Theta, first.Theta, 0, 0)
	// Equal to the value solver's tolerance (the first run's values were warm-started).
	approx.Equal(t, "log-likelihood at θ0", warm.LogLik[0], first.LogLik[len(first.LogLik)-1], 1e-8, 1e-8)
}

// smallProblem returns a random 6-state, 2-action MDP (one terminal state),
// 3 random features and 20 uniform-policy demonstrations, from seed.
func smallProblem(mdpSeed, seed uint64) (*mdp.MDP, *mat.Dense, []Trajectory) {
	m := mdptest.RandomMDP(mdpSeed, 6, 2, 2, 1, 0.9, 0)
	rng := rand.New(rand.NewPCG(seed, seed))
	phi := mat.NewDense(12, 3, nil)
	for i := range 12 {
		for j := range 3 {
			phi.Set(i, j, rng.Float64())
		}
	}
	pi := mdp.NewPolicy(m)
	var demos []Trajectory
	for range 20 {
		st, ac := m.Rollout(rng, pi, 30)
		if len(ac) > 0 {
			demos = append(demos, Trajectory{States: st[:len(ac)], Actions: ac})
		}
	}
	return m, phi, demos
}
