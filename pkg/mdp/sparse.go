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
	mark []int32   // scratch of the factorization and the transpose, spare() when unused
	// the factors' parts below (el) and above (eu) the diagonal in
	// fixed-width rows, for the substitutions (ell.go), when ell is set
	el, eu ell
	ell    bool
}

// newCSR returns a matrix of order n with room for nnz entries; the caller fills in the pattern.
func newCSR(n, nnz int) *csr {
	c := newMatrixCSR(n, nnz)
	c.lu, c.inv, c.mark = make([]float64, nnz+1), make([]float64, n), make([]int32, n)
	c.el, c.eu = newEll(n), newEll(n)
	for i := range c.mark {
		c.mark[i] = c.spare()
	}
	return c
}

// newMatrixCSR returns a matrix of order n with room for nnz entries and
// none for factors: one that is only multiplied (newCSR adds the room).
func newMatrixCSR(n, nnz int) *csr {
	return &csr{n: n, ptr: make([]int, n+1), col: make([]int32, nnz), val: make([]float64, nnz), diag: make([]int, n)}
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
	fill := c.mark // borrowed, reset below
	for i := range n {
		fill[i] = int32(c.ptr[i])
	}
	for i := 0; i < n; i++ {
		for p := t.ptr[i]; p < t.ptr[i+1]; p++ {
			j := t.col[p]
			q := fill[j]
			fill[j]++
			c.col[q], c.val[q] = int32(i), t.val[p]
		}
	}
	for i := range fill {
		fill[i] = c.spare()
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
//
// A row's update by an earlier row k subtracts l·u(k,j) at j's position in
// row i, found through mark, which sends a column outside row i's pattern
// to a spare entry past the matrix (whose value is never read), so the
// loop has no data-dependent branch. When few row parts are longer than
// ellWidth (useEll) the factored rows are laid out in fixed-width rows for
// the substitutions as they go (ell.go), and the updates read row k's part
// above the diagonal from that layout: its unused slots (column k,
// coefficient −0) subtract l·(−0) from the entry (i,k) = l itself, which
// leaves it unchanged. Either way each entry takes its updates in the
// order of the plain csr loop, so the factors are the same bit for bit
// (TestILU0MatchesCSR).
func (c *csr) ilu0() bool {
	lu, col, mark, spare := c.lu, c.col, c.mark, c.spare()
	copy(lu, c.val[:c.ptr[c.n]])
	c.ell = c.useEll()
	uc, uv, umore := c.eu.col, c.eu.val, c.eu.more
	c.el.over, c.eu.over = c.el.over[:0], c.eu.over[:0]
	for i := 0; i < c.n; i++ {
		p0, p1 := c.ptr[i], c.ptr[i+1]
		for p := p0; p < p1; p++ {
			mark[col[p]] = int32(p)
		}
		for p := p0; p < c.diag[i]; p++ {
			k := int(col[p])
			l := lu[p] / lu[c.diag[k]]
			lu[p] = l
			if l == 0 {
				continue
			}
			q0 := c.diag[k] + 1
			if c.ell {
				cs := uc[k*ellWidth : (k+1)*ellWidth : (k+1)*ellWidth]
				vs := uv[k*ellWidth : (k+1)*ellWidth : (k+1)*ellWidth]
				lu[mark[cs[0]]] -= float64(l * vs[0])
				lu[mark[cs[1]]] -= float64(l * vs[1])
				lu[mark[cs[2]]] -= float64(l * vs[2])
				lu[mark[cs[3]]] -= float64(l * vs[3])
				lu[mark[cs[4]]] -= float64(l * vs[4])
				lu[mark[cs[5]]] -= float64(l * vs[5])
				lu[mark[cs[6]]] -= float64(l * vs[6])
				lu[mark[cs[7]]] -= float64(l * vs[7])
				if !umore[k] {
					continue
				}
				q0 += ellWidth
			}
			us, cs := lu[q0:c.ptr[k+1]], col[q0:c.ptr[k+1]]
			cs = cs[:len(us)]
			for t, u := range us {
				lu[mark[cs[t]]] -= float64(l * u)
			}
		}
		for p := p0; p < p1; p++ {
			mark[col[p]] = spare
		}
		d := lu[c.diag[i]]
		if d == 0 || math.IsNaN(d) || math.IsInf(d, 0) {
			return false
		}
		c.inv[i] = 1 / d
		if c.ell {
			c.layoutRow(i)
		}
	}
	return true
}

// useEll reports whether at most ellMaxLong of the row parts (below or
// above the diagonal) are longer than ellWidth: then the fixed-width
// layout pays (CartPole's fine lattice: 0.3–1.6 %), while on rows that often
// overflow their slots (Acrobot's fine lattice, 3 actions: 18–20 %) finishing them
// from the csr cost more than the layout saved.
func (c *csr) useEll() bool {
	long := 0
	for i := range c.n {
		if c.diag[i]-c.ptr[i] > ellWidth {
			long++
		}
		if c.ptr[i+1]-c.diag[i]-1 > ellWidth {
			long++
		}
	}
	return float64(long) <= ellMaxLong*float64(2*c.n)
}

// ellMaxLong is the largest fraction of long row parts for which ilu0
// lays the factors out in fixed-width rows.
const ellMaxLong = 0.05

// spare returns the index of lu's spare entry, past every matrix entry.
func (c *csr) spare() int32 { return int32(len(c.lu) - 1) }

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
			// modified Gram–Schmidt, each update fused with the next dot (orth.go)
			hj := k.h[j*(m+1) : (j+1)*(m+1)]
			hj[0] = dotLanes(k.w, k.v[0])
			for i := 0; i < j; i++ {
				hj[i+1] = axpyDot(k.w, -hj[i], k.v[i], k.v[i+1])
			}
			hj[j+1] = math.Sqrt(axpyDot(k.w, -hj[j], k.v[j], k.w))
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
