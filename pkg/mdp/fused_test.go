package mdp_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

// TestSoftValuesAndPolicyMatchesSeparateCalls checks SoftValuesAndPolicy
// against SoftValueIteration followed by SoftPolicy, bit for bit, on finite
// and infinite horizons with terminal states, at temperatures where the
// value sweep's and the policy's exponents coincide (τ = 1), differ in
// rounding (τ = 0.37) and mostly fall below the value sweep's cut-off
// (τ = 10⁻³, rewards spread over hundreds), and at τ = 0; with two workers,
// and twice on one workspace (the buffers reused).
func TestSoftValuesAndPolicyMatchesSeparateCalls(t *testing.T) {
	for _, horizon := range []int{9, 0} {
		for _, tau := range []float64{1, 0.37, 1e-3, 0} {
			m := mdptest.RandomMDP(uint64(17+horizon), 23, 4, 3, 2, 0.9, horizon)
			rng := rand.New(rand.NewPCG(uint64(horizon), 5))
			r := make([]float64, m.NumPairs())
			for i := range r {
				r[i] = 100 * rng.NormFloat64()
			}
			opts := mdp.Options{Tol: 1e-12, MaxIter: 1 << 16, Workers: 2}
			ref := mdp.NewWorkspace(m, opts)
			wantV := ref.SoftValueIteration(nil, r, tau)
			wantP := ref.SoftPolicy(nil, wantV, tau)
			ref.Close()
			ws := mdp.NewWorkspace(m, opts)
			var gotV *mdp.Values
			var gotP *mdp.Policy
			for range 2 {
				gotV, gotP = ws.SoftValuesAndPolicy(gotV, gotP, r, tau)
			}
			ws.Close()
			same := func(what string, got, want []float64) {
				t.Helper()
				if len(got) != len(want) {
					t.Fatalf("horizon %d τ %g: %s has %d entries, want %d", horizon, tau, what, len(got), len(want))
				}
				for i := range want {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("horizon %d τ %g: %s[%d] = %v, separate calls give %v", horizon, tau, what, i, got[i], want[i])
					}
				}
			}
			same("V", gotV.V, wantV.V)
			same("Q", gotV.Q, wantV.Q)
			same("policy", gotP.Prob, wantP.Prob)
			if gotP.Steps != wantP.Steps || gotP.NumStates != wantP.NumStates || gotP.NumActions != wantP.NumActions {
				t.Fatalf("horizon %d τ %g: policy shape %d×%d×%d, want %d×%d×%d", horizon, tau,
					gotP.Steps, gotP.NumStates, gotP.NumActions, wantP.Steps, wantP.NumStates, wantP.NumActions)
			}
		}
	}
}
