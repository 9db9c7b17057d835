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
	b := NewBuilder(S, A)
	b.Gamma = 0.95
	for s := range S {
		if s%37 == 0 {
			b.SetTerminal(s)
			continue
		}
		for a := range A {
			k := 1 + rng.IntN(6)
			for range k {
				next := s + rng.IntN(9) - 4 // self-loops and repeats included
				b.AddTransition(s, a, (next+S)%S, 1/float64(k))
			}
		}
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
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
			ws.build()
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
