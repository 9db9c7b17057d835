package control

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

// TestSampleFidelityMatchesExact scores rewards on a slippery lattice grid
// with SampleFidelity under the three coverages (irl.ModelSampleCoverage)
// and checks each cell against the exact irl.EPIC of runFidelity: within 4
// reported standard errors, a shaped true reward at 0, the negated one at
// 1, a constant reward null; the same seed gives the same column.
func TestSampleFidelityMatchesExact(t *testing.T) {
	m := mdptest.SlipperyGrid(5, 0.95)
	rng := rand.New(rand.NewPCG(51, 1))
	S, A := m.NumStates, m.NumActions
	rTrue := make([]float64, S*A)
	for k := range rTrue {
		rTrue[k] = rng.NormFloat64()
	}
	near, shaped, negated := make([]float64, S*A), make([]float64, S*A), make([]float64, S*A)
	phi := make([]float64, S)
	for s := range phi {
		if !m.IsTerminal(s) {
			phi[s] = 5 * rng.NormFloat64()
		}
	}
	for k := range rTrue {
		near[k] = rTrue[k] + 0.7*rng.NormFloat64()
		shaped[k] = rTrue[k] - phi[k/A]
		negated[k] = -2 * rTrue[k]
	}
	visits := make([]float64, S)
	for s := range visits {
		visits[s] = float64(rng.IntN(4))
	}
	opts := map[irl.Coverage]irl.EPICOptions{
		irl.CoverageModel:          {Coverage: irl.CoverageModel},
		irl.CoverageUniform:        {Coverage: irl.CoverageUniform},
		irl.CoverageDemonstrations: {Coverage: irl.CoverageDemonstrations, StateWeights: visits},
	}
	var covs []irl.SampleCoverage
	for _, c := range irl.Coverages() {
		sc, err := irl.ModelSampleCoverage(m, opts[c])
		if err != nil {
			t.Fatal(err)
		}
		covs = append(covs, sc)
	}
	fn := func(r irl.TransitionReward) irl.SampleReward {
		f, err := irl.SampleRewardOf(m, r)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	nextPhi := make([]float64, S)
	for s := range nextPhi {
		nextPhi[s] = m.Gamma * phi[s]
	}
	rewards := map[string]irl.SampleReward{
		"near":     fn(irl.TransitionReward{StateAction: near}),
		"shaped":   fn(irl.TransitionReward{StateAction: shaped, NextState: nextPhi}),
		"negated":  fn(irl.TransitionReward{StateAction: negated}),
		"constant": func(_, _, _ []float64) float64 { return 1 },
	}
	cfg := SampleFidelityConfig{Batch: 8000, MeanSamples: 2000, Gamma: m.Gamma}
	got, err := SampleFidelity(covs, rewards, fn(irl.TransitionReward{StateAction: rTrue}), 7, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range irl.Coverages() {
		if got["constant"][c] != nil {
			t.Errorf("%s: constant reward scored %+v, want null", c, *got["constant"][c])
		}
		ex, err := irl.EPIC(m, near, rTrue, opts[c])
		if err != nil {
			t.Fatal(err)
		}
		e := got["near"][c]
		t.Logf("%-14s near: sample %.4f ± %.4f, exact %.4f, |diff| %.4f", c, e.Distance, e.StdErr, ex.Distance, math.Abs(e.Distance-ex.Distance))
		if !(math.Abs(e.Distance-ex.Distance) <= 4*e.StdErr) {
			t.Errorf("%s: sample EPIC %.4f ± %.4f, exact %.4f: more than 4 SE apart", c, e.Distance, e.StdErr, ex.Distance)
		}
		if e := got["shaped"][c]; e == nil || e.Distance > 1e-9 {
			t.Errorf("%s: shaped true reward at %+v, want 0", c, e)
		}
		if e := got["negated"][c]; e == nil || math.Abs(e.Distance-1) > 1e-9 {
			t.Errorf("%s: negated true reward at %+v, want 1", c, e)
		}
	}
	again, err := SampleFidelity(covs, rewards, fn(irl.TransitionReward{StateAction: rTrue}), 7, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, again) {
		t.Error("the same seed gave a different column")
	}
	if _, err := SampleFidelity([]irl.SampleCoverage{covs[0], covs[0]}, rewards, rewards["near"], 7, cfg); err == nil {
		t.Error("a coverage given twice was accepted")
	}
}
