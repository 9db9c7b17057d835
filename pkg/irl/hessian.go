package irl

import (
	"math"

	"gonum.org/v1/gonum/floats"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// The Hessian of the MaxEnt objective.
//
// Differentiating the soft Bellman equations in θ gives the discounted
// expected feature sums of the soft-optimal policy,
//
//	ψ(s) = ∂V_θ(s)/∂θ = Σ_a π(a|s) F(s,a),   F(s,a) = ∂Q_θ(s,a)/∂θ = φ(s,a) + γ Σ_s' P(s'|s,a) ψ(s'),
//
// (time-indexed for a finite horizon, ψ_T = 0), and, because
// ∂π(a|s)/∂θ = π(a|s)(F(s,a) − ψ(s))/τ,
//
//	∇²E_{s0}[V_θ(s0)] = (1/τ) Σ_t Σ_s x_t(s) Cov_{a∼π_t(·|s)}[F_t(s,a)],
//
// with x_t(s) = γ^t P(s_t = s) the discounted state visits from the
// initial distribution. The objective's Hessian is minus that, minus λI:
// negative definite for λ > 0, so the objective is strictly concave.
// For an infinite horizon the columns of ψ are d policy evaluations with
// the features as rewards, solved together by mdp.Workspace.EvaluateColumns
// (one linear system per feature, the size of the visits' solve; at the
// fit's relative residuals, 10⁻² to 10⁻¹, in float32 blocks of 16
// columns), warm started from the previous call's ψ.

// hessianRtol is the relative residual of the column solves. The Hessian
// only steers Newton's steps (convergence is judged on the gradient): a
// relative error ε in it makes a step contract the gradient by about ε
// instead of quadratically, so 10⁻³ costs at most a step, while near the
// optimum the warm-started columns often need no product at all.
const hessianRtol = 1e-3

// hessianRowDrop is the relative visit weight below which a finite
// horizon's Hessian leaves a state's rows out: at step t, a state with
// x_t(s) < hessianRowDrop·max_s' x_t(s') adds nothing to the covariance
// (its ψ_t is still computed, from its merged successor row, for its
// predecessors). Dropping rows only removes covariance, by at most
// x_t(s)·max_a‖F_t(s,a) − ψ_t(s)‖²/τ per state. Most visited (t, s) carry
// almost no weight: on LunarLander's lander lattice at θ = 0, 82 % of the
// 1.5 million visited (t, s) hold 10⁻⁸ of the visits' mass; dropping
// below 10⁻⁸ of each step's largest moves that Hessian by 1.1·10⁻⁵ of its
// norm and takes it from 16.9 to 3.6 s (with the merged rows; 10⁻¹⁰: 10⁻⁷
// and 5.0 s), and the fit takes the same Newton iterates. The Hessian only
// steers Newton's steps; convergence is judged on the gradient
// (TestFiniteHorizonHessianRowDrop).
const hessianRowDrop = 1e-8

// hessianChunk is the number of rows of scaled F − ψ gathered before one
// rank-k update of the Hessian.
const hessianChunk = 256

// HessianStats describes one Hessian evaluation.
type HessianStats struct {
	// MatVecs counts the products with I − γP_π of the column solves (0 for a finite horizon).
	MatVecs int
	// Residual is the largest relative residual of the column solves (0 for a finite horizon).
	Residual float64
}

// Hessian returns in h (d×d, allocated if nil or of the wrong size) the
// Hessian of the objective at the θ of the last Eval, which must have been
// called first. rtol is the relative residual of the column solves of an
// infinite horizon (≤ 0: 10⁻³).
func (o *Objective) Hessian(h *mat.SymDense, rtol float64) (*mat.SymDense, HessianStats) {
	if o.pol == nil {
		panic("irl: Hessian before Eval")
	}
	d := o.d
	if h == nil || h.SymmetricDim() != d {
		h = mat.NewSymDense(d, nil)
	}
	m := o.m
	S := m.NumStates
	if o.phiRows == nil {
		raw := o.phi.RawMatrix()
		if raw.Stride == raw.Cols {
			o.phiRows = raw.Data[:raw.Rows*raw.Cols]
		} else {
			o.phiRows = make([]float64, raw.Rows*raw.Cols)
			for k := range raw.Rows {
				copy(o.phiRows[k*d:(k+1)*d], raw.Data[k*raw.Stride:k*raw.Stride+raw.Cols])
			}
		}
		o.psi = make([]float64, S*d)
		if m.Horizon > 0 {
			o.psiNext = make([]float64, S*d)
		}
		o.hrows = make([]float64, hessianChunk*d)
		o.frow = make([]float64, m.NumActions*d)
	}
	acc := blas64.Symmetric{Uplo: blas.Upper, N: d, Stride: d, Data: make([]float64, d*d)}
	if len(o.hacc) == d*d {
		acc.Data = o.hacc
		clear(acc.Data)
	} else {
		o.hacc = acc.Data
	}
	var st HessianStats
	if m.Horizon > 0 {
		o.finiteHorizonCov(acc)
	} else {
		if rtol <= 0 {
			rtol = hessianRtol
		}
		cs := o.ws.EvaluateColumns(o.psi, o.phiRows, d, o.pol, rtol, o.psiWarm)
		o.psiWarm = true
		st = HessianStats{MatVecs: cs.MatVecs, Residual: cs.Residual}
		o.stationaryCov(acc)
	}
	for i := range d {
		for j := i; j < d; j++ {
			v := -acc.Data[i*d+j] / o.tau
			if i == j {
				v -= o.l2
			}
			h.SetSym(i, j, v)
		}
	}
	return h, st
}

// covAccumulator gathers rows √w·(F − ψ) and adds their outer products to acc.
type covAccumulator struct {
	acc  blas64.Symmetric
	rows []float64
	n, d int
}

// add appends √w·(f − psi) as a row.
func (c *covAccumulator) add(w float64, f, psi []float64) {
	r := c.rows[c.n*c.d : (c.n+1)*c.d]
	sw := math.Sqrt(w)
	for j := range r {
		r[j] = sw * (f[j] - psi[j])
	}
	c.n++
	if c.n*c.d == len(c.rows) {
		c.flush()
	}
}

func (c *covAccumulator) flush() {
	if c.n == 0 {
		return
	}
	g := blas64.General{Rows: c.n, Cols: c.d, Stride: c.d, Data: c.rows[:c.n*c.d]}
	blas64.Syrk(blas.Trans, 1, g, 1, c.acc)
	c.n = 0
}

// qFeatures sets f (A×d) to F(s,·) = φ(s,·) + γ P ψ for state s and returns it.
func (o *Objective) qFeatures(f []float64, s int, psi []float64) []float64 {
	m, d := o.m, o.d
	A := m.NumActions
	for a := range A {
		k := s*A + a
		fa := f[a*d : (a+1)*d]
		copy(fa, o.phiRows[k*d:(k+1)*d])
		for i := m.RowPtr[k]; i < m.RowPtr[k+1]; i++ {
			floats.AddScaled(fa, m.Gamma*m.Prob[i], psi[int(m.Next[i])*d:int(m.Next[i]+1)*d])
		}
	}
	return f
}

// mergedRow is one state's successor distribution under a policy, the
// transitions of all its actions summed per successor.
type mergedRow struct {
	pos  []int32 // per state: its index in next, −1 when absent
	next []int32
	w    []float64
}

func (r *mergedRow) init(S int) {
	if len(r.pos) == S {
		return
	}
	r.pos = make([]int32, S)
	for i := range r.pos {
		r.pos[i] = -1
	}
}

// meanFeatures sets ps (length d) to ψ(s) = Σ_a π(a|s)φ(s,a) + γ Σ_s'
// P_π(s'|s) ψ'(s') for the action probabilities p of state s and the
// successor values psi of ψ', summing each successor's weight over the
// actions first: on the replay lattices many actions reach the same
// cells, so this reads fewer rows of ψ' than Σ_a π(a|s)F(s,a).
func (o *Objective) meanFeatures(ps []float64, s int, p, psi []float64) {
	m, d, r := o.m, o.d, &o.merge
	A := m.NumActions
	r.next, r.w = r.next[:0], r.w[:0]
	for a, pa := range p {
		if pa == 0 {
			continue
		}
		k := s*A + a
		floats.AddScaled(ps, pa, o.phiRows[k*d:(k+1)*d])
		for i := m.RowPtr[k]; i < m.RowPtr[k+1]; i++ {
			j := m.Next[i]
			if q := r.pos[j]; q >= 0 {
				r.w[q] += pa * m.Prob[i]
				continue
			}
			r.pos[j] = int32(len(r.next))
			r.next = append(r.next, j)
			r.w = append(r.w, pa*m.Prob[i])
		}
	}
	for q, j := range r.next {
		r.pos[j] = -1
		floats.AddScaled(ps, m.Gamma*r.w[q], psi[int(j)*d:int(j+1)*d])
	}
}

// stationaryCov adds Σ_{s,a} d(s,a)(F − ψ)(F − ψ)ᵀ to acc for the
// infinite-horizon ψ in o.psi and the pair visits d of the last Eval
// (with two actions, one row per state: the same sum with ψ(s) the
// policy's mean of F(s,·), which ψ is up to the column solves' residual).
func (o *Objective) stationaryCov(acc blas64.Symmetric) {
	m, d := o.m, o.d
	A := m.NumActions
	c := covAccumulator{acc: acc, rows: o.hrows, d: d}
	for s := range m.NumStates {
		if m.IsTerminal(s) {
			continue
		}
		vis := o.visits[s*A : (s+1)*A]
		visited := false
		for _, w := range vis {
			visited = visited || w > 0
		}
		if !visited {
			continue
		}
		f := o.qFeatures(o.frow, s, o.psi)
		if A == 2 {
			// Two actions' covariance is one outer product,
			// π₀π₁(F₀ − F₁)(F₀ − F₁)ᵀ, of weight x·π₀π₁ = w₀w₁/(w₀ + w₁):
			// half the rows.
			if w := vis[0] * vis[1] / (vis[0] + vis[1]); w > 0 {
				c.add(w, f[:d], f[d:2*d])
			}
			continue
		}
		ps := o.psi[s*d : (s+1)*d]
		for a, w := range vis {
			if w > 0 {
				c.add(w, f[a*d:(a+1)*d], ps)
			}
		}
	}
	c.flush()
}

// finiteHorizonCov adds Σ_t Σ_{s,a} x_t(s)π_t(a|s)(F_t − ψ_t)(F_t − ψ_t)ᵀ
// to acc, computing ψ_t backwards from ψ_T = 0 after the discounted state
// visits x_t forwards from the initial distribution.
func (o *Objective) finiteHorizonCov(acc blas64.Symmetric) {
	m, d := o.m, o.d
	S, A, T := m.NumStates, m.NumActions, m.Horizon
	if len(o.xt) != T*S {
		o.xt = make([]float64, T*S)
	}
	x := o.xt
	copy(x[:S], o.init)
	for t := 0; t+1 < T; t++ {
		cur, nxt := x[t*S:(t+1)*S], x[(t+1)*S:(t+2)*S]
		clear(nxt)
		for s, xs := range cur {
			if xs == 0 || m.IsTerminal(s) {
				continue
			}
			p := o.pol.At(t, s)
			for a, pa := range p {
				k := s*A + a
				w := m.Gamma * xs * pa
				for i := m.RowPtr[k]; i < m.RowPtr[k+1]; i++ {
					nxt[m.Next[i]] += w * m.Prob[i]
				}
			}
		}
	}
	c := covAccumulator{acc: acc, rows: o.hrows, d: d}
	next, cur := o.psiNext, o.psi
	clear(next)
	o.merge.init(S)
	for t := T - 1; t >= 0; t-- {
		xt := x[t*S : (t+1)*S]
		cut := o.rowDrop * floats.Max(xt)
		for s := range S {
			ps := cur[s*d : (s+1)*d]
			clear(ps)
			xs := xt[s]
			if m.IsTerminal(s) || xs == 0 {
				// An unvisited state's ψ_t enters no visited pair's F_{t−1}
				// with a nonzero weight: every successor of a pair taken
				// with probability π > 0 from a visited state is visited.
				continue
			}
			p := o.pol.At(t, s)
			if xs < cut {
				o.meanFeatures(ps, s, p, next)
				continue
			}
			f := o.qFeatures(o.frow, s, next)
			for a, pa := range p {
				fa := f[a*d : (a+1)*d]
				for j, v := range fa {
					ps[j] += pa * v
				}
			}
			for a, pa := range p {
				if w := xs * pa; w > 0 {
					c.add(w, f[a*d:(a+1)*d], ps)
				}
			}
		}
		next, cur = cur, next
	}
	c.flush()
	// ψ_0 is in next after the last swap; keep it in o.psi.
	if &next[0] != &o.psi[0] {
		o.psi, o.psiNext = o.psiNext, o.psi
	}
}

// StartFeatures returns Σ_s init(s)ψ(s) for the ψ of the last Hessian
// call, which equals ExpectedFeatures up to the solves' tolerance (a check
// of the two computations against each other).
func (o *Objective) StartFeatures() []float64 {
	d := o.d
	out := make([]float64, d)
	for s, w := range o.init {
		if w == 0 {
			continue
		}
		for j := range d {
			out[j] += w * o.psi[s*d+j]
		}
	}
	return out
}

// keep saves the last Eval's policy and visits, the Hessian's inputs, and
// restore brings them back after Evals at other points, so that Hessian
// is again the Hessian at the kept θ.
func (o *Objective) keep() {
	o.keptPol = append(o.keptPol[:0], o.pol.Prob...)
	o.keptVisits = append(o.keptVisits[:0], o.visits...)
}

func (o *Objective) restore() {
	copy(o.pol.Prob, o.keptPol)
	copy(o.visits, o.keptVisits)
}

// predictValues moves the values of the last Eval, from which a warm-started
// solve starts, to their first-order prediction at theta,
// V(θ) ≈ V(θ_last) + ψ·(θ − θ_last), with the ψ of the last Hessian (an
// infinite horizon only). The solve's stopping rule is unchanged, so this
// changes how many Newton steps it takes, not its result; a ψ from a few
// steps back still predicts better than no change.
func (o *Objective) predictValues(theta []float64) {
	if !o.psiWarm || o.vals == nil || len(o.lastTheta) != o.d || len(o.vals.V) != o.m.NumStates {
		return
	}
	d := o.d
	delta := o.frow[:d] // scratch: the Hessian is not being computed now
	for j := range d {
		delta[j] = theta[j] - o.lastTheta[j]
	}
	v := o.vals.V
	for s := range v {
		v[s] += floats.Dot(o.psi[s*d:(s+1)*d], delta)
	}
}
