package federation

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/privacy"
)

// errKilled stands for the death of the client process.
var errKilled = errors.New("client process killed")

// crashingFed forwards to a Federation and "kills the client" at its first
// Submit: before the request leaves (afterSend false) or after the server
// has stored it but before the acknowledgement arrives (afterSend true). It
// records every θ it was asked to send.
type crashingFed struct {
	Federation
	afterSend bool
	crash     bool
	mu        sync.Mutex
	sent      [][]float64
}

func (c *crashingFed) Submit(ctx context.Context, s Submission) (SubmitResult, error) {
	c.mu.Lock()
	c.sent = append(c.sent, slices.Clone(s.Theta))
	crash := c.crash
	c.crash = false
	c.mu.Unlock()
	if crash && !c.afterSend {
		return SubmitResult{}, errKilled
	}
	res, err := c.Federation.Submit(ctx, s)
	if crash {
		return SubmitResult{}, errKilled // the acknowledgement is lost with the process
	}
	return res, err
}

// countingLearner is fixedLearner counting its calls; with fail set it
// refuses to learn (a restarted client must not need to).
type countingLearner struct {
	fixedLearner
	mu    sync.Mutex
	calls int
	fail  bool
}

func (l *countingLearner) Learn(ctx context.Context, spec TaskSpec, warm []float64) (LocalResult, error) {
	l.mu.Lock()
	l.calls++
	fail := l.fail
	l.mu.Unlock()
	if fail {
		return LocalResult{}, errors.New("the restarted client learned again")
	}
	return l.fixedLearner.Learn(ctx, spec, warm)
}

// TestGRPCKilledPrivateClientResendsSameRelease is acceptance 1 of issue
// 37: a private client killed after noising θ and before the server's
// acknowledgement (once before the request left, once after the server
// stored it), then restarted with a fresh noise source, re-sends the
// byte-identical θ without learning again; the server's store holds one
// submission of the client, the ledger one release, acknowledged.
func TestGRPCKilledPrivateClientResendsSameRelease(t *testing.T) {
	for _, afterSend := range []bool{false, true} {
		name := map[bool]string{false: "killed before sending", true: "killed before the acknowledgement"}[afterSend]
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			f := newFixture(t, CoordinatorConfig{})
			spec := privateSpec("crash", 2, 2, 1)
			tok := f.create(t, spec, "alice", "bob")
			addr := serve(t, f, GRPCServerConfig{})
			path := filepath.Join(t.TempDir(), "alice-ledger.db")
			ledger, err := privacy.OpenLedger(path)
			if err != nil {
				t.Fatal(err)
			}
			params := privacy.Params{Epsilon: 1, Delta: 1e-6, Clip: 0.5}
			fed := &crashingFed{Federation: dial(t, addr, DialConfig{Token: tok["alice"]}), afterSend: afterSend, crash: true}
			learner := &countingLearner{fixedLearner: fixedLearner{Delta: []float64{3, -4}}}
			cfg := ClientConfig{TaskID: "crash", ClientID: "alice", Retry: RetryConfig{Attempts: 1},
				Privacy: &ClientPrivacy{Params: params, Noise: rand.New(rand.NewPCG(1, 1)), Ledger: ledger}}
			if _, err := RunClient(ctx, fed, learner, cfg); !errors.Is(err, errKilled) {
				t.Fatalf("first run: %v, want the simulated kill", err)
			}
			if want := map[bool]int{false: 0, true: 1}[afterSend]; f.count(t, "crash", 1) != want {
				t.Fatalf("after the kill the store holds %d submissions, want %d", f.count(t, "crash", 1), want)
			}

			// Restart: a new process (ledger reopened from its file, another
			// noise stream, a learner that must not be called).
			ledger2, err := privacy.OpenLedger(path)
			if err != nil {
				t.Fatal(err)
			}
			learner.fail = true
			cfg.Privacy = &ClientPrivacy{Params: params, Noise: rand.New(rand.NewPCG(99, 99)), Ledger: ledger2}
			done := make(chan error, 1)
			var rep ClientReport
			go func() {
				var err error
				rep, err = RunClient(ctx, fed, learner, cfg)
				done <- err
			}()
			bob := dial(t, addr, DialConfig{Token: tok["bob"]})
			if _, err := RunClient(ctx, bob, fixedLearner{Delta: []float64{0.1, 0.1}}, ClientConfig{TaskID: "crash", ClientID: "bob",
				Privacy: &ClientPrivacy{Params: params, Noise: rand.New(rand.NewPCG(2, 2))}}); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("restarted client: %v", err)
			}
			if len(fed.sent) != 2 || !sameBits(fed.sent[0], fed.sent[1]) {
				t.Fatalf("sent %v: want the same θ twice, bit for bit", fed.sent)
			}
			if learner.calls != 1 {
				t.Errorf("learner called %d times, want once (before the kill; the restart re-sends without learning)", learner.calls)
			}
			subs, err := f.store.Submissions("crash", 1)
			if err != nil {
				t.Fatal(err)
			}
			var mine []Submission
			for _, s := range subs {
				if s.ClientID == "alice" {
					mine = append(mine, s)
				}
			}
			if len(mine) != 1 || !sameBits(mine[0].Theta, fed.sent[0]) {
				t.Fatalf("the store holds %d submissions of alice (%+v), want one equal to the first release", len(mine), mine)
			}
			rr := rep.Rounds[0]
			if !rr.Resent || rr.Submit.Duplicate != afterSend || !sameBits(rr.Sent, fed.sent[0]) || len(rep.Final.Clients) != 2 {
				t.Errorf("report of the restarted run: %+v", rr)
			}
			s, err := ledger2.Summary(0)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Tasks) != 1 || s.Releases != 1 || s.Tasks[0].Acknowledged != 1 {
				t.Errorf("ledger: %+v, want one task with one acknowledged release", s)
			}
		})
	}
}

