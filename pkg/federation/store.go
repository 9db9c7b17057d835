package federation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Store is the server's embedded database: one bbolt file holding task
// definitions (with SHA-256 hashes of client tokens), round state, every
// accepted submission and every fused result. It implements the
// coordinator's store verbs (roundStore); in-process runs use an in-memory
// implementation instead. Every write is one bbolt transaction, fsynced
// before it returns, so an acknowledged submission survives a crash or
// kill -9.
//
// Layout: bucket "tasks" (id -> task record), "state" (id -> round state),
// "subs" (one nested bucket per task; "RRRRRRRRRR/client" -> submission) and
// "fused" (one nested bucket per task; "RRRRRRRRRR" -> fused result). Values
// are JSON; a value that fails to decode yields an error naming the task and
// record and is never overwritten implicitly.
type Store struct {
	db       *bolt.DB
	path     string
	migrated int // records given a checksum when this store was opened (records.go)
}

var (
	bucketTasks = []byte("tasks")
	bucketState = []byte("state")
	bucketSubs  = []byte("subs")
	bucketFused = []byte("fused")
)

// taskRecord is the stored, immutable definition of a task.
type taskRecord struct {
	Spec      TaskSpec          `json:"spec"`
	Clients   map[string]string `json:"clients"` // client id -> hex SHA-256 of its token
	CreatedAt time.Time         `json:"created_at"`
	// Revoked maps the hash of every token revoked or rotated on this task
	// to its revocation (revoke.go): such a token is refused with the
	// reason, never matched as unknown.
	Revoked map[string]revocation `json:"revoked,omitempty"`
}

// taskState is the mutable round state of a task.
type taskState struct {
	Round int `json:"round"`
	// FirstSubmission is when the current round's first submission was
	// accepted: the round's deadline counts from it.
	FirstSubmission time.Time `json:"first_submission,omitzero"`
	Done            bool      `json:"done"`
	// Fusing marks the current round closed and being fused from the
	// submissions stored for it, with FusingTrigger ("quorum" or
	// "deadline"); a restart resumes the fusion.
	Fusing        bool   `json:"fusing,omitempty"`
	FusingTrigger string `json:"fusing_trigger,omitempty"`
	// Failed is why the current round can never be fused; it is then closed.
	Failed string `json:"failed,omitempty"`
}

// ErrStoreDamaged is wrapped by errors about a store file that exists but is
// not a usable store (empty, truncated or failing bbolt's consistency check).
var ErrStoreDamaged = errors.New("store damaged")

// ErrNoStore is wrapped by the error of opening a missing store without
// StoreOptions.Create.
var ErrNoStore = errors.New("no such store")

// StoreOptions says how OpenStoreWith opens a store.
type StoreOptions struct {
	// Create makes a new, empty store when the file does not exist; without
	// it a missing file is an error (so a mistyped path never silently
	// starts an empty federation).
	Create bool
	// ReadOnly opens the store without taking the write lock or writing
	// anything (for offline status and checks).
	ReadOnly bool
}

// OpenStore opens the store at path, creating it if it does not exist. It
// fails with a clear error after a second if another process (a running
// server) holds it, and refuses a damaged file (see OpenStoreWith).
func OpenStore(path string) (*Store, error) { return OpenStoreWith(path, StoreOptions{Create: true}) }

// OpenStoreWith opens the store at path. An existing file must be a whole,
// consistent store: an empty file, a truncated one, or one whose pages fail
// bbolt's consistency check is refused with an error wrapping
// ErrStoreDamaged that names the file and the problem (never a panic), and
// the file is left untouched for recovery from a backup.
func OpenStoreWith(path string, o StoreOptions) (*Store, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !o.Create || o.ReadOnly {
			return nil, fmt.Errorf("opening store %s: %w (create it with \"fedirl server task create --store\" or \"fedirl server --init\")", path, ErrNoStore)
		}
	case err != nil:
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	case fi.IsDir():
		return nil, fmt.Errorf("opening store %s: is a directory", path)
	case fi.Size() == 0:
		return nil, fmt.Errorf("opening store %s: %w: the file is empty (0 bytes); it holds no tasks. Restore it from a backup, or delete it to start a new store", path, ErrStoreDamaged)
	}
	db, err := openChecked(path, o)
	if err != nil {
		return nil, err
	}
	if o.ReadOnly {
		return &Store{db: db, path: path}, nil
	}
	migrated := 0
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketTasks, bucketState, bucketSubs, bucketFused} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		var err error
		migrated, err = migrateRecords(tx)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("initialising store %s: %w", path, err)
	}
	return &Store{db: db, path: path, migrated: migrated}, nil
}

