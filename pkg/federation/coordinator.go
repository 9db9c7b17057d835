package federation

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// CoordinatorConfig configures a Coordinator. Zero values are documented defaults.
type CoordinatorConfig struct {
	// Fuser fuses a round's θ_i. Required.
	Fuser Fuser
	// AdminToken, when non-empty, must be presented to call Status and the
	// admin RPCs.
	AdminToken string
	// OpenStatus lets anyone call Status when there is no AdminToken (for a
	// loopback-only quick start); otherwise Status without an admin token is
	// refused.
	OpenStatus bool
	// MaxWait caps how long GetFused may block (default 30 s).
	MaxWait time.Duration
	// Tick is how often deadlines are checked (default 250 ms).
	Tick time.Duration
	// Now returns the current time (default time.Now).
	Now func() time.Time
	// Logf receives one line per notable event (default: discarded).
	Logf func(format string, args ...any)
	// Metrics, if set, counts submissions and fusions (see NewMetrics).
	Metrics *Metrics
	// RetryBase and RetryMax bound the exponential back-off between attempts
	// of a fusion that failed transiently (defaults 250 ms and 1 min).
	RetryBase, RetryMax time.Duration
}

// ErrTransient is wrapped by a Fuser's error when the same fusion may succeed
// if tried again later (e.g. a resource was briefly unavailable). Any other
// error marks the round failed: clients are told why instead of waiting.
var ErrTransient = errors.New("transient fusion failure")

// Coordinator is the transport-independent server core: it authenticates
// and validates requests, records submissions idempotently in the Store,
// fuses each round when its quorum is reached (or at the deadline with at
// least MinClients), advances rounds and serves fused results. It is safe for
// concurrent use.
type Coordinator struct {
	store *Store
	cfg   CoordinatorConfig

	mu     sync.Mutex
	tasks  map[string]*taskRecord     // immutable task records, cached
	notify map[string]chan struct{}   // closed when a task's round changes
	seen   map[string]map[string]bool // task -> clients seen since start
	errs   map[string]string          // task -> last fusion error
	fusing map[string]bool            // tasks with a fusion running in this process
	retry  map[string]retryState      // tasks whose last fusion failed transiently

	ctx    context.Context // cancelled by Close: running fusions stop
	cancel context.CancelFunc
	stop   chan struct{}
	wg     sync.WaitGroup // the deadline checker
	fuses  sync.WaitGroup // running fusions
}

// retryState is the back-off of a task whose fusion failed transiently.
type retryState struct {
	attempts int
	next     time.Time
}

// NewCoordinator wraps an open store, fuses any round that became ready
// while the server was down, and starts the deadline checker. Close stops it
// (the store is closed by its owner).
func NewCoordinator(store *Store, cfg CoordinatorConfig) (*Coordinator, error) {
	if cfg.Fuser == nil {
		return nil, errors.New("federation: CoordinatorConfig.Fuser is nil")
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 30 * time.Second
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 250 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 250 * time.Millisecond
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = time.Minute
	}
	c := &Coordinator{store: store, cfg: cfg, tasks: map[string]*taskRecord{},
		notify: map[string]chan struct{}{}, seen: map[string]map[string]bool{},
		errs: map[string]string{}, fusing: map[string]bool{}, retry: map[string]retryState{},
		stop: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if cfg.Metrics != nil {
		cfg.Metrics.store.Store(store)
	}
	c.checkDeadlines()
	c.wg.Add(1)
	go c.loop()
	return c, nil
}

// Close stops the deadline checker and cancels running fusions, waiting up to
// a second for them to return (a fuser that ignores its context is left
// behind: its round stays marked fusing in the store and is fused again after
// a restart).
func (c *Coordinator) Close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.cancel()
	c.wg.Wait()
	done := make(chan struct{})
	go func() { c.fuses.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		c.cfg.Logf("shutdown: a fusion did not stop within 1 s; its round will be fused after restart")
	}
}

// Store returns the coordinator's store.
func (c *Coordinator) Store() *Store { return c.store }

// CreateTask defines a task and returns one bearer token per client.
// The task's family must accept the spec (Fuser.Validate), so that a task the
// server could never fuse is refused before anything is stored.
func (c *Coordinator) CreateTask(spec TaskSpec, clients []string) (map[string]string, error) {
	if err := c.checkFusable(spec); err != nil {
		return nil, err
	}
	return c.store.CreateTask(spec, clients, c.cfg.Now())
}

