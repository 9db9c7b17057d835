package federation

import (
	"context"
	"fmt"
	"math"

	"github.com/fedirl/fedirl/pkg/jointopt"
)

// Joint-likelihood tasks: the third round kind. A one-shot task's round
// takes each client's separately learned θ_i (or its reward on the probe)
// and fuses them once; a joint task's round is one trial point of a damped
// Newton iteration on Σ_i α_i L_i(θ) (pkg/jointopt): the server sends the
// trial θ, every client of the task returns L_i, ∇L_i and ∇²L_i at it
// (Submission.Eval), and once all are in the server sums them with the
// task's weights, takes the next step and stores the optimizer's state with
// the round (FusedResult.Joint) in the same transaction that opens the next
// round. The rounds end at the task's gradient tolerance or its round cap.
// Submissions, fused results and the store are the same records as for
// every other task; only their contents differ.

// MaxJointDim is the largest θ dimension of a joint task: a round's
// submission carries d + d² numbers (8.4 MB at d = 1024). The gRPC
// message limit (--max-message-bytes, default 1 MiB: d ≤ 360) binds first
// on a default server.
const MaxJointDim = 1024

// JointRound records one gradient/Hessian round of a joint task.
type JointRound struct {
	// Trial is the θ the round's clients evaluated.
	Trial []float64 `json:"trial"`
	// DemoCounts are the clients' declared demonstration counts, in the
	// order of FusedResult.Clients (the weights' input; fixed over the task).
	DemoCounts []int `json:"demo_counts"`
	// Value and GradNorm are Σ α_i L_i and ‖Σ α_i ∇L_i‖₂ at Trial.
	Value    float64 `json:"value"`
	GradNorm float64 `json:"grad_norm"`
	// Next is the trial θ of the next round; nil when Done.
	Next []float64 `json:"next,omitempty"`
	// Done is set when the round ended the iteration, for Reason
	// (jointopt.StopConverged, StopRoundCap, StopLineSearch).
	Done   bool   `json:"done"`
	Reason string `json:"reason,omitempty"`
	// Rounds and Steps count the rounds observed and the steps accepted.
	Rounds int `json:"rounds"`
	Steps  int `json:"steps"`
	// State is the optimizer after the round, persisted whole so that the
	// next round (after a restart too) continues from it bit for bit. The
	// gRPC transport does not carry it to clients (they need Next and Done).
	State *jointopt.State `json:"state,omitempty"`
}

// JointFuser is a Fuser whose task family also runs joint-likelihood
// tasks (pkg/tasks: fusion method "joint"). A coordinator whose Fuser is
// not one has no joint tasks.
type JointFuser interface {
	Fuser
	// JointConfig returns the optimizer configuration of spec's gradient
	// rounds, ok false for a one-shot task, or an error naming the bad
	// option.
	JointConfig(spec TaskSpec) (cfg jointopt.Config, ok bool, err error)
	// JointUpdates reports whether spec's rounds carry the clients' local
	// updates (FedAvg, FedProx: θ_i after local steps, with the value and
	// gradient at the round's θ) instead of Hessians.
	JointUpdates(spec TaskSpec) bool
	// JointStep is one round's combining step: it weighs the clients'
	// evaluations at s.Trial() (and, when JointUpdates, their updates;
	// otherwise updates is nil), in the order of demoCounts (the clients'
	// declared demonstration counts), by the task's weighting, and moves s
	// to the next trial or ends it, returning the normalized weights and
	// the summed evaluation. On error s is unchanged.
	JointStep(ctx context.Context, spec TaskSpec, s *jointopt.State, evals []jointopt.Eval, updates [][]float64, demoCounts []int) (weights []float64, sum jointopt.Eval, err error)
}

// JointLearner is a Learner that also answers joint tasks: it evaluates
// the client's objective (its log-likelihood under its own model and
// demonstrations, as the task's irl section defines it) at θ.
type JointLearner interface {
	Learner
	// Evaluate returns the objective's value, gradient and Hessian at theta
	// (jointopt.Eval, d + d² numbers) and the client's demonstration count.
	Evaluate(ctx context.Context, spec TaskSpec, theta []float64) (jointopt.Eval, int, error)
}

// JointUpdater is a JointLearner that also answers the rounds of a joint
// task with local updates (FedAvg, FedProx).
type JointUpdater interface {
	JointLearner
	// LocalUpdate returns the client's θ after the task's local steps from
	// theta, its objective's value and gradient at theta (Hess empty) and
	// its demonstration count.
	LocalUpdate(ctx context.Context, spec TaskSpec, theta []float64) ([]float64, jointopt.Eval, int, error)
}

