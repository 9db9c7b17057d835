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
	// Columns go in blocks of columnBlock: their right-hand sides and warm
	// starts are gathered column-major (one cache line per state and
	// block), so each solve runs on contiguous vectors, and the buffers
	// stay 2·S·columnBlock whatever d.
	cb := min(columnBlock, d)
	if len(ws.colB) < S*cb {
		ws.colB, ws.colX = make([]float64, S*cb), make([]float64, S*cb)
	}
	var st ColumnStats
	for j0 := 0; j0 < d; j0 += cb {
		nb := min(cb, d-j0)
		colB, colX := ws.colB[:S*nb], ws.colX[:S*nb]
		clear(colB)
		for s := range S {
			if m.IsTerminal(s) {
				continue
			}
			for a, pa := range pi.Prob[s*A : (s+1)*A] {
				if pa == 0 {
					continue
				}
				row := rewards[(s*A+a)*d+j0 : (s*A+a)*d+j0+nb]
				for jj, r := range row {
					colB[jj*S+s] += pa * r
				}
			}
			for jj := range nb {
				if warm {
					colX[jj*S+s] = dst[s*d+j0+jj]
				} else {
					colX[jj*S+s] = 0
				}
			}
		}
		for jj := range nb {
			x, b := colX[jj*S:(jj+1)*S], colB[jj*S:(jj+1)*S]
			bn := floats.Norm(b, 2)
			if bn == 0 {
				clear(x)
				continue
			}
			r0, ax := bn, nt.kr.zero
			if warm {
				// Solve to rtol relative to b, not to the warm start's
				// residual; the solve starts from this product.
				ax = nt.kr.u
				nt.mulA(ax, x)
				st.MatVecs++
				floats.SubTo(nt.kr.w, ax, b)
				r0 = floats.Norm(nt.kr.w, 2)
			} else {
				clear(x)
			}
			rel := r0 / bn
			if rel > rtol {
				mv, rr := nt.kr.solve(prec, nt.mulA, x, b, ax, rtol*bn/r0, columnMaxMatVec)
				st.MatVecs += mv
				rel = rr * r0 / bn
			}
			st.Residual = max(st.Residual, rel)
		}
		for s := range S {
			for jj := range nb {
				dst[s*d+j0+jj] = colX[jj*S+s]
			}
		}
	}
	return st
}

// columnBlock is the number of columns EvaluateColumns gathers at once.
const columnBlock = 8

// columnMaxMatVec caps the products of one column's solve in EvaluateColumns.
const columnMaxMatVec = 2000
