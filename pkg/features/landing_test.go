package features

import (
	"math"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// TestPredictLanderEndClosedForms: the end events at hand-made predicted
// states against their closed forms in world units (y = 0 puts a level
// lander's feet on the pad; its hull's bottom is 10/30 m above them, so
// the level hull reaches the pad at y = −(8/30)/(20/3) = −0.04; tilted by
// θ the foot on the low side reaches it first, at hull height
// 0.6·cos θ + 0.75·|sin θ|), and through the held block's columns.
func TestPredictLanderEndClosedForms(t *testing.T) {
	const hh = 20.0 / 3
	still := []float64{0, 0, 0, 0, 0, 0, 1, 1}
	for _, c := range []struct {
		name          string
		pred          [6]float64
		leg1, leg2    bool
		crash         bool
		obs           []float64
		m, s          float64
		rest          bool
		restWhy, note string
	}{
		{name: "level, feet just above", pred: [6]float64{0, 0.001}, obs: still, rest: true},
		{name: "level, feet on the pad", pred: [6]float64{0, 0}, leg1: true, leg2: true, obs: still, rest: true},
		{name: "level, hull just above", pred: [6]float64{0, -0.0399}, leg1: true, leg2: true, obs: still, rest: true},
		{name: "level, hull on the pad", pred: [6]float64{0, -0.0401}, leg1: true, leg2: true, crash: true, obs: still, rest: true},
		// θ = −0.2: leg 1 (+x) low; its foot touches at hull height 0.6·cos 0.2 + 0.75·sin 0.2.
		{name: "tilted, low foot just above", pred: [6]float64{0, (0.6*math.Cos(0.2)+0.75*math.Sin(0.2))/hh - 0.6/hh + 1e-4, 0, 0, -0.2}, obs: still, rest: true},
		{name: "tilted, low foot on the pad", pred: [6]float64{0, (0.6*math.Cos(0.2)+0.75*math.Sin(0.2))/hh - 0.6/hh - 1e-4, 0, 0, -0.2}, leg1: true, obs: still, rest: true},
		{name: "tilted the other way", pred: [6]float64{0, (0.6*math.Cos(0.2)+0.75*math.Sin(0.2))/hh - 0.6/hh - 1e-4, 0, 0, 0.2}, leg2: true, obs: still, rest: true},
		{name: "off-screen", pred: [6]float64{-1, 1}, crash: true, obs: still, rest: true},
		{name: "upside down in the air", pred: [6]float64{0, 0.5, 0, 0, math.Pi}, obs: still, rest: true},
		{name: "one leg is enough to rest", pred: [6]float64{0, 1}, obs: []float64{0, 0, 0, 0, 0, 0, 0, 1}, rest: true},
		{name: "no leg, no rest", pred: [6]float64{0, 1}, obs: []float64{0, 0, 0, 0, 0, 0, 0, 0}},
		{name: "main engine on", pred: [6]float64{0, 1}, obs: still, m: 0.5},
		{name: "side engine on", pred: [6]float64{0, 1}, obs: still, s: -0.7},
		// 0.01 m/s is ẋ = 0.01·10/50 = 0.002 along x, ẏ = 0.01·(20/3)/50 along y.
		{name: "below the sleep speed", pred: [6]float64{0, 1}, obs: []float64{0, 0, 0.0019, 0, 0, 0, 1, 1}, rest: true},
		{name: "above the sleep speed", pred: [6]float64{0, 1}, obs: []float64{0, 0, 0, -0.0014, 0, 0, 1, 1}},
		// 2°/s is ω̂ = 20·(π/90)/50.
		{name: "turning too fast to sleep", pred: [6]float64{0, 1}, obs: []float64{0, 0, 0, 0, 0, 0.4 * math.Pi / 90 * 1.01, 1, 1}},
	} {
		e := PredictLanderEnd(c.obs, c.pred[:], c.m, c.s)
		if e.Contact != [2]bool{c.leg1, c.leg2} || e.Crash != c.crash || e.Rest != c.rest {
			t.Errorf("%s: %+v, want contacts %v %v, crash %v, rest %v", c.name, e, c.leg1, c.leg2, c.crash, c.rest)
		}
	}
	// Through the block: leg columns are the predicted contact less the
	// flag, at a point whose prediction is computed.
	h := HeldLander{Frames: 8, Terms: []string{"leg1", "leg2", "rest", "crash", "main"}}
	x := []float64{0.1, 0.01, 0, -0.05, 0, 0, 1, 0, -1, 0} // low, sinking, leg 1 down, engines off
	var p [6]float64
	PredictLander(p[:], x, x[8], x[9], 8)
	e := PredictLanderEnd(x, p[:], 0, 0)
	got := make([]float64, 5)
	h.eval(got, x)
	want := []float64{b2f(e.Contact[0]) - 1, b2f(e.Contact[1]), b2f(e.Rest), b2f(e.Crash), 0}
	for i := range want {
		approx.Equal(t, h.Terms[i], got[i], want[i], 0, 0)
	}
	if !e.Contact[0] || !e.Contact[1] || e.Crash {
		t.Errorf("sinking at 0.05 from y = 0.01 for 8 frames: %+v, want both feet down and no crash", e)
	}
}
