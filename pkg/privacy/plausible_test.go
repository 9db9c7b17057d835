package privacy

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// TestNormBoundsAgainstChiSquare holds the Laurent–Massart bounds of
// NormBounds (C → 0, s = 1, so the bounds are on ‖g‖) to the exact χ²
// distribution of gonum: each tail beyond them has probability at most
// p/2, and the bounds are not loose by more than a factor 2 in norm.
func TestNormBoundsAgainstChiSquare(t *testing.T) {
	for _, p := range []float64{1e-9, 1e-3} {
		for _, d := range []int{1, 2, 8, 64, 256, 4096} {
			lo, hi := NormBounds(1e-300, 0.5e300, d, p) // s = σ·2C = 1, C negligible
			chi := distuv.ChiSquared{K: float64(d)}
			if tail := chi.Survival(hi * hi); tail > p/2 {
				t.Errorf("d %d, p %g: P(‖g‖ > %.4g) = %.3g > p/2", d, p, hi, tail)
			}
			if tail := chi.CDF(lo * lo); lo > 0 && tail > p/2 {
				t.Errorf("d %d, p %g: P(‖g‖ < %.4g) = %.3g > p/2", d, p, lo, tail)
			}
			exactHi := math.Sqrt(chi.Quantile(1 - p/2))
			if hi > 2*exactHi {
				t.Errorf("d %d, p %g: upper bound %.4g, more than twice the exact quantile %.4g", d, p, hi, exactHi)
			}
			t.Logf("d %4d, p %g: ‖g‖ in [%.4g, %.4g] (exact upper quantile %.4g)", d, p, lo, hi, exactHi)
		}
	}
}

// TestPlausibleNeverRefusesTruthfulReleases: 10⁴ releases of the mechanism
// (seeded normals), from θ inside and far outside the clip ball, in 2 and
// 64 dimensions, all pass Plausible at p = 10⁻⁹.
func TestPlausibleNeverRefusesTruthfulReleases(t *testing.T) {
	src := rand.New(rand.NewPCG(35, 1))
	for _, dim := range []int{2, 64} {
		m, err := New(Params{Epsilon: 1, Delta: 1e-5, Clip: 0.056})
		if err != nil {
			t.Fatal(err)
		}
		theta := make([]float64, dim)
		for i := range 5000 {
			for j := range theta {
				theta[j] = src.NormFloat64() * math.Pow(10, float64(i%7-3)) // norms from 1e-3 to 1e3
			}
			rel := m.Release(nil, theta, src)
			if err := Plausible(rel, m.Declaration(), 0); err != nil {
				t.Fatalf("dim %d, draw %d: a truthful release refused: %v", dim, i, err)
			}
		}
	}
}

// TestPlausibleRefusesImpossibleReleases: the declarations (ε = 1
// with clip 0.056 and a θ of norm 10⁵; clip 10⁻³⁰⁰) are refused with the
// bound in the message, and so is a 4096-dimensional θ that carries none
// of the declared noise (clip_C(θ) itself).
func TestPlausibleRefusesImpossibleReleases(t *testing.T) {
	m, err := New(Params{Epsilon: 1, Delta: 1e-5, Clip: 0.056})
	if err != nil {
		t.Fatal(err)
	}
	d := m.Declaration()
	big := make([]float64, 64)
	big[0] = 1e5
	err = Plausible(big, d, 0)
	_, hi := NormBounds(d.Clip, d.Sigma, 64, DefaultFalseRefusal)
	if err == nil || !strings.Contains(err.Error(), "norm 100000, above") || !strings.Contains(err.Error(), "probability 1e-09") {
		t.Fatalf("‖θ‖ = 1e5 under C = 0.056: %v", err)
	}
	t.Logf("bound %.4g: %v", hi, err)
	tiny := d
	tiny.Clip = 1e-300
	if err := Plausible([]float64{1e-3, 0}, tiny, 0); err == nil || !strings.Contains(err.Error(), "above") {
		t.Fatalf("clip 1e-300: %v", err)
	}
	noNoise := make([]float64, 4096)
	for i := range noNoise {
		noNoise[i] = 1
	}
	Clip(noNoise, noNoise, d.Clip)
	if err := Plausible(noNoise, d, 0); err == nil || !strings.Contains(err.Error(), "the declared noise is missing") {
		t.Fatalf("clip_C(θ) without noise, d 4096: %v", err)
	}
}
