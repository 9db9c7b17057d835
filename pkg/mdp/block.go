package mdp

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
// floating-point sums. The solver (blockgmres.go) serves these float64
// blocks and the float32 blocks of 16 columns of the loose solves
// (block32.go); this file holds the float64 kernels (kernels_amd64.s).

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

// ops64 is blockOps for blocks of float64 columns: the products and
// substitutions of c (the substitutions skipped when noPrec) on ws's
// goroutines.
type ops64 struct {
	ws     *Workspace
	c      *csr
	noPrec bool
}

func (o ops64) width() int { return blockWidth }

func (o ops64) mul(y, x []blk) {
	nt := o.ws.nt
	nt.mulC, nt.mulBY, nt.mulBX = o.c, y, x
	o.ws.pool.run(o.ws.mulBlockFn, o.ws.bounds)
	nt.mulC, nt.mulBY, nt.mulBX = nil, nil, nil
}

func (o ops64) precond(x []blk) {
	if !o.noPrec {
		o.c.precondBlock(x)
	}
}

func (ops64) dots(dst *lanes, x, y []blk) { blockDots((*blk)(dst[:blockWidth]), x, y) }

func (ops64) axpyDots(dst *lanes, w []blk, a *lanes, v, u []blk) {
	blockAxpyDots((*blk)(dst[:blockWidth]), w, (*blk)(a[:blockWidth]), v, u)
}

func (ops64) addScaled(y []blk, a *lanes, x []blk, mask uint32) {
	if mask == 1<<blockWidth-1 {
		blockAddScaled(y, (*blk)(a[:blockWidth]), x)
		return
	}
	for jj := range blockWidth {
		if mask&(1<<jj) == 0 {
			continue
		}
		aj := a[jj]
		for s := range y {
			y[s][jj] += float64(aj * x[s][jj])
		}
	}
}

func (ops64) residual(r, b, ax []blk)          { residualBlocks[float64](r, b, ax) }
func (ops64) scale(x []blk, a *lanes)          { scaleBlocks[float64](x, a) }
func (ops64) scaleTwo(v, u, w []blk, a *lanes) { scaleTwoBlocks[float64](v, u, w, a) }
func (ops64) zero(x []blk, jj int)             { zeroColumn[float64](x, jj) }
