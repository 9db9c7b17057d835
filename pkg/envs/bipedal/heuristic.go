package bipedal

import "math"

// Heuristic is Gymnasium's BipedalWalkerHeuristics: a three-phase gait
// (stand on one leg, put the other down, push off) with PD targets for the
// hips and knees. It has state; call Reset at the start of each episode.
//
// Its arithmetic follows the Python's under numpy 1.x: observation values
// are float32, sums with Python floats are float64, and the supporting knee
// angle, once copied from an observation, stays a float32 (so that a
// float32 − float32 difference rounds to float32) until it is next
// incremented.
type Heuristic struct {
	state, moving, supporting int
	kneeAngle                 float64
	kneeF32                   bool // supporting_knee_angle holds an np.float32
}

// Gymnasium's constants for the heuristic.
const (
	stayOnOneLeg, putOtherDown, pushOff = 1, 2, 3
	heurSpeed                           = 0.29 // will fall forward on higher speed
	supportKneeAngle                    = 0.1
)

// NewHeuristic returns the controller in its initial state.
func NewHeuristic() *Heuristic {
	h := &Heuristic{}
	h.Reset()
	return h
}

// Reset returns the controller to its initial state (a fresh Python instance).
func (h *Heuristic) Reset() {
	*h = Heuristic{state: stayOnOneLeg, moving: 0, supporting: 1, kneeAngle: supportKneeAngle}
}

// Act writes the action for observation s into dst (length 4) and returns it.
func (h *Heuristic) Act(dst, s []float64) []float64 {
	movingBase := 4 + 5*h.moving
	supportingBase := 4 + 5*h.supporting
	var hipTarg, kneeTarg [2]float64
	var hipSet, kneeSet [2]bool
	var kneeTargF32 [2]bool
	setKnee := func(leg int, v float64, isF32 bool) { kneeTarg[leg], kneeSet[leg], kneeTargF32[leg] = v, true, isF32 }
	if h.state == stayOnOneLeg {
		hipTarg[h.moving], hipSet[h.moving] = 1.1, true
		setKnee(h.moving, -0.6, false)
		h.kneeAngle, h.kneeF32 = h.kneeAngle+0.03, false
		if s[2] > heurSpeed {
			h.kneeAngle += 0.03
		}
		h.kneeAngle = math.Min(h.kneeAngle, supportKneeAngle) // min(x, 0.1) keeps x unless 0.1 < x
		setKnee(h.supporting, h.kneeAngle, h.kneeF32)
		if s[supportingBase] < 0.10 { // supporting leg is behind
			h.state = putOtherDown
		}
	}
	if h.state == putOtherDown {
		hipTarg[h.moving], hipSet[h.moving] = 0.1, true
		setKnee(h.moving, supportKneeAngle, false)
		setKnee(h.supporting, h.kneeAngle, h.kneeF32)
		if s[movingBase+4] != 0 {
			h.state = pushOff
			// Python's min(s[..], 0.1) returns the float32 unless 0.1 < it.
			if supportKneeAngle < s[movingBase+2] {
				h.kneeAngle, h.kneeF32 = supportKneeAngle, false
			} else {
				h.kneeAngle, h.kneeF32 = s[movingBase+2], true
			}
		}
	}
	if h.state == pushOff {
		setKnee(h.moving, h.kneeAngle, h.kneeF32)
		setKnee(h.supporting, 1.0, false)
		if s[supportingBase+2] > 0.88 || s[2] > 1.2*heurSpeed {
			h.state = stayOnOneLeg
			h.moving = 1 - h.moving
			h.supporting = 1 - h.moving
		}
	}
	var hipTodo, kneeTodo [2]float64
	// Python's "if hip_targ[0]:" skips unset targets and targets of exactly 0.
	if hipSet[0] && hipTarg[0] != 0 {
		hipTodo[0] = 0.9*(hipTarg[0]-s[4]) - 0.25*s[5]
	}
	if hipSet[1] && hipTarg[1] != 0 {
		hipTodo[1] = 0.9*(hipTarg[1]-s[9]) - 0.25*s[10]
	}
	kneeDiff := func(leg int, obs float64) float64 {
		if kneeTargF32[leg] {
			return float64(float32(kneeTarg[leg]) - float32(obs))
		}
		return kneeTarg[leg] - obs
	}
	if kneeSet[0] && kneeTarg[0] != 0 {
		kneeTodo[0] = 4.0*kneeDiff(0, s[6]) - 0.25*s[7]
	}
	if kneeSet[1] && kneeTarg[1] != 0 {
		kneeTodo[1] = 4.0*kneeDiff(1, s[11]) - 0.25*s[12]
	}
	hipTodo[0] -= 0.9*(0-s[0]) - 1.5*s[1] // PID to keep the head straight
	hipTodo[1] -= 0.9*(0-s[0]) - 1.5*s[1]
	kneeTodo[0] -= 15.0 * s[3] // vertical speed, to damp oscillations
	kneeTodo[1] -= 15.0 * s[3]
	a := [4]float64{hipTodo[0], kneeTodo[0], hipTodo[1], kneeTodo[1]}
	for i, v := range a {
		dst[i] = math.Max(-1, math.Min(1, 0.5*v))
	}
	return dst
}