// openChecked checks an existing store read-only first (bbolt's consistency
// check, and a file no shorter than the pages its meta page claims), then
// opens it as asked. Any error or panic of bbolt on a bad file becomes an
// error wrapping ErrStoreDamaged; nothing is written to a file that fails.
func openChecked(path string, o StoreOptions) (*bolt.DB, error) {
	if fi, err := os.Stat(path); err == nil {
		if err := checkIsBolt(path); err != nil {
			return nil, err
		}
		if err := checkStore(path, fi.Size()); err != nil {
			return nil, err
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: o.ReadOnly})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("opening store %s: locked by another process (is a server running on it?): %w", path, err)
		}
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	return db, nil
}

// checkStore opens path read-only and verifies it, recovering from bbolt's
// panics on corrupt pages.
func checkStore(path string, size int64) (err error) {
	damaged := func(what any) error {
		return fmt.Errorf("opening store %s: %w: %v. The file was not modified; restore it from a backup (check the backup first with \"fedirl server store check --store BACKUP\")", path, ErrStoreDamaged, what)
	}
	var db *bolt.DB
	defer func() {
		if r := recover(); r != nil {
			err = damaged(r)
		}
		if db != nil {
			db.Close()
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return fmt.Errorf("opening store %s: locked by another process (is a server running on it?): %w", path, err)
		}
		return damaged(err)
	}
	var problems []string
	err = db.View(func(tx *bolt.Tx) error {
		if need := tx.Size(); size < need {
			return fmt.Errorf("the file has %d bytes but its pages need %d (truncated)", size, need)
		}
		for e := range tx.Check() {
			if len(problems) < 3 {
				problems = append(problems, e.Error())
			}
		}
		return nil
	})
	if err == nil && len(problems) > 0 {
		err = errors.New(strings.Join(problems, "; "))
	}
	if err != nil {
		return damaged(err)
	}
	return nil
}

// Migrated returns how many records of a store written before record
// checksums were given one when it was opened (0 for a store that had them).
func (s *Store) Migrated() int { return s.migrated }

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// Path returns the store's file name.
func (s *Store) Path() string { return s.path }

// CreateTask validates spec, stores it with the given client ids, and returns
// a fresh bearer token per client (only their hashes are stored). Creating a
// task whose id exists is an error.
func (s *Store) CreateTask(spec TaskSpec, clients []string, now time.Time) (map[string]string, error) {
	return createTask(s, spec, clients, now)
}

func (s *Store) createTask(rec *taskRecord) error {
	id := []byte(rec.Spec.ID)
	return s.db.Update(func(tx *bolt.Tx) error {
		tb := tx.Bucket(bucketTasks)
		if tb.Get(id) != nil {
			return errorf(CodeAlreadyExists, "task %s already exists", rec.Spec.ID)
		}
		if err := putRecord(tb, string(bucketTasks), id, rec); err != nil {
			return err
		}
		if err := putRecord(tx.Bucket(bucketState), string(bucketState), id, taskState{Round: 1}); err != nil {
			return err
		}
		if _, err := tx.Bucket(bucketSubs).CreateBucketIfNotExists(id); err != nil {
			return err
		}
		_, err := tx.Bucket(bucketFused).CreateBucketIfNotExists(id)
		return err
	})
}

