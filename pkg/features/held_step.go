package features

import (
	"math"

	"gonum.org/v1/gonum/floats"
)

// ObservedHeldLanderTerms lists the HeldLander terms that an observed
// held step defines (HeldLander.Observed): the shaping potential's terms,
// the throttles, the legs' contacts and the two ways an episode ends.
var ObservedHeldLanderTerms = []string{"distance", "speed", "angle", "main", "side", "leg1", "leg2", "rest", "crash"}

// evalStep writes the block's columns for the observed held step from
// point x (observation, then action) to the observation next after it
// into dst; terminated tells whether the step ended the episode.
//
//	distance  ‖(x′, y′)‖ − ‖(x, y)‖      speed  ‖(ẋ′, ẏ′)‖ − ‖(ẋ, ẏ)‖
//	angle     |angle′| − |angle|          main, side  the throttles, as eval
//	leg1/2    leg′ − leg                  rest   1 when the step ended the episode at rest
//	crash     1 when it ended it otherwise
//
// Gymnasium ends an episode with +100 when the lander falls asleep, and
// Box2D zeroes a body's velocities when it puts it to sleep, so an episode
// that ends with the lander's speed and turn rate exactly 0 ended at rest;
// any other end (the hull's contact, |x| ≥ 1) is the −100 of a crash. With
// the weights −100, −100, −100, −0.30·Frames, −0.03·Frames, 10, 10, 100,
// −100 these columns are the true reward of a held step that does not end
// the episode (its shaping telescopes over the frames). On a step that
// ends it the shaping columns are 0: Gymnasium's ±100 replaces the last
// frame's shaping, and the frame a hull strikes the ground takes most of
// the lander's speed (its shaping +40 or more), which would otherwise pay a
// crash for the speed the impact took; what is left out is the shaping of
// the step's frames before the last and the fuel of those after it.
func (h *HeldLander) evalStep(dst, x, next []float64, terminated bool) {
	m, s := LanderThrottles(x[8], x[9])
	rest := terminated && next[2] == 0 && next[3] == 0 && next[5] == 0
	for i, t := range h.Terms {
		v := 0.0
		if terminated && t != "main" && t != "side" && t != "rest" && t != "crash" {
			dst[i] = 0 // the ±100 replaces the last frame's shaping (see above)
			continue
		}
		if c, ok := stepTerm(t, x, next, m, s); ok {
			dst[i] = c
			continue
		}
		switch t {
		case "leg1":
			v = next[6] - x[6]
		case "leg2":
			v = next[7] - x[7]
		case "rest":
			v = b2f(rest)
		case "crash":
			v = b2f(terminated && !rest)
		}
		dst[i] = v
	}
}

// StepDependent reports whether some of the spec's features depend on the
// observed step (a HeldLander block with Observed): EvalStep and
// RewardStep then differ from Eval and Reward.
func (s *RBFSpec) StepDependent() bool { return s.HeldLander != nil && s.HeldLander.Observed }

// EvalStep writes φ(x, x′) (length Dim) into dst, allocating it when nil
// or of the wrong length, and returns it: Eval's features of point x
// (state, then action), with an Observed HeldLander block computed from
// the observed step to the state next (the state's coordinates only) and
// whether it terminated the episode. Without such a block it is Eval.
func (s *RBFSpec) EvalStep(dst, x, next []float64, terminated bool) []float64 {
	if !s.StepDependent() {
		return s.Eval(dst, x)
	}
	dst = s.evalPoint(dst, x) // the nominal prediction of the block is not needed
	s.HeldLander.evalStep(s.heldCol(dst), x, next, terminated)
	return dst
}

// RewardStep returns θᵀφ(x, x′) (EvalStep's features) without allocating:
// the learned reward of an observed step that a policy optimizer takes.
// Without an Observed block it is Reward.
func (s *RBFSpec) RewardStep(theta, x, next []float64, terminated bool) float64 {
	if !s.StepDependent() {
		return s.Reward(theta, x)
	}
	var h [maxHeldLanderCols]float64
	c := s.heldCols()
	s.HeldLander.evalStep(h[:c], x, next, terminated)
	return s.pointReward(theta, x) + floats.Dot(s.heldCol(theta), h[:c])
}

// stepTerm returns the columns a held step's prediction and its
// observation share: each shaping term's change from observation x to
// after (the predicted or the observed next observation) and the
// throttles m and s; ok is false for the other terms.
func stepTerm(t string, x, after []float64, m, s float64) (v float64, ok bool) {
	switch t {
	case "distance":
		return math.Hypot(after[0], after[1]) - math.Hypot(x[0], x[1]), true
	case "speed":
		return math.Hypot(after[2], after[3]) - math.Hypot(x[2], x[3]), true
	case "angle":
		return math.Abs(after[4]) - math.Abs(x[4]), true
	case "main":
		return m, true
	case "side":
		return math.Abs(s), true
	}
	return 0, false
}
