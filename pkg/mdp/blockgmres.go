package mdp

import "math"

// The lock-step block GMRES of EvaluateColumns, written once for both of
// its arithmetics: blocks of blockWidth float64 columns (blk, block.go)
// and of blockWidth32 float32 columns (blk32, block32.go). Everything that
// walks the states goes through blockOps; the per-column scalars (the
// Hessenberg matrices, rotations, norms) are float64 in both.

// maxLanes is the most columns a block holds (blockWidth32).
const maxLanes = blockWidth32

// lanes holds one float64 per column of a block (the first width() used).
type lanes = [maxLanes]float64

// blockOps is the state-wise arithmetic of one block type B.
type blockOps[B any] interface {
	// width is the number of columns of a block.
	width() int
	// mul sets y = A·x and precond overwrites x with M⁻¹x.
	mul(y, x []B)
	precond(x []B)
	// dots sets dst[jj] = Σ_s x[s][jj]·y[s][jj].
	dots(dst *lanes, x, y []B)
	// axpyDots sets w += a·v, then dst = dots(w, u) of the new w; u may be w.
	axpyDots(dst *lanes, w []B, a *lanes, v, u []B)
	// addScaled sets y += a·x in the columns of mask (bit jj: column jj),
	// every column when mask is all ones.
	addScaled(y []B, a *lanes, x []B, mask uint32)
	// residual sets r = b − ax; scale sets x = a·x; scaleTwo sets v = u = a·w.
	residual(r, b, ax []B)
	scale(x []B, a *lanes)
	scaleTwo(v, u, w []B, a *lanes)
	// zero sets column jj of x to 0.
	zero(x []B, jj int)
}

// blockGMRES holds the buffers of the lock-step GMRES(blockRestart).
type blockGMRES[B any] struct {
	v    [][]B // basis, blockRestart+1 block vectors
	w, u []B
	// per column: the Hessenberg matrix (column j at h[jj][j*(m+1):]),
	// the Givens rotations and the rotated right-hand side
	h, cs, sn, g [maxLanes][]float64
	ys           []lanes // y = H⁻¹g of every column, by basis vector
	// per-column scratch that the kernels write through pointers (here,
	// not on the stack: an interface call's pointer arguments escape)
	ref, beta, scale, hcol, hn lanes
}

func newBlockGMRES[B any](n int) *blockGMRES[B] {
	m := blockRestart
	k := &blockGMRES[B]{w: make([]B, n), u: make([]B, n), ys: make([]lanes, m)}
	for range m + 1 {
		k.v = append(k.v, make([]B, n))
	}
	for jj := range maxLanes {
		k.h[jj], k.cs[jj], k.sn[jj], k.g[jj] = make([]float64, (m+1)*m), make([]float64, m), make([]float64, m), make([]float64, m+1)
	}
	return k
}

