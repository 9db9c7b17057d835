package privacy

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Ledger is a client's privacy ledger: a bbolt file, kept by the client,
// recording every task it joined with noise (the task's declaration) and
// every release it made: task, client id, round, the mechanism and its
// declaration (ε, δ over the task's rounds, C, σ), the noised θ exactly as
// sent, when it was written and when the server acknowledged it.
//
// It serves two purposes.
//
//   - Exactly one release per (task, client, round). The client writes the
//     noised θ here (the write is fsynced) before sending it, and a client
//     restarted after a crash, a kill or a timeout re-sends these bytes
//     instead of drawing new noise; Record refuses a different θ for a round
//     already recorded (ErrReleased), so nothing can re-noise a released
//     round.
//   - Accounting over everything the client ever released, across tasks and
//     runs: Summary composes all releases exactly (ComposedSigma: Gaussian
//     releases compose to one Gaussian release), and Begin refuses a task
//     that would take the committed loss above a Budget.
//
// Every method opens the file, runs one transaction and closes it, so
// several client processes may share one ledger (bbolt's file lock
// serialises them; a process waits up to LedgerLockTimeout).
type Ledger struct{ path string }

// LedgerLockTimeout is how long a ledger operation waits for another
// process that holds the file.
const LedgerLockTimeout = 10 * time.Second

// ledgerFormat is the value of the meta bucket's "format" key.
const ledgerFormat = "fedirl-privacy-ledger/1"

var (
	ledgerMeta     = []byte("meta")
	ledgerTasks    = []byte("tasks")
	ledgerReleases = []byte("releases")
)

// Errors a caller of the ledger may need to tell apart.
var (
	// ErrReleased: the round was already released with another θ (or
	// another declaration); releasing it again would be a second release.
	ErrReleased = errors.New("round already released")
	// ErrBudget: the task would take the client over its privacy budget.
	ErrBudget = errors.New("privacy budget exceeded")
	// ErrLedgerTask: the ledger already holds the task with another
	// definition or another calibration.
	ErrLedgerTask = errors.New("task recorded differently in the ledger")
)

// LedgerTask is a task a client joined with noise, recorded by Begin before
// anything is learned or sent.
type LedgerTask struct {
	Task   string `json:"task"`
	Client string `json:"client"`
	// Fingerprint identifies the task's definition (the federation client
	// stores the SHA-256 of the task spec), so that another task with the
	// same id (another server) is not taken for this one.
	Fingerprint string `json:"fingerprint"`
	// Declaration is the mechanism of every release of the task: (ε, δ)
	// over Declaration.Rounds releases, C and σ.
	Declaration Declaration `json:"declaration"`
	Started     time.Time   `json:"started"`
}

// Release is one noised θ a client released (or is about to send).
type Release struct {
	Task   string `json:"task"`
	Client string `json:"client"`
	Round  int    `json:"round"`
	// Mechanism names the release mechanism: "gaussian" (clip to C, add
	// N(0, (σ·2C)² I)).
	Mechanism   string      `json:"mechanism"`
	Declaration Declaration `json:"declaration"`
	// Theta is the noised θ exactly as sent (JSON keeps every float64 bit).
	Theta []float64 `json:"theta"`
	// Reward, for a client that submits its reward on the task's probe
	// instead of θ, is the noised reward vector exactly as sent (Theta is
	// then empty): the same mechanism, clipped in L2 and noised alike.
	Reward []float64 `json:"reward,omitempty"`
	// Joint, for a round of a joint-likelihood task, is the noised
	// evaluation exactly as sent: value, gradient and the Hessian's upper
	// triangle as one vector, clipped in L2 and noised alike (Theta is then
	// the round's public trial θ, which the client evaluated and echoes).
	Joint []float64 `json:"joint,omitempty"`
	// ReleasedAt is when the release was written, before it was sent.
	ReleasedAt time.Time `json:"released_at"`
	// AckedAt is when the server acknowledged it (zero until then).
	AckedAt time.Time `json:"acknowledged_at,omitzero"`
}