// decodeTaskRecord decodes and checks a stored task record.
func decodeTaskRecord(b []byte) (taskRecord, error) {
	var rec taskRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("corrupt task record: %w", err)
	}
	if err := rec.Spec.Validate(); err != nil {
		return rec, fmt.Errorf("corrupt task record: %w", err)
	}
	for id, h := range rec.Clients {
		if !ValidID(id) || len(h) != 64 {
			return rec, fmt.Errorf("corrupt task record: bad client entry %q", truncate(id))
		}
	}
	return rec, nil
}

// decodeState decodes and checks a stored round state.
func decodeState(b []byte) (taskState, error) {
	var st taskState
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("corrupt round state: %w", err)
	}
	if st.Round < 1 {
		return st, fmt.Errorf("corrupt round state: round %d", st.Round)
	}
	return st, nil
}

// decodeSubmission decodes and checks a stored submission.
func decodeSubmission(b []byte) (Submission, error) {
	var sub Submission
	if err := json.Unmarshal(b, &sub); err != nil {
		return sub, fmt.Errorf("corrupt submission: %w", err)
	}
	if err := validateSubmissionFields(&sub); err != nil {
		return sub, fmt.Errorf("corrupt submission: %s", err.Msg)
	}
	for i, v := range sub.Theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return sub, fmt.Errorf("corrupt submission: theta[%d] = %v", i, v)
		}
	}
	for i, v := range sub.Reward {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return sub, fmt.Errorf("corrupt submission: reward[%d] = %v", i, v)
		}
	}
	if sub.Eval != nil {
		check := sub.Eval.Check
		if len(sub.Eval.Hess) == 0 { // a local-update round's evaluation
			check = func(d int) error { return checkUpdateEval(sub.Eval, d) }
		}
		if err := check(len(sub.Eval.Grad)); err != nil {
			return sub, fmt.Errorf("corrupt submission: %w", err)
		}
	}
	for i, v := range sub.Update {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return sub, fmt.Errorf("corrupt submission: update[%d] = %v", i, v)
		}
	}
	return sub, nil
}

// decodeFused decodes and checks a stored fused result.
func decodeFused(b []byte) (FusedResult, error) {
	var fr FusedResult
	if err := json.Unmarshal(b, &fr); err != nil {
		return fr, fmt.Errorf("corrupt fused result: %w", err)
	}
	if fr.Round < 1 || len(fr.Theta) == 0 || len(fr.Clients) != len(fr.Weights) {
		return fr, fmt.Errorf("corrupt fused result: round %d, %d theta, %d clients, %d weights",
			fr.Round, len(fr.Theta), len(fr.Clients), len(fr.Weights))
	}
	return fr, nil
}

func roundKey(round int) []byte { return fmt.Appendf(nil, "%010d", round) }

func subKey(round int, client string) []byte {
	return append(append(roundKey(round), '/'), client...)
}

// readTask reads a task record in tx.
func readTask(tx *bolt.Tx, id string) (taskRecord, error) {
	b, err := getRecord(tx, tx.Bucket(bucketTasks), string(bucketTasks), []byte(id))
	if err != nil {
		return taskRecord{}, err
	}
	if b == nil {
		return taskRecord{}, errorf(CodeNotFound, "unknown task %q", truncate(id))
	}
	rec, err := decodeTaskRecord(b)
	if err != nil {
		return rec, fmt.Errorf("store: task %s: %w", id, err)
	}
	return rec, nil
}

// readState reads a task's round state in tx.
func readState(tx *bolt.Tx, id string) (taskState, error) {
	b, err := getRecord(tx, tx.Bucket(bucketState), string(bucketState), []byte(id))
	if err != nil {
		return taskState{}, err
	}
	if b == nil {
		return taskState{}, fmt.Errorf("store: task %s: round state missing", id)
	}
	st, err := decodeState(b)
	if err != nil {
		return st, fmt.Errorf("store: task %s: %w", id, err)
	}
	return st, nil
}

