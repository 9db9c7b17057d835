package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/fedirl/fedirl/pkg/jointopt"
	"github.com/fedirl/fedirl/pkg/privacy"
)

// TaskSpec defines one federation: environment family and probe, feature
// dimension, the learners' and the fuser's configuration, quorum, deadline
// and rounds.
//
// The family-specific parts (Probe, IRL, Fusion) are JSON that this package
// stores and sends as they are without reading them: the task family that
// serves EnvFamily (pkg/tasks) owns their schema (irl.Config, fusion.Options)
// and checks them through Fuser.Validate when the task is created.
//
// A round is fused once Quorum submissions are in, or, DeadlineSeconds after
// the round's first submission, once at least MinClients are in.
//
// Zero-value defaults (applied by Normalize): MinClients = Quorum,
// Rounds = 1, MaxThetaNorm = 1e6, no deadline when DeadlineSeconds is 0.
type TaskSpec struct {
	ID              string          `json:"id"`
	Description     string          `json:"description,omitempty"`
	EnvFamily       string          `json:"env_family"`
	Probe           json.RawMessage `json:"probe,omitempty"` // JSON probe spec, family specific
	ThetaDim        int             `json:"theta_dim"`
	FeatureNames    []string        `json:"feature_names,omitempty"`
	IRL             json.RawMessage `json:"irl,omitempty"`    // the learners' configuration, family specific (irl.Config)
	Fusion          json.RawMessage `json:"fusion,omitempty"` // the fuser's configuration, family specific (fusion.Options)
	Quorum          int             `json:"quorum"`
	MinClients      int             `json:"min_clients"`
	DeadlineSeconds float64         `json:"deadline_seconds,omitempty"`
	Rounds          int             `json:"rounds"`
	WarmStart       bool            `json:"warm_start,omitempty"`
	MaxThetaNorm    float64         `json:"max_theta_norm"`
	// MaxDemoCount, when > 0, bounds the demo_count a submission may
	// declare (with demo weighting, a client's weight is its demo_count).
	MaxDemoCount int `json:"max_demo_count,omitempty"`
	// Privacy, when set, is the minimum client-level differential privacy
	// every submission must declare (Submission.Privacy); the server refuses
	// submissions without a declaration that meets it. It is a typed field
	// rather than part of the family JSON because the server itself enforces
	// it, whatever the environment family.
	Privacy *privacy.Requirement `json:"privacy,omitempty"`
	// CentralPrivacy, when set, is central differential privacy for a
	// server the clients trust with their θ_i: the server clips each θ_i to
	// C, fuses (under bound "mean" the task's fusion must be a weighted
	// mean, checked at creation and every round; under bound "output" the
	// fused θ is clipped to C) and adds noise calibrated to the sensitivity
	// (2C·max α_i, or 2C) before the fused θ is stored or served
	// (pkg/privacy, Central). Demonstration counts are not passed to the
	// fuser.
	CentralPrivacy *privacy.Central `json:"central_privacy,omitempty"`
	// MaxRewardNorm bounds the L2 norm of a submitted reward vector
	// (Submission.Reward), as MaxThetaNorm bounds θ; 0 means
	// DefaultMaxRewardNorm.
	MaxRewardNorm float64 `json:"max_reward_norm,omitempty"`
}

// TaskInfo is what a client learns when it fetches a task.
type TaskInfo struct {
	Spec         TaskSpec
	CurrentRound int
	Done         bool
	WarmStart    []float64 // fused θ of round CurrentRound-1 when Spec.WarmStart, else nil
	// Joint marks a task whose rounds are gradient/Hessian rounds of a
	// joint likelihood (JointFuser); Trial is then the θ the current round
	// evaluates (nil once the task is done).
	Joint bool
	Trial []float64
	// JointUpdate marks a joint task whose rounds carry local updates
	// (Submission.Update) instead of Hessians.
	JointUpdate bool
}

