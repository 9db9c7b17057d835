package lattice

import (
	"fmt"
	"math"
	"sort"
)

// RangeAxis returns an axis of n evenly spaced points from lo to hi inclusive
// (a single point at (lo+hi)/2 when n = 1); it panics unless n ≥ 1 and
// lo < hi are finite.
func RangeAxis(n int, lo, hi float64) Axis {
	if n < 1 || !(lo < hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		panic(fmt.Sprintf("lattice: RangeAxis(%d, %g, %g): need n ≥ 1 and finite lo < hi", n, lo, hi))
	}
	c := make([]float64, n)
	if n == 1 {
		c[0] = (lo + hi) / 2
		return Axis{Coords: c}
	}
	h := (hi - lo) / float64(n-1)
	for i := range c {
		c[i] = lo + float64(i)*h
	}
	c[n-1] = hi
	return Axis{Coords: c}
}

// Flat returns the point number of multi-index idx (row-major, last axis
// fastest); it panics if idx has the wrong length or an entry out of range.
func (l Lattice) Flat(idx []int) int {
	if len(idx) != len(l.Axes) {
		panic("lattice: Lattice.Flat: wrong index length")
	}
	f := 0
	for k, a := range l.Axes {
		if idx[k] < 0 || idx[k] >= a.Len() {
			panic(fmt.Sprintf("lattice: Lattice.Flat: index %d = %d out of range [0, %d)", k, idx[k], a.Len()))
		}
		f = f*a.Len() + idx[k]
	}
	return f
}

// Point writes the coordinates of point i into dst and returns it.
func (l Lattice) Point(dst []float64, i int) []float64 {
	if len(dst) != len(l.Axes) {
		panic("lattice: Lattice.Point: wrong dst length")
	}
	for k := len(l.Axes) - 1; k >= 0; k-- {
		n := l.Axes[k].Len()
		dst[k] = l.Axes[k].Coords[i%n]
		i /= n
	}
	return dst
}

// wrap maps x into [c0, c0+P) for a periodic axis whose first coordinate is c0.
func (a Axis) wrap(x float64) float64 {
	c0 := a.Coords[0]
	y := math.Mod(x-c0, a.Period)
	if y < 0 {
		y += a.Period
	}
	return c0 + y
}

// bracket returns j and the fraction t ∈ [0, 1] such that x lies between
// point j and point j+1 (the next point wraps on a periodic axis), clamped to
// the axis ends on an open axis. Coordinates must be increasing.
func (a Axis) bracket(x float64) (j, next int, t float64) {
	n := a.Len()
	if n == 1 {
		return 0, 0, 0
	}
	if a.Period > 0 {
		x = a.wrap(x)
		j = sort.SearchFloat64s(a.Coords, x)
		// Coords[j-1] < x ≤ Coords[j]; x ≥ Coords[0] after wrapping.
		if j == 0 || (j < n && a.Coords[j] == x) {
			return j % n, (j + 1) % n, 0
		}
		lo := a.Coords[j-1]
		hi := a.Coords[0] + a.Period
		if j < n {
			hi = a.Coords[j]
		}
		return j - 1, j % n, (x - lo) / (hi - lo)
	}
	if x <= a.Coords[0] {
		return 0, 1, 0
	}
	if x >= a.Coords[n-1] {
		return n - 2, n - 1, 1
	}
	j = sort.SearchFloat64s(a.Coords, x) - 1
	if j < 0 {
		j = 0
	}
	return j, j + 1, (x - a.Coords[j]) / (a.Coords[j+1] - a.Coords[j])
}

// Nearest returns the index of the axis point nearest to x (wrapping on a
// periodic axis, clamping on an open one, rounding to the nearest coordinate
// on a categorical one). Ties go to the lower index.
func (a Axis) Nearest(x float64) int {
	if a.Categorical {
		best, bd := 0, math.Inf(1)
		for i, c := range a.Coords {
			if d := math.Abs(c - x); d < bd {
				best, bd = i, d
			}
		}
		return best
	}
	j, next, t := a.bracket(x)
	if t > 0.5 {
		return next
	}
	return j
}

// Snap returns the number of the lattice point nearest to x, axis by axis; it
// panics if len(x) is not the number of axes.
func (l Lattice) Snap(x []float64) int {
	if len(x) != len(l.Axes) {
		panic("lattice: Lattice.Snap: wrong point length")
	}
	f := 0
	for k, a := range l.Axes {
		f = f*a.Len() + a.Nearest(x[k])
	}
	return f
}

// Interp writes the multilinear interpolation stencil of x into idx and w
// (up to 2^d points, fewer where an axis is categorical, has one point, or x
// sits on a coordinate) and returns the number of entries used. The weights
// are non-negative, sum to 1, and reproduce every function that is affine
// along each non-categorical axis exactly inside the lattice's box; outside
// it, x is clamped to the box (periodic axes wrap). idx and w must have room
// for 2^d entries.
func (l Lattice) Interp(idx []int, w []float64, x []float64) int {
	d := len(l.Axes)
	if len(x) != d {
		panic("lattice: Lattice.Interp: wrong point length")
	}
	if len(idx) < 1<<d || len(w) < 1<<d {
		panic("lattice: Lattice.Interp: idx and w need 2^d entries")
	}
	idx[0], w[0] = 0, 1
	m := 1
	for k, a := range l.Axes {
		n := a.Len()
		var j, next int
		var t float64
		if a.Categorical {
			j, next, t = a.Nearest(x[k]), 0, 0
		} else {
			j, next, t = a.bracket(x[k])
		}
		if t == 0 || t == 1 {
			if t == 1 {
				j = next
			}
			for e := 0; e < m; e++ {
				idx[e] = idx[e]*n + j
			}
			continue
		}
		for e := 0; e < m; e++ {
			base, we := idx[e]*n, w[e]
			idx[e], w[e] = base+j, we*(1-t)
			idx[m+e], w[m+e] = base+next, we*t
		}
		m *= 2
	}
	return m
}

// Cell returns the interval [lo, hi] of coordinates whose nearest axis point
// is point j: bounded by the midpoints to its neighbours. At the ends of an
// open axis the cell extends outward by half the neighbouring spacing (points
// beyond it still snap to the end point); on a periodic axis the neighbours
// wrap around, so lo may lie below Coords[0] or hi beyond the last
// coordinate. A categorical or single-point axis gives lo = hi = Coords[j].
// Coordinates must be increasing.
func (a Axis) Cell(j int) (lo, hi float64) {
	n := a.Len()
	if j < 0 || j >= n {
		panic(fmt.Sprintf("lattice: Axis.Cell(%d) out of range [0, %d)", j, n))
	}
	c := a.Coords[j]
	if a.Categorical || n == 1 {
		return c, c
	}
	var prev, next float64
	switch {
	case j > 0:
		prev = a.Coords[j-1]
	case a.Period > 0:
		prev = a.Coords[n-1] - a.Period
	default:
		prev = c - (a.Coords[1] - c)
	}
	switch {
	case j < n-1:
		next = a.Coords[j+1]
	case a.Period > 0:
		next = a.Coords[0] + a.Period
	default:
		next = c + (c - a.Coords[n-2])
	}
	return (prev + c) / 2, (c + next) / 2
}
