package irl

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

// sampleEPICCase is a tabular instance on which SampleEPIC is checked
// against the exact EPICTransitions.
type sampleEPICCase struct {
	name string
	m    func(seed uint64) *mdp.MDP
	cov  Coverage
	// weights draws EPICOptions.StateWeights (nil for none).
	weights     func(rng *rand.Rand, m *mdp.MDP) []float64
	stateAction bool // state–action rewards instead of full transition rewards
}

// sampleEPICCases are the instances of the convergence tests: random MDPs
// and a slippery lattice grid, under each named coverage.
func sampleEPICCases() []sampleEPICCase {
	random := func(S, A, k, nTerm int, gamma float64) func(uint64) *mdp.MDP {
		return func(seed uint64) *mdp.MDP { return mdptest.RandomMDP(5000+seed, S, A, k, nTerm, gamma, 0) }
	}
	visits := func(rng *rand.Rand, m *mdp.MDP) []float64 {
		w, err := StateVisits(m, sampleDemos(rng, m, 20, 8))
		if err != nil {
			panic(err)
		}
		return w
	}
	return []sampleEPICCase{
		{"random 8x3 model", random(8, 3, 3, 1, 0.9), CoverageModel, nil, false},
		{"random 6x2 model weighted", random(6, 2, 2, 1, 0.95), CoverageModel,
			func(rng *rand.Rand, m *mdp.MDP) []float64 { return randomWeights(rng, m, "random") }, false},
		{"random 7x3 uniform", random(7, 3, 2, 1, 0.8), CoverageUniform, nil, false},
		{"random 8x2 demonstrations", random(8, 2, 3, 1, 0.9), CoverageDemonstrations, visits, false},
		{"grid 4x4 model", func(uint64) *mdp.MDP { return mdptest.SlipperyGrid(4, 0.95) }, CoverageModel, nil, true},
		{"grid 3x3 uniform", func(uint64) *mdp.MDP { return mdptest.SlipperyGrid(3, 0.9) }, CoverageUniform, nil, true},
	}
}

// sampleVsExact returns the exact EPIC distance of two random rewards of
// case c with the given seed and SampleEPIC's estimate from draws of
// ModelSampleCoverage with nBatch transitions and nMean canonicalization
// samples.
func sampleVsExact(t *testing.T, c sampleEPICCase, seed uint64, nBatch, nMean int) (exact float64, got SampleEPICResult) {
	t.Helper()
	m := c.m(seed)
	rng := rand.New(rand.NewPCG(seed, 51))
	o := EPICOptions{Coverage: c.cov}
	if c.weights != nil {
		o.StateWeights = c.weights(rng, m)
	}
	r1, r2 := randomTransitionReward(rng, m), randomTransitionReward(rng, m)
	if c.stateAction {
		r1, r2 = TransitionReward{StateAction: r1.StateAction}, TransitionReward{StateAction: r2.StateAction}
	} else {
		// Correlated rewards, so the distance is not near its uninformative 1/√2.
		for i := range r2.StateAction {
			r2.StateAction[i] += 1.5 * r1.StateAction[i]
		}
	}
	ex, err := EPICTransitions(m, r1, r2, o)
	if err != nil {
		t.Fatal(err)
	}
	f1, err := SampleRewardOf(m, r1)
	if err != nil {
		t.Fatal(err)
	}
	f2, err := SampleRewardOf(m, r2)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ModelSampleCoverage(m, o)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != c.cov {
		t.Fatalf("sample coverage named %q, want %q", sc.Name, c.cov)
	}
	x, err := sc.Draw(rand.New(rand.NewPCG(seed, uint64(nBatch)<<20|uint64(nMean))), nBatch, nMean)
	if err != nil {
		t.Fatal(err)
	}
	got, err = SampleEPIC(f1, f2, x, SampleEPICOptions{Gamma: m.Gamma})
	if err != nil {
		t.Fatal(err)
	}
	return ex.Distance, got
}

