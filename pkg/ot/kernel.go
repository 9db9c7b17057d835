package ot

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/floats"
)

// Kernel applies a Gibbs kernel K_ij = exp(-C_ij/ε) of a cost matrix C, in the
// scaling domain and in the log domain. Implementations keep scratch buffers,
// so a Kernel is not safe for concurrent use; make one per goroutine.
type Kernel interface {
	// Rows is the number of source points (rows of C).
	Rows() int
	// Cols is the number of target points (columns of C).
	Cols() int
	// Eps is the regularization ε in the raw cost unit.
	Eps() float64
	// Apply sets dst = K·v and returns dst (len(v) = Cols, len(dst) = Rows).
	Apply(dst, v []float64) []float64
	// ApplyT sets dst = Kᵀ·u and returns dst (len(u) = Rows, len(dst) = Cols).
	ApplyT(dst, u []float64) []float64
	// ApplyCost sets dst = (K⊙C)·v, used for transport costs ⟨P, C⟩.
	ApplyCost(dst, v []float64) []float64
	// LogApply sets dst_i = log Σ_j exp(-C_ij/ε + x_j).
	LogApply(dst, x []float64) []float64
	// LogApplyT sets dst_j = log Σ_i exp(-C_ij/ε + x_i).
	LogApplyT(dst, x []float64) []float64
	// LogApplyCost sets dst_i = log Σ_j C_ij·exp(-C_ij/ε + x_j).
	LogApplyCost(dst, x []float64) []float64
}

// colBlock is the number of contiguous columns a per-axis pass handles at a
// time, chosen so that an n_k×colBlock slab stays in cache.
const colBlock = 512

// axisKernel holds the per-axis matrices of a LatticeKernel.
type axisKernel struct {
	n      int
	k      []float64 // exp(-c/ε), n×n row-major
	kc     []float64 // exp(-c/ε)·c
	l      []float64 // -c/ε
	lc     []float64 // -c/ε + log c (-Inf where c = 0)
	lo, hi []int     // row i of k is zero outside [lo[i], hi[i])
	clo    []int     // row i of kc is zero outside [clo[i], chi[i])
	chi    []int
}

// LatticeKernel is the separable Gibbs kernel of a product lattice: the
// Kronecker product of per-axis kernels exp(-w_k d_k²/ε). One application
// costs O(n·Σ_k band_k) time, where band_k ≤ n_k counts the entries of a row of
// the k-th axis kernel that do not underflow, and O(n) memory.
type LatticeKernel struct {
	lat  Lattice
	eps  float64
	n    int
	axes []axisKernel
	pre  []int
	post []int

	buf [3][]float64 // scratch tensors
	acc []float64    // scratch for cost sums
	job axisPass
	rot rotPass
	wg  sync.WaitGroup
}

// NewLatticeKernel returns the separable Gibbs kernel of l at regularization
// eps, given in the raw cost unit (multiply by l.CostUnit() to convert from
// lattice units). It returns an error for an invalid lattice or ε.
func NewLatticeKernel(l Lattice, eps float64) (*LatticeKernel, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, fmt.Errorf("ot: ε = %g is not a positive finite number", eps)
	}
	n := l.Len()
	d := len(l.Axes)
	lk := &LatticeKernel{lat: l, eps: eps, n: n, axes: make([]axisKernel, d), pre: make([]int, d), post: make([]int, d)}
	p := 1
	for k, a := range l.Axes {
		lk.pre[k] = p
		p *= a.Len()
	}
	p = 1
	for k := d - 1; k >= 0; k-- {
		lk.post[k] = p
		p *= l.Axes[k].Len()
	}
	maxPost := 0
	for k, a := range l.Axes {
		nk := a.Len()
		ak := axisKernel{n: nk, k: make([]float64, nk*nk), kc: make([]float64, nk*nk),
			l: make([]float64, nk*nk), lc: make([]float64, nk*nk),
			lo: make([]int, nk), hi: make([]int, nk), clo: make([]int, nk), chi: make([]int, nk)}
		for i := 0; i < nk; i++ {
			ak.lo[i], ak.hi[i] = nk, 0
			ak.clo[i], ak.chi[i] = nk, 0
			for j := 0; j < nk; j++ {
				c := a.Cost(i, j)
				e := flushSubnormal(math.Exp(-c / eps))
				ak.k[i*nk+j] = e
				ak.kc[i*nk+j] = flushSubnormal(e * c)
				ak.l[i*nk+j] = -c / eps
				ak.lc[i*nk+j] = -c/eps + math.Log(c)
				if e != 0 {
					ak.lo[i] = min(ak.lo[i], j)
					ak.hi[i] = max(ak.hi[i], j+1)
				}
				if e*c != 0 {
					ak.clo[i] = min(ak.clo[i], j)
					ak.chi[i] = max(ak.chi[i], j+1)
				}
			}
			if ak.chi[i] < ak.clo[i] {
				ak.clo[i], ak.chi[i] = 0, 0
			}
		}
		lk.axes[k] = ak
		maxPost = max(maxPost, lk.post[k])
	}
	for i := range lk.buf {
		lk.buf[i] = make([]float64, n)
	}
	lk.acc = make([]float64, n)
	w := workers()
	lk.job.scratch = make([]float64, w*2*colBlock)
	maxN := 0
	for _, a := range l.Axes {
		maxN = max(maxN, a.Len())
	}
	lk.rot.scratch = make([]float64, 2*w*maxN*rotBlock)
	lk.rot.stride = maxN * rotBlock
	_ = maxPost
	return lk, nil
}