// checkFusable normalizes and validates spec and asks the fuser whether it
// can serve it; errors are CodeInvalidArgument.
func (c *Coordinator) checkFusable(spec TaskSpec) error {
	spec.Normalize()
	if err := spec.Validate(); err != nil {
		return &Error{Code: CodeInvalidArgument, Msg: err.Error()}
	}
	if err := c.cfg.Fuser.Validate(spec); err != nil {
		return errorf(CodeInvalidArgument, "task spec %s: %v", spec.ID, err)
	}
	return nil
}

// CreateTaskAdmin is CreateTask for a remote operator: cred must carry the
// admin token, and the call is refused when the coordinator has none.
func (c *Coordinator) CreateTaskAdmin(ctx context.Context, cred Credentials, spec TaskSpec, clients []string) (map[string]string, error) {
	if c.cfg.AdminToken == "" {
		return nil, errorf(CodePermissionDenied, "this server has no admin token; create tasks offline with the store")
	}
	if !c.isAdmin(cred) {
		return nil, errorf(CodeUnauthenticated, "creating a task requires the admin token")
	}
	if len(clients) > MaxClientsPerTask {
		return nil, errorf(CodeInvalidArgument, "%d clients, limit %d", len(clients), MaxClientsPerTask)
	}
	tokens, err := c.CreateTask(spec, clients)
	if err != nil {
		var fe *Error
		if errors.As(err, &fe) {
			return nil, fe
		}
		return nil, &Error{Code: CodeInvalidArgument, Msg: err.Error()}
	}
	c.cfg.Logf("task %s created with %d clients", spec.ID, len(clients))
	return tokens, nil
}

// isAdmin reports whether cred carries the admin token (constant time).
func (c *Coordinator) isAdmin(cred Credentials) bool {
	return c.cfg.AdminToken != "" && subtle.ConstantTimeCompare([]byte(HashToken(cred.Token)), []byte(HashToken(c.cfg.AdminToken))) == 1
}

func (c *Coordinator) loop() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.checkDeadlines()
		}
	}
}

// checkDeadlines fuses every round that is ready (quorum reached while the
// fuser failed or the server was down, or deadline passed).
func (c *Coordinator) checkDeadlines() {
	var ready []string
	now := c.cfg.Now()
	c.store.db.View(func(tx *bolt.Tx) error {
		for _, id := range taskIDs(tx) {
			rec, err := c.task(tx, id)
			if err != nil {
				continue
			}
			st, err := readState(tx, id)
			if err != nil {
				continue
			}
			if ok, _ := readyToFuse(&rec.Spec, st, countSubs(tx, id, st.Round), now); ok {
				ready = append(ready, id)
			}
		}
		return nil
	})
	for _, id := range ready {
		c.maybeFuse(id)
	}
}

