package mdp

import (
	"fmt"
	"math"
	"runtime"

	"gonum.org/v1/gonum/floats"
)

// Options configures a Workspace. The zero value gives the defaults.
type Options struct {
	// Tol stops infinite-horizon iterations once the sup-norm change of the
	// iterate falls to Tol or below (default 1e-10). The value error is then
	// at most γ/(1−γ)·Tol.
	Tol float64
	// MaxIter caps infinite-horizon iterations (default 100000).
	MaxIter int
	// Workers is the number of goroutines for a sweep (default GOMAXPROCS);
	// small MDPs use fewer. Results do not depend on it.
	Workers int
	// Anderson is the history length of the Anderson acceleration applied to
	// infinite-horizon value and visit iterations (default 5; negative turns
	// it off, giving plain fixed-point iteration). It cuts the number of
	// sweeps several-fold at γ near 1; the stopping rule and the error bound
	// are those of the plain iteration, checked on an unaccelerated sweep.
	Anderson int
	// WarmStart makes infinite-horizon iterations start from the previous
	// result held in dst (values) or in the workspace (visits) instead of
	// zero, which saves most sweeps when the reward changes a little between
	// calls, as in IRL. Results then agree with a cold start to within the
	// tolerance, not bit for bit.
	WarmStart bool
	// Newton solves infinite-horizon soft value iteration (τ > 0) by
	// Newton's method, that is soft policy iteration with inexact
	// evaluations, and infinite-horizon visits by a linear solve, both with
	// ILU(0)-preconditioned GMRES (see newton.go). At γ near 1 and small τ,
	// where fixed-point sweeps converge slowly even with Anderson
	// acceleration, it needs 10–20 times fewer passes over the transitions
	// (BenchmarkMaxEntStep in package discretize). The stopping rule and
	// error bound stay those of the plain iteration, checked on an exact
	// sweep; results agree with the fixed-point solvers to within the
	// tolerance, not bit for bit. Hard value iteration (τ = 0) and finite
	// horizons ignore it.
	Newton bool
}

// minPairsPerWorker keeps small MDPs (e.g. a 20×20 grid) on one goroutine:
// below about 16k pairs plus transitions per worker, waking a second
// goroutine costs more than it saves (measured on the 20×20 grid benchmark).
const minPairsPerWorker = 16384

// Workspace holds the scratch buffers, the reverse transition graph and the
// worker goroutines for the kernels on one MDP. Reuse it across calls: after
// its first call each kernel allocates nothing (except when dst arguments
// are nil or too small); the Anderson history and the Newton solver's
// sparse system are allocated on first use. A Workspace is not safe for
// concurrent use; call Close (or drop it) when done.
type Workspace struct {
	m      *MDP
	opts   Options
	bounds []int
	pool   *pool

	// reverse graph: for state s2, incoming pairs inPair[inPtr[s2]:inPtr[s2+1]] with probabilities inProb.
	inPtr  []int
	inPair []int32
	inProb []float64

	partial []float64 // per-worker max |change|
	vTmp    []float64 // S
	x, xNew []float64 // S, state visits
	xWarm   bool
	xIters  int
	// Anderson accelerators for values and visits (allocated on first use, nil when disabled).
	accelV, accelX *anderson
	y              []float64 // S*A
	d              []float64 // S*A

	// per-call arguments of the range kernels
	r         []float64
	tau       float64
	pi        *Policy
	t         int
	vIn, vOut []float64
	qOut      []float64
	base      []float64 // nil means 0
	yIn, yOut []float64
	xIn, xOut []float64
	softFn    rangeFn
	evalFn    rangeFn
	pushFn    rangeFn
	pullFn    rangeFn
	softPolFn rangeFn
	polTarget *Policy
	polValues *Values
	// expOut and zOut, when set, receive softRange's exponentials and
	// their arguments per pair (zOut NaN where it skipped the exponential),
	// which softPolicyRange reuses (SoftValuesAndPolicy).
	expOut, zOut []float64
	fuseExp      []float64 // their storage, 2·S·A
	noFuse       bool      // tests: the Newton solver's policies computed from Q anew

	nt                                                *newtonState
	gatherFn, packFn, mulFn, mulBlockFn, mulBlock32Fn rangeFn
}

