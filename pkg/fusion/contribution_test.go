package fusion_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/lattice"
)

// phiTimes returns Φθ by gonum's matrix–vector product, a summation route
// independent of features.Reward (which the θ path uses), so the two agree
// to rounding only.
func phiTimes(phi *mat.Dense, th []float64) []float64 {
	n, _ := phi.Dims()
	var v mat.VecDense
	v.MulVec(phi, mat.NewVecDense(len(th), slices.Clone(th)))
	out := make([]float64, n)
	for i := range out {
		out[i] = v.AtVec(i)
	}
	return out
}

func thetaContribs(thetas [][]float64) []fusion.Contribution {
	cs := make([]fusion.Contribution, len(thetas))
	for i, th := range thetas {
		cs[i] = fusion.Contribution{Theta: th}
	}
	return cs
}

// TestRewardMethodsAndAcceptsRewards pins which registry methods take
// reward contributions: every reward-space method and the mean.
func TestRewardMethodsAndAcceptsRewards(t *testing.T) {
	want := []string{"mean", "normalized-mean", "barycenter", "debiased", "reward-median", "reward-trimmed-mean", "wasserstein-median"}
	if got := fusion.RewardMethods(); !slices.Equal(got, want) {
		t.Fatalf("RewardMethods() = %v, want %v", got, want)
	}
	for _, name := range append(fusion.Methods(), fusion.MethodBarycentric) {
		ok, err := fusion.AcceptsRewards(name)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := fusion.Canonical(name)
		if ok != slices.Contains(want, c) {
			t.Errorf("AcceptsRewards(%q) = %v", name, ok)
		}
	}
	if _, err := fusion.AcceptsRewards("nope"); err == nil {
		t.Error("AcceptsRewards accepted an unknown method")
	}
}

// TestRewardContributionMatchesTheta is issue 33's equivalence: a client
// that sends the values Φθ_i on the probe fuses exactly as one that sends
// θ_i, for every method that takes rewards: to 1e-12 for the mean, the
// normalized mean and the per-point median and trimmed mean (no solver), to
// the solver's tolerance for the barycenters; and bit for bit when the
// reward is Φθ_i computed as the θ path computes it. Two probes: the 5×5
// grid world's (Φ with 2 columns, where both routes to Φθ agree bit for bit)
// and a random Φ with 9 columns on an 8×6 lattice (where they differ in the
// last bits, so the tolerances are exercised).
func TestRewardContributionMatchesTheta(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 3))
	lat := lattice.UniformLattice(1, 8, 6)
	random := mat.NewDense(lat.Len(), 9, nil)
	for i := range lat.Len() {
		for j := range 9 {
			random.Set(i, j, rng.NormFloat64())
		}
	}
	for _, p := range []fusion.Probe{probe5(t), {Phi: random, Lattice: lat}} {
		n, d := p.Phi.Dims()
		const k = 4
		thetas := make([][]float64, k)
		differ := 0
		for i := range thetas {
			thetas[i] = make([]float64, d)
			for j := range thetas[i] {
				thetas[i][j] = rng.NormFloat64()
			}
			a, b := phiTimes(p.Phi, thetas[i]), features.Reward(nil, p.Phi, thetas[i])
			for x := range a {
				if a[x] != b[x] {
					differ++
				}
			}
		}
		if d == 9 && differ == 0 {
			t.Fatal("the two routes to Φθ agree bit for bit on the random probe: the test would not exercise rounding")
		}
		t.Logf("%d×%d probe: %d of %d reward values differ between the routes", n, d, differ, k*n)
		matchThetaByReward(t, p, thetas)
	}
}

func matchThetaByReward(t *testing.T, p fusion.Probe, thetas [][]float64) {
	n, _ := p.Phi.Dims()
	weights := []float64{1, 2, 3, 4}
	ctx := context.Background()
	for _, name := range fusion.RewardMethods() {
		opt := fusion.Options{Method: name}
		ref, err := fusion.FuseContributions(ctx, p, thetaContribs(thetas), weights, opt)
		if err != nil {
			t.Fatalf("%s: all θ: %v", name, err)
		}
		refReward := features.Reward(nil, p.Phi, ref.Theta)
		if ref.Reward != nil {
			refReward = ref.Reward.Reward
		}
		abs, rel := 1e-12, 1e-12
		if name == fusion.MethodBarycenter || name == fusion.MethodDebiased || name == fusion.MethodWassersteinMedian {
			// The solver stops at marginal error 1e-9 (ot's default tol): two
			// runs from inputs that differ in the last bits agree to about that.
			abs, rel = 1e-8, 1e-8
		}
		for _, mix := range []struct {
			label   string
			senders []int
		}{{"client 1 sends Φθ", []int{1}}, {"clients 0 and 3 send Φθ", []int{0, 3}}, {"every client sends Φθ", []int{0, 1, 2, 3}}} {
			cs := thetaContribs(thetas)
			exact := thetaContribs(thetas)
			for _, j := range mix.senders {
				cs[j] = fusion.Contribution{Reward: phiTimes(p.Phi, thetas[j])}
				exact[j] = fusion.Contribution{Reward: features.Reward(nil, p.Phi, thetas[j])}
			}
			got, err := fusion.FuseContributions(ctx, p, cs, weights, opt)
			if err != nil {
				t.Fatalf("%s, %s: %v", name, mix.label, err)
			}
			if got.Method != name || got.Reward == nil || len(got.Reward.Reward) != n {
				t.Fatalf("%s, %s: method %q, reward %v", name, mix.label, got.Method, got.Reward)
			}
			approx.Slices(t, name+", "+mix.label+": θ", got.Theta, ref.Theta, abs, rel)
			approx.Slices(t, name+", "+mix.label+": fused reward", got.Reward.Reward, refReward, abs, rel)
			approx.Slices(t, name+", "+mix.label+": outlier scores", got.Distances, ref.Distances, abs, rel)
			if name != fusion.MethodMean {
				// The same bits as the θ path: the same measures, the same result.
				bits, err := fusion.FuseContributions(ctx, p, exact, weights, opt)
				if err != nil {
					t.Fatal(err)
				}
				approx.Slices(t, name+", "+mix.label+": θ from bit-identical rewards", bits.Theta, ref.Theta, 0, 0)
			}
		}
	}
}

