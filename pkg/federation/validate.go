package federation

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/fedirl/fedirl/pkg/privacy"
)

// Limits on identifiers and sizes. They bound what a hostile request can make
// the server store or compute.
const (
	// MaxIDLength is the longest task or client identifier accepted.
	MaxIDLength = 128
	// MaxThetaDim is the largest θ dimension a task may declare.
	MaxThetaDim = 1 << 16
	// MaxProbeBytes is the largest probe spec a task may carry.
	MaxProbeBytes = 256 << 10
	// MaxClientsPerTask is the largest number of clients a task may admit.
	MaxClientsPerTask = 100000
	// DefaultMaxThetaNorm is the θ norm bound used when a task sets none.
	DefaultMaxThetaNorm = 1e6
	// MaxRewardPoints is the most values a reward submission may carry (the
	// default --max-probe-points); the gRPC message limit
	// (--max-message-bytes, default 1 MiB ≈ 131,000 values) binds first.
	MaxRewardPoints = 1 << 21
	// DefaultMaxRewardNorm is the bound on a reward vector's L2 norm used
	// when a task sets no max_reward_norm: 10⁶ points of magnitude 10³, and
	// far from overflowing any sum the fusion forms.
	DefaultMaxRewardNorm = 1e9
)

// ValidID reports whether s is a valid task or client identifier: 1 to
// MaxIDLength characters from [A-Za-z0-9._-].
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// Normalize fills the documented zero-value defaults of s in place.
func (s *TaskSpec) Normalize() {
	if s.MinClients == 0 {
		s.MinClients = s.Quorum
	}
	if s.Rounds == 0 {
		s.Rounds = 1
	}
	if s.MaxThetaNorm == 0 {
		s.MaxThetaNorm = DefaultMaxThetaNorm
	}
}

// Validate checks a (normalized) task spec, naming the first bad field.
func (s *TaskSpec) Validate() error {
	switch {
	case !ValidID(s.ID):
		return fmt.Errorf("task spec: id %q: want 1-%d characters from [A-Za-z0-9._-]", s.ID, MaxIDLength)
	case s.ThetaDim < 1 || s.ThetaDim > MaxThetaDim:
		return fmt.Errorf("task spec %s: theta_dim %d: want 1..%d", s.ID, s.ThetaDim, MaxThetaDim)
	case len(s.FeatureNames) != 0 && len(s.FeatureNames) != s.ThetaDim:
		return fmt.Errorf("task spec %s: %d feature_names for theta_dim %d", s.ID, len(s.FeatureNames), s.ThetaDim)
	case len(s.Probe) > MaxProbeBytes:
		return fmt.Errorf("task spec %s: probe is %d bytes, limit %d", s.ID, len(s.Probe), MaxProbeBytes)
	case len(s.Probe) > 0 && !json.Valid(s.Probe):
		if path, tok, ok := NonFiniteJSON(s.Probe); ok {
			return fmt.Errorf("task spec %s: probe.%s = %s: JSON has no NaN or infinity (Python's json.dump writes them by default); want finite numbers", s.ID, path, tok)
		}
		return fmt.Errorf("task spec %s: probe is not valid JSON", s.ID)
	case s.Quorum < 1 || s.Quorum > MaxClientsPerTask:
		return fmt.Errorf("task spec %s: quorum %d: want 1..%d", s.ID, s.Quorum, MaxClientsPerTask)
	case s.MinClients < 1 || s.MinClients > s.Quorum:
		return fmt.Errorf("task spec %s: min_clients %d: want 1..quorum (%d)", s.ID, s.MinClients, s.Quorum)
	case s.Rounds < 1 || s.Rounds > 10000:
		return fmt.Errorf("task spec %s: rounds %d: want 1..10000", s.ID, s.Rounds)
	case !(s.DeadlineSeconds >= 0) || math.IsInf(s.DeadlineSeconds, 0):
		return fmt.Errorf("task spec %s: deadline_seconds %v: want a finite value >= 0", s.ID, s.DeadlineSeconds)
	case !(s.MaxThetaNorm > 0) || math.IsInf(s.MaxThetaNorm, 0):
		return fmt.Errorf("task spec %s: max_theta_norm %v: want a finite value > 0", s.ID, s.MaxThetaNorm)
	case !(s.MaxRewardNorm >= 0) || math.IsInf(s.MaxRewardNorm, 0):
		return fmt.Errorf("task spec %s: max_reward_norm %v: want a finite value > 0 (0: the default %g)", s.ID, s.MaxRewardNorm, DefaultMaxRewardNorm)
	case s.MaxDemoCount < 0 || s.MaxDemoCount > math.MaxInt32:
		return fmt.Errorf("task spec %s: max_demo_count %d: want 0 (no bound) to %d", s.ID, s.MaxDemoCount, math.MaxInt32)
	case len(s.IRL) > MaxProbeBytes || (len(s.IRL) > 0 && !json.Valid(s.IRL)):
		return fmt.Errorf("task spec %s: irl is not a JSON object of at most %d bytes", s.ID, MaxProbeBytes)
	case len(s.Fusion) > MaxProbeBytes || (len(s.Fusion) > 0 && !json.Valid(s.Fusion)):
		return fmt.Errorf("task spec %s: fusion is not a JSON object of at most %d bytes", s.ID, MaxProbeBytes)
	}
	if s.Privacy != nil {
		if err := s.Privacy.Validate(); err != nil {
			return fmt.Errorf("task spec %s: privacy.%w", s.ID, err)
		}
	}
	if s.CentralPrivacy != nil {
		if err := s.CentralPrivacy.Validate(); err != nil {
			return fmt.Errorf("task spec %s: central_privacy.%w", s.ID, err)
		}
	}
	return nil
}