// TestSampleEPICConvergesToExact checks SampleEPIC against the exact
// EPICTransitions on random MDPs and lattice grids under each coverage, on
// 8 seeds at each of 4 sizes (192 runs):
//   - calibration: the mean of (error/SE)² over all runs is below 3 (≈ 1
//     for a calibrated SE), and every run is within 6 reported SEs (the
//     jackknife SE has K−1 = 19 degrees of freedom, and 6 is about the
//     two-sided t₁₉ quantile at 0.01/192, a family-wise bound: a 4-SE bound
//     per run fails by chance at these numbers of runs);
//   - convergence: the mean error over seeds falls by at least a factor 3
//     over a 64-fold increase of both sample sizes (√64 = 8 is expected),
//     and the mean SE falls at every step.
func TestSampleEPICConvergesToExact(t *testing.T) {
	sizes := []struct{ batch, mean int }{{250, 64}, {1000, 256}, {4000, 1024}, {16000, 4096}}
	const seeds = 8
	var z2, maxZ float64
	var runs int
	for _, c := range sampleEPICCases() {
		t.Run(c.name, func(t *testing.T) {
			meanErr := make([]float64, len(sizes))
			meanSE := make([]float64, len(sizes))
			for si, n := range sizes {
				for seed := uint64(0); seed < seeds; seed++ {
					exact, got := sampleVsExact(t, c, seed, n.batch, n.mean)
					e := math.Abs(got.Distance - exact)
					if !(e <= 6*got.StdErr) {
						t.Errorf("batch %d, mean samples %d, seed %d: |sample − exact| = |%.4f − %.4f| = %.4f > 6 SE = %.4f",
							n.batch, n.mean, seed, got.Distance, exact, e, 6*got.StdErr)
					}
					maxZ = max(maxZ, e/got.StdErr)
					meanErr[si] += e / seeds
					meanSE[si] += got.StdErr / seeds
					z2 += (e / got.StdErr) * (e / got.StdErr)
					runs++
				}
				t.Logf("batch %5d, mean samples %4d: mean |sample − exact| = %.4f, mean SE = %.4f", n.batch, n.mean, meanErr[si], meanSE[si])
				if si > 0 && !(meanSE[si] < meanSE[si-1]) {
					t.Errorf("mean SE %.4f at batch %d is not below %.4f at batch %d", meanSE[si], n.batch, meanSE[si-1], sizes[si-1].batch)
				}
			}
			if !(meanErr[len(sizes)-1] < meanErr[0]/3) {
				t.Errorf("mean error %.4f at the largest size is not below a third of %.4f at the smallest", meanErr[len(sizes)-1], meanErr[0])
			}
		})
	}
	if z2 /= float64(runs); !(z2 < 3) {
		t.Errorf("mean (error/SE)² = %.2f over %d runs, want ≈ 1 (< 3): the standard error is too small", z2, runs)
	}
	t.Logf("mean (error/SE)² = %.2f, max error/SE = %.2f over %d runs", z2, maxZ, runs)
}

// contReward is a smooth non-linear reward on s ∈ R³, a ∈ R², s′ ∈ R³.
func contReward(w float64) SampleReward {
	return func(s, a, n []float64) float64 {
		return math.Sin(w*s[0]+s[1]) + a[0]*s[2] - 0.5*a[1]*a[1] + w*n[0]*n[1] + math.Cos(n[2]-a[0])
	}
}

// contSamples draws a SampleSet of continuous vectors: Gaussian states and
// actions, s′ = s + noise.
func contSamples(seed uint64, nBatch, nMean int) SampleSet {
	rng := rand.New(rand.NewPCG(seed, 99))
	vec := func(n int) []float64 { return randomVec(rng, n) }
	x := SampleSet{Batch: make([]Transition, nBatch)}
	for i := range x.Batch {
		s := vec(3)
		n := vec(3)
		for d := range n {
			n[d] = s[d] + 0.3*n[d]
		}
		x.Batch[i] = Transition{State: s, Action: vec(2), Next: n}
	}
	for range nMean {
		x.States = append(x.States, vec(3))
		x.Actions = append(x.Actions, vec(2))
	}
	return x
}

