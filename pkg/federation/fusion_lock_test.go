package federation

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowFuser takes d per fusion (returning early when its context is
// cancelled), then fuses like meanFuser; started is closed at its first call.
type slowFuser struct {
	meanFuser
	d       time.Duration
	once    sync.Once
	started chan struct{}
}

func (s *slowFuser) Fuse(ctx context.Context, spec TaskSpec, thetas [][]float64, demos []int) (FuseOutput, error) {
	s.once.Do(func() { close(s.started) })
	select {
	case <-ctx.Done():
		return FuseOutput{}, ctx.Err()
	case <-time.After(s.d):
	}
	return s.meanFuser.Fuse(ctx, spec, thetas, demos)
}

// submitLatency returns the median duration of n accepted submissions to
// task (clients c0..c{n-1}).
func submitLatency(t *testing.T, f *fixture, task string, tok map[string]string, n int) time.Duration {
	t.Helper()
	var ds []time.Duration
	for i := range n {
		c := "c" + string(rune('0'+i))
		start := time.Now()
		if _, err := f.coord.Submit(context.Background(), Credentials{Token: tok[c]}, sub(task, c, 1, float64(i))); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// TestSlowFusionDoesNotBlockOtherTasks: a fusion that takes 5 s runs outside
// the store's write transaction, so Submit on another task is not delayed by
// more than 50 ms (before, it waited for the whole fusion).
func TestSlowFusionDoesNotBlockOtherTasks(t *testing.T) {
	sf := &slowFuser{d: 5 * time.Second, started: make(chan struct{})}
	f := newFixture(t, CoordinatorConfig{Fuser: sf})
	clients := []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"}
	tokSlow := f.create(t, testSpec("slow", 1, 1), "c0")
	tokBase := f.create(t, testSpec("base", 1, 8), clients...)
	tokBusy := f.create(t, testSpec("busy", 1, 8), clients...)
	base := submitLatency(t, f, "base", tokBase, 7)
	// Submitted from another goroutine: a coordinator that fused inside
	// Submit's transaction would hold this call (and the store) for 5 s.
	go f.coord.Submit(context.Background(), Credentials{Token: tokSlow["c0"]}, sub("slow", "c0", 1, 1))
	<-sf.started
	busy := submitLatency(t, f, "busy", tokBusy, 7)
	t.Logf("median Submit latency: %v idle, %v during a 5 s fusion of another task", base, busy)
	if busy-base > 50*time.Millisecond {
		t.Fatalf("Submit delayed by %v during another task's fusion", busy-base)
	}
	// The round being fused is closed to new submissions.
	if fs, _ := f.coord.GetFused(context.Background(), Credentials{Token: tokSlow["c0"]}, "slow", "c0", 1, 0); fs.Ready {
		t.Fatal("slow fusion finished early")
	}
}

// TestShutdownDuringFusion: Close returns within a second while a fusion
// runs, and the round is fused after a restart.
func TestShutdownDuringFusion(t *testing.T) {
	sf := &slowFuser{d: time.Hour, started: make(chan struct{})}
	f := newFixture(t, CoordinatorConfig{Fuser: sf})
	tok := f.create(t, testSpec("t", 1, 2), "a", "b")
	for i, c := range []string{"a", "b"} {
		if _, err := f.coord.Submit(context.Background(), Credentials{Token: tok[c]}, sub("t", c, 1, float64(2*i))); err != nil {
			t.Fatal(err)
		}
	}
	<-sf.started
	start := time.Now()
	f.close()
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Close took %v during a fusion", d)
	}
	f.fuser = &meanFuser{}
	f.open(t, CoordinatorConfig{})
	fs, err := f.coord.GetFused(context.Background(), Credentials{Token: tok["a"]}, "t", "a", 1, 3*time.Second)
	if err != nil || !fs.Ready || fs.Result.Theta[0] != 1 {
		t.Fatalf("after restart: %+v, %v", fs, err)
	}
}

// permanentFuser always fails with an error that retrying cannot fix.
type permanentFuser struct{ meanFuser }

func (*permanentFuser) Fuse(context.Context, TaskSpec, [][]float64, []int) (FuseOutput, error) {
	return FuseOutput{}, errors.New("probe lattice has no points")
}

// TestPermanentFusionFailureFailsTheRound: clients get FAILED_PRECONDITION
// with the reason instead of waiting until their deadline, and the round
// accepts no more submissions.
func TestPermanentFusionFailureFailsTheRound(t *testing.T) {
	f := newFixture(t, CoordinatorConfig{Fuser: &permanentFuser{}})
	tok := f.create(t, testSpec("t", 1, 1), "a", "b")
	if _, err := f.coord.Submit(context.Background(), Credentials{Token: tok["a"]}, sub("t", "a", 1, 1)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := f.coord.GetFused(context.Background(), Credentials{Token: tok["a"]}, "t", "a", 1, 10*time.Second)
	if CodeOf(err) != CodeFailedPrecondition || !errorContains(err, "probe lattice has no points") {
		t.Fatalf("GetFused: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("client waited %v for a failed round", d)
	}
	if _, err := f.coord.Submit(context.Background(), Credentials{Token: tok["b"]}, sub("t", "b", 1, 1)); CodeOf(err) != CodeFailedPrecondition {
		t.Fatalf("submission to a failed round: %v", err)
	}
}

func errorContains(err error, s string) bool {
	return err != nil && strings.Contains(err.Error(), s)
}

// TestStatusNeedsAdminTokenOffLoopback: without an admin token, Status is
// open only where the operator allowed it (loopback quick start).
func TestStatusNeedsAdminTokenOffLoopback(t *testing.T) {
	for _, open := range []bool{false, true} {
		f := &fixture{path: filepath.Join(t.TempDir(), "s.db"), fuser: &meanFuser{}}
		var err error
		if f.store, err = OpenStore(f.path); err != nil {
			t.Fatal(err)
		}
		if f.coord, err = NewCoordinator(f.store, CoordinatorConfig{Fuser: f.fuser, OpenStatus: open}); err != nil {
			t.Fatal(err)
		}
		_, err = f.coord.Status(context.Background(), Credentials{})
		f.close()
		if open != (err == nil) || (!open && CodeOf(err) != CodePermissionDenied) {
			t.Errorf("OpenStatus %v: Status error %v", open, err)
		}
	}
}

// TestRefusalsAndDuplicatesWriteNothing: a refused or duplicate submission
// commits no write transaction (no fsync, no disk write).
func TestRefusalsAndDuplicatesWriteNothing(t *testing.T) {
	f := newFixture(t, CoordinatorConfig{})
	tok := f.create(t, testSpec("t", 1, 3), "a", "b", "c")
	ctx := context.Background()
	if _, err := f.coord.Submit(ctx, Credentials{Token: tok["a"]}, sub("t", "a", 1, 1)); err != nil {
		t.Fatal(err)
	}
	writes := func() int64 { st := f.store.db.Stats(); return st.TxStats.GetWrite() }
	before := writes()
	for _, s := range []Submission{sub("t", "a", 1, 1), sub("t", "a", 1, 2), sub("t", "b", 2, 1)} { // duplicate, conflict, future round
		_, _ = f.coord.Submit(ctx, Credentials{Token: tok[s.ClientID]}, s)
	}
	if after := writes(); after != before {
		t.Fatalf("refusals and duplicates wrote %d pages", after-before)
	}
	if _, err := f.coord.Submit(ctx, Credentials{Token: tok["b"]}, sub("t", "b", 1, 1)); err != nil {
		t.Fatal(err)
	}
	if writes() == before {
		t.Fatal("an accepted submission wrote nothing: the check cannot see writes")
	}
}
