package ot

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// Method selects a barycenter algorithm.
type Method int

const (
	// IBP is iterative Bregman projections in the scaling domain (Benamou et
	// al. 2015, "Iterative Bregman projections for regularized transportation
	// problems"); POT's barycenter(method="sinkhorn").
	IBP Method = iota
	// Stabilized is IBP in the log domain (per-axis log-sum-exp kernels), for
	// small ε where the scalings overflow; POT's method="sinkhorn_log".
	Stabilized
	// Debiased is the debiased Sinkhorn barycenter of Janati, Cuturi and
	// Gramfort (2020), which removes the entropic blur; POT's barycenter_debiased.
	Debiased
	// Paper is the schedule of the paper's appendix: outer barycenter
	// iterations, each running InnerIter warm-started Sinkhorn iterations per
	// client and then a mirror-descent step on the barycenter with momentum;
	// see BarycenterOptions.
	Paper
)

// String returns the method's CLI name.
func (m Method) String() string {
	switch m {
	case IBP:
		return "ibp"
	case Stabilized:
		return "stabilized"
	case Debiased:
		return "debiased"
	case Paper:
		return "paper"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// ParseMethod returns the Method named s (ibp, stabilized, debiased, paper).
func ParseMethod(s string) (Method, error) {
	for m := IBP; m <= Paper; m++ {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("ot: unknown barycenter method %q (want ibp, stabilized, debiased or paper)", s)
}

// DefaultEps is the entropic regularization used when none is given, in units
// of the lattice's CostUnit (squared smallest spacing): the paper's ε = 0.5.
// It is the only place this default is written.
const DefaultEps = 0.5

// MarshalText writes the method's name (ibp, stabilized, debiased, paper).
func (m Method) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a method name; an empty name is IBP.
func (m *Method) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*m = IBP
		return nil
	}
	v, err := ParseMethod(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// BarycenterOptions configures a barycenter solve; the zero value is IBP at
// ε = 0.5 squared-spacing units, up to 1000 iterations, tolerance 1e-9.
type BarycenterOptions struct {
	// Eps is the entropic regularization. By default it is in units of the
	// lattice's CostUnit (squared smallest spacing); 0 means DefaultEps.
	// LatticeBarycenter and DenseBarycenter build their kernel with it. A
	// Workspace's ε is its kernel's: Workspace.Barycenter accepts Eps only as
	// 0 or as the kernel's own raw ε with AbsoluteEps, and refuses any other
	// value instead of ignoring it.
	Eps float64
	// AbsoluteEps makes Eps a raw cost value (POT's reg) instead of a multiple
	// of the CostUnit.
	AbsoluteEps bool
	// Method is the algorithm; the zero value is IBP.
	Method Method
	// MaxIter caps the (outer) iterations; 0 means 1000, or 50 for Paper.
	MaxIter int
	// Tol stops the solve once MarginalError < Tol; 0 means 1e-9, a negative
	// value never stops early (exactly MaxIter iterations; the paper's fixed
	// schedule).
	Tol float64
	// InnerIter is the number of Sinkhorn iterations per client per outer
	// step for Paper; 0 means 10. Other methods ignore it.
	InnerIter int
	// Momentum is the heavy-ball coefficient β of Paper's barycenter update
	// (m ← β·m + g); 0 (the default) or a negative value means none. Other
	// methods ignore it. Measured (TestBarycenterMethodsConverge and sweeps on 20×20, 9×9×5×5
	// and 10×8 sweeps in the report): with the default step, β ≥ 0.2 never
	// sped convergence up and made it diverge at smaller ε, so it is off by
	// default although the paper mentions "momentum updates".
	Momentum float64
	// LogDomain runs Debiased and Paper on log scalings with log-sum-exp
	// kernels, which stays finite for small ε where the scaling form
	// under- or overflows (slower: one exp per kernel entry). IBP with
	// LogDomain is Stabilized.
	LogDomain bool
	// StepSize is Paper's mirror-descent step on the log-barycenter, in units
	// of 1/ε; 0 means 0.25. Other methods ignore it.
	StepSize float64
	// Stop, when closed (e.g. a context's Done channel), ends the solve at
	// the next iteration (outer, or Sinkhorn step of Paper's inner loop); it
	// then returns the current iterate with ErrStopped. nil never stops.
	Stop <-chan struct{}
}

// ErrStopped is returned by a barycenter solve ended by BarycenterOptions.Stop.
var ErrStopped = errors.New("ot: barycenter solve stopped")

// stopped reports whether o.Stop is closed.
func (o *BarycenterOptions) stopped() bool {
	select {
	case <-o.Stop:
		return true
	default:
		return false
	}
}

func (o BarycenterOptions) withDefaults() BarycenterOptions {
	if o.Eps == 0 {
		o.Eps = DefaultEps
	}
	if o.MaxIter == 0 {
		o.MaxIter = 1000
		if o.Method == Paper {
			o.MaxIter = 50
		}
	}
	if o.Tol == 0 {
		o.Tol = 1e-9
	}
	if o.InnerIter == 0 {
		o.InnerIter = 10
	}
	if o.StepSize == 0 {
		o.StepSize = 0.25
	}
	return o
}

// BarycenterResult is the outcome of a barycenter solve.
type BarycenterResult struct {
	// Barycenter is the barycenter measure on the support (sums to ≈ 1).
	Barycenter []float64
	// Iterations is the number of (outer) iterations performed.
	Iterations int
	// MarginalError is max_k ‖P_k𝟙 - μ_k‖₁ over the client couplings P_k at
	// the returned iterate (the barycenter-side marginals P_kᵀ𝟙 equal the
	// barycenter exactly for IBP, Stabilized and Debiased; for Paper it is
	// the larger of the two marginal errors), with the μ_k normalized to mass 1.
	MarginalError float64
	// Converged reports whether MarginalError < Tol was reached.
	Converged bool
}

// CheckMeasure returns an error if x is not a usable measure: empty, with a
// NaN, infinite or negative entry, or with zero total mass.
func CheckMeasure(x []float64) error {
	if len(x) == 0 {
		return errors.New("empty measure")
	}
	var s float64
	for i, v := range x {
		switch {
		case math.IsNaN(v):
			return fmt.Errorf("entry %d is NaN", i)
		case math.IsInf(v, 0):
			return fmt.Errorf("entry %d is infinite", i)
		case v < 0:
			return fmt.Errorf("entry %d is negative (%g)", i, v)
		}
		s += v
	}
	if !(s > 0) {
		return errors.New("total mass is zero")
	}
	if math.IsInf(s, 0) {
		return errors.New("total mass overflows")
	}
	return nil
}

// LatticeBarycenter computes the entropic 2-Wasserstein barycenter of the
// measures (each of length l.Len(), normalized internally to mass 1) with
// weights (nil means uniform; normalized to sum 1) on the lattice l, using the
// separable kernel. It is a convenience wrapper around NewLatticeKernel and a
// Workspace; reuse those to avoid allocating per call.
func LatticeBarycenter(l Lattice, measures [][]float64, weights []float64, opt BarycenterOptions) (BarycenterResult, error) {
	opt = opt.withDefaults()
	eps := opt.Eps
	if !opt.AbsoluteEps {
		eps *= l.CostUnit()
	}
	k, err := NewLatticeKernel(l, eps)
	if err != nil {
		return BarycenterResult{}, err
	}
	opt.Eps, opt.AbsoluteEps = eps, true
	return NewWorkspace(k, len(measures)).Barycenter(nil, measures, weights, opt)
}

// DenseBarycenter is LatticeBarycenter for an explicit symmetric n×n cost
// matrix (row-major); with AbsoluteEps false, Eps is in units of the smallest
// positive cost.
func DenseBarycenter(cost []float64, n int, measures [][]float64, weights []float64, opt BarycenterOptions) (BarycenterResult, error) {
	opt = opt.withDefaults()
	eps := opt.Eps
	if !opt.AbsoluteEps {
		u := math.Inf(1)
		for _, c := range cost {
			if c > 0 && c < u {
				u = c
			}
		}
		if !math.IsInf(u, 1) {
			eps *= u
		}
	}
	k, err := NewDenseKernel(cost, n, n, eps)
	if err != nil {
		return BarycenterResult{}, err
	}
	opt.Eps, opt.AbsoluteEps = eps, true
	return NewWorkspace(k, len(measures)).Barycenter(nil, measures, weights, opt)
}

// PointBarycenter is LatticeBarycenter on a scattered support: the measures
// live on the points of pc (each of length pc.Len()), the cost is pc's
// weighted squared-Euclidean cost, and the Gibbs kernel is applied on the
// fly in tiles (PointKernel: O(n) memory, O(n²d) time per application).
// With AbsoluteEps false, Eps is in units of pc.CostUnit(), the median
// nearest-neighbour cost (on the points of a lattice with uniform axes the
// lattice's CostUnit, so the same options give the same barycenter). Every Method runs; for small ε use Stabilized or LogDomain,
// whose kernel is a tiled log-sum-exp.
func PointBarycenter(pc *PointCloud, measures [][]float64, weights []float64, opt BarycenterOptions) (BarycenterResult, error) {
	if pc == nil {
		return BarycenterResult{}, fmt.Errorf("ot: no point cloud: %w", ErrPoints)
	}
	opt = opt.withDefaults()
	eps := opt.Eps
	if !opt.AbsoluteEps {
		eps *= pc.CostUnit()
	}
	k, err := NewPointKernel(pc, eps)
	if err != nil {
		return BarycenterResult{}, err
	}
	opt.Eps, opt.AbsoluteEps = eps, true
	return NewWorkspace(k, len(measures)).Barycenter(nil, measures, weights, opt)
}

// Workspace holds the scratch memory of barycenter solves with one square
// kernel and up to a fixed number of measures, so that repeated solves and
// their iterations allocate nothing. It is not safe for concurrent use.
type Workspace struct {
	k     Kernel
	n     int
	mu    [][]float64 // normalized measures (or their logs)
	a, b  [][]float64 // scalings (or log scalings)
	alpha []float64
	p     []float64 // log barycenter accumulator
	tmp   []float64
	c     []float64 // debiasing vector (or its log)
	vel   []float64 // momentum velocity for Paper
	kk    int       // measures in use
	bar   []float64 // the caller's barycenter during a Paper solve
	lat   *latticeIBP
	ew    ewJob
	wg    sync.WaitGroup
}

// NewWorkspace returns a workspace for kernel k (which must be square) and up
// to maxMeasures measures; it uses about (3·maxMeasures + 2)·n float64s, plus
// 2·n for the Debiased and Paper methods and 3·n per extra worker for IBP on a
// LatticeKernel, allocated on first use.
func NewWorkspace(k Kernel, maxMeasures int) *Workspace {
	if k.Rows() != k.Cols() {
		panic("ot: NewWorkspace: barycenters need a square kernel")
	}
	if maxMeasures < 1 {
		maxMeasures = 1
	}
	n := k.Rows()
	w := &Workspace{k: k, n: n}
	mk := func() [][]float64 {
		s := make([][]float64, maxMeasures)
		for i := range s {
			s[i] = make([]float64, n)
		}
		return s
	}
	w.mu, w.a, w.b = mk(), mk(), mk()
	w.alpha = make([]float64, maxMeasures)
	w.p = make([]float64, n)
	w.tmp = make([]float64, n)
	w.ew.w = w
	return w
}

// Kernel returns the workspace's kernel.
func (w *Workspace) Kernel() Kernel { return w.k }

// load validates and normalizes the inputs into the workspace; measures with
// zero weight are dropped.
func (w *Workspace) load(measures [][]float64, weights []float64) error {
	if len(measures) == 0 {
		return errors.New("ot: no measures")
	}
	if len(measures) > len(w.mu) {
		return fmt.Errorf("ot: %d measures, workspace holds %d", len(measures), len(w.mu))
	}
	if weights != nil && len(weights) != len(measures) {
		return fmt.Errorf("ot: %d weights for %d measures", len(weights), len(measures))
	}
	var ws float64
	for i := range measures {
		wt := 1.0
		if weights != nil {
			wt = weights[i]
		}
		if math.IsNaN(wt) || math.IsInf(wt, 0) || wt < 0 {
			return fmt.Errorf("ot: weight %d is %g, want a non-negative finite number", i, wt)
		}
		ws += wt
	}
	if !(ws > 0) {
		return errors.New("ot: weights sum to zero")
	}
	w.kk = 0
	for i, m := range measures {
		if len(m) != w.n {
			return fmt.Errorf("ot: measure %d has length %d, want %d", i, len(m), w.n)
		}
		if err := CheckMeasure(m); err != nil {
			return fmt.Errorf("ot: measure %d: %w", i, err)
		}
		wt := 1.0
		if weights != nil {
			wt = weights[i]
		}
		if wt == 0 {
			continue
		}
		var s float64
		for _, v := range m {
			s += v
		}
		dst := w.mu[w.kk]
		for j, v := range m {
			dst[j] = v / s
		}
		w.alpha[w.kk] = wt / ws
		w.kk++
	}
	return nil
}

// Barycenter computes the barycenter of measures with weights (nil means
// uniform) into dst (allocated if nil, else of length n) and returns it in the
// result. Inputs are checked (lengths, NaN, negative or zero mass) and
// normalized; measures with zero weight are ignored. Apart from a nil dst it
// allocates nothing.
func (w *Workspace) Barycenter(dst []float64, measures [][]float64, weights []float64, opt BarycenterOptions) (BarycenterResult, error) {
	if err := w.checkEps(opt); err != nil {
		return BarycenterResult{}, err
	}
	opt = opt.withDefaults()
	if dst == nil {
		dst = make([]float64, w.n)
	}
	if len(dst) != w.n {
		return BarycenterResult{}, fmt.Errorf("ot: dst has length %d, want %d", len(dst), w.n)
	}
	if err := w.load(measures, weights); err != nil {
		return BarycenterResult{}, err
	}
	if (opt.Method == Debiased || opt.Method == Paper) && w.c == nil {
		w.c = make([]float64, w.n)
		w.vel = make([]float64, w.n)
	}
	var r BarycenterResult
	switch opt.Method {
	case IBP:
		if opt.LogDomain {
			r = w.ibpLog(dst, opt)
			break
		}
		r = w.ibp(dst, opt)
	case Stabilized:
		r = w.ibpLog(dst, opt)
	case Debiased:
		r = w.debiased(dst, opt)
	case Paper:
		r = w.paper(dst, opt)
	default:
		return BarycenterResult{}, fmt.Errorf("ot: unknown method %v", opt.Method)
	}
	r.Barycenter = dst
	if opt.stopped() {
		return r, fmt.Errorf("%w after %d iterations", ErrStopped, r.Iterations)
	}
	for _, v := range dst {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return r, fmt.Errorf("ot: %v barycenter became non-finite after %d iterations (ε = %g too small for the scaling domain? use the log domain or the stabilized method): %w", opt.Method, r.Iterations, w.k.Eps(), ErrNonFinite)
		}
	}
	if math.IsNaN(r.MarginalError) {
		return r, fmt.Errorf("ot: %v barycenter marginal error is NaN after %d iterations", opt.Method, r.Iterations)
	}
	return r, nil
}

// plainIBP makes ibp skip the LatticeKernel fast path (tests compare them).
var plainIBP = false

// ibp runs iterative Bregman projections in the scaling domain. Per
// iteration: a_k = μ_k / K b_k; p = Π_k (b_k ⊙ Kᵀa_k)^α_k; b_k = p / Kᵀa_k.
// On a LatticeKernel it runs ibpLattice, the same iteration fused and
// parallel across measures.
func (w *Workspace) ibp(dst []float64, opt BarycenterOptions) BarycenterResult {
	if lk, ok := w.k.(*LatticeKernel); ok && !plainIBP {
		return w.ibpLattice(dst, opt, lk)
	}
	K := w.kk
	for k := 0; k < K; k++ {
		fill(w.b[k], 1)
	}
	fill(dst, 1/float64(w.n))
	var r BarycenterResult
	for it := 0; ; it++ {
		// μ-side projection, measuring the error of the current iterate.
		errMax := 0.0
		for k := 0; k < K; k++ {
			w.k.Apply(w.tmp, w.b[k])
			if it > 0 {
				errMax = math.Max(errMax, w.elementwise(ewMarginalErr, k))
			}
			if it < opt.MaxIter {
				w.elementwise(ewDivMu, k)
			}
		}
		if it > 0 {
			r.MarginalError = errMax
			if errMax < opt.Tol {
				r.Converged = true
				break
			}
		}
		if it == opt.MaxIter || opt.stopped() {
			break
		}
		// Barycenter-side projection.
		fill(w.p, 0)
		for k := 0; k < K; k++ {
			w.k.ApplyT(w.tmp, w.a[k])
			w.elementwise(ewGeoAcc, k) // p += α log(b ⊙ Kᵀa); b = Kᵀa
		}
		w.elementwise(ewExpP, 0) // dst = exp(p)
		copy(dst, w.p)
		for k := 0; k < K; k++ {
			w.elementwise(ewDivB, k) // b = p / b
		}
		r.Iterations = it + 1
	}
	return r
}

// ibpLog runs iterative Bregman projections on log scalings f_k = log a_k,
// g_k = log b_k with log-domain kernels.
func (w *Workspace) ibpLog(dst []float64, opt BarycenterOptions) BarycenterResult {
	K := w.kk
	for k := 0; k < K; k++ {
		fill(w.b[k], 0)
	}
	fill(dst, 1/float64(w.n))
	var r BarycenterResult
	for it := 0; ; it++ {
		errMax := 0.0
		for k := 0; k < K; k++ {
			w.k.LogApply(w.tmp, w.b[k])
			if it > 0 {
				errMax = math.Max(errMax, w.elementwise(ewLogMarginalErr, k))
			}
			if it < opt.MaxIter {
				w.elementwise(ewLogDivMu, k)
			}
		}
		if it > 0 {
			r.MarginalError = errMax
			if errMax < opt.Tol {
				r.Converged = true
				break
			}
		}
		if it == opt.MaxIter || opt.stopped() {
			break
		}
		fill(w.p, 0)
		for k := 0; k < K; k++ {
			w.k.LogApplyT(w.tmp, w.a[k])
			w.elementwise(ewLogGeoAcc, k)
		}
		for k := 0; k < K; k++ {
			w.elementwise(ewLogDivB, k)
		}
		w.elementwise(ewExpPTo, 0)
		copy(dst, w.tmp)
		r.Iterations = it + 1
	}
	return r
}

func fill(x []float64, v float64) {
	for i := range x {
		x[i] = v
	}
}

// debiased runs the debiased Sinkhorn barycenter (Janati et al. 2020, as
// POT's barycenter_debiased): IBP whose barycenter update is multiplied by a
// debiasing vector c, itself the fixed point c ⊙ Kc = p of the barycenter's
// self-transport, updated by c ← sqrt(c ⊙ p / Kc). MarginalError includes
// ‖c ⊙ Kc - p‖₁.
func (w *Workspace) debiased(dst []float64, opt BarycenterOptions) BarycenterResult {
	if opt.LogDomain {
		return w.debiasedLog(dst, opt)
	}
	K := w.kk
	for k := 0; k < K; k++ {
		fill(w.b[k], 1)
	}
	fill(w.c, 1)
	fill(dst, 1/float64(w.n))
	var r BarycenterResult
	errC := 0.0
	for it := 0; ; it++ {
		errMax := errC
		for k := 0; k < K; k++ {
			w.k.Apply(w.tmp, w.b[k])
			if it > 0 {
				errMax = math.Max(errMax, w.elementwise(ewMarginalErr, k))
			}
			if it < opt.MaxIter {
				w.elementwise(ewDivMu, k)
			}
		}
		if it > 0 {
			r.MarginalError = errMax
			if errMax < opt.Tol {
				r.Converged = true
				break
			}
		}
		if it == opt.MaxIter || opt.stopped() {
			break
		}
		fill(w.p, 0)
		for k := 0; k < K; k++ {
			w.k.ApplyT(w.tmp, w.a[k])
			w.elementwise(ewLogAccB, k) // p += α log Kᵀa; b = Kᵀa
		}
		w.elementwise(ewExpPc, 0) // p = c ⊙ exp(p)
		copy(dst, w.p)
		for k := 0; k < K; k++ {
			w.elementwise(ewDivB, k)
		}
		w.k.Apply(w.tmp, w.c)
		errC = w.elementwise(ewDebias, w.kk) // error, then c = sqrt(c p / Kc)
		r.Iterations = it + 1
	}
	return r
}

// debiasedLog is debiased on log scalings: f_k = log a_k, g_k = log b_k and
// log c.
func (w *Workspace) debiasedLog(dst []float64, opt BarycenterOptions) BarycenterResult {
	K := w.kk
	for k := 0; k < K; k++ {
		fill(w.b[k], 0)
	}
	fill(w.c, 0)
	fill(dst, 1/float64(w.n))
	var r BarycenterResult
	errC := 0.0
	for it := 0; ; it++ {
		errMax := errC
		for k := 0; k < K; k++ {
			w.k.LogApply(w.tmp, w.b[k])
			if it > 0 {
				errMax = math.Max(errMax, w.elementwise(ewLogMarginalErr, k))
			}
			if it < opt.MaxIter {
				w.elementwise(ewLogDivMu, k)
			}
		}
		if it > 0 {
			r.MarginalError = errMax
			if errMax < opt.Tol {
				r.Converged = true
				break
			}
		}
		if it == opt.MaxIter || opt.stopped() {
			break
		}
		fill(w.p, 0)
		for k := 0; k < K; k++ {
			w.k.LogApplyT(w.tmp, w.a[k])
			w.elementwise(ewLogAccT, k) // p += α tmp; b = tmp
		}
		w.elementwise(ewAddC, 0) // p += log c
		for k := 0; k < K; k++ {
			w.elementwise(ewLogDivB, k)
		}
		w.elementwise(ewExpPTo, 0)
		copy(dst, w.tmp)
		w.k.LogApply(w.tmp, w.c)
		errC = w.elementwise(ewLogDebias, w.kk)
		r.Iterations = it + 1
	}
	return r
}

// paper runs the paper's schedule as we read it (appendix: ε = 0.5, 10
// Sinkhorn iterations per barycenter step, 50 barycenter iterations; §Method:
// "alternating optimization with momentum updates"). Each outer iteration
// (1) runs InnerIter warm-started Sinkhorn iterations between the current
// barycenter p and every μ_k, v_k = μ_k / Kᵀu_k, u_k = p / K v_k, and
// (2) takes a mirror-descent step on the simplex along the gradient of
// Σ_k α_k W_ε(p, μ_k), which is Σ_k α_k ε log u_k (Cuturi and Doucet 2014),
// with heavy-ball momentum: g = Σ_k α_k log u_k, m ← Momentum·m + g,
// log p ← log p - StepSize·m, renormalized. With StepSize 1, no momentum and
// one inner iteration this is IBP. MarginalError is the largest
// ‖v_k ⊙ Kᵀu_k - μ_k‖₁ at the start of the last outer step (the
// barycenter-side marginals are exact after each inner iteration).
func (w *Workspace) paper(dst []float64, opt BarycenterOptions) BarycenterResult {
	K := w.kk
	lg := opt.LogDomain
	opErr, opDivMu, opDivBar, opVel := ewErrMuB, ewDivMuB, ewDivBar, ewVelAccKv
	init := 1.0
	if lg {
		opErr, opDivMu, opDivBar, opVel = ewLogErrMuB, ewLogDivMuB, ewLogDivBar, ewVelAccF
		init = 0
	}
	for k := 0; k < K; k++ {
		fill(w.a[k], init)
	}
	fill(dst, 1/float64(w.n))
	fill(w.p, -math.Log(float64(w.n)))
	fill(w.vel, 0)
	w.bar = dst
	w.ew.step, w.ew.mom = opt.StepSize, max(0, opt.Momentum)
	var r BarycenterResult
	for it := 0; ; it++ {
		errMax := 0.0
		w.elementwise(ewVelScale, 0) // m *= Momentum; the inner loop adds g
		for k := 0; k < K; k++ {
			for s := 0; s < opt.InnerIter && !opt.stopped(); s++ {
				if lg {
					w.k.LogApplyT(w.tmp, w.a[k])
				} else {
					w.k.ApplyT(w.tmp, w.a[k])
				}
				if s == 0 && it > 0 {
					errMax = math.Max(errMax, w.elementwise(opErr, k))
				}
				if it == opt.MaxIter {
					break
				}
				w.elementwise(opDivMu, k) // v = μ / Kᵀu
				if lg {
					w.k.LogApply(w.tmp, w.b[k])
				} else {
					w.k.Apply(w.tmp, w.b[k])
				}
				w.elementwise(opDivBar, k) // u = p / K v
				if s == opt.InnerIter-1 {
					// Gradient term α log u = α (log p - log K v), computed
					// from K v so that an underflowing u stays exact.
					w.elementwise(opVel, k)
				}
			}
		}
		if it > 0 {
			r.MarginalError = errMax
			if errMax < opt.Tol {
				r.Converged = true
				break
			}
		}
		if it == opt.MaxIter || opt.stopped() {
			break
		}
		mx := w.elementwise(ewLogStep, 0) // log p -= η m; returns max
		w.ew.shift = mx
		s := w.elementwise(ewExpBar, 0) // bar = exp(log p - max); returns sum
		w.ew.shift, w.ew.scale = mx+math.Log(s), 1/s
		w.elementwise(ewNormalize, 0)
		r.Iterations = it + 1
	}
	w.bar = nil
	return r
}

// checkEps refuses an ε in opt that is not the kernel's: a Workspace solves
// with its kernel's ε, so any other value would be silently ignored.
func (w *Workspace) checkEps(opt BarycenterOptions) error {
	if opt.Eps == 0 {
		return nil
	}
	if !opt.AbsoluteEps {
		return fmt.Errorf("ot: BarycenterOptions.Eps = %g in cost units, but a Workspace uses its kernel's ε (raw %g); leave Eps 0 or give the kernel's raw ε with AbsoluteEps", opt.Eps, w.k.Eps())
	}
	if ke := w.k.Eps(); math.Abs(opt.Eps-ke) > 1e-12*ke {
		return fmt.Errorf("ot: BarycenterOptions.Eps = %g disagrees with the kernel's ε = %g; build the kernel with the ε you want", opt.Eps, ke)
	}
	return nil
}
