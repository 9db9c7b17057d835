package privacy

import (
	"fmt"
	"math"
)

// Composition of Gaussian releases with different noise multipliers.
//
// A Gaussian release with noise multiplier σ_j (sensitivity 1) is
// μ_j-Gaussian-DP with μ_j = 1/σ_j, and independent μ_j-GDP releases compose
// exactly to μ-GDP with μ² = Σ_j μ_j² (Dong, Roth & Su, "Gaussian
// differential privacy", 2019, Cor. 3.3). The composition is therefore the
// single Gaussian release with multiplier σ = 1/μ, whose (ε, δ) curve is
// δ(ε; σ) (Delta). This is the same accounting as ConversionAnalytic within
// one task, extended to releases with different σ (several tasks, several
// calibrations); it holds whatever conversion calibrated each σ, because it
// depends only on the noise actually added.

// ComposedSigma returns the noise multiplier 1/√(Σ_j 1/σ_j²) of the single
// Gaussian release equivalent to the releases with multipliers sigmas (each
// repeated counts[j] times when counts is non-nil), or +Inf when there are
// none (no release: no privacy loss). It panics if counts and sigmas differ
// in length.
func ComposedSigma(sigmas []float64, counts []int) float64 {
	if counts != nil && len(counts) != len(sigmas) {
		panic("privacy: ComposedSigma: counts and sigmas differ in length")
	}
	var mu2 float64
	for j, s := range sigmas {
		n := 1.0
		if counts != nil {
			n = float64(counts[j])
		}
		mu2 += n / (s * s)
	}
	if mu2 == 0 {
		return math.Inf(1)
	}
	return 1 / math.Sqrt(mu2)
}

// Epsilon returns the smallest ε ≥ 0 such that one Gaussian release with
// noise multiplier σ (sensitivity 1) is (ε, δ)-DP, i.e. Delta(ε, σ) ≤ δ, by
// bisection on the privacy profile to adjacent floats: the inverse of
// AnalyticSigma in ε. σ = +Inf (no release) gives 0.
func Epsilon(delta, sigma float64) (float64, error) {
	if !(delta > 0 && delta < 1) {
		return 0, &ParamError{Field: "delta", Value: delta, Want: "a value in (0, 1)"}
	}
	if math.IsInf(sigma, 1) {
		return 0, nil
	}
	if !(sigma > 0) {
		return 0, &ParamError{Field: "sigma", Value: sigma, Want: "a value > 0"}
	}
	if Delta(0, sigma) <= delta {
		return 0, nil
	}
	// Bracket: Delta(lo) > δ ≥ Delta(hi); Delta decreases in ε.
	lo, hi := 0.0, 1.0
	for Delta(hi, sigma) > delta {
		lo, hi = hi, 2*hi
		if hi > 1e300 {
			return 0, fmt.Errorf("privacy: no ε bracket for δ = %v, σ = %v", delta, sigma)
		}
	}
	for range 2000 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if Delta(mid, sigma) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}