// Submission is one client's locally learned θ_i, or its reward on the
// task's probe support, for one round of a task.
type Submission struct {
	TaskID   string    `json:"task_id"`
	Round    int       `json:"round"`
	ClientID string    `json:"client_id"`
	Theta    []float64 `json:"theta"`
	// Reward, instead of Theta (exactly one of the two is set), is the
	// client's reward on the task's probe support: one value per probe
	// point (in the lattice's row-major order, or a scattered probe's
	// points' order), from any reward model. Only
	// tasks whose fuser is a RewardFuser and whose fusion method takes
	// rewards accept it.
	Reward     []float64 `json:"reward,omitempty"`
	DemoCount  int       `json:"demo_count"`
	Iterations int       `json:"iterations"`
	GradNorm   float64   `json:"grad_norm"`
	// Privacy declares the noise on Theta or Reward (clipping norm, noise multiplier,
	// (ε, δ) over the task's rounds); nil when the client added none.
	Privacy    *privacy.Declaration `json:"privacy,omitempty"`
	ReceivedAt time.Time            `json:"received_at,omitzero"`
	// Eval, in a joint task's round (a gradient/Hessian round), is the
	// client's objective value, gradient and Hessian (d + d² numbers) at
	// Theta, which is then the round's trial θ echoed as it was sent
	// (joint.go).
	Eval *jointopt.Eval `json:"eval,omitempty"`
	// Update, in a round of a joint task with local updates (FedAvg,
	// FedProx: JointFuser.JointUpdates), is the client's θ after its local
	// steps from Theta; Eval then holds the value and gradient at Theta and
	// no Hessian.
	Update []float64 `json:"update,omitempty"`
}

// SubmitResult acknowledges a submission.
type SubmitResult struct {
	Duplicate   bool   `json:"duplicate"`   // an identical submission had already been accepted
	Round       int    `json:"round"`       // round the submission belongs to
	Submissions int    `json:"submissions"` // accepted submissions in that round so far
	Quorum      int    `json:"quorum"`      // submissions needed to fuse
	Message     string `json:"message"`     // human-readable summary
	// Privacy is the declaration recorded with the submission, if any.
	Privacy *privacy.Declaration `json:"privacy,omitempty"`
}

// FusedResult is a fused θ with its provenance.
type FusedResult struct {
	TaskID        string    `json:"task_id"`
	Round         int       `json:"round"`
	Theta         []float64 `json:"theta"`
	Method        string    `json:"method"`
	Clients       []string  `json:"clients"`
	Weights       []float64 `json:"weights"`
	MarginalError float64   `json:"marginal_error"`
	Iterations    int       `json:"iterations"`
	Trigger       string    `json:"trigger"` // "quorum" or "deadline"
	FusedAt       time.Time `json:"fused_at"`
	// OutlierScores is each client's outlier score, in the order of Clients
	// (FuseOutput.OutlierScores; pkg/tasks: the robust z-score of its reward
	// against the median client's); omitted when the fuser computed none.
	OutlierScores []float64 `json:"outlier_scores,omitempty"`
	// Warning names the clients whose outlier score exceeds the fuser's
	// threshold (FuseOutput.OutlierThreshold), with their scores: the fused
	// result may be dominated by them. Empty when none does. Every client
	// prints it on stderr.
	Warning string `json:"warning,omitempty"`
	// Privacy holds each client's privacy declaration, in the order of
	// Clients; nil when no client declared one (a zero entry: that client
	// declared none, possible only in a task that requires no privacy).
	Privacy []privacy.Declaration `json:"privacy,omitempty"`
	// Central is the noise the server added to Theta when the task sets
	// CentralPrivacy (Theta is then clipped mean + noise); nil otherwise.
	Central *privacy.CentralRelease `json:"central_privacy,omitempty"`
	// Reward is the fused reward on the task's probe support when some
	// client submitted a reward (Theta is then its least-squares fit on the
	// task's Φ); nil otherwise.
	Reward []float64 `json:"reward,omitempty"`
	// RewardClients lists the clients of Clients that submitted a reward
	// instead of θ, in the order of Clients.
	RewardClients []string `json:"reward_clients,omitempty"`
	// Joint is the record of a gradient/Hessian round of a joint task:
	// the trial θ evaluated, the summed objective there and the optimizer's
	// state after it (Theta is then the last accepted point); nil for a
	// one-shot fusion.
	Joint *JointRound `json:"joint,omitempty"`
}

