package privacy

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

// TestEpsilonInvertsAnalyticSigma: Epsilon(δ, AnalyticSigma(ε, δ)) is ε to
// 1e-6 relative (σ is the smallest float reaching δ, so ε is recovered to
// the precision of the profile's slope), and the returned ε reaches δ.
func TestEpsilonInvertsAnalyticSigma(t *testing.T) {
	for _, eps := range testEps {
		for _, delta := range testDeltas {
			s, _ := AnalyticSigma(eps, delta)
			got, err := Epsilon(delta, s)
			if err != nil {
				t.Fatal(err)
			}
			if relErr(got, eps) > 1e-6 || Delta(got, s) > delta {
				t.Errorf("ε=%v δ=%v: Epsilon(δ, σ=%v) = %v (δ there %v)", eps, delta, s, got, Delta(got, s))
			}
		}
	}
	if e, err := Epsilon(1e-5, math.Inf(1)); e != 0 || err != nil {
		t.Errorf("no release: ε = %v, %v; want 0", e, err)
	}
	if e, _ := Epsilon(0.9, 5); e != 0 {
		t.Errorf("δ = 0.9 at σ = 5 needs no ε, got %v", e)
	}
	for _, bad := range [][2]float64{{0, 1}, {1, 1}, {1e-5, 0}, {1e-5, math.NaN()}} {
		if _, err := Epsilon(bad[0], bad[1]); err == nil {
			t.Errorf("Epsilon(%v, %v): no error", bad[0], bad[1])
		}
	}
}

// composedDeltaQuad is the privacy profile of two Gaussian releases with
// multipliers s1 and s2 (sensitivity 1 each) from its definition, the
// hockey-stick divergence of the product distributions: conditioning on
// the first release x₁ ~ N(0, s1²), whose privacy loss is
// ℓ(x₁) = (1 − 2x₁)/(2s1²), the second contributes the one-release
// profile at ε − ℓ(x₁) (naiveDelta, Balle & Wang's closed form valid for
// every real ε), integrated over x₁ by Gauss–Legendre. It uses neither
// ComposedSigma nor Delta.
func composedDeltaQuad(eps, s1, s2 float64) float64 {
	f := func(x float64) float64 {
		l := (1 - 2*x) / (2 * s1 * s1)
		return math.Exp(-0.5*x*x/(s1*s1)) / (s1 * math.Sqrt(2*math.Pi)) * naiveDelta(eps-l, s2)
	}
	var sum float64
	for lo := -12 * s1; lo < 12*s1; lo += s1 / 8 {
		sum += quad.Fixed(f, lo, lo+s1/8, 30, quad.Legendre{}, 0)
	}
	return sum
}

// TestComposedSigmaMatchesDefinition: two releases with different σ compose
// to one release with multiplier 1/√(1/σ₁² + 1/σ₂²): its profile equals the
// hockey-stick divergence of the pair integrated numerically.
func TestComposedSigmaMatchesDefinition(t *testing.T) {
	for _, p := range [][2]float64{{1, 1}, {0.8, 3}, {2, 5}, {4, 0.9}} {
		s := ComposedSigma([]float64{p[0], p[1]}, nil)
		for _, eps := range []float64{0.25, 1, 3} {
			got, want := Delta(eps, s), composedDeltaQuad(eps, p[0], p[1])
			if relErr(got, want) > 1e-6 && math.Abs(got-want) > 1e-12 {
				t.Errorf("σ = %v, %v at ε = %v: composed δ %v, quadrature %v", p[0], p[1], eps, got, want)
			}
		}
	}
	if s := ComposedSigma(nil, nil); !math.IsInf(s, 1) {
		t.Errorf("no release: σ = %v, want +Inf", s)
	}
	if s := ComposedSigma([]float64{2}, []int{9}); s != 2.0/3 {
		t.Errorf("9 releases at σ = 2: %v, want 2/3", s)
	}
}

// TestComposedBeatsBasic: on random heterogeneous tasks the exact
// composition at Σ δ_t never exceeds the basic composition Σ ε_t, and R
// releases of a task calibrated for R rounds give back the task's ε.
func TestComposedBeatsBasic(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 37))
	for trial := range 200 {
		n := 1 + rng.IntN(6)
		var sigmas []float64
		var counts []int
		var epsSum, deltaSum float64
		for range n {
			eps, delta, R := 0.1+4*rng.Float64(), math.Pow(10, -3-4*rng.Float64()), 1+rng.IntN(10)
			s, _, err := Calibrate(eps, delta, R, ConversionAnalytic)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := Epsilon(delta, ComposedSigma([]float64{s}, []int{R}))
			if relErr(got, eps) > 1e-6 {
				t.Fatalf("trial %d: %d releases of a task calibrated for (%v, %v) over %d rounds give ε = %v", trial, R, eps, delta, R, got)
			}
			sigmas, counts = append(sigmas, s), append(counts, R)
			epsSum, deltaSum = epsSum+eps, deltaSum+delta
		}
		exact, err := Epsilon(deltaSum, ComposedSigma(sigmas, counts))
		if err != nil {
			t.Fatal(err)
		}
		if exact > epsSum*(1+1e-9) {
			t.Errorf("trial %d: exact composition ε = %v above the basic Σε = %v", trial, exact, epsSum)
		}
	}
}
