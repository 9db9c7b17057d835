package control

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/fedirl/fedirl/pkg/irl"
)

// ---- sample-based fidelity: EPIC by sampling, for an environment without a lattice model ----

// SampleFidelityConfig sets the sample sizes of SampleFidelity; zero values
// take the defaults written here once.
type SampleFidelityConfig struct {
	// Batch is the number of transitions (s, a, s′) ∼ D compared (0: 4096).
	Batch int `json:"batch"`
	// MeanSamples is the number N_M of canonicalization samples (A, S′)
	// (evaluating-rewards' n_mean_samples; 0: 1024).
	MeanSamples int `json:"mean_samples"`
	// Gamma is the canonicalization's discount, the environment's γ.
	Gamma float64 `json:"gamma"`
	// Blocks is the jackknife's number of groups (0: irl.DefaultSampleEPICBlocks).
	Blocks int `json:"blocks,omitempty"`
}

// withDefaults returns c with its zero sizes replaced by the defaults.
func (c SampleFidelityConfig) withDefaults() SampleFidelityConfig {
	if c.Batch == 0 {
		c.Batch = 4096
	}
	if c.MeanSamples == 0 {
		c.MeanSamples = 1024
	}
	return c
}

// SampleEPICEstimate is one cell of the sample-based fidelity column: the
// estimated EPIC distance and its jackknife standard error.
type SampleEPICEstimate struct {
	Distance float64 `json:"distance"`
	StdErr   float64 `json:"stderr"`
}

// SampleCoverageEPIC maps a coverage name to a sample-based EPIC estimate,
// nil (JSON null) where EPIC is undefined (a reward constant after
// canonicalization on the batch), as CoverageEPIC does for the exact one.
type SampleCoverageEPIC map[irl.Coverage]*SampleEPICEstimate

// SampleFidelity returns, per method, the sample-based EPIC distance
// (irl.SampleEPIC) between its reward and the true one under each coverage
// of covs, by the coverage's name: the fidelity column of an environment
// without a lattice model, where runFidelity's exact EPIC cannot be taken.
// Every method is scored on the same draws of a coverage (common random
// numbers), drawn from a PCG seeded with seedOf(seed, "sample-fidelity", i)
// for the i-th coverage, so the same seed gives the same numbers. The
// study calls it for a point probe's fidelity units (runPointsFidelity, on
// pointCoverages); a lattice's keep the exact EPIC on the lattice model,
// against which this estimate is tested.
func SampleFidelity(covs []irl.SampleCoverage, rewards map[string]irl.SampleReward, rTrue irl.SampleReward, seed uint64, c SampleFidelityConfig) (map[string]SampleCoverageEPIC, error) {
	c = c.withDefaults()
	methods := make([]string, 0, len(rewards))
	for m := range rewards {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	out := make(map[string]SampleCoverageEPIC, len(methods))
	for _, m := range methods {
		out[m] = SampleCoverageEPIC{}
	}
	seen := map[irl.Coverage]bool{}
	for i, cov := range covs {
		if seen[cov.Name] {
			return nil, fmt.Errorf("sample fidelity: coverage %q given twice", cov.Name)
		}
		seen[cov.Name] = true
		x, err := cov.Draw(rand.New(rand.NewPCG(seedOf(seed, "sample-fidelity", i), 0)), c.Batch, c.MeanSamples)
		if err != nil {
			return nil, fmt.Errorf("sample fidelity: %w", err)
		}
		for _, m := range methods {
			res, err := irl.SampleEPIC(rewards[m], rTrue, x, irl.SampleEPICOptions{Gamma: c.Gamma, Blocks: c.Blocks})
			if errors.Is(err, irl.ErrConstantReward) {
				out[m][cov.Name] = nil // undefined, never 0
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("sample fidelity of %s under the %s coverage: %w", m, cov.Name, err)
			}
			out[m][cov.Name] = &SampleEPICEstimate{Distance: res.Distance, StdErr: res.StdErr}
		}
	}
	return out, nil
}
