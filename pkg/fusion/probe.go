package fusion

import (
	"context"
	"fmt"
	"math"

	"github.com/fedirl/fedirl/pkg/lattice"
	"github.com/fedirl/fedirl/pkg/ot"
	"gonum.org/v1/gonum/mat"
)

// Probe is the server's shared support on which client rewards are
// evaluated and fused: the feature matrix Φ and either the lattice X (one
// row of Φ per lattice point, row-major lattice order) or, for a scattered
// probe, a finite point set (one row of Φ per point, in the points' order).
// Task families (pkg/tasks) build it from their serializable spec, with the
// same feature code the clients use.
type Probe struct {
	Phi     *mat.Dense
	Lattice lattice.Lattice
	// Points, when set, makes the probe scattered: the support is these
	// points with their weighted squared-Euclidean cost, the barycenter
	// methods apply its Gibbs kernel on the fly (ot.PointKernel), and
	// Lattice must be empty. Build it with NewPointProbe, which checks it.
	Points *ot.PointCloud
}

// Bounds of a scattered probe, checked by NewPointProbe and Validate (a
// lattice's size is bounded where its task is created, tasks.MaxLatticePairs).
// The exact kernel costs O(n²·dim) per application (14–35 ns per kernel
// entry on the 2-core benchmark machine, BenchmarkPointKernelApply), so
// MaxProbePoints points take minutes per barycenter iteration: the bound
// admits the target size (10⁵) for a fast kernel, not a quick exact
// solve.
const (
	// MaxProbePoints bounds the number of points of a scattered probe.
	MaxProbePoints = 1 << 17
	// MaxProbeDim bounds the dimension of a scattered probe's points
	// (states, actions and next states together).
	MaxProbeDim = 256
)

// NewPointProbe returns the scattered probe of points (one row per point,
// of one dimension) with per-coordinate cost weights (nil means all 1) and
// the feature matrix phi (one row per point). It refuses, naming the point
// and the field, an empty set or more than MaxProbePoints points, points of
// the wrong dimension or more than MaxProbeDim coordinates, NaN or infinite
// coordinates or features, a cost weight that is not positive and finite,
// and a Φ whose rows do not match the points.
func NewPointProbe(phi *mat.Dense, points [][]float64, weights []float64) (Probe, error) {
	n := len(points)
	switch {
	case n == 0:
		return Probe{}, fmt.Errorf("fusion: probe: points: no points")
	case n > MaxProbePoints:
		return Probe{}, fmt.Errorf("fusion: probe: points: %d points, more than MaxProbePoints = %d", n, MaxProbePoints)
	case len(points[0]) > MaxProbeDim:
		return Probe{}, fmt.Errorf("fusion: probe: points[0]: dimension %d, more than MaxProbeDim = %d", len(points[0]), MaxProbeDim)
	}
	d := len(points[0])
	if weights != nil && len(weights) != d {
		return Probe{}, fmt.Errorf("fusion: probe: cost_weights: %d weights, points[0] has dimension %d", len(weights), d)
	}
	for i, x := range points {
		if len(x) != d {
			return Probe{}, fmt.Errorf("fusion: probe: points[%d]: dimension %d, want %d", i, len(x), d)
		}
		for k, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return Probe{}, fmt.Errorf("fusion: probe: points[%d][%d] = %v, want a finite coordinate", i, k, v)
			}
		}
	}
	if phi == nil {
		return Probe{}, fmt.Errorf("fusion: probe has no feature matrix")
	}
	if r, _ := phi.Dims(); r != n {
		return Probe{}, fmt.Errorf("fusion: probe: phi has %d rows, points %d", r, n)
	}
	if err := checkPhi(phi); err != nil {
		return Probe{}, err
	}
	pc, err := ot.NewPointCloud(points, weights)
	if err != nil {
		return Probe{}, fmt.Errorf("fusion: probe: cost_weights: %w", err)
	}
	return Probe{Phi: phi, Points: pc}, nil
}

// checkPhi refuses a NaN or infinite feature, naming its row and column.
func checkPhi(phi *mat.Dense) error {
	r, c := phi.Dims()
	for i := range r {
		for k, v := range phi.RawRowView(i)[:c] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("fusion: probe: phi[%d][%d] = %v (point %d), want a finite feature", i, k, v, i)
			}
		}
	}
	return nil
}

// Scattered reports whether the probe is a point set rather than a lattice.
func (p Probe) Scattered() bool { return p.Points != nil }

// Len is the number of support points: the lattice's or the point set's.
func (p Probe) Len() int {
	if p.Points != nil {
		return p.Points.Len()
	}
	return p.Lattice.Len()
}

// Validate checks that Φ has one row per support point (and, for a
// scattered probe, that it has no lattice, at most MaxProbePoints points
// of at most MaxProbeDim coordinates and finite features).
func (p Probe) Validate() error {
	if p.Phi == nil {
		return fmt.Errorf("fusion: probe has no feature matrix")
	}
	r, _ := p.Phi.Dims()
	if p.Points != nil {
		switch {
		case len(p.Lattice.Axes) > 0:
			return fmt.Errorf("fusion: probe has both a lattice and points")
		case p.Points.Len() > MaxProbePoints:
			return fmt.Errorf("fusion: probe: points: %d points, more than MaxProbePoints = %d", p.Points.Len(), MaxProbePoints)
		case p.Points.Dim() > MaxProbeDim:
			return fmt.Errorf("fusion: probe: points: dimension %d, more than MaxProbeDim = %d", p.Points.Dim(), MaxProbeDim)
		case r != p.Points.Len():
			return fmt.Errorf("fusion: probe: phi has %d rows, points %d", r, p.Points.Len())
		}
		return checkPhi(p.Phi)
	}
	if err := p.Lattice.Validate(); err != nil {
		return fmt.Errorf("fusion: probe: %w", err)
	}
	if r != p.Lattice.Len() {
		return fmt.Errorf("fusion: probe Φ has %d rows, its lattice %d points", r, p.Lattice.Len())
	}
	return nil
}

// Fuse is Barycentric on the probe (its lattice or its points).
func (p Probe) Fuse(thetas [][]float64, weights []float64, opt Options) (Result, error) {
	return barycentricOn(context.Background(), p, thetas, weights, opt)
}
