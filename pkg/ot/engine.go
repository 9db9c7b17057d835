package ot

import "math"

// sepEngine applies the scaling-domain kernel of a LatticeKernel on one
// goroutine, with its own scratch, between two layouts of a lattice vector:
// X, the lattice's row-major order, and Y, the transpose of X viewed as an
// nl×nr matrix, where nl counts the points of the leading axes [0, s) and nr
// those of the trailing axes [s, d). s is chosen to make min(nl, nr) as large
// as possible, so that every per-axis pass runs over at least that many
// contiguous columns (the leading axes in X, the trailing ones in Y) and is a
// plain band product of rows, in place along its axis with column blocking;
// one transpose per application replaces the transposes inside passes.
//
// applyXY maps X to Y and applyYX maps Y to X; the kernel is symmetric, so an
// IBP iteration that keeps the barycenter side in X and the measure side in Y
// needs no other reordering.
type sepEngine struct {
	lk     *LatticeKernel
	s      int
	nl, nr int
	xy, yx []engStep
	buf    [2][]float64
	tmp    []float64 // a third vector for the caller (not used by apply)
	plain  bool      // portable Go loops instead of the assembly kernels (tests)
	// fuse runs each group of consecutive axis passes block by block in
	// cache-sized scratch (see fusedPasses); set for lattices of at least
	// fuseMinPoints points, whose vectors live in main memory.
	fuse    bool
	scratch [2][]float64
}

// fuseMinPoints is the lattice size from which sepEngine fuses the passes of
// a layout (2 MB vectors: beyond what the second-level cache holds). A
// variable so that tests can fuse small lattices.
var fuseMinPoints = 1 << 18

// fuseBlockBytes bounds a fused block's scratch vector (two of them per
// engine). 512 KB (64 columns of a 1024-row group) measured fastest on the
// 32⁴ benchmark, ahead of 256 KB (32 columns). A variable so that tests can
// make blocks small.
var fuseBlockBytes = 512 << 10

// engStep is one pass along an axis (axis ≥ 0) over a tensor viewed as
// (pre, n_axis, post), or a transpose of a rows×cols matrix (axis < 0).
type engStep struct {
	axis, pre, post int
	rows, cols      int
}

// newSepEngine returns an engine for lk; bufs may supply up to three
// vectors of length n for its scratch (the rest are allocated).
func newSepEngine(lk *LatticeKernel, bufs ...[]float64) *sepEngine {
	e := &sepEngine{lk: lk}
	d := len(lk.axes)
	best := -1
	for s := 0; s <= d; s++ {
		nl := 1
		for k := 0; k < s; k++ {
			nl *= lk.axes[k].n
		}
		if m := min(nl, lk.n/nl); m > best {
			best, e.s, e.nl, e.nr = m, s, nl, lk.n/nl
		}
	}
	var lead, trail []engStep
	for k := 0; k < e.s; k++ {
		lead = append(lead, engStep{axis: k, pre: lk.pre[k], post: lk.post[k]})
	}
	for k := e.s; k < d; k++ {
		trail = append(trail, engStep{axis: k, pre: lk.pre[k] / e.nl, post: lk.post[k] * e.nl})
	}
	e.xy = append(append(append([]engStep(nil), lead...), engStep{axis: -1, rows: e.nl, cols: e.nr}), trail...)
	e.yx = append(append(append([]engStep(nil), trail...), engStep{axis: -1, rows: e.nr, cols: e.nl}), lead...)
	vec := func(i int) []float64 {
		if i < len(bufs) && len(bufs[i]) == lk.n {
			return bufs[i]
		}
		return make([]float64, lk.n)
	}
	e.buf[0], e.buf[1], e.tmp = vec(0), vec(1), vec(2)
	e.fuse = lk.n >= fuseMinPoints
	return e
}

// applyXY sets dst (layout Y) = K·src (layout X); dst must not alias src.
func (e *sepEngine) applyXY(dst, src []float64) { e.run(e.xy, dst, src) }

// applyYX sets dst (layout X) = K·src (layout Y); dst must not alias src.
func (e *sepEngine) applyYX(dst, src []float64) { e.run(e.yx, dst, src) }

