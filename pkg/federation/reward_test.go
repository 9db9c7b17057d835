package federation

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/privacy"
)

// rewardPhi is the 4×2 feature matrix of rewardMeanFuser's probe.
var rewardPhi = [4][2]float64{{1, 0}, {0, 1}, {1, 1}, {1, -1}}

// rewardMeanFuser is an independent RewardFuser for the coordinator's
// bookkeeping: a probe of 4 points with Φ = rewardPhi, θ clients evaluated
// as Φθ, the fused reward the plain mean of the clients' rewards and θ its
// least-squares fit by the 2×2 normal equations (ΦᵀΦ = diag(3, 3)). A task
// whose fusion JSON names a method other than "mean" takes no rewards.
type rewardMeanFuser struct{ meanFuser }

func (*rewardMeanFuser) RewardSupport(spec TaskSpec) (int, error) {
	var f struct {
		Method string `json:"method"`
	}
	if len(spec.Fusion) > 0 {
		if err := json.Unmarshal(spec.Fusion, &f); err != nil {
			return 0, err
		}
	}
	if f.Method != "" && f.Method != "mean" {
		return 0, fmt.Errorf("fusion method %q combines θ", f.Method)
	}
	return len(rewardPhi), nil
}

func (*rewardMeanFuser) FuseRewards(_ context.Context, spec TaskSpec, thetas, rewards [][]float64, _ []int) (FuseOutput, error) {
	k := len(thetas)
	rbar := make([]float64, len(rewardPhi))
	for i := range k {
		r := rewards[i]
		if r == nil {
			r = make([]float64, len(rewardPhi))
			for x, row := range rewardPhi {
				r[x] = row[0]*thetas[i][0] + row[1]*thetas[i][1]
			}
		}
		for x, v := range r {
			rbar[x] += v / float64(k)
		}
	}
	th := make([]float64, 2)
	for x, row := range rewardPhi {
		th[0] += row[0] * rbar[x] / 3
		th[1] += row[1] * rbar[x] / 3
	}
	w := make([]float64, k)
	for i := range w {
		w[i] = 1 / float64(k)
	}
	return FuseOutput{Theta: th, Method: "mean", Weights: w, Reward: rbar}, nil
}

// rewardLearner returns a fixed reward on the probe instead of θ.
type rewardLearner struct{ Reward []float64 }

func (l rewardLearner) Learn(context.Context, TaskSpec, []float64) (LocalResult, error) {
	return LocalResult{Reward: append([]float64(nil), l.Reward...)}, nil
}

func rewardSub(task, client string, reward ...float64) Submission {
	return Submission{TaskID: task, ClientID: client, Round: 1, Reward: reward}
}

