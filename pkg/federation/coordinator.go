package federation

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fedirl/fedirl/pkg/privacy"
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
	// Limits bounds the tasks CreateTask accepts (zero fields: defaults);
	// the Fuser checks the family-specific bounds with its own copy.
	Limits Limits
	// RetryBase and RetryMax bound the exponential back-off between attempts
	// of a fusion that failed transiently (defaults 250 ms and 1 min).
	RetryBase, RetryMax time.Duration
	// CentralNoise is the noise source of central privacy
	// (TaskSpec.CentralPrivacy); nil means privacy.CryptoSource(). Tests
	// pass a seeded *rand.Rand; draws are serialised by the coordinator.
	CentralNoise privacy.Source
	// MaxMessageBytes, when > 0, is the transport's limit on one request
	// (the gRPC server's --max-message-bytes): a joint task whose round
	// submission (d + d² numbers and the echoed θ) cannot fit is refused at
	// creation instead of failing every client's first round.
	MaxMessageBytes int
}

// ErrTransient is wrapped by a Fuser's error when the same fusion may succeed
// if tried again later (e.g. a resource was briefly unavailable). Any other
// error marks the round failed: clients are told why instead of waiting.
var ErrTransient = errors.New("transient fusion failure")

// Coordinator is the transport-independent server core: it authenticates
// and validates requests, records submissions idempotently in its store,
// fuses each round when its quorum is reached (or at the deadline with at
// least MinClients), advances rounds and serves fused results. It is safe for
// concurrent use.
type Coordinator struct {
	store roundStore
	cfg   CoordinatorConfig

	mu     sync.Mutex
	tasks  map[string]*taskRecord     // immutable task records, cached
	notify map[string]chan struct{}   // closed when a task's round changes
	seen   map[string]map[string]bool // task -> clients seen since start
	errs   map[string]string          // task -> last fusion error
	fusing map[string]bool            // tasks with a fusion running in this process
	retry  map[string]retryState      // tasks whose last fusion failed transiently
	// tokens maps the token hash of every client of every readable task to
	// its owner: the gRPC adapter refuses a call whose token is not among
	// them at its headers, before reading its request, and accounts the
	// connection's place to the owner.
	tokens map[string]tokenOwner
	// revoked maps the hash of every revoked or rotated token to the reason
	// its calls are refused with.
	revoked map[string]string
	// done holds the tasks whose last round is fused: their tokens still
	// read results but no longer hold an authenticated place.
	done     map[string]bool
	revokeMu sync.Mutex // serialises revocations
	// privacy is the privacy released so far by each task that sets
	// privacy or central_privacy (metrics).
	privacy map[string]privacySpent
	// corrupt maps tasks whose record or round state cannot be read to the
	// store's error, found at start-up (logged, counted by the metrics and
	// never shown to callers).
	corrupt map[string]string

	noiseMu sync.Mutex // serialises draws from cfg.CentralNoise

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
	return newCoordinator(store, cfg)
}

// newCoordinator is NewCoordinator on any roundStore (the in-memory one of
// RunInProcess).
func newCoordinator(store roundStore, cfg CoordinatorConfig) (*Coordinator, error) {
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
	if cfg.CentralNoise == nil {
		cfg.CentralNoise = privacy.CryptoSource()
	}
	c := &Coordinator{store: store, cfg: cfg, tasks: map[string]*taskRecord{},
		notify: map[string]chan struct{}{}, seen: map[string]map[string]bool{},
		errs: map[string]string{}, fusing: map[string]bool{}, retry: map[string]retryState{},
		tokens: map[string]tokenOwner{}, revoked: map[string]string{}, done: map[string]bool{}, privacy: map[string]privacySpent{}, corrupt: map[string]string{}, stop: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if err := c.scanTasks(); err != nil {
		return nil, err
	}
	if cfg.Metrics != nil {
		cfg.Metrics.coord.Store(c)
	}
	c.checkDeadlines()
	c.wg.Add(1)
	go c.loop()
	return c, nil
}

// scanTasks reads every task record at start-up: readable ones are cached
// and their clients' token hashes indexed; a record or round state that
// cannot be read is logged and remembered as corrupt.
func (c *Coordinator) scanTasks() error {
	tasks, err := c.store.listTasks()
	if err != nil {
		return fmt.Errorf("listing the store's tasks: %w", err)
	}
	for _, t := range tasks {
		rec, err := c.store.task(t.ID)
		if err == nil {
			err = t.Err
		}
		if err != nil {
			c.corrupt[t.ID] = err.Error()
			c.cfg.Logf("task %s: corrupt record at start-up: %v; its clients are refused until it is restored or deleted (fedirl server task delete)", t.ID, err)
			continue
		}
		c.tasks[t.ID] = &rec
		c.indexTokens(&rec)
		if t.State.Done {
			c.done[t.ID] = true
		}
		if rec.Spec.Privacy != nil || rec.Spec.CentralPrivacy != nil {
			var p privacySpent
			for r := 1; r <= t.State.Round; r++ {
				if fr, ok, err := c.store.fused(t.ID, r); err == nil && ok {
					p.add(&fr)
				}
			}
			c.privacy[t.ID] = p
		}
	}
	return nil
}

// Corrupt returns the ids of the tasks found unreadable at start-up with the
// store's error for each.
func (c *Coordinator) Corrupt() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.corrupt)
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

