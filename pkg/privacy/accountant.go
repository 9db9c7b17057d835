// Package privacy is client-level local differential privacy for a reward
// parameter θ ∈ R^d that a client sends to a federation server: clipping to
// an L2 norm C, the Gaussian mechanism, and the accountant that calibrates
// its noise to a target (ε, δ) over the rounds of a task.
//
// # The mechanism
//
// A client releases, in every round,
//
//	θ̃ = clip_C(θ) + σ·Δ·g,   clip_C(θ) = θ·min(1, C/‖θ‖₂),   Δ = 2C,   g ~ N(0, I_d).
//
// Δ is the L2 sensitivity of clip_C: any two clipped vectors differ by at most
// 2C (the neighbouring relation is "replace the client's data set by any
// other", so the whole θ is what is protected). σ is the noise multiplier of
// a sensitivity-1 Gaussian mechanism; the noise standard deviation is σΔ.
//
// # One release: the analytic Gaussian mechanism
//
// The Gaussian mechanism with multiplier σ is (ε, δ)-DP exactly when
// δ ≥ δ(ε; σ), the privacy profile (Balle & Wang, "Improving the Gaussian
// mechanism for differential privacy", ICML 2018, Theorem 8):
//
//	δ(ε; σ) = Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ),   Φ the standard normal CDF.
//
// δ(ε; σ) decreases strictly in σ, from 1 at σ → 0 to 0 at σ → ∞, so the
// smallest σ with δ(ε; σ) ≤ δ is found by bisection (AnalyticSigma). The
// profile is evaluated as Φ(a)·(−expm1(ε + log Φ(b) − log Φ(a))) with
// log Φ from math.Erfc (and its asymptotic series far in the lower tail), so
// neither the difference of two nearly equal terms nor e^ε for large ε loses
// precision.
//
// # R releases: composition
//
// A Gaussian mechanism with multiplier σ is ρ₁-zCDP with ρ₁ = 1/(2σ²), and
// zCDP composes additively (Bun & Steinke, "Concentrated differential
// privacy", TCC 2016, Prop. 1.6 and Lemma 2.3): R releases are
//
//	ρ = R/(2σ²)-zCDP.
//
// Two conversions to (ε, δ) are offered (Conversion):
//
//   - ConversionZCDP, Bun & Steinke Prop. 1.3: ρ-zCDP implies (ε, δ)-DP with
//     ε = ρ + 2√(ρ ln(1/δ)). Inverted in closed form:
//     ρ = (√(ε + ln(1/δ)) − √(ln(1/δ)))², σ = √(R/(2ρ)).
//   - ConversionAnalytic (the default, exact): the privacy loss of one
//     Gaussian release is N(ρ₁, 2ρ₁) and independent releases add their
//     losses, so R releases have loss N(ρ, 2ρ): exactly the loss of a single
//     Gaussian mechanism with multiplier σ/√R (Dong, Roth & Su, "Gaussian
//     differential privacy", 2019, Cor. 3.3: μ-GDP with μ = √R/σ). Its
//     (ε, δ) curve is therefore δ(ε; σ/√R), the tightest possible, and
//     σ = √R · AnalyticSigma(ε, δ).
//
// The analytic conversion never needs more noise than the zCDP one (a test
// checks it); ConversionZCDP is kept because it is the formula most
// accountants print.
//
// The package hand-writes log Φ because gonum's distuv.Normal has a CDF but
// no log-CDF, and the lower tail is where the privacy profile lives.
//
// # Across tasks: the ledger
//
// A client's Ledger records every release it makes (and the noised θ, so
// that a restarted client re-sends it instead of drawing again) and
// composes all of them exactly (ComposedSigma, Epsilon: Gaussian releases
// with multipliers σ_j compose to one with multiplier 1/√(Σ 1/σ_j²)); a
// Budget refuses a task that would exceed it.
//
// # The σ convention
//
// σ multiplies the sensitivity Δ = 2C (neighbours replace a client's whole
// data set): the noise standard deviation is σ·2C. Opacus' and TF Privacy's
// noise_multiplier z multiplies C (neighbours add or remove one example):
// noise std z·C. The same noise is z = 2σ; the same (ε, δ), each under its
// own neighbour relation, is z = σ.
//
// Central differential privacy, for a server the clients trust, is in
// central.go (Central, CentralRelease).
//
// What this package does not do: it does not decide what a task requires
// (pkg/federation checks a declaration against a task's requirement and adds
// the central noise), and it cannot account for releases a client makes
// outside its ledger.
package privacy

import (
	"errors"
	"fmt"
	"math"
)

// Conversion names how a zCDP guarantee over several rounds is turned into
// (ε, δ).
type Conversion string

