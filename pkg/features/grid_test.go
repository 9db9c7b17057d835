package features

import (
	"math"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
	"gonum.org/v1/gonum/mat"
)

func TestGridHandComputed(t *testing.T) {
	// 3×3, goal bottom-right (8), one obstacle at the centre (4).
	phi, err := Grid(3, 8, []int{4})
	if err != nil {
		t.Fatal(err)
	}
	L := 2 * math.Sqrt2
	cases := []struct {
		s          int
		goal, obst float64
	}{
		{0, math.Sqrt(8) / L, math.Sqrt2 / L},
		{8, 0, math.Sqrt2 / L},
		{4, math.Sqrt2 / L, 0},
		{5, 1 / L, 1 / L},
	}
	for _, c := range cases {
		approx.Equal(t, "goal distance", phi.At(c.s, 0), c.goal, 1e-15, 0)
		approx.Equal(t, "obstacle distance", phi.At(c.s, 1), c.obst, 1e-15, 0)
	}
}

func TestGridRangeAndErrors(t *testing.T) {
	phi, err := Grid(5, 24, nil)
	if err != nil {
		t.Fatal(err)
	}
	for s := range 25 {
		if v := phi.At(s, 0); v < 0 || v > 1 {
			t.Fatalf("goal distance %v outside [0,1]", v)
		}
		approx.Equal(t, "no-obstacle distance", phi.At(s, 1), 1, 0, 0)
	}
	for _, bad := range []struct {
		size, goal int
		obs        []int
	}{{1, 0, nil}, {3, 9, nil}, {3, 8, []int{-1}}} {
		if _, err := Grid(bad.size, bad.goal, bad.obs); err == nil {
			t.Errorf("Grid(%d,%d,%v) accepted bad input", bad.size, bad.goal, bad.obs)
		}
	}
}

func TestStateActionAndReward(t *testing.T) {
	s := mat.NewDense(2, 2, []float64{1, 2, 3, 4})
	sa := StateAction(s, 3)
	r := Reward(nil, sa, []float64{1, -1})
	approx.Slices(t, "reward", r, []float64{-1, -1, -1, -1, -1, -1}, 0, 0)
	if sa.At(4, 1) != 4 {
		t.Fatalf("row 4 = %v, want state 1's features", sa.RawRowView(4))
	}
}
