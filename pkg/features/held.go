package features

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// HeldLander is a block of features of an observation and an action of
// LunarLanderContinuous-v3 (Gymnasium's lunar_lander.py) whose action is
// held for Frames frames: the change of each term of the shaping potential
// Φ = −100‖(x, y)‖ − 100‖(ẋ, ẏ)‖ − 100|angle| + 10(leg₁ + leg₂) between
// the observation s and ŝ′, a nominal prediction of the observation after
// the held action (PredictLander), and the engines' throttles, whose fuel
// costs are the rest of a frame's reward (−0.30·main − 0.03·side), and
// the events that end an episode with ±100 or give the legs' +10. The
// block's eight columns, in order:
//
//	‖(x̂′, ŷ′)‖ − ‖(x, y)‖,  ‖(ẋ̂′, ŷ̇′)‖ − ‖(ẋ, ẏ)‖,  |angle′̂| − |angle|,  main(a),  side(a),
//	touchdown,  touchdown·‖(ẋ̂′, ŷ̇′)‖,  off-screen,
//	leg1,  leg2,  rest,  crash
//
// so that the reward of a held step without leg contacts or termination is,
// up to the prediction's error, −100, −100, −100, −0.30·Frames and
// −0.03·Frames times the first five. Touchdown is 1 when no leg touches and
// the prediction reaches the pad's height (ŷ′ ≤ 0), where a landing or a
// crash begins, whose outcome the touchdown speed tells apart; off-screen is
// 1 when |x̂′| ≥ 1, where the episode ends with −100. The last four are the
// end of the episode and the legs' +10 (LanderEnd): leg1 and leg2 are each
// leg's predicted contact after the step less its contact flag now (the
// change of the potential's leg terms over ten), rest is 1 when a foot is
// predicted on the ground, engines off, below Box2D's sleep tolerances (where the
// episode ends with +100 once it has stayed so for half a second), and
// crash is 1 when the feet are predicted to hit the ground faster than
// 2 m/s, the hull to reach it, or |x̂′| ≥ 1 (where it ends with −100);
// these four come from a prediction with a floor under the feet
// (PredictLanderEnd). Terms names the
// columns the block has, in order (HeldLanderTerms lists them all), so that
// the spec's JSON, and every key made from it, says what the block holds. The point's first 8 coordinates are the
// observation, the next 2 the action (main, lateral), as the control
// study's LunarLander lattice orders its axes.
type HeldLander struct {
	// Frames is the number of frames the action is held (≥ 1).
	Frames int `json:"frames"`
	// Terms names the block's columns, in order: a non-empty subset of
	// HeldLanderTerms without repeats (of ObservedHeldLanderTerms when
	// Observed).
	Terms []string `json:"terms"`
	// Observed makes the block a feature of the observed held step
	// (s, a, s′) wherever that step is known (RBFSpec.EvalStep): each
	// term's change and event from the observation after the step instead
	// of a prediction of it, so that a reward of these features is the
	// true reward's form on every step a simulator takes (HeldLander.evalStep).
	// On a lattice point without an observed step (RBFSpec.Eval: the
	// server's probe) the block is the nominal prediction, as without
	// Observed.
	Observed bool `json:"observed,omitempty"`
}

// HeldLanderTerms lists the columns a HeldLander block can have, in the
// order of the type's documentation.
var HeldLanderTerms = []string{"distance", "speed", "angle", "main", "side", "touchdown", "touchdown_speed", "off_screen",
	"leg1", "leg2", "rest", "crash"}

// maxHeldLanderCols bounds a HeldLander block's columns (a stack buffer's size).
const maxHeldLanderCols = 12

