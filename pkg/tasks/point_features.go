package tasks

import (
	"fmt"
	"slices"

	"github.com/fedirl/fedirl/pkg/envs/bipedal"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/sampleirl"
)

// Feature sets of a control environment on a point probe
// (LookupPointFeatures), besides a lattice environment's own sets.
const (
	// FeaturesWalker is BipedalWalker's set (WalkerFeatures), whose span
	// holds Gymnasium's reward.
	FeaturesWalker = "walker"
	// FeaturesAdditive is the generic set of any Box environment:
	// AdditiveCentres Gaussians per coordinate of s′ and a, and a bias
	// (features.AdditiveRBF over the observation and action spaces).
	FeaturesAdditive = "additive"
)

// AdditiveCentres is the number of Gaussians per coordinate of the
// additive set.
const AdditiveCentres = 5

// PointFeatures is the feature map of a control environment's point probe:
// φ(s, a, s′, terminated) of one simulator step in the simulator's own
// spaces, evaluable at any step a policy takes and at the probe's
// recorded steps alike, with no lattice. Exactly one of RBF and Step is
// set: RBF is a lattice environment's feature set (ControlEnv.Features)
// evaluated, as on its lattice, at the state its observation holds
// (ControlEnv.StateOf) and the action; Step is evaluated at the raw
// observation, action and next observation (features.StepSpec). It is
// plain JSON, part of a study unit's key.
type PointFeatures struct {
	Env string `json:"env"`
	// Set is the feature set's name.
	Set  string             `json:"set"`
	RBF  *features.RBFSpec  `json:"rbf,omitempty"`
	Step *features.StepSpec `json:"step,omitempty"`
}

// LookupPointFeatures returns env's feature set set for a point probe whose
// steps hold each action for frames simulator steps: walker
// (BipedalWalker), additive (any Box environment), or a lattice
// environment's sets (ControlEnv.Features). The error names the set and
// the ones env has.
func LookupPointFeatures(env, set string, frames int) (PointFeatures, error) {
	out := PointFeatures{Env: env, Set: set}
	switch {
	case set == FeaturesWalker:
		if !slices.Contains(bipedal.Names(), env) {
			return PointFeatures{}, fmt.Errorf("feature set %q is BipedalWalker's; %s has none", set, env)
		}
		s := WalkerFeatures()
		out.Step = &s
		return out, nil
	case set == FeaturesAdditive:
		e, err := registry.Make(env, -1, nil, 0)
		if err != nil {
			return PointFeatures{}, err
		}
		os, as := e.ObservationSpace(), e.ActionSpace()
		if os.IsDiscrete() || as.IsDiscrete() {
			return PointFeatures{}, fmt.Errorf("feature set %q needs Box observations and actions; %s's actions are Discrete(%d)", set, env, as.N)
		}
		s, err := features.AdditiveRBF(os.Low, os.High, as.Low, as.High, AdditiveCentres)
		if err != nil {
			return PointFeatures{}, fmt.Errorf("feature set %q of %s: %w", set, env, err)
		}
		out.Step = &s
		return out, nil
	}
	ce, err := LookupControl(env)
	if err != nil {
		return PointFeatures{}, fmt.Errorf("feature set %q: %s has no lattice feature sets (its sets: %s, %s): %w", set, env, FeaturesWalker, FeaturesAdditive, err)
	}
	spec, err := ce.Features(set, frames)
	if err != nil {
		return PointFeatures{}, fmt.Errorf("%w (or %s on a point probe)", err, FeaturesAdditive)
	}
	out.RBF = &spec
	return out, nil
}