// solve improves each column of x towards the solution of A x = b until
// its residual's 2-norm falls to rtol·‖b‖ (that column's b) or maxMatVec
// products of that column are spent. x is taken as zero when warm is
// false. Columns with b = 0 are set to 0. It returns the products spent
// over all columns and the largest final relative residual ‖b − Ax‖/‖b‖
// (GMRES's estimate).
func (k *blockGMRES[B]) solve(ops blockOps[B], x, b []B, rtol float64, maxMatVec int, warm bool) (int, float64) {
	m := blockRestart
	W := ops.width()
	all := uint32(1)<<W - 1
	ref, beta, scale, hcol, hn := &k.ref, &k.beta, &k.scale, &k.hcol, &k.hn
	var rel lanes
	var active [maxLanes]bool
	var mv [maxLanes]int
	total := 0
	ops.dots(ref, b, b)
	for jj := range W {
		ref[jj] = math.Sqrt(ref[jj])
		active[jj] = ref[jj] > 0 && !math.IsNaN(ref[jj])
	}
	if !warm {
		clear(x)
	}
	for cycle := 0; ; cycle++ {
		// r = b − A x into v[0]
		v0 := k.v[0]
		if cycle == 0 && !warm {
			copy(v0, b)
		} else {
			ops.mul(k.w, x)
			for jj := range W {
				if active[jj] {
					mv[jj]++
					total++
				}
			}
			ops.residual(v0, b, k.w)
		}
		*beta, *scale = lanes{}, lanes{}
		ops.dots(beta, v0, v0)
		any := false
		for jj := range W {
			beta[jj] = math.Sqrt(beta[jj])
			clear(k.g[jj])
			if !active[jj] {
				continue
			}
			if rel[jj] = beta[jj] / ref[jj]; rel[jj] <= rtol || mv[jj] >= maxMatVec || math.IsNaN(rel[jj]) {
				active[jj] = false
				continue
			}
			k.g[jj][0] = beta[jj]
			scale[jj] = 1 / beta[jj]
			any = true
		}
		if !any {
			break
		}
		ops.scale(v0, scale)
		// Arnoldi in lock step; end[jj] is the size of column jj's basis.
		var end [maxLanes]int
		run := active
		for j := 0; j < m; j++ {
			live := false
			for jj := range W {
				live = live || run[jj]
			}
			if !live {
				break
			}
			if j == 0 {
				copy(k.u, k.v[0]) // later steps' copies come with v_j
			}
			ops.precond(k.u)
			ops.mul(k.w, k.u)
			for jj := range W {
				if run[jj] {
					mv[jj]++
					total++
				}
			}
			// modified Gram–Schmidt, each update fused with the next
			// dot products (axpyDots), the last with the norms
			*hcol, *hn = lanes{}, lanes{}
			ops.dots(hcol, k.w, k.v[0])
			for i := 0; i <= j; i++ {
				for jj := range W {
					if !run[jj] {
						hcol[jj] = 0
					}
					k.h[jj][j*(m+1)+i] = hcol[jj]
					hcol[jj] = -hcol[jj] // w − h·v is w + (−h)·v
				}
				if i < j {
					ops.axpyDots(hcol, k.w, hcol, k.v[i], k.v[i+1])
				} else {
					ops.axpyDots(hn, k.w, hcol, k.v[i], k.w)
				}
			}
			for jj := range W {
				hn[jj] = math.Sqrt(hn[jj])
				if !run[jj] {
					continue
				}
				hj := k.h[jj][j*(m+1) : (j+1)*(m+1)]
				hj[j+1] = hn[jj]
				cs, sn, g := k.cs[jj], k.sn[jj], k.g[jj]
				for i := 0; i < j; i++ {
					a, c := hj[i], hj[i+1]
					hj[i], hj[i+1] = cs[i]*a+sn[i]*c, -sn[i]*a+cs[i]*c
				}
				r := math.Hypot(hj[j], hj[j+1])
				if r == 0 { // breakdown: the Krylov space is exhausted
					run[jj] = false
					continue
				}
				cs[j], sn[j] = hj[j]/r, hj[j+1]/r
				hj[j], hj[j+1] = r, 0
				g[j+1] = -sn[j] * g[j]
				g[j] *= cs[j]
				end[jj] = j + 1
				if rel[jj] = math.Abs(g[j+1]) / ref[jj]; rel[jj] <= rtol || mv[jj] >= maxMatVec {
					run[jj] = false
				}
			}
			// v_{j+1} = w/‖w‖ for the columns still running; a stopped
			// column's basis vector is zero (w·0, finite w), so it costs
			// nothing but the block's arithmetic. The next step starts
			// from a copy of it in u, written in the same pass.
			for jj := range W {
				scale[jj] = 0
				if run[jj] && hn[jj] > 0 {
					scale[jj] = 1 / hn[jj]
				}
			}
			ops.scaleTwo(k.v[j+1], k.u, k.w, scale)
		}
		// x += M⁻¹ V y, column by column, with y = H⁻¹g (upper triangular).
		clear(k.u)
		for jj := range W {
			n := end[jj]
			if n == 0 {
				active[jj] = false // broke down at once: no better x in this space
				continue
			}
			h, g := k.h[jj], k.g[jj]
			for i := n - 1; i >= 0; i-- {
				s := g[i]
				for l := i + 1; l < n; l++ {
					s -= h[l*(m+1)+i] * k.ys[l][jj]
				}
				k.ys[i][jj] = s / h[i*(m+1)+i]
			}
			if rel[jj] <= rtol || mv[jj] >= maxMatVec {
				active[jj] = false
			}
		}
		// u = V y, every column's terms added in i order from +0.
		for i := range m {
			var mask uint32
			for jj := range W {
				if i < end[jj] {
					mask |= 1 << jj
				}
			}
			if mask != 0 {
				ops.addScaled(k.u, &k.ys[i], k.v[i], mask)
			}
		}
		ops.precond(k.u)
		ops.addScaled(x, &laneOnes, k.u, all)
	}
	worst := 0.0
	for jj := range W {
		if !(ref[jj] > 0) {
			ops.zero(x, jj)
			continue
		}
		worst = max(worst, rel[jj])
	}
	return total, worst
}

