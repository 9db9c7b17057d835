package bipedal

import (
	"math"
	"path/filepath"
	"testing"
)

// TestHeuristicMatchesGymnasium feeds each heuristic reference episode's
// recorded observations to a fresh Heuristic and checks it returns the
// actions Gymnasium's BipedalWalkerHeuristics chose (rounded to float32, as
// recorded) at every step.
func TestHeuristicMatchesGymnasium(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(refDir, "heuristic-*.json.gz"))
	if len(paths) != 8 {
		t.Fatalf("%d heuristic episodes, want 8", len(paths))
	}
	act := make([]float64, 4)
	checked := 0
	for _, path := range paths {
		f := loadRef(t, path)
		h := NewHeuristic()
		for i, a := range f.Actions {
			h.Act(act, f.Steps[i].Obs)
			for j := range 4 {
				if float64(float32(act[j])) != a[j] {
					t.Fatalf("%s step %d: Heuristic gives %v, Gymnasium %v", filepath.Base(path), i, act, a)
				}
			}
			checked++
		}
	}
	t.Logf("%d heuristic actions identical to Gymnasium's", checked)
}

// TestHeuristicWalks closes the loop: Heuristic drives the environment
// from its own observations, its actions cast to float32 as the recording
// script cast Gymnasium's, on seed 4, where Gymnasium's heuristic walks to
// the end of the terrain. The episode must be Gymnasium's: the same
// length, the same end (the far end, no fall) and the same return.
func TestHeuristicWalks(t *testing.T) {
	if fusesMulAdd() {
		t.Skip("reproduces unfused arithmetic only (see TestReplayGymnasium)")
	}
	ref := loadRef(t, filepath.Join(refDir, "heuristic-seed4-normal.json.gz"))
	e, _ := New(DefaultParams(false))
	h := NewHeuristic()
	act := make([]float64, 4)
	obs := e.Reset(4)
	ret, n := 0.0, 0
	for {
		h.Act(act, obs)
		for j := range act {
			act[j] = float64(float32(act[j]))
		}
		o, r, term, trunc := e.Step(act)
		obs, ret, n = o, ret+r, n+1
		if term || trunc {
			break
		}
	}
	if n != ref.n() || e.Fell() || math.Abs(ret-ref.Return) > 1e-9 {
		t.Errorf("seed 4: return %.6f over %d steps (fell %v), Gymnasium %.6f over %d", ret, n, e.Fell(), ref.Return, ref.n())
	}
	t.Logf("seed 4: return %.3f in %d steps, reaching the far end", ret, n)
}