// Store returns the coordinator's bbolt store, or nil when it runs on the
// in-memory store of an in-process run.
func (c *Coordinator) Store() *Store {
	s, _ := c.store.(*Store)
	return s
}

// CreateTask defines a task and returns one bearer token per client.
// The task's family must accept the spec (Fuser.Validate), so that a task the
// server could never fuse is refused before anything is stored.
func (c *Coordinator) CreateTask(spec TaskSpec, clients []string) (map[string]string, error) {
	if err := PrepareJointTask(c.cfg.Fuser, &spec, len(clients)); err != nil {
		return nil, &Error{Code: CodeInvalidArgument, Msg: err.Error()}
	}
	if err := checkJointMessage(c.cfg.Fuser, &spec, c.cfg.MaxMessageBytes); err != nil {
		return nil, &Error{Code: CodeInvalidArgument, Msg: err.Error()}
	}
	if err := c.checkFusable(spec); err != nil {
		return nil, err
	}
	tokens, err := createTask(c.store, spec, clients, c.cfg.Now())
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	for client, tok := range tokens {
		c.tokens[HashToken(tok)] = tokenOwner{Task: spec.ID, Client: client}
	}
	if spec.Privacy != nil || spec.CentralPrivacy != nil {
		c.privacy[spec.ID] = privacySpent{}
	}
	c.mu.Unlock()
	return tokens, nil
}