// NewWorkspace validates m and returns a Workspace for it. It panics if m is
// invalid (validate user-built MDPs with Validate or build them with a Builder).
func NewWorkspace(m *MDP, opts Options) *Workspace {
	if err := m.Validate(); err != nil {
		panic(err)
	}
	if opts.Tol <= 0 {
		opts.Tol = 1e-10
	}
	if opts.MaxIter <= 0 {
		opts.MaxIter = 100000
	}
	if opts.Workers <= 0 {
		opts.Workers = defaultWorkers()
	}
	if opts.Anderson == 0 {
		opts.Anderson = 5
	}
	S, A := m.NumStates, m.NumActions
	nw := opts.Workers
	if byWork := (S*A + len(m.Next)) / minPairsPerWorker; byWork < nw {
		nw = max(1, byWork)
	}
	nw = min(nw, S)
	ws := &Workspace{m: m, opts: opts}
	ws.bounds = make([]int, nw+1)
	for w := 0; w <= nw; w++ {
		ws.bounds[w] = w * S / nw
	}
	ws.pool = newPool(nw)
	runtime.AddCleanup(ws, func(p *pool) { p.close() }, ws.pool)

	// Reverse graph over non-terminal source states.
	ws.inPtr = make([]int, S+1)
	for s := 0; s < S; s++ {
		if m.IsTerminal(s) {
			continue
		}
		for i := m.RowPtr[s*A]; i < m.RowPtr[(s+1)*A]; i++ {
			ws.inPtr[m.Next[i]+1]++
		}
	}
	for s := 0; s < S; s++ {
		ws.inPtr[s+1] += ws.inPtr[s]
	}
	ws.inPair = make([]int32, ws.inPtr[S])
	ws.inProb = make([]float64, ws.inPtr[S])
	fill := append([]int(nil), ws.inPtr[:S]...)
	for s := 0; s < S; s++ {
		if m.IsTerminal(s) {
			continue
		}
		for a := 0; a < A; a++ {
			k := s*A + a
			for i := m.RowPtr[k]; i < m.RowPtr[k+1]; i++ {
				n := m.Next[i]
				ws.inPair[fill[n]] = int32(k)
				ws.inProb[fill[n]] = m.Prob[i]
				fill[n]++
			}
		}
	}
	ws.partial = make([]float64, nw*8) // stride 8 avoids false sharing
	ws.vTmp = make([]float64, S)
	ws.x = make([]float64, S)
	ws.xNew = make([]float64, S)
	ws.y = make([]float64, S*A)
	ws.d = make([]float64, S*A)
	ws.softFn = ws.softRange
	ws.evalFn = ws.evalRange
	ws.pushFn = ws.pushRange
	ws.pullFn = ws.pullRange
	ws.softPolFn = ws.softPolicyRange
	return ws
}

// MDP returns the MDP the workspace was built for.
func (ws *Workspace) MDP() *MDP { return ws.m }

// Options returns the options in effect, defaults filled in.
func (ws *Workspace) Options() Options { return ws.opts }

// Workers returns the number of goroutines a sweep uses.
func (ws *Workspace) Workers() int { return len(ws.bounds) - 1 }

// VisitIterations returns the number of propagation steps of the last Visits call.
func (ws *Workspace) VisitIterations() int { return ws.xIters }

// Close stops the worker goroutines; the workspace must not be used afterwards.
func (ws *Workspace) Close() { ws.pool.close() }

func (ws *Workspace) maxPartial() float64 {
	r := 0.0
	for w := 0; w < len(ws.bounds)-1; w++ {
		r = max(r, ws.partial[w*8])
	}
	return r
}

// steps returns the number of time slices of values and policies: 1 for an infinite horizon, else Horizon.
func (m *MDP) steps() int {
	if m.Horizon > 0 {
		return m.Horizon
	}
	return 1
}