// TestSampleEPICInvariances checks the relations that hold exactly on the
// shared samples (see SampleEPIC): potential shaping with any Φ and positive
// scaling leave the distance at 0 up to rounding, at every sample size, on
// continuous rewards and on tabular ones; negation gives 1; and, so the
// checks can fail, a change that is not a shaping gives a distance > 0.
func TestSampleEPICInvariances(t *testing.T) {
	const gamma = 0.9
	phi := func(s []float64) float64 { return 10*math.Tanh(s[0]) + 3*s[1]*s[2] + 7 }
	base := contReward(1.3)
	shaped := func(r SampleReward, scale float64) SampleReward {
		return func(s, a, n []float64) float64 { return scale*r(s, a, n) + gamma*phi(n) - phi(s) }
	}
	// A tabular reward on a lattice grid, shaped with Φ(terminal) = 0 by shape.
	m := mdptest.SlipperyGrid(4, gamma)
	rng := rand.New(rand.NewPCG(3, 4))
	tr := randomTransitionReward(rng, m)
	p := randomVec(rng, m.NumStates)
	for s := range p {
		p[s] *= 10
		if m.IsTerminal(s) {
			p[s] = 0
		}
	}
	tab, err := SampleRewardOf(m, tr)
	if err != nil {
		t.Fatal(err)
	}
	tabShaped, err := SampleRewardOf(m, shape(m, tr, p))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ModelSampleCoverage(m, EPICOptions{})
	if err != nil {
		t.Fatal(err)
	}
	neg := func(r SampleReward, c float64) SampleReward {
		return func(s, a, n []float64) float64 { return -c * r(s, a, n) }
	}
	cases := []struct {
		name   string
		ra, rb SampleReward
		tab    bool
		want   float64 // distance; NaN for "clearly positive"
	}{
		{"shaped", base, shaped(base, 1), false, 0},
		{"scaled", base, neg(base, -4.2), false, 0},
		{"shaped and scaled", base, shaped(base, 0.37), false, 0},
		{"negated", base, neg(base, 1), false, 1},
		{"negated, shaped and scaled", base, shaped(neg(base, 1), 2.5), false, 1},
		{"not a shaping", base, func(s, a, n []float64) float64 { return base(s, a, n) + 0.5*a[1] }, false, math.NaN()},
		{"tabular shaped", tab, tabShaped, true, 0},
		{"tabular negated", tab, neg(tab, 3), true, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, n := range []struct{ batch, mean int }{{2, 2}, {10, 3}, {500, 50}} {
				var x SampleSet
				if c.tab {
					x, err = sc.Draw(rand.New(rand.NewPCG(uint64(n.batch), 1)), n.batch, n.mean)
					if err != nil {
						t.Fatal(err)
					}
				} else {
					x = contSamples(uint64(n.batch), n.batch, n.mean)
				}
				got, err := SampleEPIC(c.ra, c.rb, x, SampleEPICOptions{Gamma: gamma})
				if err != nil {
					if c.tab && n.batch == 2 && errors.Is(err, ErrConstantReward) {
						continue // two draws of a grid may coincide
					}
					t.Fatalf("batch %d: %v", n.batch, err)
				}
				switch {
				case math.IsNaN(c.want):
					if n.batch >= 500 && !(got.Distance > 0.05) {
						t.Errorf("batch %d: distance %.3g, want clearly positive", n.batch, got.Distance)
					}
				case math.Abs(got.Distance-c.want) > 1e-9 || (got.StdErr > 1e-9 && got.Blocks > 0):
					t.Errorf("batch %d, mean samples %d: distance %.3g ± %.3g, want %g exactly (up to rounding)", n.batch, n.mean, got.Distance, got.StdErr, c.want)
				}
			}
		})
	}
}

