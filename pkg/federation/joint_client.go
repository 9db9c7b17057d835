package federation

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fedirl/fedirl/pkg/jointopt"
	"github.com/fedirl/fedirl/pkg/privacy"
)

// runJoint is RunClient for a joint task (info.Joint): each round it
// evaluates its objective at the round's trial θ (JointLearner), sends the
// evaluation (clipped and noised as one vector, and recorded in the
// ledger first, under ClientConfig.Privacy), waits for the round to close
// and continues at the next trial θ until the server's iteration ends. A
// restarted client resumes at the task's open round; a round already in
// its privacy ledger is re-sent byte for byte.
func runJoint(ctx context.Context, fed Federation, learner Learner, cfg ClientConfig, info TaskInfo,
	mech *privacy.Mechanism, noise privacy.Source, rng *rand.Rand, rep ClientReport) (ClientReport, error) {
	if r, ok := learner.(JointRefuser); ok {
		if err := r.RefuseJoint(info.Spec); err != nil {
			return rep, fmt.Errorf("task %s: %w", cfg.TaskID, err)
		}
	}
	jl, ok := learner.(JointLearner)
	if !ok {
		return rep, fmt.Errorf("task %s runs gradient/Hessian rounds (joint) and this client's learner evaluates no objective (no JointLearner)", cfg.TaskID)
	}
	if _, ok := learner.(JointUpdater); info.JointUpdate && !ok {
		return rep, fmt.Errorf("task %s runs local-update rounds (fedavg/fedprox) and this client's learner takes no local steps (no JointUpdater)", cfg.TaskID)
	}
	d := info.Spec.ThetaDim
	round, trial, done := info.CurrentRound, info.Trial, info.Done
	for {
		rr := RoundReport{Round: round}
		if !done {
			if len(trial) != d {
				return rep, fmt.Errorf("task %s round %d: the server sent a trial θ of %d components, the task has %d", cfg.TaskID, round, len(trial), d)
			}
			sub, err := jointSubmission(ctx, jl, cfg, info, round, trial, mech, noise, &rr)
			if err != nil {
				return rep, err
			}
			res, err := withRetry(ctx, cfg.Retry, rng, cfg.Logf, "submitting", func(ctx context.Context) (SubmitResult, error) {
				return fed.Submit(ctx, sub)
			})
			switch {
			case CodeOf(err) == CodeFailedPrecondition:
				cfg.Logf("round %d: evaluation not taken: %v", round, err)
			case err != nil:
				return rep, fmt.Errorf("task %s round %d: %w", cfg.TaskID, round, err)
			default:
				rr.Submit = res
				cfg.Logf("round %d: submitted evaluation (%s)", round, res.Message)
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
		if fr.Joint == nil {
			return rep, fmt.Errorf("task %s round %d: the server's result is no joint round", cfg.TaskID, round)
		}
		rr.Fused = fr
		rep.Rounds = append(rep.Rounds, rr)
		rep.Final = fr
		if done || fr.Joint.Done {
			cfg.Logf("round %d: joint rounds ended (%s) after %d steps, ‖∇F‖ %.3g", round, fr.Joint.Reason, fr.Joint.Steps, fr.Joint.GradNorm)
			return rep, nil
		}
		cfg.Logf("round %d: F %.12g, ‖∇F‖ %.3g", round, fr.Joint.Value, fr.Joint.GradNorm)
		round, trial = round+1, fr.Joint.Next
	}
}

// jointSubmission is the client's submission of a joint round: its
// evaluation at trial, or, with privacy, the clip-and-noise release of the
// packed evaluation, recorded in the ledger before it is returned (a round
// the ledger already holds is re-sent as it was, nothing evaluated or
// drawn). The demonstration count, which the mechanism does not cover, is
// then 0.
func jointSubmission(ctx context.Context, jl JointLearner, cfg ClientConfig, info TaskInfo, round int, trial []float64,
	mech *privacy.Mechanism, noise privacy.Source, rr *RoundReport) (Submission, error) {
	spec, d := info.Spec, info.Spec.ThetaDim
	sub := Submission{TaskID: cfg.TaskID, Round: round, ClientID: cfg.ClientID, Theta: slices.Clone(trial)}
	if mech != nil && cfg.Privacy.Ledger != nil {
		prior, err := cfg.Privacy.Ledger.Released(cfg.TaskID, cfg.ClientID, round)
		if err != nil {
			return sub, fmt.Errorf("task %s round %d: %w", cfg.TaskID, round, err)
		}
		if prior != nil {
			e, u, err := unpackRelease(prior.Joint, d, info.JointUpdate)
			if err != nil {
				return sub, fmt.Errorf("task %s round %d: the privacy ledger's release: %w", cfg.TaskID, round, err)
			}
			if !equalBits(prior.Theta, trial) {
				return sub, fmt.Errorf("task %s round %d: the privacy ledger holds a release at another θ than the round's trial point", cfg.TaskID, round)
			}
			decl := prior.Declaration
			sub.Eval, sub.Update, sub.Privacy, rr.Resent = &e, u, &decl, true
			rr.Sent = slices.Clone(prior.Joint)
			cfg.Logf("round %d: re-sending the evaluation released at %s (privacy ledger; no new noise)", round, prior.ReleasedAt.Format(time.RFC3339))
			return sub, nil
		}
	}
	var ev jointopt.Eval
	var n int
	var err error
	if info.JointUpdate {
		if sub.Update, ev, n, err = jl.(JointUpdater).LocalUpdate(ctx, spec, trial); err != nil {
			return sub, fmt.Errorf("task %s round %d: local update: %w", cfg.TaskID, round, err)
		}
		ev.Hess = nil
		if err := checkUpdateEval(&ev, d); err != nil || len(sub.Update) != d {
			return sub, fmt.Errorf("task %s round %d: the learner's local update (%d components): %v", cfg.TaskID, round, len(sub.Update), err)
		}
	} else {
		if ev, n, err = jl.Evaluate(ctx, spec, trial); err != nil {
			return sub, fmt.Errorf("task %s round %d: evaluating the objective: %w", cfg.TaskID, round, err)
		}
		if err := ev.Check(d); err != nil {
			return sub, fmt.Errorf("task %s round %d: the learner's evaluation: %w", cfg.TaskID, round, err)
		}
	}
	sub.Eval, sub.DemoCount = &ev, n
	rr.Local = LocalResult{DemoCount: n, GradNorm: norm2(ev.Grad)} // no local fit: its own gradient norm at the trial, kept in its report
	if mech != nil {
		decl := mech.Declaration()
		// One vector (value, gradient, upper triangle of the Hessian),
		// clipped to C and noised as θ is: replacing the client's data
		// moves it by at most 2C. Rebuilding the symmetric Hessian from
		// the noised triangle is post-processing.
		v := mech.Release(nil, releaseVector(ev, sub.Update), noise)
		e, u, err := unpackRelease(v, d, info.JointUpdate)
		if err != nil {
			return sub, err
		}
		sub.Eval, sub.Update, sub.Privacy, sub.DemoCount = &e, u, &decl, 0
		rr.Local = LocalResult{}
		rr.Sent = slices.Clone(v)
		if l := cfg.Privacy.Ledger; l != nil {
			// Durable before it leaves: a crash from here on re-sends these bytes.
			err := l.Record(privacy.Release{Task: cfg.TaskID, Client: cfg.ClientID, Round: round,
				Mechanism: privacy.MechanismGaussian, Declaration: decl, Theta: slices.Clone(trial), Joint: v, ReleasedAt: time.Now().UTC()})
			if err != nil {
				return sub, fmt.Errorf("task %s round %d: nothing sent: %w", cfg.TaskID, round, err)
			}
		}
	}
	if cfg.BeforeSubmit != nil {
		if err := cfg.BeforeSubmit(ctx, round); err != nil {
			return sub, err
		}
	}
	return sub, nil
}
