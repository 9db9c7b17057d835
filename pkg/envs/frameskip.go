package envs

import "fmt"

// FrameSkip is an Env whose every step repeats its action for Skip steps
// (frames) of the wrapped Env, returning the last observation and the sum
// of the frames' rewards, undiscounted; the repetition stops early at
// termination or truncation. It is RL Zoo's FrameSkip wrapper (the
// frame_skip of its Atari wrapper) without the maximum over frames: an
// agent acting through it decides once every Skip frames and holds its
// action in between. Skip 1 is the wrapped Env itself, step for step.
type FrameSkip struct {
	// Env is the wrapped simulator.
	Env Env
	// Skip is the number of frames per step (≥ 1).
	Skip int
}

// NewFrameSkip wraps e so that each step holds its action for skip frames;
// skip < 1 is an error.
func NewFrameSkip(e Env, skip int) (*FrameSkip, error) {
	if skip < 1 {
		return nil, fmt.Errorf("envs: frame skip %d, want ≥ 1 (1: every frame)", skip)
	}
	return &FrameSkip{Env: e, Skip: skip}, nil
}

// Reset resets the wrapped Env.
func (f *FrameSkip) Reset(seed uint64) []float64 { return f.Env.Reset(seed) }

// Step applies action for up to Skip frames and returns the last
// observation, the sum of the frames' rewards, and whether the last frame
// terminated or truncated the episode.
func (f *FrameSkip) Step(action []float64) (obs []float64, reward float64, terminated, truncated bool) {
	for range f.Skip {
		var r float64
		obs, r, terminated, truncated = f.Env.Step(action)
		reward += r
		if terminated || truncated {
			break
		}
	}
	return obs, reward, terminated, truncated
}

// ObservationSpace is the wrapped Env's.
func (f *FrameSkip) ObservationSpace() Space { return f.Env.ObservationSpace() }

// ActionSpace is the wrapped Env's.
func (f *FrameSkip) ActionSpace() Space { return f.Env.ActionSpace() }

// MaxEpisodeSteps returns the wrapped Env's time limit T in steps of Skip
// frames, ⌈T/Skip⌉, or 0 when the wrapped Env reports no limit.
func (f *FrameSkip) MaxEpisodeSteps() int {
	lim, ok := f.Env.(interface{ MaxEpisodeSteps() int })
	if !ok || lim.MaxEpisodeSteps() <= 0 {
		return 0
	}
	return (lim.MaxEpisodeSteps() + f.Skip - 1) / f.Skip
}
