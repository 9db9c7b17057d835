package tasks_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/sampleirl"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// identityInput is the input map x = s (the observation itself).
func identityInput(d int) sampleirl.FeatureMap {
	return sampleirl.FeatureFunc{D: d, F: func(dst, o, _, _ []float64, _ bool) []float64 { return append(dst[:0], o...) }}
}

// permuteHidden returns the weights of r's one-hidden-layer network with
// its hidden units reordered by perm (rows of W₀ and entries of b₀, columns
// of W₁): the same function, another weight vector.
func permuteHidden(r *sampleirl.RewardNet, perm []int) []float64 {
	in, h := r.Net.Sizes[0], r.Net.Sizes[1]
	w := r.Weights()
	out := slices.Clone(w)
	W0, b0, W1 := 0, h*in, h*in+h
	for i, j := range perm {
		copy(out[W0+i*in:W0+(i+1)*in], w[W0+j*in:W0+(j+1)*in])
		out[b0+i] = w[b0+j]
		out[W1+i] = w[W1+j]
	}
	return out
}

// TestWeightAveragingPermutation: two networks that are hidden-unit
// permutations of each other compute the same reward at every probe point
// (to rounding), yet the mean of their weights (fusion's mean, FedAvg)
// computes another one — its values at the probe move by a large fraction
// of the reward's spread — while the mean of their values at the probe
// (fusion.FuseContributions, mean of reward contributions, on a scattered
// probe) is their common reward.
func TestWeightAveragingPermutation(t *testing.T) {
	r, err := sampleirl.NewRewardNet(identityInput(2), sampleirl.NetConfig{Hidden: []int{6}, OutputGain: 1}, 21)
	if err != nil {
		t.Fatal(err)
	}
	perm := []int{3, 0, 5, 1, 4, 2}
	q := r.Clone()
	if err := q.SetWeights(permuteHidden(r, perm)); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 50
	points := make([][]float64, n)
	phi := mat.NewDense(n, 2, nil)
	ra, rb := make([]float64, n), make([]float64, n)
	for i := range points {
		points[i] = []float64{2*rng.Float64() - 1, 2*rng.Float64() - 1}
		phi.SetRow(i, points[i])
		ra[i], rb[i] = r.Reward(points[i], nil, nil, false), q.Reward(points[i], nil, nil, false)
	}
	if d := maxAbsDiff(ra, rb); d > 1e-13 {
		t.Fatalf("the permuted network differs from the original by %.3g at the probe: not a permutation", d)
	}
	avgW, err := fusion.Mean([][]float64{r.Weights(), q.Weights()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	avg := r.Clone()
	if err := avg.SetWeights(avgW); err != nil {
		t.Fatal(err)
	}
	ravg := make([]float64, n)
	for i, x := range points {
		ravg[i] = avg.Reward(x, nil, nil, false)
	}
	moved := rms(sub(ravg, ra)) / stddev(ra)
	probe, err := fusion.NewPointProbe(phi, points, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := fusion.FuseContributions(context.Background(), probe, []fusion.Contribution{{Reward: ra}, {Reward: rb}}, nil, fusion.Options{Method: fusion.MethodMean})
	if err != nil {
		t.Fatal(err)
	}
	kept := maxAbsDiff(out.Reward.Reward, ra)
	t.Logf("weight average moves the reward by %.3f of its standard deviation (RMS); the reward average by at most %.2g", moved, kept)
	if moved < 0.2 {
		t.Errorf("averaging permuted weights moved the reward by only %.3f of its spread: the test shows no permutation problem", moved)
	}
	if kept > 1e-13 {
		t.Errorf("averaging the rewards at the probe moved them by %.3g", kept)
	}
}

func maxAbsDiff(a, b []float64) float64 {
	m := 0.0
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

func sub(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}

func rms(a []float64) float64 {
	s := 0.0
	for _, v := range a {
		s += v * v
	}
	return math.Sqrt(s / float64(len(a)))
}

func stddev(a []float64) float64 {
	m := 0.0
	for _, v := range a {
		m += v / float64(len(a))
	}
	s := 0.0
	for _, v := range a {
		s += (v - m) * (v - m)
	}
	return math.Sqrt(s / float64(len(a)))
}

// weightsSpec is an mlp-weights task of a 3-input network with 8 hidden units.
func weightsSpec(id string, init []float64, method string) federation.TaskSpec {
	probe, _ := json.Marshal(tasks.MLPWeightsProbe{Input: 3, Net: sampleirl.NetConfig{Hidden: []int{8}}, Init: init})
	return federation.TaskSpec{ID: id, EnvFamily: tasks.MLPWeightsFamilyName, Probe: probe, ThetaDim: 3*8 + 8 + 8 + 1, Quorum: 2,
		Fusion: json.RawMessage(`{"method": "` + method + `"}`)}
}

// TestMLPWeightsTaskValidation: an mlp-weights task is checked when it is
// created — theta_dim against the network's weight count, the shared
// initialization's length and finiteness, unknown keys, a reward-space
// method (no feature map to fuse rewards on) — and refuses reward
// submissions; its mean is the mean of the weight vectors.
func TestMLPWeightsTaskValidation(t *testing.T) {
	f := tasks.NewFuser()
	good := weightsSpec("w", nil, "mean")
	if err := f.Validate(good); err != nil {
		t.Fatalf("a good task: %v", err)
	}
	init := make([]float64, good.ThetaDim)
	if err := f.Validate(weightsSpec("w", init, "mean")); err != nil {
		t.Fatalf("a good task with a shared init: %v", err)
	}
	for name, tc := range map[string]struct {
		spec federation.TaskSpec
		want string
	}{
		"theta_dim":   {func() federation.TaskSpec { s := good; s.ThetaDim = 7; return s }(), "theta_dim 7"},
		"init length": {weightsSpec("w", init[:5], "mean"), "init: 5 weights"},
		"init NaN": {func() federation.TaskSpec {
			s := good
			s.Probe = json.RawMessage(strings.Replace(string(weightsSpec("w", init, "mean").Probe), "[0,", "[NaN,", 1))
			return s
		}(), "NaN"},
		"unknown key":   {func() federation.TaskSpec { s := good; s.Probe = json.RawMessage(`{"input": 3, "nte": {}}`); return s }(), "unknown field"},
		"input":         {func() federation.TaskSpec { s := good; s.Probe = json.RawMessage(`{"input": 0}`); return s }(), "input = 0"},
		"reward method": {weightsSpec("w", nil, "barycenter"), "network weights"},
	} {
		err := f.Validate(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", name, err, tc.want)
		}
	}
	if _, err := f.RewardSupport(good); err == nil {
		t.Error("an mlp-weights task offers a reward support")
	}
	rng := rand.New(rand.NewPCG(1, 1))
	a, b := make([]float64, good.ThetaDim), make([]float64, good.ThetaDim)
	for j := range a {
		a[j], b[j] = rng.NormFloat64(), rng.NormFloat64()
	}
	out, err := f.Fuse(context.Background(), good, [][]float64{a, b}, []int{3, 5})
	if err != nil {
		t.Fatal(err)
	}
	for j := range a {
		if want := 0.5*a[j] + 0.5*b[j]; out.Theta[j] != want {
			t.Fatalf("fused weight %d = %v, want the mean %v", j, out.Theta[j], want)
		}
	}
}
