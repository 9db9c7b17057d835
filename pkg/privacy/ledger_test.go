package privacy

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// testDecl calibrates a declaration.
func testDecl(t *testing.T, eps, delta, clip float64, rounds int) Declaration {
	t.Helper()
	m, err := New(Params{Epsilon: eps, Delta: delta, Clip: clip, Rounds: rounds})
	if err != nil {
		t.Fatal(err)
	}
	return m.Declaration()
}

func openTestLedger(t *testing.T) *Ledger {
	t.Helper()
	l, err := OpenLedger(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// TestLedgerOneReleasePerRound: a recorded θ comes back bit for bit (from a
// reopened file); recording it again is a no-op; a different θ or
// declaration for the round is refused with ErrReleased; nothing is
// recorded for a task not begun or beyond its declared rounds.
func TestLedgerOneReleasePerRound(t *testing.T) {
	l := openTestLedger(t)
	d := testDecl(t, 1, 1e-5, 0.5, 3)
	if err := l.Record(Release{Task: "t", Client: "alice", Round: 1, Mechanism: MechanismGaussian, Declaration: d, Theta: []float64{1}}); err == nil || !strings.Contains(err.Error(), "not begun") {
		t.Fatalf("release of a task not begun: %v", err)
	}
	if err := l.Begin(LedgerTask{Task: "t", Client: "alice", Fingerprint: "f1", Declaration: d, Started: t0}, nil); err != nil {
		t.Fatal(err)
	}
	theta := []float64{1.0 / 3, math.Copysign(0, -1), 5e-324, -1e300, math.Pi}
	r := Release{Task: "t", Client: "alice", Round: 2, Mechanism: MechanismGaussian, Declaration: d, Theta: theta, ReleasedAt: t0}
	if err := l.Record(r); err != nil {
		t.Fatal(err)
	}
	l2, err := OpenLedger(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	got, err := l2.Released("t", "alice", 2)
	if err != nil || got == nil {
		t.Fatalf("Released: %+v, %v", got, err)
	}
	if !sameBits(got.Theta, theta) || got.Declaration != d || !got.ReleasedAt.Equal(t0) {
		t.Errorf("read back %+v, wrote %+v", got, r)
	}
	if none, err := l2.Released("t", "alice", 1); none != nil || err != nil {
		t.Errorf("round 1: %+v, %v; want none", none, err)
	}
	if err := l2.Record(r); err != nil {
		t.Errorf("recording the same release again: %v", err)
	}
	other := r
	other.Theta = append([]float64(nil), theta...)
	other.Theta[1] = 0 // +0 instead of −0: other bits
	if err := l2.Record(other); !errors.Is(err, ErrReleased) || !strings.Contains(err.Error(), "second release") {
		t.Errorf("re-noising round 2: %v, want ErrReleased", err)
	}
	other = r
	other.Declaration.Sigma *= 2
	if err := l2.Record(other); err == nil {
		t.Error("a release with another declaration than the task's was recorded")
	}
	other = r
	other.Round = 4
	if err := l2.Record(other); err == nil || !strings.Contains(err.Error(), "3 rounds") {
		t.Errorf("round 4 of a 3-round declaration: %v", err)
	}
	if err := l2.Acknowledge("t", "alice", 2, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := l2.Acknowledge("t", "alice", 2, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ := l2.Released("t", "alice", 2); !got.AckedAt.Equal(t0.Add(time.Second)) || !sameBits(got.Theta, theta) {
		t.Errorf("after acknowledgement: %+v", got)
	}
	if err := l2.Acknowledge("t", "alice", 3, t0); err == nil {
		t.Error("acknowledged a round never released")
	}
}

// TestLedgerBeginChecksTask: a task begun again with the same definition is
// accepted; another fingerprint or calibration is refused.
func TestLedgerBeginChecksTask(t *testing.T) {
	l := openTestLedger(t)
	d := testDecl(t, 1, 1e-5, 0.5, 3)
	lt := LedgerTask{Task: "t", Client: "alice", Fingerprint: "f1", Declaration: d, Started: t0}
	if err := l.Begin(lt, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Begin(lt, nil); err != nil {
		t.Errorf("restart with the same task: %v", err)
	}
	other := lt
	other.Fingerprint = "f2"
	if err := l.Begin(other, nil); !errors.Is(err, ErrLedgerTask) || !strings.Contains(err.Error(), "another definition") {
		t.Errorf("another task with the same id: %v", err)
	}
	other = lt
	other.Declaration = testDecl(t, 2, 1e-5, 0.5, 3)
	if err := l.Begin(other, nil); !errors.Is(err, ErrLedgerTask) || !strings.Contains(err.Error(), "one calibration") {
		t.Errorf("the same task with another ε: %v", err)
	}
	other = lt
	other.Client = "bob" // another client id of the same person is another task entry
	if err := l.Begin(other, nil); err != nil {
		t.Error(err)
	}
	bad := lt
	bad.Task, bad.Declaration.Sigma = "u", bad.Declaration.Sigma/2
	if err := l.Begin(bad, nil); err == nil || !strings.Contains(err.Error(), "sigma") {
		t.Errorf("untruthful declaration: %v", err)
	}
}

// TestLedgerSummaryAndBudget is acceptance 2 at the library level: after
// several tasks the summary gives per-task ε (the declared ε once every
// round is released, less before) and the exact total, which the basic
// composition bounds; a budget refuses the task that would exceed it and
// records nothing for it. The reference total is computed by hand: tasks
// with noise multipliers σ_t and r_t releases compose to multiplier
// 1/√(Σ r_t/σ_t²), and at that multiplier Balle & Wang's closed form
// (naiveDelta) must give δ at the printed ε.
func TestLedgerSummaryAndBudget(t *testing.T) {
	l := openTestLedger(t)
	tasks := []struct {
		id       string
		eps      float64
		rounds   int
		released int
	}{{"a", 1, 3, 3}, {"b", 0.5, 2, 1}, {"c", 2, 5, 5}}
	for _, tk := range tasks {
		d := testDecl(t, tk.eps, 1e-6, 0.1, tk.rounds)
		if err := l.Begin(LedgerTask{Task: tk.id, Client: "alice", Fingerprint: tk.id, Declaration: d, Started: t0}, nil); err != nil {
			t.Fatal(err)
		}
		for r := 1; r <= tk.released; r++ {
			if err := l.Record(Release{Task: tk.id, Client: "alice", Round: r, Mechanism: MechanismGaussian, Declaration: d,
				Theta: []float64{float64(r)}, ReleasedAt: t0.Add(time.Duration(r) * time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
		if tk.released > 0 {
			l.Acknowledge(tk.id, "alice", 1, t0)
		}
	}
	s, err := l.Summary(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tasks) != 3 || s.Releases != 9 {
		t.Fatalf("summary of %d tasks, %d releases: %+v", len(s.Tasks), s.Releases, s)
	}
	var mu2 float64
	for i, tk := range tasks {
		ts := s.Tasks[i]
		if ts.Task != tk.id || ts.Releases != tk.released || ts.Acknowledged != 1 || !ts.Last.Equal(t0.Add(time.Duration(tk.released)*time.Minute)) {
			t.Errorf("task %s: %+v", tk.id, ts)
		}
		if full := tk.released == tk.rounds; (full && relErr(ts.Epsilon, tk.eps) > 1e-6) || (!full && !(ts.Epsilon < tk.eps)) {
			t.Errorf("task %s: ε %v after %d of %d releases, declared %v", tk.id, ts.Epsilon, tk.released, tk.rounds, tk.eps)
		}
		mu2 += float64(tk.released) / (ts.Declaration.Sigma * ts.Declaration.Sigma)
	}
	if s.Delta != 3e-6 || s.DeltaSum != 3e-6 {
		t.Errorf("total δ %v (sum %v), want Σδ_t = 3e-6", s.Delta, s.DeltaSum)
	}
	if d := naiveDelta(s.Epsilon, 1/math.Sqrt(mu2)); relErr(d, s.Delta) > 1e-5 {
		t.Errorf("total ε %v: the composed release has δ %v there, want %v", s.Epsilon, d, s.Delta)
	}
	if !(s.Epsilon < s.EpsilonSum) || !(s.CommittedEpsilon > s.Epsilon) {
		t.Errorf("exact %v, basic %v, committed %v: want exact < basic and committed > spent", s.Epsilon, s.EpsilonSum, s.CommittedEpsilon)
	}
	if at, err := l.Summary(1e-3); err != nil || !(at.Epsilon < s.Epsilon) {
		t.Errorf("at δ = 1e-3: ε %v (%v), want below the ε at 3e-6 (%v)", at.Epsilon, err, s.Epsilon)
	}

	// Budget: committed releases so far are a(3), b(2), c(5). A budget just
	// above the committed ε admits nothing more; one well above admits a
	// small task.
	b := &Budget{Epsilon: s.CommittedEpsilon * 1.01, Delta: s.Delta}
	d := testDecl(t, 1, 1e-6, 0.1, 2)
	err = l.Begin(LedgerTask{Task: "d", Client: "alice", Fingerprint: "d", Declaration: d, Started: t0}, b)
	if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "nothing was learned or sent") {
		t.Fatalf("over budget: %v", err)
	}
	if s2, _ := l.Summary(0); len(s2.Tasks) != 3 {
		t.Errorf("a refused task was recorded: %d tasks", len(s2.Tasks))
	}
	b.Epsilon = s.CommittedEpsilon + 5
	if err := l.Begin(LedgerTask{Task: "d", Client: "alice", Fingerprint: "d", Declaration: d, Started: t0}, b); err != nil {
		t.Errorf("within budget: %v", err)
	}
	if err := l.Begin(LedgerTask{Task: "e", Client: "alice", Fingerprint: "e", Declaration: d}, &Budget{Epsilon: 0, Delta: 1e-5}); err == nil {
		t.Error("a budget with ε = 0 was used")
	}
}

// TestOpenLedgerRefusesOtherFiles: an empty file, a file that is not bbolt
// and a bbolt file of something else are refused, untouched.
func TestOpenLedgerRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	empty, junk, other := filepath.Join(dir, "empty"), filepath.Join(dir, "junk"), filepath.Join(dir, "other.db")
	os.WriteFile(empty, nil, 0o600)
	os.WriteFile(junk, []byte(strings.Repeat("not a database\n", 400)), 0o600)
	db, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("tasks")); return err })
	db.Close()
	for _, p := range []string{empty, junk, other} {
		before, _ := os.ReadFile(p)
		if _, err := OpenLedger(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want an error naming the file", p, err)
		}
		if after, _ := os.ReadFile(p); string(after) != string(before) {
			t.Errorf("%s was modified", p)
		}
	}
}
