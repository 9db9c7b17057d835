// Package mdp holds finite (tabular) Markov decision processes with sparse
// transitions and the dynamic-programming kernels that MaxEnt IRL needs:
// hard and soft (maximum causal entropy) value iteration, policy evaluation,
// the soft-optimal stochastic policy, discounted state–action visit counts and
// the normalized occupancy measure ρ^π of the paper's Theorem 2, and sampled
// rollouts.
//
// # Model
//
// An MDP has S states and A actions. Transitions P(s'|s,a) are stored in
// compressed sparse rows (CSR): the row of pair k = s*A+a holds the
// successors Next[RowPtr[k]:RowPtr[k+1]] with probabilities
// Prob[RowPtr[k]:RowPtr[k+1]]. Rewards are vectors r of length S*A indexed
// the same way.
//
// Terminal states are absorbing with zero value: an episode that enters a
// terminal state ends there, no action is taken and no reward is collected in
// it, and it carries no visits. Terminal rows need no transitions (any given
// are ignored). Reward for reaching a goal therefore belongs on the pairs
// (s,a) that lead into it.
//
// Gamma is the discount γ ∈ [0,1]; γ = 1 is allowed only with a finite
// Horizon. Horizon = 0 means an infinite horizon; Horizon = T > 0 means
// episodes take at most T actions (t = 0..T-1), and values, policies and
// visit counts become time-indexed.
//
// # Soft value iteration
//
// With temperature τ > 0,
//
//	Q(s,a) = r(s,a) + γ Σ_s' P(s'|s,a) V(s'),   V(s) = τ log Σ_a exp(Q(s,a)/τ),
//
// evaluated with a max shift (log-sum-exp) so any τ is stable; τ = 0 is the
// hard max (ordinary value iteration). The soft-optimal policy is
// π(a|s) = exp((Q(s,a) − V(s))/τ). Finite horizons are solved backwards in
// time with V_T = 0.
//
// # Occupancy
//
// Visits returns the unnormalized discounted expected visit counts
// d(s,a) = Σ_t γ^t P(s_t=s, a_t=a) from an initial distribution, so the
// discounted return is ⟨d, r⟩. Occupancy returns ρ = d/Σd, which equals the
// paper's (1−γ)Σ_t γ^t P(s_t,a_t) whenever no terminal state is reachable and
// the horizon is infinite, and is the normalized distribution of discounted
// non-terminal visits otherwise. Infinite-horizon quantities are computed by
// fixed-point iteration (forward propagation for visits) to a sup-norm
// tolerance on the change of one plain sweep, with Anderson acceleration of
// the iterates (Options.Anderson), which at γ = 0.99 cuts the sweeps needed
// from thousands to about a hundred for smooth problems. Near a hard max
// (τ = 1e-3) it helps little; Options.Newton then solves the soft Bellman
// equation by Newton's method (soft policy iteration with inexact
// evaluations) and the visits by one linear solve, both by GMRES with an
// ILU(0) preconditioner, in 10–20 exact sweeps instead of hundreds.
//
// # Why hand-written
//
// gonum has no sparse matrices, sparse solvers or fixed-point accelerators
// (its Krylov solvers in gonum.org/v1/exp are unreleased and unreachable
// here); these kernels are simple CSR loops, split over goroutines by state
// ranges, allocation-free after their first call on a Workspace, and
// deterministic: every state's update reads only the previous iterate, and
// the reductions (the acceleration's and GMRES's dot products) and the
// triangular solves of ILU(0) run serially, so results do not depend on the
// number of goroutines. On amd64 the Krylov kernels (the product with
// I − γP_π, the ILU(0) substitutions, and the block solves' per-column dot
// products and updates) are assembly (kernels_amd64.s): AVX
// for the blocks of 8 columns, one block in two registers, scalar SSE2 for
// single vectors. Go does not vectorize these loops, and the blocks' lanes
// are independent columns, so AVX does 8 columns' multiply–adds in 2
// instructions instead of 16 while each lane keeps the Go loop's
// operations and order (no fused multiply–add; the Go loops round each
// product by an explicit float64 conversion, so no GOAMD64 level fuses
// them either): the results are the Go loops' bit for bit
// (TestBlockKernelsAVXMatchGo, TestILU0MatchesCSR), 2–5 times faster
// (BenchmarkBlockKernels, BenchmarkSparseKernels). Loose column solves
// (EvaluateColumns at rtol ≥ 10⁻³, the Newton fit's Hessians) run in
// float32 blocks of 16 columns with kernels of the same design
// (block32.go, kernels32_amd64.s). The single-vector
// substitutions read the ILU(0) factors from fixed-width rows (ell.go),
// which removes the mispredicted exit of each row's loop.
//
// The package deliberately knows nothing of features, demonstrations or
// learning (that is package irl) nor of any particular environment.
package mdp

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// probTol is the tolerance on Σ_s' P(s'|s,a) = 1 accepted by Validate and Build.
const probTol = 1e-8

