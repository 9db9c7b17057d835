package federation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/fedirl/fedirl/pkg/privacy"
)

// RetryConfig is the client's back-off policy for transient failures
// (server unreachable or restarting). Zero values are documented defaults.
type RetryConfig struct {
	Initial time.Duration // first back-off (default 50 ms)
	Max     time.Duration // back-off cap (default 2 s)
	// Attempts bounds the tries of one call; 0 means retry until ctx ends.
	Attempts int
}

// ClientConfig configures RunClient. Zero values are documented defaults.
type ClientConfig struct {
	TaskID   string
	ClientID string
	Retry    RetryConfig
	// PollWait is how long one GetFused call may wait on the server (default 10 s).
	PollWait time.Duration
	// BeforeSubmit, if set, runs after local learning (and, with privacy,
	// after the noised θ is drawn and recorded in the ledger) and before
	// submitting (used to simulate a client that disappears mid-run).
	BeforeSubmit func(ctx context.Context, round int) error
	// Logf receives progress lines (default: discarded).
	Logf func(format string, args ...any)
	// Privacy, when set, releases every learned θ_i through the clip-and-noise
	// Gaussian mechanism (pkg/privacy) before it leaves the client and
	// declares the mechanism with the submission; the submission's
	// demonstration count, iterations and gradient norm, which the mechanism
	// does not cover, are then sent as 0. A task that requires
	// privacy (TaskSpec.Privacy) is refused locally, before learning, when
	// Privacy is nil or too weak.
	Privacy *ClientPrivacy
}

// ClientPrivacy configures a client's local differential privacy.
type ClientPrivacy struct {
	// Params are ε, δ (for the whole task), the clipping norm C and the
	// conversion; Rounds 0 means the task's number of rounds, and fewer
	// rounds than the task has are refused. Clip 0 means the task's C
	// (TaskSpec.Privacy.Clip); a Clip other than the task's is refused
	// before anything is learned.
	Params privacy.Params
	// Noise is the noise source; nil means privacy.CryptoSource(). Studies
	// and tests pass a seeded *rand.Rand. The noise of a round is drawn once,
	// so a retried submission resends the same θ.
	Noise privacy.Source
	// Ledger, when set, makes the release of each round happen once
	// whatever happens to the process: the task is begun in the ledger
	// before anything is learned, each round's noised θ is recorded there
	// (fsynced) before it is sent, and a round already in the ledger is
	// re-sent byte for byte, without learning or drawing noise again. A
	// client without a ledger that is restarted draws fresh noise: a second
	// release (fedirl client therefore requires one).
	Ledger *privacy.Ledger
	// Budget, when set (it needs Ledger), refuses, before anything is
	// learned or sent, a task that would take the exact composition of every
	// release committed in the ledger above it.
	Budget *privacy.Budget
}

