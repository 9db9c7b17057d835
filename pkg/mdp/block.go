package mdp

import (
	"math"
)

// Block solves: blockWidth right-hand sides of one system solved in lock
// step.
//
// EvaluateColumns solves (I − γP_π)V_j = b_j for one column per feature
// (65 on the control lattices). Solved one at a time, each product and
// each triangular solve of the ILU(0) preconditioner walks the whole
// matrix for one number per row, and the substitutions wait on the row
// just solved (precond). Carried as blocks of blockWidth interleaved
// columns (one cache line per state), every matrix entry is read once for
// blockWidth independent multiply–adds, which also hides the
// substitutions' latency. The Krylov method is GMRES run for every column
// of the block at once (lock step): each column keeps its own Hessenberg
// matrix, rotations and stopping test, so each column's iterates are
// those of a GMRES solve of that column alone, up to the order of the
// floating-point sums.

// blockWidth is the number of columns of a block.
const blockWidth = 8

// blk holds one state's entries of blockWidth columns.
type blk = [blockWidth]float64

// blockRestart is the restart length of the block GMRES: its basis is
// blockRestart+1 block vectors (64 bytes per state each), and the column
// solves it serves start warm and stop at a loose relative residual.
const blockRestart = 12

// mulBlockRange sets y = c·x for rows [lo, hi) of block vectors.
func (c *csr) mulBlockRange(y, x []blk, lo, hi int) {
	if useAsm && hi > lo {
		_ = y[hi-1]
		_ = c.ptr[hi]
		mulBlockAVX(&y[lo], &x[0], &c.ptr[lo], &c.col[0], &c.val[0], hi-lo)
		return
	}
	for i := lo; i < hi; i++ {
		var a0, a1, a2, a3, a4, a5, a6, a7 float64
		p0, p1 := c.ptr[i], c.ptr[i+1]
		cols, vals := c.col[p0:p1], c.val[p0:p1]
		cols = cols[:len(vals)]
		for k, v := range vals {
			xj := &x[cols[k]]
			a0 += float64(v * xj[0])
			a1 += float64(v * xj[1])
			a2 += float64(v * xj[2])
			a3 += float64(v * xj[3])
			a4 += float64(v * xj[4])
			a5 += float64(v * xj[5])
			a6 += float64(v * xj[6])
			a7 += float64(v * xj[7])
		}
		y[i] = blk{a0, a1, a2, a3, a4, a5, a6, a7}
	}
}

// precondBlock overwrites every column of x with (LU)⁻¹x, as precond does
// for one.
func (c *csr) precondBlock(x []blk) {
	lu, col, ptr, diag, inv := c.lu, c.col, c.ptr, c.diag, c.inv
	n := c.n
	x, ptr, diag, inv = x[:n], ptr[:n+1], diag[:n], inv[:n]
	if useAsm && n > 0 {
		precondBlockAVX(&x[0], &lu[0], &col[0], &ptr[0], &diag[0], &inv[0], n)
		return
	}
	for i := range n {
		p0, d := ptr[i], diag[i]
		a := x[i]
		subTerms(&a, lu[p0:d], col[p0:d], x)
		x[i] = a
	}
	for i := n - 1; i >= 0; i-- {
		d, p1 := diag[i], ptr[i+1]
		a := x[i]
		subTerms(&a, lu[d+1:p1], col[d+1:p1], x)
		s := inv[i]
		for jj := range a {
			a[jj] *= s
		}
		x[i] = a
	}
}

// subTerms sets a[jj] −= vals[k]·x[cs[k]][jj] for k in order (a rounded
// product, then a rounded difference).
func subTerms(a *blk, vals []float64, cs []int32, x []blk) {
	cs = cs[:len(vals)]
	for k, l := range vals {
		xj := &x[cs[k]]
		a[0] -= float64(l * xj[0])
		a[1] -= float64(l * xj[1])
		a[2] -= float64(l * xj[2])
		a[3] -= float64(l * xj[3])
		a[4] -= float64(l * xj[4])
		a[5] -= float64(l * xj[5])
		a[6] -= float64(l * xj[6])
		a[7] -= float64(l * xj[7])
	}
}

// blockDots sets dst[jj] = Σ_s x[s][jj]·y[s][jj].
func blockDots(dst *blk, x, y []blk) {
	var d blk
	y = y[:len(x)]
	if useAsm && len(x) > 0 {
		blockDotsAVX(dst, &x[0], &y[0], len(x))
		return
	}
	for s := range x {
		xs, ys := &x[s], &y[s]
		for jj := range d {
			d[jj] += float64(xs[jj] * ys[jj])
		}
	}
	*dst = d
}

// blockAddScaled sets y[s][jj] += a[jj]·x[s][jj] (a rounded product, then
// a rounded sum, as the plain loop).
func blockAddScaled(y []blk, a *blk, x []blk) {
	x = x[:len(y)]
	if useAsm && len(y) > 0 {
		blockAddScaledAVX(&y[0], a, &x[0], len(y))
		return
	}
	for s := range y {
		ys, xs := &y[s], &x[s]
		for jj := range ys {
			ys[jj] += float64(a[jj] * xs[jj])
		}
	}
}