// MDP is a finite Markov decision process with sparse transitions; see the
// package comment for the layout and the meaning of each field.
type MDP struct {
	// NumStates and NumActions are S and A.
	NumStates, NumActions int
	// RowPtr has length S*A+1; row k = s*A+a spans [RowPtr[k], RowPtr[k+1]).
	RowPtr []int
	// Next holds successor state indices, one per stored transition.
	Next []int32
	// Prob holds P(Next[i] | s, a), one per stored transition.
	Prob []float64
	// Terminal marks absorbing zero-value states; nil means none (else length S).
	Terminal []bool
	// Gamma is the discount factor in [0,1].
	Gamma float64
	// Init is the initial-state distribution (length S, sums to 1).
	Init []float64
	// Horizon is the maximum number of actions per episode; 0 means infinite.
	Horizon int
}

// NumPairs returns S*A, the length of reward and visit vectors.
func (m *MDP) NumPairs() int { return m.NumStates * m.NumActions }

// IsTerminal reports whether state s is terminal.
func (m *MDP) IsTerminal(s int) bool { return m.Terminal != nil && m.Terminal[s] }

// Successors returns the successor states and probabilities of (s,a); the
// slices alias the MDP's storage and must not be modified.
func (m *MDP) Successors(s, a int) (next []int32, prob []float64) {
	k := s*m.NumActions + a
	lo, hi := m.RowPtr[k], m.RowPtr[k+1]
	return m.Next[lo:hi], m.Prob[lo:hi]
}

// Validate checks the shapes, index ranges and probabilities of m and returns
// an error naming the first offending field or (s,a) pair.
func (m *MDP) Validate() error {
	S, A := m.NumStates, m.NumActions
	if S <= 0 || A <= 0 {
		return fmt.Errorf("mdp: need at least one state and one action, got %d states and %d actions", S, A)
	}
	if S > math.MaxInt32 {
		return fmt.Errorf("mdp: %d states exceed the int32 successor index range", S)
	}
	if !(m.Gamma >= 0 && m.Gamma <= 1) {
		return fmt.Errorf("mdp: gamma %v not in [0,1]", m.Gamma)
	}
	if m.Horizon < 0 {
		return fmt.Errorf("mdp: horizon %d is negative", m.Horizon)
	}
	if m.Gamma == 1 && m.Horizon == 0 {
		return fmt.Errorf("mdp: gamma = 1 needs a finite horizon")
	}
	if len(m.RowPtr) != S*A+1 {
		return fmt.Errorf("mdp: row_ptr has length %d, want S*A+1 = %d", len(m.RowPtr), S*A+1)
	}
	if m.RowPtr[0] != 0 {
		return fmt.Errorf("mdp: row_ptr[0] = %d, want 0", m.RowPtr[0])
	}
	if len(m.Next) != len(m.Prob) || m.RowPtr[S*A] != len(m.Next) {
		return fmt.Errorf("mdp: row_ptr ends at %d but there are %d successors and %d probabilities", m.RowPtr[S*A], len(m.Next), len(m.Prob))
	}
	if m.Terminal != nil && len(m.Terminal) != S {
		return fmt.Errorf("mdp: terminal has length %d, want %d states", len(m.Terminal), S)
	}
	for s := 0; s < S; s++ {
		for a := 0; a < A; a++ {
			k := s*A + a
			lo, hi := m.RowPtr[k], m.RowPtr[k+1]
			if hi < lo || hi > len(m.Next) {
				return fmt.Errorf("mdp: row_ptr[%d] = %d out of order or beyond the %d successors (state %d action %d)", k+1, hi, len(m.Next), s, a)
			}
			if m.IsTerminal(s) {
				continue
			}
			sum := 0.0
			for i := lo; i < hi; i++ {
				if n := m.Next[i]; n < 0 || int(n) >= S {
					return fmt.Errorf("mdp: state %d action %d: successor %d out of range [0,%d)", s, a, n, S)
				}
				if p := m.Prob[i]; !(p >= 0 && p <= 1+probTol) {
					return fmt.Errorf("mdp: state %d action %d: probability %v of successor %d not in [0,1]", s, a, p, m.Next[i])
				}
				sum += m.Prob[i]
			}
			if math.Abs(sum-1) > probTol {
				return fmt.Errorf("mdp: state %d action %d: transition probabilities sum to %.12g, want 1", s, a, sum)
			}
		}
	}
	if len(m.Init) != S {
		return fmt.Errorf("mdp: init has length %d, want %d states", len(m.Init), S)
	}
	sum := 0.0
	for s, p := range m.Init {
		if !(p >= 0) || math.IsInf(p, 0) {
			return fmt.Errorf("mdp: init[%d] = %v is not a probability", s, p)
		}
		sum += p
	}
	if math.Abs(sum-1) > probTol {
		return fmt.Errorf("mdp: init sums to %.12g, want 1", sum)
	}
	return nil
}