// FusedStatus answers a request for a round's fused θ.
type FusedStatus struct {
	Ready       bool
	Result      FusedResult
	Submissions int
	Quorum      int
	// WaitingFor lists (sorted, at most MaxWaitingFor) the admitted clients
	// that have not submitted in the round while it is not fused;
	// WaitingForMore counts the others.
	WaitingFor     []string
	WaitingForMore int
}

// MaxWaitingFor caps FusedStatus.WaitingFor.
const MaxWaitingFor = 20

// TaskStatus summarises one task for operators.
type TaskStatus struct {
	ID               string        `json:"id"`
	Round            int           `json:"round"`
	Rounds           int           `json:"rounds"`
	Done             bool          `json:"done"`
	Quorum           int           `json:"quorum"`
	MinClients       int           `json:"min_clients"`
	ClientsAllowed   []string      `json:"clients_allowed"`
	ClientsSeen      []string      `json:"clients_seen"`
	Submissions      int           `json:"submissions"` // in the current (or, when done, the last) round
	TotalSubmissions int           `json:"total_submissions"`
	Fused            []FusedResult `json:"fused"`
	Error            string        `json:"error,omitempty"`
	// ClientsTotal and ClientOffset say which slice of the task's sorted
	// clients a page of the paged status holds (StatusQuery): ClientsAllowed
	// are the clients from ClientOffset on, of ClientsTotal, and
	// ClientsSeen and each fused result's per-client lists hold only those
	// clients. MergeStatusPages joins the slices again.
	ClientsTotal int `json:"clients_total,omitempty"`
	ClientOffset int `json:"client_offset,omitempty"`
	// Deadline is the current round's deadline, once its first submission
	// has started it (zero: none).
	Deadline time.Time `json:"deadline,omitzero"`
}

// Credentials identify the caller of a request: a bearer token and, under
// mutual TLS, the common name of the verified client certificate.
type Credentials struct {
	Token    string
	CertName string // "" when no client certificate was presented
}

// LocalResult is the outcome of a client's local learning: θ on the task's
// features, or (Reward) the client's reward on the task's probe support.
type LocalResult struct {
	Theta []float64 `json:"theta"`
	// Reward, set instead of Theta, is the reward the client submits: one
	// value per point of the task's probe support (a RewardFuser task).
	Reward     []float64 `json:"reward,omitempty"`
	DemoCount  int       `json:"demo_count"`
	Iterations int       `json:"iterations"`
	// GradNorm is the gradient norm of the local objective at Theta.
	GradNorm float64 `json:"grad_norm"`
	// Converged reports whether the local fit reached its gradient
	// tolerance (GradNorm ≤ the task's grad_tol); StopReason says why a fit
	// that did not converge stopped (the iteration budget, a failed line
	// search). A learner that fits nothing (a θ learned earlier) reports
	// the fit that produced it.
	Converged  bool   `json:"converged"`
	StopReason string `json:"stop_reason,omitempty"`
}

// stopReason is StopReason, or a placeholder when the learner gave none.
func (r LocalResult) stopReason() string {
	if r.StopReason == "" {
		return "the learner gave no reason"
	}
	return r.StopReason
}

// Learner runs a client's local learning for a task. warmStart is the
// previous round's fused θ, or nil in round 1 or when the task has no warm start.
type Learner interface {
	Learn(ctx context.Context, spec TaskSpec, warmStart []float64) (LocalResult, error)
}