// Lattice returns the lattice of the kernel.
func (lk *LatticeKernel) Lattice() Lattice { return lk.lat }

// Rows is the number of lattice points.
func (lk *LatticeKernel) Rows() int { return lk.n }

// Cols is the number of lattice points.
func (lk *LatticeKernel) Cols() int { return lk.n }

// Eps is the regularization in the raw cost unit.
func (lk *LatticeKernel) Eps() float64 { return lk.eps }

// Apply sets dst = K·v and returns dst.
func (lk *LatticeKernel) Apply(dst, v []float64) []float64 {
	return lk.apply(dst, v, -1, false)
}

// ApplyT sets dst = Kᵀ·u = K·u (the kernel is symmetric) and returns dst.
func (lk *LatticeKernel) ApplyT(dst, u []float64) []float64 {
	return lk.apply(dst, u, -1, false)
}

// LogApply sets dst_i = log Σ_j exp(-C_ij/ε + x_j) by per-axis log-sum-exp.
func (lk *LatticeKernel) LogApply(dst, x []float64) []float64 {
	return lk.apply(dst, x, -1, true)
}

// LogApplyT equals LogApply (the kernel is symmetric).
func (lk *LatticeKernel) LogApplyT(dst, x []float64) []float64 {
	return lk.apply(dst, x, -1, true)
}

// ApplyCost sets dst = (K⊙C)·v. Because C = Σ_k C_k, K⊙C is the sum over k
// of the Kronecker product with the k-th factor replaced by K_k⊙C_k.
func (lk *LatticeKernel) ApplyCost(dst, v []float64) []float64 {
	lk.check(dst, v)
	for i := range lk.acc {
		lk.acc[i] = 0
	}
	for k := range lk.axes {
		lk.apply(lk.buf[2], v, k, false)
		floats.Add(lk.acc, lk.buf[2])
	}
	copy(dst, lk.acc)
	return dst
}

// LogApplyCost sets dst_i = log Σ_j C_ij·exp(-C_ij/ε + x_j).
func (lk *LatticeKernel) LogApplyCost(dst, x []float64) []float64 {
	lk.check(dst, x)
	for i := range lk.acc {
		lk.acc[i] = math.Inf(-1)
	}
	for k := range lk.axes {
		lk.apply(lk.buf[2], x, k, true)
		for i, t := range lk.buf[2] {
			lk.acc[i] = logAddExp(lk.acc[i], t)
		}
	}
	copy(dst, lk.acc)
	return dst
}

func (lk *LatticeKernel) check(dst, v []float64) {
	if len(dst) != lk.n || len(v) != lk.n {
		panic(fmt.Sprintf("ot: LatticeKernel: lengths %d, %d; want %d", len(dst), len(v), lk.n))
	}
}