// Builder assembles an MDP from individual transitions. Set the exported
// fields, call AddTransition for every (s,a,s',p), then Build. Duplicate
// (s,a,s') entries are summed. The zero Builder is not usable; use NewBuilder.
type Builder struct {
	// Gamma is the discount factor (default 0, i.e. myopic: set it).
	Gamma float64
	// Horizon is the episode cap (0 = infinite).
	Horizon int
	// Init is the initial-state distribution; nil means uniform over the
	// non-terminal states.
	Init []float64
	// Terminal lists terminal states; nil means none.
	Terminal []bool

	numStates, numActions int
	rows                  [][]entry // per pair k
	err                   error
}

type entry struct {
	next int32
	prob float64
}

// NewBuilder returns a Builder for an MDP with numStates states and numActions actions.
func NewBuilder(numStates, numActions int) *Builder {
	b := &Builder{numStates: numStates, numActions: numActions}
	if numStates <= 0 || numActions <= 0 {
		b.err = fmt.Errorf("mdp: need at least one state and one action, got %d states and %d actions", numStates, numActions)
		return b
	}
	b.rows = make([][]entry, numStates*numActions)
	return b
}

// SetTerminal marks state s as terminal (absorbing, zero value).
func (b *Builder) SetTerminal(s int) {
	if b.err != nil {
		return
	}
	if s < 0 || s >= b.numStates {
		b.err = fmt.Errorf("mdp: terminal state %d out of range [0,%d)", s, b.numStates)
		return
	}
	if b.Terminal == nil {
		b.Terminal = make([]bool, b.numStates)
	}
	b.Terminal[s] = true
}

// AddTransition adds probability p to P(s2|s,a). Out-of-range indices or a
// probability outside [0,1] are recorded and reported by Build (the first one wins).
func (b *Builder) AddTransition(s, a, s2 int, p float64) {
	if b.err != nil {
		return
	}
	switch {
	case s < 0 || s >= b.numStates:
		b.err = fmt.Errorf("mdp: transition (%d,%d,%d): state %d out of range [0,%d)", s, a, s2, s, b.numStates)
	case a < 0 || a >= b.numActions:
		b.err = fmt.Errorf("mdp: transition (%d,%d,%d): action %d out of range [0,%d)", s, a, s2, a, b.numActions)
	case s2 < 0 || s2 >= b.numStates:
		b.err = fmt.Errorf("mdp: transition (%d,%d,%d): next state %d out of range [0,%d)", s, a, s2, s2, b.numStates)
	case !(p >= 0 && p <= 1):
		b.err = fmt.Errorf("mdp: transition (%d,%d,%d): probability %v not in [0,1]", s, a, s2, p)
	}
	if b.err != nil {
		return
	}
	k := s*b.numActions + a
	row := b.rows[k]
	for i := range row {
		if row[i].next == int32(s2) {
			row[i].prob += p
			return
		}
	}
	b.rows[k] = append(row, entry{int32(s2), p})
}