// Values holds a value function and the matching action values. For an
// infinite horizon V has S entries and Q has S*A; for a finite horizon T,
// V has (T+1)*S entries (V[t*S+s], with V_T = 0) and Q has T*S*A entries
// (Q[(t*S+s)*A+a]).
type Values struct {
	// NumStates is S.
	NumStates int
	// Steps is 1 for an infinite horizon, else the horizon T.
	Steps int
	// V holds state values.
	V []float64
	// Q holds state–action values.
	Q []float64
	// Iterations is the number of sweeps performed.
	Iterations int
	// Residual is the last sup-norm change (0 for a finite horizon).
	Residual float64
	// Converged reports whether Residual <= Tol (always true for a finite horizon).
	Converged bool
}

// Start returns the values at time 0 (a slice of V of length S).
func (v *Values) Start() []float64 { return v.V[:v.NumStates] }

// Policy is a stochastic policy, stationary (Steps = 1) or time-indexed
// (Steps = T); Prob[(t*S+s)*A+a] = π_t(a|s).
type Policy struct {
	// NumStates and NumActions are S and A of the MDP.
	NumStates, NumActions int
	// Steps is the number of time slices (1 = stationary).
	Steps int
	// Prob holds the action probabilities.
	Prob []float64
}

// At returns π_t(·|s); a stationary policy ignores t.
func (p *Policy) At(t, s int) []float64 {
	if p.Steps <= 1 {
		t = 0
	}
	off := (t*p.NumStates + s) * p.NumActions
	return p.Prob[off : off+p.NumActions]
}

// NewPolicy returns a policy for m (time-indexed when m has a finite
// horizon) that is uniform over actions.
func NewPolicy(m *MDP) *Policy {
	T := m.steps()
	p := &Policy{NumStates: m.NumStates, NumActions: m.NumActions, Steps: T, Prob: make([]float64, T*m.NumPairs())}
	for i := range p.Prob {
		p.Prob[i] = 1 / float64(m.NumActions)
	}
	return p
}

func resize(s []float64, n int) []float64 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]float64, n)
}

func (ws *Workspace) prepValues(dst *Values) (*Values, bool) {
	m := ws.m
	S, T := m.NumStates, m.steps()
	if dst == nil {
		dst = &Values{}
	}
	nv := S
	if m.Horizon > 0 {
		nv = (T + 1) * S
	}
	warm := ws.opts.WarmStart && m.Horizon == 0 && len(dst.V) == S && dst.Steps == 1 && dst.NumStates == S
	dst.V = resize(dst.V, nv)
	dst.Q = resize(dst.Q, T*m.NumPairs())
	dst.Steps, dst.NumStates = T, S
	dst.Iterations, dst.Residual, dst.Converged = 0, 0, false
	return dst, warm
}

func (ws *Workspace) checkReward(reward []float64) {
	if len(reward) != ws.m.NumPairs() {
		panic(fmt.Sprintf("mdp: reward has length %d, want S*A = %d", len(reward), ws.m.NumPairs()))
	}
}

// SoftValueIteration solves the soft Bellman equations for reward (length
// S*A) at temperature tau >= 0 (tau = 0 is the hard max) and returns dst,
// allocated if nil. See the package comment for the equations.
func (ws *Workspace) SoftValueIteration(dst *Values, reward []float64, tau float64) *Values {
	dst = ws.softValueIteration(dst, reward, tau)
	ws.expOut, ws.zOut = nil, nil
	return dst
}

// softValueIteration is SoftValueIteration, leaving the last sweep's
// exponentials in expOut and zOut when it used them: the Newton solver
// (infinite horizon, τ > 0) computes the policy of every sweep's Q for its
// step, and takes those exponentials from the sweep instead of computing
// them a second time (softPolicyRange), as SoftValuesAndPolicy then does
// for the policy it returns.
func (ws *Workspace) softValueIteration(dst *Values, reward []float64, tau float64) *Values {
	ws.checkReward(reward)
	if !(tau >= 0) {
		panic(fmt.Sprintf("mdp: temperature %v is negative", tau))
	}
	dst, warm := ws.prepValues(dst)
	ws.r, ws.tau = reward, tau
	newton := ws.opts.Newton && tau > 0
	if newton && ws.m.Horizon == 0 && !ws.noFuse {
		ws.fuse()
	}
	ws.iterate(dst, warm, ws.softFn, newton)
	ws.r = nil
	return dst
}

