package fusion

import (
	"context"
	"errors"
	"fmt"
	"math"

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

// Update rules of MethodJoint (Options.Update).
const (
	// UpdateNewton: clients return value, gradient and Hessian (d + d²
	// numbers); the server takes damped Newton steps (JointStep).
	UpdateNewton = "newton"
	// UpdateFedAvg: clients return the θ after E local Newton steps on
	// their own objective from the round's θ, with their gradient there
	// (2d + 1 numbers); the server averages the θ (UpdateStep).
	UpdateFedAvg = "fedavg"
	// UpdateFedProx: UpdateFedAvg on L_i(θ) − (μ/2)‖θ − θ_r‖².
	UpdateFedProx = "fedprox"
)

// Defaults and bounds of the local-update rules.
const (
	DefaultLocalSteps = 5
	MaxLocalSteps     = 1000
)

// LocalUpdate is a client's local solve in a FedAvg or FedProx round: E
// damped Newton steps, proximal weight Mu (0 for FedAvg).
type LocalUpdate struct {
	Steps int
	Mu    float64
}

// checkUpdate checks the keys of the local-update rules against method m.
func (o Options) checkUpdate(m Method) error {
	if o.Update == "" && o.LocalSteps == 0 && o.Mu == 0 {
		return nil
	}
	if m.Space() != JointSpace {
		return fmt.Errorf("fusion.update, fusion.local_steps, fusion.mu: method %q fuses once; they apply to %q", m.Name(), MethodJoint)
	}
	switch o.Update {
	case "", UpdateNewton:
		if o.LocalSteps != 0 || o.Mu != 0 {
			return fmt.Errorf("fusion.local_steps, fusion.mu: update %q takes no local steps; they apply to %q and %q", UpdateNewton, UpdateFedAvg, UpdateFedProx)
		}
		return nil
	case UpdateFedAvg:
		if o.Mu != 0 {
			return fmt.Errorf("fusion.mu = %v: update %q has no proximal term; use %q", o.Mu, UpdateFedAvg, UpdateFedProx)
		}
	case UpdateFedProx:
		if !(o.Mu > 0) || math.IsInf(o.Mu, 0) {
			return fmt.Errorf("fusion.mu = %v: update %q needs a finite proximal weight μ > 0", o.Mu, UpdateFedProx)
		}
	default:
		return fmt.Errorf("fusion.update %q: want %q, %q or %q", o.Update, UpdateNewton, UpdateFedAvg, UpdateFedProx)
	}
	if o.LocalSteps < 0 || o.LocalSteps > MaxLocalSteps {
		return fmt.Errorf("fusion.local_steps = %d: want 1 to %d (0: the default %d)", o.LocalSteps, MaxLocalSteps, DefaultLocalSteps)
	}
	return nil
}

// LocalUpdate returns the local solve of a FedAvg or FedProx task, nil for
// a Newton one (or another method).
func (o Options) LocalUpdate() *LocalUpdate {
	if !IsRoundMethod(o.Method) || (o.Update != UpdateFedAvg && o.Update != UpdateFedProx) {
		return nil
	}
	lu := &LocalUpdate{Steps: o.LocalSteps, Mu: o.Mu}
	if lu.Steps == 0 {
		lu.Steps = DefaultLocalSteps
	}
	return lu
}

// Solve runs the local update from theta0 on the term f: up to Steps
// accepted damped Newton steps (jointopt) on f(θ) − (μ/2)‖θ − θ0‖², ending
// early at gradTol. It returns the θ reached and f's own evaluation at
// theta0 (the round's θ: its gradient is what the server's stopping rule
// sums).
func (lu LocalUpdate) Solve(f jointopt.Objective, theta0 []float64, gradTol float64) ([]float64, jointopt.Eval, error) {
	d := len(theta0)
	var first jointopt.Eval
	prox := func(th []float64) (jointopt.Eval, error) {
		e, err := f(th)
		if err != nil {
			return e, err
		}
		if first.Grad == nil {
			first = jointopt.Eval{Value: e.Value, Grad: append([]float64(nil), e.Grad...), Hess: append([]float64(nil), e.Hess...)}
		}
		if lu.Mu == 0 {
			return e, nil
		}
		out := jointopt.Eval{Value: e.Value, Grad: append([]float64(nil), e.Grad...), Hess: append([]float64(nil), e.Hess...)}
		for k := range d {
			x := th[k] - theta0[k]
			out.Value -= 0.5 * lu.Mu * x * x
			out.Grad[k] -= lu.Mu * x
			out.Hess[k*d+k] -= lu.Mu
		}
		return out, nil
	}
	s, err := jointopt.Start(theta0, jointopt.Config{GradTol: gradTol, MaxRounds: jointopt.MaxRoundsLimit})
	if err != nil {
		return nil, first, err
	}
	for !s.Done && s.Steps < lu.Steps {
		e, err := prox(s.Trial())
		if err != nil {
			return nil, first, err
		}
		if err := s.Observe(e); err != nil {
			return nil, first, err
		}
	}
	return s.Theta, first, nil
}

// UpdateStep is the combining step of MethodJoint's FedAvg and FedProx
// rules, one round: the clients' gradients at s.Trial() (evals, in client
// order; their Hessians are not read) summed with weights alpha decide the
// stop (‖Σ α_i ∇L_i‖₂ ≤ grad_tol: converged at the round's θ), and
// otherwise the next θ is Σ α_i θ_i of the clients' local updates (or the
// round cap ends the rounds there). It returns the summed evaluation
// (value and gradient). The state's Newton fields stay unused (Have stays
// false, so its trial is its Theta). A wrong-shaped or non-finite input is
// refused, naming the client, and leaves s unchanged.
func UpdateStep(s *jointopt.State, evals []jointopt.Eval, updates [][]float64, alpha []float64) (jointopt.Eval, error) {
	d := s.Dim()
	if s.Done {
		return jointopt.Eval{}, errors.New("fusion: the rounds have ended")
	}
	if len(evals) != len(alpha) || len(updates) != len(alpha) || len(alpha) == 0 {
		return jointopt.Eval{}, fmt.Errorf("fusion: %d evaluations and %d updates for %d weights", len(evals), len(updates), len(alpha))
	}
	sum := jointopt.Eval{Grad: make([]float64, d)}
	next := make([]float64, d)
	for i, e := range evals {
		if len(e.Grad) != d || len(updates[i]) != d {
			return jointopt.Eval{}, fmt.Errorf("fusion: client %d: gradient of %d and update of %d entries, want %d", i, len(e.Grad), len(updates[i]), d)
		}
		if math.IsNaN(e.Value) || math.IsInf(e.Value, 0) || !finite(e.Grad) || !finite(updates[i]) {
			return jointopt.Eval{}, fmt.Errorf("fusion: client %d: a non-finite value, gradient or update", i)
		}
		sum.Value += alpha[i] * e.Value
		for k := range d {
			sum.Grad[k] += alpha[i] * e.Grad[k]
			next[k] += alpha[i] * updates[i][k]
		}
	}
	s.Rounds++
	s.Base = sum
	gn := 0.0
	for _, g := range sum.Grad {
		gn += g * g
	}
	gn = math.Sqrt(gn)
	s.GradNorms = append(s.GradNorms, gn)
	switch {
	case gn <= s.Config.GradTol:
		s.Done, s.Reason = true, jointopt.StopConverged
	default:
		s.Theta = next
		s.Steps++
		if s.Rounds >= s.Config.MaxRounds {
			s.Done, s.Reason = true, jointopt.StopRoundCap
		}
	}
	return sum, nil
}

func finite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
