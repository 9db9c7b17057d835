package gridworld

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/privacy"
)

// TestCentralStudyNoisesTheMean checks the study's central-privacy mode
// against a direct computation: the Mean task's server clips the clients'
// θ_i (sent in clear) and adds σ·2C/K·g to their mean, g the server's own
// stream (index K, replayed here), σ the one-release analytic multiplier;
// the Barycenter task fuses the same local releases clip_C(θ_i) + σ·2C·g_i
// as the local mode (f.Sent); a bad mode is refused naming the key.
func TestCentralStudyNoisesTheMean(t *testing.T) {
	c := tinyConfig()
	c.Barycenter.BarycenterIterations = 3
	c = c.Resolved()
	const K, seed, size = 4, 3, 5
	st, err := c.buildSetup(EnvConfig{GridSize: size, NumberOfClients: K}, seed)
	if err != nil {
		t.Fatal(err)
	}
	C := 0.05
	c.Privacy = PrivacyConfig{Epsilon: 2, Delta: 1e-5, Clip: C, Mode: PrivacyCentral}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	f := &Fit{GridSize: size, Seed: seed}
	if err := c.federate(context.Background(), "central", f, st, c.studyClients(st), purposePrivacy); err != nil {
		t.Fatal(err)
	}
	clipped := make([][]float64, K)
	sent := make([][]float64, K)
	s1, _ := privacy.AnalyticSigma(2, 1e-5)
	for i := range K {
		clipped[i] = privacy.Clip(nil, f.Local[i], C)
		g := stream(seed, size, purposePrivacy, i)
		sent[i] = privacy.Clip(nil, f.Local[i], C)
		for k := range sent[i] {
			sent[i][k] += s1 * 2 * C * g.NormFloat64()
		}
		sameBits(t, "locally released theta", f.Sent[i], sent[i])
	}
	mean, err := fusion.Mean(clipped, st.weights)
	if err != nil {
		t.Fatal(err)
	}
	g := stream(seed, size, purposePrivacy, K)
	std := s1 * 2 * C / K
	for k := range mean {
		want := mean[k] + std*g.NormFloat64()
		if math.Abs(f.Fused[fusion.MethodMean][k]-want) > 1e-12*std {
			t.Fatalf("Mean[%d] = %v, want clipped mean + σ·2C/K·g = %v", k, f.Fused[fusion.MethodMean][k], want)
		}
	}
	if d := floats.Distance(f.Fused[fusion.MethodMean], mean, 2); !(d > 0) {
		t.Fatal("the central mean carries no noise")
	}
	method, _ := c.barycenterMethod()
	r, err := st.probe.Fuse(sent, st.weights, c.fusionOptions(method))
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, "Barycenter of the local releases", f.Fused[fusion.MethodBarycenter], r.Theta)

	c.Privacy.Mode = "trusted"
	if err := c.Validate(); err == nil {
		t.Error("privacy.mode \"trusted\" accepted")
	}
}