// fuse makes softRange store its exponentials and their arguments in
// expOut and zOut, for softPolicyRange.
func (ws *Workspace) fuse() {
	SA := ws.m.NumPairs()
	if len(ws.fuseExp) != 2*SA {
		ws.fuseExp = make([]float64, 2*SA)
	}
	ws.expOut, ws.zOut = ws.fuseExp[:SA], ws.fuseExp[SA:]
}

// ValueIteration solves the Bellman optimality equations for reward (hard
// max) and returns dst, allocated if nil.
func (ws *Workspace) ValueIteration(dst *Values, reward []float64) *Values {
	return ws.SoftValueIteration(dst, reward, 0)
}

// PolicyEvaluation computes V^π and Q^π for reward and pi and returns dst,
// allocated if nil. pi must be time-indexed with Horizon steps when the
// horizon is finite (a stationary policy is also accepted).
func (ws *Workspace) PolicyEvaluation(dst *Values, reward []float64, pi *Policy) *Values {
	ws.checkReward(reward)
	ws.checkPolicy(pi)
	dst, warm := ws.prepValues(dst)
	ws.r, ws.pi = reward, pi
	ws.iterate(dst, warm, ws.evalFn, false)
	ws.r, ws.pi = nil, nil
	return dst
}

func (ws *Workspace) checkPolicy(pi *Policy) {
	m := ws.m
	if pi.NumStates != m.NumStates || pi.NumActions != m.NumActions || pi.Steps < 1 ||
		(pi.Steps > 1 && pi.Steps != m.steps()) || len(pi.Prob) != pi.Steps*m.NumPairs() {
		panic(fmt.Sprintf("mdp: policy shape %dx%d, %d steps, %d entries does not fit MDP %dx%d horizon %d",
			pi.NumStates, pi.NumActions, pi.Steps, len(pi.Prob), m.NumStates, m.NumActions, m.Horizon))
	}
}

// iterate runs the sweep kernel fn to convergence (infinite horizon) or
// backwards in time (finite horizon). Between sweeps an infinite-horizon
// solve takes a Newton step (newton, soft sweeps only) or a fixed-point
// step with optional Anderson acceleration.
func (ws *Workspace) iterate(dst *Values, warm bool, fn rangeFn, newton bool) {
	m := ws.m
	S, SA := m.NumStates, m.NumPairs()
	if m.Horizon > 0 {
		T := m.Horizon
		clear(dst.V[T*S:])
		for t := T - 1; t >= 0; t-- {
			ws.t = t
			ws.vIn = dst.V[(t+1)*S : (t+2)*S]
			ws.vOut = dst.V[t*S : (t+1)*S]
			ws.qOut = dst.Q[t*SA : (t+1)*SA]
			ws.pool.run(fn, ws.bounds)
			if ws.polTarget != nil { // SoftValuesAndPolicy: step t's policy while its Q is in cache
				ws.pool.run(ws.softPolFn, ws.bounds)
			}
		}
		dst.Iterations, dst.Converged = T, true
		ws.vIn, ws.vOut, ws.qOut = nil, nil, nil
		return
	}
	ws.t = 0
	if !warm {
		clear(dst.V)
	}
	x, gx := dst.V, ws.vTmp
	ws.qOut = dst.Q
	var guard safeguard
	if !newton {
		guard = newSafeguard(ws.accelerator(&ws.accelV))
	} else {
		nt := ws.newton()
		nt.prevRes = 0
	}
	for it := 1; it <= ws.opts.MaxIter; it++ {
		ws.vIn, ws.vOut = x, gx
		ws.pool.run(fn, ws.bounds)
		dst.Iterations = it
		dst.Residual = ws.maxPartial()
		if dst.Residual <= ws.opts.Tol {
			dst.Converged = true
			break
		}
		if newton {
			ws.newtonValueStep(dst, x, gx)
		} else {
			guard.step(x, gx, dst.Residual)
		}
	}
	// V = T(x) is the value matching Q, which the last sweep computed from x.
	copy(dst.V, gx)
	ws.vIn, ws.vOut, ws.qOut = nil, nil, nil
}

