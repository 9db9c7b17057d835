package irl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

// sampleDemos draws n trajectories on m: first state from m.Init, uniform
// random actions, successors from P, until a terminal state or L actions.
func sampleDemos(rng *rand.Rand, m *mdp.MDP, n, L int) []Trajectory {
	draw := func(p []float64, idx func(j int) int) int {
		u, acc := rng.Float64(), 0.0
		for j, q := range p {
			if acc += q; u < acc {
				return idx(j)
			}
		}
		return idx(len(p) - 1)
	}
	var out []Trajectory
	for range n {
		s := draw(m.Init, func(j int) int { return j })
		tr := Trajectory{States: []int{s}}
		for len(tr.Actions) < L && !m.IsTerminal(s) {
			a := rng.IntN(m.NumActions)
			next, prob := m.Successors(s, a)
			s = draw(prob, func(j int) int { return int(next[j]) })
			tr.Actions = append(tr.Actions, a)
			tr.States = append(tr.States, s)
		}
		if len(tr.Actions) > 0 {
			out = append(out, tr)
		}
	}
	return out
}

// bruteCoverageEPIC computes EPIC under a named coverage by its definition,
// independently of the package: the canonicalization distribution d over
// states (model: uniform over the non-terminal states; demonstrations: the
// demonstrations' visits counted here, restricted to non-terminal states;
// uniform: uniform over all states), C(R) of every triple by an explicit
// loop over the expectation E[γR(s′,A,S′) − R(s,A,S′) − γR(S,A,S′)], and
// the weighted Pearson correlation over all (s,a,s′) with weight
// d(s)·(1/A)·P(s′|s,a) from a dense transition table (model,
// demonstrations) or 1 (uniform). It returns the distance and ρ, checking ρ
// against gonum's weighted stat.Correlation.
func bruteCoverageEPIC(t *testing.T, m *mdp.MDP, r1, r2 TransitionReward, cov Coverage, demos []Trajectory) (dist, rho float64) {
	t.Helper()
	S := m.NumStates
	d := make([]float64, S)
	for s := range d {
		switch {
		case cov == CoverageUniform:
			d[s] = 1
		case m.IsTerminal(s):
		case cov == CoverageModel:
			d[s] = 1
		}
	}
	if cov == CoverageDemonstrations {
		for _, tr := range demos {
			for i := range tr.Actions {
				if s := tr.States[i]; !m.IsTerminal(s) {
					d[s]++
				}
			}
		}
	}
	rho, rhoGonum := brutePearson(m, r1, r2, d, cov == CoverageUniform)
	approx.Equal(t, "brute ρ vs gonum", rho, rhoGonum, 1e-12, 0)
	return math.Sqrt(max(0, (1-rho)/2)), rho
}

// coverageOptions returns the options of cov, with the demonstrations'
// visits from StateVisits.
func coverageOptions(t *testing.T, m *mdp.MDP, cov Coverage, demos []Trajectory) EPICOptions {
	t.Helper()
	o := EPICOptions{Coverage: cov}
	if cov == CoverageDemonstrations {
		w, err := StateVisits(m, demos)
		if err != nil {
			t.Fatal(err)
		}
		o.StateWeights = w
	}
	return o
}

// TestEPICCoveragesMatchBruteForce compares EPIC and EPICTransitions under
// each coverage with bruteCoverageEPIC on random small MDPs, with and
// without terminal states, for state–action and full transition rewards.
func TestEPICCoveragesMatchBruteForce(t *testing.T) {
	cases := []struct {
		S, A, k, nTerm int
		gamma          float64
	}{
		{3, 2, 2, 1, 0.9},
		{5, 3, 2, 1, 0.5},
		{6, 2, 3, 2, 0.99},
		{5, 2, 2, 0, 0.9},
		{7, 3, 1, 1, 0.95},
		{4, 2, 3, 1, 0},
	}
	for _, cov := range Coverages() {
		for ci, c := range cases {
			t.Run(fmt.Sprintf("%s/%dx%d-term%d-γ%g", cov, c.S, c.A, c.nTerm, c.gamma), func(t *testing.T) {
				for seed := uint64(0); seed < 4; seed++ {
					m := mdptest.RandomMDP(5000+100*uint64(ci)+seed, c.S, c.A, c.k, c.nTerm, c.gamma, 0)
					rng := rand.New(rand.NewPCG(seed, 11+uint64(ci)))
					demos := sampleDemos(rng, m, 3, 6)
					o := coverageOptions(t, m, cov, demos)

					r1, r2 := randomVec(rng, m.NumPairs()), randomVec(rng, m.NumPairs())
					got, err := EPIC(m, r1, r2, o)
					if err != nil {
						t.Fatal(err)
					}
					dist, rho := bruteCoverageEPIC(t, m, TransitionReward{StateAction: r1}, TransitionReward{StateAction: r2}, cov, demos)
					approx.Equal(t, "state-action distance", got.Distance, dist, 1e-11, 0)
					approx.Equal(t, "state-action ρ", got.Pearson, rho, 1e-11, 0)

					t1, t2 := randomTransitionReward(rng, m), randomTransitionReward(rng, m)
					if seed%2 == 1 {
						t2.Transition = nil // one reward with, one without a sparse part
					}
					got, err = EPICTransitions(m, t1, t2, o)
					if err != nil {
						t.Fatal(err)
					}
					dist, rho = bruteCoverageEPIC(t, m, t1, t2, cov, demos)
					approx.Equal(t, "transition distance", got.Distance, dist, 1e-11, 0)
					approx.Equal(t, "transition ρ", got.Pearson, rho, 1e-11, 0)
				}
			})
		}
	}
}