// readSub returns the stored submission of client in round, or ok=false.
func readSub(tx *bolt.Tx, task string, round int, client string) (Submission, bool, error) {
	b := tx.Bucket(bucketSubs).Bucket([]byte(task))
	if b == nil {
		return Submission{}, false, fmt.Errorf("store: task %s: submissions bucket missing", task)
	}
	v, err := getRecord(tx, b, recordPath(bucketSubs, task), subKey(round, client))
	if err != nil {
		return Submission{}, false, err
	}
	if v == nil {
		return Submission{}, false, nil
	}
	sub, err := decodeSubmission(v)
	if err != nil {
		return sub, false, fmt.Errorf("store: task %s round %d client %s: %w", task, round, client, err)
	}
	return sub, true, nil
}

// countSubs counts the submissions of a round.
func countSubs(tx *bolt.Tx, task string, round int) int {
	b := tx.Bucket(bucketSubs).Bucket([]byte(task))
	if b == nil {
		return 0
	}
	prefix := append(roundKey(round), '/')
	n := 0
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return n
}

// listSubs returns a round's submissions sorted by client id.
func listSubs(tx *bolt.Tx, task string, round int) ([]Submission, error) {
	b := tx.Bucket(bucketSubs).Bucket([]byte(task))
	if b == nil {
		return nil, fmt.Errorf("store: task %s: submissions bucket missing", task)
	}
	prefix := append(roundKey(round), '/')
	var subs []Submission
	path, legacy := recordPath(bucketSubs, task), legacyStore(tx)
	c := b.Cursor()
	for k, raw := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, raw = c.Next() {
		v, err := openRecord(path, k, raw, legacy)
		if err != nil {
			return nil, err
		}
		sub, err := decodeSubmission(v)
		if err != nil {
			return nil, fmt.Errorf("store: task %s key %s: %w", task, k, err)
		}
		subs = append(subs, sub)
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].ClientID < subs[j].ClientID })
	return subs, nil
}

// readFused returns the fused result of a round, or ok=false.
func readFused(tx *bolt.Tx, task string, round int) (FusedResult, bool, error) {
	b := tx.Bucket(bucketFused).Bucket([]byte(task))
	if b == nil {
		return FusedResult{}, false, fmt.Errorf("store: task %s: fused bucket missing", task)
	}
	v, err := getRecord(tx, b, recordPath(bucketFused, task), roundKey(round))
	if err != nil {
		return FusedResult{}, false, err
	}
	if v == nil {
		return FusedResult{}, false, nil
	}
	fr, err := decodeFused(v)
	if err != nil {
		return fr, false, fmt.Errorf("store: task %s round %d: %w", task, round, err)
	}
	return fr, true, nil
}

// taskIDs lists all task ids in tx.
func taskIDs(tx *bolt.Tx) []string {
	var ids []string
	tx.Bucket(bucketTasks).ForEach(func(k, _ []byte) error {
		ids = append(ids, string(k))
		return nil
	})
	return ids
}

// taskStatus builds a task's status in tx.
func taskStatus(tx *bolt.Tx, id string) TaskStatus {
	ts := TaskStatus{ID: id}
	rec, err := readTask(tx, id)
	if err != nil {
		ts.Error = err.Error()
		return ts
	}
	st, err := readState(tx, id)
	if err != nil {
		ts.Error = err.Error()
		return ts
	}
	ts.Round, ts.Rounds, ts.Done = st.Round, rec.Spec.Rounds, st.Done
	ts.Quorum, ts.MinClients = rec.Spec.Quorum, rec.Spec.MinClients
	for c := range rec.Clients {
		ts.ClientsAllowed = append(ts.ClientsAllowed, c)
	}
	sort.Strings(ts.ClientsAllowed)
	seenAll := map[string]bool{}
	if b := tx.Bucket(bucketSubs).Bucket([]byte(id)); b != nil {
		cur := roundKey(st.Round)
		b.ForEach(func(k, _ []byte) error {
			ts.TotalSubmissions++
			if i := bytes.IndexByte(k, '/'); i >= 0 {
				seenAll[string(k[i+1:])] = true
				if bytes.Equal(k[:i], cur) {
					ts.Submissions++
				}
			}
			return nil
		})
	}
	for c := range seenAll {
		ts.ClientsSeen = append(ts.ClientsSeen, c)
	}
	sort.Strings(ts.ClientsSeen)
	if b := tx.Bucket(bucketFused).Bucket([]byte(id)); b != nil {
		path, legacy := recordPath(bucketFused, id), legacyStore(tx)
		b.ForEach(func(k, raw []byte) error {
			v, err := openRecord(path, k, raw, legacy)
			if err != nil {
				ts.Error = err.Error()
				return nil
			}
			fr, err := decodeFused(v)
			if err != nil {
				ts.Error = fmt.Sprintf("store: task %s fused %s: %v", id, k, err)
				return nil
			}
			ts.Fused = append(ts.Fused, fr)
			return nil
		})
	}
	return ts
}