// accelerator returns *ac, allocating it on first use (nil when Anderson acceleration is off).
func (ws *Workspace) accelerator(ac **anderson) *anderson {
	if *ac == nil && ws.opts.Anderson > 0 {
		*ac = newAnderson(ws.opts.Anderson, ws.m.NumStates, ws.pool, ws.bounds)
	}
	return *ac
}

// safeguard advances a fixed-point iteration with optional Anderson
// acceleration, restarting the acceleration when the residual grows tenfold
// over the best seen (or is not finite).
type safeguard struct {
	ac   *anderson
	best float64
}

func newSafeguard(ac *anderson) safeguard {
	if ac != nil {
		ac.reset()
	}
	return safeguard{ac: ac, best: math.Inf(1)}
}

// step overwrites x with the next iterate given g = G(x) and its residual ‖g − x‖∞.
func (sg *safeguard) step(x, g []float64, residual float64) {
	if sg.ac == nil || math.IsNaN(residual) || math.IsInf(residual, 0) {
		copy(x, g)
		return
	}
	if residual > 10*sg.best {
		sg.ac.reset()
	}
	sg.best = min(sg.best, residual)
	sg.ac.next(x, g)
}

// backup returns r(k) + γ Σ P V over the successors of pair k.
func (ws *Workspace) backup(k int) float64 {
	m := ws.m
	return ws.r[k] + m.Gamma*dotSucc(m.RowPtr[k], m.RowPtr[k+1], m.Next, m.Prob, ws.vIn)
}

// dotSucc returns Σ_{i∈[lo,hi)} prob[i]·v[next[i]].
func dotSucc(lo, hi int, next []int32, prob, v []float64) float64 {
	next, prob = next[lo:hi], prob[lo:hi:hi]
	prob = prob[:len(next)]
	acc := 0.0
	for i, n := range next {
		acc += prob[i] * v[n]
	}
	return acc
}

// expNegligible bounds the exponents that can change a log-sum-exp: the
// largest term contributes exp(0) = 1, and terms below exp(-50) ≈ 2e-22 are
// far under half an ulp of 1 even summed over 10⁵ actions, so skipping their
// math.Exp calls leaves the result unchanged while saving most of the cost
// at small τ.
const expNegligible = -50

// expUnderflow is the argument below which math.Exp returns 0.
const expUnderflow = -746

func (ws *Workspace) softRange(w, lo, hi int) {
	m := ws.m
	A := m.NumActions
	tau, invTau := ws.tau, 0.0
	if tau > 0 {
		invTau = 1 / tau
	}
	rowPtr, next, prob, vIn, r, g := m.RowPtr, m.Next, m.Prob, ws.vIn, ws.r, m.Gamma
	diff := 0.0
	for s := lo; s < hi; s++ {
		q := ws.qOut[s*A : (s+1)*A]
		if m.IsTerminal(s) {
			clear(q)
			diff = max(diff, math.Abs(vIn[s]))
			ws.vOut[s] = 0
			continue
		}
		mx := math.Inf(-1)
		k0 := s * A
		i := rowPtr[k0]
		for a := range q {
			end := rowPtr[k0+a+1]
			acc := 0.0
			for ; i < end; i++ {
				acc += prob[i] * vIn[next[i]]
			}
			qa := r[k0+a] + g*acc
			q[a] = qa
			if qa > mx {
				mx = qa
			}
		}
		v := mx
		if tau > 0 {
			sum := 0.0
			var es, zs []float64 // SoftValuesAndPolicy's
			if ws.expOut != nil {
				es, zs = ws.expOut[k0:k0+A], ws.zOut[k0:k0+A]
			}
			for a, qa := range q {
				if zs != nil {
					zs[a] = math.NaN()
				}
				if z := (qa - mx) * invTau; z > expNegligible {
					e := 1.0 // math.Exp(0) exactly: the maximum's term
					if z != 0 {
						e = math.Exp(z)
					}
					sum += e
					if zs != nil {
						es[a], zs[a] = e, z
					}
				}
			}
			if sum != 1 { // sum is exactly 1 when only the maximum contributes: log 1 = 0
				v = mx + tau*math.Log(sum)
			}
		}
		if d := math.Abs(v - vIn[s]); d > diff || d != d {
			diff = d
		}
		ws.vOut[s] = v
	}
	ws.partial[w*8] = diff
}

