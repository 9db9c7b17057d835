package federation

import (
	"fmt"
	"time"
)

// The round state machine: the coordinator's decisions as pure functions of
// a task's round state, so they can be table-tested without a store. The
// store's verbs (roundStore) read the state in a transaction, ask these
// functions, and write what they return; the Coordinator asks them too.
//
//	open ──quorum or deadline──▶ fusing ──fused──▶ open (next round) or done
//	                               │
//	                               └──permanent error──▶ failed
//
// A transient fusion error leaves the round fusing and retries later.

// Verdict is the state machine's decision on one submission.
type Verdict int

// Verdicts on a submission.
const (
	// Accept: store it.
	Accept Verdict = iota
	// Duplicate: identical to the stored one; acknowledge, store nothing.
	Duplicate
	// Conflict: the client already submitted a different θ for the round.
	Conflict
	// NotOpen: the round is in the future.
	NotOpen
	// Closed: the round was fused (or the task is done).
	Closed
	// Failed: the round can never be fused.
	Failed
	// Fusing: the round is closed and being fused.
	Fusing
)

// decideSubmission decides on sub for a task in state st; old is the
// client's stored submission for sub's round, or nil.
func decideSubmission(st taskState, old, sub *Submission) Verdict {
	if old != nil {
		if sameSubmission(old, sub) {
			return Duplicate
		}
		return Conflict
	}
	switch {
	case sub.Round > st.Round:
		return NotOpen
	case sub.Round < st.Round || st.Done:
		return Closed
	case st.Failed != "":
		return Failed
	case st.Fusing:
		return Fusing
	}
	return Accept
}

// refusal is the client-visible error of a refusing verdict (nil for
// Accept and Duplicate).
func (v Verdict) refusal(st taskState, sub *Submission) *Error {
	switch v {
	case Conflict:
		return errorf(CodeAlreadyExists, "client %s already submitted a different theta for task %s round %d", sub.ClientID, sub.TaskID, sub.Round)
	case NotOpen:
		return errorf(CodeFailedPrecondition, "task %s round %d is not open yet (current round %d)", sub.TaskID, sub.Round, st.Round)
	case Closed:
		return errorf(CodeFailedPrecondition, "task %s round %d is closed (already fused)", sub.TaskID, sub.Round)
	case Failed:
		return errorf(CodeFailedPrecondition, "task %s round %d failed and is closed: %s", sub.TaskID, sub.Round, st.Failed)
	case Fusing:
		return errorf(CodeFailedPrecondition, "task %s round %d is closed (being fused)", sub.TaskID, sub.Round)
	}
	return nil
}

// afterAccept is the state once a submission is accepted as the round's
// n-th: the round's deadline starts with its first submission.
func afterAccept(st taskState, n int, at time.Time) taskState {
	if n == 1 {
		st.FirstSubmission = at
	}
	return st
}

// readyToFuse reports whether a round with n submissions can be fused now,
// and by which trigger ("quorum" or "deadline"); a round left fusing by a
// crash or shutdown is ready with its recorded trigger.
func readyToFuse(spec *TaskSpec, st taskState, n int, now time.Time) (bool, string) {
	if st.Done || st.Failed != "" {
		return false, ""
	}
	if st.Fusing {
		return true, st.FusingTrigger
	}
	if n >= spec.Quorum {
		return true, "quorum"
	}
	if spec.DeadlineSeconds > 0 && n >= spec.MinClients && !st.FirstSubmission.IsZero() &&
		!now.Before(st.FirstSubmission.Add(time.Duration(spec.DeadlineSeconds*float64(time.Second)))) {
		return true, "deadline"
	}
	return false, ""
}

// startFusing closes the round for fusion by trigger.
func startFusing(st taskState, trigger string) taskState {
	st.Fusing, st.FusingTrigger = true, trigger
	return st
}

// afterFusion is the state once round was fused: the next round opens, or
// the task is done after its last round. It errors if the round is not the
// one being fused (the fusion is then discarded).
func afterFusion(st taskState, spec *TaskSpec, round int) (taskState, error) {
	if !st.Fusing || st.Round != round {
		return st, fmt.Errorf("round %d is no longer being fused (state round %d)", round, st.Round)
	}
	st.Fusing, st.FusingTrigger = false, ""
	if st.Round >= spec.Rounds {
		st.Done = true
	} else {
		st.Round++
		st.FirstSubmission = time.Time{}
	}
	return st, nil
}

// failRound closes the round as failed with reason.
func failRound(st taskState, reason string) taskState {
	st.Fusing, st.FusingTrigger, st.Failed = false, "", reason
	return st
}
