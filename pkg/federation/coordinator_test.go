package federation

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/approx"
	bolt "go.etcd.io/bbolt"
)

func TestQuorumFusesWeightedMean(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		weighting string
		demos     []int
		want      []float64 // hand-computed weighted means of the thetas below
		weights   []float64 // normalized α recorded in the provenance
		raw       []float64 // what the fuser must receive (alice, bob, carol)
	}{
		// thetas: alice (1,2), bob (3,-2), carol (5,6); provenance sorted by id.
		{"uniform", "uniform", []int{10, 10, 10}, []float64{3, 2}, []float64{1. / 3, 1. / 3, 1. / 3}, nil},
		{"demos", "demos", []int{1, 2, 1}, []float64{(1 + 6 + 5) / 4., (2 - 4 + 6) / 4.}, []float64{0.25, 0.5, 0.25}, []float64{1, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, CoordinatorConfig{})
			spec := testSpec("t1", 2, 3)
			spec.Fusion = json.RawMessage(`{"weighting":"` + tc.weighting + `"}`)
			tok := f.create(t, spec, "carol", "alice", "bob", "dave")
			thetas := map[string][]float64{"alice": {1, 2}, "bob": {3, -2}, "carol": {5, 6}}
			for i, c := range []string{"carol", "alice", "bob"} {
				s := sub("t1", c, 1, thetas[c]...)
				s.DemoCount = map[string]int{"alice": tc.demos[0], "bob": tc.demos[1], "carol": tc.demos[2]}[c]
				res, err := f.coord.Submit(ctx, Credentials{Token: tok[c]}, s)
				if err != nil {
					t.Fatal(err)
				}
				if res.Submissions != i+1 || res.Duplicate {
					t.Fatalf("submission %d: %+v", i, res)
				}
			}
			fs, err := f.coord.GetFused(ctx, Credentials{Token: tok["dave"]}, "t1", "dave", 1, time.Second)
			if err != nil || !fs.Ready {
				t.Fatalf("fused: %+v, %v", fs, err)
			}
			approx.Slices(t, "theta", fs.Result.Theta, tc.want, 1e-12, 0)
			approx.Slices(t, "weights", fs.Result.Weights, tc.weights, 1e-12, 0)
			if got := *f.fuser.last.Load(); (got == nil) != (tc.raw == nil) || !slices.Equal(got, tc.raw) {
				t.Errorf("fuser received weights %v, want the raw %v", got, tc.raw)
			}
			if got := strings.Join(fs.Result.Clients, ","); got != "alice,bob,carol" || fs.Result.Trigger != "quorum" || fs.Result.Method != "mean" {
				t.Errorf("provenance: clients %s trigger %s method %s", got, fs.Result.Trigger, fs.Result.Method)
			}
			// A fourth client is late: the round is closed and nothing is stored.
			_, err = f.coord.Submit(ctx, Credentials{Token: tok["dave"]}, sub("t1", "dave", 1, 0, 0))
			if CodeOf(err) != CodeFailedPrecondition {
				t.Errorf("late submission: %v", err)
			}
			if n := f.count(t, "t1", 1); n != 3 {
				t.Errorf("stored %d submissions, want 3", n)
			}
			if c := f.fuser.calls.Load(); c != 1 {
				t.Errorf("fuser called %d times, want 1", c)
			}
		})
	}
}