func (ws *Workspace) evalRange(w, lo, hi int) {
	m := ws.m
	A := m.NumActions
	diff := 0.0
	for s := lo; s < hi; s++ {
		q := ws.qOut[s*A : (s+1)*A]
		if m.IsTerminal(s) {
			clear(q)
			diff = max(diff, math.Abs(ws.vIn[s]))
			ws.vOut[s] = 0
			continue
		}
		p := ws.pi.At(ws.t, s)
		v := 0.0
		for a := range q {
			q[a] = ws.backup(s*A + a)
			v += p[a] * q[a]
		}
		diff = max(diff, math.Abs(v-ws.vIn[s]))
		ws.vOut[s] = v
	}
	ws.partial[w*8] = diff
}

// SoftValuesAndPolicy returns SoftValueIteration(dst, reward, tau) and
// SoftPolicy(pol, ·, tau), bit for bit. For a finite horizon it computes
// each step's policy right after that step's values, reusing the value
// sweep's exponentials wherever the policy's exponent is the same number
// (always at τ = 1), so the policy costs no second pass over Q and few
// exponentials: on LunarLander's lander lattice (horizon 125, 140,625
// pairs) SoftPolicy was 12 % of a local fit. For an infinite horizon
// with Options.Newton it reuses the last sweep's exponentials the same way.
func (ws *Workspace) SoftValuesAndPolicy(dst *Values, pol *Policy, reward []float64, tau float64) (*Values, *Policy) {
	m := ws.m
	if m.Horizon == 0 || !(tau > 0) {
		dst = ws.softValueIteration(dst, reward, tau)
		pol = ws.SoftPolicy(pol, dst, tau)
		ws.expOut, ws.zOut = nil, nil
		return dst, pol
	}
	ws.checkReward(reward)
	dst, _ = ws.prepValues(dst)
	pol = ws.prepPolicy(pol)
	ws.r, ws.tau = reward, tau
	ws.fuse()
	ws.polTarget, ws.polValues = pol, dst
	ws.iterate(dst, false, ws.softFn, false)
	ws.r, ws.expOut, ws.zOut, ws.polTarget, ws.polValues = nil, nil, nil, nil, nil
	return dst, pol
}

// SoftPolicy returns in dst (allocated if nil) the soft-optimal policy
// π(a|s) = exp((Q(s,a) − V(s))/τ) for values v computed by
// SoftValueIteration at the same tau. With tau = 0 it is the greedy policy
// (ties go to the lowest action). Terminal states get the uniform policy.
func (ws *Workspace) SoftPolicy(dst *Policy, v *Values, tau float64) *Policy {
	m := ws.m
	T := m.steps()
	if v.Steps != T || len(v.Q) != T*m.NumPairs() {
		panic("mdp: values do not fit the MDP")
	}
	dst = ws.prepPolicy(dst)
	ws.polTarget, ws.polValues, ws.tau = dst, v, tau
	for t := 0; t < T; t++ {
		ws.t = t
		ws.pool.run(ws.softPolFn, ws.bounds)
	}
	ws.polTarget, ws.polValues = nil, nil
	return dst
}

// prepPolicy returns dst (allocated if nil) shaped for a soft policy of
// the workspace's MDP: one row of action probabilities per step and state.
func (ws *Workspace) prepPolicy(dst *Policy) *Policy {
	m := ws.m
	if dst == nil {
		dst = &Policy{}
	}
	T := m.steps()
	dst.NumStates, dst.NumActions, dst.Steps = m.NumStates, m.NumActions, T
	dst.Prob = resize(dst.Prob, T*m.NumPairs())
	return dst
}

