package mdp

// Single-precision blocks for loose column solves.
//
// The Hessian of the MaxEnt objective asks EvaluateColumns for relative
// residuals of 10⁻² to 10⁻¹, a thousand times above what float32 can
// reach (the products and substitutions round each entry to about 6·10⁻⁸;
// with ‖(I − γP_π)⁻¹‖ ≤ 1/(1 − γ) that moves a solution's residual by
// about 10⁻⁵ of ‖b‖ at γ = 0.99). At those tolerances EvaluateColumns
// carries blockWidth32 columns per block in float32: a block is still 64
// bytes per state, so each pass over the matrix, its factors and the
// Krylov basis serves twice the columns for the same bytes and the same
// instructions. Dot products and norms sum in float64.

// blockWidth32 is the number of columns of a float32 block.
const blockWidth32 = 16

// blk32 holds one state's entries of blockWidth32 columns.
type blk32 = [blockWidth32]float32

// column32Rtol is the tightest relative residual that EvaluateColumns
// solves in float32; tighter solves go in float64.
const column32Rtol = 1e-3

// csr32 holds float32 copies of a csr's values, ILU(0) factors and
// inverted diagonal; the pattern (ptr, col, diag) is the csr's.
type csr32 struct {
	val, lu, inv []float32
}

// round32 sets f to c's values and factors rounded to float32.
func (f *csr32) round32(c *csr) {
	nnz := c.ptr[c.n]
	if cap(f.val) < nnz {
		f.val, f.lu = make([]float32, nnz), make([]float32, nnz)
	}
	if cap(f.inv) < c.n {
		f.inv = make([]float32, c.n)
	}
	f.val, f.lu, f.inv = f.val[:nnz], f.lu[:nnz], f.inv[:c.n]
	for k, v := range c.val[:nnz] {
		f.val[k] = float32(v)
	}
	for k, v := range c.lu[:nnz] {
		f.lu[k] = float32(v)
	}
	for i, v := range c.inv[:c.n] {
		f.inv[i] = float32(v)
	}
}

// mulBlock32Range sets y = c·x for rows [lo, hi), with c's values val
// rounded to float32 (each term a rounded product, summed in entry order
// from +0).
func mulBlock32Range(c *csr, val []float32, y, x []blk32, lo, hi int) {
	if useAsm && hi > lo {
		_ = y[hi-1]
		_ = c.ptr[hi]
		mulBlock32AVX(&y[lo], &x[0], &c.ptr[lo], &c.col[0], &val[0], hi-lo)
		return
	}
	for i := lo; i < hi; i++ {
		var a blk32
		p0, p1 := c.ptr[i], c.ptr[i+1]
		cols, vals := c.col[p0:p1], val[p0:p1]
		cols = cols[:len(vals)]
		for k, v := range vals {
			xj := &x[cols[k]]
			for jj := range a {
				a[jj] += float32(v * xj[jj])
			}
		}
		y[i] = a
	}
}

// precondBlock32 overwrites every column of x with (LU)⁻¹x, as
// precondBlock does, with the factors f.
func precondBlock32(c *csr, f *csr32, x []blk32) {
	lu, col, ptr, diag, inv := f.lu, c.col, c.ptr, c.diag, f.inv
	n := c.n
	x, ptr, diag, inv = x[:n], ptr[:n+1], diag[:n], inv[:n]
	if useAsm && n > 0 {
		precondBlock32AVX(&x[0], &lu[0], &col[0], &ptr[0], &diag[0], &inv[0], n)
		return
	}
	for i := range n {
		p0, d := ptr[i], diag[i]
		a := x[i]
		subTerms32(&a, lu[p0:d], col[p0:d], x)
		x[i] = a
	}
	for i := n - 1; i >= 0; i-- {
		d, p1 := diag[i], ptr[i+1]
		a := x[i]
		subTerms32(&a, lu[d+1:p1], col[d+1:p1], x)
		s := inv[i]
		for jj := range a {
			a[jj] *= s
		}
		x[i] = a
	}
}

// subTerms32 sets a[jj] −= vals[k]·x[cs[k]][jj] for k in order.
func subTerms32(a *blk32, vals []float32, cs []int32, x []blk32) {
	cs = cs[:len(vals)]
	for k, l := range vals {
		xj := &x[cs[k]]
		for jj := range a {
			a[jj] -= float32(l * xj[jj])
		}
	}
}

