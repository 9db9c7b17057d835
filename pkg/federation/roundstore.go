package federation

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// roundStore is where a Coordinator keeps tasks, round states, submissions
// and fused results: the verbs the coordinator uses, each atomic. The
// decisions stay in the pure state machine (round.go); a verb that must
// decide and write in one step (recordSubmission, beginFusing, commitFusion,
// failRound) applies those functions inside its transaction. Two
// implementations: *Store (bbolt, fsynced, for servers) and memStore (for
// in-process runs, where durability buys nothing).
type roundStore interface {
	// createTask stores a new task in round 1; an existing id is a
	// CodeAlreadyExists error.
	createTask(rec *taskRecord) error
	// task returns a task's record; an unknown id is a CodeNotFound error.
	task(id string) (taskRecord, error)
	// listTasks summarises every task, sorted by id.
	listTasks() ([]taskSummary, error)
	// state returns a task's round state.
	state(id string) (taskState, error)
	// recordSubmission decides on sub (decideSubmission) and stores it if
	// accepted, advancing the state (afterAccept), in one transaction.
	// sub.ReceivedAt must be set. Refusals and duplicates write nothing.
	recordSubmission(sub *Submission) (recorded, error)
	// submitters returns the ids of the clients with a submission in round,
	// sorted.
	submitters(id string, round int) ([]string, error)
	// submissions returns a round's submissions sorted by client id.
	submissions(id string, round int) ([]Submission, error)
	// beginFusing closes the task's current round for fusion if it is ready
	// (readyToFuse at now, startFusing) and snapshots its submissions, in
	// one transaction. The snapshot's subs are nil when there is nothing to
	// fuse (round not ready, or already fused).
	beginFusing(spec *TaskSpec, now time.Time) (fusingRound, error)
	// commitFusion stores fr and advances the round (afterFusion) if
	// fr.Round is still the one being fused; otherwise it stores nothing and
	// errors.
	commitFusion(spec *TaskSpec, fr *FusedResult) error
	// failRound closes a task's current round as failed with reason.
	failRound(id, reason string) error
	// fused returns the fused result of a round, or ok=false.
	fused(id string, round int) (FusedResult, bool, error)
	// statuses summarises every task, sorted by id. A task whose record or
	// state cannot be read has only ID and Error set (Round 0).
	statuses() ([]TaskStatus, error)
	// replaceClientToken revokes client's current token on task id
	// (revokeInRecord) in one transaction and returns the new record.
	replaceClientToken(id, client, newHash string, rotated bool, at time.Time) (taskRecord, error)
	// status summarises one task as statuses does, or found=false.
	status(id string) (ts TaskStatus, found bool, err error)
}

// taskSummary is one task in listTasks: its round state and the number of
// submissions in its current round, or Err if they cannot be read.
type taskSummary struct {
	ID          string
	State       taskState
	Submissions int
	Err         error
}

// recorded is the outcome of recordSubmission.
type recorded struct {
	Verdict Verdict
	// State is the round state after the submission.
	State taskState
	// Old is the client's stored submission for the round (Duplicate, Conflict).
	Old Submission
	// Submissions counts the round's submissions (Accept, Duplicate).
	Submissions int
}

// fusingRound is the snapshot beginFusing takes of a round closed for fusion.
type fusingRound struct {
	Round   int
	Trigger string
	Subs    []Submission
}

var (
	_ roundStore = (*Store)(nil)
	_ roundStore = (*memStore)(nil)
)

// newTaskRecord validates spec and its client list and returns the record to
// store with a fresh bearer token per client (the record holds only their
// hashes).
func newTaskRecord(spec TaskSpec, clients []string, now time.Time) (taskRecord, map[string]string, error) {
	spec.Normalize()
	if err := spec.Validate(); err != nil {
		return taskRecord{}, nil, err
	}
	if spec.Privacy != nil {
		if err := spec.Privacy.CheckClipSet(); err != nil {
			return taskRecord{}, nil, fmt.Errorf("task spec %s: privacy.%w", spec.ID, err)
		}
	}
	if len(clients) < spec.Quorum {
		return taskRecord{}, nil, fmt.Errorf("task %s: %d clients cannot reach quorum %d", spec.ID, len(clients), spec.Quorum)
	}
	if len(clients) > MaxClientsPerTask {
		return taskRecord{}, nil, fmt.Errorf("task %s: %d clients, limit %d", spec.ID, len(clients), MaxClientsPerTask)
	}
	rec := taskRecord{Spec: spec, Clients: make(map[string]string, len(clients)), CreatedAt: now.UTC()}
	tokens := make(map[string]string, len(clients))
	for _, id := range clients {
		if !ValidID(id) {
			return taskRecord{}, nil, fmt.Errorf("task %s: client id %q: want 1-%d characters from [A-Za-z0-9._-]", spec.ID, id, MaxIDLength)
		}
		if _, dup := rec.Clients[id]; dup {
			return taskRecord{}, nil, fmt.Errorf("task %s: client id %q listed twice", spec.ID, id)
		}
		tok := NewToken()
		tokens[id] = tok
		rec.Clients[id] = HashToken(tok)
	}
	return rec, tokens, nil
}

