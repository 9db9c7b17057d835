// Package envs defines the Gymnasium-shaped interface that fedirl's
// continuous-control simulators implement (envs/classic) and that rl/ppo
// trains on. The grid world (envs/gridworld) is a tabular model with its own
// exact transition API instead.
//
// It holds only the interface, the space types, the range of the paper's
// client indices and the FrameSkip wrapper (which repeats another Env's
// actions); it simulates nothing.
package envs

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Space describes an observation or action space: Discrete(N) when N > 0,
// otherwise a Box with per-coordinate bounds Low and High (±Inf allowed).
type Space struct {
	// N is the number of discrete values; 0 means the space is a Box.
	N int
	// Low and High bound each coordinate of a Box; both have the Box's dimension.
	Low, High []float64
}

// Dim returns the length of a value of the space: 1 for Discrete, len(Low) for a Box.
func (s Space) Dim() int {
	if s.N > 0 {
		return 1
	}
	return len(s.Low)
}

// IsDiscrete reports whether the space is Discrete(N).
func (s Space) IsDiscrete() bool { return s.N > 0 }

// Env is one simulator instance, stepped like a Gymnasium environment wrapped
// in its TimeLimit.
//
// Returned observation slices are owned by the environment and overwritten by
// the next call to Reset or Step, so stepping allocates nothing; copy them to
// keep them. A Discrete action is passed as a one-element slice holding the
// action index as a float64. Step after termination or truncation without a
// Reset is a programmer error.
type Env interface {
	// Reset starts a new episode; the initial state is drawn from a source seeded with seed.
	Reset(seed uint64) (obs []float64)
	// Step applies action and advances one time step.
	Step(action []float64) (obs []float64, reward float64, terminated, truncated bool)
	// ObservationSpace describes observations.
	ObservationSpace() Space
	// ActionSpace describes actions.
	ActionSpace() Space
}

// Sample writes a uniform random value of the space into dst (length Dim)
// and returns it: an index in [0, N) for Discrete(N), a uniform point of
// the box for a Box with finite bounds. It panics on an unbounded Box.
func (s Space) Sample(dst []float64, rng *rand.Rand) []float64 {
	if s.N > 0 {
		dst[0] = float64(rng.IntN(s.N))
		return dst
	}
	for j := range dst {
		if math.IsInf(s.Low[j], 0) || math.IsInf(s.High[j], 0) {
			panic("envs: Space.Sample on an unbounded box")
		}
		dst[j] = s.Low[j] + (s.High[j]-s.Low[j])*rng.Float64()
	}
	return dst
}

// MaxClient is the largest index of the paper's per-client perturbations
// ("client i", i = 0, 1, …, MaxClient) in every environment. LunarLander's
// client i has wind_power 10 + i, which reaches Gymnasium's bound of 20 at
// i = 10; the classic environments use the same range, so that a client index
// means the same thing in every command (their formulas would otherwise
// extrapolate to any i, e.g. Pendulum's gravity and an observation noise of
// 0.005·i).
const MaxClient = 10

// CheckClient returns an error unless 0 ≤ i ≤ MaxClient.
func CheckClient(i int) error {
	if i < 0 || i > MaxClient {
		return fmt.Errorf("client %d out of range: the paper's clients are 0..%d", i, MaxClient)
	}
	return nil
}
