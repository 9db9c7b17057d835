package irl

import (
	"context"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

// union returns the disjoint union of m1 and m2 (m2's states after m1's)
// with m1's initial distribution, and phi1 stacked on phi2.
func union(t *testing.T, m1, m2 *mdp.MDP, phi1, phi2 *mat.Dense) (*mdp.MDP, *mat.Dense) {
	S1, A := m1.NumStates, m1.NumActions
	b := mdp.NewBuilder(S1+m2.NumStates, A)
	b.Gamma, b.Horizon = m1.Gamma, m1.Horizon
	b.Init = make([]float64, S1+m2.NumStates)
	copy(b.Init, m1.Init)
	for off, m := range map[int]*mdp.MDP{0: m1, S1: m2} {
		for s := range m.NumStates {
			if m.IsTerminal(s) {
				b.SetTerminal(off + s)
				continue
			}
			for a := range A {
				next, prob := m.Successors(s, a)
				for i, n := range next {
					b.AddTransition(off+s, a, off+int(n), prob[i])
				}
			}
		}
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	phi := mat.NewDense(m.NumPairs(), phi1.RawMatrix().Cols, nil)
	phi.Stack(phi1, phi2)
	return m, phi
}

// TestReachableRestrictionIsExact: a fit on a model with a second,
// unreachable component gives the θ, log-likelihoods and feature
// expectations of the fit on the reachable component alone, reports the
// restriction, and the same holds with the absorbing treatment and a
// finite horizon.
func TestReachableRestrictionIsExact(t *testing.T) {
	for _, c := range []struct {
		name      string
		horizon   int
		absorbing bool
	}{{"infinite", 0, false}, {"absorbing", 0, true}, {"finite horizon", 9, false}} {
		t.Run(c.name, func(t *testing.T) {
			m1 := mdptest.RandomMDP(31, 10, 3, 2, 1, 0.9, c.horizon)
			m2 := mdptest.RandomMDP(32, 7, 3, 3, 1, 0.9, c.horizon)
			phi1, phi2 := randomFeatures(31, m1.NumPairs(), 4), randomFeatures(32, m2.NumPairs(), 4)
			demos, _ := expertDemos(m1, phi1, []float64{1, -1, 0.5, 2}, 1, 30, 20, 3)
			m, phi := union(t, m1, m2, phi1, phi2)
			cfg := Config{Temperature: 1, L2: 0.1, Optimizer: OptimizerNewton, GradTol: 1e-10, Absorbing: c.absorbing,
				Solver: mdp.Options{Tol: 1e-13}}
			ctx := context.Background()
			whole, err := MaxEnt(ctx, m, phi, demos, cfg)
			if err != nil {
				t.Fatal(err)
			}
			part, err := MaxEnt(ctx, m1, phi1, demos, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if whole.ModelStates != m.NumStates || whole.ReachableStates != part.ReachableStates || part.ReachableStates > m1.NumStates {
				t.Fatalf("states: union %d of %d reachable, part %d of %d", whole.ReachableStates, whole.ModelStates, part.ReachableStates, part.ModelStates)
			}
			approx.Slices(t, "θ", whole.Theta, part.Theta, 1e-9, 1e-9)
			approx.Slices(t, "log-likelihood", whole.LogLik, part.LogLik, 1e-9, 1e-9)
			approx.Slices(t, "μ_π", whole.ExpectedFeatures, part.ExpectedFeatures, 1e-9, 1e-9)
			approx.Equal(t, "θ_abs", whole.AbsorbingReward, part.AbsorbingReward, 1e-9, 1e-9)
		})
	}
}