// task returns the cached task record of id, reading it in tx on first use.
func (c *Coordinator) task(tx *bolt.Tx, id string) (*taskRecord, error) {
	c.mu.Lock()
	rec := c.tasks[id]
	c.mu.Unlock()
	if rec != nil {
		return rec, nil
	}
	r, err := readTask(tx, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.tasks[id] = &r
	c.mu.Unlock()
	return &r, nil
}

// lookupTask is task in its own read transaction.
func (c *Coordinator) lookupTask(id string) (*taskRecord, error) {
	c.mu.Lock()
	rec := c.tasks[id]
	c.mu.Unlock()
	if rec != nil {
		return rec, nil
	}
	err := c.store.db.View(func(tx *bolt.Tx) error {
		var err error
		rec, err = c.task(tx, id)
		return err
	})
	return rec, err
}

// authenticate checks that cred may act as clientID on task taskID.
func (c *Coordinator) authenticate(cred Credentials, taskID, clientID string) (*taskRecord, error) {
	if !ValidID(taskID) {
		return nil, errorf(CodeInvalidArgument, "task id %q is not a valid identifier", truncate(taskID))
	}
	if !ValidID(clientID) {
		return nil, errorf(CodeInvalidArgument, "client id %q is not a valid identifier", truncate(clientID))
	}
	rec, err := c.lookupTask(taskID)
	if CodeOf(err) == CodeNotFound {
		// Answer an unknown task like a wrong token, so that task ids cannot
		// be enumerated without credentials (tokenMatches still runs, to keep
		// the timing uniform).
		tokenMatches(cred.Token, "0000000000000000000000000000000000000000000000000000000000000000")
		return nil, errorf(CodeUnauthenticated, "invalid token for client %s on task %s", clientID, taskID)
	}
	if err != nil {
		return nil, internal(err)
	}
	hash, member := rec.Clients[clientID]
	if !member {
		hash = "0000000000000000000000000000000000000000000000000000000000000000" // keep timing uniform
	}
	if !tokenMatches(cred.Token, hash) || !member {
		return nil, errorf(CodeUnauthenticated, "invalid token for client %s on task %s", clientID, taskID)
	}
	if cred.CertName != "" && cred.CertName != clientID {
		return nil, errorf(CodePermissionDenied, "client certificate %q cannot act as client %s", truncate(cred.CertName), clientID)
	}
	c.mu.Lock()
	if c.seen[taskID] == nil {
		c.seen[taskID] = map[string]bool{}
	}
	c.seen[taskID][clientID] = true
	c.mu.Unlock()
	return rec, nil
}

// GetTask returns a task's definition, current round and warm start.
func (c *Coordinator) GetTask(ctx context.Context, cred Credentials, taskID, clientID string) (TaskInfo, error) {
	rec, err := c.authenticate(cred, taskID, clientID)
	if err != nil {
		return TaskInfo{}, err
	}
	info := TaskInfo{Spec: rec.Spec}
	err = c.store.db.View(func(tx *bolt.Tx) error {
		st, err := readState(tx, taskID)
		if err != nil {
			return err
		}
		info.CurrentRound, info.Done = st.Round, st.Done
		if rec.Spec.WarmStart && st.Round > 1 {
			fr, ok, err := readFused(tx, taskID, st.Round-1)
			if err != nil {
				return err
			}
			if ok {
				info.WarmStart = fr.Theta
			}
		}
		return nil
	})
	if err != nil {
		return TaskInfo{}, internal(err)
	}
	info.Spec.Probe = slices.Clone(info.Spec.Probe)
	return info, nil
}

// Submit validates and records a submission. An identical resubmission (same
// client, task, round and content) is acknowledged with Duplicate set and
// stores nothing; a different one for the same key is refused.
func (c *Coordinator) Submit(ctx context.Context, cred Credentials, sub Submission) (SubmitResult, error) {
	res, err := c.submit(ctx, cred, sub)
	switch {
	case err != nil:
		c.cfg.Metrics.submission("refused", CodeOf(err))
	case res.Duplicate:
		c.cfg.Metrics.submission("duplicate", 0)
	default:
		c.cfg.Metrics.submission("accepted", 0)
	}
	return res, err
}

// submit is Submit without the metrics.
func (c *Coordinator) submit(ctx context.Context, cred Credentials, sub Submission) (SubmitResult, error) {
	if e := validateSubmissionFields(&sub); e != nil {
		return SubmitResult{}, e
	}
	rec, err := c.authenticate(cred, sub.TaskID, sub.ClientID)
	if err != nil {
		return SubmitResult{}, err
	}
	if e := validateTheta(&rec.Spec, sub.Theta); e != nil {
		return SubmitResult{}, e
	}
	sub.Theta = slices.Clone(sub.Theta)
	var res SubmitResult
	var fuse bool
	var refusal *Error
	// A refusal is reported through refusal, not as the function's error: the
	// function then wrote nothing, and an error would make bbolt re-run the
	// rest of the batch.
	// decide is the round's decision on sub in tx: refuse it (refusal),
	// acknowledge a duplicate (res.Duplicate), or accept it (true: write).
	decide := func(tx *bolt.Tx) (taskState, bool, error) {
		res, fuse, refusal = SubmitResult{Round: sub.Round, Quorum: rec.Spec.Quorum}, false, nil
		st, err := readState(tx, sub.TaskID)
		if err != nil {
			return st, false, err
		}
		old, exists, err := readSub(tx, sub.TaskID, sub.Round, sub.ClientID)
		if err != nil {
			return st, false, err
		}
		var prev *Submission
		if exists {
			prev = &old
		}
		v := decideSubmission(st, prev, &sub)
		if v == Duplicate {
			res.Duplicate = true
			res.Submissions = countSubs(tx, sub.TaskID, sub.Round)
			res.Message = fmt.Sprintf("duplicate: already accepted at %s", old.ReceivedAt.Format(time.RFC3339Nano))
		}
		refusal = v.refusal(st, &sub)
		return st, v == Accept, nil
	}
	// Refusals and duplicates are answered from a read-only transaction: they
	// write nothing, so they cost no fsync. Only a submission that would be
	// accepted enters the write batch, which decides again.
	var write bool
	err = c.store.db.View(func(tx *bolt.Tx) error {
		_, write, err = decide(tx)
		return err
	})
	if err == nil && write {
		err = c.store.db.Batch(func(tx *bolt.Tx) error {
			st, accept, err := decide(tx)
			if err != nil || !accept {
				return err
			}
			return c.accept(tx, rec, st, &sub, &res, &fuse)
		})
	}
	if err != nil {
		return SubmitResult{}, internal(err)
	}
	if refusal != nil {
		return SubmitResult{}, refusal
	}
	if !res.Duplicate {
		c.cfg.Logf("task %s round %d: accepted theta from %s (%d/%d)", sub.TaskID, sub.Round, sub.ClientID, res.Submissions, rec.Spec.Quorum)
	}
	if fuse {
		c.maybeFuse(sub.TaskID)
	}
	return res, nil
}

// accept stores an accepted submission in tx and fills res; fuse reports
// whether the round became ready.
func (c *Coordinator) accept(tx *bolt.Tx, rec *taskRecord, st taskState, sub *Submission, res *SubmitResult, fuse *bool) error {
	sub.ReceivedAt = c.cfg.Now().UTC()
	if err := writeJSONValue(tx.Bucket(bucketSubs).Bucket([]byte(sub.TaskID)), subKey(sub.Round, sub.ClientID), sub); err != nil {
		return err
	}
	res.Submissions = countSubs(tx, sub.TaskID, sub.Round)
	if next := afterAccept(st, res.Submissions, sub.ReceivedAt); next != st {
		st = next
		if err := writeJSONValue(tx.Bucket(bucketState), []byte(sub.TaskID), &st); err != nil {
			return err
		}
	}
	*fuse, _ = readyToFuse(&rec.Spec, st, res.Submissions, c.cfg.Now())
	res.Message = fmt.Sprintf("accepted %d/%d", res.Submissions, rec.Spec.Quorum)
	return nil
}

func sameSubmission(a, b *Submission) bool {
	if a.DemoCount != b.DemoCount || a.Iterations != b.Iterations ||
		math.Float64bits(a.GradNorm) != math.Float64bits(b.GradNorm) || len(a.Theta) != len(b.Theta) {
		return false
	}
	for i := range a.Theta {
		if math.Float64bits(a.Theta[i]) != math.Float64bits(b.Theta[i]) {
			return false
		}
	}
	return true
}

// maybeFuse starts the fusion of a task's current round in the background
// if the round is ready and no fusion of the task is running or backing off.
func (c *Coordinator) maybeFuse(taskID string) {
	c.mu.Lock()
	if c.fusing[taskID] || c.cfg.Now().Before(c.retry[taskID].next) {
		c.mu.Unlock()
		return
	}
	select {
	case <-c.stop:
		c.mu.Unlock()
		return
	default:
	}
	c.fusing[taskID] = true
	c.fuses.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.fuses.Done()
		c.fuse(taskID)
		c.mu.Lock()
		delete(c.fusing, taskID)
		c.mu.Unlock()
	}()
}