// Gymnasium's LunarLander constants (lunar_lander.py) and the lander's
// rigid-body constants that Box2D derives from them.
const (
	landerDt = 1.0 / 50 // 1/FPS
	// landerGravity is the world's gravity (m/s²), Gymnasium's default.
	landerGravity = -10.0
	// landerMass is the lander's mass with its two legs (kg): the hull
	// polygon's area 0.9633 m² at density 5 and two 4×16-pixel legs at
	// density 1 (SCALE 30 pixels per metre).
	landerMass = 5*0.96333333 + 2*(4.0/30)*(16.0/30)
	// landerInertia is the moment of inertia about the hull's centroid
	// (kg m²): the hull polygon's 0.7839 (Box2D's polygon formula) and the
	// legs as point masses at their joints' offset (±20/30, −18/30) from
	// the hull's origin, 0.1013 below its centroid.
	landerInertia = 0.78388 + 2*(4.0/30)*(16.0/30)*((20.0/30)*(20.0/30)+(18.0/30+0.10131)*(18.0/30+0.10131))
	// landerMainDV is the speed change (m/s) of one frame of the main
	// engine at full throttle: MAIN_ENGINE_POWER 13 times the nozzle's
	// offset 4/SCALE, over the mass (the dispersion draws' mean, 0).
	landerMainDV = 13 * (4.0 / 30) / landerMass
	// landerSideDV is the speed change of one frame of a side engine at
	// full throttle: SIDE_ENGINE_POWER 0.6 times SIDE_ENGINE_AWAY 12/SCALE.
	landerSideDV = 0.6 * (12.0 / 30) / landerMass
)

// Validate returns an error wrapping ErrRBFSpec naming the bad field.
func (h *HeldLander) Validate(axes int) error {
	switch {
	case h.Frames < 1:
		return fmt.Errorf("%w: held_lander.frames: %d, want ≥ 1", ErrRBFSpec, h.Frames)
	case axes != 10:
		return fmt.Errorf("%w: held_lander: the spec has %d axes, want LunarLander's 8 observation and 2 action axes", ErrRBFSpec, axes)
	case len(h.Terms) == 0:
		return fmt.Errorf("%w: held_lander.terms: empty, want some of %s", ErrRBFSpec, strings.Join(HeldLanderTerms, ", "))
	}
	for i, t := range h.Terms {
		if h.Observed && !slices.Contains(ObservedHeldLanderTerms, t) {
			return fmt.Errorf("%w: held_lander.terms[%d]: %q has no observed counterpart, want one of %s with observed", ErrRBFSpec, i, t, strings.Join(ObservedHeldLanderTerms, ", "))
		}
		if !slices.Contains(HeldLanderTerms, t) {
			return fmt.Errorf("%w: held_lander.terms[%d]: %q, want one of %s", ErrRBFSpec, i, t, strings.Join(HeldLanderTerms, ", "))
		}
		if slices.Contains(h.Terms[:i], t) {
			return fmt.Errorf("%w: held_lander.terms[%d]: %q repeated", ErrRBFSpec, i, t)
		}
	}
	return nil
}

// LanderThrottles returns the main engine's throttle (0 off, else in [0.5,
// 1]) and the side engine's signed throttle (0 off, else ±[0.5, 1]) of a
// continuous LunarLander action, as Gymnasium computes them.
func LanderThrottles(main, lateral float64) (m, s float64) {
	main, lateral = math.Max(-1, math.Min(1, main)), math.Max(-1, math.Min(1, lateral))
	if main > 0 {
		m = (main + 1) / 2
	}
	if math.Abs(lateral) > 0.5 {
		s = math.Copysign(math.Abs(lateral), lateral)
	}
	return m, s
}

// PredictLander writes into dst (length ≥ 6) the nominal prediction of
// LunarLander's observation coordinates (x, y, ẋ, ẏ, angle, angular
// velocity) after holding action (main, lateral) for frames frames from
// observation obs, and returns dst. Each frame applies the engines'
// impulses as Gymnasium does with its dispersion draws at their mean 0 —
// the main engine along the hull's axis through its centroid, a side
// engine sideways with the torque of its off-centre nozzle — then one
// Box2D step of semi-implicit Euler under gravity. It leaves out wind,
// turbulence, contacts and the legs' joints: a prediction, not a simulation.
func PredictLander(dst, obs []float64, main, lateral float64, frames int) []float64 {
	p, _ := predictLander(dst, obs, main, lateral, frames, false)
	return p
}

