package features

import "math"

// LanderEnd is what a held step of LunarLander is predicted to end in: the
// events the shaping potential's leg terms (+10 per leg in contact) and
// the episode's end (+100 at rest, −100 on a crash) reward, as functions of
// the observation before the step and the action alone (the same map for
// every client: no terrain, wind or contact solver), from the step's
// PredictLander prediction with a floor under the feet (the legs stop the
// fall where a foot meets the ground).
type LanderEnd struct {
	// Contact is each leg's predicted ground contact after the step (leg 1
	// is the observation's coordinate 6, on the hull's +x side): its foot,
	// on the predicted hull at the predicted angle, on the ground.
	Contact [2]bool
	// Rest is true when a foot is predicted on the ground (Contact; not the
	// observation's flags, which flicker while the lander settles and which
	// a lattice with one point per flag does not have), both engines are
	// off and the speed and turn rate are below Box2D's sleep tolerances:
	// the state in which Gymnasium's lander falls asleep after half a
	// second and the episode ends with +100.
	Rest bool
	// Crash is true when the feet hit the ground faster than
	// landerCrashSpeed, a vertex of the predicted hull reaches the ground
	// (Gymnasium's game_over is the hull's contact with it: a lander tipped
	// over) or the predicted |x| is at least 1 (off-screen): the events
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
	// landerCrashSpeed is the speed (m/s) of the feet's impact above which
	// LanderEnd predicts a crash, measured, not derived: on 2,676 recorded
	// held steps (TestPredictLanderEnd's), 25 of the 41 that ended in a
	// crash hit the floor of the prediction faster than 2 m/s, and 43 of the
	// 924 others that touched it (the rest of the crashes tipped over or
	// left the screen).
	landerCrashSpeed = 2.0
)

// landerHull is Gymnasium's LANDER_POLY in metres (pixels over SCALE 30).
var landerHull = [6][2]float64{{-14.0 / 30, 17.0 / 30}, {-17.0 / 30, 0}, {-17.0 / 30, -10.0 / 30}, {17.0 / 30, -10.0 / 30}, {17.0 / 30, 0}, {14.0 / 30, 17.0 / 30}}

// PredictLanderEnd returns the LanderEnd of holding action (main, lateral)
// for frames frames from observation obs (its 8 coordinates). Heights are
// above the ground, taken as flat: at the pad's height in flight, and
// where the lower foot stands while a leg touches (landerGround: off the
// pad the terrain is higher or lower).
func PredictLanderEnd(obs []float64, main, lateral float64, frames int) LanderEnd {
	var e LanderEnd
	var pred [6]float64
	_, impact := predictLander(pred[:], obs, main, lateral, frames, true)
	m, s := LanderThrottles(main, lateral)
	hy := pred[1]*landerHalfH + landerHullY - landerGround(obs) // the hull origin's height
	sin, cos := math.Sincos(pred[4])
	for k, side := range [2]float64{1, -1} {
		e.Contact[k] = hy+side*landerFootAway*sin-landerHullY*cos <= 1e-9 // the floor's rounding
	}
	for _, v := range landerHull {
		if hy+v[0]*sin+v[1]*cos <= 0 {
			e.Crash = true
		}
	}
	if math.Abs(pred[0]) >= 1 || impact > landerCrashSpeed {
		e.Crash = true
	}
	vx, vy, om := landerVelocity(obs)
	e.Rest = (e.Contact[0] || e.Contact[1]) && m == 0 && s == 0 &&
		math.Hypot(vx, vy) <= landerLinearSleep && math.Abs(om) <= landerAngularSleep
	return e
}

// lowerFoot returns the height (m) of the lower foot above the pad's level
// for a hull at observation height y (world units from the observation's
// origin, Y = y·H/2) and angle th.
func lowerFoot(Y, th float64) float64 {
	sin, cos := math.Sincos(th)
	return Y + landerHullY*(1-cos) - landerFootAway*math.Abs(sin)
}

// landerGround returns the height (m, above the pad's level) of the ground
// under observation obs (its 8 coordinates): where its lower foot is when
// a leg touches, else the pad's (0).
func landerGround(obs []float64) float64 {
	if obs[6] == 1 || obs[7] == 1 {
		return lowerFoot(obs[1]*20/3, obs[4])
	}
	return 0
}

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
