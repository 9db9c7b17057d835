// Package lattice describes product grids: axes with uniform or explicit
// coordinates (periodic for angles, categorical for discrete actions), the
// numbering of their points (index ↔ multi-index), nearest-point snapping,
// multilinear interpolation weights and the separable squared cost
// C(x, y) = Σ_k w_k d_k(x_k, y_k)² on them.
//
// It is the bottom floor shared by the OT engine (pkg/ot builds its kernels on
// it), feature maps and the discretisers; it imports nothing of the project
// and knows nothing of transport, rewards or environments.
package lattice

import (
	"errors"
	"fmt"
	"math"
)

// Axis is one factor of a product lattice: its coordinates and how distances
// along it enter the separable cost C(x, y) = Σ_k Weight_k · d_k(x_k, y_k)².
type Axis struct {
	// Coords are the coordinates of the axis points, in order.
	Coords []float64
	// Weight multiplies this axis' squared distance in the cost; 0 means 1.
	Weight float64
	// Period, when > 0, makes the axis periodic: d = min(|x-y| mod P, P - |x-y| mod P).
	Period float64
	// Categorical makes d(x, y) = 0 when the points are the same and 1 otherwise,
	// whatever the coordinates.
	Categorical bool
}

// UniformAxis returns an axis of n points 0, spacing, 2·spacing, …; it panics if
// n < 1 or spacing is not positive and finite.
func UniformAxis(n int, spacing float64) Axis {
	if n < 1 || !(spacing > 0) || math.IsInf(spacing, 0) {
		panic(fmt.Sprintf("lattice: UniformAxis(%d, %g): need n ≥ 1 and a positive finite spacing", n, spacing))
	}
	c := make([]float64, n)
	for i := range c {
		c[i] = float64(i) * spacing
	}
	return Axis{Coords: c}
}

// PeriodicAxis returns an axis of n points evenly spaced on a circle of the
// given period (for angles: period 2π), with wrapped distance.
func PeriodicAxis(n int, period float64) Axis {
	a := UniformAxis(n, period/float64(n))
	a.Period = period
	return a
}

// CategoricalAxis returns an axis of n categories with 0/1 distance.
func CategoricalAxis(n int) Axis {
	a := UniformAxis(n, 1)
	a.Categorical = true
	return a
}

// Len is the number of points on the axis.
func (a Axis) Len() int { return len(a.Coords) }

// EffectiveWeight returns the cost weight of the axis (1 when Weight is 0).
func (a Axis) EffectiveWeight() float64 {
	if a.Weight == 0 {
		return 1
	}
	return a.Weight
}

// Dist returns the distance d(x_i, x_j) between points i and j of the axis.
func (a Axis) Dist(i, j int) float64 {
	if i == j {
		return 0
	}
	if a.Categorical {
		return 1
	}
	d := math.Abs(a.Coords[i] - a.Coords[j])
	if a.Period > 0 {
		d = math.Mod(d, a.Period)
		d = math.Min(d, a.Period-d)
	}
	return d
}

// Cost returns this axis' term Weight·d(x_i, x_j)² of the separable cost.
func (a Axis) Cost(i, j int) float64 {
	d := a.Dist(i, j)
	return a.EffectiveWeight() * d * d
}

// Validate reports whether the axis is usable: at least one finite
// coordinate, a non-negative finite weight and period.
func (a Axis) Validate() error {
	if len(a.Coords) == 0 {
		return errors.New("no coordinates")
	}
	if math.IsNaN(a.Weight) || a.Weight < 0 || math.IsInf(a.Weight, 0) {
		return fmt.Errorf("weight %g is not a non-negative finite number", a.Weight)
	}
	if math.IsNaN(a.Period) || a.Period < 0 || math.IsInf(a.Period, 0) {
		return fmt.Errorf("period %g is not a non-negative finite number", a.Period)
	}
	for i, c := range a.Coords {
		if math.IsNaN(c) || math.IsInf(c, 0) {
			return fmt.Errorf("coordinate %d is %g", i, c)
		}
	}
	return nil
}

// Lattice is a product grid; points are numbered row-major, the last axis
// varying fastest.
type Lattice struct {
	// Axes are the factors of the product, slowest first.
	Axes []Axis
}

// UniformLattice returns a lattice with the given per-axis sizes and one common spacing.
func UniformLattice(spacing float64, shape ...int) Lattice {
	ax := make([]Axis, len(shape))
	for k, n := range shape {
		ax[k] = UniformAxis(n, spacing)
	}
	return Lattice{Axes: ax}
}

// Len is the number of lattice points, the product of the axis lengths.
func (l Lattice) Len() int {
	n := 1
	for _, a := range l.Axes {
		n *= a.Len()
	}
	return n
}

// Shape returns the axis lengths, slowest first.
func (l Lattice) Shape() []int {
	s := make([]int, len(l.Axes))
	for k, a := range l.Axes {
		s[k] = a.Len()
	}
	return s
}

// Validate returns an error describing the first unusable axis, if any.
func (l Lattice) Validate() error {
	if len(l.Axes) == 0 {
		return errors.New("lattice: no axes")
	}
	for k, a := range l.Axes {
		if err := a.Validate(); err != nil {
			return fmt.Errorf("lattice: axis %d: %w", k, err)
		}
	}
	return nil
}

// Index returns the multi-index of point i (row-major, last axis fastest) in dst.
func (l Lattice) Index(dst []int, i int) []int {
	if len(dst) != len(l.Axes) {
		panic("lattice: Lattice.Index: wrong dst length")
	}
	for k := len(l.Axes) - 1; k >= 0; k-- {
		n := l.Axes[k].Len()
		dst[k] = i % n
		i /= n
	}
	return dst
}

// Cost returns the separable cost C(x_i, x_j) = Σ_k w_k d_k² between points i and j.
func (l Lattice) Cost(i, j int) float64 {
	var c float64
	for k := len(l.Axes) - 1; k >= 0; k-- {
		n := l.Axes[k].Len()
		c += l.Axes[k].Cost(i%n, j%n)
		i /= n
		j /= n
	}
	return c
}

// CostMatrix returns the dense n×n cost matrix, row-major; for tests and small
// lattices only (it needs 8n² bytes).
func (l Lattice) CostMatrix() []float64 {
	n := l.Len()
	c := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			c[i*n+j] = l.Cost(i, j)
		}
	}
	return c
}

// CostUnit returns the smallest positive single-axis cost between two points
// of the lattice, min_k w_k·(smallest positive d_k)²; for an unweighted lattice
// of spacing h it is h². Options measure ε in this unit by default. It is 1 if
// no axis has two distinct points.
func (l Lattice) CostUnit() float64 {
	u := math.Inf(1)
	for _, a := range l.Axes {
		n := a.Len()
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if c := a.Cost(i, j); c > 0 && c < u {
					u = c
				}
			}
		}
	}
	if math.IsInf(u, 1) {
		return 1
	}
	return u
}

// Diameter returns D = max_{x,y} √C(x, y), the largest distance between two
// lattice points under the separable squared cost.
func (l Lattice) Diameter() float64 {
	s := 0.0
	for _, a := range l.Axes {
		m := 0.0
		for i := range a.Len() {
			for j := range a.Len() {
				m = math.Max(m, a.Cost(i, j))
			}
		}
		s += m
	}
	return math.Sqrt(s)
}