// FuseOutput is what a Fuser returns; the coordinator adds the provenance.
type FuseOutput struct {
	Theta         []float64
	Method        string    // the fusion method that produced Theta, e.g. "mean"
	Weights       []float64 // the normalized client weights α used, in submission order
	MarginalError float64
	Iterations    int
	// OutlierScores is each client's outlier score, in submission order
	// (nil: the fuser computes none). The unit is the fuser's (pkg/tasks:
	// the robust z-score of the client's reward on the task's probe against
	// the median client's, fusion.OutlierScores).
	OutlierScores []float64
	// OutlierThreshold is the score above which a client is named in the
	// fused result's Warning; 0 means no warning.
	OutlierThreshold float64
	// Reward is the fused reward on the probe support, set by
	// RewardFuser.FuseRewards (nil from Fuse).
	Reward []float64
}

// Fuser is the server's fusion step, supplied by the task families (pkg/tasks),
// so that this package knows no environment, learner or fusion method.
type Fuser interface {
	// Validate checks at task creation everything Fuse will need (family
	// known, probe buildable, θ dimension equal to the family's feature
	// count, fusion options valid), naming the first bad field.
	Validate(spec TaskSpec) error
	// Fuse fuses the submitted θ_i of one round; demoCounts holds each
	// submission's reported demonstration count, in the order of thetas,
	// for weightings that use it.
	Fuse(ctx context.Context, spec TaskSpec, thetas [][]float64, demoCounts []int) (FuseOutput, error)
}

// RewardFuser is a Fuser that also fuses rounds in which some clients
// submitted their reward on the task's probe support instead of θ. A
// coordinator whose Fuser is not one refuses reward submissions.
type RewardFuser interface {
	Fuser
	// RewardSupport returns the number of probe points a reward submission
	// to the task must carry, or an error saying why the task takes no
	// reward submissions (its fusion method works on θ only, say).
	RewardSupport(spec TaskSpec) (int, error)
	// FuseRewards fuses a round: for submission i exactly one of thetas[i]
	// and rewards[i] is non-nil. FuseOutput.Reward is the fused reward on
	// the probe support and FuseOutput.Theta its least-squares θ.
	FuseRewards(ctx context.Context, spec TaskSpec, thetas, rewards [][]float64, demoCounts []int) (FuseOutput, error)
}

// Federation is the transport between client logic and server logic. InProcess
// and the gRPC client implement it; RunClient uses only this interface.
type Federation interface {
	GetTask(ctx context.Context, taskID, clientID string) (TaskInfo, error)
	Submit(ctx context.Context, sub Submission) (SubmitResult, error)
	GetFused(ctx context.Context, taskID, clientID string, round int, wait time.Duration) (FusedStatus, error)
	Status(ctx context.Context) ([]TaskStatus, error)
}

// Code classifies a federation error independently of the transport; the
// gRPC adapter maps each code to the gRPC status code of the same name.
type Code int

// Error codes.
const (
	CodeUnknown Code = iota
	CodeInvalidArgument
	CodeNotFound
	CodeAlreadyExists
	CodePermissionDenied
	CodeUnauthenticated
	CodeFailedPrecondition
	CodeResourceExhausted
	CodeUnavailable
	CodeInternal
)

var codeNames = [...]string{"Unknown", "InvalidArgument", "NotFound", "AlreadyExists",
	"PermissionDenied", "Unauthenticated", "FailedPrecondition", "ResourceExhausted",
	"Unavailable", "Internal"}

// String returns the code's name.
func (c Code) String() string {
	if c >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", int(c))
}

// Error is a federation error with a transport-independent code and a
// message meant for the user at the other end.
type Error struct {
	Code Code
	Msg  string
}

// Error returns the message prefixed by the code.
func (e *Error) Error() string { return e.Code.String() + ": " + e.Msg }

func errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// CodeOf returns the Code of err, or CodeUnknown when err is not an *Error.
func CodeOf(err error) Code {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return CodeUnknown
}
