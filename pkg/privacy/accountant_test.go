package privacy

import (
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

// relErr returns |got/want − 1| (|got| when want is 0).
func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got/want - 1)
}

// naiveDelta is Balle & Wang's closed form written as printed, with Φ from
// math.Erfc and no rearrangement: the independent reference of acceptance 1.
func naiveDelta(eps, sigma float64) float64 {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	return phi(1/(2*sigma)-eps*sigma) - math.Exp(eps)*phi(-1/(2*sigma)-eps*sigma)
}

var (
	testEps    = []float64{0.1, 0.2, 0.5, 1, 2, 3, 5, 7.5, 10}
	testDeltas = []float64{1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3}
)

// TestAnalyticSigmaHitsTarget is acceptance 1 for one release: at the
// returned σ the closed form equals the target δ to 1e-6 relative, and σ is
// the smallest float that reaches it.
func TestAnalyticSigmaHitsTarget(t *testing.T) {
	worst := 0.0
	for _, eps := range testEps {
		for _, delta := range testDeltas {
			sigma, err := AnalyticSigma(eps, delta)
			if err != nil {
				t.Fatalf("ε=%v δ=%v: %v", eps, delta, err)
			}
			got := naiveDelta(eps, sigma)
			if e := relErr(got, delta); e > 1e-6 {
				t.Errorf("ε=%v δ=%v: σ=%v gives δ(ε;σ)=%v, relative error %.3g > 1e-6", eps, delta, sigma, got, e)
			} else {
				worst = max(worst, e)
			}
			if d := Delta(eps, sigma); d > delta {
				t.Errorf("ε=%v δ=%v: Delta at returned σ %v is %v > target", eps, delta, sigma, d)
			}
			if d := Delta(eps, math.Nextafter(sigma, 0)); !(d > delta) {
				t.Errorf("ε=%v δ=%v: σ=%v is not the smallest: the float below gives δ=%v ≤ target", eps, delta, sigma, d)
			}
		}
	}
	t.Logf("worst relative error of the closed form at the returned σ: %.3g", worst)
}

// quadDelta is the privacy profile as the hockey-stick divergence
// ∫ (p − e^ε q)_+ of N(0, σ²) against N(1, σ²), integrated numerically
// (gonum Gauss–Legendre, composite on unit intervals). Substituting
// x = t − σs with t = 1/2 − εσ² (where p/q = e^ε) gives
// ∫₀^∞ φ(t/σ − s)·(1 − e^{−s/σ}) ds.
func quadDelta(eps, sigma float64) float64 {
	a := 0.5/sigma - eps*sigma
	f := func(s float64) float64 {
		z := a - s
		return math.Exp(-0.5*z*z) / math.Sqrt(2*math.Pi) * -math.Expm1(-s/sigma)
	}
	// The integrand is negligible once a − s < −40 and s > 0.
	end := math.Max(1, a+40)
	var sum float64
	for lo := 0.0; lo < end; lo += 0.25 {
		sum += quad.Fixed(f, lo, lo+0.25, 40, quad.Legendre{}, 0)
	}
	return sum
}

// TestDeltaMatchesQuadrature checks the stable evaluation against the
// definition of the privacy profile, integrated numerically.
func TestDeltaMatchesQuadrature(t *testing.T) {
	for _, eps := range []float64{0, 0.1, 1, 4, 10, 20} {
		for _, sigma := range []float64{0.2, 0.5, 1, 3, 10, 50} {
			want := quadDelta(eps, sigma)
			if want < 1e-250 {
				continue
			}
			if got := Delta(eps, sigma); relErr(got, want) > 1e-9 {
				t.Errorf("Delta(%v, %v) = %v, quadrature %v (relative %.3g)", eps, sigma, got, want, relErr(got, want))
			}
		}
	}
}