// blockAxpyDots sets w[s][jj] += a[jj]·v[s][jj] (as blockAddScaled) and
// then dst[jj] = Σ_s w[s][jj]·u[s][jj] of the new w (as blockDots), in one
// pass; u may be w. The block GMRES's modified Gram–Schmidt fuses each
// update with the next basis vector's dot products this way (orth.go).
func blockAxpyDots(dst *blk, w []blk, a *blk, v, u []blk) {
	v, u = v[:len(w)], u[:len(w)]
	if useAsm && len(w) > 0 {
		blockAxpyDotsAVX(dst, &w[0], a, &v[0], &u[0], len(w))
		return
	}
	var d blk
	for s := range w {
		ws, vs := &w[s], &v[s]
		for jj := range ws {
			ws[jj] += float64(a[jj] * vs[jj])
		}
		us := &u[s]
		for jj := range d {
			d[jj] += float64(ws[jj] * us[jj])
		}
	}
	*dst = d
}

// blockOnes multiplies by 1 (exactly) in blockAddScaled: x += 1·u is x += u.
var blockOnes = blk{1, 1, 1, 1, 1, 1, 1, 1}

// blockGMRES holds the buffers of the lock-step GMRES(blockRestart).
type blockGMRES struct {
	v    [][]blk // basis, blockRestart+1 block vectors
	w, u []blk
	// per column: the Hessenberg matrix (column j at h[jj][j*(m+1):]),
	// the Givens rotations and the rotated right-hand side
	h, cs, sn, g [blockWidth][]float64
	ys           []blk // y = H⁻¹g of every column, by basis vector
}

func newBlockGMRES(n int) *blockGMRES {
	m := blockRestart
	k := &blockGMRES{w: make([]blk, n), u: make([]blk, n), ys: make([]blk, m)}
	for range m + 1 {
		k.v = append(k.v, make([]blk, n))
	}
	for jj := range blockWidth {
		k.h[jj], k.cs[jj], k.sn[jj], k.g[jj] = make([]float64, (m+1)*m), make([]float64, m), make([]float64, m), make([]float64, m+1)
	}
	return k
}

// solve improves each column of x towards the solution of A x = b until
// its residual's 2-norm falls to rtol·‖b‖ (that column's b) or maxMatVec
// products of that column are spent. x is taken as zero when warm is
// false. Columns with b = 0 are set to 0. It returns the products spent
// over all columns and the largest final relative residual ‖b − Ax‖/‖b‖.
func (k *blockGMRES) solve(precond func([]blk), mul func(y, x []blk), x, b []blk, rtol float64, maxMatVec int, warm bool) (int, float64) {
	m := blockRestart
	var ref, rel blk
	var active [blockWidth]bool
	var mv [blockWidth]int
	total := 0
	blockDots(&ref, b, b)
	for jj := range blockWidth {
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
			mul(k.w, x)
			for jj := range blockWidth {
				if active[jj] {
					mv[jj]++
					total++
				}
			}
			for s := range v0 {
				for jj := range blockWidth {
					v0[s][jj] = b[s][jj] - k.w[s][jj]
				}
			}
		}
		var beta, scale blk
		blockDots(&beta, v0, v0)
		any := false
		for jj := range blockWidth {
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
		for s := range v0 {
			for jj := range blockWidth {
				v0[s][jj] *= scale[jj]
			}
		}
		// Arnoldi in lock step; end[jj] is the size of column jj's basis.
		var end [blockWidth]int
		run := active
		for j := 0; j < m; j++ {
			live := false
			for jj := range blockWidth {
				live = live || run[jj]
			}
			if !live {
				break
			}
			if j == 0 {
				copy(k.u, k.v[0]) // later steps' copies come with v_j
			}
			precond(k.u)
			mul(k.w, k.u)
			for jj := range blockWidth {
				if run[jj] {
					mv[jj]++
					total++
				}
			}
			// modified Gram–Schmidt, each update fused with the next
			// dot products (blockAxpyDots), the last with the norms
			var hcol, hn blk
			blockDots(&hcol, k.w, k.v[0])
			for i := 0; i <= j; i++ {
				for jj := range blockWidth {
					if !run[jj] {
						hcol[jj] = 0
					}
					k.h[jj][j*(m+1)+i] = hcol[jj]
					hcol[jj] = -hcol[jj] // w − h·v is w + (−h)·v
				}
				if i < j {
					blockAxpyDots(&hcol, k.w, &hcol, k.v[i], k.v[i+1])
				} else {
					blockAxpyDots(&hn, k.w, &hcol, k.v[i], k.w)
				}
			}
			for jj := range blockWidth {
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
			for jj := range blockWidth {
				scale[jj] = 0
				if run[jj] && hn[jj] > 0 {
					scale[jj] = 1 / hn[jj]
				}
			}
			vn := k.v[j+1]
			for s := range vn {
				var vs blk
				for jj := range blockWidth {
					vs[jj] = k.w[s][jj] * scale[jj]
				}
				vn[s], k.u[s] = vs, vs
			}
		}
		// x += M⁻¹ V y, column by column, with y = H⁻¹g (upper triangular).
		clear(k.u)
		for jj := range blockWidth {
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
		// u = V y, every column's terms added in i order from +0: whole
		// block vectors at once while every column's basis reaches i.
		for i := range m {
			full, some := true, false
			for jj := range blockWidth {
				full = full && i < end[jj]
				some = some || i < end[jj]
			}
			switch {
			case full:
				blockAddScaled(k.u, &k.ys[i], k.v[i])
			case some:
				for jj := range blockWidth {
					if i >= end[jj] {
						continue
					}
					yi, vi := k.ys[i][jj], k.v[i]
					for s := range k.u {
						k.u[s][jj] += float64(yi * vi[s][jj])
					}
				}
			}
		}
		precond(k.u)
		blockAddScaled(x, &blockOnes, k.u)
	}
	worst := 0.0
	for jj := range blockWidth {
		if !(ref[jj] > 0) {
			for s := range x {
				x[s][jj] = 0
			}
			continue
		}
		worst = max(worst, rel[jj])
	}
	return total, worst
}