// TestRewardSubmissionValidation: a reward submission is checked as θ is,
// against the probe's support (exact length, finite, norm bound, a size
// limit) and the task (a method that takes rewards, no central privacy), and
// every refusal names the field and the numbers and stores nothing.
func TestRewardSubmissionValidation(t *testing.T) {
	f := newFixture(t, CoordinatorConfig{Fuser: &rewardMeanFuser{}})
	spec := testSpec("rw", 2, 2)
	spec.MaxRewardNorm = 10
	tok := f.create(t, spec, "a", "b")
	median := testSpec("rw-median", 2, 1)
	median.Fusion = json.RawMessage(`{"method":"median"}`)
	tokMedian := f.create(t, median, "a")
	central := testSpec("rw-central", 2, 1)
	central.CentralPrivacy = &privacy.Central{Epsilon: 1, Delta: 1e-5, Clip: 1}
	tokCentral := f.create(t, central, "a")
	ctx := context.Background()
	huge := make([]float64, MaxRewardPoints+1)
	for _, c := range []struct {
		name  string
		token string
		sub   Submission
		code  Code
		want  string
	}{
		{"short", tok["a"], rewardSub("rw", "a", 1, 2, 3), CodeInvalidArgument, "reward has 3 values, task rw's probe support has 4 points"},
		{"long", tok["a"], rewardSub("rw", "a", 1, 2, 3, 4, 5), CodeInvalidArgument, "reward has 5 values, task rw's probe support has 4 points"},
		{"nan", tok["a"], rewardSub("rw", "a", 1, 2, math.NaN(), 4), CodeInvalidArgument, "reward[2] is NaN"},
		{"inf", tok["a"], rewardSub("rw", "a", math.Inf(-1), 2, 3, 4), CodeInvalidArgument, "reward[0] is -Inf"},
		{"norm", tok["a"], rewardSub("rw", "a", 0, 0, 0, 10.5), CodeInvalidArgument, "reward has L2 norm 10.5 above task rw's bound 10 (max_reward_norm)"},
		{"both", tok["a"], Submission{TaskID: "rw", ClientID: "a", Round: 1, Theta: []float64{1, 2}, Reward: []float64{1, 2, 3, 4}}, CodeInvalidArgument, "carries theta (2 components) and reward (4 values): send exactly one"},
		{"oversized", tok["a"], rewardSub("rw", "a", huge...), CodeResourceExhausted, fmt.Sprintf("reward has %d values, limit %d", MaxRewardPoints+1, MaxRewardPoints)},
		{"theta method", tokMedian["a"], rewardSub("rw-median", "a", 1, 2, 3, 4), CodeInvalidArgument, `task rw-median takes no reward submissions: fusion method "median" combines θ`},
		{"central privacy", tokCentral["a"], rewardSub("rw-central", "a", 1, 2, 3, 4), CodeInvalidArgument, "task rw-central sets central_privacy"},
	} {
		_, err := f.coord.Submit(ctx, Credentials{Token: c.token}, c.sub)
		if CodeOf(err) != c.code || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %s saying %q", c.name, err, c.code, c.want)
		}
	}
	for _, id := range []string{"rw", "rw-median", "rw-central"} {
		if n := f.count(t, id, 1); n != 0 {
			t.Errorf("task %s: %d refused submissions stored", id, n)
		}
	}

	// A server whose fuser does not fuse rewards refuses them.
	g := newFixture(t, CoordinatorConfig{})
	tokG := g.create(t, testSpec("plain", 2, 1), "a")
	_, err := g.coord.Submit(ctx, Credentials{Token: tokG["a"]}, rewardSub("plain", "a", 1, 2, 3, 4))
	if CodeOf(err) != CodeInvalidArgument || !strings.Contains(err.Error(), "task plain takes theta only") {
		t.Errorf("reward to a θ-only server: %v", err)
	}

	// Idempotent like θ: the same reward again is a duplicate, another one is refused.
	good := rewardSub("rw", "a", 1, 2, 3, 4)
	if _, err := f.coord.Submit(ctx, Credentials{Token: tok["a"]}, good); err != nil {
		t.Fatal(err)
	}
	if res, err := f.coord.Submit(ctx, Credentials{Token: tok["a"]}, good); err != nil || !res.Duplicate {
		t.Fatalf("identical reward resubmitted: %+v, %v", res, err)
	}
	if _, err := f.coord.Submit(ctx, Credentials{Token: tok["a"]}, rewardSub("rw", "a", 1, 2, 3, 5)); CodeOf(err) != CodeAlreadyExists {
		t.Fatalf("another reward for the same round: %v", err)
	}
}