// fuse fuses a task's current round without holding the store's write lock
// while the fuser runs: one short transaction closes the round (state
// "fusing") and snapshots its submissions, the fuser runs with a context
// that Close cancels, and a second transaction stores the result only if the
// round is still the one being fused. Every accepted submission is therefore
// either in the fused result or was refused because the round had closed.
func (c *Coordinator) fuse(taskID string) {
	var (
		spec    TaskSpec
		round   int
		trigger string
		subs    []Submission
	)
	err := c.store.db.Update(func(tx *bolt.Tx) error {
		rec, err := c.task(tx, taskID)
		if err != nil {
			return err
		}
		st, err := readState(tx, taskID)
		if err != nil {
			return err
		}
		ok, trig := readyToFuse(&rec.Spec, st, countSubs(tx, taskID, st.Round), c.cfg.Now())
		if !ok {
			return nil
		}
		if _, done, err := readFused(tx, taskID, st.Round); err != nil || done {
			return err // already fused: state will be advanced below only by the fusing tx
		}
		if subs, err = listSubs(tx, taskID, st.Round); err != nil {
			return err
		}
		spec, round, trigger = rec.Spec, st.Round, trig
		if st.Fusing {
			return nil
		}
		st = startFusing(st, trig)
		return writeJSONValue(tx.Bucket(bucketState), []byte(taskID), &st)
	})
	if err != nil || subs == nil {
		c.fusionFailed(taskID, err, false)
		return
	}
	thetas := make([][]float64, len(subs))
	clients := make([]string, len(subs))
	demos := make([]int, len(subs))
	for i := range subs {
		thetas[i], clients[i], demos[i] = subs[i].Theta, subs[i].ClientID, subs[i].DemoCount
	}
	start := time.Now()
	out, err := c.cfg.Fuser.Fuse(c.ctx, spec, thetas, demos)
	if err == nil {
		if e := validateTheta(&TaskSpec{ID: taskID, ThetaDim: spec.ThetaDim, MaxThetaNorm: math.Inf(1)}, out.Theta); e != nil {
			err = fmt.Errorf("fuser returned bad theta: %s", e.Msg)
		} else if len(out.Weights) != len(subs) {
			err = fmt.Errorf("fuser returned %d weights for %d submissions", len(out.Weights), len(subs))
		}
	}
	if err != nil {
		if c.ctx.Err() != nil {
			c.cfg.Metrics.fusion("interrupted", 0)
			c.cfg.Logf("task %s round %d: fusion interrupted by shutdown; it resumes after restart", taskID, round)
			return
		}
		permanent := !errors.Is(err, ErrTransient)
		c.cfg.Metrics.fusion(map[bool]string{true: "failed", false: "transient"}[permanent], 0)
		c.fusionFailed(taskID, fmt.Errorf("fusing task %s round %d: %w", taskID, round, err), permanent)
		return
	}
	fr := FusedResult{TaskID: taskID, Round: round, Theta: out.Theta, Method: out.Method,
		Clients: clients, Weights: out.Weights, MarginalError: out.MarginalError, Iterations: out.Iterations,
		Trigger: trigger, FusedAt: c.cfg.Now().UTC()}
	err = c.store.db.Update(func(tx *bolt.Tx) error {
		st, err := readState(tx, taskID)
		if err != nil {
			return err
		}
		next, err := afterFusion(st, &spec, round)
		if err != nil {
			return err
		}
		if err := writeJSONValue(tx.Bucket(bucketFused).Bucket([]byte(taskID)), roundKey(round), &fr); err != nil {
			return err
		}
		return writeJSONValue(tx.Bucket(bucketState), []byte(taskID), &next)
	})
	if err != nil {
		c.fusionFailed(taskID, fmt.Errorf("storing the fusion of task %s round %d: %w", taskID, round, err), false)
		return
	}
	c.cfg.Metrics.fusion("fused", time.Since(start))
	c.mu.Lock()
	delete(c.errs, taskID)
	delete(c.retry, taskID)
	c.mu.Unlock()
	c.cfg.Logf("task %s round %d: fused %d clients by %s (%s) in %s, marginal error %.3g",
		taskID, round, len(clients), fr.Method, trigger, time.Since(start).Round(time.Millisecond), fr.MarginalError)
	c.broadcast(taskID)
}

