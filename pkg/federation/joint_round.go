package federation

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fedirl/fedirl/pkg/jointopt"
	"github.com/fedirl/fedirl/pkg/privacy"
)

// The coordinator's side of joint tasks (joint.go): which θ a round
// evaluates, what a round's submission must carry, and the round's
// combining step.

// jointOf returns the joint configuration of a task, nil for a one-shot
// task.
func (c *Coordinator) jointOf(rec *taskRecord) (*jointopt.Config, error) {
	return jointConfig(c.cfg.Fuser, &rec.Spec)
}

// jointBefore returns the optimizer's state before round of a joint task
// (the start for round 1, else the state stored with round − 1) and the
// record of round − 1 (nil for round 1).
func (c *Coordinator) jointBefore(spec *TaskSpec, cfg jointopt.Config, round int) (*jointopt.State, *JointRound, error) {
	if round <= 1 {
		s, err := jointStart(spec, cfg)
		return s, nil, err
	}
	fr, ok, err := c.store.fused(spec.ID, round-1)
	if err != nil {
		return nil, nil, err
	}
	if !ok || fr.Joint == nil || fr.Joint.State == nil {
		return nil, nil, fmt.Errorf("task %s: round %d holds no joint state for round %d to continue from", spec.ID, round-1, round)
	}
	if fr.Joint.State.Dim() != spec.ThetaDim {
		return nil, nil, fmt.Errorf("task %s: the joint state of round %d has dimension %d, the task %d", spec.ID, round-1, fr.Joint.State.Dim(), spec.ThetaDim)
	}
	return fr.Joint.State, fr.Joint, nil
}

// checkJointSubmission checks sub against a joint task's open round: it
// must carry an evaluation of the task's dimension with finite entries and
// a symmetric Hessian, at the round's trial θ (echoed in Theta bit for
// bit), for the open round, with the demonstration count the client
// declared in round 1 (the weights stay fixed over the rounds).
func (c *Coordinator) checkJointSubmission(rec *taskRecord, cfg jointopt.Config, sub *Submission) *Error {
	spec := &rec.Spec
	if sub.Eval == nil {
		return errorf(CodeInvalidArgument, "task %s runs gradient/Hessian rounds (joint): submit the objective's value, gradient and Hessian at round %d's trial θ (eval), not a fitted θ", spec.ID, sub.Round)
	}
	if len(sub.Reward) > 0 {
		return errorf(CodeInvalidArgument, "task %s runs gradient/Hessian rounds (joint) and takes no reward on the probe", spec.ID)
	}
	if jointUpdates(c.cfg.Fuser, spec) {
		if err := checkUpdateEval(sub.Eval, spec.ThetaDim); err != nil {
			return errorf(CodeInvalidArgument, "task %s round %d: client %s's evaluation: %v", spec.ID, sub.Round, sub.ClientID, err)
		}
		if len(sub.Update) == 0 {
			return errorf(CodeInvalidArgument, "task %s runs local-update rounds (fedavg/fedprox): send the θ after your local steps (update) with the value and gradient at the round's θ", spec.ID)
		}
		if e := validateTheta(spec, sub.Update); e != nil {
			return errorf(CodeInvalidArgument, "task %s round %d: update: %s", spec.ID, sub.Round, e.Msg)
		}
	} else {
		if len(sub.Update) > 0 {
			return errorf(CodeInvalidArgument, "task %s runs Newton rounds: send the value, gradient and Hessian at the round's θ, no local update", spec.ID)
		}
		if err := sub.Eval.Check(spec.ThetaDim); err != nil {
			return errorf(CodeInvalidArgument, "task %s round %d: client %s's evaluation: %v", spec.ID, sub.Round, sub.ClientID, err)
		}
	}
	st, err := c.store.state(spec.ID)
	if err != nil {
		return &Error{Code: CodeInternal, Msg: err.Error()}
	}
	if sub.Round != st.Round || st.Done {
		// A retry of a stored submission (its reply lost) is answered by
		// recordSubmission: a duplicate, or a conflict.
		if ids, err := c.store.submitters(spec.ID, sub.Round); err == nil {
			if _, ok := slices.BinarySearch(ids, sub.ClientID); ok {
				return nil
			}
		}
	}
	switch {
	case st.Done:
		return errorf(CodeFailedPrecondition, "task %s is done (its joint rounds ended at round %d); round %d takes no evaluation", spec.ID, st.Round, sub.Round)
	case sub.Round < st.Round:
		return errorf(CodeFailedPrecondition, "task %s round %d is closed: a stale evaluation; the open round is %d (fetch the task for its trial θ)", spec.ID, sub.Round, st.Round)
	case sub.Round > st.Round:
		return errorf(CodeFailedPrecondition, "task %s round %d is not open yet: the open round is %d (fetch the task for its trial θ)", spec.ID, sub.Round, st.Round)
	}
	s, prev, err := c.jointBefore(spec, cfg, sub.Round)
	if err != nil {
		return &Error{Code: CodeInternal, Msg: err.Error()}
	}
	if trial := s.Trial(); !equalBits(sub.Theta, trial) {
		return errorf(CodeInvalidArgument, "task %s round %d: the evaluation is at another θ than the round's trial point (theta must echo it bit for bit; %d components sent, %d in the trial)", spec.ID, sub.Round, len(sub.Theta), len(trial))
	}
	if prev != nil {
		fr, _, err := c.store.fused(spec.ID, sub.Round-1)
		if err != nil {
			return &Error{Code: CodeInternal, Msg: err.Error()}
		}
		for i, id := range fr.Clients {
			if id == sub.ClientID && i < len(prev.DemoCounts) && prev.DemoCounts[i] != sub.DemoCount {
				return errorf(CodeInvalidArgument, "task %s round %d: demo_count %d, but client %s declared %d before: a joint task's weights stay fixed over its rounds", spec.ID, sub.Round, sub.DemoCount, sub.ClientID, prev.DemoCounts[i])
			}
		}
	}
	return nil
}

