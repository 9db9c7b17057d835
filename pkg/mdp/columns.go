package mdp

import (
	"fmt"
	"math"

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
// residual of rtol, blockWidth columns in lock step (block.go), starting
// from dst's contents when warm (zero otherwise). With rewards = Φ, the columns are the discounted expected
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
	ws.build(nt.a)
	ws.pi = nil
	prec, precOne := nt.a.precondBlock, nt.precA
	if !nt.a.ilu0() {
		prec, precOne = func([]blk) {}, func([]float64) {}
	}
	if nt.kb == nil {
		nt.kb = newBlockGMRES(S)
		nt.colB, nt.colX = make([]blk, S), make([]blk, S)
	}
	mul := func(y, x []blk) {
		nt.mulC, nt.mulBY, nt.mulBX = nt.a, y, x
		ws.pool.run(ws.mulBlockFn, ws.bounds)
		nt.mulC, nt.mulBY, nt.mulBX = nil, nil, nil
	}
	// Columns go in blocks of blockWidth, interleaved by state (block.go);
	// the last block is padded with zero columns.
	var st ColumnStats
	colB, colX := nt.colB, nt.colX
	for j0 := 0; j0 < d; j0 += blockWidth {
		nb := min(blockWidth, d-j0)
		if nb <= columnScalarMax {
			for j := j0; j < d; j++ {
				mv, rel := ws.evaluateColumn(dst, rewards, d, j, pi, precOne, rtol, warm)
				st.MatVecs += mv
				st.Residual = max(st.Residual, rel)
			}
			break
		}
		full := nb == blockWidth // whole blocks move as arrays, without a call per state
		for s := range S {
			var bs blk
			if !m.IsTerminal(s) {
				for a, pa := range pi.Prob[s*A : (s+1)*A] {
					if pa == 0 {
						continue
					}
					k := (s*A+a)*d + j0
					if full {
						row := (*blk)(rewards[k : k+blockWidth])
						for jj := range bs {
							bs[jj] += pa * row[jj]
						}
						continue
					}
					for jj, r := range rewards[k : k+nb] {
						bs[jj] += pa * r
					}
				}
			}
			colB[s] = bs
		}
		if warm {
			for s := range S {
				if full {
					colX[s] = blk(dst[s*d+j0 : s*d+j0+blockWidth])
					continue
				}
				colX[s] = blk{}
				copy(colX[s][:nb], dst[s*d+j0:s*d+j0+nb])
			}
		}
		mv, rel := nt.kb.solve(prec, mul, colX, colB, rtol, columnMaxMatVec, warm)
		st.MatVecs += mv
		st.Residual = max(st.Residual, rel)
		for s := range S {
			if full {
				*(*blk)(dst[s*d+j0 : s*d+j0+blockWidth]) = colX[s]
				continue
			}
			copy(dst[s*d+j0:s*d+j0+nb], colX[s][:nb])
		}
	}
	return st
}

// columnScalarMax is the most columns a last, partly filled block may
// hold and still be solved one column at a time by the scalar GMRES: a
// block's products and substitutions cost the same however few of its
// columns are used, about four times a single column's on the control
// lattices, so a block with one or two columns (65 features: 8 blocks and
// one column) costs less as scalar solves.
const columnScalarMax = 2

// evaluateColumn solves column j of EvaluateColumns alone with the scalar
// GMRES preconditioned by prec (nt.a's factors), to the same relative residual
// ‖b − (I − γP_π)v‖₂/‖b‖₂ ≤ rtol, and returns its products and that
// residual.
func (ws *Workspace) evaluateColumn(dst, rewards []float64, d, j int, pi *Policy, prec func([]float64), rtol float64, warm bool) (int, float64) {
	m, nt := ws.m, ws.nt
	S, A := m.NumStates, m.NumActions
	b, x := nt.rhs, nt.delta
	for s := range S {
		b[s] = 0
		if !warm {
			x[s] = 0
		} else {
			x[s] = dst[s*d+j]
		}
		if m.IsTerminal(s) {
			continue
		}
		for a, pa := range pi.Prob[s*A : (s+1)*A] {
			if pa != 0 {
				b[s] += pa * rewards[(s*A+a)*d+j]
			}
		}
	}
	bn := floats.Norm(b, 2)
	rel, mv := 0.0, 0
	if bn == 0 || math.IsNaN(bn) {
		clear(x)
	} else {
		ax, r0 := nt.kr.zero, bn
		if warm {
			ax = nt.kr.w // solve reads ax before it uses w
			nt.mulA(ax, x)
			mv++
			floats.SubTo(nt.kr.u, b, ax)
			r0 = floats.Norm(nt.kr.u, 2)
		}
		if r0 > rtol*bn {
			k, r := nt.kr.solve(prec, nt.mulA, x, b, ax, rtol*bn/r0, columnMaxMatVec-mv)
			mv += k
			rel = r * r0 / bn
		} else {
			rel = r0 / bn
		}
	}
	for s := range S {
		dst[s*d+j] = x[s]
	}
	return mv, rel
}

// columnMaxMatVec caps the products of one column's solve in EvaluateColumns.
const columnMaxMatVec = 2000
