package mdp

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
)

// Newton's method for the infinite-horizon soft Bellman equation and a
// Krylov solve for the visits (Options.Newton).
//
// The soft Bellman map T has Jacobian γP_π, with π the soft-optimal policy
// of the current Q, so a Newton step solves (I − γP_π)δ = T(V) − V; with
// an exact solve it is soft policy iteration, V ← V^π. Visits solve the
// linear system (I − γP_πᵀ)x = init. Both systems are solved by GMRES
// preconditioned with ILU(0). The value steps go to an Eisenstat–Walker
// forcing term (loose while the policy still moves, tight once the steps
// converge quadratically: a third fewer products on CartPole's fine
// lattice), and once they converge the policy hardly moves between them,
// so the last ILU(0) factors are kept (staleFactors). The visit steps go
// to a relative residual of newtonEta or, when the sweeps' tolerance
// needs it, tol/‖rhs‖₂: the system is linear, so one step then usually
// ends the solve (on CartPole's fine lattice 10 visit steps of 141
// products in all, where newtonEta alone took 15 of 183). At
// γ = 0.99 and τ = 1e-3 fixed-point sweeps converge like γᵏ whatever the
// acceleration (hundreds to a thousand sweeps on the lattice models of
// Pendulum); the Newton solver takes 10–20 steps of about 8 products each.
//
// Whatever the inexact steps do, the stopping rule and the error bound are
// those of the fixed-point iteration: the Newton steps replace the
// fixed-point steps between the exact sweeps of Workspace.iterate and
// Workspace.Visits, whose sup-norm change is compared with Options.Tol, and
// the result is that sweep's output.

// newtonEta is the relative residual to which each linear system is solved.
// Looser (1e-1 … 1e-3) trades Krylov products for Newton steps at about
// the same cost on the Pendulum models; tighter spends products for nothing.
const newtonEta = 1e-4

// newtonFirstEta is the forcing term of a value solve's first Newton step.
const newtonFirstEta = 1e-2

// staleFactors is the ratio of a value step's right-hand side norm to the
// last step's below which the step keeps the last ILU(0) factors (built
// for the policy of one step back) and only builds its matrix. On
// CartPole's fine lattice that skips 18 of 37 factorizations for 8 more
// products (327 instead of 319); keeping them at every step but a solve's
// first costs 119 more products, as much as the factorizations saved.
const staleFactors = 0.1

// newtonRestart is the GMRES restart length and newtonMaxMatVec caps the
// products of one linear solve.
const newtonRestart, newtonMaxMatVec = 30, 300

// dropPolicy is the action probability below which an action's
// transitions are left out of I − γP_π. At small τ most actions have
// probabilities that underflow or lie far below rounding, and skipping them
// makes the matrix about 2.5 times sparser on the Pendulum models. The
// matrix only steers the steps; convergence is judged by exact sweeps, so
// this changes the speed, not the answer.
const dropPolicy = 1e-16

// newtonState holds the sparse system I − γP_π over states, its
// transpose, their ILU(0) factors and the GMRES buffers.
type newtonState struct {
	// Rows are gathered into capacity storage (room for the diagonal and
	// every transition of the state), in parallel, then packed into a.
	capPtr []int
	capCol []int32
	capVal []float64
	cnt    []int
	dpos   []int32   // per row, the offset of its diagonal
	pos    [][]int32 // per worker, S entries, −1 when unused
	// the rows' patterns when the policy keeps every action of a state,
	// or one (gatherRange)
	byState, byPair *rowTemplates

	a, at *csr
	atOK  bool // ILU(0) of at succeeded
	// atFresh: at and its factors are those of the current Visits call's
	// policy (built at its first Newton step: a warm start that the first
	// sweep finds converged needs none)
	atFresh bool
	// factored: a holds the ILU(0) factors of a value step's matrix (build
	// of a clears it); b receives the matrices that a's factors precondition
	factored bool
	b        *csr
	cur      *csr // the matrix build fills
	// staleSteps counts the value steps that kept the last factors
	staleSteps int
	// the last value step's right-hand side norm (0 before the first step
	// of a solve), for the Eisenstat–Walker forcing
	prevRes    float64
	kr         *gmres
	pol        *Policy
	delta, rhs []float64

	mulC             *csr
	mulY, mulX       []float64
	mulBY, mulBX     []blk
	mul32            *csr32
	mulB32Y, mulB32X []blk32
	// EvaluateColumns' block solvers and their right-hand sides and
	// solutions, float64 and float32 (block32.go), and the float32 copy
	// of a's values and factors
	kb             *blockGMRES[blk]
	colB, colX     []blk
	kb32           *blockGMRES[blk32]
	colB32, colX32 []blk32
	a32            csr32
	// products and preconditioners of a and at, bound once so solves do not allocate
	mulA, mulAt, mulB func(y, x []float64)
	precA, precAt     func(x []float64)
}

