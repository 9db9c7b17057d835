package federation

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/privacy"
)

// privateSpec is a task requiring (ε ≤ 2, δ ≤ 1e-5)-DP over its rounds,
// each client choosing its clipping norm.
func privateSpec(id string, dim, quorum, rounds int) TaskSpec {
	s := testSpec(id, dim, quorum)
	s.Rounds, s.MaxThetaNorm = rounds, 1e4
	s.Privacy = &privacy.Requirement{MaxEpsilon: 2, MaxDelta: 1e-5, ClientClip: true}
	return s
}

// TestGRPCPrivateClientsSendClippedThetaPlusNoise is acceptance 2: K DP
// clients over gRPC on loopback, R rounds each; every stored θ is exactly
// clip_C(θ_i) + σ·2C·g with g the client's seeded normals (replayed), the
// receipts and fused results carry the declarations, and the residuals
// stored − clip_C(θ_i) over all K·R releases have the covariance σ²Δ²I:
// each entry of the sample covariance S/(σΔ)² (known mean 0, n = K·R
// samples) is within 4.5 standard errors of I's (√(2/n) on the diagonal,
// √(1/n) off it; 4.5 keeps the chance of a false alarm over the 6 entries
// near 4e-5 for a fair mechanism). The same statistic refuses σ²C²I, the
// covariance of a mechanism that forgot the factor 2 in Δ = 2C.
func TestGRPCPrivateClientsSendClippedThetaPlusNoise(t *testing.T) {
	const K, R, dim = 40, 10, 3
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	spec := privateSpec("dp", dim, K, R)
	f := newFixture(t, CoordinatorConfig{})
	ids := make([]string, K)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%02d", i)
	}
	tok := f.create(t, spec, ids...)
	addr := serve(t, f, GRPCServerConfig{})
	params := privacy.Params{Epsilon: 1.5, Delta: 1e-6, Clip: 0.5}
	learned := func(i int) []float64 { // half the clients above the clip norm, half below
		if i%2 == 0 {
			return []float64{3 + float64(i), -4, 12}
		}
		return []float64{0.1, -0.2, 0.05 * float64(i%5)}
	}
	seed := func(i int) *rand.Rand { return rand.New(rand.NewPCG(2026, uint64(i))) }
	reports := make([]ClientReport, K)
	errs := make(chan error, K)
	for i, id := range ids {
		c := dial(t, addr, DialConfig{Token: tok[id]})
		go func() {
			var err error
			reports[i], err = RunClient(ctx, c, fixedLearner{Delta: learned(i), Demos: 4}, ClientConfig{TaskID: spec.ID, ClientID: id,
				Privacy: &ClientPrivacy{Params: params, Noise: seed(i)}})
			errs <- err
		}()
	}
	for range K {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	want := privacy.Params{Epsilon: 1.5, Delta: 1e-6, Clip: 0.5, Rounds: R}
	m, err := privacy.New(want)
	if err != nil {
		t.Fatal(err)
	}
	decl := m.Declaration()
	std := decl.NoiseStd()
	if s1, _ := privacy.AnalyticSigma(1.5, 1e-6); math.Abs(std/(2*0.5*math.Sqrt(R)*s1)-1) > 1e-15 {
		t.Fatalf("noise std %v, want 2C·√R·σ₁ = %v", std, 2*0.5*math.Sqrt(R)*s1)
	}

	// Residuals, and the exact replay of every client's noise.
	var res [][]float64
	for i, id := range ids {
		replay := seed(i)
		clipped := privacy.Clip(nil, learned(i), params.Clip)
		for round := 1; round <= R; round++ {
			subs, err := f.store.Submissions(spec.ID, round)
			if err != nil {
				t.Fatal(err)
			}
			var got *Submission
			for k := range subs {
				if subs[k].ClientID == id {
					got = &subs[k]
				}
			}
			if got == nil {
				t.Fatalf("round %d: no stored submission of %s", round, id)
			}
			if got.Privacy == nil || *got.Privacy != decl {
				t.Fatalf("round %d %s: stored declaration %+v, want %+v", round, id, got.Privacy, decl)
			}
			if got.DemoCount != 0 || got.Iterations != 0 || got.GradNorm != 0 {
				t.Errorf("round %d %s: metadata sent beside a private θ: %+v", round, id, got)
			}
			r := make([]float64, dim)
			for k := range dim {
				if want := clipped[k] + std*replay.NormFloat64(); got.Theta[k] != want {
					t.Fatalf("round %d %s: stored θ[%d] = %v, want clip + noise = %v", round, id, k, got.Theta[k], want)
				}
				if got.Theta[k] == learned(i)[k] {
					t.Fatalf("round %d %s: the server holds an un-noised component", round, id)
				}
				r[k] = got.Theta[k] - clipped[k]
			}
			res = append(res, r)
			rr := reports[i].Rounds[round-1]
			if rr.Submit.Privacy == nil || *rr.Submit.Privacy != decl {
				t.Errorf("round %d %s: receipt declaration %+v", round, id, rr.Submit.Privacy)
			}
			if len(rr.Fused.Privacy) != K || rr.Fused.Privacy[i] != decl {
				t.Errorf("round %d %s: fused result records %d declarations (want %d, entry %d = %+v)", round, id, len(rr.Fused.Privacy), K, i, decl)
			}
		}
	}
	zDelta, zClip := covarianceMaxZ(res, dim, std*std), covarianceMaxZ(res, dim, decl.Sigma*decl.Sigma*params.Clip*params.Clip)
	t.Logf("%d residuals: max |z| of the sample covariance against σ²Δ²I %.2f, against σ²C²I %.1f", len(res), zDelta, zClip)
	if zDelta > 4.5 {
		t.Errorf("sample covariance of stored − clipped θ is off σ²Δ²I by %.2f standard errors (limit 4.5)", zDelta)
	}
	if zClip <= 4.5 {
		t.Errorf("the statistic cannot tell σ²Δ²I from σ²C²I (max |z| %.2f)", zClip)
	}
}

