package irl

// EPIC is hand-written rather than built on gonum's stat.Correlation: the
// canonicalization needs the MDP's terminal convention and sparse rows, the
// weighted moments are streamed over the CSR entries without materializing
// one vector per reward, and the distance is taken as half the weighted
// root-mean-square difference of the standardized rewards, which (unlike
// sqrt((1−ρ)/2) from a computed ρ) does not lose all precision near ρ = 1.

import (
	"errors"
	"fmt"
	"math"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// EPICOptions sets the coverage distribution of EPIC.
type EPICOptions struct {
	// Coverage names the coverage (see Coverage); "" is CoverageModel.
	Coverage Coverage
	// StateWeights are coverage weights over states (length S, finite,
	// non-negative, not necessarily normalized). D_S is these weights
	// restricted to the non-terminal states and normalized: weights on
	// terminal states are ignored, as no action is taken there. Under
	// CoverageModel nil means uniform over the non-terminal states;
	// CoverageDemonstrations requires them (the demonstrations' visits, see
	// StateVisits); CoverageUniform refuses them.
	StateWeights []float64
}

// EPICResult is the outcome of EPIC.
type EPICResult struct {
	// Distance is the EPIC pseudometric sqrt((1−ρ)/2) ∈ [0,1]: 0 for rewards
	// equal up to potential shaping and positive scaling, 1 for opposite ones.
	Distance float64
	// Pearson is ρ, the correlation of the canonicalized rewards under the
	// coverage distribution of transitions.
	Pearson float64
}

// ErrConstantReward is wrapped by EPIC's error when a reward is constant
// after canonicalization (e.g. a constant reward on an MDP without terminal
// states): its correlation with any reward is undefined.
var ErrConstantReward = errors.New("constant after canonicalization (its correlation with any reward is undefined)")

// TransitionReward is a reward R(s,a,s') defined on every triple of an MDP's
// states and actions, in the separable-plus-sparse form
//
//	R(s,a,s') = StateAction[s*A+a] + NextState[s'] + Transition[i]   if s' = Next[i] for a stored entry i of row s*A+a,
//	R(s,a,s') = StateAction[s*A+a] + NextState[s']                   otherwise,
//
// for a non-terminal s, and R(s,a,s') = NextState[s'] for a terminal s (no
// action is taken there, so the rows of terminal states in StateAction and
// Transition are ignored). A nil part is zero.
//
// EPIC's canonicalization evaluates R on triples (s, a, S') with S' drawn
// independently of s, i.e. also off the MDP's support and out of terminal
// states, so a reward given only on the stored transitions would not define
// it. This form covers state–action rewards (StateAction only; then R is 0
// out of terminal states), potential shaping γΦ(s') − Φ(s) (StateAction
// −Φ(s), NextState γΦ(s')) and arbitrary changes on the support
// (Transition), and keeps EPIC linear in the number of stored transitions.
// Letting the next-state part apply out of terminal states makes a shaping
// with Φ(terminal) = 0 a shaping on every triple, terminal sources included,
// which is what EPIC's invariance needs: with R(terminal,·,·) = 0 instead, a
// shaped reward would differ from the original by γ²E_{D_S}Φ on every
// transition into a terminal state.
type TransitionReward struct {
	// StateAction is the part depending on (s,a): length S*A, row k = s*A+a.
	StateAction []float64
	// NextState is the part depending on s' only: length S.
	NextState []float64
	// Transition is the part on stored transitions: one per CSR entry of
	// the MDP (length len(Next)). When it is given, no non-terminal row may
	// list a successor twice (R must be one value per (s,a,s')).
	Transition []float64
}

// EPIC returns the EPIC distance (Gleave et al. 2021, "Quantifying
// differences in reward functions") between the state–action rewards r1 and
// r2 (length S*A, row k = s*A+a; rows of terminal states are ignored) on the
// tabular MDP m. It is EPICTransitions with R(s,a,s') = r(s,a).
//
// Canonicalization. With S, S' independent draws from the coverage state
// distribution D_S (EPICOptions; over non-terminal states) and A uniform over
// the actions,
//
//	C(R)(s,a,s') = R(s,a,s') + E[γR(s',A,S') − R(s,A,S') − γR(S,A,S')],
//
// which for R(s,a,s') = r(s,a) is
//
//	C(R)(s,a,s') = r(s,a) + γ m(s') − m(s) − γ m̄,   m(s) = mean_a r(s,a),  m̄ = E_{D_S} m,
//
// with m(s') = 0 for a terminal s' (terminal states are absorbing with zero
// value, so their potential is 0; they are never drawn as s). C removes any
// potential shaping γΦ(s') − Φ(s) with Φ(terminal) = 0 (a transition
// reward, see EPICTransitions). A constant shift of r is such a shaping only
// when no terminal state is reachable: with termination it changes the
// reward of ending an episode relative to continuing it, and EPIC sees that.
//
// That is EPIC under CoverageModel, the zero value of EPICOptions.Coverage;
// CoverageUniform (evaluating-rewards' default) and CoverageDemonstrations
// change D_S and the Pearson weights as their doc comments say.
//
// Distance. ρ is the Pearson correlation of C(R1) and C(R2) over the
// coverage distribution of transitions: s ∼ D_S, a uniform, s' ∼ P(·|s,a)
// (the MDP's own successors), computed exactly as a weighted sum over the
// stored transitions. The distance is sqrt((1−ρ)/2) ∈ [0,1], evaluated as
// half the weighted RMS difference of the standardized C(R1), C(R2) (equal
// in exact arithmetic, without cancellation near ρ = 1). A reward whose
// C(R) is constant, up to a relative 1e-10 of its magnitude, is an error
// wrapping ErrConstantReward and naming it (r1 or r2); so are non-finite
// entries, wrong lengths and invalid weights. m.Horizon and m.Init play no
// part: EPIC compares rewards, not the values of a particular episode.
func EPIC(m *mdp.MDP, r1, r2 []float64, o EPICOptions) (EPICResult, error) {
	if m == nil {
		return EPICResult{}, fmt.Errorf("irl: EPIC: nil MDP")
	}
	for _, r := range []struct {
		name string
		v    []float64
	}{{"r1", r1}, {"r2", r2}} {
		if len(r.v) != m.NumPairs() {
			return EPICResult{}, fmt.Errorf("irl: EPIC: %s has %d entries, want S*A = %d*%d = %d", r.name, len(r.v), m.NumStates, m.NumActions, m.NumPairs())
		}
	}
	return EPICTransitions(m, TransitionReward{StateAction: r1}, TransitionReward{StateAction: r2}, o)
}

// EPICTransitions returns the EPIC distance between the transition rewards r1
// and r2 on m; see EPIC for the definition and TransitionReward for how
// R(s,a,s') is given on every triple. In general
//
//	C(R)(s,a,s') = R(s,a,s') + γψ(s') − ψ(s) − γE_{D_S}ψ,   ψ(x) = E_{A,S'∼D_S} R(x,A,S'),
//
// so d(R, R + γΦ(s') − Φ(s)) = 0 for every Φ with Φ(terminal) = 0. Its cost
// is linear in the number of stored transitions.
func EPICTransitions(m *mdp.MDP, r1, r2 TransitionReward, o EPICOptions) (EPICResult, error) {
	if m == nil {
		return EPICResult{}, fmt.Errorf("irl: EPIC: nil MDP")
	}
	if err := m.Validate(); err != nil {
		return EPICResult{}, fmt.Errorf("irl: EPIC: %w", err)
	}
	d, err := coverageStates(m, o)
	if err != nil {
		return EPICResult{}, err
	}
	var c [2]canonical
	for j, r := range [2]TransitionReward{r1, r2} {
		name := fmt.Sprintf("r%d", j+1)
		if err := r.check(m, name); err != nil {
			return EPICResult{}, err
		}
		c[j] = canonicalize(m, r, d)
	}
	if o.Coverage == CoverageUniform {
		return uniformPearson(m, &c)
	}
	// Weighted moments over the stored transitions, weight D_S(s)·(1/A)·P(s'|s,a).
	var mean, sd [2]float64
	for j := range c {
		mean[j] = c[j].moment(m, d, func(x float64) float64 { return x })
	}
	for j := range c {
		mj := mean[j]
		sd[j] = math.Sqrt(c[j].moment(m, d, func(x float64) float64 { return (x - mj) * (x - mj) }))
		if !(sd[j] > 1e-10*c[j].scale) {
			return EPICResult{}, fmt.Errorf("irl: EPIC: r%d is %w", j+1, ErrConstantReward)
		}
	}
	var cov, diff2 float64
	A := m.NumActions
	for s, ds := range d {
		if ds == 0 {
			continue
		}
		for a := 0; a < A; a++ {
			k := s*A + a
			w := ds / float64(A)
			for i := m.RowPtr[k]; i < m.RowPtr[k+1]; i++ {
				p := m.Prob[i]
				if p == 0 {
					continue
				}
				z1 := (c[0].at(m, s, a, i) - mean[0]) / sd[0]
				z2 := (c[1].at(m, s, a, i) - mean[1]) / sd[1]
				cov += w * p * z1 * z2
				diff2 += w * p * (z1 - z2) * (z1 - z2)
			}
		}
	}
	// Both are exact in exact arithmetic; clamp the rounding.
	return EPICResult{Distance: min(0.5*math.Sqrt(diff2), 1), Pearson: max(-1, min(cov, 1))}, nil
}

// coverage returns D_S: the weights restricted to non-terminal states and
// normalized (uniform over them when w is nil).
func coverage(m *mdp.MDP, w []float64) ([]float64, error) {
	S := m.NumStates
	if w != nil && len(w) != S {
		return nil, fmt.Errorf("irl: EPIC: state weights have %d entries, want %d states", len(w), S)
	}
	d := make([]float64, S)
	sum := 0.0
	for s := range d {
		if w != nil {
			if v := w[s]; !(v >= 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("irl: EPIC: state weight %d = %v is not a finite non-negative number", s, v)
			}
		}
		if m.IsTerminal(s) {
			continue
		}
		d[s] = 1
		if w != nil {
			d[s] = w[s]
		}
		sum += d[s]
	}
	if !(sum > 0) || math.IsInf(sum, 0) {
		return nil, fmt.Errorf("irl: EPIC: the state weights put no finite positive mass on non-terminal states (sum %v)", sum)
	}
	for s := range d {
		d[s] /= sum
	}
	return d, nil
}

// check validates the lengths and finiteness of the parts of r that EPIC reads.
func (r TransitionReward) check(m *mdp.MDP, name string) error {
	S, A := m.NumStates, m.NumActions
	for _, p := range []struct {
		field string
		v     []float64
		want  int
	}{{"state-action part", r.StateAction, S * A}, {"next-state part", r.NextState, S}, {"transition part", r.Transition, len(m.Next)}} {
		if p.v != nil && len(p.v) != p.want {
			return fmt.Errorf("irl: EPIC: %s %s has %d entries, want %d", name, p.field, len(p.v), p.want)
		}
	}
	for s, v := range r.NextState {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("irl: EPIC: %s next-state part: entry %d (state %d) = %v is not finite", name, s, s, v)
		}
	}
	var stamp []int // stamp[y] = k+1 once row k has listed successor y
	if r.Transition != nil {
		stamp = make([]int, S)
	}
	for s := 0; s < S; s++ {
		if m.IsTerminal(s) {
			continue
		}
		for a := 0; a < A; a++ {
			k := s*A + a
			if r.StateAction != nil {
				if v := r.StateAction[k]; math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("irl: EPIC: %s entry %d (state %d, action %d) = %v is not finite", name, k, s, a, v)
				}
			}
			if r.Transition == nil {
				continue
			}
			for i := m.RowPtr[k]; i < m.RowPtr[k+1]; i++ {
				if v := r.Transition[i]; math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("irl: EPIC: %s transition part: entry %d (state %d, action %d, next %d) = %v is not finite", name, i, s, a, m.Next[i], v)
				}
				if stamp[m.Next[i]] == k+1 {
					return fmt.Errorf("irl: EPIC: %s transition part: state %d action %d lists next state %d twice; a per-transition reward needs distinct successors (merge them, as mdp.Builder does)", name, s, a, m.Next[i])
				}
				stamp[m.Next[i]] = k + 1
			}
		}
	}
	return nil
}

