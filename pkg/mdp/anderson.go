package mdp

import "math"

// anderson implements type-II Anderson acceleration of a fixed-point
// iteration x ← G(x) with a short history (Walker & Ni, 2011). Given the
// current iterate x and g = G(x), next replaces x with g − Σ_j c_j ΔG_j,
// where c minimizes ‖f − Σ_j c_j ΔF_j‖₂ over the stored differences of
// residuals f = g − x.
//
// With a long history its bookkeeping costs more than a sweep of G (2m dot
// products and m updates of length n per step), so it runs on the
// workspace's goroutines: element-wise passes split by index range, and the
// dot products split by history slot, each dot still summed serially in
// index order (fused, several accumulators per pass over the data). Every
// entry therefore sees the same operations in the same order as the plain
// serial transcription (refAnderson in the tests), whatever the number of
// goroutines: TestAndersonMatchesReference checks it bit for bit.
//
// It is hand-written because gonum has no fixed-point accelerators, and it
// must not allocate per iteration.
type anderson struct {
	mem          int
	dF, dG       [][]float64 // mem slots of length n
	fPrev, gPrev []float64
	f            []float64
	hasPrev      bool
	count, head  int
	gram         []float64 // mem×mem, gram[i*mem+j] = <dF_i, dF_j>
	a            []float64 // scratch copy of the system
	rhs, coef    []float64
	row          []float64 // the new gram row <dF_head, dF_j>

	// parallel passes: pool and index ranges of the elements, slot ranges of the dots
	pool             *pool
	bounds, slotBnds []int
	x, g             []float64
	diffFn, dotFn    rangeFn
	updFn            rangeFn
}

func newAnderson(mem, n int, p *pool, bounds []int) *anderson {
	ac := &anderson{mem: mem, fPrev: make([]float64, n), gPrev: make([]float64, n), f: make([]float64, n),
		gram: make([]float64, mem*mem), a: make([]float64, mem*mem), rhs: make([]float64, mem),
		coef: make([]float64, mem), row: make([]float64, mem), pool: p, bounds: bounds,
		slotBnds: make([]int, len(bounds))}
	for i := 0; i < mem; i++ {
		ac.dF = append(ac.dF, make([]float64, n))
		ac.dG = append(ac.dG, make([]float64, n))
	}
	ac.diffFn, ac.dotFn, ac.updFn = ac.diffRange, ac.dotRange, ac.updateRange
	return ac
}

// reset forgets the history (used at the start of a solve and when the residual grows).
func (ac *anderson) reset() { ac.hasPrev, ac.count, ac.head = false, 0, 0 }

// next overwrites x with the accelerated iterate computed from x and g = G(x).
func (ac *anderson) next(x, g []float64) {
	ac.x, ac.g = x, g
	defer func() { ac.x, ac.g = nil, nil }()
	// f = g − x, the new differences, fPrev = f, gPrev = g, x = g.
	ac.pool.run(ac.diffFn, ac.bounds)
	h := ac.head
	if ac.hasPrev {
		ac.head = (h + 1) % ac.mem
		ac.count = min(ac.count+1, ac.mem)
	}
	ac.hasPrev = true
	k := ac.count
	if k == 0 {
		return
	}
	// <dF_h, dF_j> and <dF_j, f> for every stored slot j, split by slot.
	nw := len(ac.slotBnds) - 1
	for w := 0; w <= nw; w++ {
		ac.slotBnds[w] = w * k / nw
	}
	ac.pool.run(ac.dotFn, ac.slotBnds)
	for j := 0; j < k; j++ {
		ac.gram[h*ac.mem+j], ac.gram[j*ac.mem+h] = ac.row[j], ac.row[j]
	}
	trace := 0.0
	for j := 0; j < k; j++ {
		trace += ac.gram[j*ac.mem+j]
	}
	if !(trace > 0) || math.IsInf(trace, 0) {
		ac.reset()
		return
	}
	reg := 1e-10 * trace / float64(k)
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			ac.a[i*k+j] = ac.gram[i*ac.mem+j]
		}
		ac.a[i*k+i] += reg
	}
	if !solveSmall(ac.a[:k*k], ac.rhs[:k], ac.coef[:k], k) {
		ac.reset()
		return
	}
	ac.pool.run(ac.updFn, ac.bounds)
}