// TestGRPCRefusesUndeclaredSubmission: a task requiring privacy refuses,
// over gRPC, a submission without a declaration, with a weaker one and with
// one whose σ is smaller than its (ε, δ) needs, storing nothing; a client
// without privacy refuses the task before learning; the declaration of an
// accepted one comes back in the receipt.
func TestGRPCRefusesUndeclaredSubmission(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := newFixture(t, CoordinatorConfig{})
	spec := privateSpec("needs-dp", 2, 2, 3)
	tok := f.create(t, spec, "alice", "bob")
	addr := serve(t, f, GRPCServerConfig{})
	alice := dial(t, addr, DialConfig{Token: tok["alice"]})

	good, _ := privacy.New(privacy.Params{Epsilon: 1, Delta: 1e-5, Clip: 1, Rounds: 3})
	d := good.Declaration()
	weak := d
	weak.Epsilon, weak.Sigma = 4, 10
	lying := d
	lying.Sigma *= 0.99
	short := d
	short.Rounds = 2
	cases := []struct {
		name string
		decl *privacy.Declaration
		want string
	}{
		{"no declaration", nil, "no privacy declaration"},
		{"epsilon above the requirement", &weak, "max_epsilon"},
		{"sigma too small for its (ε, δ)", &lying, "sigma"},
		{"fewer rounds than the task", &short, "rounds"},
	}
	for _, c := range cases {
		s := sub("needs-dp", "alice", 1, 0.3, -0.2)
		s.Privacy = c.decl
		_, err := alice.Submit(ctx, s)
		if CodeOf(err) != CodeInvalidArgument || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want InvalidArgument mentioning %q", c.name, err, c.want)
		}
	}
	if n := f.count(t, "needs-dp", 1); n != 0 {
		t.Fatalf("%d refused submissions were stored", n)
	}
	// A client without privacy stops before learning or sending anything.
	_, err := RunClient(ctx, alice, fixedLearner{Delta: []float64{1, 1}}, ClientConfig{TaskID: "needs-dp", ClientID: "alice"})
	if err == nil || !strings.Contains(err.Error(), "requires") {
		t.Errorf("client without privacy: %v", err)
	}
	// A client whose ε is above the requirement likewise.
	_, err = RunClient(ctx, alice, fixedLearner{Delta: []float64{1, 1}}, ClientConfig{TaskID: "needs-dp", ClientID: "alice",
		Privacy: &ClientPrivacy{Params: privacy.Params{Epsilon: 3, Delta: 1e-6, Clip: 1}}})
	if err == nil || !strings.Contains(err.Error(), "max_epsilon") {
		t.Errorf("client with ε above the requirement: %v", err)
	}
	if n := f.count(t, "needs-dp", 1); n != 0 {
		t.Fatalf("%d submissions stored by refusing clients", n)
	}
	s := sub("needs-dp", "alice", 1, 0.3, -0.2)
	s.Privacy = &d
	res, err := alice.Submit(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Privacy == nil || *res.Privacy != d {
		t.Errorf("receipt declaration %+v, want %+v", res.Privacy, d)
	}
	// An identical resubmission is a duplicate; the same θ with another
	// declaration is not.
	if res, err := alice.Submit(ctx, s); err != nil || !res.Duplicate {
		t.Errorf("resubmission: %+v, %v", res, err)
	}
	other := d
	other.Clip = 2
	s.Privacy = &other
	if _, err := alice.Submit(ctx, s); err == nil {
		t.Error("the same θ under another declaration was accepted as a duplicate")
	}
}