// Build returns the assembled MDP after validating it. Each non-terminal
// (s,a) must have probabilities summing to 1 within 1e-8 (they are stored
// as given, not rescaled, so files round-trip bit for bit); the error names
// the offending (s,a). Successors are stored in increasing state order and
// zero-probability entries are dropped.
func (b *Builder) Build() (*MDP, error) {
	if b.err != nil {
		return nil, b.err
	}
	S, A := b.numStates, b.numActions
	if b.Terminal != nil && len(b.Terminal) != S {
		return nil, fmt.Errorf("mdp: terminal has length %d, want %d states", len(b.Terminal), S)
	}
	m := &MDP{NumStates: S, NumActions: A, Gamma: b.Gamma, Horizon: b.Horizon, RowPtr: make([]int, S*A+1)}
	if b.Terminal != nil {
		m.Terminal = append([]bool(nil), b.Terminal...)
	}
	nnz := 0
	for _, row := range b.rows {
		nnz += len(row)
	}
	m.Next = make([]int32, 0, nnz)
	m.Prob = make([]float64, 0, nnz)
	for s := 0; s < S; s++ {
		for a := 0; a < A; a++ {
			k := s*A + a
			if !m.IsTerminal(s) {
				row := b.rows[k]
				sortEntries(row)
				sum := 0.0
				for _, e := range row {
					sum += e.prob
				}
				if math.Abs(sum-1) > probTol {
					return nil, fmt.Errorf("mdp: state %d action %d: transition probabilities sum to %.12g, want 1", s, a, sum)
				}
				for _, e := range row {
					if e.prob > 0 {
						m.Next = append(m.Next, e.next)
						m.Prob = append(m.Prob, e.prob)
					}
				}
			}
			m.RowPtr[k+1] = len(m.Next)
		}
	}
	if b.Init != nil {
		m.Init = append([]float64(nil), b.Init...)
	} else {
		m.Init = make([]float64, S)
		n := 0
		for s := 0; s < S; s++ {
			if !m.IsTerminal(s) {
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("mdp: every state is terminal")
		}
		for s := 0; s < S; s++ {
			if !m.IsTerminal(s) {
				m.Init[s] = 1 / float64(n)
			}
		}
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// sortEntries sorts a row by successor index (insertion sort: rows are short).
func sortEntries(row []entry) {
	for i := 1; i < len(row); i++ {
		for j := i; j > 0 && row[j].next < row[j-1].next; j-- {
			row[j], row[j-1] = row[j-1], row[j]
		}
	}
}

// SampleInit draws an initial state from m.Init using rng.
func (m *MDP) SampleInit(rng *rand.Rand) int {
	return sampleIndex(rng, m.Init)
}

// SampleNext draws a successor of (s,a) using rng; s must not be terminal.
func (m *MDP) SampleNext(rng *rand.Rand, s, a int) int {
	next, prob := m.Successors(s, a)
	return int(next[sampleIndex(rng, prob)])
}

// sampleIndex draws i with probability w[i] (w sums to ~1; rounding slack goes to the last positive entry).
func sampleIndex(rng *rand.Rand, w []float64) int {
	u := rng.Float64()
	last := -1
	for i, p := range w {
		if p <= 0 {
			continue
		}
		last = i
		if u < p {
			return i
		}
		u -= p
	}
	if last < 0 {
		panic("mdp: sampling from an all-zero distribution")
	}
	return last
}

// Rollout samples one episode of pi from a state drawn from m.Init and
// returns the visited states and the actions taken. The episode ends when it
// enters a terminal state, after m.Horizon actions when the horizon is finite,
// or after maxSteps actions when maxSteps > 0. len(states) is len(actions)+1:
// the last entry is the state reached after the last action.
func (m *MDP) Rollout(rng *rand.Rand, pi *Policy, maxSteps int) (states, actions []int) {
	s := m.SampleInit(rng)
	states = append(states, s)
	for t := 0; ; t++ {
		if m.IsTerminal(s) || (m.Horizon > 0 && t >= m.Horizon) || (maxSteps > 0 && t >= maxSteps) {
			return states, actions
		}
		a := sampleIndex(rng, pi.At(t, s))
		s = m.SampleNext(rng, s, a)
		actions = append(actions, a)
		states = append(states, s)
	}
}
