package federation

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/privacy"
)

// TestGRPCCentralPrivacyFusedMeanPlusNoise is acceptance 4 of issue 37
// (protocol side): K clients send θ_i in clear over gRPC to a task with
// central privacy, for R rounds; every fused θ is exactly the mean of the
// server-clipped θ_i plus σ·Δ·g, Δ = 2C/K the mean's sensitivity and g the
// server's seeded normals (replayed), the fused result records the release,
// and the residuals fused − clipped mean over the R rounds have covariance
// (σΔ)²I: each entry of the sample covariance S/(σΔ)² (known mean 0, n = R)
// within 4.5 standard errors of I's (√(2/n) on the diagonal, √(1/n) off
// it), as the local-DP test checks. The same statistic refuses the
// covariance (σ·2C)²/K·I that averaging K local releases would have: the
// √K less noise central privacy buys.
func TestGRPCCentralPrivacyFusedMeanPlusNoise(t *testing.T) {
	const K, R, dim = 4, 150, 3
	const seed = 2037
	// A liveness bound, not a speed target: 150 gRPC rounds take ~4 s on an
	// idle machine and over a minute on a loaded one.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	central := privacy.Central{Epsilon: 1, Delta: 1e-6, Clip: 0.5}
	f := newFixture(t, CoordinatorConfig{CentralNoise: rand.New(rand.NewPCG(seed, 1)), Fuser: talkativeFuser{&meanFuser{}}})
	spec := testSpec("central", dim, K)
	spec.Rounds, spec.MaxThetaNorm, spec.CentralPrivacy = R, 1e4, &central
	ids := make([]string, K)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%d", i)
	}
	tok := f.create(t, spec, ids...)
	addr := serve(t, f, GRPCServerConfig{})
	learned := func(i int) []float64 { // clients 0 and 2 above the clip norm
		if i%2 == 0 {
			return []float64{3 + float64(i), -4, 12}
		}
		return []float64{0.1, -0.2, 0.05 * float64(i)}
	}
	reports := make([]ClientReport, K)
	errs := make(chan error, K)
	for i, id := range ids {
		c := dial(t, addr, DialConfig{Token: tok[id]})
		go func() {
			var err error
			reports[i], err = RunClient(ctx, c, fixedLearner{Delta: learned(i), Demos: 10 * (i + 1)}, ClientConfig{TaskID: spec.ID, ClientID: id})
			errs <- err
		}()
	}
	for range K {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// The clipped mean, with meanFuser's arithmetic (uniform weights: the
	// demonstration counts are not passed on).
	mean := make([]float64, dim)
	for i := range K {
		for k, v := range privacy.Clip(nil, learned(i), central.Clip) {
			mean[k] += 1 / float64(K) * v
		}
	}
	sigma, _, _ := privacy.Calibrate(central.Epsilon, central.Delta, R, privacy.ConversionAnalytic)
	sens := 2 * central.Clip / K
	std := sigma * sens
	want := privacy.CentralRelease{Epsilon: 1, Delta: 1e-6, Clip: 0.5, Sigma: sigma, Rounds: R,
		Conversion: privacy.ConversionAnalytic, Sensitivity: sens, NoiseStd: std, Bound: privacy.BoundMean}
	replay := rand.New(rand.NewPCG(seed, 1))
	var res [][]float64
	for round := 1; round <= R; round++ {
		fr := reports[0].Rounds[round-1].Fused
		if fr.Central == nil || *fr.Central != want {
			t.Fatalf("round %d: fused result records %+v, want %+v", round, fr.Central, want)
		}
		if fr.Round != round || len(fr.Clients) != K {
			t.Fatalf("round %d: fused %+v", round, fr)
		}
		r := make([]float64, dim)
		for k := range dim {
			if w := mean[k] + std*replay.NormFloat64(); fr.Theta[k] != w {
				t.Fatalf("round %d: fused θ[%d] = %v, want clipped mean + noise = %v", round, k, fr.Theta[k], w)
			}
			r[k] = fr.Theta[k] - mean[k]
		}
		res = append(res, r)
		for i := 1; i < K; i++ { // every client received the same result
			if got := reports[i].Rounds[round-1].Fused.Theta; !sameBits(got, fr.Theta) {
				t.Fatalf("round %d: client %d received %v, client 0 %v", round, i, got, fr.Theta)
			}
		}
	}
	// Nothing but the noised θ and data-independent provenance is stored
	// or served: every other field the fuser reported is dropped.
	stored, ok, err := f.store.fused("central", 1)
	if err != nil || !ok {
		t.Fatalf("stored fused result: %v, %v", ok, err)
	}
	if leaks := centralLeaks(stored); len(leaks) > 0 {
		t.Errorf("a centrally private fused result carries %v, which the noise does not cover", leaks)
	}
	local := sigma * 2 * central.Clip / math.Sqrt(K)
	zCentral, zLocal := covarianceMaxZ(res, dim, std*std), covarianceMaxZ(res, dim, local*local)
	t.Logf("%d fused results: max |z| of the sample covariance against (σ·2C/K)²I %.2f, against (σ·2C)²/K·I %.1f", R, zCentral, zLocal)
	if zCentral > 4.5 {
		t.Errorf("sample covariance of fused − clipped mean is off (σ·2C/K)²I by %.2f standard errors (limit 4.5)", zCentral)
	}
	if zLocal <= 4.5 {
		t.Errorf("the statistic cannot tell central noise from local noise (max |z| %.2f)", zLocal)
	}
}