// predictLander is PredictLander, and with ground set it puts a floor
// under the feet (obs has the 8 coordinates, leg flags included): after
// each frame, a foot below the ground's height (flat; the pad's, or where
// the lower foot stands while a leg touches, landerGround) lifts the
// lander until it stands on it and stops its fall (ẏ ≥ 0), as the legs
// hold a lander that stands on them, where PredictLander lets it fall
// through. It also returns the largest downward speed (m/s) the floor
// stopped.
func predictLander(dst, obs []float64, main, lateral float64, frames int, ground bool) ([]float64, float64) {
	const hw, hh, fps = landerHalfW, landerHalfH, landerFPS
	X, Y := obs[0]*hw, obs[1]*hh
	VX, VY, om := landerVelocity(obs)
	th := obs[4]
	m, s := LanderThrottles(main, lateral)
	floor, impact := 0.0, 0.0
	if ground {
		floor = landerGround(obs)
	}
	for range frames {
		sin, cos := math.Sincos(th)
		if m > 0 { // along the hull's axis (−sin θ, cos θ)
			VX -= sin * landerMainDV * m
			VY += cos * landerMainDV * m
		}
		if s != 0 { // sideways (cos θ, sin θ), the sign of lateral
			VX += cos * landerSideDV * s
			VY += sin * landerSideDV * s
			// The nozzle's lever arm about the centroid: Gymnasium's 17
			// and 14 pixels less the centroid's 0.1013 m.
			arm := (17.0/30-0.10131)*sin*sin + (14.0/30-0.10131)*cos*cos
			om -= 0.6 * (12.0 / 30) * s * arm / landerInertia
		}
		VY += landerGravity * landerDt
		X += VX * landerDt
		Y += VY * landerDt
		th += om * landerDt
		if f := lowerFoot(Y, th) - floor; ground && f < 0 {
			Y -= f
			impact = math.Max(impact, -VY)
			VY = math.Max(VY, 0)
		}
	}
	dst[0], dst[1] = X/hw, Y/hh
	dst[2], dst[3] = VX*hw/fps, VY*hh/fps
	dst[4], dst[5] = th, om*20/fps
	return dst[:6], impact
}

// Observation units to world units: x = (X − W/2)/(W/2), y likewise over
// H/2, ẋ = VX·(W/2)/FPS, ẏ = VY·(H/2)/FPS, ω̂ = 20·ω/FPS, with W/2 = 10 m
// and H/2 = 20/3 m.
const landerHalfW, landerHalfH, landerFPS = 10.0, 20.0 / 3, 50.0

// landerVelocity returns the world velocities (m/s, rad/s) of observation
// obs: VX, VY and the angular velocity ω.
func landerVelocity(obs []float64) (vx, vy, om float64) {
	return obs[2] * landerFPS / landerHalfW, obs[3] * landerFPS / landerHalfH, obs[5] * landerFPS / 20
}

// eval writes the block's columns at point x (observation, then action) into dst.
func (h *HeldLander) eval(dst, x []float64) {
	var p [6]float64
	PredictLander(p[:], x, x[8], x[9], h.Frames)
	m, s := LanderThrottles(x[8], x[9])
	touch := p[1] <= 0 && x[6] == 0 && x[7] == 0
	var end LanderEnd
	if h.hasEnd() {
		end = PredictLanderEnd(x, x[8], x[9], h.Frames)
	}
	for i, t := range h.Terms {
		v, ok := stepTerm(t, x, p[:], m, s)
		if ok {
			dst[i] = v
			continue
		}
		switch t {
		case "touchdown":
			if touch {
				v = 1
			}
		case "touchdown_speed":
			if touch {
				v = math.Hypot(p[2], p[3])
			}
		case "off_screen":
			if math.Abs(p[0]) >= 1 {
				v = 1
			}
		case "leg1":
			v = b2f(end.Contact[0]) - x[6]
		case "leg2":
			v = b2f(end.Contact[1]) - x[7]
		case "rest":
			v = b2f(end.Rest)
		case "crash":
			v = b2f(end.Crash)
		}
		dst[i] = v
	}
}

// hasEnd reports whether the block has a LanderEnd term.
func (h *HeldLander) hasEnd() bool {
	for _, t := range h.Terms {
		switch t {
		case "leg1", "leg2", "rest", "crash":
			return true
		}
	}
	return false
}

// names returns the labels of the block's columns: each term and the frames.
func (h *HeldLander) names() []string {
	out := make([]string, len(h.Terms))
	for i, t := range h.Terms {
		out[i] = fmt.Sprintf("held%d %s", h.Frames, t)
	}
	return out
}
