package features

import (
	"math"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// TestPredictLanderEndClosedForms: the end events of one frame with the
// engines off from hand-made observations, against their closed forms in
// world units: the frame takes ẏ down by 0.2 m/s and y by 0.004 m
// (Box2D's semi-implicit Euler under gravity 10); y = 0 puts a level
// lander's feet on the pad, and the floor stops them there; tilted
// by θ the lower foot sits 0.6·(1 − cos θ) − 0.75·|sin θ| above the level
// one; a fall faster than 2 m/s onto the floor is a crash, and so is a
// hull vertex on the ground (upside down, the hull's top 17/30 m above
// its origin is below it) and |x| ≥ 1; rest needs a foot on the ground
// after the frame, the engines off and the speed and turn rate under
// Box2D's sleep tolerances (0.01 m/s, 2°/s).
func TestPredictLanderEndClosedForms(t *testing.T) {
	const hh, fps, drop = 20.0 / 3, 50.0, 0.004
	tilt := 0.6*(1-math.Cos(0.2)) - 0.75*math.Sin(0.2) // the lower foot's offset at |θ| = 0.2
	obs := func(x, y, vy, angle, om, leg1, leg2 float64) []float64 {
		return []float64{x, y / hh, 0, vy * hh / fps, angle, om * 20 / fps, leg1, leg2}
	}
	for _, c := range []struct {
		name       string
		obs        []float64
		main, lat  float64
		leg1, leg2 bool
		crash      bool
		rest       bool
		anyContact bool // the contacts are not the point (an engine or a turn tilts or lifts the lander)
	}{
		{name: "level, feet a frame's drop above", obs: obs(0, drop+1e-6, 0, 0, 0, 0, 0)},
		{name: "level, feet on the pad", obs: obs(0, 0, 0, 0, 0, 0, 0), leg1: true, leg2: true, rest: true},
		{name: "level, falling at 1.5 m/s", obs: obs(0, 0.01, -1.5, 0, 0, 0, 0), leg1: true, leg2: true},
		{name: "level, falling at 2.5 m/s", obs: obs(0, 0.01, -2.5, 0, 0, 0, 0), leg1: true, leg2: true, crash: true},
		{name: "tilted, the low foot just above", obs: obs(0, -tilt+drop+1e-6, 0, -0.2, 0, 0, 0)},
		{name: "tilted, the low foot (leg 1) down", obs: obs(0, -tilt+drop-1e-4, 0, -0.2, 0, 0, 0), leg1: true, rest: true},
		{name: "tilted the other way (leg 2)", obs: obs(0, -tilt+drop-1e-4, 0, 0.2, 0, 0, 0), leg2: true, rest: true},
		{name: "still in the air", obs: obs(0, 0.5, 0, 0, 0, 0, 0)},
		{name: "off-screen", obs: obs(-1, 5, 0, 0, 0, 0, 0), crash: true},
		{name: "upside down, hull above the pad", obs: obs(0, 0, 0, math.Pi, 0, 0, 0)},
		{name: "upside down, hull on the pad", obs: obs(0, -0.05, 0, math.Pi, 0, 0, 0), crash: true},
		{name: "standing on both legs", obs: obs(0, 0, 0, 0, 0, 1, 1), leg1: true, leg2: true, rest: true},
		{name: "a flag not needed", obs: obs(0, 0, 0, 0, 0, 0, 1), leg1: true, leg2: true, rest: true},
		{name: "main engine on (its 0.6 throttle lifts the lander off)", obs: obs(0, 0, 0, 0, 0, 1, 1), main: 0.2},
		{name: "side engine on", obs: obs(0, 0, 0, 0, 0, 1, 1), lat: -0.7, anyContact: true},
		{name: "below the sleep speed", obs: obs(0, 0, -0.0099, 0, 0, 1, 1), leg1: true, leg2: true, rest: true},
		{name: "above the sleep speed", obs: obs(0, 0, -0.0101, 0, 0, 1, 1), leg1: true, leg2: true},
		{name: "turning too fast to sleep", obs: obs(0, 0, 0, 0, math.Pi/90*1.01, 1, 1), anyContact: true},
	} {
		e := PredictLanderEnd(c.obs, c.main, c.lat, 1)
		if !c.anyContact && e.Contact != [2]bool{c.leg1, c.leg2} || e.Crash != c.crash || e.Rest != c.rest {
			t.Errorf("%s: %+v, want contacts %v %v, crash %v, rest %v", c.name, e, c.leg1, c.leg2, c.crash, c.rest)
		}
	}
	// Through the block: leg columns are the predicted contact less the
	// flag.
	h := HeldLander{Frames: 8, Terms: []string{"leg1", "leg2", "rest", "crash"}}
	x := append(obs(0.1, 0, 0, 0, 0, 1, 0), -1, 0) // landed on leg 1, engines off
	got := make([]float64, len(h.Terms))
	h.eval(got, x)
	want := []float64{0, 1, 1, 0}
	for i := range want {
		approx.Equal(t, h.Terms[i], got[i], want[i], 0, 0)
	}
}
