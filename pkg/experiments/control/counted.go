package control

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// RolloutConfig configures the lattice model of a simulator whose state
// cannot be set (LunarLander): Episodes episodes of the client's expert,
// each action replaced with probability Epsilon by a uniform random one.
// With Clones = K ≥ 1 the model is discretize.ReplayModel: for every cell
// the rollouts visit, K of the visited states are cloned by replaying their
// episode's actions (the simulator is deterministic given its reset seed)
// and stepped once with every action level, for Expand rounds also in the
// cells those clones reach; with Clones 0 the rollouts' own transitions are
// counted (discretize.Counter); with Clones ≥ 1 and Count both are pooled
// (discretize.ReplayConfig.Count). Either way the true lattice reward is
// the mean simulator reward of the steps behind each row. Successor is the
// replay model's successor rule (discretize.ReplayConfig.Successor:
// nearest, the default, multilinear or displacement).
type RolloutConfig struct {
	Episodes int     `json:"episodes" yaml:"episodes"`
	Epsilon  float64 `json:"epsilon" yaml:"epsilon"`
	Clones   int     `json:"clones" yaml:"clones"`
	Expand   int     `json:"expand,omitempty" yaml:"expand"`
	Count    bool    `json:"count,omitempty" yaml:"count"`
	// Successor is omitted from the units' keys when unset (nearest).
	Successor string `json:"successor,omitempty" yaml:"successor,omitempty"`
	// HaltReward, when set, ends the episode with this reward on every pair
	// of a cell never cloned (discretize.ReplayConfig.HaltReward); unset,
	// such a cell is a self-loop of reward 0.
	HaltReward *float64 `json:"halt_reward,omitempty" yaml:"halt_reward,omitempty"`
	// FrameSkip is env.<id>.frame_skip of the environment whose model the
	// settings build, copied in by the study (so the units it specifies are
	// keyed by it) when > 1; not a key of model_rollouts.
	FrameSkip int `json:"frame_skip,omitempty" yaml:"-"`
}

// replayConfig returns the replay model's settings for these rollouts and
// the client's lattice-model settings mc (its seed and γ).
func (rc RolloutConfig) replayConfig(mc discretize.ModelConfig) discretize.ReplayConfig {
	return discretize.ReplayConfig{Clones: rc.Clones, Expand: rc.Expand, Count: rc.Count, Successor: rc.Successor,
		HaltReward: rc.HaltReward, Seed: mc.Seed, Gamma: mc.Gamma}
}

// frameSkip returns env.<id>.frame_skip, 1 when unset.
func (s *Study) frameSkip(env string) int { return max(s.cfg.Env[env].FrameSkip, 1) }

// heldEnv returns client's simulator of env (its observation noise seeded
// by noise) with every action held for skip frames (envs.FrameSkip; the
// simulator itself when skip ≤ 1): what the lattice model's rollouts and
// clones, the demonstrations and the ladder's planner step.
func heldEnv(env string, client, skip int, noise uint64) (envs.Env, error) {
	e, err := registry.Make(env, client, nil, noise)
	if err != nil || skip <= 1 {
		return e, err
	}
	return envs.NewFrameSkip(e, skip)
}

// Validate returns an error naming the first bad field.
func (r RolloutConfig) Validate() error {
	switch {
	case r.Episodes < 1:
		return fmt.Errorf("model_rollouts.episodes: %d, want ≥ 1", r.Episodes)
	case !(r.Epsilon >= 0 && r.Epsilon <= 1):
		return fmt.Errorf("model_rollouts.epsilon: %g, want in [0, 1]", r.Epsilon)
	case r.Clones < 0:
		return fmt.Errorf("model_rollouts.clones: %d, want ≥ 0 (0 counts the rollouts' own transitions)", r.Clones)
	case r.Expand < 0:
		return fmt.Errorf("model_rollouts.expand: %d, want ≥ 0", r.Expand)
	case r.Clones == 0 && (r.Count || r.Expand > 0 || r.Successor != "" || r.HaltReward != nil):
		return fmt.Errorf("model_rollouts: count, expand, successor and halt_reward apply to replay clones (clones ≥ 1); clones 0 counts the rollouts alone")
	case r.HaltReward != nil && (math.IsNaN(*r.HaltReward) || math.IsInf(*r.HaltReward, 0)):
		return fmt.Errorf("model_rollouts.halt_reward: %v, want a finite number", *r.HaltReward)
	case r.Successor != "" && r.Successor != discretize.SuccessorNearest && r.Successor != discretize.SuccessorMultilinear && r.Successor != discretize.SuccessorDisplacement:
		return fmt.Errorf("model_rollouts.successor: %q, want %s, %s or %s", r.Successor, discretize.SuccessorNearest, discretize.SuccessorMultilinear, discretize.SuccessorDisplacement)
	}
	return nil
}

// rollouts returns the model_rollouts settings of a counted environment
// (whose lattice model is built from its expert's rollouts) and the key of
// the client's expert unit they roll out; nil and "" for a simulator whose
// state can be set, so that the unit keys of those environments do not
// change.
func (s *Study) rollouts(env string, client int, seed uint64) (*RolloutConfig, string, error) {
	if ce, _ := tasks.LookupControl(env); ce == nil || !ce.Counted {
		return nil, "", nil
	}
	eu, _, err := s.expertUnit(env, client, seed)
	if err != nil {
		return nil, "", err
	}
	r := s.cfg.ModelRollouts
	if k := s.frameSkip(env); k > 1 {
		r.FrameSkip = k
	}
	return &r, eu.key, nil
}

