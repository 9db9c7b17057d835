package ot

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
)

// ErrPoints is wrapped by every error NewPointCloud and NewLatticeCloud
// return for an unusable point set, so that a caller (a task's probe
// check) can tell bad user data from other failures.
var ErrPoints = errors.New("invalid point cloud")

// PointCloud is a scattered support: n points x_i ∈ R^d with the weighted
// squared-Euclidean cost C(x_i, x_j) = Σ_k w_k (x_ik − x_jk)². Unlike a
// Lattice it has no product structure, so its Gibbs kernel is not separable;
// PointKernel applies it on the fly. A PointCloud is immutable and safe for
// concurrent use.
type PointCloud struct {
	n, d int
	x    []float64 // n×d, row-major
	w    []float64 // per-coordinate cost weights

	unitOnce sync.Once
	unit     float64
}

// NewPointCloud returns the point cloud of points (one row per point, all of
// the same dimension d) with per-coordinate cost weights (nil means all 1;
// otherwise of length d, each positive and finite). The coordinates are
// copied. It returns an error wrapping ErrPoints, naming the point and the
// coordinate or the weight, for an empty set, a point of another dimension,
// a NaN or infinite coordinate, or a weight that is not positive and finite.
func NewPointCloud(points [][]float64, weights []float64) (*PointCloud, error) {
	if len(points) == 0 {
		return nil, fmt.Errorf("ot: no points: %w", ErrPoints)
	}
	d := len(points[0])
	if weights != nil && len(weights) != d {
		return nil, fmt.Errorf("ot: %d cost weights for points of dimension %d (point 0): %w", len(weights), d, ErrPoints)
	}
	if d == 0 {
		return nil, fmt.Errorf("ot: point 0 has no coordinates: %w", ErrPoints)
	}
	w := make([]float64, d)
	for k := range w {
		w[k] = 1
		if weights != nil {
			w[k] = weights[k]
		}
		if !(w[k] > 0) || math.IsInf(w[k], 0) {
			return nil, fmt.Errorf("ot: cost weight %d is %g, want a positive finite number: %w", k, w[k], ErrPoints)
		}
	}
	x := make([]float64, 0, len(points)*d)
	for i, p := range points {
		if len(p) != d {
			return nil, fmt.Errorf("ot: point %d has dimension %d, want %d: %w", i, len(p), d, ErrPoints)
		}
		for k, v := range p {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("ot: point %d coordinate %d is %g: %w", i, k, v, ErrPoints)
			}
		}
		x = append(x, p...)
	}
	return &PointCloud{n: len(points), d: d, x: x, w: w}, nil
}

// NewLatticeCloud returns the points of l in its row-major order (the last
// axis fastest) with costs equal to the lattice's: an ordinary axis is one
// coordinate with the axis' effective weight, and a categorical axis of n
// categories is n one-hot coordinates of weight w/2 each (two distinct
// categories then cost w, as on the lattice). A periodic axis's wrapped
// distance is not squared-Euclidean in any coordinates the cloud could
// hold; it refuses those (and an invalid lattice) with an error wrapping
// ErrPoints.
func NewLatticeCloud(l Lattice) (*PointCloud, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("ot: %w: %w", err, ErrPoints)
	}
	var w []float64
	for k, a := range l.Axes {
		switch {
		case a.Period > 0:
			return nil, fmt.Errorf("ot: lattice axis %d is periodic, its cost is not squared-Euclidean: %w", k, ErrPoints)
		case a.Categorical:
			for range a.Len() {
				w = append(w, a.EffectiveWeight()/2)
			}
		default:
			w = append(w, a.EffectiveWeight())
		}
	}
	n, d := l.Len(), len(w)
	pts := make([][]float64, n)
	flat := make([]float64, n*d)
	idx := make([]int, len(l.Axes))
	for i := range pts {
		p := flat[i*d : (i+1)*d]
		l.Index(idx, i)
		c := 0
		for k, a := range l.Axes {
			if a.Categorical {
				p[c+idx[k]] = 1
				c += a.Len()
				continue
			}
			p[c] = a.Coords[idx[k]]
			c++
		}
		pts[i] = p
	}
	return NewPointCloud(pts, w)
}

// Len is the number of points.
func (pc *PointCloud) Len() int { return pc.n }

