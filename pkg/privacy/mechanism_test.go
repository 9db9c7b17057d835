package privacy

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
)

func TestClip(t *testing.T) {
	cases := []struct {
		theta []float64
		c     float64
		want  []float64
	}{
		{[]float64{3, 4}, 10, []float64{3, 4}},        // inside: unchanged
		{[]float64{3, 4}, 5, []float64{3, 4}},         // on the boundary
		{[]float64{3, 4}, 1, []float64{0.6, 0.8}},     // scaled to norm 1
		{[]float64{0, 0, 0}, 1, []float64{0, 0, 0}},   // zero stays zero
		{[]float64{-6, 8}, 2.5, []float64{-1.5, 2.0}}, // direction kept
	}
	for _, c := range cases {
		got := Clip(nil, c.theta, c.c)
		if !floats.EqualApprox(got, c.want, 1e-15) {
			t.Errorf("Clip(%v, %v) = %v, want %v", c.theta, c.c, got, c.want)
		}
		if n := floats.Norm(got, 2); n > c.c*(1+1e-15) {
			t.Errorf("Clip(%v, %v) has norm %v", c.theta, c.c, n)
		}
	}
}

// TestReleaseIsClipPlusScaledNormals replays the source: the release is
// exactly clip_C(θ) + σ·2C·g with g the source's next d normals.
func TestReleaseIsClipPlusScaledNormals(t *testing.T) {
	m, err := New(Params{Epsilon: 2, Delta: 1e-5, Clip: 0.5, Rounds: 3})
	if err != nil {
		t.Fatal(err)
	}
	d := m.Declaration()
	s1, _ := AnalyticSigma(2, 1e-5)
	if d.Sigma != math.Sqrt(3)*s1 || d.Rounds != 3 || d.Conversion != ConversionAnalytic || d.NoiseStd() != d.Sigma {
		t.Fatalf("declaration %+v: want σ = √3·%v, noise std σ·2C = σ", d, s1)
	}
	theta := []float64{3, -4, 12} // norm 13, clipped to 0.5
	got := m.Release(nil, theta, rand.New(rand.NewPCG(7, 9)))
	replay := rand.New(rand.NewPCG(7, 9))
	for i, v := range theta {
		want := v*0.5/13 + d.NoiseStd()*replay.NormFloat64()
		if math.Abs(got[i]-want) > 1e-15*math.Abs(want) {
			t.Errorf("component %d: %v, want %v", i, got[i], want)
		}
	}
	if theta[0] != 3 {
		t.Error("Release modified its input")
	}
}

func TestCryptoSourceLooksNormal(t *testing.T) {
	src := CryptoSource()
	const n = 20000
	var s, ss float64
	for range n {
		x := src.NormFloat64()
		s += x
		ss += x * x
	}
	mean, vr := s/n, ss/n-(s/n)*(s/n)
	// 5 standard errors: mean's is 1/√n, variance's √(2/n).
	if math.Abs(mean) > 5/math.Sqrt(n) || math.Abs(vr-1) > 5*math.Sqrt(2.0/n) {
		t.Errorf("crypto source: mean %v, variance %v over %d draws", mean, vr, n)
	}
}

func TestDeclarationAndRequirement(t *testing.T) {
	m, _ := New(Params{Epsilon: 1, Delta: 1e-5, Clip: 1, Rounds: 2})
	honest := m.Declaration()
	req := Requirement{MaxEpsilon: 2, MaxDelta: 1e-5}
	if err := req.Check(&honest, 2); err != nil {
		t.Fatalf("honest declaration refused: %v", err)
	}
	zc, _ := New(Params{Epsilon: 1, Delta: 1e-5, Clip: 1, Rounds: 2, Conversion: ConversionZCDP})
	zd := zc.Declaration()
	if err := req.Check(&zd, 2); err != nil {
		t.Fatalf("zcdp declaration refused: %v", err)
	}
	cases := []struct {
		name string
		mod  func(*Declaration)
		want string
	}{
		{"understated noise", func(d *Declaration) { d.Sigma *= 1 - 1e-6 }, "sigma"},
		{"epsilon above", func(d *Declaration) { d.Epsilon = 3; d.Sigma = 100 }, "max_epsilon"},
		{"delta above", func(d *Declaration) { d.Delta = 1e-4 }, "max_delta"},
		{"too few rounds", func(d *Declaration) { d.Rounds = 1 }, "accounts for 1 rounds"},
		{"no rounds", func(d *Declaration) { d.Rounds = 0 }, "rounds"},
		{"bad clip", func(d *Declaration) { d.Clip = math.NaN() }, "clip"},
		{"no conversion", func(d *Declaration) { d.Conversion = "" }, "conversion"},
		{"infinite sigma", func(d *Declaration) { d.Sigma = math.Inf(1) }, "sigma"},
	}
	for _, c := range cases {
		d := honest
		c.mod(&d)
		err := req.Check(&d, 2)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	if err := req.Check(nil, 2); err == nil || !strings.Contains(err.Error(), "no privacy declaration") {
		t.Errorf("missing declaration: %v", err)
	}
	for _, r := range []Requirement{{MaxEpsilon: 0, MaxDelta: 1e-5}, {MaxEpsilon: math.Inf(1), MaxDelta: 1e-5}, {MaxEpsilon: 1, MaxDelta: 0}, {MaxEpsilon: 1, MaxDelta: 1},
		{MaxEpsilon: 1, MaxDelta: 1e-5, Clip: -1}, {MaxEpsilon: 1, MaxDelta: 1e-5, Clip: math.NaN()}, {MaxEpsilon: 1, MaxDelta: 1e-5, Clip: 1, ClientClip: true}} {
		var pe *ParamError
		if err := r.Validate(); !errors.As(err, &pe) {
			t.Errorf("requirement %+v: %v, want a ParamError", r, err)
		}
	}
}
