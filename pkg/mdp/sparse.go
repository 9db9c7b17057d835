package mdp

import (
	"math"

	"gonum.org/v1/gonum/floats"
)

// csr is a square sparse matrix in compressed sparse rows with sorted column
// indices and a stored diagonal in every row, with room for its incomplete
// LU factors on the same pattern (ILU(0)). The Newton solver keeps I − γP_π
// and its transpose in it.
//
// ILU(0) and GMRES are hand-written because gonum has no sparse matrices,
// and its Krylov solvers (gonum.org/v1/exp/linsolve) are not released.
type csr struct {
	n    int
	ptr  []int
	col  []int32
	diag []int     // position of (i,i) in row i
	val  []float64 // the matrix
	lu   []float64 // ILU(0): strict lower part L (unit diagonal implied), upper part U
	inv  []float64 // 1/U(i,i), so the backward substitution multiplies instead of dividing
	mark []int     // scratch of the factorization, −1 when unused
}

// newCSR returns a matrix of order n with room for nnz entries; the caller fills in the pattern.
func newCSR(n, nnz int) *csr {
	c := &csr{n: n, ptr: make([]int, n+1), col: make([]int32, nnz), val: make([]float64, nnz),
		lu: make([]float64, nnz), inv: make([]float64, n), diag: make([]int, n), mark: make([]int, n)}
	for i := range c.mark {
		c.mark[i] = -1
	}
	return c
}

// findDiag records the position of the diagonal in rows [lo, hi); every row must hold it.
func (c *csr) findDiag(lo, hi int) {
	for i := lo; i < hi; i++ {
		for p := c.ptr[i]; p < c.ptr[i+1]; p++ {
			if int(c.col[p]) == i {
				c.diag[i] = p
				break
			}
		}
	}
}

// transposeOf sets c (same order, enough room) to tᵀ, columns sorted.
func (c *csr) transposeOf(t *csr) {
	n, nnz := t.n, t.ptr[t.n]
	clear(c.ptr)
	for _, j := range t.col[:nnz] {
		c.ptr[j+1]++
	}
	for i := 0; i < n; i++ {
		c.ptr[i+1] += c.ptr[i]
	}
	fill := c.mark // borrowed, reset to −1 below
	copy(fill, c.ptr[:n])
	for i := 0; i < n; i++ {
		for p := t.ptr[i]; p < t.ptr[i+1]; p++ {
			j := t.col[p]
			q := fill[j]
			fill[j]++
			c.col[q], c.val[q] = int32(i), t.val[p]
		}
	}
	for i := range fill {
		fill[i] = -1
	}
	c.findDiag(0, n)
}

// mulRange sets y[i] = (A x)[i] for rows [lo, hi).
func (c *csr) mulRange(y, x []float64, lo, hi int) {
	if useAsm && hi > lo {
		_ = y[hi-1]
		_ = c.ptr[hi]
		mulRowsAsm(&y[lo], &x[0], &c.ptr[lo], &c.col[0], &c.val[0], hi-lo)
		return
	}
	for i := lo; i < hi; i++ {
		acc := 0.0
		p0, p1 := c.ptr[i], c.ptr[i+1]
		cols, vals := c.col[p0:p1], c.val[p0:p1]
		for k, j := range cols {
			acc += float64(vals[k] * x[j])
		}
		y[i] = acc
	}
}

// ilu0 computes the ILU(0) factors of val into lu (row-wise IKJ
// elimination restricted to the pattern). It reports false when a pivot
// vanishes. For I − γP with P substochastic the matrix is an M-matrix and
// the pivots stay positive.
func (c *csr) ilu0() bool {
	lu, col, mark := c.lu, c.col, c.mark
	copy(lu, c.val[:c.ptr[c.n]])
	for i := 0; i < c.n; i++ {
		p0, p1 := c.ptr[i], c.ptr[i+1]
		for p := p0; p < p1; p++ {
			mark[col[p]] = p
		}
		for p := p0; p < c.diag[i]; p++ {
			k := int(col[p])
			l := lu[p] / lu[c.diag[k]]
			lu[p] = l
			if l == 0 {
				continue
			}
			for q := c.diag[k] + 1; q < c.ptr[k+1]; q++ {
				if m := mark[col[q]]; m >= 0 {
					lu[m] -= l * lu[q]
				}
			}
		}
		for p := p0; p < p1; p++ {
			mark[col[p]] = -1
		}
		d := lu[c.diag[i]]
		if d == 0 || math.IsNaN(d) || math.IsInf(d, 0) {
			return false
		}
		c.inv[i] = 1 / d
	}
	return true
}