func (ws *Workspace) newton() *newtonState {
	if ws.nt != nil {
		return ws.nt
	}
	m := ws.m
	S, A := m.NumStates, m.NumActions
	nt := &newtonState{capPtr: make([]int, S+1), cnt: make([]int, S), dpos: make([]int32, S)}
	for s := 0; s < S; s++ {
		nt.capPtr[s+1] = nt.capPtr[s] + 1
		if !m.IsTerminal(s) {
			nt.capPtr[s+1] += m.RowPtr[(s+1)*A] - m.RowPtr[s*A]
		}
	}
	nnz := nt.capPtr[S]
	nt.capCol, nt.capVal = make([]int32, nnz), make([]float64, nnz)
	for range ws.Workers() {
		p := make([]int32, S)
		for i := range p {
			p[i] = -1
		}
		nt.pos = append(nt.pos, p)
	}
	nt.byState, nt.byPair = newRowTemplates(m, false, nt.pos[0]), newRowTemplates(m, true, nt.pos[0])
	nt.a, nt.at, nt.b = newCSR(S, nnz), newCSR(S, nnz), newMatrixCSR(S, nnz)
	nt.kr = newGMRES(newtonRestart, S)
	nt.pol = &Policy{NumStates: S, NumActions: A, Steps: 1, Prob: make([]float64, S*A)}
	nt.delta, nt.rhs = make([]float64, S), make([]float64, S)
	ws.nt = nt
	ws.gatherFn, ws.packFn, ws.mulFn, ws.mulBlockFn, ws.mulBlock32Fn = ws.gatherRange, ws.packRange, ws.mulRange, ws.mulBlockRange, ws.mulBlock32Range
	nt.mulA, nt.mulAt, nt.mulB = ws.mulBy(nt.a), ws.mulBy(nt.at), ws.mulBy(nt.b)
	nt.precA, nt.precAt = nt.a.precond, nt.at.precond
	return nt
}

// gatherRange writes rows [lo,hi) of I − γP_π for ws.pi into capacity
// storage, columns sorted, their lengths into cnt and the diagonal's
// offsets into dpos. A state whose policy keeps every action, or exactly
// one, takes its row's pattern from a template (rowTemplates) and only
// scatters its transitions into it; any other subset of actions is
// merged on the spot (gatherMerge). Each entry sums its transitions in
// storage order either way, so the matrix is the same bit for bit
// (TestGatherTemplatesMatchMerge) and does not depend on the number of
// goroutines.
func (ws *Workspace) gatherRange(w, lo, hi int) {
	m, nt := ws.m, ws.nt
	A := m.NumActions
	rowPtr, prob, g := m.RowPtr, m.Prob, m.Gamma
	for s := lo; s < hi; s++ {
		base := nt.capPtr[s]
		if m.IsTerminal(s) {
			nt.capCol[base], nt.capVal[base] = int32(s), 1
			nt.cnt[s], nt.dpos[s] = 1, 0
			continue
		}
		p := ws.pi.At(0, s)
		kept, last := 0, 0
		for a, pa := range p {
			if pa >= dropPolicy {
				kept, last = kept+1, a
			}
		}
		var t *rowTemplates
		l := s
		switch {
		case kept == A:
			t = nt.byState
		case kept == 1:
			t, l = nt.byPair, s*A+last
		default:
			ws.gatherMerge(w, s)
			continue
		}
		tc := t.col[t.ptr[l]:t.ptr[l+1]]
		n := len(tc)
		cols, vals := nt.capCol[base:base+n], nt.capVal[base:base+n]
		copy(cols, tc)
		clear(vals)
		d := t.diag[l]
		vals[d] = 1
		off := t.off
		for a, pa := range p {
			if !(pa >= dropPolicy) {
				continue
			}
			wgt := g * pa
			k := s*A + a
			for i := rowPtr[k]; i < rowPtr[k+1]; i++ {
				vals[off[i]] -= wgt * prob[i]
			}
		}
		nt.cnt[s], nt.dpos[s] = n, d
	}
}