// apply runs one per-axis pass per axis. costAxis ≥ 0 uses K_k⊙C_k (or its
// log) on that axis. dst may alias v.
func (lk *LatticeKernel) apply(dst, v []float64, costAxis int, log bool) []float64 {
	lk.check(dst, v)
	d := len(lk.axes)
	src := v
	if !log && !useGonumPasses {
		// Rotating passes: each contracts the leading axis and moves it to
		// the end, so every pass is a band product over long contiguous rows
		// (post = n/n_k) and after d passes the layout is back to row-major.
		for k := 0; k < d; k++ {
			out := lk.buf[k%2]
			if k == d-1 {
				out = dst
				if sameSlice(out, src) {
					copy(lk.buf[1], src)
					src = lk.buf[1]
				}
			}
			a := &lk.axes[k]
			r := &lk.rot
			r.src, r.dst, r.nk, r.post = src, out, a.n, lk.n/a.n
			r.m, r.lo, r.hi = a.k, a.lo, a.hi
			if k == costAxis {
				r.m, r.lo, r.hi = a.kc, a.clo, a.chi
			}
			parallel((r.post+rotBlock-1)/rotBlock, 1, r, &lk.wg)
			src = out
		}
		return dst
	}
	// Alternate between two scratch buffers; the last pass writes dst.
	for k := 0; k < d; k++ {
		var out []float64
		if k == d-1 {
			out = dst
		} else {
			out = lk.buf[k%2]
		}
		if k == d-1 && sameSlice(out, src) {
			// Only possible when d == 1 and dst aliases v.
			copy(lk.buf[1], src)
			src = lk.buf[1]
		}
		a := &lk.axes[k]
		j := &lk.job
		j.src, j.dst, j.nk, j.pre, j.post, j.log = src, out, a.n, lk.pre[k], lk.post[k], log
		switch {
		case k == costAxis && log:
			j.m, j.lo, j.hi = a.lc, nil, nil
		case log:
			j.m, j.lo, j.hi = a.l, nil, nil
		case k == costAxis:
			j.m, j.lo, j.hi = a.kc, a.clo, a.chi
		default:
			j.m, j.lo, j.hi = a.k, a.lo, a.hi
		}
		j.blocks = (j.post + colBlock - 1) / colBlock
		items := j.pre * j.blocks
		minChunk := max(1, 4096/(j.nk*min(j.post, colBlock)))
		parallel(items, minChunk, j, &lk.wg)
		src = out
	}
	return dst
}

func sameSlice(a, b []float64) bool {
	return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
}

// packSlabs makes rotating passes copy each nk×rotBlock input slab into
// contiguous scratch before the band products (GEMM-style packing).
var packSlabs = true

// rotBlock is the number of columns a rotating pass handles at a time (a
// multiple of the assembly kernel's 32).
const rotBlock = 64

// rotPass contracts the leading axis of a tensor viewed as (nk, post) and
// writes the result transposed, as (post, nk):
// dst[q·nk + i] = Σ_j m[i, j]·src[j·post + q].
type rotPass struct {
	src, dst []float64
	m        []float64
	lo, hi   []int
	nk, post int
	scratch  []float64 // per chunk: nk × rotBlock
	stride   int       // scratch length per chunk
}

// runRange processes column blocks [lo, hi) as chunk c.
func (r *rotPass) runRange(c, lo, hi int) {
	nk, post := r.nk, r.post
	tmp := r.scratch[2*c*r.stride : (2*c+1)*r.stride]
	pk := r.scratch[(2*c+1)*r.stride : (2*c+2)*r.stride]
	for b := lo; b < hi; b++ {
		q0 := b * rotBlock
		w := min(rotBlock, post-q0)
		if packSlabs {
			// Pack the nk×w slab contiguously (rows of src are post apart).
			for j := 0; j < nk; j++ {
				copy(pk[j*w:(j+1)*w], r.src[j*post+q0:j*post+q0+w])
			}
			for i := 0; i < nk; i++ {
				a, e := r.lo[i], r.hi[i]
				if a >= e {
					a, e = 0, 0
				}
				bandCols(tmp[i*w:(i+1)*w], pk[a*w:nk*w], w, r.m[i*nk+a:i*nk+e])
			}
		} else {
			for i := 0; i < nk; i++ {
				a, e := r.lo[i], r.hi[i]
				if a >= e {
					a, e = 0, 0
				}
				bandCols(tmp[i*w:(i+1)*w], r.src[a*post+q0:], post, r.m[i*nk+a:i*nk+e])
			}
		}
		transposeInto(r.dst[q0*nk:(q0+w)*nk], tmp[:nk*w], nk, w)
	}
}

// transposeInto sets dst[q·nk + i] = src[i·w + q] (src is nk×w, dst w×nk),
// four columns at a time so that each source read is one cache line.
func transposeInto(dst, src []float64, nk, w int) {
	q := 0
	for ; q+3 < w; q += 4 {
		o0 := dst[q*nk : (q+1)*nk]
		o1 := dst[(q+1)*nk : (q+2)*nk]
		o2 := dst[(q+2)*nk : (q+3)*nk]
		o3 := dst[(q+3)*nk : (q+4)*nk]
		for i := range o0 {
			t := src[i*w+q : i*w+q+4 : i*w+q+4]
			o0[i], o1[i], o2[i], o3[i] = t[0], t[1], t[2], t[3]
		}
	}
	for ; q < w; q++ {
		o := dst[q*nk : (q+1)*nk]
		for i := range o {
			o[i] = src[i*w+q]
		}
	}
}

