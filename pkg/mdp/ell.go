package mdp

import "math"

// Fixed-width rows for ILU(0)'s single-vector substitutions.
//
// The substitutions loop over row parts of 0–12 entries (CartPole's fine
// lattice: about 3 below and 3 above the diagonal on average), and the loop's
// exit is mispredicted on most rows, on the critical path from one row to
// the next: that, not the arithmetic, bounded them. Laid out in ELLPACK
// fashion — every row part in ellWidth slots, the unused slots first, a
// row's entries beyond ellWidth (0.3–1.6 % on CartPole's lattice) finished from
// the csr — the rows run without a data-dependent branch: on CartPole's
// fine-lattice matrix 17.9 → 9.2 ns per row in plain Go, and on the
// banded benchmark matrix 16.9 (the csr loop in assembly) → 6.1 ns with
// ellForwardAsm and ellBackwardAsm (BenchmarkSparseKernels). ILU(0) reads
// the earlier rows' parts above the diagonal from the same layout
// (sparse.go). (The product, laid out alike, was no faster in the fit: its
// rows are independent, so the out-of-order core hides their exits.)
//
// The unused slots hold column i (the row's own) and the coefficient −0,
// so the kernels are bit for bit the csr loops (TestILU0MatchesCSR): a
// sum that starts at x[i] takes −0·x[i], whose sign is the opposite of
// x[i]'s, and x[i] − (∓0) is x[i] for every finite x[i], zeros of either
// sign included.

// ellWidth is the number of slots of a row part.
const ellWidth = 8

// ell holds one part of each row of a csr (its entries below, above or on
// both sides of the diagonal) in ellWidth slots per row.
type ell struct {
	col  []int32
	val  []float64
	more []bool  // the row part has entries beyond its slots (the first ellWidth are in them)
	over []int32 // the rows with more, in order (rebuilt by each factorization)
}

func newEll(n int) ell {
	return ell{col: make([]int32, n*ellWidth), val: make([]float64, n*ellWidth), more: make([]bool, n)}
}

// setRow lays out row i's part (cols, vals): its first min(len, ellWidth)
// entries in the last slots, the first slots column i with coefficient pad.
func (e *ell) setRow(i int, cols []int32, vals []float64, pad float64) {
	cs, vs := e.col[i*ellWidth:(i+1)*ellWidth], e.val[i*ellWidth:(i+1)*ellWidth]
	k := min(len(cols), ellWidth)
	off := ellWidth - k
	for t := range off {
		cs[t], vs[t] = int32(i), pad
	}
	copy(cs[off:], cols[:k])
	copy(vs[off:], vals[:k])
	e.more[i] = len(cols) > ellWidth
	if e.more[i] {
		e.over = append(e.over, int32(i))
	}
}

// negZero is the coefficient of the substitutions' unused slots.
var negZero = math.Copysign(0, -1)

// layoutRow lays out row i of the ILU(0) factors; ilu0 calls it once the
// row is factored.
func (c *csr) layoutRow(i int) {
	p0, d, p1 := c.ptr[i], c.diag[i], c.ptr[i+1]
	c.el.setRow(i, c.col[p0:d], c.lu[p0:d], negZero)
	c.eu.setRow(i, c.col[d+1:p1], c.lu[d+1:p1], negZero)
}