func (ws *Workspace) softPolicyRange(_, lo, hi int) {
	m := ws.m
	S, A := m.NumStates, m.NumActions
	t, tau := ws.t, ws.tau
	for s := lo; s < hi; s++ {
		off := (t*S + s) * A
		q := ws.polValues.Q[off : off+A]
		p := ws.polTarget.Prob[off : off+A]
		if m.IsTerminal(s) {
			for a := range p {
				p[a] = 1 / float64(A)
			}
			continue
		}
		if tau == 0 {
			best := 0
			for a := range q {
				if q[a] > q[best] {
					best = a
				}
			}
			clear(p)
			p[best] = 1
			continue
		}
		mx := math.Inf(-1)
		for _, qa := range q {
			mx = max(mx, qa)
		}
		sum := 0.0
		var es, zs []float64 // the value sweep's exponentials (SoftValuesAndPolicy)
		if ws.expOut != nil {
			es, zs = ws.expOut[s*A:(s+1)*A], ws.zOut[s*A:(s+1)*A]
		}
		for a, qa := range q {
			p[a] = 0
			if z := (qa - mx) / tau; z > expUnderflow {
				switch {
				case zs != nil && zs[a] == z:
					p[a] = es[a]
				case z == 0:
					p[a] = 1 // math.Exp(0) exactly
				default:
					p[a] = math.Exp(z)
				}
			}
			sum += p[a]
		}
		for a := range p {
			p[a] /= sum
		}
	}
}

// Visits returns in dst (length S*A, allocated if nil) the discounted
// expected visit counts d(s,a) = Σ_t γ^t P(s_t=s, a_t=a) of pi from the
// initial distribution init (nil means m.Init). Terminal states get no
// visits. The discounted return of pi for a reward r is ⟨d, r⟩.
func (ws *Workspace) Visits(dst []float64, pi *Policy, init []float64) []float64 {
	m := ws.m
	S, SA := m.NumStates, m.NumPairs()
	ws.checkPolicy(pi)
	if init == nil {
		init = m.Init
	}
	if len(init) != S {
		panic(fmt.Sprintf("mdp: init has length %d, want %d", len(init), S))
	}
	dst = resize(dst, SA)
	ws.pi = pi
	defer func() { ws.pi, ws.base, ws.xIn, ws.xOut, ws.yIn, ws.yOut = nil, nil, nil, nil, nil, nil }()
	if m.Horizon > 0 {
		clear(dst)
		copy(ws.x, init)
		for t := 0; t < m.Horizon; t++ {
			ws.t = t
			ws.xIn, ws.yOut = ws.x, ws.y
			ws.pool.run(ws.pushFn, ws.bounds)
			for k, yk := range ws.y {
				dst[k] += yk
			}
			if t+1 < m.Horizon {
				ws.base, ws.yIn, ws.xOut = nil, ws.y, ws.xNew
				ws.pool.run(ws.pullFn, ws.bounds)
				ws.x, ws.xNew = ws.xNew, ws.x
			}
		}
		ws.xWarm, ws.xIters = false, m.Horizon
		return dst
	}
	ws.t = 0
	if !(ws.opts.WarmStart && ws.xWarm) {
		copy(ws.x, init)
	}
	ws.base = init
	var guard safeguard
	if ws.opts.Newton {
		ws.newton().atFresh = false // factored at the first Newton step, if one is needed
	} else {
		guard = newSafeguard(ws.accelerator(&ws.accelX))
	}
	for it := 1; it <= ws.opts.MaxIter; it++ {
		ws.xIters = it
		if res := ws.propagate(dst); res <= ws.opts.Tol {
			ws.x, ws.xNew = ws.xNew, ws.x
			break
		} else if ws.opts.Newton {
			ws.newtonVisitStep(res)
		} else {
			guard.step(ws.x, ws.xNew, res)
		}
	}
	ws.xIn, ws.yOut = ws.x, dst
	ws.pool.run(ws.pushFn, ws.bounds)
	ws.xWarm = true
	return dst
}

// propagate sets xNew = base + γ P_πᵀ x, using y as scratch for the
// state–action visits, and returns ‖xNew − x‖∞.
func (ws *Workspace) propagate(y []float64) float64 {
	ws.xIn, ws.yOut = ws.x, y
	ws.pool.run(ws.pushFn, ws.bounds)
	ws.yIn, ws.xOut = y, ws.xNew
	ws.pool.run(ws.pullFn, ws.bounds)
	return ws.maxPartial()
}