// latticeModel returns a client's lattice model (infinite horizon), its
// true lattice reward and the client's feature matrix, built once per
// process for the client's ladder, local IRL and fidelity units
// (sharedWork): sampled in cells (s.model) when rc is nil, built from the
// client's expert rollouts (rolloutModel) otherwise. The feature matrix is
// the probe's phi, except for features of the observed step
// (features.RBFSpec.StepDependent) on a model built from rollouts: each
// pair its replayed steps observed has the mean of those steps' features
// (clientFeatures). The MDP is a shallow copy whose slices must not be
// written, and so is the matrix.
func (s *Study) latticeModel(ctx context.Context, p tasks.ControlProbe, g *discretize.Grid, phi *mat.Dense, env string, client int, seed uint64,
	mc discretize.ModelConfig, rc *RolloutConfig, workers int) (*mdp.MDP, []float64, *mat.Dense, error) {
	probeKey := key(p)
	if rc == nil {
		m, r, err := s.model(ctx, probeKey, g, env, client, mc, workers)
		return m, r, phi, err
	}
	eu, _, err := s.expertUnit(env, client, seed)
	if err != nil {
		return nil, nil, nil, err
	}
	k := key(struct {
		Probe    string
		Client   int
		Seed     uint64
		Model    discretize.ModelConfig
		Rollouts RolloutConfig
		Expert   string
	}{probeKey, client, seed, mc, *rc, eu.key})
	m, r, f, err := s.shared.cachedModel(k, func() (*mdp.MDP, []float64, *mat.Dense, error) {
		return s.rolloutModel(ctx, g, p.RBF, env, client, seed, eu, mc, *rc, workers)
	})
	if err != nil || f == nil {
		return m, r, phi, err
	}
	return m, r, clientFeatures(phi, f, discretize.ObservedPairs(m, r, rc.HaltReward)), nil
}

// clientFeatures returns phi with each observed pair's row replaced by its
// row of the mean step features f.
func clientFeatures(phi, f *mat.Dense, observed []bool) *mat.Dense {
	out := mat.DenseCopyOf(phi)
	for k, o := range observed {
		if o {
			out.SetRow(k, f.RawRowView(k))
		}
	}
	return out
}

// rolloutModel runs the client's ε-greedy expert rollouts and builds the
// replay (or counted) model from them, with the mean features of each
// pair's replayed steps where spec's features depend on the observed step
// (nil otherwise).
func (s *Study) rolloutModel(ctx context.Context, g *discretize.Grid, spec features.RBFSpec, env string, client int, seed uint64, eu unit,
	mc discretize.ModelConfig, rc RolloutConfig, workers int) (*mdp.MDP, []float64, *mat.Dense, error) {
	_, pol, err := s.readExpert(eu)
	if err != nil {
		return nil, nil, nil, err
	}
	ce, err := tasks.LookupControl(env)
	if err != nil {
		return nil, nil, nil, err
	}
	e, err := heldEnv(env, client, rc.FrameSkip, seedOf(seed, "rollout-noise", client))
	if err != nil {
		return nil, nil, nil, err
	}
	space := e.ActionSpace()
	rng := rand.New(rand.NewPCG(seedOf(seed, "rollouts", client), 0))
	c := discretize.NewCounter(g)
	var eps []discretize.Episode
	act := make([]float64, space.Dim())
	x, nx := make([]float64, g.StateDim()), make([]float64, g.StateDim())
	for ep := range rc.Episodes {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, err
		}
		rec := discretize.Episode{Seed: seedOf(seed, "rollout-reset", client, ep)}
		obs := e.Reset(rec.Seed)
		ce.StateOf(x, obs)
		rec.States = append(rec.States, slices.Clone(x))
		for {
			if rng.Float64() < rc.Epsilon {
				space.Sample(act, rng)
			} else {
				pol.Act(act, obs, nil)
			}
			o, r, term, trunc := e.Step(act)
			obs = o
			ce.StateOf(nx, obs)
			if rc.Clones == 0 {
				if err := c.AddState(x, act, nx, term, r); err != nil {
					return nil, nil, nil, err
				}
			}
			rec.Actions = append(rec.Actions, slices.Clone(act))
			rec.States = append(rec.States, slices.Clone(nx))
			rec.Rewards = append(rec.Rewards, r)
			x, nx = nx, x
			if term || trunc {
				rec.Terminated = term
				break
			}
		}
		eps = append(eps, rec)
	}
	if rc.Clones == 0 {
		if spec.StepDependent() {
			return nil, nil, nil, fmt.Errorf("features of the observed step need a replay model (model_rollouts.clones ≥ 1), not counted rollouts")
		}
		m, err := c.Model(mc.Gamma)
		if err != nil {
			return nil, nil, nil, err
		}
		return m, c.Reward(), nil, nil
	}
	newSim := func() (discretize.Replayer, error) {
		return heldEnv(env, client, rc.FrameSkip, seedOf(seed, "rollout-noise", client))
	}
	m, r, f, _, err := discretize.ReplayModelSteps(ctx, g, newSim, ce.StateOf, eps, rc.replayConfig(mc), workers, stepFeatures(spec, g))
	return m, r, f, err
}

// stepFeatures returns spec's features of an observed step on g's state
// and action coordinates for discretize.ReplayModelSteps, or none (a zero
// StepFeatures) where spec's features do not depend on the step.
func stepFeatures(spec features.RBFSpec, g *discretize.Grid) discretize.StepFeatures {
	if !spec.StepDependent() {
		return discretize.StepFeatures{}
	}
	ns := g.StateDim()
	return discretize.StepFeatures{Dim: spec.Dim(), Eval: func(dst, x, action, next []float64, terminated bool) {
		xa := make([]float64, ns+len(action)) // called from the replay's workers
		copy(xa, x)
		copy(xa[ns:], action)
		spec.EvalStep(dst, xa, next, terminated)
	}}
}