// JointRefuser is a Learner that answers no joint task and says why, e.g. a
// sample-based learner, whose gradient would be a Monte Carlo estimate and
// which has no Hessian. For a joint task RunClient returns RefuseJoint's
// error (wrapped with the task id) before evaluating or sending anything,
// in place of the generic refusal of a learner that is no JointLearner.
type JointRefuser interface {
	Learner
	// RefuseJoint returns why the learner cannot answer spec's rounds.
	RefuseJoint(spec TaskSpec) error
}

// jointUpdates reports whether fuser runs spec's rounds with local updates.
func jointUpdates(fuser Fuser, spec *TaskSpec) bool {
	jf, ok := fuser.(JointFuser)
	return ok && jf.JointUpdates(*spec)
}

// checkUpdateEval checks a local-update round's evaluation: a finite value
// and gradient of dimension d and no Hessian.
func checkUpdateEval(e *jointopt.Eval, d int) error {
	switch {
	case len(e.Hess) != 0:
		return fmt.Errorf("%w: a local-update round takes no Hessian (%d entries sent)", jointopt.ErrEval, len(e.Hess))
	case len(e.Grad) != d:
		return fmt.Errorf("%w: gradient has %d entries, want %d", jointopt.ErrEval, len(e.Grad), d)
	case math.IsNaN(e.Value) || math.IsInf(e.Value, 0):
		return fmt.Errorf("%w: value is %v", jointopt.ErrEval, e.Value)
	}
	for j, v := range e.Grad {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: gradient entry %d is %v", jointopt.ErrEval, j, v)
		}
	}
	return nil
}

// releaseVector is what a private client's joint round releases: the
// packed evaluation, followed by the local update when there is one.
func releaseVector(e jointopt.Eval, update []float64) []float64 {
	return append(PackEval(e), update...)
}

// unpackRelease inverts releaseVector for dimension d.
func unpackRelease(v []float64, d int, update bool) (jointopt.Eval, []float64, error) {
	if !update {
		e, err := UnpackEval(v, d)
		return e, nil, err
	}
	if len(v) != 1+2*d {
		return jointopt.Eval{}, nil, fmt.Errorf("a released local update of dimension %d has %d numbers, not %d", d, 1+2*d, len(v))
	}
	return jointopt.Eval{Value: v[0], Grad: append([]float64(nil), v[1:1+d]...)}, append([]float64(nil), v[1+d:]...), nil
}

// jointConfig returns spec's joint configuration when fuser runs spec in
// gradient rounds, nil for a one-shot task.
func jointConfig(fuser Fuser, spec *TaskSpec) (*jointopt.Config, error) {
	jf, ok := fuser.(JointFuser)
	if !ok {
		return nil, nil
	}
	cfg, ok, err := jf.JointConfig(*spec)
	if err != nil || !ok {
		return nil, err
	}
	return &cfg, nil
}

// PrepareJointTask checks a (not yet normalized) spec that fuser runs in
// gradient rounds against what such a task needs, and sets its rounds to
// the optimizer's round cap; a one-shot spec is left alone. Every client
// evaluates every round (the objective is their sum), so the quorum is the
// number of clients and there is no deadline; the rounds are the
// optimizer's (fusion max_rounds), so an explicit other rounds is refused,
// as are a warm start (the server sends the θ) and central privacy (stated
// for fused θ). CreateTask calls it; so must an offline creation.
func PrepareJointTask(fuser Fuser, spec *TaskSpec, clients int) error {
	cfg, err := jointConfig(fuser, spec)
	if err != nil {
		return fmt.Errorf("task spec %s: %w", spec.ID, err)
	}
	if cfg == nil {
		return nil
	}
	switch {
	case spec.Rounds != 0 && spec.Rounds != cfg.MaxRounds:
		return fmt.Errorf("task spec %s: rounds %d: a joint task's rounds are its optimizer's trial points, capped by fusion.max_rounds (%d); set max_rounds, not rounds", spec.ID, spec.Rounds, cfg.MaxRounds)
	case spec.WarmStart:
		return fmt.Errorf("task spec %s: warm_start: a joint task's server sends each round's θ; drop warm_start", spec.ID)
	case spec.DeadlineSeconds != 0:
		return fmt.Errorf("task spec %s: deadline_seconds %v: every client of a joint task evaluates every round (the objective is their sum); a deadline would drop some", spec.ID, spec.DeadlineSeconds)
	case spec.Quorum != 0 && spec.Quorum != clients:
		return fmt.Errorf("task spec %s: quorum %d with %d clients: every client of a joint task evaluates every round; leave quorum unset or set it to %d", spec.ID, spec.Quorum, clients, clients)
	case spec.MinClients != 0 && spec.MinClients != clients:
		return fmt.Errorf("task spec %s: min_clients %d with %d clients: every client of a joint task evaluates every round", spec.ID, spec.MinClients, clients)
	case spec.CentralPrivacy != nil:
		return fmt.Errorf("task spec %s: central_privacy clips and noises a fused θ; a joint task fuses gradients (use the clients' local privacy, privacy)", spec.ID)
	case spec.ThetaDim > MaxJointDim:
		return fmt.Errorf("task spec %s: theta_dim %d: a joint round carries d + d² numbers; at most %d", spec.ID, spec.ThetaDim, MaxJointDim)
	}
	spec.Rounds, spec.Quorum, spec.MinClients = cfg.MaxRounds, clients, clients
	return nil
}