// TestGRPCMixedRewardAndThetaRound: over gRPC, a θ client and a reward client
// fuse in one round; the fused result carries the fused reward on the
// support, its least-squares θ and the clients that sent rewards, to both.
func TestGRPCMixedRewardAndThetaRound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := newFixture(t, CoordinatorConfig{Fuser: &rewardMeanFuser{}})
	tok := f.create(t, testSpec("mix", 2, 2), "alice", "bob")
	addr := serve(t, f, GRPCServerConfig{})
	bobReward := []float64{2, -1, 0, 5}
	reports := make([]ClientReport, 2)
	errs := make(chan error, 2)
	for i, c := range []struct {
		id string
		l  Learner
	}{{"alice", fixedLearner{Delta: []float64{1, 2}}}, {"bob", rewardLearner{Reward: bobReward}}} {
		cl := dial(t, addr, DialConfig{Token: tok[c.id]})
		go func() {
			var err error
			reports[i], err = RunClient(ctx, cl, c.l, ClientConfig{TaskID: "mix", ClientID: c.id})
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Alice's reward is Φ(1, 2) = (1, 2, 3, −1); the mean with Bob's is
	// (1.5, 0.5, 1.5, 2), and its least-squares θ is Φᵀr̄/3 = (5/3, 0).
	wantReward := []float64{1.5, 0.5, 1.5, 2}
	wantTheta := []float64{5.0 / 3, 0}
	for i, rep := range reports {
		fr := rep.Final
		if fmt.Sprint(fr.Reward) != fmt.Sprint(wantReward) || math.Abs(fr.Theta[0]-wantTheta[0]) > 1e-15 || fr.Theta[1] != 0 ||
			fmt.Sprint(fr.RewardClients) != "[bob]" || fmt.Sprint(fr.Clients) != "[alice bob]" {
			t.Errorf("client %d: fused %+v, want reward %v, θ %v, reward clients [bob]", i, fr, wantReward, wantTheta)
		}
	}
	subs, err := f.store.Submissions("mix", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		if (s.ClientID == "bob") != (s.Reward != nil) || (s.ClientID == "bob") == (s.Theta != nil) {
			t.Errorf("stored submission of %s: theta %v, reward %v", s.ClientID, s.Theta, s.Reward)
		}
	}
}

// TestPrivateRewardIsClippedInL2: a reward client with client-side privacy
// releases clip_C(r) + N(0, (σ·2C)² I), the same mechanism as for θ,
// replayed here from the same seeded source: clipped in L2 over the whole
// vector (a reward of norm 50 with C = 2 is scaled by 2/50), noise std
// σ·2C (sensitivity 2C for replacing the client's data, whatever the
// vector's length). The server accepts it under a privacy requirement.
func TestPrivateRewardIsClippedInL2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := newFixture(t, CoordinatorConfig{Fuser: &rewardMeanFuser{}})
	spec := privateSpec("dp-reward", 2, 1, 1)
	tok := f.create(t, spec, "r")
	addr := serve(t, f, GRPCServerConfig{})
	reward := []float64{30, 0, -40, 0} // L2 norm 50
	params := privacy.Params{Epsilon: 1, Delta: 1e-5, Clip: 2}
	cl := dial(t, addr, DialConfig{Token: tok["r"]})
	rep, err := RunClient(ctx, cl, rewardLearner{Reward: reward}, ClientConfig{TaskID: spec.ID, ClientID: "r",
		Privacy: &ClientPrivacy{Params: params, Noise: rand.New(rand.NewPCG(9, 9))}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := privacy.New(privacy.Params{Epsilon: 1, Delta: 1e-5, Clip: 2, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := m.Declaration()
	s1, err := privacy.AnalyticSigma(1, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(d.NoiseStd()/(2*2*s1)-1) > 1e-15 {
		t.Fatalf("noise std %v, want σ·2C = %v", d.NoiseStd(), 2*2*s1)
	}
	replay := rand.New(rand.NewPCG(9, 9))
	want := make([]float64, len(reward))
	for x, v := range reward {
		want[x] = v*2/50 + d.NoiseStd()*replay.NormFloat64()
	}
	rr := rep.Rounds[0]
	if rr.Sent != nil || len(rr.SentReward) != len(want) {
		t.Fatalf("sent θ %v, sent reward %v", rr.Sent, rr.SentReward)
	}
	for x := range want {
		if math.Abs(rr.SentReward[x]-want[x]) > 1e-12 {
			t.Fatalf("sent reward %v, want clip_C(r) + noise = %v", rr.SentReward, want)
		}
	}
	subs, err := f.store.Submissions(spec.ID, 1)
	if err != nil || len(subs) != 1 || subs[0].Privacy == nil || *subs[0].Privacy != d || fmt.Sprint(subs[0].Reward) != fmt.Sprint(rr.SentReward) {
		t.Fatalf("stored %+v, %v; want the sent reward with declaration %+v", subs, err, d)
	}
	if fmt.Sprint(rep.Final.Reward) != fmt.Sprint(rr.SentReward) {
		t.Errorf("fused reward of a one-client round %v, want the sent reward %v", rep.Final.Reward, rr.SentReward)
	}
}

// FuzzSubmitReward feeds arbitrary reward submissions (and θ beside them) to
// a coordinator whose fuser takes rewards on a 4-point probe: a refused one
// is classified and stores nothing; an accepted one carries exactly one of θ
// and a finite reward of 4 values within the norm bound, stored as sent.
func FuzzSubmitReward(f *testing.F) {
	spec := TaskSpec{ID: "t1", ThetaDim: 2, Quorum: 3, MaxThetaNorm: 10, MaxRewardNorm: 100, Rounds: 2}
	c, store, tok := fuzzFixtureWith(f, &rewardMeanFuser{}, spec)
	le := func(xs ...float64) []byte {
		var b []byte
		for _, x := range xs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		return b
	}
	f.Add("alice", 1, le(1, 2, 3, 4), []byte{})
	f.Add("bob", 1, le(1, math.NaN(), 3, 4), []byte{})
	f.Add("carol", 2, le(1, 2, 3), []byte{})
	f.Add("alice", 1, le(1, 2, 3, 4), le(1, 2))
	f.Add("bob", 1, le(0, 0, 0, 1e3), []byte{})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, client string, round int, reward, theta []byte) {
		s := Submission{TaskID: "t1", ClientID: client, Round: round, Reward: floats(reward), Theta: floats(theta)}
		res, _, _, accepted := submitOrRefuse(ctx, t, c, store, Credentials{Token: tok[client]}, s)
		if !accepted {
			return
		}
		if len(s.Reward) > 0 {
			if len(s.Theta) != 0 || validateReward(&spec, s.Reward, len(rewardPhi)) != nil {
				t.Fatalf("accepted a bad reward submission: theta %v, reward %v", s.Theta, s.Reward)
			}
		}
		subs, err := store.Submissions("t1", round)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range subs {
			if x.ClientID == client && !sameSubmission(&x, &s) && !res.Duplicate {
				t.Fatalf("accepted submission not stored as sent")
			}
		}
	})
}
