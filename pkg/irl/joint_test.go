package irl

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/jointopt"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

// jointClients builds K clients of one task: the same features and true θ,
// each with its own random transitions (the heterogeneous dynamics) and
// demonstrations of the soft-optimal policy under them.
func jointClients(t *testing.T, k int, sameDynamics bool, l2 float64) ([]*Objective, []Trajectory, *mdp.MDP, []float64) {
	t.Helper()
	const S, A, d = 12, 3, 4
	phi := randomFeatures(77, S*A, d)
	truth := []float64{1.2, -0.7, 0.4, 0.9}
	var objs []*Objective
	var all []Trajectory
	var m0 *mdp.MDP
	var counts []float64
	for i := range k {
		seed := uint64(500 + i)
		if sameDynamics {
			seed = 500
		}
		m := mdptest.RandomMDP(seed, S, A, 3, 1, 0.9, 0)
		m0 = m
		demos, _ := expertDemos(m, phi, truth, 1, 10+7*i, 25, uint64(900+i))
		o, err := NewObjective(m, phi, demos, Config{Temperature: 1, L2: l2, Solver: mdp.Options{Tol: 1e-14, MaxIter: 1 << 20}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(o.Close)
		objs = append(objs, o)
		all = append(all, demos...)
		counts = append(counts, float64(len(demos)))
	}
	return objs, all, m0, counts
}

// TestEvaluateFiniteDifferences checks each client's gradient against
// central differences of its value and its Hessian against central
// differences of its gradient, at a random θ.
func TestEvaluateFiniteDifferences(t *testing.T) {
	objs, _, _, _ := jointClients(t, 3, false, 0.05)
	rng := rand.New(rand.NewPCG(11, 12))
	for ci, o := range objs {
		d := o.Dim()
		theta := make([]float64, d)
		for j := range theta {
			theta[j] = rng.NormFloat64()
		}
		e := o.Evaluate(theta, 1e-12)
		const h = 1e-5
		for j := range d {
			tp := append([]float64(nil), theta...)
			tm := append([]float64(nil), theta...)
			tp[j] += h
			tm[j] -= h
			ep, em := o.Evaluate(tp, 1e-12), o.Evaluate(tm, 1e-12)
			fd := (ep.Value - em.Value) / (2 * h)
			if math.Abs(fd-e.Grad[j]) > 1e-7*(1+math.Abs(fd)) {
				t.Fatalf("client %d: ∂f/∂θ%d = %v, central difference %v", ci, j, e.Grad[j], fd)
			}
			for i := range d {
				fdh := (ep.Grad[i] - em.Grad[i]) / (2 * h)
				if math.Abs(fdh-e.Hess[i*d+j]) > 1e-6*(1+math.Abs(fdh)) {
					t.Fatalf("client %d: H[%d][%d] = %v, central difference %v", ci, i, j, e.Hess[i*d+j], fdh)
				}
			}
		}
	}
}

// TestPooledEqualsMaxEntOnPooledData: clients that share one model, weighted
// by their demonstration counts, have the pooled objective of MaxEnt on all
// their demonstrations together (the start distributions mix with the same
// weights), so Pooled must reach MaxEnt's own Newton fit of the pooled data.
func TestPooledEqualsMaxEntOnPooledData(t *testing.T) {
	objs, all, m, counts := jointClients(t, 3, true, 0.02)
	w := make([]float64, len(counts))
	n := 0.0
	for _, c := range counts {
		n += c
	}
	for i, c := range counts {
		w[i] = c / n
	}
	s, err := Pooled(context.Background(), objs, w, nil, jointopt.Config{GradTol: 1e-11})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Converged() || s.Rounds > 15 {
		t.Fatalf("pooled: %s after %d rounds (‖∇‖ %v)", s.Reason, s.Rounds, s.GradNorms)
	}
	ref, err := MaxEnt(context.Background(), m, randomFeatures(77, 36, 4), all, Config{Temperature: 1, L2: 0.02, Optimizer: OptimizerNewton,
		GradTol: 1e-11, MaxIter: 200, Solver: mdp.Options{Tol: 1e-14, MaxIter: 1 << 20}})
	if err != nil || !ref.Converged {
		t.Fatalf("MaxEnt on the pooled data: %v, converged %v", err, ref.Converged)
	}
	for j := range ref.Theta {
		if math.Abs(s.Theta[j]-ref.Theta[j]) > 1e-8*(1+math.Abs(ref.Theta[j])) {
			t.Fatalf("θ[%d]: pooled %v, MaxEnt on the pooled data %v", j, s.Theta[j], ref.Theta[j])
		}
	}
}

// TestPooledHeterogeneousStationary: with different dynamics the pooled θ
// is a stationary point of the weighted sum (checked on the objectives'
// own gradients, not the optimizer's record) and differs from every
// client's own optimum.
func TestPooledHeterogeneousStationary(t *testing.T) {
	objs, _, _, _ := jointClients(t, 4, false, 0.02)
	w := []float64{0.25, 0.25, 0.25, 0.25}
	s, err := Pooled(context.Background(), objs, w, nil, jointopt.Config{GradTol: 1e-11})
	if err != nil || !s.Converged() || s.Rounds > 15 {
		t.Fatalf("pooled: %v, %s after %d rounds", err, s.Reason, s.Rounds)
	}
	g := make([]float64, 4)
	sum := make([]float64, 4)
	for i, o := range objs {
		o.Eval(g, s.Theta)
		for j := range g {
			sum[j] += w[i] * g[j]
		}
	}
	for j, v := range sum {
		if math.Abs(v) > 1e-10 {
			t.Fatalf("Σ w_i ∇L_i[%d] = %v at the pooled θ", j, v)
		}
	}
	for i, o := range objs {
		o.Eval(g, s.Theta)
		norm := 0.0
		for _, v := range g {
			norm += v * v
		}
		if math.Sqrt(norm) < 1e-6 {
			t.Fatalf("client %d's own gradient vanishes at the pooled θ: the dynamics are not heterogeneous", i)
		}
	}
}

// TestPersonalizeLimits: μ = 0 gives the client's own optimum (MaxEnt's
// Newton fit), a large μ stays within O(‖∇L(θ̄)‖/μ) of the center, and the
// fit is stationary for L − (μ/2)‖θ − θ̄‖² (checked on the objective's own
// gradient).
func TestPersonalizeLimits(t *testing.T) {
	objs, _, _, _ := jointClients(t, 2, false, 0.02)
	o := objs[0]
	center := []float64{0.3, 0.1, -0.2, 0.5}
	own, err := Personalize(context.Background(), o, center, 0, jointopt.Config{GradTol: 1e-11})
	if err != nil || !own.Converged() {
		t.Fatalf("μ = 0: %v", err)
	}
	grad := make([]float64, 4)
	o.Eval(grad, own.Theta)
	for j, v := range grad {
		if math.Abs(v) > 1e-10 {
			t.Fatalf("μ = 0: ∇L[%d] = %v at the personalized θ", j, v)
		}
	}
	o.Eval(grad, center)
	g0 := 0.0
	for _, v := range grad {
		g0 = max(g0, math.Abs(v))
	}
	for _, mu := range []float64{0.5, 50, 5000} {
		s, err := Personalize(context.Background(), o, center, mu, jointopt.Config{GradTol: 1e-11})
		if err != nil || !s.Converged() {
			t.Fatalf("μ = %v: %v %s", mu, err, s.Reason)
		}
		o.Eval(grad, s.Theta)
		for j := range grad {
			if r := grad[j] - mu*(s.Theta[j]-center[j]); math.Abs(r) > 1e-9 {
				t.Fatalf("μ = %v: stationarity residual %v at %d", mu, r, j)
			}
			// ‖θ − θ̄‖∞ ≤ ‖∇L(θ̄)‖∞·√d/μ for a concave L (the pull dominates).
			if dist := math.Abs(s.Theta[j] - center[j]); dist > 2*g0*2/mu {
				t.Fatalf("μ = %v: |θ − θ̄| = %v beyond the bound %v", mu, dist, 2*g0*2/mu)
			}
		}
	}
}