func TestSubmitRefusals(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, testSpec("t1", 3, 3), "alice", "bob", "carol")
	f.create(t, testSpec("t2", 3, 1), "mallory")
	if _, err := f.coord.Submit(ctx, Credentials{Token: tok["alice"]}, sub("t1", "alice", 1, 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	big := make([]float64, MaxThetaDim+1)
	for _, tc := range []struct {
		name string
		cred Credentials
		sub  Submission
		code Code
		msg  string
	}{
		{"wrong dimension", Credentials{Token: tok["bob"]}, sub("t1", "bob", 1, 1, 2), CodeInvalidArgument, "dimension 2"},
		{"NaN", Credentials{Token: tok["bob"]}, sub("t1", "bob", 1, 1, math.NaN(), 3), CodeInvalidArgument, "theta[1] is NaN"},
		{"Inf", Credentials{Token: tok["bob"]}, sub("t1", "bob", 1, math.Inf(-1), 0, 3), CodeInvalidArgument, "theta[0] is -Inf"},
		{"norm above bound", Credentials{Token: tok["bob"]}, sub("t1", "bob", 1, 100, 1, 0), CodeInvalidArgument, "above the task's bound"},
		{"oversized", Credentials{Token: tok["bob"]}, sub("t1", "bob", 1, big...), CodeResourceExhausted, "limit"},
		{"unknown task", Credentials{Token: tok["bob"]}, sub("nope", "bob", 1, 1, 2, 3), CodeUnauthenticated, "invalid token"},
		{"wrong token", Credentials{Token: "deadbeef"}, sub("t1", "bob", 1, 1, 2, 3), CodeUnauthenticated, "invalid token"},
		{"no token", Credentials{}, sub("t1", "bob", 1, 1, 2, 3), CodeUnauthenticated, "invalid token"},
		{"impersonation", Credentials{Token: tok["carol"]}, sub("t1", "bob", 1, 1, 2, 3), CodeUnauthenticated, "invalid token"},
		{"non-member", Credentials{Token: tok["alice"]}, sub("t2", "alice", 1, 1, 2, 3), CodeUnauthenticated, "invalid token"},
		{"certificate of another client", Credentials{Token: tok["bob"], CertName: "carol"}, sub("t1", "bob", 1, 1, 2, 3), CodePermissionDenied, "cannot act as"},
		{"future round", Credentials{Token: tok["bob"]}, sub("t1", "bob", 2, 1, 2, 3), CodeFailedPrecondition, "not open yet"},
		{"round zero", Credentials{Token: tok["bob"]}, sub("t1", "bob", 0, 1, 2, 3), CodeInvalidArgument, "rounds start at 1"},
		{"bad client id", Credentials{Token: tok["bob"]}, sub("t1", "bob/../x", 1, 1, 2, 3), CodeInvalidArgument, "not a valid identifier"},
		{"conflicting replay", Credentials{Token: tok["alice"]}, sub("t1", "alice", 1, 3, 2, 1), CodeAlreadyExists, "different theta"},
		{"negative demos", Credentials{Token: tok["bob"]}, Submission{TaskID: "t1", ClientID: "bob", Round: 1, Theta: []float64{1, 2, 3}, DemoCount: -1}, CodeInvalidArgument, "demo_count"},
		{"NaN grad norm", Credentials{Token: tok["bob"]}, Submission{TaskID: "t1", ClientID: "bob", Round: 1, Theta: []float64{1, 2, 3}, GradNorm: math.NaN()}, CodeInvalidArgument, "grad_norm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.coord.Submit(ctx, tc.cred, tc.sub)
			if CodeOf(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want code %v with %q", err, tc.code, tc.msg)
			}
			if n := f.count(t, "t1", 1); n != 1 {
				t.Fatalf("store holds %d submissions after refusal, want 1", n)
			}
		})
	}
	// An identical replay is acknowledged as a duplicate and stores nothing.
	res, err := f.coord.Submit(ctx, Credentials{Token: tok["alice"]}, sub("t1", "alice", 1, 1, 2, 3))
	if err != nil || !res.Duplicate || res.Submissions != 1 {
		t.Fatalf("replay: %+v, %v", res, err)
	}
	if n := f.count(t, "t1", 1); n != 1 {
		t.Fatalf("store holds %d submissions after replay, want 1", n)
	}
}

func TestGetAndStatusRefusals(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, CoordinatorConfig{AdminToken: "admin-secret"})
	tok := f.create(t, testSpec("t1", 2, 2), "alice", "bob")
	if _, err := f.coord.GetTask(ctx, Credentials{Token: tok["bob"]}, "t1", "alice"); CodeOf(err) != CodeUnauthenticated {
		t.Errorf("GetTask with bob's token as alice: %v", err)
	}
	// An unknown task is answered like a wrong token: task ids cannot be enumerated.
	if _, err := f.coord.GetTask(ctx, Credentials{Token: tok["bob"]}, "t9", "bob"); CodeOf(err) != CodeUnauthenticated {
		t.Errorf("GetTask unknown task: %v", err)
	}
	if _, err := f.coord.GetFused(ctx, Credentials{Token: tok["bob"]}, "t1", "bob", 2, 0); CodeOf(err) != CodeInvalidArgument {
		t.Errorf("GetFused round 2 of 1: %v", err)
	}
	fs, err := f.coord.GetFused(ctx, Credentials{Token: tok["bob"]}, "t1", "bob", 1, 30*time.Millisecond)
	if err != nil || fs.Ready || fs.Quorum != 2 {
		t.Errorf("GetFused before quorum: %+v, %v", fs, err)
	}
	if _, err := f.coord.Status(ctx, Credentials{Token: tok["bob"]}); CodeOf(err) != CodeUnauthenticated {
		t.Errorf("Status with a client token: %v", err)
	}
	sts, err := f.coord.Status(ctx, Credentials{Token: "admin-secret"})
	if err != nil || len(sts) != 1 || sts[0].ID != "t1" || len(sts[0].ClientsAllowed) != 2 || strings.Join(sts[0].ClientsSeen, ",") != "bob" {
		t.Errorf("Status: %+v, %v", sts, err)
	}
}