// Validate checks the feature map.
func (p PointFeatures) Validate() error {
	switch {
	case (p.RBF == nil) == (p.Step == nil):
		return fmt.Errorf("point features of %s: want exactly one of rbf and step", p.Env)
	case p.RBF != nil:
		ce, err := LookupControl(p.Env)
		if err != nil {
			return err
		}
		if err := p.RBF.Validate(); err != nil {
			return err
		}
		g := ce.Grids["paper"]
		if n, want := len(p.RBF.Axes), len(g.State)+len(g.Action); n != want {
			return fmt.Errorf("point features of %s: the RBF spec has %d axes, the state and action %d", p.Env, n, want)
		}
		return nil
	}
	return p.Step.Validate()
}

// Dim returns the number of features.
func (p PointFeatures) Dim() int {
	if p.RBF != nil {
		return p.RBF.Dim()
	}
	return p.Step.Dim()
}

// Names returns one label per feature.
func (p PointFeatures) Names() []string {
	if p.RBF != nil {
		return p.RBF.Names()
	}
	return p.Step.Names()
}

// Evaluator returns φ as a function writing into dst (allocated when of
// the wrong length) and returning it. It is not safe for concurrent use;
// call Evaluator once per goroutine.
func (p PointFeatures) Evaluator() (func(dst, obs, action, next []float64, terminated bool) []float64, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Step != nil {
		s := *p.Step
		return func(dst, obs, action, next []float64, terminated bool) []float64 {
			return s.Eval(dst, obs, action, next, terminated)
		}, nil
	}
	ce, _ := LookupControl(p.Env) // Validate found it
	ns, na := len(ce.Grids["paper"].State), len(ce.Grids["paper"].Action)
	spec := *p.RBF
	x, y := make([]float64, ns+na), make([]float64, ns)
	step := spec.StepDependent()
	return func(dst, obs, action, next []float64, terminated bool) []float64 {
		ce.StateOf(x[:ns], obs)
		copy(x[ns:], action)
		if step {
			return spec.EvalStep(dst, x, ce.StateOf(y, next), terminated)
		}
		return spec.Eval(dst, x)
	}, nil
}

// FeatureMap returns φ as the sample-based learner takes it; not safe for
// concurrent use.
func (p PointFeatures) FeatureMap() (sampleirl.FeatureMap, error) {
	f, err := p.Evaluator()
	if err != nil {
		return nil, err
	}
	return sampleirl.FeatureFunc{D: p.Dim(), F: f}, nil
}

// RewardFunc returns r = θᵀφ(s, a, s′, terminated) for a policy optimizer
// (ppo.RewardFunc's shape); not safe for concurrent use.
func (p PointFeatures) RewardFunc(theta []float64) (func(obs, action, next []float64, terminated bool) float64, error) {
	f, err := p.Evaluator()
	if err != nil {
		return nil, err
	}
	if len(theta) != p.Dim() {
		return nil, fmt.Errorf("reward: θ has %d entries, the features %d", len(theta), p.Dim())
	}
	theta = slices.Clone(theta)
	buf := make([]float64, p.Dim())
	return func(obs, action, next []float64, terminated bool) float64 {
		buf = f(buf, obs, action, next, terminated)
		r := 0.0
		for i, v := range buf {
			r += theta[i] * v
		}
		return r
	}, nil
}

// The columns of the walker set, in order (WalkerFeatures).
const (
	WalkerForwardVelocity  = iota // alive·v_x′ (obs′[2])
	WalkerAngleChange             // alive·(|angle′| − |angle|) (obs[0])
	WalkerTorque                  // alive·Σ clip(|a_i|, 0, 1)
	WalkerTerminal                // the step ends the episode
	WalkerBias                    // 1
	WalkerTilt                    // alive·|angle′|
	WalkerSpin                    // alive·|ω′| (obs′[1])
	WalkerVerticalVelocity        // alive·v_y′ (obs′[3])
	WalkerContact1                // alive·leg 1's ground contact (obs′[8])
	WalkerContact2                // alive·leg 2's ground contact (obs′[13])
	walkerColumns
)

