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
	// over the columns (0 for columns with b = 0), as GMRES estimates it
	// (for float32 blocks within about 10⁻⁵ of the residual computed in
	// float64: TestEvaluateColumns32MeetsTolerance).
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
// residual of rtol, blockWidth float64 columns in lock step (block.go) or,
// when rtol ≥ column32Rtol, blockWidth32 float32 columns (block32.go),
// starting from dst's contents when warm (zero otherwise). With rewards = Φ, the columns are the discounted expected
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
	ok := nt.a.ilu0()
	precOne := nt.precA
	if !ok {
		precOne = func([]float64) {}
	}
	var st ColumnStats
	j0 := 0
	if rtol >= column32Rtol {
		j0 = ws.evaluateBlocks32(&st, dst, rewards, d, pi, rtol, warm, !ok)
	} else {
		j0 = ws.evaluateBlocks64(&st, dst, rewards, d, pi, rtol, warm, !ok)
	}
	for j := j0; j < d; j++ {
		mv, rel := ws.evaluateColumn(dst, rewards, d, j, pi, precOne, rtol, warm)
		st.MatVecs += mv
		st.Residual = max(st.Residual, rel)
	}
	return st
}

// evaluateBlocks64 runs evaluateBlocks in float64 blocks of blockWidth
// (block.go).
func (ws *Workspace) evaluateBlocks64(st *ColumnStats, dst, rewards []float64, d int, pi *Policy, rtol float64, warm, noPrec bool) int {
	nt := ws.nt
	if nt.kb == nil {
		S := ws.m.NumStates
		nt.kb = newBlockGMRES[blk](S)
		nt.colB, nt.colX = make([]blk, S), make([]blk, S)
	}
	ops := ops64{ws: ws, c: nt.a, noPrec: noPrec}
	return evaluateBlocks[float64](ws, st, ops, nt.kb, nt.colB, nt.colX, dst, rewards, d, pi, rtol, warm)
}

// evaluateBlocks32 runs evaluateBlocks in float32 blocks of blockWidth32
// (block32.go), with nt.a's values and factors rounded to float32.
func (ws *Workspace) evaluateBlocks32(st *ColumnStats, dst, rewards []float64, d int, pi *Policy, rtol float64, warm, noPrec bool) int {
	nt := ws.nt
	if nt.kb32 == nil {
		S := ws.m.NumStates
		nt.kb32 = newBlockGMRES[blk32](S)
		nt.colB32, nt.colX32 = make([]blk32, S), make([]blk32, S)
	}
	nt.a32.round32(nt.a)
	ops := ops32{ws: ws, c: nt.a, f: &nt.a32, noPrec: noPrec}
	return evaluateBlocks[float32](ws, st, ops, nt.kb32, nt.colB32, nt.colX32, dst, rewards, d, pi, rtol, warm)
}

// policyRHS sets bs[jj] = Σ_a p[a]·rewards[k0 + a·d + jj] for jj < nb
// (one state's right-hand sides Σ_a π(a|s) r_j(s, a), its first pair's
// column j0 at k0), skipping actions of probability 0; whole rows of
// blockWidth or blockWidth32 columns are read as arrays.
func policyRHS(bs *lanes, p, rewards []float64, k0, d, nb int) {
	for a, pa := range p {
		if pa == 0 {
			continue
		}
		k := k0 + a*d
		switch nb {
		case blockWidth32:
			row := (*[blockWidth32]float64)(rewards[k : k+blockWidth32])
			for jj := range row {
				bs[jj] += pa * row[jj]
			}
		case blockWidth:
			row := (*[blockWidth]float64)(rewards[k : k+blockWidth])
			for jj := range row {
				bs[jj] += pa * row[jj]
			}
		default:
			for jj, r := range rewards[k : k+nb] {
				bs[jj] += pa * r
			}
		}
	}
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