// blockDots32 sets dst[jj] = Σ_s x[s][jj]·y[s][jj]: each product rounded
// to float32, summed in float64 in s order from +0.
func blockDots32(dst *lanes, x, y []blk32) {
	y = y[:len(x)]
	if useAsm && len(x) > 0 {
		blockDots32AVX(dst, &x[0], &y[0], len(x))
		return
	}
	var d lanes
	for s := range x {
		xs, ys := &x[s], &y[s]
		for jj := range xs {
			d[jj] += float64(float32(xs[jj] * ys[jj]))
		}
	}
	*dst = d
}

// blockAddScaled32 sets y[s][jj] += a[jj]·x[s][jj] (a rounded product,
// then a rounded sum).
func blockAddScaled32(y []blk32, a *blk32, x []blk32) {
	x = x[:len(y)]
	if useAsm && len(y) > 0 {
		blockAddScaled32AVX(&y[0], a, &x[0], len(y))
		return
	}
	for s := range y {
		ys, xs := &y[s], &x[s]
		for jj := range ys {
			ys[jj] += float32(a[jj] * xs[jj])
		}
	}
}

// blockAxpyDots32 sets w += a·v (as blockAddScaled32), then dst to the
// dots of the new w with u (as blockDots32), in one pass; u may be w.
func blockAxpyDots32(dst *lanes, w []blk32, a *blk32, v, u []blk32) {
	v, u = v[:len(w)], u[:len(w)]
	if useAsm && len(w) > 0 {
		blockAxpyDots32AVX(dst, &w[0], a, &v[0], &u[0], len(w))
		return
	}
	var d lanes
	for s := range w {
		ws, vs := &w[s], &v[s]
		for jj := range ws {
			ws[jj] += float32(a[jj] * vs[jj])
		}
		us := &u[s]
		for jj := range ws {
			d[jj] += float64(float32(ws[jj] * us[jj]))
		}
	}
	*dst = d
}

// ops32 is blockOps for blocks of float32 columns: the products of c with
// the values of f and the substitutions with its factors (skipped when
// noPrec) on ws's goroutines.
type ops32 struct {
	ws     *Workspace
	c      *csr
	f      *csr32
	noPrec bool
}

func (o ops32) width() int { return blockWidth32 }

func (o ops32) mul(y, x []blk32) {
	nt := o.ws.nt
	nt.mulC, nt.mul32, nt.mulB32Y, nt.mulB32X = o.c, o.f, y, x
	o.ws.pool.run(o.ws.mulBlock32Fn, o.ws.bounds)
	nt.mulC, nt.mul32, nt.mulB32Y, nt.mulB32X = nil, nil, nil, nil
}

func (o ops32) precond(x []blk32) {
	if !o.noPrec {
		precondBlock32(o.c, o.f, x)
	}
}

func (ops32) dots(dst *lanes, x, y []blk32) { blockDots32(dst, x, y) }

func (ops32) axpyDots(dst *lanes, w []blk32, a *lanes, v, u []blk32) {
	a32 := rounded[float32, blk32](a)
	blockAxpyDots32(dst, w, &a32, v, u)
}

// addScaled adds to the columns outside mask 0·x, which leaves them as
// they are: within a GMRES cycle a column's basis vectors past its own
// basis are zero (blockGMRES.solve), and x is finite.
func (ops32) addScaled(y []blk32, a *lanes, x []blk32, mask uint32) {
	a32 := rounded[float32, blk32](a)
	for jj := range a32 {
		if mask&(1<<jj) == 0 {
			a32[jj] = 0
		}
	}
	blockAddScaled32(y, &a32, x)
}

func (ops32) residual(r, b, ax []blk32) { residualBlocks[float32](r, b, ax) }
func (ops32) scale(x []blk32, a *lanes) { scaleBlocks[float32](x, a) }

func (ops32) scaleTwo(v, u, w []blk32, a *lanes) {
	if useAsm && len(v) > 0 {
		a32 := rounded[float32, blk32](a)
		u, w = u[:len(v)], w[:len(v)]
		blockScaleTwo32AVX(&v[0], &u[0], &w[0], &a32, len(v))
		return
	}
	scaleTwoBlocks[float32](v, u, w, a)
}

func (ops32) zero(x []blk32, jj int) { zeroColumn[float32](x, jj) }