// gatherMerge writes row s of I − γP_π for ws.pi into capacity storage
// by merging the successors of the actions kept on the spot (pos marks
// the columns already present), then sorting them by column.
func (ws *Workspace) gatherMerge(w, s int) {
	m, nt := ws.m, ws.nt
	A := m.NumActions
	pos := nt.pos[w]
	cols, vals := nt.capCol[nt.capPtr[s]:nt.capPtr[s+1]], nt.capVal[nt.capPtr[s]:nt.capPtr[s+1]]
	cols[0], vals[0], pos[s] = int32(s), 1, 0
	n := 1
	if !m.IsTerminal(s) {
		p := ws.pi.At(0, s)
		for a := 0; a < A; a++ {
			if !(p[a] >= dropPolicy) {
				continue
			}
			wgt := m.Gamma * p[a]
			k := s*A + a
			for i := m.RowPtr[k]; i < m.RowPtr[k+1]; i++ {
				j := m.Next[i]
				if q := pos[j]; q >= 0 {
					vals[q] -= wgt * m.Prob[i]
					continue
				}
				pos[j] = int32(n)
				cols[n], vals[n] = j, -wgt*m.Prob[i]
				n++
			}
		}
	}
	cols, vals = cols[:n], vals[:n]
	for _, j := range cols {
		pos[j] = -1
	}
	for i := 1; i < n; i++ { // insertion sort by column: rows are short
		cj, vj := cols[i], vals[i]
		k := i - 1
		for ; k >= 0 && cols[k] > cj; k-- {
			cols[k+1], vals[k+1] = cols[k], vals[k]
		}
		cols[k+1], vals[k+1] = cj, vj
	}
	nt.cnt[s] = n
	for q, j := range cols {
		if int(j) == s {
			nt.dpos[s] = int32(q)
			break
		}
	}
}

// rowTemplates holds, for lists of a state's actions (all of them, or
// one), the sorted distinct columns of their row of I − γP_π (the state
// itself and every successor) and, for each transition of those actions,
// its offset in that list: building a row is then a scatter.
type rowTemplates struct {
	ptr  []int   // list l spans col[ptr[l]:ptr[l+1]]
	col  []int32 // sorted columns
	diag []int32 // per list, the offset of the diagonal
	off  []int32 // per transition i, its offset in its list
}

// newRowTemplates returns the templates of m with one list per state
// (every action) or, when perPair, one per pair. pos is scratch of length
// S holding −1, left so.
func newRowTemplates(m *MDP, perPair bool, pos []int32) *rowTemplates {
	S, A := m.NumStates, m.NumActions
	nl := S
	if perPair {
		nl = S * A
	}
	t := &rowTemplates{ptr: make([]int, nl+1), diag: make([]int32, nl), off: make([]int32, len(m.Next))}
	var row []int32
	for l := range nl {
		s, k0, k1 := l, l*A, (l+1)*A // list l: state l, every action
		if perPair {
			s, k0, k1 = l/A, l, l+1 // list l: pair l
		}
		lo, hi := m.RowPtr[k0], m.RowPtr[k1]
		if m.IsTerminal(s) {
			lo, hi = 0, 0
		}
		row = append(row[:0], int32(s))
		pos[s] = 0
		for i := lo; i < hi; i++ {
			if j := m.Next[i]; pos[j] < 0 {
				pos[j] = 0
				row = append(row, j)
			}
		}
		slices.Sort(row)
		for q, j := range row {
			pos[j] = int32(q)
		}
		t.diag[l] = pos[s]
		for i := lo; i < hi; i++ {
			t.off[i] = pos[m.Next[i]]
		}
		for _, j := range row {
			pos[j] = -1
		}
		t.col = append(t.col, row...)
		t.ptr[l+1] = len(t.col)
	}
	return t
}

// packRange copies rows [lo,hi) from capacity storage into a.
func (ws *Workspace) packRange(_, lo, hi int) {
	nt := ws.nt
	c := nt.cur
	for s := lo; s < hi; s++ {
		base, n := nt.capPtr[s], nt.cnt[s]
		copy(c.col[c.ptr[s]:c.ptr[s]+n], nt.capCol[base:base+n])
		copy(c.val[c.ptr[s]:c.ptr[s]+n], nt.capVal[base:base+n])
		c.diag[s] = c.ptr[s] + int(nt.dpos[s])
	}
}

// build sets c (nt.a or nt.b) to I − γP_π for ws.pi.
func (ws *Workspace) build(c *csr) {
	nt := ws.nt
	if c == nt.a {
		nt.factored = false
	}
	nt.cur = c
	ws.pool.run(ws.gatherFn, ws.bounds)
	for s, n := range nt.cnt {
		c.ptr[s+1] = c.ptr[s] + n
	}
	ws.pool.run(ws.packFn, ws.bounds)
	nt.cur = nil
}

func (ws *Workspace) mulRange(_, lo, hi int) {
	nt := ws.nt
	nt.mulC.mulRange(nt.mulY, nt.mulX, lo, hi)
}