func (e *sepEngine) run(steps []engStep, dst, src []float64) {
	if len(dst) != e.lk.n || len(src) != e.lk.n || sameSlice(dst, src) {
		panic("ot: sepEngine: bad or aliased vectors")
	}
	cur := src
	for i := 0; i < len(steps); i++ {
		st := steps[i]
		j := i // the group of axis passes steps[i..j]
		if e.fuse && st.axis >= 0 {
			for j+1 < len(steps) && steps[j+1].axis >= 0 {
				j++
			}
		}
		// A fused group followed by the transpose writes its blocks transposed.
		tr := e.fuse && st.axis >= 0 && j+1 < len(steps) && steps[j+1].axis < 0
		last := j
		if tr {
			last = j + 1
		}
		out := dst
		if last < len(steps)-1 {
			out = e.buf[last%2]
		}
		switch {
		case st.axis < 0:
			transpose(out, cur, st.rows, st.cols)
		case j > i || tr:
			if tr && sameSlice(out, cur) {
				panic("ot: sepEngine: fused transpose in place")
			}
			e.fusedPasses(out, cur, steps[i:j+1], tr)
		default:
			e.pass(out, cur, &e.lk.axes[st.axis], st.pre, st.post)
		}
		cur = out
		i = last
	}
}

// fusedPasses runs the axis passes steps (consecutive leading axes of the
// current layout, whose trailing rest is contiguous) block by block: a block
// of columns of the rest is gathered into scratch, every pass runs on it
// there, and it is scattered into out. Main memory is then read and written
// once for the group instead of once per pass. With transposed, the group's
// result (rows × rest) is written transposed (rest × rows), the block's
// columns becoming contiguous rows of out, which saves the transpose's own
// trip through memory. Otherwise the block's rows are independent of the
// other blocks and out may alias src. Each pass sums the same coefficients
// in the same order as the unfused pass; only the column widths handed to
// the band kernels differ.
func (e *sepEngine) fusedPasses(out, src []float64, steps []engStep, transposed bool) {
	rows := 1
	for _, st := range steps {
		rows *= e.lk.axes[st.axis].n
	}
	rest := e.lk.n / rows
	cb := max(4, min(rest, fuseBlockBytes/8/rows)&^3)
	if len(e.scratch[0]) < rows*cb { // once per group shape
		e.scratch[0] = make([]float64, rows*cb)
		e.scratch[1] = make([]float64, rows*cb)
	}
	for q0 := 0; q0 < rest; q0 += cb {
		w := min(cb, rest-q0)
		// Capped, so that the band kernels chosen (bandColsAny looks at the
		// capacity) depend on the block, not on an earlier, larger scratch.
		a, b := e.scratch[0][:rows*w:rows*w], e.scratch[1][:rows*w:rows*w]
		for r := 0; r < rows; r++ {
			copy(a[r*w:(r+1)*w], src[r*rest+q0:])
		}
		pre := 1
		for _, st := range steps {
			ax := &e.lk.axes[st.axis]
			post := rows / pre / ax.n * w
			e.pass(b, a, ax, pre, post)
			a, b = b, a
			pre *= ax.n
		}
		if !transposed {
			for r := 0; r < rows; r++ {
				copy(out[r*rest+q0:r*rest+q0+w], a[r*w:(r+1)*w])
			}
			continue
		}
		// out[(q0+c)·rows + r] = a[r·w + c], eight columns at a time so that
		// each scratch cache line read serves eight output rows.
		for c0 := 0; c0 < w; c0 += 8 {
			c1 := min(c0+8, w)
			for r := 0; r < rows; r++ {
				row := a[r*w+c0 : r*w+c1]
				for c, v := range row {
					out[(q0+c0+c)*rows+r] = v
				}
			}
		}
	}
}

// pass sets out[p, i, q] = Σ_j m[i, j]·src[p, j, q] over column blocks that
// keep an n_k-row slab of src in the L1 cache.
func (e *sepEngine) pass(out, src []float64, a *axisKernel, pre, post int) {
	nk := a.n
	cb := max(64, (4096/nk)&^63)
	for p := 0; p < pre; p++ {
		base := p * nk * post
		for q0 := 0; q0 < post; q0 += cb {
			w := min(cb, post-q0)
			for i := 0; i < nk; i++ {
				lo, hi := a.lo[i], a.hi[i]
				if lo >= hi {
					lo, hi = 0, 0
				}
				o := base + i*post + q0
				bandColsAny(out[o:o+w], src[base+lo*post+q0:], post, a.k[i*nk+lo:i*nk+hi], e.plain)
			}
		}
	}
}