// MechanismGaussian is the Release.Mechanism of Mechanism.Release.
const MechanismGaussian = "gaussian"

// Budget is the most a client is willing to spend over all its releases:
// the exact composition of every release (committed ones included) must be
// (ε ≤ Epsilon, Delta)-DP.
type Budget struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// Validate checks a budget, naming the bad field ("epsilon" or "delta").
func (b Budget) Validate() error { return checkEpsDelta(b.Epsilon, b.Delta) }

// OpenLedger opens the ledger at path, creating the file if it does not
// exist; a file that exists but is not a ledger is refused, untouched.
func OpenLedger(path string) (*Ledger, error) {
	if fi, err := os.Stat(path); err == nil && fi.Size() == 0 {
		return nil, fmt.Errorf("privacy ledger %s: the file is empty (0 bytes): not a ledger; restore it from a backup, or delete it only if this client never released anything with it", path)
	}
	l := &Ledger{path: path}
	err := l.update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(ledgerMeta)
		if meta == nil {
			if hasBuckets(tx) {
				return errors.New("not a privacy ledger (it holds other data)")
			}
			var err error
			if meta, err = tx.CreateBucket(ledgerMeta); err != nil {
				return err
			}
			if err := meta.Put([]byte("format"), []byte(ledgerFormat)); err != nil {
				return err
			}
		}
		if f := string(meta.Get([]byte("format"))); f != ledgerFormat {
			return fmt.Errorf("format %q, want %q", f, ledgerFormat)
		}
		for _, b := range [][]byte{ledgerTasks, ledgerReleases} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// hasBuckets reports whether tx holds any bucket.
func hasBuckets(tx *bolt.Tx) bool {
	found := false
	_ = tx.ForEach(func([]byte, *bolt.Bucket) error { found = true; return nil })
	return found
}

// Path returns the ledger's file name.
func (l *Ledger) Path() string { return l.path }

// update runs f in one write transaction on the ledger file (fsynced when
// it commits), wrapping errors with the file name.
func (l *Ledger) update(f func(*bolt.Tx) error) error {
	db, err := l.open(false)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Update(f); err != nil {
		return fmt.Errorf("privacy ledger %s: %w", l.path, err)
	}
	return nil
}

// view runs f in one read transaction.
func (l *Ledger) view(f func(*bolt.Tx) error) error {
	db, err := l.open(true)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.View(f); err != nil {
		return fmt.Errorf("privacy ledger %s: %w", l.path, err)
	}
	return nil
}

func (l *Ledger) open(readOnly bool) (db *bolt.DB, err error) {
	defer func() { // bbolt panics on some damaged files
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("privacy ledger %s: damaged file: %v", l.path, r)
		}
	}()
	db, err = bolt.Open(l.path, 0o600, &bolt.Options{Timeout: LedgerLockTimeout, ReadOnly: readOnly})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("privacy ledger %s: held by another process for %v: %w", l.path, LedgerLockTimeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("privacy ledger %s: %w", l.path, err)
	}
	return db, nil
}

func taskKey(task, client string) []byte { return []byte(task + "/" + client) }

func releaseKey(task, client string, round int) []byte {
	return fmt.Appendf(nil, "%s/%s/%010d", task, client, round)
}

