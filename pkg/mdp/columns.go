package mdp

import (
	"fmt"

	"gonum.org/v1/gonum/floats"
)

// ColumnStats describes one EvaluateColumns call.
type ColumnStats struct {
	// MatVecs counts the products with I − γP_π over all columns.
	MatVecs int
	// Residual is the largest relative residual ‖b − (I − γP_π)v‖₂/‖b‖₂
	// over the columns (0 for columns with b = 0).
	Residual float64
}

// EvaluateColumns sets dst (S×d, row-major: dst[s*d+j]) to the values
// V^π_j of the stationary policy pi on an infinite-horizon MDP for d
// rewards at once, given as rewards (S*A × d, row-major: rewards[k*d+j]
// for pair k = s*A+a):
//
//	V_j(s) = Σ_a π(a|s) (r_j(s,a) + γ Σ_s' P(s'|s,a) V_j(s')),   V_j = 0 at terminal states,
//
// that is (I − γP_π) V_j = Σ_a π r_j. Each column is solved by GMRES with
// an ILU(0) preconditioner (the Newton solver's, newton.go) to a relative
// residual of rtol, starting from dst's contents when warm (zero
// otherwise). With rewards = Φ, the columns are the discounted expected
// feature sums ψ(s) = ∂V/∂θ of a linear reward θᵀφ, which MaxEnt IRL's
// Hessian is made of. It panics on a finite horizon or mismatched lengths.
func (ws *Workspace) EvaluateColumns(dst, rewards []float64, d int, pi *Policy, rtol float64, warm bool) ColumnStats {
	m := ws.m
	S, A := m.NumStates, m.NumActions
	if m.Horizon > 0 {
		panic("mdp: EvaluateColumns needs an infinite horizon")
	}
	if d <= 0 || len(dst) != S*d || len(rewards) != S*A*d {
		panic(fmt.Sprintf("mdp: EvaluateColumns: dst %d and rewards %d entries do not fit S=%d, A=%d, d=%d", len(dst), len(rewards), S, A, d))
	}
	ws.checkPolicy(pi)
	if pi.Steps != 1 {
		panic("mdp: EvaluateColumns needs a stationary policy")
	}
	nt := ws.newton()
	ws.pi = pi
	ws.build()
	ws.pi = nil
	prec := nt.precA
	if !nt.a.ilu0() {
		prec = func([]float64) {}
	}
	// Right-hand sides row by row (contiguous reads of rewards), then both
	// they and the warm start turned column-major, so each column's solve
	// runs on contiguous vectors.
	if len(ws.colB) < S*d {
		ws.colB, ws.colX = make([]float64, S*d), make([]float64, S*d)
	}
	colB, colX := ws.colB[:S*d], ws.colX[:S*d]
	rowB := colX // scratch until the warm start is loaded
	clear(rowB)
	for s := range S {
		if m.IsTerminal(s) {
			continue
		}
		bs := rowB[s*d : (s+1)*d]
		for a, pa := range pi.Prob[s*A : (s+1)*A] {
			if pa != 0 {
				floats.AddScaled(bs, pa, rewards[(s*A+a)*d:(s*A+a+1)*d])
			}
		}
	}
	transpose(colB, rowB, S, d)
	if warm {
		transpose(colX, dst, S, d)
	} else {
		clear(colX)
	}
	var st ColumnStats
	for j := range d {
		x, b := colX[j*S:(j+1)*S], colB[j*S:(j+1)*S]
		bn := floats.Norm(b, 2)
		if bn == 0 {
			clear(x)
			continue
		}
		r0 := bn
		if warm {
			// Solve to rtol relative to b, not to the warm start's residual.
			nt.mulA(nt.kr.w, x)
			st.MatVecs++
			floats.Sub(nt.kr.w, b)
			r0 = floats.Norm(nt.kr.w, 2)
		}
		rel := r0 / bn
		if rel > rtol {
			mv, rr := nt.kr.solve(prec, nt.mulA, x, b, rtol*bn/r0, columnMaxMatVec)
			st.MatVecs += mv
			rel = rr * r0 / bn
		}
		st.Residual = max(st.Residual, rel)
	}
	transpose(dst, colX, d, S)
	return st
}

// transpose sets dst (c×r, row-major) to the transpose of src (r×c, row-major), in cache-sized blocks.
func transpose(dst, src []float64, r, c int) {
	const blk = 32
	for i0 := 0; i0 < r; i0 += blk {
		i1 := min(i0+blk, r)
		for j0 := 0; j0 < c; j0 += blk {
			j1 := min(j0+blk, c)
			for i := i0; i < i1; i++ {
				row := src[i*c : (i+1)*c]
				for j := j0; j < j1; j++ {
					dst[j*r+i] = row[j]
				}
			}
		}
	}
}

// columnMaxMatVec caps the products of one column's solve in EvaluateColumns.
const columnMaxMatVec = 2000
