package ot

import (
	"math"
	"sync"
)

// ibpWorkers caps the goroutines of the lattice IBP fast path; 0 means the
// package's worker count. Tests set it to 1 to check that results do not
// depend on it.
var ibpWorkers = 0

// latticeIBP is the state of Workspace.ibpLattice: one sepEngine per worker
// and the job descriptions handed to the worker pool.
type latticeIBP struct {
	lk     *LatticeKernel
	eng    []*sepEngine
	errs   []float64 // per measure
	t      [][]float64
	wsp    *Workspace
	phase  int // 0: measure side (per worker), 1: barycenter side (per point block)
	it     int
	update bool // phase 0 computes the new a_k and Kᵀa_k
	equal  bool // equal weights
	dst    []float64
	wg     sync.WaitGroup
}

// ibpBlock is the number of points per work item of the barycenter side.
const ibpBlock = 256

// latticeState returns the fast path's state for kernel lk with nw workers,
// allocating it on first use.
func (w *Workspace) latticeState(lk *LatticeKernel, nw int) *latticeIBP {
	f := w.lat
	if f == nil || f.lk != lk || len(f.eng) < nw {
		f = &latticeIBP{lk: lk, wsp: w, errs: make([]float64, len(w.mu)), t: make([][]float64, len(w.mu))}
		for i := 0; i < nw; i++ {
			if i == 0 {
				// The kernel's own scratch and the workspace's tmp.
				f.eng = append(f.eng, newSepEngine(lk, lk.buf[0], lk.buf[1], w.tmp))
			} else {
				f.eng = append(f.eng, newSepEngine(lk))
			}
		}
		w.lat = f
	}
	return f
}

// ibpLattice is ibp for a LatticeKernel, computing the same iteration as the
// C reference of issue 15: per iteration, a_k = μ_k / K b_k and t_k = Kᵀa_k
// for every measure (parallel across measures, each worker running whole
// kernel applications with its own scratch), then p = Π_k t_k^α_k and
// b_k = p / t_k (parallel across points): two fork/joins per iteration. The
// measure side (μ_k, a_k) is kept in the engine's layout Y, the barycenter
// side (b_k, p) in the lattice's order X. Results do not depend on the
// number of workers.
func (w *Workspace) ibpLattice(dst []float64, opt BarycenterOptions, lk *LatticeKernel) BarycenterResult {
	K := w.kk
	nw := ibpWorkers
	if nw <= 0 {
		nw = workers()
	}
	nw = max(1, min(nw, K))
	f := w.latticeState(lk, nw)
	f.eng = f.eng[:nw]
	f.dst = dst
	f.equal = true
	for k := 1; k < K; k++ {
		if w.alpha[k] != w.alpha[0] {
			f.equal = false
		}
	}
	e0 := f.eng[0]
	for k := 0; k < K; k++ {
		copy(e0.tmp, w.mu[k])
		transpose(w.mu[k], e0.tmp, e0.nl, e0.nr) // μ_k in layout Y
		fill(w.b[k], 1)
		f.t[k] = w.b[k]
	}
	f.t = f.t[:K]
	fill(dst, 1/float64(w.n))
	var r BarycenterResult
	for it := 0; ; it++ {
		f.it, f.update, f.phase = it, it < opt.MaxIter, 0
		parallel(nw, 1, f, &f.wg)
		if it > 0 {
			errMax := 0.0
			for _, e := range f.errs[:K] {
				errMax = math.Max(errMax, e)
			}
			r.MarginalError = errMax
			if errMax < opt.Tol {
				r.Converged = true
				break
			}
		}
		if it == opt.MaxIter || opt.stopped() {
			break
		}
		f.phase = 1
		parallel((w.n+ibpBlock-1)/ibpBlock, 1, f, &f.wg)
		r.Iterations = it + 1
	}
	f.dst = nil
	return r
}

func (f *latticeIBP) runRange(_, lo, hi int) {
	w := f.wsp
	K := w.kk
	if f.phase == 1 {
		geoMeanDiv(f.dst, f.t, w.alpha[:K], f.equal, lo*ibpBlock, min(hi*ibpBlock, w.n))
		return
	}
	nw := len(f.eng)
	for c := lo; c < hi; c++ {
		e := f.eng[c]
		for k := c * K / nw; k < (c+1)*K/nw; k++ {
			e.applyXY(e.tmp, w.b[k]) // K b_k, in Y
			f.errs[k] = 0
			if f.it > 0 || f.update {
				if f.update {
					f.errs[k] = divMuErr(w.a[k], w.mu[k], e.tmp, f.it > 0)
					e.applyYX(w.b[k], w.a[k]) // b_k holds t_k = Kᵀa_k
				} else {
					f.errs[k] = marginalErr(w.a[k], w.mu[k], e.tmp)
				}
			}
		}
	}
}

// marginalErr returns Σ|a·t − μ|.
func marginalErr(a, mu, t []float64) float64 {
	a, mu = a[:len(t)], mu[:len(t)]
	var s float64
	for i, x := range t {
		s += math.Abs(a[i]*x - mu[i])
	}
	return s
}