// TestDeltaProperties: at ε = 0 the profile is the total variation distance
// 2Φ(1/(2σ)) − 1; it decreases in σ and in ε; it is finite and in [0, 1]
// where the naive formula underflows or cancels.
func TestDeltaProperties(t *testing.T) {
	for _, sigma := range []float64{0.01, 0.3, 1, 7, 100} {
		want := math.Erf(1 / (2 * sigma * math.Sqrt2))
		if got := Delta(0, sigma); relErr(got, want) > 1e-12 {
			t.Errorf("Delta(0, %v) = %v, want TV distance %v", sigma, got, want)
		}
	}
	for _, eps := range []float64{0, 0.1, 1, 10, 50} {
		prev := 1.0
		for s := 0.01; s < 500; s *= 1.1 {
			d := Delta(eps, s)
			if !(d >= 0 && d <= prev) {
				t.Fatalf("Delta(%v, %v) = %v: not in [0, previous %v]", eps, s, d, prev)
			}
			prev = d
		}
	}
	// Large ε: e^ε·Φ(b) is a product of a huge and a tiny number (e^200·Φ(−20)).
	for _, sigma := range []float64{0.05, 0.06} {
		want := quadDelta(200, sigma)
		if got := Delta(200, sigma); relErr(got, want) > 1e-9 {
			t.Errorf("Delta(200, %v) = %v, quadrature %v", sigma, got, want)
		}
	}
	for _, bad := range [][2]float64{{-1, 1}, {1, 0}, {1, -1}, {math.NaN(), 1}, {1, math.Inf(1)}} {
		if d := Delta(bad[0], bad[1]); !math.IsNaN(d) {
			t.Errorf("Delta(%v, %v) = %v, want NaN", bad[0], bad[1], d)
		}
	}
}

// TestLogPhiTail compares the asymptotic series with erfc where both are
// valid (logPhi switches at −37; erfc underflows to subnormals near −37.7),
// and checks continuity across the switch.
func TestLogPhiTail(t *testing.T) {
	for _, x := range []float64{-25, -30, -33, -36, -37} {
		direct := math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
		if got := logPhiTail(x); relErr(got, direct) > 1e-13 {
			t.Errorf("logPhiTail(%v) = %v, erfc gives %v", x, got, direct)
		}
	}
	if a, b := logPhi(math.Nextafter(-37, 0)), logPhi(math.Nextafter(-37, -40)); relErr(a, b) > 1e-13 {
		t.Errorf("logPhi jumps at the switch: %v vs %v", a, b)
	}
	if got := logPhi(-1e4); relErr(got, -0.5e8-math.Log(1e4)-0.5*math.Log(2*math.Pi)) > 1e-15 {
		t.Errorf("logPhi(-1e4) = %v", got)
	}
}

// TestAnalyticBeatsClassical: for ε < 1 the classical calibration
// σ = √(2 ln(1.25/δ))/ε (Dwork & Roth, Thm A.1) is sufficient, so the
// smallest sufficient σ is below it.
func TestAnalyticBeatsClassical(t *testing.T) {
	for _, eps := range []float64{0.1, 0.5, 0.9} {
		for _, delta := range testDeltas {
			s, _ := AnalyticSigma(eps, delta)
			if classical := math.Sqrt(2*math.Log(1.25/delta)) / eps; !(s < classical) {
				t.Errorf("ε=%v δ=%v: analytic σ %v not below classical %v", eps, delta, s, classical)
			}
		}
	}
}