// axisPass is one per-axis pass over a tensor viewed as (pre, nk, post):
// out[p, i, q] = Σ_j m[i, j]·src[p, j, q] (or its log-sum-exp form).
type axisPass struct {
	src, dst      []float64
	m             []float64
	lo, hi        []int
	nk, pre, post int
	blocks        int
	log           bool
	scratch       []float64
}

// useGonumPasses switches the last-axis pass to per-row gonum floats.Dot
// calls instead of the register-blocked passRows; kept for the
// BenchmarkKernelApply comparison.
var useGonumPasses = false

// runRange processes items [lo, hi); item t is pre-block t/blocks, column block t%blocks.
func (j *axisPass) runRange(c, lo, hi int) {
	nk, post := j.nk, j.post
	if !j.log && !useGonumPasses && post == 1 {
		passRows(j.dst, j.src, j.m, j.lo, j.hi, nk, lo, hi)
		return
	}
	for t := lo; t < hi; t++ {
		p := t / j.blocks
		q0 := (t % j.blocks) * colBlock
		q1 := min(q0+colBlock, post)
		base := p * nk * post
		if j.log {
			j.logBlock(c, base, q0, q1)
			continue
		}
		if post == 1 {
			row := j.src[base : base+nk]
			for i := 0; i < nk; i++ {
				a, b := j.lo[i], j.hi[i]
				if a >= b {
					j.dst[base+i] = 0
					continue
				}
				j.dst[base+i] = floats.Dot(j.m[i*nk+a:i*nk+b], row[a:b])
			}
			continue
		}
		for i := 0; i < nk; i++ {
			a, b := j.lo[i], j.hi[i]
			if a >= b {
				a, b = 0, 0
			}
			off := base + a*post + q0
			bandCols(j.dst[base+i*post+q0:base+i*post+q1], j.src[off:], post, j.m[i*nk+a:i*nk+b])
		}
	}
}

// logBlock computes the log-sum-exp pass for one pre-block and column range.
func (j *axisPass) logBlock(c, base, q0, q1 int) {
	nk, post := j.nk, j.post
	w := q1 - q0
	mx := j.scratch[c*2*colBlock : c*2*colBlock+w]
	s := j.scratch[c*2*colBlock+colBlock : c*2*colBlock+colBlock+w]
	if post == 1 {
		row := j.src[base : base+nk]
		for i := 0; i < nk; i++ {
			mi := j.m[i*nk : (i+1)*nk]
			m := math.Inf(-1)
			for jj, x := range row {
				if t := mi[jj] + x; t > m {
					m = t
				}
			}
			if math.IsInf(m, -1) {
				j.dst[base+i] = m
				continue
			}
			var sum float64
			for jj, x := range row {
				sum += math.Exp(mi[jj] + x - m)
			}
			j.dst[base+i] = m + math.Log(sum)
		}
		return
	}
	for i := 0; i < nk; i++ {
		mi := j.m[i*nk : (i+1)*nk]
		for q := range mx {
			mx[q] = math.Inf(-1)
			s[q] = 0
		}
		for jj := 0; jj < nk; jj++ {
			l := mi[jj]
			if math.IsInf(l, -1) {
				continue
			}
			row := j.src[base+jj*post+q0 : base+jj*post+q1]
			for q, x := range row {
				if t := l + x; t > mx[q] {
					mx[q] = t
				}
			}
		}
		for jj := 0; jj < nk; jj++ {
			l := mi[jj]
			if math.IsInf(l, -1) {
				continue
			}
			row := j.src[base+jj*post+q0 : base+jj*post+q1]
			for q, x := range row {
				if m := mx[q]; !math.IsInf(m, -1) {
					s[q] += math.Exp(l + x - m)
				}
			}
		}
		out := j.dst[base+i*post+q0 : base+i*post+q1]
		for q := range out {
			if math.IsInf(mx[q], -1) {
				out[q] = mx[q]
			} else {
				out[q] = mx[q] + math.Log(s[q])
			}
		}
	}
}

// minNormal is the smallest positive normal float64.
const minNormal = 0x1p-1022

// flushSubnormal returns 0 for x below the normal float64 range. Kernel
// entries that small cannot matter next to the diagonal entry 1, and
// multiplying by subnormals costs a slow microcode assist on x86 (measured:
// an 8× slower kernel pass at ε = 0.5 on 32-point axes, where d = 19 gives
// exp(-722) ≈ 3e-314).
func flushSubnormal(x float64) float64 {
	if x < minNormal {
		return 0
	}
	return x
}

// logAddExp returns log(exp(a) + exp(b)) without overflow.
func logAddExp(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}