// canonical holds what C(R) needs besides R: the potential
// ψ(x) = E[R(x,A,S')] and the constant γ E_{D_S} ψ.
type canonical struct {
	r     TransitionReward
	psi   []float64
	shift float64 // γ E_{D_S}[ψ(S)]
	gamma float64
	scale float64 // the largest magnitude among R's parts and ψ, for the constancy test
}

// canonicalize computes ψ and the shift of C(R) for r under D_S = d.
func canonicalize(m *mdp.MDP, r TransitionReward, d []float64) canonical {
	S, A := m.NumStates, m.NumActions
	c := canonical{r: r, psi: make([]float64, S), gamma: m.Gamma}
	meanNext := 0.0 // E_{D_S} NextState
	for y, v := range r.NextState {
		meanNext += d[y] * v
		c.scale = max(c.scale, math.Abs(v))
	}
	mbar := 0.0
	for s := 0; s < S; s++ {
		if m.IsTerminal(s) {
			c.psi[s] = meanNext     // R(s,a,s') = NextState[s'] from a terminal s
			mbar += d[s] * c.psi[s] // d[s] = 0 unless the coverage draws terminal states (CoverageUniform)
			continue
		}
		sum := 0.0
		for a := 0; a < A; a++ {
			k := s*A + a
			if r.StateAction != nil {
				sum += r.StateAction[k]
				c.scale = max(c.scale, math.Abs(r.StateAction[k]))
			}
			if r.Transition != nil {
				for i := m.RowPtr[k]; i < m.RowPtr[k+1]; i++ {
					sum += d[m.Next[i]] * r.Transition[i]
					c.scale = max(c.scale, math.Abs(r.Transition[i]))
				}
			}
		}
		c.psi[s] = sum/float64(A) + meanNext
		mbar += d[s] * c.psi[s]
		c.scale = max(c.scale, math.Abs(c.psi[s]))
	}
	c.shift = m.Gamma * mbar
	return c
}

// at returns C(R)(s, a, Next[i]) for the stored entry i of row s*A+a.
func (c *canonical) at(m *mdp.MDP, s, a, i int) float64 {
	k := s*m.NumActions + a
	next := m.Next[i]
	v := c.gamma*c.psi[next] - c.psi[s] - c.shift
	if c.r.StateAction != nil {
		v += c.r.StateAction[k]
	}
	if c.r.NextState != nil {
		v += c.r.NextState[next]
	}
	if c.r.Transition != nil {
		v += c.r.Transition[i]
	}
	return v
}

// moment returns E[f(C(R))] under the coverage distribution of transitions.
func (c *canonical) moment(m *mdp.MDP, d []float64, f func(float64) float64) float64 {
	A := m.NumActions
	sum := 0.0
	for s, ds := range d {
		if ds == 0 {
			continue
		}
		w := ds / float64(A)
		for a := 0; a < A; a++ {
			k := s*A + a
			for i := m.RowPtr[k]; i < m.RowPtr[k+1]; i++ {
				if p := m.Prob[i]; p != 0 {
					sum += w * p * f(c.at(m, s, a, i))
				}
			}
		}
	}
	return sum
}