// Dim is the dimension d of the points.
func (pc *PointCloud) Dim() int { return pc.d }

// Point writes the coordinates of point i into dst (of length Dim) and returns it.
func (pc *PointCloud) Point(dst []float64, i int) []float64 {
	if len(dst) != pc.d {
		panic("ot: PointCloud.Point: wrong dst length")
	}
	copy(dst, pc.x[i*pc.d:(i+1)*pc.d])
	return dst
}

// Weights returns a copy of the per-coordinate cost weights.
func (pc *PointCloud) Weights() []float64 { return append([]float64(nil), pc.w...) }

// Cost returns C(x_i, x_j) = Σ_k w_k (x_ik − x_jk)².
func (pc *PointCloud) Cost(i, j int) float64 {
	d := pc.d
	return sqDist(pc.x[i*d:(i+1)*d], pc.x[j*d:(j+1)*d], pc.w)
}

// CostMatrix returns the dense n×n cost matrix, row-major; for tests and
// small clouds only (it needs 8n² bytes).
func (pc *PointCloud) CostMatrix() []float64 {
	c := make([]float64, pc.n*pc.n)
	for i := 0; i < pc.n; i++ {
		for j := 0; j < pc.n; j++ {
			c[i*pc.n+j] = pc.Cost(i, j)
		}
	}
	return c
}

// CostUnit returns the unit in which options measure ε by default: the
// median over the points of each one's nearest-neighbour cost (its smallest
// positive cost to another point; points with none are left out; 1 if all
// points coincide). On the points of a lattice whose points all have the
// same nearest-neighbour cost (uniform axes, whatever their weights) it is
// the lattice's CostUnit, its smallest positive cost, so the same options
// give the same barycenter. The smallest positive cost itself would be
// fragile on scattered points: two near-duplicates (a rollout revisiting a
// state) would shrink ε by orders of magnitude and with it the kernel's
// reach; the median moves only when half the points move
// (TestCostUnitRobustToNearDuplicates). The first call costs O(n²d) time
// (as one kernel application, on all cores) and O(n) memory; the value is
// kept.
func (pc *PointCloud) CostUnit() float64 {
	pc.unitOnce.Do(func() {
		u := unitPass{pc: pc, rowMin: make([]float64, pc.n)}
		var wg sync.WaitGroup
		parallel(pc.n, 16, &u, &wg)
		pc.unit = medianNN(u.rowMin)
	})
	return pc.unit
}

// medianNN returns CostUnit's value from each point's smallest positive
// cost (+Inf for a point with none), reordering rowMin: the median of the
// finite ones, or 1 if there are none.
func medianNN(rowMin []float64) float64 {
	nn := rowMin[:0]
	for _, v := range rowMin {
		if !math.IsInf(v, 1) {
			nn = append(nn, v)
		}
	}
	if len(nn) == 0 {
		return 1
	}
	slices.Sort(nn)
	if len(nn)%2 == 0 {
		return (nn[len(nn)/2-1] + nn[len(nn)/2]) / 2
	}
	return nn[len(nn)/2]
}

// seedCostUnit sets the value CostUnit returns to medianNN(rowMin) if it
// has not been computed yet; rowMin must be each point's smallest positive
// cost as CostUnit's own pass would find it (a kNN graph that holds it).
func (pc *PointCloud) seedCostUnit(rowMin []float64) {
	pc.unitOnce.Do(func() { pc.unit = medianNN(rowMin) })
}

// unitPass sets rowMin[i] to the smallest positive cost from point i.
type unitPass struct {
	pc     *PointCloud
	rowMin []float64
}

func (u *unitPass) runRange(_, lo, hi int) {
	pc := u.pc
	d := pc.d
	for i := lo; i < hi; i++ {
		xi := pc.x[i*d : (i+1)*d]
		m := math.Inf(1)
		for j := 0; j < pc.n; j++ {
			if c := sqDist(xi, pc.x[j*d:(j+1)*d], pc.w); c > 0 && c < m {
				m = c
			}
		}
		u.rowMin[i] = m
	}
}

// sqDist returns Σ_k w_k (a_k − b_k)², summed in coordinate order.
func sqDist(a, b, w []float64) float64 {
	a, b = a[:len(w)], b[:len(w)]
	var c float64
	for k, wk := range w {
		t := a[k] - b[k]
		c += wk * t * t
	}
	return c
}
