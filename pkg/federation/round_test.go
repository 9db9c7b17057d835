package federation

import (
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"
)

// noRefusal marks table rows whose verdict refuses nothing.
const noRefusal Code = -1

func TestDecideSubmission(t *testing.T) {
	mine := Submission{TaskID: "t", ClientID: "a", Round: 2, Theta: []float64{1, 2}, DemoCount: 3}
	other := mine
	other.Theta = []float64{1, 2.5}
	open := taskState{Round: 2}
	for _, tc := range []struct {
		name string
		st   taskState
		old  *Submission
		sub  Submission
		want Verdict
		code Code
	}{
		{"first submission of the open round", open, nil, mine, Accept, noRefusal},
		{"identical resubmission", open, &mine, mine, Duplicate, noRefusal},
		{"identical resubmission after the round closed", taskState{Round: 3}, &mine, mine, Duplicate, noRefusal},
		{"different theta", open, &mine, other, Conflict, CodeAlreadyExists},
		{"future round", taskState{Round: 1}, nil, mine, NotOpen, CodeFailedPrecondition},
		{"past round", taskState{Round: 3}, nil, mine, Closed, CodeFailedPrecondition},
		{"task done", taskState{Round: 2, Done: true}, nil, mine, Closed, CodeFailedPrecondition},
		{"round failed", taskState{Round: 2, Failed: "bad probe"}, nil, mine, Failed, CodeFailedPrecondition},
		{"round being fused", taskState{Round: 2, Fusing: true}, nil, mine, Fusing, CodeFailedPrecondition},
	} {
		got := decideSubmission(tc.st, tc.old, &tc.sub)
		if got != tc.want {
			t.Errorf("%s: verdict %d, want %d", tc.name, got, tc.want)
		}
		e := got.refusal(tc.st, &tc.sub)
		if (e == nil) != (tc.code == noRefusal) || (e != nil && e.Code != tc.code) {
			t.Errorf("%s: refusal %v, want code %v", tc.name, e, tc.code)
		}
	}
}

func TestReadyToFuse(t *testing.T) {
	t0 := time.Unix(1000, 0)
	spec := &TaskSpec{Quorum: 3, MinClients: 2, DeadlineSeconds: 10, Rounds: 2}
	for _, tc := range []struct {
		name    string
		st      taskState
		n       int
		now     time.Time
		ready   bool
		trigger string
	}{
		{"below quorum, no deadline yet", taskState{Round: 1, FirstSubmission: t0}, 2, t0.Add(5 * time.Second), false, ""},
		{"quorum", taskState{Round: 1, FirstSubmission: t0}, 3, t0, true, "quorum"},
		{"deadline with min clients", taskState{Round: 1, FirstSubmission: t0}, 2, t0.Add(10 * time.Second), true, "deadline"},
		{"deadline below min clients", taskState{Round: 1, FirstSubmission: t0}, 1, t0.Add(time.Hour), false, ""},
		{"done", taskState{Round: 2, Done: true}, 3, t0, false, ""},
		{"failed", taskState{Round: 1, Failed: "x"}, 3, t0, false, ""},
		{"interrupted fusion resumes", taskState{Round: 1, Fusing: true, FusingTrigger: "deadline"}, 2, t0, true, "deadline"},
	} {
		ready, trig := readyToFuse(spec, tc.st, tc.n, tc.now)
		if ready != tc.ready || trig != tc.trigger {
			t.Errorf("%s: %v %q, want %v %q", tc.name, ready, trig, tc.ready, tc.trigger)
		}
	}
}

func TestRoundTransitions(t *testing.T) {
	spec := &TaskSpec{Rounds: 2}
	t0 := time.Unix(1000, 0)
	st := afterAccept(taskState{Round: 1}, 1, t0)
	if !st.FirstSubmission.Equal(t0) || afterAccept(st, 2, t0.Add(time.Hour)) != st {
		t.Fatalf("deadline clock: %+v", st)
	}
	if _, err := afterFusion(st, spec, 1); err == nil {
		t.Fatal("a round that was not fusing was advanced")
	}
	st = startFusing(st, "quorum")
	next, err := afterFusion(st, spec, 1)
	if err != nil || next.Round != 2 || next.Fusing || !next.FirstSubmission.IsZero() || next.Done {
		t.Fatalf("after round 1: %+v, %v", next, err)
	}
	if _, err := afterFusion(startFusing(next, "quorum"), spec, 1); err == nil {
		t.Fatal("a stale fusion of round 1 advanced round 2")
	}
	last, err := afterFusion(startFusing(next, "deadline"), spec, 2)
	if err != nil || !last.Done || last.Round != 2 {
		t.Fatalf("after the last round: %+v, %v", last, err)
	}
	failed := failRound(startFusing(next, "quorum"), "probe lattice has no points")
	if failed.Fusing || failed.Failed == "" {
		t.Fatalf("failed round: %+v", failed)
	}
	if ok, _ := readyToFuse(spec, failed, 9, t0); ok {
		t.Fatal("a failed round is ready to fuse")
	}
}

// TestInternalErrorsHideServerPaths: a disk-full write error reaches the
// client without the store's absolute path.
func TestInternalErrorsHideServerPaths(t *testing.T) {
	err := internal(fmt.Errorf("commit: %w", &fs.PathError{Op: "write", Path: "/srv/secret/fed.db", Err: syscall.ENOSPC}))
	if CodeOf(err) != CodeInternal || strings.Contains(err.Error(), "/srv/secret") || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("client-visible error %q", err)
	}
}