// bandColsAny sets out[q] = Σ_{j<len(coef)} coef[j]·src[j·stride + q] for q
// in [0, len(out)), with the AVX2+FMA kernels 32, 16 and 4 columns at a time
// where available (unless plain) and a Go loop for the rest. Sums run over j
// in order; the assembly kernels for fewer than 32 columns add even and odd j
// in two chains.
func bandColsAny(out, src []float64, stride int, coef []float64, plain bool) {
	w, nc := len(out), len(coef)
	if nc == 0 {
		for q := range out {
			out[q] = 0
		}
		return
	}
	full := src[:cap(src)]
	if (nc-1)*stride+w > len(full) {
		panic("ot: bandColsAny: src too short")
	}
	q := 0
	if hasFMA && !plain {
		if nb := w / 64; hasAVX512 && nb > 0 {
			fmaBand64(&out[0], &full[0], stride, &coef[0], nc, nb)
			q = 64 * nb
		}
		if nb := (w - q) / 32; nb > 0 {
			fmaBand32(&out[q], &full[q], stride, &coef[0], nc, nb)
			q += 32 * nb
		}
		if w-q >= 16 {
			fmaBand16(&out[q], &full[q], stride, &coef[0], nc)
			q += 16
		}
		// fmaBand4 reads 12 columns per row whatever it writes.
		if nv := (w - q) / 4; nv > 0 && (nc-1)*stride+q+12 <= len(full) {
			fmaBand4(&out[q], &full[q], stride, &coef[0], nc, nv)
			q += 4 * nv
		}
	}
	for ; q < w; q++ {
		var s float64
		for j, c := range coef {
			s += c * full[j*stride+q]
		}
		out[q] = s
	}
}

// transpose sets dst[c·rows + r] = src[r·cols + c] (src rows×cols, dst
// cols×rows) in 8×8 tiles.
func transpose(dst, src []float64, rows, cols int) {
	const tb = 8
	if rows == 1 || cols == 1 {
		copy(dst, src[:rows*cols])
		return
	}
	for r0 := 0; r0 < rows; r0 += tb {
		r1 := min(r0+tb, rows)
		for c0 := 0; c0 < cols; c0 += tb {
			c1 := min(c0+tb, cols)
			for r := r0; r < r1; r++ {
				row := src[r*cols+c0 : r*cols+c1]
				for c, v := range row {
					dst[(c0+c)*rows+r] = v
				}
			}
		}
	}
}

// ln2Hi + ln2Lo = log 2, with ln2Hi's low 21 bits zero so that e·ln2Hi is
// exact for any float64 exponent sum e below 2²¹ (as in package math).
const (
	ln2Hi = 6.93147180369123816490e-01
	ln2Lo = 1.90821492927058770002e-10
)

// geoMeanDiv sets, for i in [i0, i1), bar_i = Π_k t_k[i]^α_k and then
// t_k[i] = bar_i / t_k[i] (0 where bar_i = 0). Equal weights take
// geoMeanEqual (one log and one exp per point, four points at a time);
// unequal weights use Σ_k α_k log t_k.
func geoMeanDiv(bar []float64, t [][]float64, alpha []float64, equal bool, i0, i1 int) {
	if equal {
		geoMeanEqual(bar, t, alpha[0], i0, i1)
		return
	}
	for i := i0; i < i1; i++ {
		var lp float64
		for k := range t {
			lp += alpha[k] * math.Log(t[k][i])
		}
		p := math.Exp(lp)
		bar[i] = p
		for k := range t {
			t[k][i] = safeDiv(p, t[k][i])
		}
	}
}

// divMuErr sets a = μ/t (0 where μ = 0) and, if withErr, returns Σ|a·t − μ|
// with the a given on entry.
func divMuErr(a, mu, t []float64, withErr bool) float64 {
	a, mu = a[:len(t)], mu[:len(t)]
	var s float64
	if withErr {
		for i, x := range t {
			m := mu[i]
			s += math.Abs(a[i]*x - m)
			a[i] = safeDiv(m, x)
		}
		return s
	}
	for i, x := range t {
		a[i] = safeDiv(mu[i], x)
	}
	return 0
}