// Begin records that client joins task with t's declaration, or checks that
// a task already recorded has the same fingerprint and declaration (a
// restarted client). A new task is refused, with an error wrapping
// ErrBudget and nothing recorded, when budget is non-nil and the exact
// composition of every task's committed releases (Declaration.Rounds per
// task) and this task's would exceed it.
func (l *Ledger) Begin(t LedgerTask, budget *Budget) error {
	if budget != nil {
		if err := budget.Validate(); err != nil {
			return fmt.Errorf("privacy budget: %w", err)
		}
	}
	if err := t.Declaration.Validate(); err != nil {
		return fmt.Errorf("task %s: %w", t.Task, err)
	}
	return l.update(func(tx *bolt.Tx) error {
		tasks := tx.Bucket(ledgerTasks)
		if v := tasks.Get(taskKey(t.Task, t.Client)); v != nil {
			var old LedgerTask
			if err := json.Unmarshal(v, &old); err != nil {
				return fmt.Errorf("task %s client %s: %w", t.Task, t.Client, err)
			}
			switch {
			case old.Fingerprint != t.Fingerprint:
				return fmt.Errorf("%w: task %s of client %s was started on %s with another definition (fingerprint %.12s…, now %.12s…): a task id reused on another server? Keep one ledger per federation or use another task id",
					ErrLedgerTask, t.Task, t.Client, old.Started.Format(time.RFC3339), old.Fingerprint, t.Fingerprint)
			case old.Declaration != t.Declaration:
				return fmt.Errorf("%w: task %s of client %s was started on %s with %s; this run asks for %s: every release of a task uses one calibration, so that the task's declared (ε, δ) holds",
					ErrLedgerTask, t.Task, t.Client, old.Started.Format(time.RFC3339), describe(old.Declaration), describe(t.Declaration))
			}
			return nil
		}
		if budget != nil {
			var sigmas []float64
			var counts []int
			err := tasks.ForEach(func(k, v []byte) error {
				var lt LedgerTask
				if err := json.Unmarshal(v, &lt); err != nil {
					return fmt.Errorf("task record %s: %w", k, err)
				}
				sigmas, counts = append(sigmas, lt.Declaration.Sigma), append(counts, lt.Declaration.Rounds)
				return nil
			})
			if err != nil {
				return err
			}
			before, _ := Epsilon(budget.Delta, ComposedSigma(sigmas, counts))
			sigmas, counts = append(sigmas, t.Declaration.Sigma), append(counts, t.Declaration.Rounds)
			after, err := Epsilon(budget.Delta, ComposedSigma(sigmas, counts))
			if err != nil {
				return err
			}
			if after > budget.Epsilon {
				return fmt.Errorf("%w: task %s (%s) would bring this client's committed privacy loss from ε = %.4g to ε = %.4g at δ = %v (exact composition of %d tasks' releases), above the budget ε = %v; nothing was learned or sent",
					ErrBudget, t.Task, describe(t.Declaration), before, after, budget.Delta, len(sigmas), budget.Epsilon)
			}
		}
		v, err := json.Marshal(t)
		if err != nil {
			return err
		}
		return tasks.Put(taskKey(t.Task, t.Client), v)
	})
}

// describe writes a declaration for error messages.
func describe(d Declaration) string {
	return fmt.Sprintf("(ε = %v, δ = %v) over %d rounds, C = %v, σ = %.6g (%s)", d.Epsilon, d.Delta, d.Rounds, d.Clip, d.Sigma, d.Conversion)
}

// Released returns the release recorded for (task, client, round), or nil
// when there is none.
func (l *Ledger) Released(task, client string, round int) (*Release, error) {
	var out *Release
	err := l.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(ledgerReleases).Get(releaseKey(task, client, round))
		if v == nil {
			return nil
		}
		out = new(Release)
		if err := json.Unmarshal(v, out); err != nil {
			return fmt.Errorf("release of task %s client %s round %d: %w", task, client, round, err)
		}
		return nil
	})
	return out, err
}