// SpecFingerprint returns the hex SHA-256 of spec's JSON encoding: what a
// client's privacy ledger records to tell a task from another with the same
// id. It fails only on a spec whose probe, irl or fusion section is not
// valid JSON (a server that sent a malformed task).
func SpecFingerprint(spec *TaskSpec) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("task %s: the server's task spec does not encode: %w", spec.ID, err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// begin records the task in the client's ledger (checking the budget)
// before anything is learned or sent; a no-op without a ledger.
func (p *ClientPrivacy) begin(spec *TaskSpec, clientID string, m *privacy.Mechanism) error {
	if p.Ledger == nil {
		if p.Budget != nil {
			return errors.New("privacy: a budget needs a ledger (ClientPrivacy.Ledger) to count what was spent")
		}
		return nil
	}
	fp, err := SpecFingerprint(spec)
	if err != nil {
		return err
	}
	err = p.Ledger.Begin(privacy.LedgerTask{Task: spec.ID, Client: clientID, Fingerprint: fp,
		Declaration: m.Declaration(), Started: time.Now().UTC()}, p.Budget)
	if err != nil {
		return fmt.Errorf("task %s: %w", spec.ID, err)
	}
	return nil
}

// mechanism calibrates the client's mechanism for a task, or returns nil
// when the client adds no noise; it refuses (before anything is learned or
// sent) a task whose privacy requirement the client would not meet.
func (p *ClientPrivacy) mechanism(spec *TaskSpec) (*privacy.Mechanism, privacy.Source, error) {
	if p == nil {
		if spec.Privacy != nil {
			return nil, nil, fmt.Errorf("task %s requires (ε ≤ %v, δ ≤ %v)-differential privacy and this client adds no noise (set --dp-epsilon, --dp-delta and --dp-clip)",
				spec.ID, spec.Privacy.MaxEpsilon, spec.Privacy.MaxDelta)
		}
		return nil, nil, nil
	}
	params := p.Params
	if params.Rounds == 0 {
		params.Rounds = spec.Rounds
	}
	var taskClip float64
	if spec.Privacy != nil {
		taskClip = spec.Privacy.Clip
	}
	switch {
	case params.Clip == 0 && taskClip == 0:
		return nil, nil, fmt.Errorf("task %s does not set the clipping norm C: choose one (--dp-clip), from data that is not what the noise protects", spec.ID)
	case params.Clip == 0:
		params.Clip = taskClip
	case taskClip != 0 && params.Clip != taskClip:
		return nil, nil, fmt.Errorf("clipping norm %v (--dp-clip), but task %s sets C = %v: omit --dp-clip to use the task's", params.Clip, spec.ID, taskClip)
	}
	if params.Rounds < spec.Rounds {
		return nil, nil, fmt.Errorf("privacy accounted for %d rounds, task %s has %d", params.Rounds, spec.ID, spec.Rounds)
	}
	m, err := privacy.New(params)
	if err != nil {
		return nil, nil, fmt.Errorf("privacy: %w", err)
	}
	if spec.Privacy != nil {
		d := m.Declaration()
		if err := spec.Privacy.Check(&d, spec.Rounds); err != nil {
			return nil, nil, fmt.Errorf("task %s: %w", spec.ID, err)
		}
	}
	src := p.Noise
	if src == nil {
		src = privacy.CryptoSource()
	}
	return m, src, nil
}

// RoundReport records one round of a client's run.
type RoundReport struct {
	Round int         `json:"round"`
	Local LocalResult `json:"local"`
	// Sent is the θ that left the client (clipped and noised) when the
	// client runs with Privacy; nil otherwise (Local.Theta was sent).
	Sent []float64 `json:"sent_theta,omitempty"`
	// SentReward is Sent for a client that submits its reward on the probe
	// (Local.Reward) instead of θ.
	SentReward []float64 `json:"sent_reward,omitempty"`
	// Resent marks a round whose release was found in the privacy ledger
	// (an earlier run of the client released it) and sent again as it was:
	// nothing was learned (Local is empty) and no noise drawn.
	Resent bool         `json:"resent,omitempty"`
	Submit SubmitResult `json:"submit"`
	Fused  FusedResult  `json:"fused"`
}

// ClientReport is the outcome of RunClient.
type ClientReport struct {
	TaskID   string        `json:"task_id"`
	ClientID string        `json:"client_id"`
	Rounds   []RoundReport `json:"rounds"`
	Final    FusedResult   `json:"final"`
}

// retryable reports whether err is worth retrying: the server is
// unreachable, restarting or the call timed out.
func retryable(err error) bool {
	return CodeOf(err) == CodeUnavailable && !errors.Is(err, context.Canceled)
}

// withRetry runs f until it succeeds, fails permanently, or ctx ends.
func withRetry[T any](ctx context.Context, rc RetryConfig, rng *rand.Rand, logf func(string, ...any), what string, f func(context.Context) (T, error)) (T, error) {
	backoff := rc.Initial
	for attempt := 1; ; attempt++ {
		v, err := f(ctx)
		if err == nil || !retryable(err) || (rc.Attempts > 0 && attempt >= rc.Attempts) {
			return v, err
		}
		if ctx.Err() != nil {
			return v, fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		}
		sleep := backoff/2 + time.Duration(rng.Int64N(int64(backoff/2)+1)) // jittered
		logf("%s failed (%v); retrying in %v", what, err, sleep.Round(time.Millisecond))
		select {
		case <-time.After(sleep):
		case <-ctx.Done():
			return v, fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		}
		backoff = min(2*backoff, rc.Max)
	}
}

// RunClient is the client core shared by every transport: it fetches the
// task, and for each remaining round learns θ_i locally (warm-started from
// the previous fused θ when the task asks), submits it with retries (the
// submission is idempotent, so a retry after a lost reply is safe), and
// waits for the fused θ.
func RunClient(ctx context.Context, fed Federation, learner Learner, cfg ClientConfig) (ClientReport, error) {
	if cfg.Retry.Initial <= 0 {
		cfg.Retry.Initial = 50 * time.Millisecond
	}
	if cfg.Retry.Max <= 0 {
		cfg.Retry.Max = 2 * time.Second
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = 10 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	h := fnv.New64a()
	h.Write([]byte(cfg.ClientID))
	rng := rand.New(rand.NewPCG(h.Sum64(), 1)) // jitter only; never affects results
	rep := ClientReport{TaskID: cfg.TaskID, ClientID: cfg.ClientID}

	info, err := withRetry(ctx, cfg.Retry, rng, cfg.Logf, "fetching task", func(ctx context.Context) (TaskInfo, error) {
		return fed.GetTask(ctx, cfg.TaskID, cfg.ClientID)
	})
	if err != nil {
		return rep, fmt.Errorf("task %s: %w", cfg.TaskID, err)
	}
	cfg.Logf("task %s: %s, theta_dim %d, round %d of %d, quorum %d", cfg.TaskID, info.Spec.EnvFamily,
		info.Spec.ThetaDim, info.CurrentRound, info.Spec.Rounds, info.Spec.Quorum)
	mech, noise, err := cfg.Privacy.mechanism(&info.Spec)
	if err != nil {
		return rep, err
	}
	if mech != nil {
		d := mech.Declaration()
		cfg.Logf("privacy: (ε = %v, δ = %v) over %d rounds, clip %v, noise multiplier %.6g (std %.6g per component, %s accounting)",
			d.Epsilon, d.Delta, d.Rounds, d.Clip, d.Sigma, d.NoiseStd(), d.Conversion)
		if !info.Done { // a finished task releases nothing more: nothing to enter
			if err := cfg.Privacy.begin(&info.Spec, cfg.ClientID, mech); err != nil {
				return rep, err
			}
		}
	}
	if info.Joint {
		return runJoint(ctx, fed, learner, cfg, info, mech, noise, rng, rep)
	}
	warm := info.WarmStart
	round := info.CurrentRound
	if info.Done {
		// Everything is fused already: just fetch the last result.
		round = info.Spec.Rounds
	}
	for ; round <= info.Spec.Rounds; round++ {
		rr := RoundReport{Round: round}
		if !info.Done {
			var prior *privacy.Release
			if mech != nil && cfg.Privacy.Ledger != nil {
				if prior, err = cfg.Privacy.Ledger.Released(cfg.TaskID, cfg.ClientID, round); err != nil {
					return rep, fmt.Errorf("task %s round %d: %w", cfg.TaskID, round, err)
				}
			}
			var sub Submission
			if prior != nil {
				// Released by an earlier run: send the same bytes again.
				d := prior.Declaration
				sub = Submission{TaskID: cfg.TaskID, Round: round, ClientID: cfg.ClientID, Theta: prior.Theta, Reward: prior.Reward, Privacy: &d}
				rr.Sent, rr.SentReward, rr.Resent = slices.Clone(prior.Theta), slices.Clone(prior.Reward), true
				cfg.Logf("round %d: re-sending the %s released at %s (privacy ledger; no new noise)", round, sub.kind(), prior.ReleasedAt.Format(time.RFC3339))
			} else {
				if !info.Spec.WarmStart {
					warm = nil
				}
				local, err := learner.Learn(ctx, info.Spec, warm)
				if err != nil {
					return rep, fmt.Errorf("task %s round %d: local learning: %w", cfg.TaskID, round, err)
				}
				if len(local.Reward) > 0 && len(local.Theta) > 0 {
					return rep, fmt.Errorf("task %s round %d: the learner returned both theta and a reward; a submission carries one", cfg.TaskID, round)
				}
				rr.Local = local
				sub = Submission{TaskID: cfg.TaskID, Round: round, ClientID: cfg.ClientID, Theta: local.Theta, Reward: local.Reward,
					DemoCount: local.DemoCount, Iterations: local.Iterations, GradNorm: local.GradNorm}
				if local.Converged {
					cfg.Logf("round %d: learned %s (%d demos, %d iterations, grad norm %.3g, converged)", round, sub.kind(), local.DemoCount, local.Iterations, local.GradNorm)
				} else {
					cfg.Logf("round %d: learned %s (%d demos, %d iterations, grad norm %.3g); warning: local fit not converged: %s",
						round, sub.kind(), local.DemoCount, local.Iterations, local.GradNorm, local.stopReason())
				}
				if mech != nil {
					d := mech.Declaration()
					// The same mechanism for θ and for a reward vector: clipped
					// to L2 norm C, N(0, (σ·2C)² I) added; replacing the client's
					// data moves the clipped vector by at most 2C, whatever its
					// length, so the sensitivity is 2C either way.
					if len(local.Reward) > 0 {
						sub.Reward = mech.Release(nil, local.Reward, noise)
					} else {
						sub.Theta = mech.Release(nil, local.Theta, noise)
					}
					sub.Privacy = &d
					// The mechanism covers θ (or the reward) only: the data-dependent
					// metadata stays home (a "demos" weighting then falls back to uniform).
					sub.DemoCount, sub.Iterations, sub.GradNorm = 0, 0, 0
					rr.Sent, rr.SentReward = slices.Clone(sub.Theta), slices.Clone(sub.Reward)
					if l := cfg.Privacy.Ledger; l != nil {
						// Durable before it leaves: a crash from here on re-sends these bytes.
						err := l.Record(privacy.Release{Task: cfg.TaskID, Client: cfg.ClientID, Round: round,
							Mechanism: privacy.MechanismGaussian, Declaration: d, Theta: rr.Sent, Reward: rr.SentReward, ReleasedAt: time.Now().UTC()})
						if err != nil {
							return rep, fmt.Errorf("task %s round %d: nothing sent: %w", cfg.TaskID, round, err)
						}
					}
				}
				if cfg.BeforeSubmit != nil {
					if err := cfg.BeforeSubmit(ctx, round); err != nil {
						return rep, err
					}
				}
			}
			res, err := withRetry(ctx, cfg.Retry, rng, cfg.Logf, "submitting", func(ctx context.Context) (SubmitResult, error) {
				return fed.Submit(ctx, sub)
			})
			switch {
			case CodeOf(err) == CodeFailedPrecondition:
				cfg.Logf("round %d: submission not taken: %v", round, err)
			case CodeOf(err) == CodeAlreadyExists && sub.Privacy != nil:
				return rep, fmt.Errorf("task %s round %d: the server holds another theta of this client for the round (released by a run without this privacy ledger?); this run's theta is recorded as released but was not accepted: %w", cfg.TaskID, round, err)
			case err != nil:
				return rep, fmt.Errorf("task %s round %d: %w", cfg.TaskID, round, err)
			default:
				rr.Submit = res
				cfg.Logf("round %d: submitted (%s)", round, res.Message)
				if mech != nil && cfg.Privacy.Ledger != nil {
					if err := cfg.Privacy.Ledger.Acknowledge(cfg.TaskID, cfg.ClientID, round, time.Now()); err != nil {
						return rep, fmt.Errorf("task %s round %d: %w", cfg.TaskID, round, err)
					}
				}
			}
		}
		fr, err := waitFused(ctx, fed, cfg, rng, round)
		if err != nil {
			return rep, err
		}
		rr.Fused = fr
		cfg.Logf("round %d: fused theta from %d clients by %s", round, len(rr.Fused.Clients), rr.Fused.Method)
		rep.Rounds = append(rep.Rounds, rr)
		rep.Final = rr.Fused
		warm = rr.Fused.Theta
	}
	return rep, nil
}

// waitFused fetches the fused result of a round, waiting for it.
func waitFused(ctx context.Context, fed Federation, cfg ClientConfig, rng *rand.Rand, round int) (FusedResult, error) {
	for {
		// Ask the server to answer before our own deadline, so that a
		// client that gives up can still say what it was waiting for.
		wait := cfg.PollWait
		if dl, ok := ctx.Deadline(); ok {
			wait = max(0, min(wait, time.Until(dl)-250*time.Millisecond))
		}
		fs, err := withRetry(ctx, cfg.Retry, rng, cfg.Logf, "fetching fused theta", func(ctx context.Context) (FusedStatus, error) {
			return fed.GetFused(ctx, cfg.TaskID, cfg.ClientID, round, wait)
		})
		if err != nil {
			return FusedResult{}, fmt.Errorf("task %s round %d: %w", cfg.TaskID, round, err)
		}
		if fs.Ready {
			return fs.Result, nil
		}
		if ctx.Err() != nil || wait == 0 {
			if ctx.Err() == nil {
				<-ctx.Done()
			}
			return FusedResult{}, fmt.Errorf("task %s round %d: gave up waiting for fusion (%d/%d submitted%s): %w", cfg.TaskID, round, fs.Submissions, fs.Quorum, waitingText(fs), ctx.Err())
		}
		cfg.Logf("round %d: waiting for fusion (%d/%d submitted%s)", round, fs.Submissions, fs.Quorum, waitingText(fs))
	}
}

// waitingText names the clients a round still waits for, e.g.
// "; waiting for bob, carol and 3 more".
func waitingText(fs FusedStatus) string {
	if len(fs.WaitingFor) == 0 {
		return ""
	}
	s := "; waiting for " + strings.Join(fs.WaitingFor, ", ")
	if fs.WaitingForMore > 0 {
		s += fmt.Sprintf(" and %d more", fs.WaitingForMore)
	}
	return s
}