// laneOnes multiplies by 1 (exactly) in addScaled: x += 1·u is x += u.
var laneOnes = func() (o lanes) {
	for i := range o {
		o[i] = 1
	}
	return o
}()

// blockOf is a state's block of columns in either arithmetic: blk
// (float64) or blk32 (float32). The helpers below are the state-wise Go
// loops both share; E(·) rounds a float64 lane to the block's precision
// (exact for float64).
type blockOf[E float32 | float64] interface {
	[blockWidth]E | [blockWidth32]E
}

// residualBlocks sets r = b − ax.
func residualBlocks[E float32 | float64, B blockOf[E]](r, b, ax []B) {
	var z B
	b, ax = b[:len(r)], ax[:len(r)]
	for s := range r {
		for jj := 0; jj < len(z); jj++ {
			r[s][jj] = b[s][jj] - ax[s][jj]
		}
	}
}

// rounded returns a rounded to the precision of B's lanes.
func rounded[E float32 | float64, B blockOf[E]](a *lanes) (ae B) {
	for jj := 0; jj < len(ae); jj++ {
		ae[jj] = E(a[jj])
	}
	return ae
}

// scaleBlocks sets x = a·x.
func scaleBlocks[E float32 | float64, B blockOf[E]](x []B, a *lanes) {
	ae := rounded[E, B](a)
	for s := range x {
		for jj := 0; jj < len(ae); jj++ {
			x[s][jj] *= ae[jj]
		}
	}
}

// scaleTwoBlocks sets v = u = a·w.
func scaleTwoBlocks[E float32 | float64, B blockOf[E]](v, u, w []B, a *lanes) {
	ae := rounded[E, B](a)
	u, w = u[:len(v)], w[:len(v)]
	for s := range v {
		var vs B
		for jj := 0; jj < len(vs); jj++ {
			vs[jj] = w[s][jj] * ae[jj]
		}
		v[s], u[s] = vs, vs
	}
}

// zeroColumn sets column jj of x to 0.
func zeroColumn[E float32 | float64, B blockOf[E]](x []B, jj int) {
	for s := range x {
		x[s][jj] = 0
	}
}

// evaluateBlocks solves EvaluateColumns' columns in blocks of ops.width()
// columns, interleaved by state, the last block padded with zero columns,
// until at most columnScalarMax columns are left, and returns the first
// column left. The right-hand sides are summed in float64 (policyRHS) and
// rounded to the blocks' precision, the solutions widened back.
func evaluateBlocks[E float32 | float64, B blockOf[E]](ws *Workspace, st *ColumnStats, ops blockOps[B], kb *blockGMRES[B], colB, colX []B, dst, rewards []float64, d int, pi *Policy, rtol float64, warm bool) int {
	m := ws.m
	S, A := m.NumStates, m.NumActions
	W := ops.width()
	j0 := 0
	for ; d-j0 > columnScalarMax; j0 += W {
		nb := min(W, d-j0)
		for s := range S {
			var bs lanes
			if !m.IsTerminal(s) {
				policyRHS(&bs, pi.Prob[s*A:(s+1)*A], rewards, s*A*d+j0, d, nb)
			}
			colB[s] = rounded[E, B](&bs)
		}
		if warm {
			for s := range S {
				var x B
				for jj, v := range dst[s*d+j0 : s*d+j0+nb] {
					x[jj] = E(v)
				}
				colX[s] = x
			}
		}
		mv, rel := kb.solve(ops, colX, colB, rtol, columnMaxMatVec, warm)
		st.MatVecs += mv
		st.Residual = max(st.Residual, rel)
		for s := range S {
			for jj := range dst[s*d+j0 : s*d+j0+nb] {
				dst[s*d+j0+jj] = float64(colX[s][jj])
			}
		}
	}
	return j0
}