// TestEPICCoveragesDiffer checks on one MDP that the three coverages give
// three different distances for the same pair, so a mix-up of them cannot
// pass the brute-force test unnoticed.
func TestEPICCoveragesDiffer(t *testing.T) {
	m := mdptest.RandomMDP(77, 6, 3, 2, 1, 0.9, 0)
	rng := rand.New(rand.NewPCG(7, 7))
	demos := sampleDemos(rng, m, 2, 4)
	r1, r2 := randomVec(rng, m.NumPairs()), randomVec(rng, m.NumPairs())
	seen := map[float64]Coverage{}
	for _, cov := range Coverages() {
		res, err := EPIC(m, r1, r2, coverageOptions(t, m, cov, demos))
		if err != nil {
			t.Fatal(err)
		}
		for d, other := range seen {
			if math.Abs(d-res.Distance) < 1e-6 {
				t.Fatalf("coverages %s and %s give the same distance %g", other, cov, d)
			}
		}
		seen[res.Distance] = cov
	}
}

// scaleReward returns c·r.
func scaleReward(r TransitionReward, c float64) TransitionReward {
	mul := func(v []float64) []float64 {
		if v == nil {
			return nil
		}
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = c * x
		}
		return out
	}
	return TransitionReward{StateAction: mul(r.StateAction), NextState: mul(r.NextState), Transition: mul(r.Transition)}
}

// TestEPICCoveragesInvariance checks under each coverage that potential
// shaping (Φ(terminal) = 0) followed by a positive scaling leaves the
// distance at 0, and that a negative scaling gives distance 1.
func TestEPICCoveragesInvariance(t *testing.T) {
	for _, cov := range Coverages() {
		for ci, nTerm := range []int{0, 1, 2} {
			t.Run(fmt.Sprintf("%s/%d terminals", cov, nTerm), func(t *testing.T) {
				for seed := uint64(0); seed < 5; seed++ {
					m := mdptest.RandomMDP(7000+10*uint64(ci)+seed, 7, 3, 2, nTerm, 0.9, 0)
					rng := rand.New(rand.NewPCG(seed, 13))
					o := coverageOptions(t, m, cov, sampleDemos(rng, m, 3, 8))
					r := randomTransitionReward(rng, m)
					if seed%2 == 0 {
						r = TransitionReward{StateAction: r.StateAction}
					}
					phi := randomVec(rng, m.NumStates)
					for s := range phi {
						phi[s] *= 10
						if m.IsTerminal(s) {
							phi[s] = 0
						}
					}
					c := 0.01 + 5*rng.Float64()
					res, err := EPICTransitions(m, r, scaleReward(shape(m, r, phi), c), o)
					if err != nil {
						t.Fatal(err)
					}
					if res.Distance > 1e-7 || res.Pearson < 1-1e-12 {
						t.Fatalf("seed %d: %g·(shaped reward) at distance %.3g (ρ = %.17g), want 0", seed, c, res.Distance, res.Pearson)
					}
					if res, err = EPICTransitions(m, r, scaleReward(shape(m, r, phi), -c), o); err != nil {
						t.Fatal(err)
					}
					approx.Equal(t, "distance to the negated reward", res.Distance, 1, 1e-9, 0)
				}
			})
		}
	}
}