// TestPrivacyRequirementValidated: a task with an invalid requirement is
// refused at creation, naming the field.
func TestPrivacyRequirementValidated(t *testing.T) {
	f := newFixture(t, CoordinatorConfig{})
	for _, r := range []privacy.Requirement{{MaxEpsilon: 0, MaxDelta: 1e-5}, {MaxEpsilon: 1, MaxDelta: 1}, {MaxEpsilon: math.NaN(), MaxDelta: 1e-5}} {
		spec := testSpec("bad-dp", 2, 1)
		spec.Privacy = &r
		_, err := f.coord.CreateTask(spec, []string{"alice"})
		if err == nil || !strings.Contains(err.Error(), "privacy.max_") {
			t.Errorf("requirement %+v: %v, want an error naming privacy.max_epsilon or privacy.max_delta", r, err)
		}
	}
}

// FuzzPrivateSubmit sends arbitrary privacy declarations to a task that
// requires (ε ≤ 2, δ ≤ 1e-5) over 3 rounds (a fresh in-memory coordinator
// per input): nothing panics, every refusal is InvalidArgument and stores
// nothing, and every accepted declaration is stored as sent and really
// meets the requirement (ε, δ within bounds, at least the task's rounds, a
// finite clip > 0, σ no smaller than √R times the one-release analytic σ).
func FuzzPrivateSubmit(f *testing.F) {
	m, _ := privacy.New(privacy.Params{Epsilon: 1, Delta: 1e-6, Clip: 0.5, Rounds: 3})
	d := m.Declaration()
	f.Add(true, d.Epsilon, d.Delta, d.Clip, d.Sigma, d.Rounds, string(d.Conversion), 0.25)
	f.Add(true, d.Epsilon, d.Delta, d.Clip, d.Sigma*0.999, d.Rounds, "zcdp", 0.5)
	f.Add(true, 2.0, 1e-5, 1.0, d.Sigma, 7, "analytic", -0.5)
	f.Add(true, 1e300, 1e-300, math.Inf(1), math.NaN(), 1<<40, "analytic", 1.0)
	f.Add(false, 0.0, 0.0, 0.0, 0.0, 0, "", 2.0)
	ctx := context.Background()
	spec := privateSpec("p1", 2, 1, 3)
	f.Fuzz(func(t *testing.T, declare bool, eps, delta, clip, sigma float64, rounds int, conv string, x float64) {
		c, err := newCoordinator(newMemStore(), CoordinatorConfig{Fuser: &meanFuser{}, MaxWait: time.Millisecond, Tick: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		tok, err := c.CreateTask(spec, []string{"alice"})
		if err != nil {
			t.Fatal(err)
		}
		s := Submission{TaskID: "p1", ClientID: "alice", Round: 1, Theta: []float64{1, x}}
		if declare {
			s.Privacy = &privacy.Declaration{Epsilon: eps, Delta: delta, Clip: clip, Sigma: sigma, Rounds: rounds, Conversion: privacy.Conversion(conv)}
		}
		_, err = c.Submit(ctx, Credentials{Token: tok["alice"]}, s)
		subs, serr := c.store.submissions("p1", 1)
		if serr != nil {
			t.Fatal(serr)
		}
		if err != nil {
			if CodeOf(err) != CodeInvalidArgument {
				t.Fatalf("refusal with code %v: %v", CodeOf(err), err)
			}
			if len(subs) != 0 {
				t.Fatalf("refused submission stored: %+v", subs)
			}
			return
		}
		if !declare {
			t.Fatal("a submission without a declaration was accepted")
		}
		if len(subs) != 1 || subs[0].Privacy == nil || *subs[0].Privacy != *s.Privacy {
			t.Fatalf("stored %+v, sent declaration %+v", subs, s.Privacy)
		}
		s1, err := privacy.AnalyticSigma(eps, delta)
		if err != nil || !(eps <= 2 && delta <= 1e-5 && rounds >= 3 && clip > 0 && !math.IsInf(clip, 0) &&
			sigma >= math.Sqrt(float64(rounds))*s1*(1-1e-9) && !math.IsInf(sigma, 0)) {
			t.Fatalf("accepted a declaration that does not meet the requirement: %+v (one-release σ %v, %v)", subs[0].Privacy, s1, err)
		}
	})
}

// covarianceMaxZ is the largest |z| of the sample second moments of res
// (zero-mean draws of dimension dim) against N(0, s2·I): off-diagonal
// moments against 0 with standard error √(1/n), diagonal ones against 1
// with √(2/n), each scaled by s2.
func covarianceMaxZ(res [][]float64, dim int, s2 float64) float64 {
	n := float64(len(res))
	worst := 0.0
	for a := range dim {
		for b := a; b < dim; b++ {
			var c float64
			for _, r := range res {
				c += r[a] * r[b]
			}
			c /= n * s2
			z := c / math.Sqrt(1/n)
			if a == b {
				z = (c - 1) / math.Sqrt(2/n)
			}
			worst = max(worst, math.Abs(z))
		}
	}
	return worst
}