// fusionFailed records a failed fusion attempt. A permanent failure closes
// the round (state Failed) and wakes the waiting clients, who are told why;
// a transient one reopens nothing and schedules a retry with exponential
// back-off.
func (c *Coordinator) fusionFailed(taskID string, err error, permanent bool) {
	if err == nil {
		return
	}
	c.cfg.Logf("task %s: %v", taskID, err)
	c.mu.Lock()
	c.errs[taskID] = err.Error()
	r := c.retry[taskID]
	if !permanent {
		d := c.cfg.RetryBase << min(r.attempts, 20)
		r.attempts++
		r.next = c.cfg.Now().Add(min(d, c.cfg.RetryMax))
		c.retry[taskID] = r
	}
	c.mu.Unlock()
	if !permanent {
		return
	}
	uerr := c.store.db.Update(func(tx *bolt.Tx) error {
		st, err2 := readState(tx, taskID)
		if err2 != nil {
			return err2
		}
		st = failRound(st, err.Error())
		return writeJSONValue(tx.Bucket(bucketState), []byte(taskID), &st)
	})
	if uerr != nil {
		c.cfg.Logf("task %s: recording the failed round: %v", taskID, uerr)
	}
	c.broadcast(taskID)
}

// waitingFor returns the admitted clients of rec without a submission in
// round (sorted, at most MaxWaitingFor) and how many more there are.
func waitingFor(tx *bolt.Tx, rec *taskRecord, round int) ([]string, int) {
	var out []string
	more := 0
	ids := make([]string, 0, len(rec.Clients))
	for id := range rec.Clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if _, ok, err := readSub(tx, rec.Spec.ID, round, id); err == nil && !ok {
			if len(out) < MaxWaitingFor {
				out = append(out, id)
			} else {
				more++
			}
		}
	}
	return out, more
}

