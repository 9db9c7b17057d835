package privacy

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestCentralCalibrate: the sensitivity of a weighted mean of vectors
// clipped to C is 2C·max α_i (2C/K for uniform weights), σ is the local
// mechanism's for the same (ε, δ, rounds), and bad weights or parameters
// are refused.
func TestCentralCalibrate(t *testing.T) {
	c := Central{Epsilon: 2, Delta: 1e-5, Clip: 0.3}
	s, _, _ := Calibrate(2, 1e-5, 4, ConversionAnalytic)
	for _, w := range [][]float64{{0.25, 0.25, 0.25, 0.25}, {0.1, 0.6, 0.3}, {1}} {
		r, err := c.Calibrate(4, w)
		if err != nil {
			t.Fatal(err)
		}
		maxW := 0.0
		for _, x := range w {
			maxW = max(maxW, x)
		}
		if r.Sigma != s || r.Sensitivity != 2*0.3*maxW || r.NoiseStd != s*2*0.3*maxW || r.Rounds != 4 || r.Conversion != ConversionAnalytic {
			t.Errorf("weights %v: %+v, want σ %v and Δ = 2C·%v", w, r, s, maxW)
		}
	}
	// Sensitivity as a fact: replacing one input of a uniform mean of K
	// clipped vectors by the worst other moves the mean by exactly 2C/K.
	const K = 5
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([][]float64, K)
	for i := range x {
		x[i] = Clip(nil, []float64{rng.NormFloat64() * 5, rng.NormFloat64() * 5}, c.Clip)
	}
	meanOf := func(x [][]float64) []float64 {
		m := make([]float64, 2)
		for _, v := range x {
			m[0], m[1] = m[0]+v[0]/K, m[1]+v[1]/K
		}
		return m
	}
	x[0] = Clip(nil, []float64{10, 0}, c.Clip)
	a := meanOf(x)
	x[0] = Clip(nil, []float64{-7, 0}, c.Clip) // the opposite end of the ball
	b := meanOf(x)
	moved := math.Hypot(a[0]-b[0], a[1]-b[1])
	r, _ := c.Calibrate(1, []float64{0.2, 0.2, 0.2, 0.2, 0.2})
	if math.Abs(r.Sensitivity-moved) > 1e-12 {
		t.Errorf("sensitivity %v, the worst replacement moves the mean by %v", r.Sensitivity, moved)
	}
	for _, tc := range []struct {
		c    Central
		w    []float64
		want string
	}{
		{c, nil, "no client weights"},
		{c, []float64{0.5, 0.6}, "sum to"},
		{c, []float64{1.5, -0.5}, "weight 0"},
		{Central{Epsilon: 1, Delta: 1e-5}, []float64{1}, "clip"},
		{Central{Epsilon: 1, Delta: 1e-5, Clip: 1, Conversion: "rdp"}, []float64{1}, "conversion"},
	} {
		if _, err := tc.c.Calibrate(1, tc.w); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v %v: %v, want an error mentioning %q", tc.c, tc.w, err, tc.want)
		}
	}
	out := Central{Epsilon: 2, Delta: 1e-5, Clip: 0.3, Bound: BoundOutput}
	for _, w := range [][]float64{{0.25, 0.25, 0.25, 0.25}, {0.1, 0.6, 0.3}, nil} {
		r, err := out.Calibrate(4, w)
		if err != nil || r.Sensitivity != 2*0.3 || r.NoiseStd != s*2*0.3 || r.Bound != BoundOutput {
			t.Errorf("bound output, weights %v: %+v, %v; want Δ = 2C whatever the weights", w, r, err)
		}
	}
	if err := (Central{Epsilon: 2, Delta: 1e-5, Clip: 0.3, Bound: "median"}).Validate(); err == nil || !strings.Contains(err.Error(), "bound") {
		t.Errorf("bound \"median\": %v", err)
	}
	theta := []float64{1, 2}
	src := rand.New(rand.NewPCG(3, 4))
	r.AddNoise(theta, src)
	rep := rand.New(rand.NewPCG(3, 4))
	if theta[0] != 1+r.NoiseStd*rep.NormFloat64() || theta[1] != 2+r.NoiseStd*rep.NormFloat64() {
		t.Errorf("AddNoise: %v", theta)
	}
}