// TestComposition is acceptance 1 for rounds: σ grows with R; the zCDP
// conversion satisfies ρ + 2√(ρ ln(1/δ)) = ε with ρ = R/(2σ²); the analytic
// one is √R times the one-release σ and never needs more noise.
func TestComposition(t *testing.T) {
	for _, eps := range []float64{0.5, 1, 8} {
		for _, delta := range []float64{1e-9, 1e-5, 1e-3} {
			prev := map[Conversion]float64{}
			s1, _ := AnalyticSigma(eps, delta)
			for R := 1; R <= 64; R++ {
				sa, acca, err := Calibrate(eps, delta, R, ConversionAnalytic)
				if err != nil {
					t.Fatal(err)
				}
				sz, accz, err := Calibrate(eps, delta, R, ConversionZCDP)
				if err != nil {
					t.Fatal(err)
				}
				if !(sa > prev[ConversionAnalytic]) || !(sz > prev[ConversionZCDP]) {
					t.Fatalf("ε=%v δ=%v R=%d: σ not increasing in R (analytic %v after %v, zcdp %v after %v)",
						eps, delta, R, sa, prev[ConversionAnalytic], sz, prev[ConversionZCDP])
				}
				prev[ConversionAnalytic], prev[ConversionZCDP] = sa, sz
				if relErr(sa, math.Sqrt(float64(R))*s1) > 1e-15 {
					t.Errorf("R=%d: analytic σ %v ≠ √R·σ₁ = %v", R, sa, math.Sqrt(float64(R))*s1)
				}
				rho := float64(R) / (2 * sz * sz)
				if e := rho + 2*math.Sqrt(rho*math.Log(1/delta)); relErr(e, eps) > 1e-12 {
					t.Errorf("ε=%v δ=%v R=%d: zCDP σ %v gives ε = %v", eps, delta, R, sz, e)
				}
				if relErr(accz.Rho, rho) > 1e-15 || relErr(accz.EpsilonZCDP, eps) > 1e-12 {
					t.Errorf("zcdp accounting %+v: ρ want %v, epsilon_zcdp want %v", accz, rho, eps)
				}
				if !(sa <= sz) {
					t.Errorf("ε=%v δ=%v R=%d: analytic σ %v above zCDP σ %v", eps, delta, R, sa, sz)
				}
				if relErr(acca.DeltaAnalytic, delta) > 1e-6 || !(acca.EpsilonZCDP >= eps) {
					t.Errorf("analytic accounting %+v: delta_analytic want ≈ %v, epsilon_zcdp ≥ %v", acca, delta, eps)
				}
				if !(accz.DeltaAnalytic <= delta) {
					t.Errorf("zcdp accounting: exact δ %v above the target %v", accz.DeltaAnalytic, delta)
				}
			}
		}
	}
}

// TestBadParams: every invalid parameter is refused with a *ParamError
// naming it.
func TestBadParams(t *testing.T) {
	good := Params{Epsilon: 1, Delta: 1e-5, Clip: 1}
	cases := []struct {
		mod   func(*Params)
		field string
	}{
		{func(p *Params) { p.Epsilon = 0 }, "epsilon"},
		{func(p *Params) { p.Epsilon = -1 }, "epsilon"},
		{func(p *Params) { p.Epsilon = math.NaN() }, "epsilon"},
		{func(p *Params) { p.Epsilon = math.Inf(1) }, "epsilon"},
		{func(p *Params) { p.Delta = 0 }, "delta"},
		{func(p *Params) { p.Delta = 1 }, "delta"},
		{func(p *Params) { p.Delta = math.NaN() }, "delta"},
		{func(p *Params) { p.Delta = -1e-5 }, "delta"},
		{func(p *Params) { p.Clip = 0 }, "clip"},
		{func(p *Params) { p.Clip = -2 }, "clip"},
		{func(p *Params) { p.Clip = math.Inf(1) }, "clip"},
		{func(p *Params) { p.Clip = math.NaN() }, "clip"},
		{func(p *Params) { p.Rounds = -1 }, "rounds"},
		{func(p *Params) { p.Conversion = "rdp" }, "conversion"},
	}
	if _, err := New(good); err != nil {
		t.Fatalf("good params refused: %v", err)
	}
	for _, c := range cases {
		p := good
		c.mod(&p)
		_, err := New(p)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Field != c.field || !errors.Is(err, ErrParam) {
			t.Errorf("%+v: error %v, want a ParamError on %s", p, err, c.field)
		}
	}
}