// waiter returns the channel closed at the next round change of a task.
func (c *Coordinator) waiter(taskID string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.notify[taskID]
	if ch == nil {
		ch = make(chan struct{})
		c.notify[taskID] = ch
	}
	return ch
}

func (c *Coordinator) broadcast(taskID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch := c.notify[taskID]; ch != nil {
		close(ch)
		delete(c.notify, taskID)
	}
}

// GetFused returns the fused result of a round, waiting up to wait (capped
// by MaxWait) for it to be produced.
func (c *Coordinator) GetFused(ctx context.Context, cred Credentials, taskID, clientID string, round int, wait time.Duration) (FusedStatus, error) {
	rec, err := c.authenticate(cred, taskID, clientID)
	if err != nil {
		return FusedStatus{}, err
	}
	if round < 1 || round > rec.Spec.Rounds {
		return FusedStatus{}, errorf(CodeInvalidArgument, "round %d: task %s has rounds 1..%d", round, taskID, rec.Spec.Rounds)
	}
	wait = min(max(wait, 0), c.cfg.MaxWait)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		ch := c.waiter(taskID)
		var fs FusedStatus
		var failed string
		err := c.store.db.View(func(tx *bolt.Tx) error {
			fs = FusedStatus{Quorum: rec.Spec.Quorum}
			fr, ok, err := readFused(tx, taskID, round)
			if err != nil {
				return err
			}
			fs.Ready, fs.Result = ok, fr
			if st, err := readState(tx, taskID); err == nil && !ok && st.Round == round && st.Failed != "" {
				failed = st.Failed
			}
			fs.Submissions = countSubs(tx, taskID, round)
			if !ok {
				fs.WaitingFor, fs.WaitingForMore = waitingFor(tx, rec, round)
			}
			return nil
		})
		if err != nil {
			return FusedStatus{}, internal(err)
		}
		if fs.Ready {
			return fs, nil
		}
		if failed != "" {
			return fs, errorf(CodeFailedPrecondition, "task %s round %d cannot be fused: %s", taskID, round, failed)
		}
		select {
		case <-ch:
		case <-timer.C:
			return fs, nil
		case <-ctx.Done():
			return fs, nil
		case <-c.stop:
			return fs, errorf(CodeUnavailable, "server is shutting down")
		}
	}
}

// Status summarises every task. When an admin token is configured, cred
// must carry it.
func (c *Coordinator) Status(ctx context.Context, cred Credentials) ([]TaskStatus, error) {
	if c.cfg.AdminToken == "" && !c.cfg.OpenStatus {
		return nil, errorf(CodePermissionDenied, "this server has no admin token; read its status offline with \"fedirl server status --store\"")
	}
	if c.cfg.AdminToken != "" && !c.isAdmin(cred) {
		return nil, errorf(CodeUnauthenticated, "status requires the admin token")
	}
	var out []TaskStatus
	err := c.store.db.View(func(tx *bolt.Tx) error {
		for _, id := range taskIDs(tx) {
			c.mu.Lock()
			seen := make(map[string]bool, len(c.seen[id]))
			for k := range c.seen[id] {
				seen[k] = true
			}
			lastErr := c.errs[id]
			c.mu.Unlock()
			ts := taskStatus(tx, id, seen)
			if ts.Error == "" {
				ts.Error = lastErr
			}
			out = append(out, ts)
		}
		return nil
	})
	if err != nil {
		return nil, internal(err)
	}
	return out, nil
}

// internal wraps a store failure as a federation error, keeping *Error as is.
func internal(err error) error {
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	// File errors (a full disk, a vanished store) name the server's files;
	// a client is told what failed, not where.
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &Error{Code: CodeInternal, Msg: fmt.Sprintf("the server could not store the request: %s: %v", pe.Op, pe.Err)}
	}
	return &Error{Code: CodeInternal, Msg: err.Error()}
}