// JointMessageBytes bounds the encoded size of a joint round's submission
// of dimension d: 8 bytes for each of its 2d + d² + 1 numbers (θ echoed,
// gradient, Hessian, value) and 1 KiB for the rest of the message.
func JointMessageBytes(d int) int { return 8*(2*d+d*d+1) + 1024 }

// checkJointMessage refuses a joint task whose round submission would
// exceed limit bytes (no check when limit ≤ 0 or the task is one-shot).
func checkJointMessage(fuser Fuser, spec *TaskSpec, limit int) error {
	if limit <= 0 || spec.ThetaDim < 1 || spec.ThetaDim > MaxJointDim {
		return nil
	}
	cfg, err := jointConfig(fuser, spec)
	if err != nil || cfg == nil {
		return nil // PrepareJointTask reported it, or a one-shot task
	}
	if n := JointMessageBytes(spec.ThetaDim); n > limit {
		return fmt.Errorf("task spec %s: theta_dim %d: a joint round's submission carries d + d² = %d numbers (about %d bytes), above this server's message limit of %d bytes (--max-message-bytes)",
			spec.ID, spec.ThetaDim, spec.ThetaDim+spec.ThetaDim*spec.ThetaDim, n, limit)
	}
	return nil
}

// jointStart is the optimizer before a joint task's first round: from
// θ = 0.
func jointStart(spec *TaskSpec, cfg jointopt.Config) (*jointopt.State, error) {
	return jointopt.Start(make([]float64, spec.ThetaDim), cfg)
}

// PackEval returns e as the one vector a private client releases:
// (value, gradient, the Hessian's upper triangle row by row), 1 + d +
// d(d+1)/2 numbers. UnpackEval inverts it (the Hessian symmetric).
func PackEval(e jointopt.Eval) []float64 {
	d := len(e.Grad)
	v := make([]float64, 0, 1+d+d*(d+1)/2)
	v = append(v, e.Value)
	v = append(v, e.Grad...)
	for i := range d {
		for j := i; j < d; j++ {
			if i*d+j < len(e.Hess) {
				v = append(v, e.Hess[i*d+j])
			}
		}
	}
	return v
}

// UnpackEval returns the evaluation of dimension d packed in v by
// PackEval, or an error when v has another length.
func UnpackEval(v []float64, d int) (jointopt.Eval, error) {
	if n := 1 + d + d*(d+1)/2; len(v) != n {
		return jointopt.Eval{}, fmt.Errorf("a packed evaluation of dimension %d has %d numbers, not %d", d, n, len(v))
	}
	e := jointopt.Eval{Value: v[0], Grad: append([]float64(nil), v[1:1+d]...), Hess: make([]float64, d*d)}
	k := 1 + d
	for i := range d {
		for j := i; j < d; j++ {
			e.Hess[i*d+j], e.Hess[j*d+i] = v[k], v[k]
			k++
		}
	}
	return e, nil
}

// cloneEval returns a deep copy of e (nil for nil).
func cloneEval(e *jointopt.Eval) *jointopt.Eval {
	if e == nil {
		return nil
	}
	return &jointopt.Eval{Value: e.Value, Grad: append([]float64(nil), e.Grad...), Hess: append([]float64(nil), e.Hess...)}
}

// sameEval reports whether a and b are both nil or hold the same bits.
func sameEval(a, b *jointopt.Eval) bool {
	if a == nil || b == nil {
		return a == b
	}
	return math.Float64bits(a.Value) == math.Float64bits(b.Value) && equalBits(a.Grad, b.Grad) && equalBits(a.Hess, b.Hess)
}

// cloneJoint returns a deep copy of r (nil for nil).
func cloneJoint(r *JointRound) *JointRound {
	if r == nil {
		return nil
	}
	c := *r
	c.Trial, c.Next = append([]float64(nil), r.Trial...), append([]float64(nil), r.Next...)
	if r.Next == nil {
		c.Next = nil
	}
	c.DemoCounts = append([]int(nil), r.DemoCounts...)
	if r.State != nil {
		s := *r.State
		s.Theta, s.Dir, s.GradNorms = append([]float64(nil), s.Theta...), append([]float64(nil), s.Dir...), append([]float64(nil), s.GradNorms...)
		if r.State.Dir == nil {
			s.Dir = nil
		}
		s.Base = *cloneEval(&s.Base)
		c.State = &s
	}
	return &c
}