// precond overwrites x with (LU)⁻¹x by forward and backward substitution,
// each row's terms in column order as the csr loops
//
//	for p := ptr[i]; p < diag[i]; p++ { x[i] -= lu[p]·x[col[p]] }
//	for p := diag[i]+1; p < ptr[i+1]; p++ { x[i] -= lu[p]·x[col[p]] }; x[i] *= inv[i]
//
// would. It is serial: each row needs the rows just solved. (Splitting the
// factors into independent diagonal blocks, one per core, cost more GMRES
// iterations than it saved on the 10⁵ and 10⁶ Pendulum models.) The
// backward pass multiplies by the stored 1/U(i,i): a division sat on the
// critical path from one row to the next. The runs of rows that fit their
// slots go to ellForwardAsm and ellBackwardAsm (kernels_amd64.s, the same
// operations in the same order) where the CPU has them; a row with more
// entries than slots is finished from the csr.
func (c *csr) precond(x []float64) {
	n := c.n
	x = x[:n]
	if !c.ell {
		c.precondCSR(x)
		return
	}
	lo := 0
	for _, r := range c.el.over {
		c.forwardRows(x, lo, int(r))
		i := int(r)
		acc := subSlots(x[i], c.el.col[i*ellWidth:], c.el.val[i*ellWidth:], x)
		for p := c.ptr[i] + ellWidth; p < c.diag[i]; p++ {
			acc -= float64(c.lu[p] * x[c.col[p]])
		}
		x[i] = acc
		lo = i + 1
	}
	c.forwardRows(x, lo, n)
	hi := n
	for k := len(c.eu.over) - 1; k >= 0; k-- {
		i := int(c.eu.over[k])
		c.backwardRows(x, i+1, hi)
		acc := subSlots(x[i], c.eu.col[i*ellWidth:], c.eu.val[i*ellWidth:], x)
		for p := c.diag[i] + 1 + ellWidth; p < c.ptr[i+1]; p++ {
			acc -= float64(c.lu[p] * x[c.col[p]])
		}
		x[i] = acc * c.inv[i]
		hi = i
	}
	c.backwardRows(x, 0, hi)
}

// forwardRows runs the forward substitution over rows [lo, hi), none of
// which has entries beyond its slots.
func (c *csr) forwardRows(x []float64, lo, hi int) {
	if hi <= lo {
		return
	}
	if useAsm {
		ellForwardAsm(&x[0], &c.el.col[lo*ellWidth], &c.el.val[lo*ellWidth], lo, hi)
		return
	}
	for i := lo; i < hi; i++ {
		x[i] = subSlots(x[i], c.el.col[i*ellWidth:], c.el.val[i*ellWidth:], x)
	}
}

// backwardRows runs the backward substitution over rows [lo, hi) from the
// last, none of which has entries beyond its slots.
func (c *csr) backwardRows(x []float64, lo, hi int) {
	if hi <= lo {
		return
	}
	if useAsm {
		ellBackwardAsm(&x[0], &c.eu.col[(hi-1)*ellWidth], &c.eu.val[(hi-1)*ellWidth], &c.inv[0], lo, hi)
		return
	}
	for i := hi - 1; i >= lo; i-- {
		x[i] = subSlots(x[i], c.eu.col[i*ellWidth:], c.eu.val[i*ellWidth:], x) * c.inv[i]
	}
}

// precondCSR is precond on the csr rows, for factors that ilu0 did not
// lay out (useEll).
func (c *csr) precondCSR(x []float64) {
	lu, col, ptr, diag, inv := c.lu, c.col, c.ptr, c.diag, c.inv
	n := c.n
	ptr, diag, inv = ptr[:n+1], diag[:n], inv[:n]
	if useAsm && n > 0 {
		precondAsm(&x[0], &lu[0], &col[0], &ptr[0], &diag[0], &inv[0], n)
		return
	}
	for i := range n {
		p0, d := ptr[i], diag[i]
		ls, cs := lu[p0:d], col[p0:d]
		cs = cs[:len(ls)]
		acc := x[i]
		for k, l := range ls {
			acc -= float64(l * x[cs[k]])
		}
		x[i] = acc
	}
	for i := n - 1; i >= 0; i-- {
		d, p1 := diag[i], ptr[i+1]
		us, cs := lu[d+1:p1], col[d+1:p1]
		cs = cs[:len(us)]
		acc := x[i]
		for k, u := range us {
			acc -= float64(u * x[cs[k]])
		}
		x[i] = acc * inv[i]
	}
}

// subSlots returns acc − Σ_s vs[s]·x[cs[s]] over a row's ellWidth slots,
// subtracted in slot order.
func subSlots(acc float64, cs []int32, vs []float64, x []float64) float64 {
	cs, vs = cs[:ellWidth:ellWidth], vs[:ellWidth:ellWidth]
	acc -= float64(vs[0] * x[cs[0]])
	acc -= float64(vs[1] * x[cs[1]])
	acc -= float64(vs[2] * x[cs[2]])
	acc -= float64(vs[3] * x[cs[3]])
	acc -= float64(vs[4] * x[cs[4]])
	acc -= float64(vs[5] * x[cs[5]])
	acc -= float64(vs[6] * x[cs[6]])
	acc -= float64(vs[7] * x[cs[7]])
	return acc
}
