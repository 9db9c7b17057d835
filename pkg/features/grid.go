// Package features holds the reward feature maps φ of fedirl: the paper's
// grid-world features (ℓ2 distance to the goal and to the nearest obstacle)
// and helpers that lift state features to the state–action lattice X = S×A
// on which rewards r = Φθ are evaluated.
//
// Feature matrices are gonum *mat.Dense with one row per state (or per
// state–action pair, row s*A+a) and one column per feature, so that least
// squares and other linear algebra can use them directly.
//
// The package deliberately learns nothing and, but for one block, knows no
// dynamics: HeldLander predicts LunarLander's held step from Gymnasium's
// constants (a feature of the state and the action, not a simulator; the
// simulator, envs/lunar, is not imported). Distances are a few lines of hand-written code because no
// library call computes a nearest-obstacle distance field on a grid.
package features

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// GridNames names the columns of Grid's feature matrix.
var GridNames = []string{"goal_distance", "obstacle_distance"}

// GridDim is the number of grid features.
const GridDim = 2

// GridScale returns the normalization of the grid features on an N×N grid:
// the diagonal length (N−1)√2, so both features lie in [0, 1] on every layout
// and mean the same thing on every client.
func GridScale(size int) float64 { return float64(size-1) * math.Sqrt2 }

// Grid returns the N²×2 matrix of state features of an N×N grid with the
// given goal and obstacle cells (indices row*N+col):
//
//	φ(s) = ( ‖s − goal‖₂ / L,  min_o ‖s − o‖₂ / L ),   L = (N−1)√2,
//
// distances between cell centres in cell units. There is no bias column: with
// absorbing terminal cells a constant reward offset changes no optimal policy,
// and its MaxEnt gradient is identically zero. On a layout without obstacles
// the obstacle distance is 1 (the normalized diagonal) everywhere.
func Grid(size, goal int, obstacles []int) (*mat.Dense, error) {
	n := size * size
	if size < 2 {
		return nil, fmt.Errorf("features: grid size %d, want ≥ 2", size)
	}
	if goal < 0 || goal >= n {
		return nil, fmt.Errorf("features: goal %d outside [0,%d)", goal, n)
	}
	for i, o := range obstacles {
		if o < 0 || o >= n {
			return nil, fmt.Errorf("features: obstacle %d = %d outside [0,%d)", i, o, n)
		}
	}
	scale := GridScale(size)
	phi := mat.NewDense(n, GridDim, nil)
	gr, gc := goal/size, goal%size
	for s := range n {
		r, c := s/size, s%size
		phi.Set(s, 0, math.Hypot(float64(r-gr), float64(c-gc))/scale)
		d := scale
		for _, o := range obstacles {
			d = math.Min(d, math.Hypot(float64(r-o/size), float64(c-o%size)))
		}
		phi.Set(s, 1, d/scale)
	}
	return phi, nil
}

// StateAction lifts an S×d state-feature matrix to the (S·A)×d matrix with
// row s*A+a equal to row s (features that do not depend on the action).
func StateAction(states *mat.Dense, numActions int) *mat.Dense {
	if numActions < 1 {
		panic("features: StateAction needs at least one action")
	}
	ns, d := states.Dims()
	out := mat.NewDense(ns*numActions, d, nil)
	for s := range ns {
		row := states.RawRowView(s)
		for a := range numActions {
			copy(out.RawRowView(s*numActions+a), row)
		}
	}
	return out
}

// Reward returns dst = Φθ (length rows of phi), allocating dst when it is nil
// or of the wrong length.
func Reward(dst []float64, phi *mat.Dense, theta []float64) []float64 {
	n, d := phi.Dims()
	if len(theta) != d {
		panic(fmt.Sprintf("features: Reward: θ has length %d, Φ has %d columns", len(theta), d))
	}
	if len(dst) != n {
		dst = make([]float64, n)
	}
	for i := range n {
		dst[i] = floats.Dot(phi.RawRowView(i), theta)
	}
	return dst
}
