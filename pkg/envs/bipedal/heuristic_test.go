package bipedal

import (
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

// TestHeuristicWalks closes the loop on seed 4, the reference episode in
// which Gymnasium's heuristic walks to the end of the terrain: with float64
// actions (the reference cast them to float32) the walk differs from the
// reference's from step 3 on but must still walk, a return of at least 250
// without a fall.
func TestHeuristicWalks(t *testing.T) {
	e, _ := New(DefaultParams(false))
	h := NewHeuristic()
	act := make([]float64, 4)
	obs := e.Reset(4)
	ret, n := 0.0, 0
	for {
		o, r, term, trunc := e.Step(h.Act(act, obs))
		obs, ret, n = o, ret+r, n+1
		if term || trunc {
			break
		}
	}
	if e.Fell() || ret < 250 {
		t.Errorf("seed 4: heuristic return %.1f over %d steps (fell %v), want ≥ 250 without a fall", ret, n, e.Fell())
	}
	t.Logf("seed 4: return %.1f in %d steps", ret, n)
}
