package lattice

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

func testLattice() Lattice {
	return Lattice{Axes: []Axis{
		RangeAxis(5, -1, 2),
		{Coords: []float64{0, 0.5, 2, 2.25}},
		PeriodicAxis(8, 2*math.Pi),
		CategoricalAxis(3),
	}}
}

func TestIndexFlatPointRoundTrip(t *testing.T) {
	l := testLattice()
	idx := make([]int, 4)
	x := make([]float64, 4)
	for i := range l.Len() {
		l.Index(idx, i)
		if f := l.Flat(idx); f != i {
			t.Fatalf("Flat(Index(%d)) = %d", i, f)
		}
		l.Point(x, i)
		if s := l.Snap(x); s != i {
			t.Fatalf("Snap(Point(%d)) = %d", i, s)
		}
	}
}

func TestSnapMatchesBruteForce(t *testing.T) {
	l := testLattice()
	rng := rand.New(rand.NewPCG(1, 2))
	idx := make([]int, 4)
	for range 2000 {
		x := []float64{rng.Float64()*5 - 2, rng.Float64()*3 - 0.5, rng.Float64()*20 - 10, float64(rng.IntN(3))}
		got := l.Snap(x)
		l.Index(idx, got)
		// Brute force: per axis the point at least distance (wrapped on the periodic axis).
		for k, a := range l.Axes {
			best, bd := 0, math.Inf(1)
			for i, c := range a.Coords {
				d := math.Abs(c - x[k])
				if a.Period > 0 {
					d = math.Mod(d, a.Period)
					d = math.Min(d, a.Period-d)
				}
				if d < bd-1e-12 {
					best, bd = i, d
				}
			}
			if idx[k] != best {
				t.Fatalf("x=%v axis %d: snapped to %d, nearest is %d", x, k, idx[k], best)
			}
		}
	}
}

func TestInterpReproducesAffine(t *testing.T) {
	// Open axes only: f(x) = c0 + Σ c_k x_k must be reproduced exactly inside the box.
	l := Lattice{Axes: []Axis{RangeAxis(5, -1, 2), {Coords: []float64{0, 0.5, 2, 2.25}}, RangeAxis(3, 10, 11)}}
	c := []float64{0.3, -1.7, 2.5, 0.9}
	f := func(p []float64) float64 { return c[0] + c[1]*p[0] + c[2]*p[1] + c[3]*p[2] }
	rng := rand.New(rand.NewPCG(3, 4))
	idx, w, p := make([]int, 8), make([]float64, 8), make([]float64, 3)
	for range 1000 {
		x := []float64{rng.Float64()*3 - 1, rng.Float64() * 2.25, 10 + rng.Float64()}
		m := l.Interp(idx, w, x)
		var sum, val float64
		for e := range m {
			if w[e] < 0 {
				t.Fatalf("negative weight %g", w[e])
			}
			sum += w[e]
			val += w[e] * f(l.Point(p, idx[e]))
		}
		approx.Equal(t, "Σw", sum, 1, 1e-14, 0)
		approx.Equal(t, "interpolated affine", val, f(x), 1e-12, 1e-12)
	}
	// Outside the box x is clamped.
	m := l.Interp(idx, w, []float64{-5, 9, 20})
	if m != 1 || idx[0] != l.Flat([]int{0, 3, 2}) || w[0] != 1 {
		t.Fatalf("clamped stencil = %v %v", idx[:m], w[:m])
	}
}

func TestInterpPeriodicAndCategorical(t *testing.T) {
	l := Lattice{Axes: []Axis{PeriodicAxis(4, 4), CategoricalAxis(3)}}
	idx, w := make([]int, 4), make([]float64, 4)
	// x = 3.25 lies between point 3 (coord 3) and point 0 (coord 4 ≡ 0).
	m := l.Interp(idx, w, []float64{3.25 - 8, 2})
	if m != 2 || idx[0] != l.Flat([]int{3, 2}) || idx[1] != l.Flat([]int{0, 2}) {
		t.Fatalf("stencil %v", idx[:m])
	}
	approx.Slices(t, "weights", w[:m], []float64{0.75, 0.25}, 1e-12, 0)
}

func TestDiameterAndCostUnit(t *testing.T) {
	l := Lattice{Axes: []Axis{UniformAxis(4, 0.5), PeriodicAxis(6, 6), CategoricalAxis(2)}}
	// Open: 1.5² ; periodic: 3² ; categorical: 1.
	approx.Equal(t, "diameter", l.Diameter(), math.Sqrt(2.25+9+1), 1e-14, 0)
	approx.Equal(t, "cost unit", l.CostUnit(), 0.25, 1e-15, 0)
}

// TestCellSnapsToItsPoint checks that every coordinate strictly inside
// Axis.Cell(j) has point j as its nearest point, and that neighbouring cells
// tile the axis without gaps.
func TestCellSnapsToItsPoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for k, a := range testLattice().Axes {
		for j := range a.Len() {
			lo, hi := a.Cell(j)
			if a.Categorical {
				if lo != a.Coords[j] || hi != a.Coords[j] {
					t.Fatalf("axis %d categorical cell %d = [%v, %v], want the point", k, j, lo, hi)
				}
				continue
			}
			if !(lo < a.Coords[j] && a.Coords[j] < hi) {
				t.Fatalf("axis %d cell %d = [%v, %v] does not contain its point %v", k, j, lo, hi, a.Coords[j])
			}
			for range 200 {
				x := lo + (hi-lo)*(1e-9+(1-2e-9)*rng.Float64())
				if got := a.Nearest(x); got != j {
					t.Fatalf("axis %d: x = %v in cell %d = [%v, %v] snaps to %d", k, x, j, lo, hi, got)
				}
			}
			if j > 0 {
				if _, phi := a.Cell(j - 1); phi != lo {
					t.Fatalf("axis %d: cell %d ends at %v but cell %d starts at %v", k, j-1, phi, j, lo)
				}
			}
		}
		if a.Period > 0 {
			lo0, _ := a.Cell(0)
			_, hiN := a.Cell(a.Len() - 1)
			approx.Equal(t, "periodic cells cover one period", hiN-lo0, a.Period, 1e-12, 0)
		}
	}
	if lo, hi := RangeAxis(1, 0, 2).Cell(0); lo != 1 || hi != 1 {
		t.Fatalf("single-point cell = [%v, %v], want [1, 1]", lo, hi)
	}
}
