package federation

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/privacy"
)

// TestGRPCTaskSetsClip is acceptance 3 of issue 37 (protocol side): a task
// that sets C (sent to clients over gRPC with the spec) refuses a
// declaration with another C, storing nothing; a client without its own C
// takes the task's and its submission is accepted; a client whose C
// differs is refused before learning; a new task must set C or allow
// client-chosen C, and not both.
func TestGRPCTaskSetsClip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := newFixture(t, CoordinatorConfig{})
	spec := testSpec("task-c", 2, 2)
	spec.Rounds, spec.MaxThetaNorm = 2, 1e4
	spec.Privacy = &privacy.Requirement{MaxEpsilon: 2, MaxDelta: 1e-5, Clip: 0.25}
	tok := f.create(t, spec, "alice", "bob")
	addr := serve(t, f, GRPCServerConfig{})
	alice := dial(t, addr, DialConfig{Token: tok["alice"]})

	info, err := alice.GetTask(ctx, "task-c", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if info.Spec.Privacy == nil || info.Spec.Privacy.Clip != 0.25 || info.Spec.Privacy.ClientClip {
		t.Fatalf("the client received the requirement %+v, want clip 0.25", info.Spec.Privacy)
	}
	own, _ := privacy.New(privacy.Params{Epsilon: 1, Delta: 1e-5, Clip: 1, Rounds: 2})
	d := own.Declaration()
	s := sub("task-c", "alice", 1, 0.1, 0.2)
	s.Privacy = &d
	if _, err := alice.Submit(ctx, s); CodeOf(err) != CodeInvalidArgument || !strings.Contains(err.Error(), "the task sets C = 0.25") {
		t.Fatalf("declaration with C = 1: %v", err)
	}
	if n := f.count(t, "task-c", 1); n != 0 {
		t.Fatalf("%d refused submissions stored", n)
	}
	learner := &countingLearner{fixedLearner: fixedLearner{Delta: []float64{3, 4}}}
	_, err = RunClient(ctx, alice, learner, ClientConfig{TaskID: "task-c", ClientID: "alice",
		Privacy: &ClientPrivacy{Params: privacy.Params{Epsilon: 1, Delta: 1e-5, Clip: 1}}})
	if err == nil || !strings.Contains(err.Error(), "sets C = 0.25") || learner.calls != 0 {
		t.Fatalf("client with its own C: %v after %d learner calls", err, learner.calls)
	}
	// Without its own C the client uses the task's: it submits round 1 and
	// gives up waiting for bob.
	short, stop := context.WithTimeout(ctx, 500*time.Millisecond)
	defer stop()
	_, err = RunClient(short, alice, learner, ClientConfig{TaskID: "task-c", ClientID: "alice", PollWait: 100 * time.Millisecond,
		Privacy: &ClientPrivacy{Params: privacy.Params{Epsilon: 1, Delta: 1e-5}}})
	if err == nil || !strings.Contains(err.Error(), "gave up waiting") {
		t.Fatalf("client with the task's C: %v", err)
	}
	subs, err := f.store.Submissions("task-c", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 1 || subs[0].Privacy == nil || subs[0].Privacy.Clip != 0.25 {
		t.Fatalf("stored %+v, want one submission declaring C = 0.25", subs)
	}

	for _, r := range []privacy.Requirement{
		{MaxEpsilon: 1, MaxDelta: 1e-5},
		{MaxEpsilon: 1, MaxDelta: 1e-5, Clip: 1, ClientClip: true},
		{MaxEpsilon: 1, MaxDelta: 1e-5, Clip: -1},
	} {
		bad := testSpec("bad-c", 2, 1)
		bad.Privacy = &r
		if _, err := f.coord.CreateTask(bad, []string{"alice"}); err == nil || !strings.Contains(err.Error(), "privacy.c") {
			t.Errorf("requirement %+v: %v, want an error naming privacy.clip or privacy.client_clip", r, err)
		}
	}
}

// TestLegacyRequirementAcceptsAnyClip: a task stored before tasks set C
// (neither clip nor client_clip) still loads and accepts a declaration
// with any C, as it did.
func TestLegacyRequirementAcceptsAnyClip(t *testing.T) {
	r := privacy.Requirement{MaxEpsilon: 2, MaxDelta: 1e-5}
	if err := r.Validate(); err != nil {
		t.Fatalf("a stored legacy requirement no longer validates: %v", err)
	}
	m, _ := privacy.New(privacy.Params{Epsilon: 1, Delta: 1e-5, Clip: 3, Rounds: 1})
	d := m.Declaration()
	if err := r.Check(&d, 1); err != nil {
		t.Errorf("legacy requirement refuses C = 3: %v", err)
	}
	if err := r.CheckClipSet(); err == nil {
		t.Error("a new task may leave C unset")
	}
}