// checkPrivacy checks a submission's privacy declaration against its task:
// a task with a requirement refuses a submission without a declaration that
// meets it; any declaration, required or not, must be truthful (a σ large
// enough for its (ε, δ) and rounds), since it is recorded with the result.
func checkPrivacy(spec *TaskSpec, d *privacy.Declaration) *Error {
	switch {
	case spec.Privacy != nil:
		if err := spec.Privacy.Check(d, spec.Rounds); err != nil {
			return errorf(CodeInvalidArgument, "task %s: %v", spec.ID, err)
		}
	case d != nil:
		if err := d.Validate(); err != nil {
			return errorf(CodeInvalidArgument, "task %s: privacy declaration: %v", spec.ID, err)
		}
	}
	return nil
}

// validateTheta checks θ against a task: dimension, finiteness and norm bound.
func validateTheta(spec *TaskSpec, theta []float64) *Error {
	if len(theta) != spec.ThetaDim {
		return errorf(CodeInvalidArgument, "theta has dimension %d, task %s wants %d", len(theta), spec.ID, spec.ThetaDim)
	}
	var ss float64
	for i, v := range theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errorf(CodeInvalidArgument, "theta[%d] is %v: every component must be finite", i, v)
		}
		ss += v * v
	}
	if n := math.Sqrt(ss); !(n <= spec.MaxThetaNorm) {
		return errorf(CodeInvalidArgument, "theta has norm %.6g above the task's bound %.6g", n, spec.MaxThetaNorm)
	}
	return nil
}

// rewardNormBound returns the task's bound on a reward vector's L2 norm.
func (s *TaskSpec) rewardNormBound() float64 {
	if s.MaxRewardNorm == 0 {
		return DefaultMaxRewardNorm
	}
	return s.MaxRewardNorm
}

// validateReward checks a reward submission against its task: the number of
// values equal to the task's probe support (points), finiteness and the
// norm bound.
func validateReward(spec *TaskSpec, reward []float64, points int) *Error {
	if len(reward) != points {
		return errorf(CodeInvalidArgument, "reward has %d values, task %s's probe support has %d points (one value per point)", len(reward), spec.ID, points)
	}
	var ss float64
	for i, v := range reward {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errorf(CodeInvalidArgument, "reward[%d] is %v: every value must be finite", i, v)
		}
		ss += v * v
	}
	if n := math.Sqrt(ss); !(n <= spec.rewardNormBound()) {
		return errorf(CodeInvalidArgument, "reward has L2 norm %.6g above task %s's bound %.6g (max_reward_norm)", n, spec.ID, spec.rewardNormBound())
	}
	return nil
}

// validateSubmissionFields checks the parts of a submission that need no
// stored state.
func validateSubmissionFields(sub *Submission) *Error {
	switch {
	case !ValidID(sub.TaskID):
		return errorf(CodeInvalidArgument, "task id %q is not a valid identifier", truncate(sub.TaskID))
	case !ValidID(sub.ClientID):
		return errorf(CodeInvalidArgument, "client id %q is not a valid identifier", truncate(sub.ClientID))
	case sub.Round < 1:
		return errorf(CodeInvalidArgument, "round %d: rounds start at 1", sub.Round)
	case sub.DemoCount < 0 || sub.Iterations < 0:
		return errorf(CodeInvalidArgument, "demo_count %d and iterations %d must be >= 0", sub.DemoCount, sub.Iterations)
	case !(sub.GradNorm >= 0) || math.IsInf(sub.GradNorm, 0):
		return errorf(CodeInvalidArgument, "grad_norm %v must be finite and >= 0", sub.GradNorm)
	case len(sub.Theta) > MaxThetaDim:
		return errorf(CodeResourceExhausted, "theta has %d components, limit %d", len(sub.Theta), MaxThetaDim)
	case len(sub.Reward) > MaxRewardPoints:
		return errorf(CodeResourceExhausted, "reward has %d values, limit %d (MaxRewardPoints)", len(sub.Reward), MaxRewardPoints)
	case sub.Eval != nil && (len(sub.Eval.Grad) > MaxJointDim || len(sub.Eval.Hess) > MaxJointDim*MaxJointDim):
		return errorf(CodeResourceExhausted, "evaluation has a %d-entry gradient and a %d-entry Hessian, limit %d and %d (MaxJointDim)", len(sub.Eval.Grad), len(sub.Eval.Hess), MaxJointDim, MaxJointDim*MaxJointDim)
	case len(sub.Update) > MaxThetaDim:
		return errorf(CodeResourceExhausted, "update has %d components, limit %d", len(sub.Update), MaxThetaDim)
	case len(sub.Reward) > 0 && len(sub.Theta) > 0:
		return errorf(CodeInvalidArgument, "the submission carries theta (%d components) and reward (%d values): send exactly one", len(sub.Theta), len(sub.Reward))
	}
	return nil
}

// truncate shortens s for inclusion in an error message.
func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