// pushRange sets yOut(s,a) = xIn(s)·π_t(a|s) (0 at terminal states).
func (ws *Workspace) pushRange(_, lo, hi int) {
	m := ws.m
	A := m.NumActions
	for s := lo; s < hi; s++ {
		y := ws.yOut[s*A : (s+1)*A]
		if m.IsTerminal(s) {
			clear(y)
			continue
		}
		p := ws.pi.At(ws.t, s)
		xs := ws.xIn[s]
		for a := range y {
			y[a] = xs * p[a]
		}
	}
}

// pullRange sets xOut(s2) = base(s2) + γ Σ_{(s,a)→s2} P(s2|s,a)·yIn(s,a).
func (ws *Workspace) pullRange(w, lo, hi int) {
	g := ws.m.Gamma
	diff := 0.0
	for s2 := lo; s2 < hi; s2++ {
		acc := 0.0
		i0, i1 := ws.inPtr[s2], ws.inPtr[s2+1]
		pairs, probs := ws.inPair[i0:i1], ws.inProb[i0:i1]
		for i, k := range pairs {
			acc += probs[i] * ws.yIn[k]
		}
		v := g * acc
		if ws.base != nil {
			v += ws.base[s2]
		}
		diff = max(diff, math.Abs(v-ws.xIn[s2]))
		ws.xOut[s2] = v
	}
	ws.partial[w*8] = diff
}

// Occupancy returns in dst (allocated if nil) the normalized discounted
// state–action occupancy ρ^π = d/Σd of pi from m.Init, where d is Visits.
// It sums to 1 and, with an infinite horizon and no reachable terminal
// state, equals (1−γ)Σ_t γ^t P(s_t=s, a_t=a) (Theorem 2 of the paper).
func (ws *Workspace) Occupancy(dst []float64, pi *Policy) []float64 {
	dst = ws.Visits(dst, pi, nil)
	sum := 0.0
	for _, v := range dst {
		sum += v
	}
	if sum > 0 {
		for i := range dst {
			dst[i] /= sum
		}
	}
	return dst
}

// Return returns the expected discounted return ⟨d, r⟩ of pi from m.Init
// for reward r (length S*A), using the workspace's scratch visit vector.
func (ws *Workspace) Return(pi *Policy, reward []float64) float64 {
	ws.checkReward(reward)
	ws.d = ws.Visits(ws.d, pi, nil)
	return floats.Dot(ws.d, reward)
}

// Greedy writes into dst (allocated when nil or of the wrong length) the
// greedy action argmax_a q[s·A + a] of every state of a stationary
// state–action value table q (Values.Q of an infinite-horizon solve), ties
// going to the lowest action index, and returns it.
func Greedy(dst []int, q []float64, numActions int) []int {
	A := numActions
	S := len(q) / A
	if len(dst) != S {
		dst = make([]int, S)
	}
	for s := range S {
		qs := q[s*A : s*A+A]
		best := 0
		for a := 1; a < A; a++ {
			if qs[a] > qs[best] {
				best = a
			}
		}
		dst[s] = best
	}
	return dst
}

// DeterministicPolicy returns the stationary policy of m that takes
// actions[s] in state s.
func DeterministicPolicy(m *MDP, actions []int) *Policy {
	if len(actions) != m.NumStates {
		panic("mdp: DeterministicPolicy: one action per state needed")
	}
	pi := &Policy{NumStates: m.NumStates, NumActions: m.NumActions, Steps: 1, Prob: make([]float64, m.NumPairs())}
	for s, a := range actions {
		pi.Prob[s*m.NumActions+a] = 1
	}
	return pi
}

// SetTol changes Options.Tol for the solves that follow; it panics unless
// tol > 0. An outer optimizer uses it to solve loosely while it is far
// from its own optimum (inexact Newton) and tightly at the end.
func (ws *Workspace) SetTol(tol float64) {
	if !(tol > 0) {
		panic(fmt.Sprintf("mdp: SetTol(%v), want > 0", tol))
	}
	ws.opts.Tol = tol
}