// precond overwrites x with (LU)⁻¹x by forward and backward substitution.
// It is serial: each row needs the rows just solved. (Splitting the
// factors into independent diagonal blocks, one per core, cost more GMRES
// iterations than it saved on the 10⁵ and 10⁶ Pendulum models.)
//
// The row loops run on subslices (no bounds checks inside) and the
// backward pass multiplies by the stored 1/U(i,i): a division sat on the
// critical path from one row to the next, and with it the substitutions
// cost about twice a product with the matrix (CartPole's fine lattice).
func (c *csr) precond(x []float64) {
	lu, col, ptr, diag, inv := c.lu, c.col, c.ptr, c.diag, c.inv
	n := c.n
	x, ptr, diag, inv = x[:n], ptr[:n+1], diag[:n], inv[:n]
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

// gmres holds the buffers of restarted GMRES(m) with right
// preconditioning (Saad, Iterative Methods for Sparse Linear Systems,
// 2003, Alg. 9.5), modified Gram–Schmidt and Givens rotations. Its dot
// products are serial, so results do not depend on the number of
// goroutines.
type gmres struct {
	m    int
	v    [][]float64 // m+1 basis vectors
	w, u []float64
	zero []float64 // A·0, for solves that start from x = 0
	h    []float64 // (m+1)×m Hessenberg matrix, column j at h[j*(m+1):]
	cs   []float64
	sn   []float64
	g, y []float64
}

func newGMRES(m, n int) *gmres {
	k := &gmres{m: m, w: make([]float64, n), u: make([]float64, n), zero: make([]float64, n), h: make([]float64, (m+1)*m),
		cs: make([]float64, m), sn: make([]float64, m), g: make([]float64, m+1), y: make([]float64, m)}
	for i := 0; i <= m; i++ {
		k.v = append(k.v, make([]float64, n))
	}
	return k
}

// solve improves x towards the solution of A x = b until the residual's
// 2-norm falls to rtol times its initial value or maxMatVec products are
// spent. mul sets y = A x; precond applies the preconditioner in place.
// ax, when not nil, is A x for the x given (k.zero for x = 0), which saves
// the first product. It returns the number of products used and the final
// relative residual.
func (k *gmres) solve(precond func(x []float64), mul func(y, x []float64), x, b, ax []float64, rtol float64, maxMatVec int) (int, float64) {
	m := k.m
	mv := 0
	beta0, rel := -1.0, 1.0
	for mv < maxMatVec {
		if ax != nil {
			floats.SubTo(k.v[0], b, ax)
			ax = nil
		} else {
			mul(k.w, x)
			mv++
			floats.SubTo(k.v[0], b, k.w)
		}
		beta := floats.Norm(k.v[0], 2)
		if beta0 < 0 {
			beta0 = beta
		}
		if beta0 == 0 || math.IsNaN(beta) {
			return mv, 0
		}
		if rel = beta / beta0; rel <= rtol {
			return mv, rel
		}
		floats.Scale(1/beta, k.v[0])
		clear(k.g)
		k.g[0] = beta
		j := 0
		for j < m && mv < maxMatVec {
			copy(k.u, k.v[j])
			precond(k.u)
			mul(k.w, k.u)
			mv++
			hj := k.h[j*(m+1) : (j+1)*(m+1)]
			for i := 0; i <= j; i++ {
				hj[i] = floats.Dot(k.w, k.v[i])
				floats.AddScaled(k.w, -hj[i], k.v[i])
			}
			hj[j+1] = floats.Norm(k.w, 2)
			if hj[j+1] > 0 {
				floats.ScaleTo(k.v[j+1], 1/hj[j+1], k.w)
			}
			for i := 0; i < j; i++ {
				a, c := hj[i], hj[i+1]
				hj[i], hj[i+1] = k.cs[i]*a+k.sn[i]*c, -k.sn[i]*a+k.cs[i]*c
			}
			r := math.Hypot(hj[j], hj[j+1])
			if r == 0 { // breakdown: the Krylov space is exhausted
				break
			}
			k.cs[j], k.sn[j] = hj[j]/r, hj[j+1]/r
			hj[j], hj[j+1] = r, 0
			k.g[j+1] = -k.sn[j] * k.g[j]
			k.g[j] *= k.cs[j]
			j++
			if rel = math.Abs(k.g[j]) / beta0; rel <= rtol {
				break
			}
		}
		if j == 0 {
			return mv, rel
		}
		// y = H⁻¹g (upper triangular), x += M⁻¹ V y
		for i := j - 1; i >= 0; i-- {
			s := k.g[i]
			for l := i + 1; l < j; l++ {
				s -= k.h[l*(m+1)+i] * k.y[l]
			}
			k.y[i] = s / k.h[i*(m+1)+i]
		}
		clear(k.u)
		for i := 0; i < j; i++ {
			floats.AddScaled(k.u, k.y[i], k.v[i])
		}
		precond(k.u)
		floats.Add(x, k.u)
		if rel <= rtol {
			return mv, rel
		}
	}
	return mv, rel
}