// Statuses summarises every task in the store (usable offline, without a server).
func (s *Store) Statuses() ([]TaskStatus, error) { return s.statuses() }

func (s *Store) statuses() ([]TaskStatus, error) {
	var out []TaskStatus
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, id := range taskIDs(tx) {
			out = append(out, taskStatus(tx, id))
		}
		return nil
	})
	return out, err
}

func (s *Store) status(id string) (TaskStatus, bool, error) {
	var ts TaskStatus
	found := false
	err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketTasks).Get([]byte(id)) == nil {
			return nil
		}
		found, ts = true, taskStatus(tx, id)
		return nil
	})
	return ts, found, err
}

// Submissions returns every stored submission of a task in a round (for tests
// and audits), sorted by client id.
func (s *Store) Submissions(task string, round int) ([]Submission, error) {
	return s.submissions(task, round)
}

func (s *Store) submissions(task string, round int) ([]Submission, error) {
	var subs []Submission
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		subs, err = listSubs(tx, task, round)
		return err
	})
	return subs, err
}

// Task returns the stored spec of task id (for audits, tests and offline
// tools).
func (s *Store) Task(id string) (TaskSpec, error) {
	rec, err := s.task(id)
	return rec.Spec, err
}

func (s *Store) task(id string) (taskRecord, error) {
	var rec taskRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		rec, err = readTask(tx, id)
		return err
	})
	return rec, err
}

func (s *Store) listTasks() ([]taskSummary, error) {
	var out []taskSummary
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, id := range taskIDs(tx) {
			st, err := readState(tx, id)
			ts := taskSummary{ID: id, State: st, Err: err}
			if err == nil {
				ts.Submissions = countSubs(tx, id, st.Round)
			}
			out = append(out, ts)
		}
		return nil
	})
	return out, err
}

func (s *Store) state(id string) (taskState, error) {
	var st taskState
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		st, err = readState(tx, id)
		return err
	})
	return st, err
}

// recordSubmission decides in a read-only transaction first: refusals and
// duplicates write nothing, so they cost no fsync. Only a submission that
// would be accepted enters the write batch (concurrent submissions share one
// transaction and one fsync), which decides again.
func (s *Store) recordSubmission(sub *Submission) (recorded, error) {
	var r recorded
	// decide is the round's decision on sub in tx.
	decide := func(tx *bolt.Tx) error {
		r = recorded{}
		st, err := readState(tx, sub.TaskID)
		if err != nil {
			return err
		}
		r.State = st
		old, exists, err := readSub(tx, sub.TaskID, sub.Round, sub.ClientID)
		if err != nil {
			return err
		}
		var prev *Submission
		if exists {
			r.Old, prev = old, &old
		}
		r.Verdict = decideSubmission(st, prev, sub)
		if r.Verdict == Duplicate {
			r.Submissions = countSubs(tx, sub.TaskID, sub.Round)
		}
		return nil
	}
	if err := s.db.View(decide); err != nil || r.Verdict != Accept {
		return r, err
	}
	// A refusal found by the second decision is reported in r, not as the
	// function's error: the function then wrote nothing, and an error would
	// make bbolt re-run the rest of the batch.
	err := s.db.Batch(func(tx *bolt.Tx) error {
		if err := decide(tx); err != nil || r.Verdict != Accept {
			return err
		}
		if err := putRecord(tx.Bucket(bucketSubs).Bucket([]byte(sub.TaskID)), recordPath(bucketSubs, sub.TaskID), subKey(sub.Round, sub.ClientID), sub); err != nil {
			return err
		}
		r.Submissions = countSubs(tx, sub.TaskID, sub.Round)
		if next := afterAccept(r.State, r.Submissions, sub.ReceivedAt); next != r.State {
			r.State = next
			return putRecord(tx.Bucket(bucketState), string(bucketState), []byte(sub.TaskID), &r.State)
		}
		return nil
	})
	return r, err
}

