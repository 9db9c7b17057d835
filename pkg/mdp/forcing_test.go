package mdp

import (
	"math"
	"testing"
)

// TestForcing: the value steps' forcing term is Eisenstat–Walker's choice 2,
// 0.9(r/r_prev)², within its bounds: newtonFirstEta on a solve's first step,
// at most 0.1, and no tighter than a residual of tol/10 needs.
func TestForcing(t *testing.T) {
	var nt newtonState
	const tol = 1e-8
	for i, s := range []struct{ r, want float64 }{
		{1, newtonFirstEta}, // first step of a solve
		{1e-1, 9e-3},        // 0.9·(1e-1)²
		{1e-3, 9e-5},        // 0.9·(1e-2)², above the floor 0.1·tol/r = 1e-6
		{1e-3, 0.1},         // no progress: 0.9 capped at 0.1
		{1e-6, 1e-3},        // 0.9·(1e-3)² = 9e-7 under the floor 0.1·tol/r = 1e-3
		{1e-12, 0.1},        // beyond the tolerance: the floor is capped at 0.1 too
	} {
		if got := nt.forcing(s.r, tol); math.Abs(got-s.want) > 1e-12*s.want {
			t.Errorf("step %d (r = %g): η = %g, want %g", i, s.r, got, s.want)
		}
	}
	nt.prevRes = 0 // a new solve
	if got := nt.forcing(5, tol); got != newtonFirstEta {
		t.Errorf("first step of a new solve: η = %g, want %g", got, newtonFirstEta)
	}
}