// Record writes r durably (the transaction is fsynced before Record
// returns), to be done before r.Theta is sent. Its task must have been
// begun with the same declaration. Recording the same release again (same
// θ bits and declaration) is a no-op; a different one for a recorded round
// is refused with an error wrapping ErrReleased: it would be a second
// release of the round.
func (l *Ledger) Record(r Release) error {
	if r.Round < 1 {
		return fmt.Errorf("release of task %s: round %d: rounds start at 1", r.Task, r.Round)
	}
	return l.update(func(tx *bolt.Tx) error {
		tv := tx.Bucket(ledgerTasks).Get(taskKey(r.Task, r.Client))
		if tv == nil {
			return fmt.Errorf("release of task %s round %d: client %s has not begun the task in this ledger", r.Task, r.Round, r.Client)
		}
		var lt LedgerTask
		if err := json.Unmarshal(tv, &lt); err != nil {
			return fmt.Errorf("task record %s/%s: %w", r.Task, r.Client, err)
		}
		if lt.Declaration != r.Declaration {
			return fmt.Errorf("%w: release of task %s round %d declares %s, the task was begun with %s", ErrLedgerTask, r.Task, r.Round, describe(r.Declaration), describe(lt.Declaration))
		}
		if r.Round > lt.Declaration.Rounds {
			return fmt.Errorf("release of task %s round %d: the task's declaration accounts for %d rounds", r.Task, r.Round, lt.Declaration.Rounds)
		}
		b := tx.Bucket(ledgerReleases)
		key := releaseKey(r.Task, r.Client, r.Round)
		if v := b.Get(key); v != nil {
			var old Release
			if err := json.Unmarshal(v, &old); err != nil {
				return fmt.Errorf("release of task %s client %s round %d: %w", r.Task, r.Client, r.Round, err)
			}
			if old.Declaration == r.Declaration && old.Mechanism == r.Mechanism && sameBits(old.Theta, r.Theta) && sameBits(old.Reward, r.Reward) && sameBits(old.Joint, r.Joint) {
				return nil
			}
			return fmt.Errorf("%w: client %s released round %d of task %s on %s with another θ; drawing new noise for it is refused (it would be a second release): re-send the recorded θ",
				ErrReleased, r.Client, r.Round, r.Task, old.ReleasedAt.Format(time.RFC3339Nano))
		}
		v, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("release of task %s round %d: %w", r.Task, r.Round, err)
		}
		return b.Put(key, v)
	})
}

// sameBits reports whether a and b hold the same float64 bits.
func sameBits(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

// Acknowledge records when the server acknowledged the release of a round
// (the first acknowledgement is kept).
func (l *Ledger) Acknowledge(task, client string, round int, at time.Time) error {
	return l.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(ledgerReleases)
		key := releaseKey(task, client, round)
		v := b.Get(key)
		if v == nil {
			return fmt.Errorf("acknowledging task %s client %s round %d: no such release", task, client, round)
		}
		var r Release
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("release of task %s client %s round %d: %w", task, client, round, err)
		}
		if !r.AckedAt.IsZero() {
			return nil
		}
		r.AckedAt = at.UTC()
		nv, err := json.Marshal(r)
		if err != nil {
			return err
		}
		return b.Put(key, nv)
	})
}

// LedgerTaskSummary is one task of a ledger's Summary.
type LedgerTaskSummary struct {
	Task        string      `json:"task"`
	Client      string      `json:"client"`
	Declaration Declaration `json:"declaration"`
	// Releases counts the rounds released; Acknowledged those the server
	// acknowledged.
	Releases     int `json:"releases"`
	Acknowledged int `json:"acknowledged"`
	// Epsilon is the ε, at the declaration's δ, of the releases made so far
	// (exact composition; at most Declaration.Epsilon).
	Epsilon float64   `json:"epsilon"`
	Delta   float64   `json:"delta"`
	Started time.Time `json:"started"`
	// Last is the time of the task's last release (zero when none).
	Last time.Time `json:"last_release,omitzero"`
}

// LedgerSummary is what a client has spent: per task, and over all its
// releases.
type LedgerSummary struct {
	Tasks    []LedgerTaskSummary `json:"tasks"`
	Releases int                 `json:"releases"`
	// Epsilon is the exact composition of every release (ComposedSigma)
	// at Delta.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// EpsilonSum is Σ ε_t over the tasks (basic composition, which holds
	// at δ = Σ δ_t): the looser bound, printed for comparison.
	EpsilonSum float64 `json:"epsilon_sum"`
	DeltaSum   float64 `json:"delta_sum"`
	// CommittedEpsilon is ε at Delta once every begun task has made all its
	// declared rounds of releases (what a Budget is checked against).
	CommittedEpsilon float64 `json:"committed_epsilon"`
	// Composition states the accounting in words.
	Composition string `json:"composition"`
}