// Conversions.
const (
	// ConversionAnalytic is the exact (ε, δ) curve of the composed Gaussian
	// mechanisms: δ(ε; σ/√R) (the default).
	ConversionAnalytic Conversion = "analytic"
	// ConversionZCDP is ε = ρ + 2√(ρ ln(1/δ)) with ρ = R/(2σ²).
	ConversionZCDP Conversion = "zcdp"
)

// ParamError is an invalid privacy parameter; Field names it as in Params
// ("epsilon", "delta", "clip", "rounds", "conversion"), so that a command can
// name its own flag.
type ParamError struct {
	Field string
	Value any
	Want  string
}

// Error says which parameter is wrong and what is wanted.
func (e *ParamError) Error() string {
	return fmt.Sprintf("%s = %v: want %s", e.Field, e.Value, e.Want)
}

// ErrParam is matched (errors.Is) by every *ParamError.
var ErrParam = errors.New("invalid privacy parameter")

// Is reports whether target is ErrParam.
func (e *ParamError) Is(target error) bool { return target == ErrParam }

// checkEpsDelta validates a target (ε, δ).
func checkEpsDelta(eps, delta float64) error {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return &ParamError{Field: "epsilon", Value: eps, Want: "a finite value > 0"}
	}
	if !(delta > 0 && delta < 1) {
		return &ParamError{Field: "delta", Value: delta, Want: "a value in (0, 1)"}
	}
	return nil
}

// logPhi returns log Φ(x) for the standard normal CDF Φ, accurate to a few
// ulps of the result over the whole line: log1p of the upper tail for x ≥ 0,
// log of 0.5·erfc(−x/√2) down to x = −37 (erfc is accurate there and far
// from underflow), and the asymptotic series
// log Φ(x) = −x²/2 − log(−x) − ½log(2π) + log(1 − 1/x² + 3/x⁴ − 15/x⁶ + 105/x⁸)
// below (its first omitted term is below 2e-13).
func logPhi(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return math.NaN()
	case x >= 0:
		return math.Log1p(-0.5 * math.Erfc(x/math.Sqrt2))
	case x > -37:
		return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
	case math.IsInf(x, -1):
		return math.Inf(-1)
	}
	return logPhiTail(x)
}

// logPhiTail is the asymptotic series of log Φ(x) for x → −∞ (see logPhi).
func logPhiTail(x float64) float64 {
	z := 1 / (x * x)
	s := -z + 3*z*z - 15*z*z*z + 105*z*z*z*z
	return -0.5*x*x - math.Log(-x) - 0.5*math.Log(2*math.Pi) + math.Log1p(s)
}

// Delta returns the privacy profile δ(ε; σ) of one Gaussian release with
// noise multiplier σ at sensitivity 1 (Balle & Wang 2018, Theorem 8):
// Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ), evaluated stably (see the package
// comment). It returns NaN unless ε ≥ 0 and σ > 0 are finite.
func Delta(eps, sigma float64) float64 {
	if !(eps >= 0) || math.IsInf(eps, 0) || !(sigma > 0) || math.IsInf(sigma, 0) {
		return math.NaN()
	}
	a := 1/(2*sigma) - eps*sigma
	b := -1/(2*sigma) - eps*sigma
	la, lb := logPhi(a), logPhi(b)
	// δ = Φ(a)·(1 − exp(ε + log Φ(b) − log Φ(a))); the exponent is ≤ 0
	// mathematically (δ ≥ 0), rounding may push it a hair above.
	e := eps + lb - la
	if e >= 0 {
		return 0
	}
	return math.Exp(la) * -math.Expm1(e)
}