// createTask validates spec, stores it in rs with the given client ids, and
// returns a fresh bearer token per client.
func createTask(rs roundStore, spec TaskSpec, clients []string, now time.Time) (map[string]string, error) {
	rec, tokens, err := newTaskRecord(spec, clients, now)
	if err != nil {
		return nil, err
	}
	if err := rs.createTask(&rec); err != nil {
		return nil, fmt.Errorf("creating task %s: %w", rec.Spec.ID, err)
	}
	return tokens, nil
}

// memStore is the in-memory roundStore of in-process runs: the same verbs
// and results as the bbolt Store, without a file (nothing survives the
// process). Stored values are copied in and out, as the Store's encoding
// does.
type memStore struct {
	mu    sync.RWMutex
	tasks map[string]*memTask
}

// memTask is one task of a memStore.
type memTask struct {
	rec   taskRecord
	st    taskState
	subs  map[int]map[string]Submission // round -> client -> submission
	fused map[int]FusedResult
}

// newMemStore returns an empty in-memory store.
func newMemStore() *memStore { return &memStore{tasks: map[string]*memTask{}} }

// get returns task id, or a CodeNotFound error; the caller holds mu.
func (m *memStore) get(id string) (*memTask, error) {
	t := m.tasks[id]
	if t == nil {
		return nil, errorf(CodeNotFound, "unknown task %q", truncate(id))
	}
	return t, nil
}

func cloneSub(s Submission) Submission {
	s.Theta, s.Reward, s.Eval, s.Update = slices.Clone(s.Theta), slices.Clone(s.Reward), cloneEval(s.Eval), slices.Clone(s.Update)
	if s.Privacy != nil {
		d := *s.Privacy
		s.Privacy = &d
	}
	return s
}

func cloneFused(fr FusedResult) FusedResult {
	fr.Theta, fr.Clients, fr.Weights = slices.Clone(fr.Theta), slices.Clone(fr.Clients), slices.Clone(fr.Weights)
	fr.Privacy = slices.Clone(fr.Privacy)
	fr.Reward, fr.RewardClients = slices.Clone(fr.Reward), slices.Clone(fr.RewardClients)
	fr.Joint = cloneJoint(fr.Joint)
	return fr
}

func (m *memStore) createTask(rec *taskRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tasks[rec.Spec.ID] != nil {
		return errorf(CodeAlreadyExists, "task %s already exists", rec.Spec.ID)
	}
	r := *rec
	r.Spec.Probe = slices.Clone(r.Spec.Probe)
	r.Clients = make(map[string]string, len(rec.Clients))
	for k, v := range rec.Clients {
		r.Clients[k] = v
	}
	m.tasks[r.Spec.ID] = &memTask{rec: r, st: taskState{Round: 1}, subs: map[int]map[string]Submission{}, fused: map[int]FusedResult{}}
	return nil
}

func (m *memStore) task(id string) (taskRecord, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t, err := m.get(id)
	if err != nil {
		return taskRecord{}, err
	}
	return t.rec, nil // the coordinator never modifies a record
}

func (m *memStore) ids() []string {
	ids := make([]string, 0, len(m.tasks))
	for id := range m.tasks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (m *memStore) listTasks() ([]taskSummary, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []taskSummary
	for _, id := range m.ids() {
		t := m.tasks[id]
		out = append(out, taskSummary{ID: id, State: t.st, Submissions: len(t.subs[t.st.Round])})
	}
	return out, nil
}

func (m *memStore) state(id string) (taskState, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t, err := m.get(id)
	if err != nil {
		return taskState{}, err
	}
	return t.st, nil
}

func (m *memStore) recordSubmission(sub *Submission) (recorded, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.get(sub.TaskID)
	if err != nil {
		return recorded{}, err
	}
	r := recorded{State: t.st}
	var prev *Submission
	if old, ok := t.subs[sub.Round][sub.ClientID]; ok {
		r.Old, prev = cloneSub(old), &old
	}
	r.Verdict = decideSubmission(t.st, prev, sub)
	switch r.Verdict {
	case Duplicate:
		r.Submissions = len(t.subs[sub.Round])
	case Accept:
		if t.subs[sub.Round] == nil {
			t.subs[sub.Round] = map[string]Submission{}
		}
		t.subs[sub.Round][sub.ClientID] = cloneSub(*sub)
		r.Submissions = len(t.subs[sub.Round])
		t.st = afterAccept(t.st, r.Submissions, sub.ReceivedAt)
		r.State = t.st
	}
	return r, nil
}

func (m *memStore) submitters(id string, round int) ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t, err := m.get(id)
	if err != nil {
		return nil, err
	}
	var out []string
	for c := range t.subs[round] {
		out = append(out, c)
	}
	sort.Strings(out)
	return out, nil
}