// diffRange computes f, the new difference slot (when there is a previous
// step), and moves the current f and g into fPrev and gPrev and g into x.
func (ac *anderson) diffRange(_, lo, hi int) {
	x, g := ac.x[lo:hi], ac.g[lo:hi]
	f, fPrev, gPrev := ac.f[lo:hi], ac.fPrev[lo:hi], ac.gPrev[lo:hi]
	if ac.hasPrev {
		dF, dG := ac.dF[ac.head][lo:hi], ac.dG[ac.head][lo:hi]
		for i := range f {
			fi := g[i] - x[i]
			f[i] = fi
			dF[i] = fi - fPrev[i]
			dG[i] = g[i] - gPrev[i]
		}
	} else {
		for i := range f {
			f[i] = g[i] - x[i]
		}
	}
	copy(fPrev, f)
	copy(gPrev, g)
	copy(x, g)
}

// dotRange computes the dot products of history slots [lo, hi): row[j] =
// <dF_h, dF_j> with h the slot just written, rhs[j] = <dF_j, f>. Slots are
// taken two at a time so each pass over the data feeds four independent sums.
func (ac *anderson) dotRange(_, lo, hi int) {
	h := (ac.head + ac.mem - 1) % ac.mem // the slot diffRange wrote
	dh, f := ac.dF[h], ac.f
	j := lo
	for ; j+1 < hi; j += 2 {
		d0, d1 := ac.dF[j][:len(f)], ac.dF[j+1][:len(f)]
		dh := dh[:len(f)]
		var r0, r1, s0, s1 float64
		for i, fi := range f {
			r0 += dh[i] * d0[i]
			s0 += d0[i] * fi
			r1 += dh[i] * d1[i]
			s1 += d1[i] * fi
		}
		ac.row[j], ac.rhs[j], ac.row[j+1], ac.rhs[j+1] = r0, s0, r1, s1
	}
	if j < hi {
		d0 := ac.dF[j][:len(f)]
		dh := dh[:len(f)]
		var r0, s0 float64
		for i, fi := range f {
			r0 += dh[i] * d0[i]
			s0 += d0[i] * fi
		}
		ac.row[j], ac.rhs[j] = r0, s0
	}
}

// updateRange applies x −= Σ_j c_j ΔG_j over its index range, slot by slot in order.
func (ac *anderson) updateRange(_, lo, hi int) {
	x := ac.x[lo:hi]
	for j := 0; j < ac.count; j++ {
		c := ac.coef[j]
		if c == 0 {
			continue
		}
		dG := ac.dG[j][lo:hi]
		for i := range x {
			x[i] -= c * dG[i]
		}
	}
}

// solveSmall solves the k×k system a·x = b (a row-major, overwritten) by
// Gaussian elimination with partial pivoting; it reports false if a is singular.
func solveSmall(a, b, x []float64, k int) bool {
	copy(x, b)
	for c := 0; c < k; c++ {
		p := c
		for r := c + 1; r < k; r++ {
			if math.Abs(a[r*k+c]) > math.Abs(a[p*k+c]) {
				p = r
			}
		}
		if a[p*k+c] == 0 || math.IsNaN(a[p*k+c]) {
			return false
		}
		if p != c {
			for j := 0; j < k; j++ {
				a[c*k+j], a[p*k+j] = a[p*k+j], a[c*k+j]
			}
			x[c], x[p] = x[p], x[c]
		}
		for r := c + 1; r < k; r++ {
			m := a[r*k+c] / a[c*k+c]
			for j := c; j < k; j++ {
				a[r*k+j] -= m * a[c*k+j]
			}
			x[r] -= m * x[c]
		}
	}
	for c := k - 1; c >= 0; c-- {
		s := x[c]
		for j := c + 1; j < k; j++ {
			s -= a[c*k+j] * x[j]
		}
		x[c] = s / a[c*k+c]
	}
	for _, v := range x[:k] {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