// sameBits reports whether a and b hold the same float64 bits.
func sameBits(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

// racingLearner records, while the client learns, a release of the same
// round in the client's ledger, as a second process of the same client
// would.
type racingLearner struct {
	fixedLearner
	ledger *privacy.Ledger
	decl   privacy.Declaration
}

func (l racingLearner) Learn(ctx context.Context, spec TaskSpec, warm []float64) (LocalResult, error) {
	err := l.ledger.Record(privacy.Release{Task: spec.ID, Client: "alice", Round: 1, Mechanism: privacy.MechanismGaussian,
		Declaration: l.decl, Theta: []float64{42, 42}, ReleasedAt: time.Now()})
	if err != nil {
		return LocalResult{}, err
	}
	return l.fixedLearner.Learn(ctx, spec, warm)
}

// TestPrivateClientRefusesToRenoise: a client that finds its round already
// released with another θ (another process of the same client released
// it) refuses to send fresh noise, with an error saying why, and sends
// nothing; a budget that the task would exceed is refused before learning.
func TestPrivateClientRefusesToRenoise(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := newFixture(t, CoordinatorConfig{})
	spec := privateSpec("renoise", 2, 2, 1)
	tok := f.create(t, spec, "alice", "bob")
	alice := InProcess{C: f.coord, Cred: Credentials{Token: tok["alice"]}}
	ledger, err := privacy.OpenLedger(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	params := privacy.Params{Epsilon: 1, Delta: 1e-6, Clip: 0.5, Rounds: 1}
	m, _ := privacy.New(params)
	cfg := ClientConfig{TaskID: "renoise", ClientID: "alice", Privacy: &ClientPrivacy{Params: params, Ledger: ledger}}
	_, err = RunClient(ctx, alice, racingLearner{fixedLearner{Delta: []float64{1, 2}}, ledger, m.Declaration()}, cfg)
	if !errors.Is(err, privacy.ErrReleased) || !strings.Contains(err.Error(), "nothing sent") || !strings.Contains(err.Error(), "second release") {
		t.Fatalf("re-noising a released round: %v", err)
	}
	if n := f.count(t, "renoise", 1); n != 0 {
		t.Fatalf("%d submissions stored", n)
	}

	// Budget: this task costs ε = 1 at δ = 1e-6; a budget of 0.9 refuses it
	// before the learner runs; a budget without a ledger is refused too.
	ledger2, _ := privacy.OpenLedger(filepath.Join(t.TempDir(), "ledger2.db"))
	learner := &countingLearner{fixedLearner: fixedLearner{Delta: []float64{1, 2}}}
	cfg.Privacy = &ClientPrivacy{Params: params, Ledger: ledger2, Budget: &privacy.Budget{Epsilon: 0.9, Delta: 1e-6}}
	if _, err := RunClient(ctx, alice, learner, cfg); !errors.Is(err, privacy.ErrBudget) || learner.calls != 0 {
		t.Fatalf("over budget: %v after %d learner calls", err, learner.calls)
	}
	cfg.Privacy = &ClientPrivacy{Params: params, Budget: &privacy.Budget{Epsilon: 10, Delta: 1e-6}}
	if _, err := RunClient(ctx, alice, learner, cfg); err == nil || !strings.Contains(err.Error(), "needs a ledger") || learner.calls != 0 {
		t.Fatalf("budget without ledger: %v after %d learner calls", err, learner.calls)
	}
	if n := f.count(t, "renoise", 1); n != 0 {
		t.Fatalf("%d submissions stored", n)
	}
}

// badSpecFed serves a task whose probe is not JSON (a broken or hostile
// server).
type badSpecFed struct{ Federation }

func (badSpecFed) GetTask(ctx context.Context, taskID, clientID string) (TaskInfo, error) {
	s := testSpec(taskID, 2, 1)
	s.Rounds, s.Probe = 1, []byte("{not json")
	return TaskInfo{Spec: s, CurrentRound: 1}, nil
}

// TestPrivateClientRefusesMalformedTask: a private client with a ledger
// given a task spec that does not encode refuses it with an error, before
// learning, instead of panicking.
func TestPrivateClientRefusesMalformedTask(t *testing.T) {
	ledger, err := privacy.OpenLedger(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	learner := &countingLearner{fixedLearner: fixedLearner{Delta: []float64{1, 2}}}
	_, err = RunClient(context.Background(), badSpecFed{}, learner, ClientConfig{TaskID: "t", ClientID: "alice",
		Privacy: &ClientPrivacy{Params: privacy.Params{Epsilon: 1, Delta: 1e-5, Clip: 1}, Ledger: ledger}})
	if err == nil || !strings.Contains(err.Error(), "does not encode") || learner.calls != 0 {
		t.Fatalf("malformed task: %v after %d learner calls", err, learner.calls)
	}
}