func TestTokensStoredHashed(t *testing.T) {
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, testSpec("t1", 2, 1), "alice")
	err := f.store.db.View(func(tx *bolt.Tx) error {
		raw := string(tx.Bucket(bucketTasks).Get([]byte("t1")))
		if strings.Contains(raw, tok["alice"]) {
			t.Error("plain token found in the store")
		}
		if !strings.Contains(raw, HashToken(tok["alice"])) {
			t.Error("token hash not found in the store")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRestartKeepsSubmissionsAndRecoversFusion(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, testSpec("t1", 2, 3), "a", "b", "c")
	f.fuser.fail.Store(true) // the quorum is reached but fusion fails: the round stays open
	for i, c := range []string{"a", "b", "c"} {
		if _, err := f.coord.Submit(ctx, Credentials{Token: tok[c]}, sub("t1", c, 1, float64(i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	var sts []TaskStatus
	eventually(t, "the failed fusion", func() bool {
		sts, _ = f.coord.Status(ctx, Credentials{})
		return strings.Contains(sts[0].Error, "deliberately failing")
	})
	if len(sts[0].Fused) != 0 {
		t.Fatalf("status after failed fusion: %+v", sts[0])
	}
	f.close()
	f.fuser = &meanFuser{}
	f.open(t, CoordinatorConfig{})
	// The restarted coordinator fuses the ready round at start-up.
	fs, err := f.coord.GetFused(ctx, Credentials{Token: tok["a"]}, "t1", "a", 1, time.Second)
	if err != nil || !fs.Ready {
		t.Fatalf("after restart: %+v, %v", fs, err)
	}
	approx.Slices(t, "theta", fs.Result.Theta, []float64{1, 1}, 1e-12, 0)
	if n := f.count(t, "t1", 1); n != 3 {
		t.Errorf("%d submissions after restart, want 3", n)
	}
}

func TestDeadlineFusesWithMinClients(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, CoordinatorConfig{})
	spec := testSpec("t1", 1, 3)
	spec.MinClients, spec.DeadlineSeconds = 2, 0.2
	tok := f.create(t, spec, "a", "b", "c")
	if _, err := f.coord.Submit(ctx, Credentials{Token: tok["a"]}, sub("t1", "a", 1, 2)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // past the deadline, below min_clients: no fusion
	if fs, _ := f.coord.GetFused(ctx, Credentials{Token: tok["a"]}, "t1", "a", 1, 0); fs.Ready {
		t.Fatal("fused below min_clients")
	}
	if _, err := f.coord.Submit(ctx, Credentials{Token: tok["b"]}, sub("t1", "b", 1, 4)); err != nil {
		t.Fatal(err)
	}
	fs, err := f.coord.GetFused(ctx, Credentials{Token: tok["a"]}, "t1", "a", 1, 2*time.Second)
	if err != nil || !fs.Ready || fs.Result.Trigger != "deadline" {
		t.Fatalf("fused: %+v, %v", fs, err)
	}
	approx.Slices(t, "theta", fs.Result.Theta, []float64{3}, 1e-12, 0)

	// With a long deadline, min_clients submissions do not fuse early.
	spec.ID, spec.DeadlineSeconds = "t2", 60
	tok = f.create(t, spec, "a", "b", "c")
	for _, c := range []string{"a", "b"} {
		if _, err := f.coord.Submit(ctx, Credentials{Token: tok[c]}, sub("t2", c, 1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if fs, _ := f.coord.GetFused(ctx, Credentials{Token: tok["a"]}, "t2", "a", 1, 100*time.Millisecond); fs.Ready {
		t.Fatal("fused before the deadline and below the quorum")
	}
}

func TestCorruptRecordIsolated(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, CoordinatorConfig{})
	f.create(t, testSpec("bad", 1, 1), "a")
	tok := f.create(t, testSpec("good", 1, 1), "a")
	if err := f.store.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketState).Put([]byte("bad"), sealRecord("state", []byte("bad"), []byte("{not json")))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.coord.Submit(ctx, Credentials{Token: tok["a"]}, sub("good", "a", 1, 1)); err != nil {
		t.Fatalf("good task: %v", err)
	}
	if _, err := f.coord.GetFused(ctx, Credentials{Token: tok["a"]}, "good", "a", 1, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	sts, err := f.coord.Status(ctx, Credentials{})
	if err != nil || len(sts) != 2 {
		t.Fatal(sts, err)
	}
	if !strings.Contains(sts[0].Error, "store: task bad: corrupt round state") {
		t.Errorf("corrupt task status error %q", sts[0].Error)
	}
	if sts[1].Error != "" || len(sts[1].Fused) != 1 {
		t.Errorf("good task status %+v", sts[1])
	}
}

func TestMultiRoundWarmStart(t *testing.T) {
	ctx := context.Background()
	spec := testSpec("mr", 2, 2)
	spec.Rounds, spec.WarmStart = 3, true
	clients := []LocalClient{{"a", fixedLearner{Delta: []float64{1, 0}}}, {"b", fixedLearner{Delta: []float64{0, 3}}}}
	fused, reps, err := RunInProcess(ctx, spec, clients, InProcessConfig{Fuser: &meanFuser{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(fused) != 3 || len(reps[0].Rounds) != 3 {
		t.Fatalf("%d fused rounds, %d client rounds", len(fused), len(reps[0].Rounds))
	}
	// Each round adds the mean delta (0.5, 1.5) to the previous fused θ.
	for r, fr := range fused {
		want := []float64{0.5 * float64(r+1), 1.5 * float64(r+1)}
		approx.Slices(t, "round theta", fr.Theta, want, 1e-12, 0)
		if fr.Round != r+1 {
			t.Errorf("round %d labelled %d", r+1, fr.Round)
		}
	}
	approx.Slices(t, "client final", reps[1].Final.Theta, fused[2].Theta, 0, 0)
}