// TestEPICDemonstrationsUndefined checks that a reward constant on the
// demonstrations' support makes EPIC undefined under the demonstrations
// coverage (an error wrapping ErrConstantReward, never a distance of 0),
// while the model and uniform coverages, which reach the terminal state,
// still define it.
func TestEPICDemonstrationsUndefined(t *testing.T) {
	m := chainMDP(t, true) // 0 → 1 → 2 → 3 (terminal), action 0 stays
	constant := []float64{1, 1, 1, 1, 1, 1, 0, 0}
	other := []float64{0.3, -1, 2, 0.5, -0.7, 1.1, 0, 0}
	// The demonstrations stay in states 0 and 1 and never reach the terminal state.
	demos := []Trajectory{{States: []int{0, 0, 1, 1}, Actions: []int{0, 1, 0}}}
	o := coverageOptions(t, m, CoverageDemonstrations, demos)
	if _, err := EPIC(m, constant, other, o); !errors.Is(err, ErrConstantReward) || !strings.Contains(err.Error(), "r1") {
		t.Fatalf("demonstrations coverage: error = %v, want r1 wrapping ErrConstantReward", err)
	}
	for _, cov := range []Coverage{CoverageModel, CoverageUniform} {
		if res, err := EPIC(m, constant, other, EPICOptions{Coverage: cov}); err != nil || !(res.Distance > 0.01) {
			t.Fatalf("%s coverage: %+v, %v; want a positive distance", cov, res, err)
		}
	}
	// A demonstration that ends in the terminal state makes the survival reward informative.
	demos = append(demos, Trajectory{States: []int{1, 2, 3}, Actions: []int{1, 1}})
	if res, err := EPIC(m, constant, other, coverageOptions(t, m, CoverageDemonstrations, demos)); err != nil || !(res.Distance > 0.01) {
		t.Fatalf("demonstrations reaching the terminal state: %+v, %v; want a positive distance", res, err)
	}
}

// TestStateVisits checks the visit counts against a hand count and that bad
// demonstrations are refused with the trajectory named.
func TestStateVisits(t *testing.T) {
	m := chainMDP(t, true)
	w, err := StateVisits(m, []Trajectory{{States: []int{0, 0, 1, 2, 3}, Actions: []int{0, 1, 1, 1}}, {States: []int{2}, Actions: []int{0}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{2, 1, 2, 0}
	for s := range want {
		if w[s] != want[s] {
			t.Fatalf("visits %v, want %v", w, want)
		}
	}
	if _, err := StateVisits(m, []Trajectory{{States: []int{0, 9}, Actions: []int{0}}}); err == nil || !strings.Contains(err.Error(), "demonstration 0") {
		t.Fatalf("error = %v, want demonstration 0 named", err)
	}
}

// TestEPICCoverageErrors checks that a coverage and its state weights must agree.
func TestEPICCoverageErrors(t *testing.T) {
	m := chainMDP(t, true)
	r := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	for _, c := range []struct {
		name string
		o    EPICOptions
		want string
	}{
		{"uniform with weights", EPICOptions{Coverage: CoverageUniform, StateWeights: []float64{1, 1, 1, 1}}, "uniform coverage takes no state weights"},
		{"demonstrations without visits", EPICOptions{Coverage: CoverageDemonstrations}, "needs the demonstrations' state visits"},
		{"demonstrations only terminal", EPICOptions{Coverage: CoverageDemonstrations, StateWeights: []float64{0, 0, 0, 3}}, "no finite positive mass on non-terminal states"},
		{"unknown", EPICOptions{Coverage: "on-policy"}, `unknown EPIC coverage "on-policy" (want model, uniform, demonstrations)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := EPIC(m, r, r, c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
	for _, name := range []string{"model", "uniform", "demonstrations"} {
		if c, err := ParseCoverage(name); err != nil || string(c) != name {
			t.Fatalf("ParseCoverage(%q) = %q, %v", name, c, err)
		}
	}
}

// BenchmarkEPICCoverages_Banded1e5x4x8 measures EPIC under each coverage on
// a lattice-sized sparse MDP (10⁵ states, 4 actions, 8 successors per pair).
func BenchmarkEPICCoverages_Banded1e5x4x8(b *testing.B) {
	m := mdptest.BandedMDP(100000, 4, 8, 0.99)
	rng := rand.New(rand.NewPCG(1, 1))
	r1, r2 := randomVec(rng, m.NumPairs()), randomVec(rng, m.NumPairs())
	visits := make([]float64, m.NumStates)
	for s := 0; s < m.NumStates; s += 7 {
		visits[s] = 1 + float64(s%5)
	}
	for _, o := range []EPICOptions{{Coverage: CoverageModel}, {Coverage: CoverageUniform}, {Coverage: CoverageDemonstrations, StateWeights: visits}} {
		b.Run(string(o.Coverage), func(b *testing.B) {
			for b.Loop() {
				if _, err := EPIC(m, r1, r2, o); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(m.Next))*float64(b.N)/b.Elapsed().Seconds(), "transitions/s")
		})
	}
}