// checkFusable normalizes and validates spec and asks the fuser whether it
// can serve it; errors are CodeInvalidArgument.
func (c *Coordinator) checkFusable(spec TaskSpec) error {
	spec.Normalize()
	if err := spec.Validate(); err != nil {
		return &Error{Code: CodeInvalidArgument, Msg: err.Error()}
	}
	if err := c.cfg.Limits.CheckSpec(&spec); err != nil {
		return &Error{Code: CodeInvalidArgument, Msg: err.Error()}
	}
	if err := c.cfg.Fuser.Validate(spec); err != nil {
		return errorf(CodeInvalidArgument, "task spec %s: %v", spec.ID, err)
	}
	if spec.CentralPrivacy != nil {
		if err := CheckCentralFusion(c.ctx, c.cfg.Fuser, spec); err != nil {
			return errorf(CodeInvalidArgument, "task spec %s: %v", spec.ID, err)
		}
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
	tasks, _ := c.store.listTasks()
	for _, t := range tasks {
		if t.Err != nil {
			continue
		}
		rec, err := c.lookupTask(t.ID)
		if err != nil {
			continue
		}
		if ok, _ := readyToFuse(&rec.Spec, t.State, t.Submissions, now); ok {
			ready = append(ready, t.ID)
		}
	}
	for _, id := range ready {
		c.maybeFuse(id)
	}
}

// lookupTask returns the cached task record of id, reading it from the store
// on first use.
func (c *Coordinator) lookupTask(id string) (*taskRecord, error) {
	c.mu.Lock()
	rec := c.tasks[id]
	c.mu.Unlock()
	if rec != nil {
		return rec, nil
	}
	r, err := c.store.task(id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.tasks[id] = &r
	c.mu.Unlock()
	return &r, nil
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
	if err != nil {
		// Answer an unknown task, or one whose record cannot be read, like a
		// wrong token: task ids cannot be enumerated without credentials and
		// the store's errors are not shown to a caller who cannot be
		// authenticated (tokenMatches still runs, to keep the timing uniform).
		if CodeOf(err) != CodeNotFound {
			c.cfg.Logf("task %s: refusing client %s: the task's record cannot be read: %v", taskID, clientID, err)
		}
		tokenMatches(cred.Token, "0000000000000000000000000000000000000000000000000000000000000000")
		return nil, errorf(CodeUnauthenticated, "invalid token for client %s on task %s", clientID, taskID)
	}
	if len(rec.Revoked) > 0 {
		if r, ok := rec.Revoked[HashToken(cred.Token)]; ok && r.Client == clientID {
			return nil, errorf(CodePermissionDenied, "%s; ask the operator for a new token", r.reason(taskID))
		}
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
	st, err := c.store.state(taskID)
	if err != nil {
		return TaskInfo{}, internal(err)
	}
	info.CurrentRound, info.Done = st.Round, st.Done
	if err := c.jointInfo(rec, st, &info); err != nil {
		return TaskInfo{}, internal(err)
	}
	if rec.Spec.WarmStart && st.Round > 1 {
		fr, ok, err := c.store.fused(taskID, st.Round-1)
		if err != nil {
			return TaskInfo{}, internal(err)
		}
		if ok {
			info.WarmStart = fr.Theta
		}
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
	jc, err := c.jointOf(rec)
	if err != nil {
		return SubmitResult{}, errorf(CodeFailedPrecondition, "task %s: %v", sub.TaskID, err)
	}
	switch {
	case jc != nil:
		if e := c.checkJointSubmission(rec, *jc, &sub); e != nil {
			return SubmitResult{}, e
		}
	case sub.Eval != nil || len(sub.Update) > 0:
		return SubmitResult{}, errorf(CodeInvalidArgument, "task %s fuses each client's θ once: an evaluation (eval) or local update is for a joint task's rounds", sub.TaskID)
	case len(sub.Reward) > 0:
		if e := c.checkReward(&rec.Spec, sub.Reward); e != nil {
			return SubmitResult{}, e
		}
	default:
		if e := validateTheta(&rec.Spec, sub.Theta); e != nil {
			return SubmitResult{}, e
		}
	}
	if e := checkPrivacy(&rec.Spec, sub.Privacy); e != nil {
		return SubmitResult{}, e
	}
	if e := checkDeclared(&rec.Spec, &sub); e != nil {
		return SubmitResult{}, e
	}
	sub.Theta, sub.Reward, sub.Eval, sub.Update = slices.Clone(sub.Theta), slices.Clone(sub.Reward), cloneEval(sub.Eval), slices.Clone(sub.Update)
	if sub.Privacy != nil {
		d := *sub.Privacy
		sub.Privacy = &d
	}
	sub.ReceivedAt = c.cfg.Now().UTC()
	r, err := c.store.recordSubmission(&sub)
	if err != nil {
		return SubmitResult{}, internal(err)
	}
	if refusal := r.Verdict.refusal(r.State, &sub); refusal != nil {
		return SubmitResult{}, refusal
	}
	res := SubmitResult{Round: sub.Round, Quorum: rec.Spec.Quorum, Submissions: r.Submissions, Privacy: sub.Privacy}
	if r.Verdict == Duplicate {
		res.Duplicate = true
		res.Message = fmt.Sprintf("duplicate: already accepted at %s", r.Old.ReceivedAt.Format(time.RFC3339Nano))
		// Every acknowledgement has its line before its reply: a
		// submission stored by a batch whose commit a SIGKILL interrupted
		// before its first line was written is acknowledged (and logged)
		// here, when its client retries after the restart.
		c.cfg.Logf("task %s round %d: accepted %s from %s again (duplicate of the submission stored at %s)", sub.TaskID, sub.Round, sub.kind(), sub.ClientID, r.Old.ReceivedAt.Format(time.RFC3339Nano))
		return res, nil
	}
	res.Message = fmt.Sprintf("accepted %d/%d", res.Submissions, rec.Spec.Quorum)
	c.cfg.Logf("task %s round %d: accepted %s from %s (%d/%d)", sub.TaskID, sub.Round, sub.kind(), sub.ClientID, res.Submissions, rec.Spec.Quorum)
	if fuse, _ := readyToFuse(&rec.Spec, r.State, res.Submissions, c.cfg.Now()); fuse {
		c.maybeFuse(sub.TaskID)
	}
	return res, nil
}

// checkReward checks a reward submission against its task: the fuser must
// fuse rewards and the task's method take them (RewardFuser.RewardSupport),
// the task must not set central privacy (stated for θ), and the vector must
// pass validateReward.
func (c *Coordinator) checkReward(spec *TaskSpec, reward []float64) *Error {
	rf, ok := c.cfg.Fuser.(RewardFuser)
	if !ok {
		return errorf(CodeInvalidArgument, "task %s takes theta only: this server's fuser does not fuse rewards on the probe", spec.ID)
	}
	if spec.CentralPrivacy != nil {
		return errorf(CodeInvalidArgument, "task %s sets central_privacy, which clips and noises theta: submit theta, not a reward", spec.ID)
	}
	points, err := rf.RewardSupport(*spec)
	if err != nil {
		return errorf(CodeInvalidArgument, "task %s takes no reward submissions: %v", spec.ID, err)
	}
	return validateReward(spec, reward, points)
}

// kind returns "reward" for a reward submission, "evaluation" for a joint
// round's, "theta" otherwise.
func (s *Submission) kind() string {
	if s.Eval != nil {
		return "evaluation"
	}
	if len(s.Reward) > 0 {
		return "reward"
	}
	return "theta"
}

func sameSubmission(a, b *Submission) bool {
	if a.DemoCount != b.DemoCount || a.Iterations != b.Iterations ||
		math.Float64bits(a.GradNorm) != math.Float64bits(b.GradNorm) {
		return false
	}
	if (a.Privacy == nil) != (b.Privacy == nil) || (a.Privacy != nil && *a.Privacy != *b.Privacy) {
		return false
	}
	return equalBits(a.Theta, b.Theta) && equalBits(a.Reward, b.Reward) && sameEval(a.Eval, b.Eval) && equalBits(a.Update, b.Update)
}

// equalBits reports whether a and b hold the same float64 bits.
func equalBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
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
	rec, err := c.lookupTask(taskID)
	if err != nil {
		c.fusionFailed(taskID, err, false)
		return
	}
	spec := rec.Spec
	snap, err := c.store.beginFusing(&spec, c.cfg.Now())
	round, trigger, subs := snap.Round, snap.Trigger, snap.Subs
	if err != nil || subs == nil {
		c.fusionFailed(taskID, err, false)
		return
	}
	if jc, err := c.jointOf(rec); err != nil || jc != nil {
		if err != nil {
			c.fusionFailed(taskID, fmt.Errorf("task %s round %d: %w", taskID, round, err), true)
			return
		}
		c.fuseJoint(spec, *jc, snap)
		return
	}
	thetas := make([][]float64, len(subs))
	clients := make([]string, len(subs))
	demos := make([]int, len(subs))
	var priv []privacy.Declaration
	var rewards [][]float64 // nil unless some client submitted a reward
	var rewardClients []string
	points := 0 // the probe support's size, from the reward submissions
	for i := range subs {
		thetas[i], clients[i], demos[i] = subs[i].Theta, subs[i].ClientID, subs[i].DemoCount
		if r := subs[i].Reward; len(r) > 0 {
			if rewards == nil {
				rewards = make([][]float64, len(subs))
			}
			thetas[i], rewards[i], points = nil, r, len(r)
			rewardClients = append(rewardClients, subs[i].ClientID)
		}
		if d := subs[i].Privacy; d != nil {
			if priv == nil {
				priv = make([]privacy.Declaration, len(subs))
			}
			priv[i] = *d
		}
	}
	start := time.Now()
	var out FuseOutput
	var central *privacy.CentralRelease
	rf, rewardFuser := c.cfg.Fuser.(RewardFuser)
	switch {
	case rewards != nil && (spec.CentralPrivacy != nil || !rewardFuser):
		// Refused at submission; a store written by another server could hold them.
		err = fmt.Errorf("the round holds reward submissions (%s), which this task cannot fuse", strings.Join(rewardClients, ", "))
	case rewards != nil:
		out, err = rf.FuseRewards(c.ctx, spec, thetas, rewards, demos)
	case spec.CentralPrivacy != nil:
		out, central, err = c.fuseCentral(spec, thetas)
	default:
		out, err = c.cfg.Fuser.Fuse(c.ctx, spec, thetas, demos)
	}
	if err == nil {
		if e := validateTheta(&TaskSpec{ID: taskID, ThetaDim: spec.ThetaDim, MaxThetaNorm: math.Inf(1)}, out.Theta); e != nil {
			err = fmt.Errorf("fuser returned bad theta: %s", e.Msg)
		} else if len(out.Weights) != len(subs) {
			err = fmt.Errorf("fuser returned %d weights for %d submissions", len(out.Weights), len(subs))
		} else if out.OutlierScores != nil && len(out.OutlierScores) != len(subs) {
			err = fmt.Errorf("fuser returned %d outlier scores for %d submissions", len(out.OutlierScores), len(subs))
		} else if rewards != nil {
			if e := validateReward(&TaskSpec{ID: taskID, MaxRewardNorm: math.Inf(1)}, out.Reward, points); e != nil {
				err = fmt.Errorf("fuser returned a bad fused reward: %s", e.Msg)
			}
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
		Trigger: trigger, FusedAt: c.cfg.Now().UTC(), Privacy: priv, OutlierScores: out.OutlierScores, Central: central,
		Warning: outlierWarning(clients, out.OutlierScores, out.OutlierThreshold)}
	if rewards != nil {
		fr.Reward, fr.RewardClients = out.Reward, rewardClients
	}
	if err := c.store.commitFusion(&spec, &fr); err != nil {
		c.fusionFailed(taskID, fmt.Errorf("storing the fusion of task %s round %d: %w", taskID, round, err), false)
		return
	}
	c.mu.Lock()
	if spec.Privacy != nil || spec.CentralPrivacy != nil {
		p := c.privacy[taskID]
		p.add(&fr)
		c.privacy[taskID] = p
	}
	c.mu.Unlock()
	if st, err := c.store.state(taskID); err == nil && st.Done {
		c.mu.Lock()
		c.done[taskID] = true
		c.mu.Unlock()
	}
	c.cfg.Metrics.fusion("fused", time.Since(start))
	c.cfg.Metrics.outliers(taskID, clients, out.OutlierScores)
	c.mu.Lock()
	delete(c.errs, taskID)
	delete(c.retry, taskID)
	c.mu.Unlock()
	c.cfg.Logf("task %s round %d: fused %d clients by %s (%s) in %s, marginal error %.3g",
		taskID, round, len(clients), fr.Method, trigger, time.Since(start).Round(time.Millisecond), fr.MarginalError)
	if fr.Warning != "" {
		c.cfg.Logf("task %s round %d: warning: %s", taskID, round, fr.Warning)
	}
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
	if uerr := c.store.failRound(taskID, err.Error()); uerr != nil {
		c.cfg.Logf("task %s: recording the failed round: %v", taskID, uerr)
	}
	c.broadcast(taskID)
}

// waitingFor returns the admitted clients of rec not in submitted (sorted
// ids of the clients with a submission in the round), sorted, at most
// MaxWaitingFor, and how many more there are.
func waitingFor(rec *taskRecord, submitted []string) ([]string, int) {
	var out []string
	more := 0
	ids := make([]string, 0, len(rec.Clients))
	for id := range rec.Clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if _, ok := slices.BinarySearch(submitted, id); !ok {
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
		fs, failed, err := c.fusedStatus(rec, round)
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

// fusedStatus reads a round's fused result, or its submissions and who it
// waits for; failed is why the round cannot be fused, if it failed.
func (c *Coordinator) fusedStatus(rec *taskRecord, round int) (fs FusedStatus, failed string, err error) {
	id := rec.Spec.ID
	fs = FusedStatus{Quorum: rec.Spec.Quorum}
	if fs.Result, fs.Ready, err = c.store.fused(id, round); err != nil {
		return FusedStatus{}, "", err
	}
	if !fs.Ready {
		if st, err := c.store.state(id); err == nil && st.Round == round && st.Failed != "" {
			failed = st.Failed
		}
	}
	submitted, err := c.store.submitters(id, round)
	if err != nil {
		return FusedStatus{}, "", err
	}
	fs.Submissions = len(submitted)
	if !fs.Ready {
		fs.WaitingFor, fs.WaitingForMore = waitingFor(rec, submitted)
	}
	return fs, failed, nil
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
	out, err := c.store.statuses()
	if err != nil {
		return nil, internal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range out {
		ts := &out[i]
		if ts.Round > 0 { // record and state readable: add the clients seen since start
			ts.ClientsSeen = mergeSeen(ts.ClientsSeen, c.seen[ts.ID])
		}
		if ts.Error == "" {
			ts.Error = c.errs[ts.ID]
		}
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

// outlierWarning is FusedResult.Warning: the clients whose score exceeds
// threshold (> 0), with their scores, or "" when none does.
func outlierWarning(clients []string, scores []float64, threshold float64) string {
	if !(threshold > 0) || len(scores) != len(clients) {
		return ""
	}
	var named []string
	for i, s := range scores {
		if s > threshold {
			named = append(named, fmt.Sprintf("%s (%.3g)", clients[i], s))
		}
	}
	switch len(named) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("outlier score above %g for client %s: the fused result may be dominated by this client; check its submission before using the result", threshold, named[0])
	}
	return fmt.Sprintf("outlier scores above %g for %d clients, %s: the fused result may be dominated by them; check their submissions before using the result",
		threshold, len(named), strings.Join(named, ", "))
}