// WalkerFeatures returns BipedalWalker's feature set "walker", ten columns
// of one step (s, a, s′, terminated) in the walker's own observation
// (bipedal_walker.py: obs[0] hull angle, obs[1] its angular velocity
// 2ω/FPS, obs[2] and obs[3] the velocity 0.3·v·(VIEWPORT/SCALE)/FPS, obs[8]
// and obs[13] the legs' ground contacts). Gymnasium's reward is
//
//	r = Δ(130·x/SCALE) − 5·Δ|angle| − 0.00035·MOTORS_TORQUE·Σ clip(|a_i|, 0, 1),   r = −100 on a fall,
//
// the hull's x not being observed. Box2D moves the hull by v′·dt in a step
// (symplectic Euler) up to its position corrections, so Δ(130·x/SCALE) =
// (130/SCALE)·v_x′/FPS = (130/SCALE/6)·obs′[2], and the reward is in the
// span of the first four columns with the weights WalkerTrueWeights (the
// progress, angle and torque columns zero on the step that ends an
// episode, whose reward the terminal column sets alone). Measured on
// Gymnasium's 16 reference episodes (TestWalkerFeaturesSpanTheReward),
// those weights give every step's reward within 0.07 (RMS 0.003), but
// for one kind of step no function of (s, a, s′, terminated) can tell:
// reaching the terrain's far end ends the episode with the ordinary
// step's reward, where the set says −100 as for a fall. The other six
// columns are generic terms a demonstrator's reward may also weigh: a
// bias, the tilt, the spin, the vertical velocity and the legs' contacts
// after the step.
func WalkerFeatures() features.StepSpec {
	next := func(k int, name string) features.StepTerm {
		return features.StepTerm{Kind: features.StepLinear, Of: features.StepNext, Index: k, Alive: true, Name: name}
	}
	terms := make([]features.StepTerm, walkerColumns)
	terms[WalkerForwardVelocity] = next(2, "alive*vx'")
	terms[WalkerAngleChange] = features.StepTerm{Kind: features.StepAbsChange, Index: 0, Alive: true, Name: "alive*(|angle'|-|angle|)"}
	terms[WalkerTorque] = features.StepTerm{Kind: features.StepClippedAbsSum, Alive: true, Name: "alive*sum|a|"}
	terms[WalkerTerminal] = features.StepTerm{Kind: features.StepTerminal, Name: "terminal"}
	terms[WalkerBias] = features.StepTerm{Kind: features.StepBias, Name: "bias"}
	terms[WalkerTilt] = features.StepTerm{Kind: features.StepAbs, Of: features.StepNext, Index: 0, Alive: true, Name: "alive*|angle'|"}
	terms[WalkerSpin] = features.StepTerm{Kind: features.StepAbs, Of: features.StepNext, Index: 1, Alive: true, Name: "alive*|angvel'|"}
	terms[WalkerVerticalVelocity] = next(3, "alive*vy'")
	terms[WalkerContact1] = next(8, "alive*contact1'")
	terms[WalkerContact2] = next(13, "alive*contact2'")
	return features.StepSpec{ObsDim: 24, ActDim: 4, Terms: terms}
}

// WalkerTrueWeights returns θ* of WalkerFeatures: the reward's
// coefficients, 130/SCALE/6 on the forward velocity, −5 on the angle's
// change, −0.00035·MOTORS_TORQUE = −0.028 on the torque (Gymnasium's
// constant 80, whatever a client's motors: the cost does not follow
// bipedal.Params.MotorsTorque), −100 on the end of an episode and 0 on the
// generic columns; the same for every client.
func WalkerTrueWeights() []float64 {
	const scale, motorsTorque = 30.0, 80.0
	theta := make([]float64, walkerColumns)
	theta[WalkerForwardVelocity] = 130 / scale / 6
	theta[WalkerAngleChange] = -5
	theta[WalkerTorque] = -0.00035 * motorsTorque
	theta[WalkerTerminal] = -100
	return theta
}
