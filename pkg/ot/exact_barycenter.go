package ot

import (
	"fmt"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// ExactBarycenter returns the fixed-support W2 barycenter on the support of
// cost: argmin_q Σ_k α_k W2²(q, μ_k), solved as one linear program over the
// K couplings and q (gonum lp), for tests and small problems only
// (K·n² ≤ MaxExactEntries). Measures are normalized to mass 1; alpha are the
// weights (they need not sum to 1).
func ExactBarycenter(cost []float64, n int, measures [][]float64, alpha []float64) ([]float64, error) {
	K := len(measures)
	if K == 0 || len(alpha) != K || len(cost) != n*n {
		return nil, fmt.Errorf("ot: ExactBarycenter: %d measures, %d weights, %d costs for n = %d", K, len(alpha), len(cost), n)
	}
	if K*n*n > MaxExactEntries {
		return nil, fmt.Errorf("ot: ExactBarycenter: %d couplings of %d×%d are larger than %d entries", K, n, n, MaxExactEntries)
	}
	for k, m := range measures {
		if len(m) != n {
			return nil, fmt.Errorf("ot: ExactBarycenter: measure %d has length %d, want %d", k, len(m), n)
		}
		if err := CheckMeasure(m); err != nil {
			return nil, fmt.Errorf("ot: ExactBarycenter: measure %d: %w", k, err)
		}
	}
	nv := K*n*n + n
	// Constraints per k: P_k 1 − q = 0 (n rows) and P_kᵀ1 = μ_k (n rows, the
	// last dropped for k ≥ 1 as it is implied); plus 1ᵀq = 1.
	var rowsA [][]float64
	var rhs []float64
	for k := range K {
		mk := measures[k]
		s := floats.Sum(mk)
		for i := range n {
			row := make([]float64, nv)
			for j := range n {
				row[k*n*n+i*n+j] = 1
			}
			row[K*n*n+i] = -1
			rowsA = append(rowsA, row)
			rhs = append(rhs, 0)
		}
		for j := range n {
			if k > 0 && j == n-1 {
				continue
			}
			row := make([]float64, nv)
			for i := range n {
				row[k*n*n+i*n+j] = 1
			}
			rowsA = append(rowsA, row)
			rhs = append(rhs, mk[j]/s)
		}
	}
	// 1ᵀq = 1 is implied by P_0's constraints; not added.
	A := mat.NewDense(len(rowsA), nv, nil)
	for r, row := range rowsA {
		A.SetRow(r, row)
	}
	c := make([]float64, nv)
	for k := range K {
		for x := range n * n {
			c[k*n*n+x] = alpha[k] * cost[x]
		}
	}
	_, x, err := lp.Simplex(c, A, rhs, 1e-10, nil)
	if err != nil {
		return nil, fmt.Errorf("ot: ExactBarycenter: %w", err)
	}
	return append([]float64(nil), x[K*n*n:]...), nil
}
