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
// (one linear system per feature, the size of the visits' solve), warm
// started from the previous call's ψ.

// hessianRtol is the relative residual of the column solves. The Hessian
// only steers Newton's steps (convergence is judged on the gradient): a
// relative error ε in it makes a step contract the gradient by about ε
// instead of quadratically, so 10⁻³ costs at most a step, while near the
// optimum the warm-started columns often need no product at all.
const hessianRtol = 1e-3

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
			w := m.Gamma * m.Prob[i]
			pn := psi[int(m.Next[i])*d : int(m.Next[i]+1)*d]
			for j, v := range pn {
				fa[j] += w * v
			}
		}
	}
	return f
}

// stationaryCov adds Σ_{s,a} d(s,a)(F − ψ)(F − ψ)ᵀ to acc for the
// infinite-horizon ψ in o.psi and the pair visits d of the last Eval.
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
	for t := T - 1; t >= 0; t-- {
		for s := range S {
			ps := cur[s*d : (s+1)*d]
			clear(ps)
			xs := x[t*S+s]
			if m.IsTerminal(s) || xs == 0 {
				// An unvisited state's ψ_t enters no visited pair's F_{t−1}
				// with a nonzero weight: every successor of a pair taken
				// with probability π > 0 from a visited state is visited.
				continue
			}
			f := o.qFeatures(o.frow, s, next)
			p := o.pol.At(t, s)
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
