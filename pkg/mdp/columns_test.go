package mdp_test

import (
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

// TestEvaluateColumnsMatchesPolicyEvaluation: each column of
// EvaluateColumns is the policy evaluation of its reward column by plain
// sweeps, cold and warm-started, with and without terminal states.
func TestEvaluateColumnsMatchesPolicyEvaluation(t *testing.T) {
	cases := []struct {
		S, A, k, nTerm int
		gamma, tau     float64
	}{
		{150, 3, 4, 0, 0.99, 1},
		{120, 4, 3, 5, 0.95, 0.1},
	}
	// d = 11: a padded second block; d = 18: two blocks and two columns
	// solved one at a time (columnScalarMax), one of them zero.
	for _, d := range []int{11, 18} {
		for ci, c := range cases {
			m := mdptest.RandomMDP(uint64(300+ci), c.S, c.A, c.k, c.nTerm, c.gamma, 0)
			ws := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-14, MaxIter: 1 << 20})
			pi := ws.SoftPolicy(nil, ws.SoftValueIteration(nil, randomReward(uint64(ci), m.NumPairs()), c.tau), c.tau)
			rewards := make([]float64, m.NumPairs()*d)
			want := make([]float64, m.NumStates*d)
			for j := range d {
				r := randomReward(uint64(10*ci+j+1), m.NumPairs())
				if j == 2 || j == 17 {
					clear(r) // a zero column
				}
				for k, v := range r {
					rewards[k*d+j] = v
				}
				v := ws.PolicyEvaluation(nil, r, pi)
				for s, vs := range v.V {
					want[s*d+j] = vs
				}
			}
			got := make([]float64, m.NumStates*d)
			st := ws.EvaluateColumns(got, rewards, d, pi, 1e-12, false)
			if st.Residual > 1e-12 || st.MatVecs == 0 {
				t.Fatalf("d=%d case %d: residual %g after %d products", d, ci, st.Residual, st.MatVecs)
			}
			bound := 1e-12 / (1 - c.gamma) * 100
			approx.Slices(t, "cold columns", got, want, bound, 0)
			// A warm start from a perturbed solution reaches the same values.
			for i := range got {
				got[i] *= 1.01
			}
			st = ws.EvaluateColumns(got, rewards, d, pi, 1e-12, true)
			if st.Residual > 1e-12 {
				t.Fatalf("d=%d case %d warm: residual %g", d, ci, st.Residual)
			}
			approx.Slices(t, "warm columns", got, want, bound, 0)
		}
	}
}

// TestReachableAndRestrict: on a chain 0 → 1 → 2 with a separate loop
// 3 ↔ 4, the states reachable from 0 are {0, 1, 2}; the restriction keeps
// their transitions, and a set that is not closed is refused.
func TestReachableAndRestrict(t *testing.T) {
	b := mdp.NewBuilder(5, 2)
	b.Gamma = 0.9
	b.Init = []float64{1, 0, 0, 0, 0}
	b.SetTerminal(2)
	for a := range 2 {
		b.AddTransition(0, a, a, 1) // action 0 stays, action 1 moves on
		b.AddTransition(1, a, 1+a, 1)
		b.AddTransition(3, a, 4, 1)
		b.AddTransition(4, a, 3, 1)
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	got := m.Reachable(m.Init)
	if len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 2 {
		t.Fatalf("reachable from 0: %v, want [0 1 2]", got)
	}
	sub, err := m.Restrict(got, m.Init)
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Validate(); err != nil {
		t.Fatal(err)
	}
	if !sub.IsTerminal(2) || sub.IsTerminal(1) {
		t.Fatalf("terminal flags %v", sub.Terminal)
	}
	if next, _ := sub.Successors(1, 1); len(next) != 1 || next[0] != 2 {
		t.Fatalf("successor of (1, 1): %v, want [2]", next)
	}
	if _, err := m.Restrict([]int{0, 1}, m.Init); err == nil {
		t.Fatal("restriction to {0, 1}, which 1 → 2 leaves, was accepted")
	}
	if _, err := m.Restrict([]int{3, 4}, m.Init); err == nil {
		t.Fatal("restriction that drops the initial state was accepted")
	}
}
