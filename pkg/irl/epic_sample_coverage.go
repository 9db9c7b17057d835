package irl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// SampleCoverage is a coverage distribution for SampleEPIC, named like the
// exact coverages (Coverage): a sampler of the transitions (s, a, s′) ∼ D at
// which rewards are compared, and of the canonicalization's states S′ ∼ D_S
// and actions A ∼ D_A. An environment without a lattice model builds one
// from its simulator or its data (e.g. CoverageDemonstrations: transitions
// resampled from the demonstrations, states from their visits, actions
// uniform over the action space); ModelSampleCoverage builds the sample
// version of an exact coverage on a tabular MDP.
type SampleCoverage struct {
	// Name is the coverage's name in tables (CoverageModel, CoverageUniform,
	// CoverageDemonstrations).
	Name Coverage
	// Transition draws one (s, a, s′) ∼ D.
	Transition func(rng *rand.Rand) Transition
	// State draws one S′ ∼ D_S.
	State func(rng *rand.Rand) []float64
	// Action draws one A ∼ D_A.
	Action func(rng *rand.Rand) []float64
}

// Draw returns a SampleSet of nBatch transitions and nMean
// canonicalization samples drawn from rng in a fixed order (the batch,
// then each pair's state and action), so the same seed gives the same set.
func (c SampleCoverage) Draw(rng *rand.Rand, nBatch, nMean int) (SampleSet, error) {
	if c.Transition == nil || c.State == nil || c.Action == nil {
		return SampleSet{}, fmt.Errorf("irl: sample coverage %q: a sampler is missing", c.Name)
	}
	if nBatch < 0 || nMean < 0 {
		return SampleSet{}, fmt.Errorf("irl: sample coverage %q: negative sample size (batch %d, mean samples %d)", c.Name, nBatch, nMean)
	}
	x := SampleSet{Batch: make([]Transition, nBatch), States: make([][]float64, nMean), Actions: make([][]float64, nMean)}
	for i := range x.Batch {
		x.Batch[i] = c.Transition(rng)
	}
	for j := range x.States {
		x.States[j] = c.State(rng)
		x.Actions[j] = c.Action(rng)
	}
	return x, nil
}

// NewSampleCoverage returns the coverage named name that draws states
// from state (D_S), actions from action (D_A) and next states from step:
// a batch transition is s ∼ D_S, a ∼ D_A, s′ = step(rng, s, a), and the
// canonicalization samples are S′ ∼ D_S, A ∼ D_A. This is the shape of
// every coverage of Coverage, for an environment with or without a model:
// CoverageModel with D_S uniform over the state space and step the
// simulator (reset to s, one step with a); CoverageDemonstrations with D_S
// resampling the demonstrations' states where an action is taken;
// CoverageUniform with step ignoring (s, a) and drawing s′ ∼ D_S. step is
// called with vectors it must not modify; a simulator whose state cannot
// be set has no step, and its coverage is its own rollouts' (a SampleCoverage
// with its own Transition).
func NewSampleCoverage(name Coverage, state, action func(rng *rand.Rand) []float64, step func(rng *rand.Rand, s, a []float64) []float64) (SampleCoverage, error) {
	if _, err := ParseCoverage(string(name)); err != nil {
		return SampleCoverage{}, err
	}
	if state == nil || action == nil || step == nil {
		return SampleCoverage{}, fmt.Errorf("irl: sample coverage %q: a nil state, action or step function", name)
	}
	return SampleCoverage{Name: name, State: state, Action: action,
		Transition: func(rng *rand.Rand) Transition {
			s := state(rng)
			a := action(rng)
			return Transition{State: s, Action: a, Next: step(rng, s, a)}
		}}, nil
}