// TestMeanOfRewardVectors checks the mean of reward contributions that no
// θ can express: r̄ is the weighted mean of the vectors, entry by entry,
// and θ̄ its least-squares fit (the residual Φθ̄ − r̄ is orthogonal to Φ's
// columns).
func TestMeanOfRewardVectors(t *testing.T) {
	p := probe5(t)
	n, d := p.Phi.Dims()
	rng := rand.New(rand.NewPCG(7, 7))
	r0, r1 := make([]float64, n), make([]float64, n)
	for x := range n {
		r0[x], r1[x] = rng.NormFloat64(), math.Sin(float64(x))
	}
	th2 := []float64{0.5, -1, 2}[:d]
	cs := []fusion.Contribution{{Reward: r0}, {Reward: r1}, {Theta: th2}}
	out, err := fusion.FuseContributions(context.Background(), p, cs, []float64{1, 1, 2}, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r2 := features.Reward(nil, p.Phi, th2)
	want := make([]float64, n)
	for x := range n {
		want[x] = 0.25*r0[x] + 0.25*r1[x] + 0.5*r2[x]
	}
	approx.Slices(t, "fused reward", out.Reward.Reward, want, 1e-15, 1e-15)
	fit := features.Reward(nil, p.Phi, out.Theta)
	for j := range d {
		g := 0.0
		for x := range n {
			g += p.Phi.At(x, j) * (fit[x] - want[x])
		}
		approx.Equal(t, "Φᵀ(Φθ̄ − r̄)", g, 0, 1e-10, 0)
	}
	// Outlier scores: RMS distance of each client's reward to Φθ̄.
	for i, r := range [][]float64{r0, r1, r2} {
		s := 0.0
		for x := range n {
			s += (r[x] - fit[x]) * (r[x] - fit[x])
		}
		approx.Equal(t, "outlier score", out.Distances[i], math.Sqrt(s/float64(n)), 1e-14, 1e-12)
	}
	if out.DistanceSpace != "reward" {
		t.Errorf("DistanceSpace %q", out.DistanceSpace)
	}
}

func TestFuseContributionsRefuses(t *testing.T) {
	p := probe5(t)
	n, d := p.Phi.Dims()
	th := make([]float64, d)
	r := make([]float64, n)
	ctx := context.Background()
	for _, name := range fusion.Methods() {
		if ok, _ := fusion.AcceptsRewards(name); ok {
			continue
		}
		_, err := fusion.FuseContributions(ctx, p, []fusion.Contribution{{Theta: th}, {Reward: r}}, nil, fusion.Options{Method: name})
		if !errors.Is(err, fusion.ErrNoRewardInputs) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "normalized-mean") {
			t.Errorf("%s with a reward contribution: err = %v, want ErrNoRewardInputs naming the method and the alternatives", name, err)
		}
	}
	nan := slices.Clone(r)
	nan[7] = math.NaN()
	for _, c := range []struct {
		cs   []fusion.Contribution
		want string
	}{
		{[]fusion.Contribution{{Theta: th, Reward: r}}, "client 0 contributed both"},
		{[]fusion.Contribution{{Reward: r}, {}}, "client 1 contributed neither"},
		{[]fusion.Contribution{{Theta: th}, {Reward: r[:n-1]}}, "client 1 reward has 99 values, the probe has 100 points"},
		{[]fusion.Contribution{{Reward: r}, {Theta: th[:d-1]}}, "client 1 θ has length"},
		{[]fusion.Contribution{{Theta: th}, {Reward: nan}}, "client 1 reward[7] = NaN"},
	} {
		_, err := fusion.FuseContributions(ctx, p, c.cs, nil, fusion.Options{Method: fusion.MethodNormalizedMean})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want it to say %q", err, c.want)
		}
	}
	if _, err := fusion.FuseContributions(ctx, fusion.Probe{}, []fusion.Contribution{{Reward: r}}, nil, fusion.Options{}); err == nil {
		t.Error("a reward contribution without a probe was fused")
	}
}
