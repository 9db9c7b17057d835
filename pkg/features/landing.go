package features

import "math"

// LanderEnd is what a held step of LunarLander is predicted to end in: the
// events the shaping potential's leg terms (+10 per leg in contact) and
// the episode's end (+100 at rest, −100 on a crash) reward, as functions of
// the observation before the step, its PredictLander successor and the
// throttles alone (the same map for every client: no terrain, wind or
// contact solver).
type LanderEnd struct {
	// Contact is each leg's predicted ground contact after the step (leg 1
	// is the observation's coordinate 6, on the hull's +x side): its foot,
	// on the predicted hull at the predicted angle, at or below the pad's
	// height.
	Contact [2]bool
	// Rest is true when the lander stands on a leg (the observation's
	// flags; one is enough: on a slope, or while the other's contact
	// flickers, the lander falls asleep all the same), both engines are off
	// and its speed and turn rate are below Box2D's sleep tolerances, the
	// state in which Gymnasium's lander falls asleep after half a second
	// and the episode ends with +100.
	Rest bool
	// Crash is true when a vertex of the predicted hull is at or below the
	// pad's height (Gymnasium's game_over is the hull's contact with the
	// ground) or the predicted |x| is at least 1 (off-screen): the events
	// that end the episode with −100.
	Crash bool
}

// LunarLander's geometry and Box2D's sleep tolerances behind LanderEnd.
const (
	// landerHullY is the hull origin's height above the pad (m) at
	// observation y = 0: Gymnasium measures y from LEG_DOWN/SCALE above the
	// pad, where the level lander's feet touch it.
	landerHullY = 18.0 / 30
	// landerFootAway is a foot's horizontal offset from the hull's origin
	// (m), measured, not derived: the leg is a box on a sprung joint, and
	// on 2 × 30 episodes of the heuristic (clients 0 and 4) the tilted
	// touchdowns on the pad begin where a foot 0.68–0.83 m out (one 0.98)
	// and 0.6 m down reaches the pad.
	landerFootAway = 0.75
	// landerLinearSleep and landerAngularSleep are Box2D's
	// b2_linearSleepTolerance (0.01 m/s) and b2_angularSleepTolerance (2°/s).
	landerLinearSleep  = 0.01
	landerAngularSleep = 2.0 / 180 * math.Pi
)

// landerHull is Gymnasium's LANDER_POLY in metres (pixels over SCALE 30).
var landerHull = [6][2]float64{{-14.0 / 30, 17.0 / 30}, {-17.0 / 30, 0}, {-17.0 / 30, -10.0 / 30}, {17.0 / 30, -10.0 / 30}, {17.0 / 30, 0}, {14.0 / 30, 17.0 / 30}}

// PredictLanderEnd returns the LanderEnd of holding an action with main
// and side throttles m and s (LanderThrottles) from observation obs (its 8
// coordinates), whose PredictLander successor is pred (x, y, ẋ, ẏ, angle,
// angular velocity). Heights are above the pad, taken as flat ground: off
// the pad the terrain differs and the prediction is only nominal.
func PredictLanderEnd(obs, pred []float64, m, s float64) LanderEnd {
	const hh, fps = 20.0 / 3, 50.0
	var e LanderEnd
	hy := pred[1]*hh + landerHullY // the hull origin's height
	sin, cos := math.Sincos(pred[4])
	for k, side := range [2]float64{1, -1} {
		e.Contact[k] = hy+side*landerFootAway*sin-landerHullY*cos <= 0
	}
	for _, v := range landerHull {
		if hy+v[0]*sin+v[1]*cos <= 0 {
			e.Crash = true
		}
	}
	if math.Abs(pred[0]) >= 1 {
		e.Crash = true
	}
	// World speeds from the observation: ẋ = VX·10/FPS, ẏ = VY·(20/3)/FPS,
	// ω̂ = 20·ω/FPS.
	vx, vy, om := obs[2]*fps/10, obs[3]*fps/hh, obs[5]*fps/20
	e.Rest = (obs[6] == 1 || obs[7] == 1) && m == 0 && s == 0 &&
		math.Hypot(vx, vy) <= landerLinearSleep && math.Abs(om) <= landerAngularSleep
	return e
}

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