// ModelSampleCoverage returns the sample version of the exact coverage of o
// on m (see Coverage), with a state s encoded as the vector {s} and an
// action a as {a}:
//
//   - CoverageModel and CoverageDemonstrations: s ∼ D_S (EPICOptions'
//     weights on the non-terminal states, normalized), a uniform,
//     s′ ∼ P(·|s,a); S′ ∼ D_S, A uniform;
//   - CoverageUniform: s, s′ uniform over all states, a uniform; S′ uniform
//     over all states, A uniform.
//
// SampleEPIC on its draws, with rewards from SampleRewardOf, estimates
// EPICTransitions(m, ·, ·, o).
func ModelSampleCoverage(m *mdp.MDP, o EPICOptions) (SampleCoverage, error) {
	if m == nil {
		return SampleCoverage{}, fmt.Errorf("irl: ModelSampleCoverage: nil MDP")
	}
	if err := m.Validate(); err != nil {
		return SampleCoverage{}, fmt.Errorf("irl: ModelSampleCoverage: %w", err)
	}
	d, err := coverageStates(m, o)
	if err != nil {
		return SampleCoverage{}, err
	}
	name := o.Coverage
	if name == "" {
		name = CoverageModel
	}
	cdf := make([]float64, len(d))
	sum := 0.0
	for s, p := range d {
		sum += p
		cdf[s] = sum
	}
	last := 0
	for s, p := range d {
		if p > 0 {
			last = s
		}
	}
	state := func(rng *rand.Rand) int {
		s := sort.SearchFloat64s(cdf, rng.Float64()*sum)
		// SearchFloat64s finds the first cdf ≥ u; skip zero-mass states it may land on at u = cdf exactly.
		for s < last && d[s] == 0 {
			s++
		}
		return min(s, last)
	}
	A := m.NumActions
	enc := func(i int) []float64 { return []float64{float64(i)} }
	drawState := func(rng *rand.Rand) []float64 { return enc(state(rng)) }
	drawAction := func(rng *rand.Rand) []float64 { return enc(rng.IntN(A)) }
	step := func(rng *rand.Rand, s, a []float64) []float64 { return enc(m.SampleNext(rng, int(s[0]), int(a[0]))) }
	if name == CoverageUniform {
		step = func(rng *rand.Rand, _, _ []float64) []float64 { return drawState(rng) } // d is uniform over all states
	}
	return NewSampleCoverage(name, drawState, drawAction, step)
}

// SampleRewardOf returns r as a SampleReward on the encoding of
// ModelSampleCoverage (state s as {s}, action a as {a}), with R(s,a,s′) on
// every triple as TransitionReward defines it. At a point that encodes no
// triple of m (a non-integer or out-of-range index, or a vector of another
// length) it returns NaN, which SampleEPIC reports as an error.
func SampleRewardOf(m *mdp.MDP, r TransitionReward) (SampleReward, error) {
	if m == nil {
		return nil, fmt.Errorf("irl: SampleRewardOf: nil MDP")
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("irl: SampleRewardOf: %w", err)
	}
	if err := r.check(m, "reward"); err != nil {
		return nil, err
	}
	S, A := m.NumStates, m.NumActions
	index := func(v []float64, n int) int {
		if len(v) != 1 || v[0] != math.Trunc(v[0]) || v[0] < 0 || v[0] >= float64(n) {
			return -1
		}
		return int(v[0])
	}
	return func(sv, av, nv []float64) float64 {
		s, a, y := index(sv, S), index(av, A), index(nv, S)
		if s < 0 || a < 0 || y < 0 {
			return math.NaN()
		}
		v := 0.0
		if r.NextState != nil {
			v += r.NextState[y]
		}
		if m.IsTerminal(s) {
			return v
		}
		k := s*A + a
		if r.StateAction != nil {
			v += r.StateAction[k]
		}
		if r.Transition != nil {
			for i := m.RowPtr[k]; i < m.RowPtr[k+1]; i++ {
				if int(m.Next[i]) == y {
					v += r.Transition[i]
					break
				}
			}
		}
		return v
	}, nil
}
