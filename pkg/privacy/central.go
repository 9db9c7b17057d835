package privacy

import (
	"fmt"
	"math"
)

// Central differential privacy, for a server the clients trust with their
// θ_i.
//
// The server clips every client's θ_i to C, fuses the clipped vectors by a
// weighted mean Σ α_i clip_C(θ_i) with weights α that do not depend on the
// clients' data (they sum to 1), and adds N(0, (σ·Δ)² I) to the mean before
// anyone sees it. Replacing one client's data changes its clipped θ by at
// most 2C in L2 norm, so the mean moves by at most
//
//	Δ = 2C · max_i α_i    (2C/K for K equally weighted clients),
//
// the sensitivity the noise is scaled to; σ is calibrated exactly as for
// local privacy (Calibrate: (ε, δ) over the task's rounds). Against the
// fused result, K equally weighted clients thus need noise of standard
// deviation σ·2C/K on the mean, where K local releases average to
// σ·2C/√K: √K times less noise for the same (ε, δ), provided the server
// (who sees every θ_i in clear) is trusted. Only a fusion linear in the θ_i
// has this sensitivity: a barycenter, a median or a normalized mean is not
// a weighted mean of its inputs.
//
// For those, BoundOutput bounds the sensitivity without knowing the fusion:
// the server clips the fused θ itself to norm C, and any two clipped
// results differ by at most Δ = 2C, whatever the fusion did. The noise is
// then σ·2C on the result, the noise of one local release applied once:
// no √K gain, but any fusion can run.

// Central are a task's central-privacy parameters: the (ε, δ) of the fused
// results over all the task's rounds, the clipping norm C the server
// applies and the conversion (default analytic).
type Central struct {
	Epsilon    float64    `json:"epsilon"`
	Delta      float64    `json:"delta"`
	Clip       float64    `json:"clip"`
	Conversion Conversion `json:"conversion,omitempty"`
	// Bound is how the fused θ's sensitivity is bounded: BoundMean (the
	// default when empty) or BoundOutput.
	Bound string `json:"bound,omitempty"`
}

// Sensitivity bounds of central privacy.
const (
	// BoundMean: the fusion is a weighted mean of the clipped θ_i, Δ = 2C·max α_i.
	BoundMean = "mean"
	// BoundOutput: the fused θ is clipped to C, Δ = 2C for any fusion.
	BoundOutput = "output"
)

// Validate checks c, returning a *ParamError naming the first bad field.
func (c Central) Validate() error {
	if c.Bound != "" && c.Bound != BoundMean && c.Bound != BoundOutput {
		return &ParamError{Field: "bound", Value: c.Bound, Want: `"mean" or "output"`}
	}
	return Params{Epsilon: c.Epsilon, Delta: c.Delta, Clip: c.Clip, Rounds: 1, Conversion: c.Conversion}.Validate()
}

// BoundName returns c.Bound with its default filled in.
func (c Central) BoundName() string {
	if c.Bound == "" {
		return BoundMean
	}
	return c.Bound
}

// CentralRelease records the noise a server added to one fused θ: the
// calibration (ε, δ over Rounds fused results, C, noise multiplier σ,
// conversion), the sensitivity Δ = 2C·max α_i of the weighted mean and the
// noise standard deviation σ·Δ per component.
type CentralRelease struct {
	Epsilon     float64    `json:"epsilon"`
	Delta       float64    `json:"delta"`
	Clip        float64    `json:"clip"`
	Sigma       float64    `json:"sigma"`
	Rounds      int        `json:"rounds"`
	Conversion  Conversion `json:"conversion"`
	Sensitivity float64    `json:"sensitivity"`
	NoiseStd    float64    `json:"noise_std"`
	// Bound is how Sensitivity was bounded (BoundMean or BoundOutput).
	Bound string `json:"bound"`
}

// Calibrate returns the release of one fused θ for a task of rounds rounds
// whose mean used weights (normalized, each in [0, 1]; not used under
// BoundOutput, whose sensitivity is 2C); an invalid c or weights are
// refused.
func (c Central) Calibrate(rounds int, weights []float64) (CentralRelease, error) {
	if err := c.Validate(); err != nil {
		return CentralRelease{}, err
	}
	if c.BoundName() == BoundOutput {
		weights = []float64{1} // any two outputs clipped to C differ by at most 2C
	}
	if len(weights) == 0 {
		return CentralRelease{}, fmt.Errorf("central privacy: no client weights")
	}
	var maxW, sum float64
	for i, w := range weights {
		if !(w >= 0 && w <= 1) {
			return CentralRelease{}, fmt.Errorf("central privacy: weight %d is %v, want a value in [0, 1]", i, w)
		}
		maxW, sum = max(maxW, w), sum+w
	}
	if math.Abs(sum-1) > 1e-9 {
		return CentralRelease{}, fmt.Errorf("central privacy: the weights sum to %v, want 1", sum)
	}
	conv := c.Conversion
	if conv == "" {
		conv = ConversionAnalytic
	}
	sigma, _, err := Calibrate(c.Epsilon, c.Delta, rounds, conv)
	if err != nil {
		return CentralRelease{}, err
	}
	sens := 2 * c.Clip * maxW
	return CentralRelease{Epsilon: c.Epsilon, Delta: c.Delta, Clip: c.Clip, Sigma: sigma, Rounds: rounds,
		Conversion: conv, Sensitivity: sens, NoiseStd: sigma * sens, Bound: c.BoundName()}, nil
}

// AddNoise adds NoiseStd·g to theta in place, g ~ N(0, I) drawn from src in
// index order, and returns theta.
func (r CentralRelease) AddNoise(theta []float64, src Source) []float64 {
	for i := range theta {
		theta[i] += r.NoiseStd * src.NormFloat64()
	}
	return theta
}