// fuseJoint is the combining step of a joint task's round closed by
// beginFusing (snap): the clients' evaluations, in client-id order, go
// through the fuser's JointStep from the state stored with the previous
// round, and the new state is stored with the round in the transaction
// that opens the next one (or ends the task). The same stored submissions
// give the same bits, so a round re-fused after a crash continues as the
// uninterrupted run would.
func (c *Coordinator) fuseJoint(spec TaskSpec, cfg jointopt.Config, snap fusingRound) {
	taskID, round, subs := spec.ID, snap.Round, snap.Subs
	start := time.Now()
	fail := func(err error, permanent bool) {
		if c.ctx.Err() != nil {
			c.cfg.Metrics.fusion("interrupted", 0)
			c.cfg.Logf("task %s round %d: joint round interrupted by shutdown; it resumes after restart", taskID, round)
			return
		}
		c.cfg.Metrics.fusion(map[bool]string{true: "failed", false: "transient"}[permanent], 0)
		c.fusionFailed(taskID, fmt.Errorf("joint round %d of task %s: %w", round, taskID, err), permanent)
	}
	jf, ok := c.cfg.Fuser.(JointFuser)
	if !ok {
		fail(errors.New("this server's fuser runs no joint rounds"), true)
		return
	}
	prior, _, err := c.jointBefore(&spec, cfg, round)
	if err != nil {
		fail(err, true)
		return
	}
	s := cloneJoint(&JointRound{State: prior}).State
	trial := s.Trial()
	evals := make([]jointopt.Eval, len(subs))
	var updates [][]float64
	if jf.JointUpdates(spec) {
		updates = make([][]float64, len(subs))
	}
	clients := make([]string, len(subs))
	demos := make([]int, len(subs))
	var priv []privacy.Declaration
	for i := range subs {
		sub := &subs[i]
		if sub.Eval == nil || !equalBits(sub.Theta, trial) {
			// Refused at submission; a store written by another server could hold it.
			fail(fmt.Errorf("client %s's submission is no evaluation at the round's trial θ", sub.ClientID), true)
			return
		}
		evals[i], clients[i], demos[i] = *sub.Eval, sub.ClientID, sub.DemoCount
		if updates != nil {
			if len(sub.Update) != spec.ThetaDim {
				fail(fmt.Errorf("client %s's submission carries no local update", sub.ClientID), true)
				return
			}
			updates[i] = sub.Update
		}
		if d := sub.Privacy; d != nil {
			if priv == nil {
				priv = make([]privacy.Declaration, len(subs))
			}
			priv[i] = *d
		}
	}
	w, sum, err := jf.JointStep(c.ctx, spec, s, evals, updates, demos)
	if err != nil {
		fail(err, !errors.Is(err, ErrTransient))
		return
	}
	if len(w) != len(subs) {
		fail(fmt.Errorf("the fuser returned %d weights for %d clients", len(w), len(subs)), true)
		return
	}
	jr := &JointRound{Trial: trial, DemoCounts: demos, Value: sum.Value, GradNorm: norm2(sum.Grad),
		Done: s.Done, Reason: s.Reason, Rounds: s.Rounds, Steps: s.Steps, State: s}
	if !s.Done {
		jr.Next = s.Trial()
	}
	fr := FusedResult{TaskID: taskID, Round: round, Theta: append([]float64(nil), s.Theta...), Method: methodJoint,
		Clients: clients, Weights: w, Iterations: s.Steps, Trigger: snap.Trigger, FusedAt: c.cfg.Now().UTC(),
		Privacy: priv, Joint: jr}
	if err := c.store.commitFusion(&spec, &fr); err != nil {
		c.fusionFailed(taskID, fmt.Errorf("storing joint round %d of task %s: %w", round, taskID, err), false)
		return
	}
	c.cfg.Metrics.fusion("fused", time.Since(start))
	c.mu.Lock()
	delete(c.errs, taskID)
	delete(c.retry, taskID)
	c.mu.Unlock()
	if s.Done {
		c.cfg.Logf("task %s round %d: joint rounds ended (%s) after %d rounds, %d steps, ‖∇F‖ %.3g", taskID, round, s.Reason, s.Rounds, s.Steps, jr.GradNorm)
	} else {
		c.cfg.Logf("task %s round %d: joint round of %d clients, F %.12g, ‖∇F‖ %.3g, next step α = %g", taskID, round, len(clients), sum.Value, jr.GradNorm, s.Alpha)
	}
	c.broadcast(taskID)
}

// methodJoint is the Method of a joint round's FusedResult (the registry
// name of pkg/fusion, which this package does not import).
const methodJoint = "joint"

// norm2 returns ‖v‖₂.
func norm2(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// afterCommit is the state once fr was stored: afterFusion, and a joint
// round that ended the iteration ends the task at its round.
func afterCommit(st taskState, spec *TaskSpec, fr *FusedResult) (taskState, error) {
	next, err := afterFusion(st, spec, fr.Round)
	if err == nil && fr.Joint != nil && fr.Joint.Done {
		next.Round, next.Done, next.FirstSubmission = fr.Round, true, time.Time{}
	}
	return next, err
}

// jointInfo fills a joint task's TaskInfo fields: the trial θ of the open
// round.
func (c *Coordinator) jointInfo(rec *taskRecord, st taskState, info *TaskInfo) error {
	cfg, err := c.jointOf(rec)
	if err != nil || cfg == nil {
		return err
	}
	info.Joint, info.JointUpdate = true, jointUpdates(c.cfg.Fuser, &rec.Spec)
	if st.Done {
		return nil
	}
	s, _, err := c.jointBefore(&rec.Spec, *cfg, st.Round)
	if err != nil {
		return err
	}
	info.Trial = s.Trial()
	return nil
}