func (s *Store) submitters(task string, round int) ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSubs).Bucket([]byte(task))
		if b == nil {
			return fmt.Errorf("store: task %s: submissions bucket missing", task)
		}
		prefix := append(roundKey(round), '/')
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			out = append(out, string(k[len(prefix):]))
		}
		return nil
	})
	return out, err
}

func (s *Store) beginFusing(spec *TaskSpec, now time.Time) (fusingRound, error) {
	var fr fusingRound
	err := s.db.Update(func(tx *bolt.Tx) error {
		fr = fusingRound{}
		st, err := readState(tx, spec.ID)
		if err != nil {
			return err
		}
		ok, trig := readyToFuse(spec, st, countSubs(tx, spec.ID, st.Round), now)
		if !ok {
			return nil
		}
		if _, done, err := readFused(tx, spec.ID, st.Round); err != nil || done {
			return err // already fused: the state was advanced by the commit
		}
		subs, err := listSubs(tx, spec.ID, st.Round)
		if err != nil {
			return err
		}
		fr = fusingRound{Round: st.Round, Trigger: trig, Subs: subs}
		if st.Fusing {
			return nil
		}
		st = startFusing(st, trig)
		return putRecord(tx.Bucket(bucketState), string(bucketState), []byte(spec.ID), &st)
	})
	if err != nil {
		return fusingRound{}, err
	}
	return fr, nil
}

func (s *Store) commitFusion(spec *TaskSpec, fr *FusedResult) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		st, err := readState(tx, spec.ID)
		if err != nil {
			return err
		}
		next, err := afterCommit(st, spec, fr)
		if err != nil {
			return err
		}
		if err := putRecord(tx.Bucket(bucketFused).Bucket([]byte(spec.ID)), recordPath(bucketFused, spec.ID), roundKey(fr.Round), fr); err != nil {
			return err
		}
		return putRecord(tx.Bucket(bucketState), string(bucketState), []byte(spec.ID), &next)
	})
}

func (s *Store) failRound(id, reason string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		st, err := readState(tx, id)
		if err != nil {
			return err
		}
		st = failRound(st, reason)
		return putRecord(tx.Bucket(bucketState), string(bucketState), []byte(id), &st)
	})
}

func (s *Store) fused(task string, round int) (FusedResult, bool, error) {
	var (
		fr FusedResult
		ok bool
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		fr, ok, err = readFused(tx, task, round)
		return err
	})
	return fr, ok, err
}

// DeleteTask removes task id with its submissions and fused results (an
// operator's verb: the server must not be running on the store). Deleting an
// unknown task is a CodeNotFound error.
func (s *Store) DeleteTask(id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketTasks).Get([]byte(id)) == nil {
			return errorf(CodeNotFound, "unknown task %q", truncate(id))
		}
		for _, b := range [][]byte{bucketTasks, bucketState} {
			if err := tx.Bucket(b).Delete([]byte(id)); err != nil {
				return err
			}
		}
		for _, b := range [][]byte{bucketSubs, bucketFused} {
			if tx.Bucket(b).Bucket([]byte(id)) != nil {
				if err := tx.Bucket(b).DeleteBucket([]byte(id)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