// medianFuser returns the coordinate-wise median of its inputs with uniform
// weights, except that with mimic3 set it returns the mean of exactly three
// inputs (passing the trial fusion at task creation).
type medianFuser struct{ mimic3 bool }

func (medianFuser) Validate(TaskSpec) error { return nil }

func (m medianFuser) Fuse(_ context.Context, spec TaskSpec, thetas [][]float64, _ []int) (FuseOutput, error) {
	K := len(thetas)
	w := make([]float64, K)
	for i := range w {
		w[i] = 1 / float64(K)
	}
	out := make([]float64, spec.ThetaDim)
	for k := range out {
		col := make([]float64, K)
		for i := range thetas {
			col[i] = thetas[i][k]
			if m.mimic3 && K == 3 {
				out[k] += w[i] * thetas[i][k]
			}
		}
		if !(m.mimic3 && K == 3) {
			out[k] = medianOf(col)
		}
	}
	return FuseOutput{Theta: out, Method: "median", Weights: w}, nil
}

func medianOf(x []float64) float64 {
	s := append([]float64(nil), x...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestCentralPrivacyNeedsWeightedMean: a task with central privacy whose
// fusion is not a weighted mean is refused at creation, naming the method;
// one that passes the trial but is not a mean on the real round fails the
// round (clients are told why) and releases nothing; invalid central
// parameters are refused naming the field.
func TestCentralPrivacyNeedsWeightedMean(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	central := &privacy.Central{Epsilon: 1, Delta: 1e-6, Clip: 1}
	f := newFixture(t, CoordinatorConfig{Fuser: medianFuser{}})
	spec := testSpec("median", 2, 2)
	spec.CentralPrivacy = central
	if _, err := f.coord.CreateTask(spec, []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "fusion method median") || !strings.Contains(err.Error(), "weighted mean") {
		t.Fatalf("median with central privacy: %v", err)
	}
	for _, bad := range []privacy.Central{{Epsilon: 0, Delta: 1e-6, Clip: 1}, {Epsilon: 1, Delta: 1e-6, Clip: 0}, {Epsilon: 1, Delta: 2, Clip: 1}} {
		s := testSpec("bad", 2, 1)
		s.CentralPrivacy = &bad
		if _, err := f.coord.CreateTask(s, []string{"a"}); err == nil || !strings.Contains(err.Error(), "central_privacy.") {
			t.Errorf("central %+v: %v", bad, err)
		}
	}

	g := newFixture(t, CoordinatorConfig{Fuser: medianFuser{mimic3: true}})
	spec.ID, spec.Quorum = "tricky", 4
	ids := []string{"a", "b", "c", "d"}
	tok := g.create(t, spec, ids...)
	for i, id := range ids { // the median of four is not their mean here
		in := InProcess{C: g.coord, Cred: Credentials{Token: tok[id]}}
		if _, err := in.Submit(ctx, sub("tricky", id, 1, float64(i*i)/10, 0.2)); err != nil {
			t.Fatal(err)
		}
	}
	a := InProcess{C: g.coord, Cred: Credentials{Token: tok["a"]}}
	var err error
	eventually(t, "the round to fail", func() bool {
		_, err = a.GetFused(ctx, "tricky", "a", 1, 10*time.Millisecond)
		return err != nil
	})
	if CodeOf(err) != CodeFailedPrecondition || !strings.Contains(err.Error(), "weighted mean") {
		t.Errorf("round fused by a non-mean: %v", err)
	}
	if _, ok, _ := g.store.fused("tricky", 1); ok {
		t.Error("a result was stored")
	}
}

// centralPublic names the FusedResult fields a centrally private result may
// carry: provenance that does not depend on the clients' θ_i, the noised θ
// and the release. A field added to FusedResult must be reviewed here.
var centralPublic = map[string]bool{"TaskID": true, "Round": true, "Theta": true, "Method": true, "Clients": true,
	"Weights": true, "MarginalError": true, "Iterations": true, "Trigger": true, "FusedAt": true, "Privacy": true, "Central": true}

// centralLeaks returns the fields of fr outside centralPublic that are set.
func centralLeaks(fr FusedResult) []string {
	var out []string
	v := reflect.ValueOf(fr)
	for i := range v.NumField() {
		if name := v.Type().Field(i).Name; !centralPublic[name] && !v.Field(i).IsZero() {
			out = append(out, name)
		}
	}
	return out
}

// talkativeFuser is a mean fuser that also fills every FuseOutput field
// beyond θ, method, weights, marginal error and iterations with per-client
// data (ones), as a fuser reporting, say, each client's distance to the
// result would: central privacy must drop them.
type talkativeFuser struct{ *meanFuser }

func (f talkativeFuser) Fuse(ctx context.Context, spec TaskSpec, thetas [][]float64, demos []int) (FuseOutput, error) {
	out, err := f.meanFuser.Fuse(ctx, spec, thetas, demos)
	v := reflect.ValueOf(&out).Elem()
	for i := range v.NumField() {
		switch fv := v.Field(i); v.Type().Field(i).Name {
		case "Theta", "Method", "Weights", "MarginalError", "Iterations":
		default:
			switch fv.Kind() {
			case reflect.Slice:
				if fv.Type().Elem().Kind() != reflect.Float64 {
					continue
				}
				s := reflect.MakeSlice(fv.Type(), len(thetas), len(thetas))
				for k := range len(thetas) {
					s.Index(k).Set(reflect.ValueOf(1.0).Convert(fv.Type().Elem()))
				}
				fv.Set(s)
			case reflect.Float64:
				fv.SetFloat(1)
			}
		}
	}
	return out, err
}

// TestCentralPrivacyOutputBound: with bound "output" a fusion that is not a
// weighted mean (a median) is accepted, and every fused θ is exactly
// clip_C(median of the clipped θ_i) + σ·2C·g, g the server's seeded normals,
// the sensitivity 2C recorded with the release, for any fused value (the
// clients here are far outside the clipping ball).
func TestCentralPrivacyOutputBound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const seed = 11
	central := &privacy.Central{Epsilon: 2, Delta: 1e-5, Clip: 0.5, Bound: privacy.BoundOutput}
	f := newFixture(t, CoordinatorConfig{Fuser: medianFuser{}, CentralNoise: rand.New(rand.NewPCG(seed, 2))})
	spec := testSpec("out", 2, 3)
	spec.Rounds, spec.MaxThetaNorm, spec.CentralPrivacy = 2, 1e4, central
	ids := []string{"a", "b", "c"}
	tok := f.create(t, spec, ids...)
	thetas := [][]float64{{30, 40}, {-3, 0.1}, {0.2, 0.1}}
	for round := 1; round <= 2; round++ {
		for i, id := range ids {
			in := InProcess{C: f.coord, Cred: Credentials{Token: tok[id]}}
			if _, err := in.Submit(ctx, sub("out", id, round, thetas[i]...)); err != nil {
				t.Fatal(err)
			}
		}
		in := InProcess{C: f.coord, Cred: Credentials{Token: tok["a"]}}
		var fs FusedStatus
		eventually(t, "the fusion", func() bool {
			var err error
			fs, err = in.GetFused(ctx, "out", "a", round, 10*time.Millisecond)
			return err == nil && fs.Ready
		})
		clipped := make([][]float64, 3)
		for i := range thetas {
			clipped[i] = privacy.Clip(nil, thetas[i], central.Clip)
		}
		med, _ := medianFuser{}.Fuse(ctx, spec, clipped, nil)
		want := privacy.Clip(nil, med.Theta, central.Clip)
		sigma, _, _ := privacy.Calibrate(2, 1e-5, 2, privacy.ConversionAnalytic)
		rel := fs.Result.Central
		if rel == nil || rel.Bound != privacy.BoundOutput || rel.Sensitivity != 2*central.Clip || rel.NoiseStd != sigma*2*central.Clip {
			t.Fatalf("round %d: release %+v, want bound output, sensitivity 2C = 1, noise std σ·2C = %v", round, rel, sigma)
		}
		replay := rand.New(rand.NewPCG(seed, 2))
		for range (round - 1) * 2 { // the draws of the earlier rounds
			replay.NormFloat64()
		}
		for k := range want {
			if w := want[k] + rel.NoiseStd*replay.NormFloat64(); fs.Result.Theta[k] != w {
				t.Fatalf("round %d: fused θ[%d] = %v, want clip_C(median) + noise = %v", round, k, fs.Result.Theta[k], w)
			}
		}
	}
}
