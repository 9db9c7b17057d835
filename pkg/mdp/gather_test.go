package mdp

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGatherTemplatesMatchMerge checks that the rows of I − γP_π built
// from the row templates (a policy keeping every action of a state, or
// one) equal, bit for bit, the rows merged on the spot for every state,
// on a random model with repeated successors, self-loops and terminal
// states, under policies that drop every subset of actions, with one and
// with three goroutines.
func TestGatherTemplatesMatchMerge(t *testing.T) {
	const S, A = 300, 3
	rng := rand.New(rand.NewPCG(5, 6))
	m := localMDP(S, A, 0.95)
	for _, workers := range []int{1, 3} {
		ws := NewWorkspace(m, Options{Workers: workers})
		nt := ws.newton()
		pi := NewPolicy(m)
		kinds := map[string]int{}
		for trial := range 4 {
			for s := range S {
				p := pi.Prob[s*A : (s+1)*A]
				mask := 1 + rng.IntN(1<<A-1) // the actions kept, never none
				if trial == 0 {
					mask = 1<<A - 1
				}
				sum := 0.0
				for a := range p {
					p[a] = 0.1 + rng.Float64()
					if mask&(1<<a) == 0 {
						p[a] = []float64{0, 1e-20, dropPolicy / 2}[rng.IntN(3)]
					}
					sum += p[a]
				}
				for a := range p {
					p[a] /= sum
				}
				switch n := popcount(mask); {
				case n == A:
					kinds["all"]++
				case n == 1:
					kinds["one"]++
				default:
					kinds["other"]++
				}
			}
			ws.pi = pi
			ws.build(ws.nt.a)
			got := nt.a
			gotPtr, gotCol, gotVal, gotDiag := slices.Clone(got.ptr), slices.Clone(got.col[:got.ptr[S]]), slices.Clone(got.val[:got.ptr[S]]), slices.Clone(got.diag)
			// The reference: every row merged on the spot.
			for s := range S {
				ws.gatherMerge(0, s)
			}
			ws.pi = nil
			want := newCSR(S, nt.capPtr[S])
			for s := range S {
				want.ptr[s+1] = want.ptr[s] + nt.cnt[s]
				base := nt.capPtr[s]
				copy(want.col[want.ptr[s]:], nt.capCol[base:base+nt.cnt[s]])
				copy(want.val[want.ptr[s]:], nt.capVal[base:base+nt.cnt[s]])
			}
			want.findDiag(0, S)
			if !slices.Equal(gotPtr, want.ptr) || !slices.Equal(gotCol, want.col[:want.ptr[S]]) || !slices.Equal(gotDiag, want.diag) {
				t.Fatalf("workers=%d trial %d: row pattern differs from the merged rows", workers, trial)
			}
			for q, v := range want.val[:want.ptr[S]] {
				if math.Float64bits(v) != math.Float64bits(gotVal[q]) && !(v == 0 && gotVal[q] == 0) {
					t.Fatalf("workers=%d trial %d: entry %d is %v, merged %v", workers, trial, q, gotVal[q], v)
				}
			}
		}
		ws.Close()
		if kinds["all"] == 0 || kinds["one"] == 0 || kinds["other"] == 0 {
			t.Fatalf("policies drew %v: every case must occur", kinds)
		}
	}
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// localMDP returns a model with S states and A actions whose pairs have
// 1–6 transitions of equal weight to states within ±4 (self-loops and
// repeated successors included), every 37th state terminal; this
// package's internal tests cannot import mdptest.
func localMDP(S, A int, gamma float64) *MDP {
	rng := rand.New(rand.NewPCG(uint64(S), uint64(A)))
	b := NewBuilder(S, A)
	b.Gamma = gamma
	for s := range S {
		if s%37 == 0 {
			b.SetTerminal(s)
			continue
		}
		for a := range A {
			k := 1 + rng.IntN(6)
			for range k {
				next := s + rng.IntN(9) - 4
				b.AddTransition(s, a, (next+S)%S, 1/float64(k))
			}
		}
	}
	m, err := b.Build()
	if err != nil {
		panic(err)
	}
	return m
}

// TestNewtonPolicyFromSweepExponentials checks that the Newton solver's
// policies taken from the sweeps' exponentials leave its values, action
// values, sweep count and final policy the same, bit for bit, as
// computing every policy from Q anew, at τ = 1 (the exponents coincide)
// and τ = 0.37 (they differ in rounding), cold and warm started.
func TestNewtonPolicyFromSweepExponentials(t *testing.T) {
	m := localMDP(400, 3, 0.97)
	rng := rand.New(rand.NewPCG(7, 8))
	r := make([]float64, m.NumPairs())
	for _, tau := range []float64{1, 0.37} {
		opts := Options{Tol: 1e-10, Newton: true, WarmStart: true, Workers: 2}
		fused, plain := NewWorkspace(m, opts), NewWorkspace(m, opts)
		plain.noFuse = true
		var vf, vp *Values
		var pf, pp *Policy
		for call := range 3 {
			for i := range r {
				r[i] = 20 * rng.NormFloat64()
			}
			vf, pf = fused.SoftValuesAndPolicy(vf, pf, r, tau)
			vp, pp = plain.SoftValuesAndPolicy(vp, pp, r, tau)
			if vf.Iterations != vp.Iterations || vf.Iterations < 3 {
				t.Fatalf("τ %g call %d: %d sweeps fused, %d anew (want equal, ≥ 3 so that Newton steps ran)", tau, call, vf.Iterations, vp.Iterations)
			}
			for what, pair := range map[string][2][]float64{"V": {vf.V, vp.V}, "Q": {vf.Q, vp.Q}, "policy": {pf.Prob, pp.Prob}} {
				for i, want := range pair[1] {
					if math.Float64bits(pair[0][i]) != math.Float64bits(want) {
						t.Fatalf("τ %g call %d: %s[%d] = %v fused, %v anew", tau, call, what, i, pair[0][i], want)
					}
				}
			}
		}
		if fused.expOut != nil {
			t.Fatal("the sweeps' exponentials are still being stored after the call")
		}
		fused.Close()
		plain.Close()
	}
}
