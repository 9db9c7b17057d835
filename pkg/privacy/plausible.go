package privacy

import (
	"fmt"
	"math"
)

// DefaultFalseRefusal is the probability with which Plausible may refuse
// a truthful release: 10⁻⁹.
const DefaultFalseRefusal = 1e-9

// NormBounds returns the norms [lo, hi] between which a release
// clip_C(θ) + σ·2C·g, g ~ N(0, I_dim), falls except with probability at
// most p (0 < p < 1), whatever θ.
//
// With s = σ·2C, the triangle inequality gives s‖g‖ − C ≤ ‖release‖ ≤
// C + s‖g‖, and ‖g‖² is χ²(dim). The chi-square tail bounds of Laurent and
// Massart (2000, Lemma 1), for x > 0,
//
//	P(χ²_d ≥ d + 2√(d·x) + 2x) ≤ e^{−x},   P(χ²_d ≤ d − 2√(d·x)) ≤ e^{−x},
//
// taken each with x = ln(2/p), give
//
//	hi = C + s·√(d + 2√(d·x) + 2x),   lo = max(0, s·√(max(0, d − 2√(d·x))) − C),
//
// so that P(‖release‖ ∉ [lo, hi]) ≤ p. For p = 10⁻⁹ (x ≈ 21.4): d = 64
// gives hi = C + 13.45·s (the exact χ² quantile: 12.6·s) and lo = 0; d =
// 4096 gives [59.2·s − C, C + 68.8·s] (exact upper quantile 68.4·s). The
// bounds are conservative (TestNormBoundsAgainstChiSquare), so a refusal
// is never more likely than p.
func NormBounds(clip, sigma float64, dim int, p float64) (lo, hi float64) {
	s := sigma * 2 * clip
	d := float64(dim)
	x := math.Log(2 / p)
	hi = clip + s*math.Sqrt(d+2*math.Sqrt(d*x)+2*x)
	lo = max(0, s*math.Sqrt(max(0, d-2*math.Sqrt(d*x)))-clip)
	return lo, hi
}

// Plausible checks that theta could be a release of d's mechanism (clip
// d.Clip, noise multiplier d.Sigma): its norm must lie within NormBounds
// for false-refusal probability p (≤ 0: DefaultFalseRefusal). Otherwise
// it returns an error giving the norm, the bounds and p: such a θ is
// provably (up to probability p) not clip_C(θ) + N(0, (σ·2C)²I), e.g. a
// θ of norm 10⁵ declared with C = 0.056, or a θ without the declared
// noise. d must be valid (Declaration.Validate).
func Plausible(theta []float64, d Declaration, p float64) error {
	if p <= 0 {
		p = DefaultFalseRefusal
	}
	var ss float64
	for _, v := range theta {
		ss += v * v
	}
	n := math.Sqrt(ss)
	lo, hi := NormBounds(d.Clip, d.Sigma, len(theta), p)
	switch {
	case n > hi:
		return fmt.Errorf("theta has norm %.6g, above %.6g, the most that clip %g plus noise N(0, (σ·2C)² I) with σ = %.6g in %d dimensions reaches except with probability %g: not a release of the declared mechanism",
			n, hi, d.Clip, d.Sigma, len(theta), p)
	case n < lo:
		return fmt.Errorf("theta has norm %.6g, below %.6g, the least that clip %g plus noise N(0, (σ·2C)² I) with σ = %.6g in %d dimensions reaches except with probability %g: the declared noise is missing",
			n, lo, d.Clip, d.Sigma, len(theta), p)
	}
	return nil
}
