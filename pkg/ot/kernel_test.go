package ot

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// randomLattice draws a lattice of d axes with random sizes, coordinates,
// weights, and (when mixed) periodic and categorical axes.
func randomLattice(rng *rand.Rand, d int, mixed bool, maxLen int) Lattice {
	ax := make([]Axis, d)
	for k := range ax {
		n := 1 + rng.IntN(maxLen)
		a := Axis{Coords: make([]float64, n), Weight: 0.5 + rng.Float64()}
		x := rng.Float64()
		for i := range a.Coords {
			a.Coords[i] = x
			x += 0.3 + rng.Float64()
		}
		if mixed {
			switch k % 3 {
			case 1:
				a.Period = x + 0.5*rng.Float64()
			case 2:
				a.Categorical = true
			}
		}
		ax[k] = a
	}
	return Lattice{Axes: ax}
}

func randVec(rng *rand.Rand, n int, lo, hi float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = lo + (hi-lo)*rng.Float64()
	}
	return v
}

func relErr(got, want []float64) float64 {
	var num, den float64
	for i := range got {
		num = math.Max(num, math.Abs(got[i]-want[i]))
		den = math.Max(den, math.Abs(want[i]))
	}
	if den == 0 {
		return num
	}
	return num / den
}

// TestLatticeKernelMatchesDense checks every separable kernel operation
// against the dense kernel of the same lattice's cost matrix.
func TestLatticeKernelMatchesDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	worst := 0.0
	for _, tc := range []struct {
		d     int
		mixed bool
		eps   float64 // in CostUnit
	}{
		{1, false, 0.5}, {2, false, 0.5}, {3, false, 2}, {4, false, 0.5}, {5, false, 1},
		{1, true, 0.5}, {2, true, 0.1}, {3, true, 0.5}, {4, true, 3}, {5, true, 0.5},
		{3, true, 0.01}, {2, false, 50},
	} {
		for rep := 0; rep < 3; rep++ {
			maxLen := []int{0, 40, 20, 9, 6, 4}[tc.d]
			l := randomLattice(rng, tc.d, tc.mixed, maxLen)
			name := fmt.Sprintf("d%d/mixed=%v/eps=%g/rep%d/shape%v", tc.d, tc.mixed, tc.eps, rep, l.Shape())
			t.Run(name, func(t *testing.T) {
				n := l.Len()
				eps := tc.eps * l.CostUnit()
				lk, err := NewLatticeKernel(l, eps)
				if err != nil {
					t.Fatal(err)
				}
				dk, err := NewDenseKernel(l.CostMatrix(), n, n, eps)
				if err != nil {
					t.Fatal(err)
				}
				v := randVec(rng, n, 0.1, 2)
				x := randVec(rng, n, -30, 30)
				ops := []struct {
					name       string
					sep, dense func(dst, v []float64) []float64
					in         []float64
				}{
					{"Apply", lk.Apply, dk.Apply, v},
					{"ApplyT", lk.ApplyT, dk.ApplyT, v},
					{"ApplyCost", lk.ApplyCost, dk.ApplyCost, v},
					{"LogApply", lk.LogApply, dk.LogApply, x},
					{"LogApplyT", lk.LogApplyT, dk.LogApplyT, x},
					{"LogApplyCost", lk.LogApplyCost, dk.LogApplyCost, x},
				}
				for _, op := range ops {
					got := op.sep(make([]float64, n), op.in)
					want := op.dense(make([]float64, n), op.in)
					var e float64
					if op.name[:3] == "Log" {
						// Compare log values relative to their scale (|log| ≥ 1).
						for i := range got {
							if math.IsInf(want[i], -1) && math.IsInf(got[i], -1) {
								continue
							}
							e = math.Max(e, math.Abs(got[i]-want[i])/math.Max(1, math.Abs(want[i])))
						}
					} else {
						e = relErr(got, want)
					}
					worst = math.Max(worst, e)
					if !(e <= 1e-12) {
						t.Errorf("%s: relative error %.3g > 1e-12", op.name, e)
					}
				}
				// In-place application (dst aliases v) gives the same result.
				want := lk.Apply(make([]float64, n), v)
				in := append([]float64(nil), v...)
				approx.Slices(t, "in-place Apply", lk.Apply(in, in), want, 0, 1e-15)
			})
		}
	}
	t.Logf("worst relative disagreement separable vs dense: %.3g", worst)
}

// TestLatticeCost checks the separable cost against hand-computed values.
func TestLatticeCost(t *testing.T) {
	l := Lattice{Axes: []Axis{
		{Coords: []float64{0, 1, 2, 3}, Weight: 2},
		PeriodicAxis(8, 8),
		CategoricalAxis(3),
	}}
	idx := func(i, j, k int) int { return (i*8+j)*3 + k }
	for _, tc := range []struct {
		a, b [3]int
		want float64
	}{
		{[3]int{0, 0, 0}, [3]int{0, 0, 0}, 0},
		{[3]int{0, 0, 0}, [3]int{3, 0, 0}, 2 * 9},
		{[3]int{0, 0, 0}, [3]int{0, 7, 0}, 1}, // wrapped
		{[3]int{0, 1, 0}, [3]int{0, 6, 0}, 9}, // |5| wraps to 3
		{[3]int{1, 2, 0}, [3]int{2, 2, 2}, 2 + 1},
	} {
		got := l.Cost(idx(tc.a[0], tc.a[1], tc.a[2]), idx(tc.b[0], tc.b[1], tc.b[2]))
		approx.Equal(t, fmt.Sprint(tc.a, tc.b), got, tc.want, 1e-15, 0)
	}
	approx.Equal(t, "CostUnit", l.CostUnit(), 1, 0, 0)
	approx.Equal(t, "CostUnit spacing 0.25", UniformLattice(0.25, 3, 4).CostUnit(), 0.0625, 0, 1e-15)
	if got := l.Index(make([]int, 3), idx(2, 5, 1)); got[0] != 2 || got[1] != 5 || got[2] != 1 {
		t.Errorf("Index = %v, want [2 5 1]", got)
	}
}

// TestBandColsPaths checks the assembly band kernel against the portable
// gonum path on widths around its 32-column blocks, and a large lattice
// pass against the dense kernel.
func TestBandColsPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 1))
	for _, w := range []int{1, 31, 32, 33, 64, 95, 512} {
		for _, nc := range []int{0, 1, 7, 39} {
			stride := w + rng.IntN(50)
			src := randVec(rng, max(1, (nc-1)*stride+w), -1, 1)
			coef := randVec(rng, nc, 0, 1)
			got := make([]float64, w)
			bandCols(got, src, stride, coef)
			want := make([]float64, w)
			for q := range want {
				for j, c := range coef {
					want[q] += c * src[j*stride+q]
				}
			}
			approx.Slices(t, fmt.Sprintf("w=%d nc=%d fma=%v", w, nc, hasFMA), got, want, 1e-13, 1e-13)
		}
	}
	l := UniformLattice(1, 3, 4, 70)
	lk, _ := NewLatticeKernel(l, 3)
	dk, _ := NewDenseKernel(l.CostMatrix(), l.Len(), l.Len(), 3)
	v := randVec(rng, l.Len(), 0.1, 2)
	got := lk.Apply(make([]float64, l.Len()), v)
	want := dk.Apply(make([]float64, l.Len()), v)
	if e := relErr(got, want); e > 1e-12 {
		t.Errorf("3×4×70 lattice vs dense: relative error %.3g", e)
	}
}