func (m *memStore) submissions(id string, round int) ([]Submission, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t, err := m.get(id)
	if err != nil {
		return nil, err
	}
	return sortedSubs(t.subs[round]), nil
}

// sortedSubs copies a round's submissions sorted by client id.
func sortedSubs(subs map[string]Submission) []Submission {
	var out []Submission
	for _, s := range subs {
		out = append(out, cloneSub(s))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClientID < out[j].ClientID })
	return out
}

func (m *memStore) beginFusing(spec *TaskSpec, now time.Time) (fusingRound, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.get(spec.ID)
	if err != nil {
		return fusingRound{}, err
	}
	ok, trig := readyToFuse(spec, t.st, len(t.subs[t.st.Round]), now)
	if _, done := t.fused[t.st.Round]; !ok || done {
		return fusingRound{}, nil
	}
	fr := fusingRound{Round: t.st.Round, Trigger: trig, Subs: sortedSubs(t.subs[t.st.Round])}
	if !t.st.Fusing {
		t.st = startFusing(t.st, trig)
	}
	return fr, nil
}

func (m *memStore) commitFusion(spec *TaskSpec, fr *FusedResult) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.get(spec.ID)
	if err != nil {
		return err
	}
	next, err := afterCommit(t.st, spec, fr)
	if err != nil {
		return err
	}
	t.fused[fr.Round], t.st = cloneFused(*fr), next
	return nil
}

func (m *memStore) failRound(id, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.get(id)
	if err != nil {
		return err
	}
	t.st = failRound(t.st, reason)
	return nil
}

func (m *memStore) fused(id string, round int) (FusedResult, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t, err := m.get(id)
	if err != nil {
		return FusedResult{}, false, err
	}
	fr, ok := t.fused[round]
	if !ok {
		return FusedResult{}, false, nil
	}
	return cloneFused(fr), true, nil
}

func (m *memStore) statuses() ([]TaskStatus, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []TaskStatus
	for _, id := range m.ids() {
		out = append(out, m.statusLocked(id))
	}
	return out, nil
}

func (m *memStore) status(id string) (TaskStatus, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.tasks[id] == nil {
		return TaskStatus{}, false, nil
	}
	return m.statusLocked(id), true, nil
}

func (m *memStore) statusLocked(id string) TaskStatus {
	{
		t := m.tasks[id]
		ts := TaskStatus{ID: id, Round: t.st.Round, Rounds: t.rec.Spec.Rounds, Done: t.st.Done,
			Quorum: t.rec.Spec.Quorum, MinClients: t.rec.Spec.MinClients}
		for c := range t.rec.Clients {
			ts.ClientsAllowed = append(ts.ClientsAllowed, c)
		}
		sort.Strings(ts.ClientsAllowed)
		seen := map[string]bool{}
		for round, subs := range t.subs {
			ts.TotalSubmissions += len(subs)
			if round == t.st.Round {
				ts.Submissions = len(subs)
			}
			for c := range subs {
				seen[c] = true
			}
		}
		ts.ClientsSeen = mergeSeen(nil, seen)
		rounds := make([]int, 0, len(t.fused))
		for r := range t.fused {
			rounds = append(rounds, r)
		}
		sort.Ints(rounds)
		for _, r := range rounds {
			ts.Fused = append(ts.Fused, cloneFused(t.fused[r]))
		}
		return ts
	}
}

// mergeSeen returns the sorted union of the client ids in have and seen.
func mergeSeen(have []string, seen map[string]bool) []string {
	all := make(map[string]bool, len(have)+len(seen))
	for _, c := range have {
		all[c] = true
	}
	for c := range seen {
		all[c] = true
	}
	var out []string
	for c := range all {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
