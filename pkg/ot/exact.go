package ot

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// MaxExactEntries bounds rows×cols for ExactCost: gonum's simplex works on a
// dense constraint matrix of (rows+cols-1)×(rows·cols) entries.
const MaxExactEntries = 40000

// ExactCost returns the unregularized optimal transport cost
// min_{P ∈ Π(a,b)} ⟨P, C⟩ and an optimal plan (row-major rows×cols) for the
// row-major cost matrix cost, with a and b normalized to mass 1. With a
// squared-distance cost (e.g. Lattice.CostMatrix) this is W2². It solves the
// linear program with gonum's simplex, started from the north-west-corner
// basis, and is meant for tests and small problems (rows·cols ≤ MaxExactEntries).
func ExactCost(cost []float64, rows, cols int, a, b []float64) (float64, []float64, error) {
	if len(a) != rows || len(b) != cols || len(cost) != rows*cols {
		return 0, nil, fmt.Errorf("ot: ExactCost: measures of length %d, %d and %d costs for %d×%d", len(a), len(b), len(cost), rows, cols)
	}
	if rows*cols > MaxExactEntries {
		return 0, nil, fmt.Errorf("ot: ExactCost: %d×%d problem is larger than %d entries", rows, cols, MaxExactEntries)
	}
	if err := CheckMeasure(a); err != nil {
		return 0, nil, fmt.Errorf("ot: ExactCost: first measure: %w", err)
	}
	if err := CheckMeasure(b); err != nil {
		return 0, nil, fmt.Errorf("ot: ExactCost: second measure: %w", err)
	}
	an, bn := normalized(a), normalized(b)
	// Equality constraints: row sums (rows), column sums except the last
	// (cols-1); the dropped one is implied by equal masses.
	nc := rows + cols - 1
	A := mat.NewDense(nc, rows*cols, nil)
	rhs := make([]float64, nc)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			A.Set(i, i*cols+j, 1)
			if j < cols-1 {
				A.Set(rows+j, i*cols+j, 1)
			}
		}
		rhs[i] = an[i]
	}
	for j := 0; j < cols-1; j++ {
		rhs[rows+j] = bn[j]
	}
	// North-west corner rule: a feasible basis of rows+cols-1 variables
	// forming a spanning tree of the bipartite graph.
	basis := make([]int, 0, nc)
	ra, rb := append([]float64(nil), an...), append([]float64(nil), bn...)
	i, j := 0, 0
	for len(basis) < nc {
		basis = append(basis, i*cols+j)
		t := min(ra[i], rb[j])
		ra[i] -= t
		rb[j] -= t
		switch {
		case i == rows-1:
			j++
		case j == cols-1:
			i++
		case ra[i] <= rb[j]:
			i++
		default:
			j++
		}
	}
	c := append([]float64(nil), cost...)
	val, x, err := lp.Simplex(c, A, rhs, 1e-12, basis)
	if err != nil {
		return 0, nil, fmt.Errorf("ot: ExactCost: simplex: %w", err)
	}
	return val, x, nil
}