// TestSampleEPICDeterministic checks that the same seed gives the same
// draws and the same bits, and that the result does not depend on the
// order of the two rewards.
func TestSampleEPICDeterministic(t *testing.T) {
	m := mdptest.RandomMDP(7, 6, 3, 2, 1, 0.9, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	f1, _ := SampleRewardOf(m, randomTransitionReward(rng, m))
	f2, _ := SampleRewardOf(m, randomTransitionReward(rng, m))
	sc, err := ModelSampleCoverage(m, EPICOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(a, b SampleReward) SampleEPICResult {
		x, err := sc.Draw(rand.New(rand.NewPCG(11, 12)), 300, 40)
		if err != nil {
			t.Fatal(err)
		}
		r, err := SampleEPIC(a, b, x, SampleEPICOptions{Gamma: m.Gamma, Blocks: 7})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1, r2, r3 := run(f1, f2), run(f1, f2), run(f2, f1)
	if r1 != r2 {
		t.Fatalf("same seed, different results: %+v vs %+v", r1, r2)
	}
	if r1.Blocks != 7 || r1.Batch != 300 || r1.MeanSamples != 40 {
		t.Fatalf("sizes %+v, want batch 300, mean samples 40, blocks 7", r1)
	}
	if math.Abs(r1.Distance-r3.Distance) > 1e-15 {
		t.Fatalf("D(A,B) = %.17g but D(B,A) = %.17g", r1.Distance, r3.Distance)
	}
}

// TestSampleRewardOf checks the tabular adapter against bruteReward on every
// triple, and NaN at points that encode no triple.
func TestSampleRewardOf(t *testing.T) {
	m := mdptest.RandomMDP(3, 5, 3, 2, 1, 0.9, 0)
	rng := rand.New(rand.NewPCG(5, 6))
	r := randomTransitionReward(rng, m)
	f, err := SampleRewardOf(m, r)
	if err != nil {
		t.Fatal(err)
	}
	for s := range m.NumStates {
		for a := range m.NumActions {
			for y := range m.NumStates {
				got := f([]float64{float64(s)}, []float64{float64(a)}, []float64{float64(y)})
				if want := bruteReward(m, r, s, a, y); got != want {
					t.Fatalf("R(%d,%d,%d) = %v, want %v", s, a, y, got, want)
				}
			}
		}
	}
	for _, bad := range [][3][]float64{{{0.5}, {0}, {0}}, {{-1}, {0}, {0}}, {{0}, {3}, {0}}, {{0}, {0}, {5}}, {{0, 1}, {0}, {0}}, {{}, {0}, {0}}} {
		if v := f(bad[0], bad[1], bad[2]); !math.IsNaN(v) {
			t.Errorf("R%v = %v, want NaN", bad, v)
		}
	}
	if _, err := SampleRewardOf(m, TransitionReward{StateAction: make([]float64, 2)}); err == nil {
		t.Error("a reward of the wrong length was accepted")
	}
}

// TestSampleEPICBadInput checks that every input a caller can get wrong is
// an error naming what is wrong, never a panic.
func TestSampleEPICBadInput(t *testing.T) {
	good := contSamples(1, 30, 10)
	r := contReward(1)
	nanAt := func(bad func(s, a, n []float64) bool, v float64) SampleReward {
		return func(s, a, n []float64) float64 {
			if bad(s, a, n) {
				return v
			}
			return r(s, a, n)
		}
	}
	firstState := good.Batch[5].State
	sameVec := func(u, v []float64) bool { return len(u) == len(v) && &u[0] == &v[0] }
	edit := func(f func(x *SampleSet)) SampleSet {
		x := SampleSet{Batch: append([]Transition(nil), good.Batch...), States: append([][]float64(nil), good.States...),
			Actions: append([][]float64(nil), good.Actions...)}
		f(&x)
		return x
	}
	cases := []struct {
		name   string
		ra, rb SampleReward
		x      SampleSet
		o      SampleEPICOptions
		target error  // a sentinel the error must wrap, or nil
		want   string // a fragment of the message
	}{
		{"empty batch", r, r, edit(func(x *SampleSet) { x.Batch = nil }), SampleEPICOptions{}, nil, "batch has 0"},
		{"one transition", r, r, edit(func(x *SampleSet) { x.Batch = x.Batch[:1] }), SampleEPICOptions{}, nil, "batch has 1"},
		{"no mean samples", r, r, edit(func(x *SampleSet) { x.States, x.Actions = nil, nil }), SampleEPICOptions{}, nil, "0 canonicalization samples"},
		{"unpaired samples", r, r, edit(func(x *SampleSet) { x.Actions = x.Actions[:4] }), SampleEPICOptions{}, nil, "paired"},
		{"short state", r, r, edit(func(x *SampleSet) { x.Batch[3].State = []float64{1} }), SampleEPICOptions{}, nil, "batch transition 3"},
		{"short next state", r, r, edit(func(x *SampleSet) { x.Batch[4].Next = []float64{1, 2} }), SampleEPICOptions{}, nil, "batch transition 4"},
		{"long action", r, r, edit(func(x *SampleSet) { x.Batch[2].Action = []float64{1, 2, 3} }), SampleEPICOptions{}, nil, "action length"},
		{"short canonicalization state", r, r, edit(func(x *SampleSet) { x.States[6] = []float64{0} }), SampleEPICOptions{}, nil, "canonicalization state 6"},
		{"short canonicalization action", r, r, edit(func(x *SampleSet) { x.Actions[2] = nil }), SampleEPICOptions{}, nil, "canonicalization action 2"},
		{"NaN in a state", r, r, edit(func(x *SampleSet) {
			x.Batch[1] = Transition{State: []float64{0, math.NaN(), 0}, Action: x.Batch[1].Action, Next: x.Batch[1].Next}
		}), SampleEPICOptions{}, nil, "not finite"},
		{"NaN reward at a transition", r, nanAt(func(s, _, _ []float64) bool { return sameVec(s, firstState) }, math.NaN()), good, SampleEPICOptions{}, ErrNonFiniteReward, "reward B"},
		{"Inf reward at a canonicalization sample", nanAt(func(_, a, _ []float64) bool { return sameVec(a, good.Actions[3]) }, math.Inf(1)), r, good, SampleEPICOptions{}, ErrNonFiniteReward, "canonicalization action 3"},
		{"constant reward", func(_, _, _ []float64) float64 { return 2 }, r, good, SampleEPICOptions{Gamma: 0.5}, ErrConstantReward, "reward A"},
		{"nil reward", nil, r, good, SampleEPICOptions{}, nil, "nil reward"},
		{"gamma above 1", r, r, good, SampleEPICOptions{Gamma: 1.5}, nil, "gamma"},
		{"gamma NaN", r, r, good, SampleEPICOptions{Gamma: math.NaN()}, nil, "gamma"},
		{"negative blocks", r, r, good, SampleEPICOptions{Blocks: -1}, nil, "blocks"},
		{"one block", r, r, good, SampleEPICOptions{Blocks: 1}, nil, "1 jackknife block"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := SampleEPIC(c.ra, c.rb, c.x, c.o)
			if err == nil {
				t.Fatal("no error")
			}
			if c.target != nil && !errors.Is(err, c.target) {
				t.Errorf("error %q does not wrap %q", err, c.target)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
	if _, err := NewSampleCoverage("everywhere", contState, contState, contStep); err == nil {
		t.Error("a coverage with an unknown name was accepted")
	}
	if _, err := NewSampleCoverage(CoverageModel, contState, nil, contStep); err == nil {
		t.Error("a coverage without an action sampler was accepted")
	}
	if _, err := (SampleCoverage{Name: CoverageModel}).Draw(rand.New(rand.NewPCG(1, 1)), 3, 3); err == nil {
		t.Error("a coverage without samplers drew samples")
	}
	if _, err := ModelSampleCoverage(mdptest.SlipperyGrid(3, 0.9), EPICOptions{Coverage: CoverageDemonstrations}); err == nil {
		t.Error("the demonstrations coverage without state visits was accepted")
	}
}

// BenchmarkSampleEPIC_Continuous4096x1024 estimates EPIC between two smooth
// rewards on continuous states (every state distinct: the worst case,
// 1 + 2N_M evaluations per transition) and reports reward evaluations/s.
func BenchmarkSampleEPIC_Continuous4096x1024(b *testing.B) {
	x := contSamples(1, 4096, 1024)
	ra, rb := contReward(1.3), contReward(0.7)
	for b.Loop() {
		if _, err := SampleEPIC(ra, rb, x, SampleEPICOptions{Gamma: 0.99}); err != nil {
			b.Fatal(err)
		}
	}
	evals := 2 * float64(len(x.Batch)) * (1 + 2*float64(len(x.States)))
	b.ReportMetric(evals*float64(b.N)/b.Elapsed().Seconds(), "evals/s")
}

// contState draws a standard Gaussian vector in R³ (a state or an action).
func contState(rng *rand.Rand) []float64 { return randomVec(rng, 3) }

// contStep is a deterministic simulator step s′ = s + a.
func contStep(_ *rand.Rand, s, a []float64) []float64 {
	return []float64{s[0] + a[0], s[1] + a[1], s[2] + a[2]}
}

// TestNewSampleCoverage checks that a coverage built from a state sampler,
// an action sampler and a step draws transitions whose s′ is the step from
// their own (s, a), and the same sets from the same seed.
func TestNewSampleCoverage(t *testing.T) {
	c, err := NewSampleCoverage(CoverageModel, contState, contState, contStep)
	if err != nil {
		t.Fatal(err)
	}
	x, err := c.Draw(rand.New(rand.NewPCG(1, 2)), 50, 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Batch) != 50 || len(x.States) != 20 || len(x.Actions) != 20 {
		t.Fatalf("drew %d transitions and %d/%d samples, want 50 and 20/20", len(x.Batch), len(x.States), len(x.Actions))
	}
	for i, tr := range x.Batch {
		if want := contStep(nil, tr.State, tr.Action); !reflect.DeepEqual(tr.Next, want) {
			t.Fatalf("transition %d: s′ = %v, want s + a = %v", i, tr.Next, want)
		}
	}
	y, _ := c.Draw(rand.New(rand.NewPCG(1, 2)), 50, 20)
	if !reflect.DeepEqual(x, y) {
		t.Fatal("the same seed drew different sets")
	}
	if _, err := SampleEPIC(contReward(1), contReward(2), x, SampleEPICOptions{Gamma: 0.9}); err != nil {
		t.Fatal(err)
	}
}