// Summary composes every release in the ledger: per task at the task's δ,
// and in total at delta, or, when delta is 0, at Σ δ_t over the begun tasks
// (the δ a basic composition of the tasks' own guarantees would reach).
func (l *Ledger) Summary(delta float64) (LedgerSummary, error) {
	var s LedgerSummary
	if delta != 0 {
		if err := checkEpsDelta(1, delta); err != nil {
			return s, err
		}
	}
	idx := map[string]int{}
	err := l.view(func(tx *bolt.Tx) error {
		err := tx.Bucket(ledgerTasks).ForEach(func(k, v []byte) error {
			var lt LedgerTask
			if err := json.Unmarshal(v, &lt); err != nil {
				return fmt.Errorf("task record %s: %w", k, err)
			}
			idx[string(k)] = len(s.Tasks)
			s.Tasks = append(s.Tasks, LedgerTaskSummary{Task: lt.Task, Client: lt.Client, Declaration: lt.Declaration,
				Delta: lt.Declaration.Delta, Started: lt.Started})
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(ledgerReleases).ForEach(func(k, v []byte) error {
			var r Release
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("release record %s: %w", k, err)
			}
			i, ok := idx[string(taskKey(r.Task, r.Client))]
			if !ok {
				return fmt.Errorf("release record %s: its task is not in the ledger", k)
			}
			t := &s.Tasks[i]
			t.Releases++
			if !r.AckedAt.IsZero() {
				t.Acknowledged++
			}
			if r.ReleasedAt.After(t.Last) {
				t.Last = r.ReleasedAt
			}
			return nil
		})
	})
	if err != nil {
		return s, err
	}
	var sigmas, sigmasAll []float64
	var counts, countsAll []int
	for i := range s.Tasks {
		t := &s.Tasks[i]
		sigmasAll, countsAll = append(sigmasAll, t.Declaration.Sigma), append(countsAll, t.Declaration.Rounds)
		if t.Releases == 0 {
			continue
		}
		if t.Epsilon, err = Epsilon(t.Delta, ComposedSigma([]float64{t.Declaration.Sigma}, []int{t.Releases})); err != nil {
			return s, fmt.Errorf("task %s: %w", t.Task, err)
		}
		sigmas, counts = append(sigmas, t.Declaration.Sigma), append(counts, t.Releases)
		s.Releases += t.Releases
		s.EpsilonSum += t.Epsilon
		s.DeltaSum += t.Delta
	}
	s.Delta = delta
	if s.Delta == 0 {
		for _, t := range s.Tasks {
			s.Delta += t.Delta
		}
		switch {
		case len(s.Tasks) == 0:
			return s, nil // nothing begun, nothing spent
		case s.Delta >= 1:
			return s, fmt.Errorf("the tasks' δ add up to %v ≥ 1: give the δ to report ε at", s.Delta)
		}
	}
	if s.Epsilon, err = Epsilon(s.Delta, ComposedSigma(sigmas, counts)); err != nil {
		return s, err
	}
	if s.CommittedEpsilon, err = Epsilon(s.Delta, ComposedSigma(sigmasAll, countsAll)); err != nil {
		return s, err
	}
	s.Composition = "exact composition of Gaussian releases (Gaussian DP, Dong, Roth & Su 2019): " +
		"releases with noise multipliers σ_j compose to one Gaussian release with multiplier 1/√(Σ 1/σ_j²), " +
		"whose ε at δ is read off the analytic Gaussian privacy profile (Balle & Wang 2018); " +
		"epsilon_sum is the basic composition Σ ε_t at Σ δ_t, an upper bound"
	return s, nil
}