func (ws *Workspace) mulBlockRange(_, lo, hi int) {
	nt := ws.nt
	nt.mulC.mulBlockRange(nt.mulBY, nt.mulBX, lo, hi)
}

func (ws *Workspace) mulBlock32Range(_, lo, hi int) {
	nt := ws.nt
	mulBlock32Range(nt.mulC, nt.mul32.val, nt.mulB32Y, nt.mulB32X, lo, hi)
}

// mulBy returns y = c·x on the workspace's goroutines (rows split by range).
func (ws *Workspace) mulBy(c *csr) func(y, x []float64) {
	nt := ws.nt
	return func(y, x []float64) {
		nt.mulC, nt.mulY, nt.mulX = c, y, x
		ws.pool.run(ws.mulFn, ws.bounds)
		nt.mulC, nt.mulY, nt.mulX = nil, nil, nil
	}
}

// newtonValueStep replaces x with x + δ, (I − γP_π)δ = gx − x, for the
// soft-optimal policy π of the Q that the sweep gx = T(x) left in dst; when
// no step is possible it takes the plain step x = gx. Once the steps
// converge (the right-hand side fell to staleFactors of the last one's)
// the policy hardly moves, and the ILU(0) factors of the last factored
// matrix precondition the new one (built into nt.b) as well as fresh
// factors would.
func (ws *Workspace) newtonValueStep(dst *Values, x, gx []float64) {
	nt := ws.newton()
	if math.IsNaN(dst.Residual) || math.IsInf(dst.Residual, 0) {
		copy(x, gx)
		return
	}
	floats.SubTo(nt.rhs, gx, x)
	r := floats.Norm(nt.rhs, 2)
	ws.pi = ws.SoftPolicy(nt.pol, dst, ws.tau)
	mul := nt.mulA
	if nt.prevRes > 0 && nt.factored && r <= staleFactors*nt.prevRes {
		ws.build(nt.b)
		mul = nt.mulB
		nt.staleSteps++
	} else {
		ws.build(nt.a)
		nt.factored = nt.a.ilu0()
	}
	ws.pi = nil
	if !nt.factored {
		copy(x, gx)
		return
	}
	clear(nt.delta)
	nt.kr.solve(nt.precA, mul, nt.delta, nt.rhs, nt.kr.zero, nt.forcing(r, ws.opts.Tol), newtonMaxMatVec)
	floats.Add(x, nt.delta)
}

// forcing returns the relative residual to which a value step's linear
// system with right-hand side norm r is solved: Eisenstat and Walker's
// choice 2 (SIAM J. Sci. Comput. 17, 1996), η = 0.9(r/r_prev)², capped at
// 0.1 (which makes their safeguard 0.9η_prev² > 0.1 moot) and never
// tighter than a residual of tol/10 needs; newtonFirstEta for a solve's
// first step.
func (nt *newtonState) forcing(r, tol float64) float64 {
	eta := newtonFirstEta
	if nt.prevRes > 0 {
		eta = 0.9 * (r / nt.prevRes) * (r / nt.prevRes)
	}
	eta = min(eta, 0.1)
	if r > 0 {
		eta = max(eta, min(0.1, 0.1*tol/r))
	}
	nt.prevRes = r
	return eta
}

// prepareVisitsNewton builds (I − γP_πᵀ) for ws.pi and its ILU(0) factors.
func (ws *Workspace) prepareVisitsNewton() {
	nt := ws.newton()
	ws.build(nt.a)
	nt.at.transposeOf(nt.a)
	nt.atOK = nt.at.ilu0()
}

// newtonVisitStep replaces the visits x with x + δ, (I − γP_πᵀ)δ = xNew − x,
// after the propagation sweep xNew with change res; when no step is
// possible it takes the plain step x = xNew.
func (ws *Workspace) newtonVisitStep(res float64) {
	nt := ws.nt
	if !nt.atFresh {
		ws.prepareVisitsNewton()
		nt.atFresh = true
	}
	if !nt.atOK || math.IsNaN(res) || math.IsInf(res, 0) {
		copy(ws.x, ws.xNew)
		return
	}
	floats.SubTo(nt.rhs, ws.xNew, ws.x)
	clear(nt.delta)
	eta := newtonEta
	if r := floats.Norm(nt.rhs, 2); r > 0 {
		eta = min(eta, max(ws.opts.Tol/r, 1e-12))
	}
	nt.kr.solve(nt.precAt, nt.mulAt, nt.delta, nt.rhs, nt.kr.zero, eta, newtonMaxMatVec)
	floats.Add(ws.x, nt.delta)
}
