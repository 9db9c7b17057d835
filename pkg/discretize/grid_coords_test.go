package discretize_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/discretize"
)

// TestAxisCoords: an axis with explicit coordinates snaps a coordinate to
// the nearest of them (the midpoints 0.05, 0.3 and 1.25 between 0, 0.1,
// 0.5 and 2 are the cell bounds, clamped beyond the ends) and its point
// has them as coordinates; bad coords are refused naming the axis.
func TestAxisCoords(t *testing.T) {
	spec := discretize.GridSpec{State: []discretize.AxisSpec{{Name: "y", N: 4, Coords: []float64{0, 0.1, 0.5, 2}}},
		Action: []discretize.AxisSpec{{Name: "a", N: 2, Categorical: true}}}
	g, err := discretize.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		x    float64
		cell int
	}{{-5, 0}, {0.04, 0}, {0.06, 1}, {0.29, 1}, {0.31, 2}, {1.24, 2}, {1.26, 3}, {9, 3}} {
		if c := g.SnapState([]float64{tc.x}); c != tc.cell {
			t.Errorf("y = %v snaps to cell %d, want %d", tc.x, c, tc.cell)
		}
	}
	x := make([]float64, 1)
	for c, want := range spec.State[0].Coords {
		if g.States.Point(x, c); x[0] != want {
			t.Errorf("point %d at %v, want %v", c, x[0], want)
		}
	}
	for _, tc := range []struct {
		ax   discretize.AxisSpec
		want string
	}{
		{discretize.AxisSpec{Name: "y", N: 3, Coords: []float64{0, 0.5, 0.2}}, "strictly increasing"},
		{discretize.AxisSpec{Name: "y", N: 3, Coords: []float64{0, 0.5}}, "2 coords for n = 3"},
		{discretize.AxisSpec{Name: "y", N: 2, Lo: -1, Hi: 1, Coords: []float64{0, 0.5}}, "replace lo and hi"},
		{discretize.AxisSpec{Name: "y", N: 2, Periodic: true, Coords: []float64{0, 0.5}}, "open axis"},
	} {
		s := spec
		s.State = []discretize.AxisSpec{tc.ax}
		if _, err := discretize.New(s); !errors.Is(err, discretize.ErrGrid) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "(y)") {
			t.Errorf("%+v: error %v, want ErrGrid naming the axis and %q", tc.ax, err, tc.want)
		}
	}
}
