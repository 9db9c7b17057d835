package gridworld

import (
	"fmt"

	"github.com/fedirl/fedirl/pkg/privacy"
)

// PrivacyConfig is client-level local differential privacy of every
// client's sent θ_i (README-gridworld.md, "Private rewards"): the client
// clips θ_i to norm Clip and adds N(0, (σ·2·Clip)² I) noise with σ
// calibrated (pkg/privacy, analytic Gaussian mechanism) so that the release
// is (Epsilon, Delta)-DP; the noise comes from the client's own seeded stream
// and goes through federation.RunClient, so the server sees and checks the
// declaration. The zero value is no privacy (ε = ∞): θ_i is sent as learned.
type PrivacyConfig struct {
	// Epsilon is ε; 0 means no privacy (then Delta and Clip must be 0 too).
	Epsilon float64 `yaml:"epsilon" json:"epsilon"`
	// Delta is δ, in (0, 1) when Epsilon > 0.
	Delta float64 `yaml:"delta" json:"delta"`
	// Clip is the clipping norm C > 0 when Epsilon > 0.
	Clip float64 `yaml:"clip" json:"clip"`
	// Mode is "local" (the default when empty: every client noises its own
	// θ_i) or "central": the Mean task runs with central privacy (clients
	// send θ_i in clear to a trusted server, which clips them and noises the
	// mean, noise std σ·2C/K), while Barycenter and Debiased, which central
	// privacy cannot serve, fuse the same local releases as in "local".
	Mode string `yaml:"mode,omitempty" json:"mode,omitempty"`
}

// Privacy modes.
const (
	PrivacyLocal   = "local"
	PrivacyCentral = "central"
)

// central reports whether the Mean task runs with central privacy.
func (p PrivacyConfig) central() bool { return p.enabled() && p.Mode == PrivacyCentral }

// centralParams returns the server-side mechanism's parameters.
func (p PrivacyConfig) centralParams() *privacy.Central {
	return &privacy.Central{Epsilon: p.Epsilon, Delta: p.Delta, Clip: p.Clip, Conversion: privacy.ConversionAnalytic}
}

// enabled reports whether clients add noise.
func (p PrivacyConfig) enabled() bool { return p.Epsilon != 0 }

// params returns the client-side mechanism's parameters (one release per
// client and cell: the three fusion tasks of a cell receive the same noisy θ_i).
func (p PrivacyConfig) params() privacy.Params {
	return privacy.Params{Epsilon: p.Epsilon, Delta: p.Delta, Clip: p.Clip, Rounds: 1, Conversion: privacy.ConversionAnalytic}
}

// validate checks the block, naming the key.
func (p PrivacyConfig) validate() error {
	if p.Mode != "" && p.Mode != PrivacyLocal && p.Mode != PrivacyCentral {
		return fmt.Errorf("privacy.mode %q: want %q or %q", p.Mode, PrivacyLocal, PrivacyCentral)
	}
	if !p.enabled() {
		if p.Delta != 0 || p.Clip != 0 || p.Mode != "" {
			return fmt.Errorf("privacy.delta = %v, privacy.clip = %v and privacy.mode %q need privacy.epsilon > 0 (epsilon 0 means no privacy)", p.Delta, p.Clip, p.Mode)
		}
		return nil
	}
	if err := p.params().Validate(); err != nil {
		return fmt.Errorf("privacy.%w", err)
	}
	return nil
}
