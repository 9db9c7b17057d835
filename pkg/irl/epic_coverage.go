package irl

import (
	"fmt"
	"math"
	"strings"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// Coverage names the distribution under which EPIC canonicalizes a reward
// (the distribution D_S of the states S, S′ drawn in the canonicalization;
// actions are always uniform) and correlates two canonicalized rewards (the
// Pearson weights over triples (s, a, s′)). EPIC's verdict can hinge on it,
// so studies report it by name.
type Coverage string

const (
	// CoverageModel is fedirl's coverage (the zero value of
	// EPICOptions.Coverage): D_S uniform over the non-terminal states (or
	// EPICOptions.StateWeights), terminal states with potential 0, Pearson
	// weights D_S(s)·(1/A)·P(s′|s,a) from the MDP's own transitions.
	CoverageModel Coverage = "model"
	// CoverageUniform is the default of evaluating-rewards' tabular code
	// (fully_connected_random_canonical_reward and pearson_distance with no
	// distributions given): D_S uniform over all states, terminal ones
	// included (where R(s,a,s′) is the reward's next-state part, see
	// TransitionReward), and Pearson weights uniform over all S·A·S triples
	// (s, a, s′), reachable or not. The sums over the S²A triples are taken
	// in closed form, linear in the stored transitions.
	CoverageUniform Coverage = "uniform"
	// CoverageDemonstrations is the demonstrations' own coverage: D_S the
	// demonstrations' state visits (EPICOptions.StateWeights, required; see
	// StateVisits) restricted to the non-terminal states, Pearson weights
	// D_S(s)·(1/A)·P(s′|s,a) from the model. EPIC is undefined (an error
	// wrapping ErrConstantReward) where a reward is constant after
	// canonicalization on that support, e.g. a constant per-step reward
	// whose demonstrations never reach a terminal state.
	CoverageDemonstrations Coverage = "demonstrations"
)

// Coverages returns the coverages in their fixed reporting order: model,
// uniform, demonstrations.
func Coverages() []Coverage {
	return []Coverage{CoverageModel, CoverageUniform, CoverageDemonstrations}
}

// ParseCoverage returns the coverage named s, or an error listing the names.
func ParseCoverage(s string) (Coverage, error) {
	for _, c := range Coverages() {
		if string(c) == s {
			return c, nil
		}
	}
	names := make([]string, 0, 3)
	for _, c := range Coverages() {
		names = append(names, string(c))
	}
	return "", fmt.Errorf("irl: unknown EPIC coverage %q (want %s)", s, strings.Join(names, ", "))
}

// StateVisits returns the demonstrations' state visits on m (length S):
// entry s counts the steps at which a demonstration takes an action in s,
// undiscounted (a trajectory's final state, where no action is taken, is
// not counted). It is EPICOptions.StateWeights for CoverageDemonstrations.
// The demonstrations are checked with CheckTrajectories.
func StateVisits(m *mdp.MDP, demos []Trajectory) ([]float64, error) {
	if err := CheckTrajectories(m, demos); err != nil {
		return nil, err
	}
	w := make([]float64, m.NumStates)
	for _, tr := range demos {
		for t := range tr.Actions {
			w[tr.States[t]]++
		}
	}
	return w, nil
}

// coverageStates returns the canonicalization's D_S for the coverage of o
// (see coverage for the model and demonstrations coverages).
func coverageStates(m *mdp.MDP, o EPICOptions) ([]float64, error) {
	switch o.Coverage {
	case "", CoverageModel:
		return coverage(m, o.StateWeights)
	case CoverageDemonstrations:
		if o.StateWeights == nil {
			return nil, fmt.Errorf("irl: EPIC: the demonstrations coverage needs the demonstrations' state visits (StateWeights)")
		}
		d, err := coverage(m, o.StateWeights)
		if err != nil {
			return nil, fmt.Errorf("%w (demonstrations coverage)", err)
		}
		return d, nil
	case CoverageUniform:
		if o.StateWeights != nil {
			return nil, fmt.Errorf("irl: EPIC: the uniform coverage takes no state weights (it is uniform over all states)")
		}
		d := make([]float64, m.NumStates)
		for s := range d {
			d[s] = 1 / float64(m.NumStates)
		}
		return d, nil
	}
	_, err := ParseCoverage(string(o.Coverage))
	return nil, fmt.Errorf("irl: EPIC: %w", err)
}

// sepSparse is a function on all triples in separable-plus-sparse form,
// X(s,a,s′) = f[s*A+a] + g[s′] + t[i] (t only on stored entries i of
// non-terminal rows, nil for none), with the moments of the uniform
// distribution over the S·A·S triples.
type sepSparse struct {
	f, g, t []float64
}

// parts returns C(R) of c in separable-plus-sparse form: f(s,a) =
// R's state–action part (non-terminal s) − ψ(s) − γE ψ, g(s′) = R's
// next-state part + γψ(s′), t the transition part.
func (c *canonical) parts(m *mdp.MDP) sepSparse {
	S, A := m.NumStates, m.NumActions
	x := sepSparse{f: make([]float64, S*A), g: make([]float64, S), t: c.r.Transition}
	for s := 0; s < S; s++ {
		for a := 0; a < A; a++ {
			k := s*A + a
			x.f[k] = -c.psi[s] - c.shift
			if c.r.StateAction != nil && !m.IsTerminal(s) {
				x.f[k] += c.r.StateAction[k]
			}
		}
	}
	for y := range x.g {
		x.g[y] = c.gamma * c.psi[y]
		if c.r.NextState != nil {
			x.g[y] += c.r.NextState[y]
		}
	}
	return x
}

// centre subtracts the means of f and g in place (X's mean shifts by a
// constant, which the Pearson correlation ignores).
func (x *sepSparse) centre() {
	mf, mg := meanOf(x.f), meanOf(x.g)
	for k := range x.f {
		x.f[k] -= mf
	}
	for y := range x.g {
		x.g[y] -= mg
	}
}

// variance returns E[(X − EX)²] over all triples of a centred X:
// E f² + E g² + Var t + 2E[f t] + 2E[g t] (f and g are independent and
// centred, so E[f g] = 0 and the means of f and g do not meet t's).
func (x *sepSparse) variance(m *mdp.MDP) float64 {
	v := meanSquare(x.f) + meanSquare(x.g)
	if x.t != nil {
		n := triples(m)
		tau := x.sparseSum(m, func(i int) float64 { return x.t[i] }) / n
		v += x.sparseSum(m, func(i int) float64 { return x.t[i] * x.t[i] })/n - tau*tau
		v += 2 * x.sparseSumRow(m, func(k, i int) float64 { return (x.f[k] + x.g[m.Next[i]]) * x.t[i] }) / n
	}
	return max(v, 0)
}

// sparseSum sums h(i) over the stored entries of the non-terminal rows
// (0 when x has no sparse part).
func (x *sepSparse) sparseSum(m *mdp.MDP, h func(i int) float64) float64 {
	return x.sparseSumRow(m, func(_, i int) float64 { return h(i) })
}

// sparseSumRow sums h(k, i) over the stored entries i of the non-terminal
// rows k (0 when x has no sparse part).
func (x *sepSparse) sparseSumRow(m *mdp.MDP, h func(k, i int) float64) float64 {
	if x.t == nil {
		return 0
	}
	A := m.NumActions
	sum := 0.0
	for s := 0; s < m.NumStates; s++ {
		if m.IsTerminal(s) {
			continue
		}
		for k := s * A; k < (s+1)*A; k++ {
			for i := m.RowPtr[k]; i < m.RowPtr[k+1]; i++ {
				sum += h(k, i)
			}
		}
	}
	return sum
}

// uniformPearson finishes EPIC under CoverageUniform: the Pearson
// correlation of C(R1), C(R2) under the uniform distribution over all S·A·S
// triples, and the distance as half the RMS difference of the standardized
// rewards (the standardized difference is itself separable-plus-sparse, so
// its second moment is taken in closed form without cancellation near ρ = 1).
func uniformPearson(m *mdp.MDP, c *[2]canonical) (EPICResult, error) {
	var x [2]sepSparse
	var sd [2]float64
	for j := range c {
		x[j] = c[j].parts(m)
		x[j].centre()
		sd[j] = math.Sqrt(x[j].variance(m))
		if !(sd[j] > 1e-10*c[j].scale) {
			return EPICResult{}, fmt.Errorf("irl: EPIC: r%d is %w", j+1, ErrConstantReward)
		}
	}
	h := sepSparse{f: make([]float64, len(x[0].f)), g: make([]float64, len(x[0].g))}
	for k := range h.f {
		h.f[k] = x[0].f[k]/sd[0] - x[1].f[k]/sd[1]
	}
	for y := range h.g {
		h.g[y] = x[0].g[y]/sd[0] - x[1].g[y]/sd[1]
	}
	if x[0].t != nil || x[1].t != nil {
		h.t = make([]float64, len(m.Next))
		for j, sign := range [2]float64{1, -1} {
			if x[j].t != nil {
				for i, v := range x[j].t {
					h.t[i] += sign * v / sd[j]
				}
			}
		}
	}
	diff2 := h.variance(m)
	return EPICResult{Distance: min(0.5*math.Sqrt(diff2), 1), Pearson: max(-1, min(1-diff2/2, 1))}, nil
}

// triples returns S·A·S, the number of triples of m, as a float.
func triples(m *mdp.MDP) float64 {
	return float64(m.NumStates) * float64(m.NumActions) * float64(m.NumStates)
}

// meanOf returns the arithmetic mean of v.
func meanOf(v []float64) float64 {
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

// meanSquare returns the mean of the squares of v.
func meanSquare(v []float64) float64 {
	sum := 0.0
	for _, x := range v {
		sum += x * x
	}
	return sum / float64(len(v))
}
