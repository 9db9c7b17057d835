package federation

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// storeImpl is one roundStore implementation under the conformance test.
type storeImpl struct {
	name string
	open func(t *testing.T) roundStore
	// restart closes the store and opens it again on the same data; nil for
	// a store that does not outlive its process.
	restart func(t *testing.T, rs roundStore) roundStore
}

func storeImpls() []storeImpl {
	return []storeImpl{
		{
			name: "bbolt",
			open: func(t *testing.T) roundStore {
				s, err := OpenStore(filepath.Join(t.TempDir(), "conf.db"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			},
			restart: func(t *testing.T, rs roundStore) roundStore {
				s := rs.(*Store)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s2, err := OpenStoreWith(s.Path(), StoreOptions{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s2.Close() })
				return s2
			},
		},
		{name: "memory", open: func(*testing.T) roundStore { return newMemStore() }},
	}
}

// TestRoundStoreConformance runs the same script of verbs against every
// roundStore and checks each result against the expected one and the
// transcripts against each other; the bbolt store is also restarted at each
// stage (a restart must change no result).
func TestRoundStoreConformance(t *testing.T) {
	transcripts := map[string][]string{}
	for _, impl := range storeImpls() {
		modes := []bool{false}
		if impl.restart != nil {
			modes = append(modes, true)
		}
		for _, withRestarts := range modes {
			name := impl.name
			if withRestarts {
				name += "+restarts"
			}
			t.Run(name, func(t *testing.T) {
				rs := impl.open(t)
				restart := func() {
					if withRestarts {
						rs = impl.restart(t, rs)
					}
				}
				transcripts[name] = conformanceScript(t, func() roundStore { return rs }, restart)
			})
		}
	}
	want := transcripts["memory"]
	for name, got := range transcripts {
		if len(got) != len(want) {
			t.Errorf("%s: %d steps, memory %d", name, len(got), len(want))
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s step %d:\n got  %s\n memory %s", name, i, got[i], want[i])
			}
		}
	}
}

// conformanceScript drives one store (rs() is the current one; restart may
// replace it) and returns a transcript of every result.
func conformanceScript(t *testing.T, rs func() roundStore, restart func()) []string {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var log []string
	note := func(step string, v ...any) { log = append(log, step+": "+fmt.Sprint(v...)) }
	code := func(err error) string {
		if err == nil {
			return "ok"
		}
		return CodeOf(err).String()
	}
	submit := func(step, client string, round int, want Verdict, wantN int, theta ...float64) recorded {
		t.Helper()
		s := sub("t", client, round, theta...)
		s.ReceivedAt = at(10 * round)
		r, err := rs().recordSubmission(&s)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if r.Verdict != want || r.Submissions != wantN {
			t.Errorf("%s: verdict %d with %d submissions, want %d with %d", step, r.Verdict, r.Submissions, want, wantN)
		}
		note(step, r.Verdict, r.Submissions, r.State, r.Old.ReceivedAt)
		return r
	}
	state := func(step string, want taskState) {
		t.Helper()
		st, err := rs().state("t")
		if err != nil || st != want {
			t.Errorf("%s: state %+v, %v; want %+v", step, st, err, want)
		}
		note(step, st)
	}
	submitters := func(step string, round int, want ...string) {
		t.Helper()
		got, err := rs().submitters("t", round)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: submitters %q, %v; want %q", step, got, err, want)
		}
		subs, err := rs().submissions("t", round)
		ids := []string(nil)
		for _, s := range subs {
			ids = append(ids, s.ClientID)
		}
		if err != nil || !reflect.DeepEqual(ids, want) {
			t.Errorf("%s: submissions of %q, %v; want %q", step, ids, err, want)
		}
		note(step, got, subs)
	}
	begin := func(step string, wantRound int, wantTrigger string, wantSubs ...string) {
		t.Helper()
		spec, _ := rs().task("t")
		fr, err := rs().beginFusing(&spec.Spec, at(100))
		var ids []string
		for _, s := range fr.Subs {
			ids = append(ids, s.ClientID)
		}
		if err != nil || fr.Round != wantRound || fr.Trigger != wantTrigger || !reflect.DeepEqual(ids, wantSubs) {
			t.Errorf("%s: beginFusing round %d %q %q, %v; want %d %q %q", step, fr.Round, fr.Trigger, ids, err, wantRound, wantTrigger, wantSubs)
		}
		note(step, fr)
	}

	// Tasks.
	spec := testSpec("t", 2, 2)
	spec.Rounds = 3
	tokens, err := createTask(rs(), spec, []string{"b", "a", "c"}, t0)
	if err != nil || len(tokens) != 3 {
		t.Fatalf("createTask: %v, %d tokens", err, len(tokens))
	}
	_, err = createTask(rs(), spec, []string{"a", "b"}, t0)
	if CodeOf(err) != CodeAlreadyExists {
		t.Errorf("second createTask: %v", err)
	}
	note("create again", code(err))
	other := testSpec("other", 1, 1)
	if _, err := createTask(rs(), other, []string{"z"}, t0); err != nil {
		t.Fatal(err)
	}
	restart()
	rec, err := rs().task("t")
	spec.Normalize()
	if err != nil || !reflect.DeepEqual(rec.Spec, spec) || len(rec.Clients) != 3 || rec.Clients["a"] != HashToken(tokens["a"]) || !rec.CreatedAt.Equal(t0) {
		t.Errorf("task: %+v, %v", rec, err)
	}
	note("task", rec.Spec, len(rec.Clients), rec.CreatedAt)
	_, err = rs().task("nope")
	if CodeOf(err) != CodeNotFound {
		t.Errorf("unknown task: %v", err)
	}
	note("unknown task", code(err))
	for _, f := range []func() error{
		func() error { _, err := rs().state("nope"); return err },
		func() error { _, err := rs().submitters("nope", 1); return err },
		func() error { _, _, err := rs().fused("nope", 1); return err },
		func() error { return rs().failRound("nope", "x") },
	} {
		if f() == nil {
			t.Error("a verb on an unknown task did not fail")
		}
	}
	state("initial state", taskState{Round: 1})

	// Submissions: accept, duplicate, conflict, future round.
	submit("accept a", "a", 1, Accept, 1, 1, 2)
	state("deadline clock started", taskState{Round: 1, FirstSubmission: at(10)})
	restart()
	dup := submit("duplicate a", "a", 1, Duplicate, 1, 1, 2)
	if !dup.Old.ReceivedAt.Equal(at(10)) {
		t.Errorf("duplicate: old received at %v", dup.Old.ReceivedAt)
	}
	submit("conflict a", "a", 1, Conflict, 0, 9, 9)
	submit("future b", "b", 2, NotOpen, 0, 1, 1)
	submitters("one submitter", 1, "a")
	submitters("nothing stored for round 2", 2)
	// Returned values are copies: changing them changes nothing stored.
	if subs, _ := rs().submissions("t", 1); len(subs) == 1 {
		subs[0].Theta[0] = 42
	}
	if subs, _ := rs().submissions("t", 1); len(subs) != 1 || subs[0].Theta[0] != 1 {
		t.Errorf("a returned submission aliases the store: %+v", subs)
	}

	// Fusing: not ready below quorum, then closed and snapshot at quorum.
	begin("below quorum", 0, "")
	state("still open", taskState{Round: 1, FirstSubmission: at(10)})
	submit("accept b", "b", 1, Accept, 2, 3, 4)
	tasks, err := rs().listTasks()
	if err != nil || len(tasks) != 2 || tasks[0].ID != "other" || tasks[1].ID != "t" || tasks[1].Submissions != 2 || tasks[1].Err != nil {
		t.Errorf("listTasks: %+v, %v", tasks, err)
	}
	note("listTasks", tasks)
	begin("quorum", 1, "quorum", "a", "b")
	fusing := taskState{Round: 1, FirstSubmission: at(10), Fusing: true, FusingTrigger: "quorum"}
	state("fusing", fusing)
	restart()
	state("fusing survives", fusing)
	submit("late c refused", "c", 1, Fusing, 0, 5, 6)
	submit("duplicate while fusing", "b", 1, Duplicate, 2, 3, 4)
	submitters("snapshot unchanged", 1, "a", "b")
	begin("resumed fusion sees the same round", 1, "quorum", "a", "b")

	// Committing: only the round being fused.
	fr := FusedResult{TaskID: "t", Round: 2, Theta: []float64{2, 3}, Method: "mean", Clients: []string{"a", "b"},
		Weights: []float64{0.5, 0.5}, Trigger: "quorum", FusedAt: at(200)}
	err = rs().commitFusion(&rec.Spec, &fr)
	if err == nil {
		t.Error("committed a round that is not being fused")
	}
	note("commit wrong round", err == nil)
	state("wrong commit changed nothing", fusing)
	fr.Round = 1
	if err := rs().commitFusion(&rec.Spec, &fr); err != nil {
		t.Fatalf("commit: %v", err)
	}
	fr.Theta[0] = 42 // the store kept its own copy
	restart()
	state("next round open", taskState{Round: 2})
	got, ok, err := rs().fused("t", 1)
	if err != nil || !ok || got.Theta[0] != 2 || !got.FusedAt.Equal(at(200)) || got.Trigger != "quorum" {
		t.Errorf("fused round 1: %+v, %v, %v", got, ok, err)
	}
	note("fused 1", got, ok)
	_, ok, err = rs().fused("t", 2)
	if err != nil || ok {
		t.Errorf("fused round 2 before fusing: %v, %v", ok, err)
	}
	note("fused 2", ok)
	err = rs().commitFusion(&rec.Spec, &fr)
	if err == nil {
		t.Error("committed a round twice")
	}
	note("commit twice", err == nil)
	begin("fused round is not fused again", 0, "")
	submit("replay after fusion is a duplicate", "a", 1, Duplicate, 2, 1, 2)
	submit("closed round", "c", 1, Closed, 0, 5, 6)

	// Failing: the round closes and refuses submissions.
	submit("accept a round 2", "a", 2, Accept, 1, 7, 8)
	if err := rs().failRound("t", "boom"); err != nil {
		t.Fatal(err)
	}
	restart()
	state("failed", taskState{Round: 2, FirstSubmission: at(20), Failed: "boom"})
	submit("failed round refuses", "b", 2, Failed, 0, 1, 1)
	begin("failed round is not fused", 0, "")

	// Statuses.
	sts, err := rs().statuses()
	if err != nil || len(sts) != 2 {
		t.Fatalf("statuses: %+v, %v", sts, err)
	}
	st := sts[1]
	if st.ID != "t" || st.Round != 2 || st.Rounds != 3 || st.Quorum != 2 || st.MinClients != 2 ||
		!reflect.DeepEqual(st.ClientsAllowed, []string{"a", "b", "c"}) || !reflect.DeepEqual(st.ClientsSeen, []string{"a", "b"}) ||
		st.Submissions != 1 || st.TotalSubmissions != 3 || len(st.Fused) != 1 || st.Fused[0].Round != 1 || st.Error != "" {
		t.Errorf("status: %+v", st)
	}
	if sts[0].ID != "other" || sts[0].ClientsSeen != nil || sts[0].Fused != nil {
		t.Errorf("status of an untouched task: %+v", sts[0])
	}
	note("statuses", sts)
	return log
}