// AnalyticSigma returns the smallest float64 σ such that one Gaussian release
// with noise multiplier σ (sensitivity 1) is (ε, δ)-DP, i.e. Delta(ε, σ) ≤ δ,
// by bisection on the privacy profile to adjacent floats.
func AnalyticSigma(eps, delta float64) (float64, error) {
	if err := checkEpsDelta(eps, delta); err != nil {
		return 0, err
	}
	// Bracket: Delta(lo) > δ ≥ Delta(hi).
	lo, hi := 1.0, 1.0
	for Delta(eps, lo) <= delta {
		lo /= 2
		if lo < 1e-300 {
			return 0, fmt.Errorf("privacy: no σ bracket for ε = %v, δ = %v", eps, delta)
		}
	}
	for Delta(eps, hi) > delta {
		hi *= 2
		if hi > 1e300 {
			return 0, fmt.Errorf("privacy: no σ bracket for ε = %v, δ = %v", eps, delta)
		}
	}
	for range 2000 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if Delta(eps, mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// Params are a client's privacy parameters: the (ε, δ) it promises for all
// the rounds of a task together, the clipping norm C and how the rounds are
// accounted. Zero values: Rounds 1, Conversion ConversionAnalytic.
type Params struct {
	// Epsilon and Delta are the target (ε, δ) over all Rounds releases.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Clip is C: θ is clipped to ‖θ‖₂ ≤ C, so the sensitivity is Δ = 2C.
	Clip float64 `json:"clip"`
	// Rounds is R, the number of releases accounted for (a task's rounds).
	Rounds int `json:"rounds"`
	// Conversion is how R rounds are accounted (default analytic).
	Conversion Conversion `json:"conversion,omitempty"`
}

// withDefaults fills the documented zero-value defaults.
func (p Params) withDefaults() Params {
	if p.Rounds == 0 {
		p.Rounds = 1
	}
	if p.Conversion == "" {
		p.Conversion = ConversionAnalytic
	}
	return p
}

// Validate checks p (after defaults), returning a *ParamError naming the
// first bad field.
func (p Params) Validate() error {
	p = p.withDefaults()
	if err := checkEpsDelta(p.Epsilon, p.Delta); err != nil {
		return err
	}
	if !(p.Clip > 0) || math.IsInf(p.Clip, 0) {
		return &ParamError{Field: "clip", Value: p.Clip, Want: "a finite value > 0"}
	}
	return checkAccounting(p.Rounds, p.Conversion)
}

func checkAccounting(rounds int, conv Conversion) error {
	if rounds < 1 {
		return &ParamError{Field: "rounds", Value: rounds, Want: "an integer ≥ 1"}
	}
	if conv != ConversionAnalytic && conv != ConversionZCDP {
		return &ParamError{Field: "conversion", Value: string(conv), Want: `"analytic" or "zcdp"`}
	}
	return nil
}

// Accounting is how a noise multiplier was calibrated: the target, the
// number of releases, the zCDP ρ of all of them and the conversion used.
type Accounting struct {
	Epsilon    float64    `json:"epsilon"`
	Delta      float64    `json:"delta"`
	Rounds     int        `json:"rounds"`
	Conversion Conversion `json:"conversion"`
	// Rho is ρ = R/(2σ²), the zCDP parameter of the R releases.
	Rho float64 `json:"rho"`
	// EpsilonZCDP is ρ + 2√(ρ ln(1/δ)), the ε that Bun & Steinke's
	// conversion certifies at σ (≥ Epsilon under the analytic conversion).
	EpsilonZCDP float64 `json:"epsilon_zcdp"`
	// DeltaAnalytic is δ(ε; σ/√R), the exact δ of the R releases at ε
	// (≤ Delta under either conversion).
	DeltaAnalytic float64 `json:"delta_analytic"`
	// Formula states the calibration in words.
	Formula string `json:"formula"`
}

// ZCDPEpsilon returns ρ + 2√(ρ ln(1/δ)), the ε of Bun & Steinke's
// conversion of ρ-zCDP to (ε, δ)-DP.
func ZCDPEpsilon(rho, delta float64) float64 {
	return rho + 2*math.Sqrt(rho*math.Log(1/delta))
}

// Calibrate returns the noise multiplier σ (sensitivity 1) per release that
// makes Rounds releases (ε, δ)-DP under the chosen conversion, with its
// accounting. Clip is not used (σ is for sensitivity 1) and not checked.
func Calibrate(eps, delta float64, rounds int, conv Conversion) (float64, Accounting, error) {
	if conv == "" {
		conv = ConversionAnalytic
	}
	if err := checkEpsDelta(eps, delta); err != nil {
		return 0, Accounting{}, err
	}
	if err := checkAccounting(rounds, conv); err != nil {
		return 0, Accounting{}, err
	}
	R := float64(rounds)
	var sigma float64
	var formula string
	switch conv {
	case ConversionAnalytic:
		s1, err := AnalyticSigma(eps, delta)
		if err != nil {
			return 0, Accounting{}, err
		}
		sigma = math.Sqrt(R) * s1
		formula = "σ = √R·σ₁, σ₁ the smallest σ with Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ) ≤ δ (analytic Gaussian mechanism, Balle & Wang 2018); R Gaussian releases compose exactly to one with multiplier σ/√R (ρ = R/(2σ²)-zCDP, Gaussian DP μ = √R/σ)"
	case ConversionZCDP:
		L := math.Log(1 / delta)
		sq := math.Sqrt(eps+L) - math.Sqrt(L)
		rho := sq * sq
		sigma = math.Sqrt(R / (2 * rho))
		formula = "σ = √(R/(2ρ)), ρ = (√(ε + ln(1/δ)) − √(ln(1/δ)))² solving ε = ρ + 2√(ρ ln(1/δ)) (zCDP, Bun & Steinke 2016; R releases of a Gaussian are R/(2σ²)-zCDP)"
	}
	rho := R / (2 * sigma * sigma)
	acc := Accounting{Epsilon: eps, Delta: delta, Rounds: rounds, Conversion: conv, Rho: rho,
		EpsilonZCDP: ZCDPEpsilon(rho, delta), DeltaAnalytic: Delta(eps, sigma/math.Sqrt(R)), Formula: formula}
	return sigma, acc, nil
}
