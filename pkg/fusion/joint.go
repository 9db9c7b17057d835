package fusion

import (
	"context"
	"errors"
	"fmt"

	"github.com/fedirl/fedirl/pkg/jointopt"
)

// MethodJoint is joint-likelihood fusion: the federation maximizes
// Σ_i α_i L_i(θ), each client's MaxEnt log-likelihood under its own model,
// by damped Newton rounds (pkg/jointopt). A round sends the current trial
// θ; each client returns L_i, ∇L_i and ∇²L_i at it (d + d² numbers); the
// server sums them with the task's weights and takes the next step
// (JointStep). With weighting "demos" (uncapped) the optimum is the pooled
// MLE of every client's demonstrations under its own dynamics.
const MethodJoint = "joint"

// JointSpace methods combine no separately learned θ_i: they are rounds of
// gradient/Hessian evaluations of a joint objective at the server's trial
// points (MethodJoint). Their Fuse refuses with ErrRoundMethod.
const JointSpace Space = RewardSpace + 1

// ErrRoundMethod is wrapped by the error of fusing θ_i with a method that
// runs in gradient/Hessian rounds instead (JointSpace).
var ErrRoundMethod = errors.New("the method runs in gradient/Hessian rounds and fuses no θ_i")

// jointMethod is MethodJoint.
//
// What it bounds: nothing against a dishonest client. A client's gradient
// and Hessian enter the Newton step with its weight α_i, unclipped (without
// --dp-*), so one client can steer θ anywhere; its breakdown point is 0,
// like the mean's. Against an honest fleet it is exact: the federated fit is
// the central pooled fit (irl.Pooled), the same steps to rounding.
type jointMethod struct{}

func (jointMethod) Name() string { return MethodJoint }
func (jointMethod) Space() Space { return JointSpace }

func (jointMethod) Fuse(context.Context, Input) (Output, error) {
	return Output{}, fmt.Errorf("fusion: method %q: %w; run it through the federation's rounds (JointStep)", MethodJoint, ErrRoundMethod)
}

// JointConfig returns the optimizer configuration of a JointSpace task's
// options (grad_tol and max_rounds, defaults resolved), or an error when
// the method is not a round method or a setting is out of range.
func (o Options) JointConfig() (jointopt.Config, error) {
	m, err := Lookup(o.Method)
	if err != nil {
		return jointopt.Config{}, fmt.Errorf("fusion.method: %w", err)
	}
	if m.Space() != JointSpace {
		return jointopt.Config{}, fmt.Errorf("fusion.method %q fuses once and has no gradient rounds", m.Name())
	}
	cfg, err := jointopt.Config{GradTol: o.GradTol, MaxRounds: o.MaxRounds}.Resolve()
	if err != nil {
		return cfg, fmt.Errorf("fusion: %w", err)
	}
	return cfg, nil
}

// IsRoundMethod reports whether name is a registered method that runs in
// gradient/Hessian rounds (JointSpace).
func IsRoundMethod(name string) bool {
	m, err := Lookup(name)
	return err == nil && m.Space() == JointSpace
}

// JointWeights returns the normalized weights α of a round method's clients
// with the given demonstration counts: the task's weighting
// (ClientWeights, with its demo cap) normalized by Weights, as every other
// method weighs its clients.
func (o Options) JointWeights(demoCounts []int) ([]float64, error) {
	return Weights(o.ClientWeights(demoCounts), len(demoCounts))
}

// JointStep is the combining step of MethodJoint, one round: the clients'
// evaluations at s.Trial(), in client order, summed with weights alpha
// (jointopt.Sum) and folded into s (Observe), which then holds the next
// trial point or has ended; it returns the sum. An evaluation of the wrong
// shape or with a non-finite entry is refused (naming the client's index)
// and leaves s unchanged.
func JointStep(s *jointopt.State, evals []jointopt.Eval, alpha []float64) (jointopt.Eval, error) {
	sum, err := jointopt.Sum(evals, alpha, s.Dim())
	if err != nil {
		return sum, fmt.Errorf("fusion: %s round %d: %w", MethodJoint, s.Rounds+1, err)
	}
	if err := s.Observe(sum); err != nil {
		return sum, fmt.Errorf("fusion: %s round %d: %w", MethodJoint, s.Rounds+1, err)
	}
	return sum, nil
}
