// Package control is the paper's continuous-control study (§Gymnasium
// Benchmarks, Figures 3 and 5): per-client PPO experts → demonstrations →
// MaxEnt IRL on a lattice-discretised state–action space with RBF features →
// mean and barycentric fusion through the federation's in-process transport
// → PPO trained on each fused reward, judged by the true environment return.
//
// The study is a set of units of work (expert, demonstrations, local IRL,
// fusion, one PPO evaluation run), each written atomically to its own file
// under the run folder's units/ directory and named by a hash of everything
// it depends on: a killed run resumes without recomputing finished units,
// changing one setting recomputes exactly what depends on it, and a shard of
// a cluster job array runs a deterministic subset of the evaluation units
// (computing the upstream units they need) before `merge` assembles the
// outputs. The outputs (curves.csv, summary.*, diagnostics, figures,
// clips) are made from the unit files only, so a merged run equals a single
// run byte for byte.
//
// See README-control.md for every choice the paper leaves open.
package control

import (
	"bytes"
	"fmt"
	"github.com/fedirl/fedirl/pkg/experiments/jointfit"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/privacy"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
	"github.com/fedirl/fedirl/pkg/sampleirl"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// StudyName is the value of the config's "study" key.
const StudyName = "control"

// Methods evaluated, in table order: each client's own local reward, the
// fused rewards, and the true reward as the reference curve.
const (
	MethodLocal = "local"
	MethodMean  = "mean"
	// MethodNormalizedMean is the control for the barycenter: the
	// arithmetic mean of the clients' shift-normalized rewards, mapped back
	// and projected exactly as the barycenter is, so barycenter −
	// normalized-mean isolates transport from normalization.
	MethodNormalizedMean = "normalized-mean"
	MethodBarycenter     = "barycenter"
	MethodDebiased       = "debiased"
	// MethodProjected is the least-squares projection of the true lattice
	// reward onto the features: the best the feature set can do, which the
	// ladder's rung (b) checks.
	MethodProjected = "projected"
	MethodTrue      = "true"
)

// AllMethods lists the methods in table order.
var AllMethods = []string{MethodLocal, MethodPersonalized, MethodMean, MethodNormalizedMean, MethodBarycenter, MethodDebiased, MethodPooled, MethodProjected, MethodTrue}

// Protocols: the well-posed local IRL (the default) and the paper's as written.
const (
	ProtocolWellPosed = "well-posed"
	ProtocolPaper     = "paper"
)

// EnvConfig holds the per-environment settings (the columns of the
// appendix's hyperparameter tables).
type EnvConfig struct {
	// TotalExpertSteps is the PPO budget of each client's expert.
	TotalExpertSteps int `yaml:"total_expert_steps"`
	// ExpertPreset is the PPO preset of the experts ("" = the environment's RL Zoo preset).
	ExpertPreset string `yaml:"expert_preset"`
	// IRLIterations is the local MaxEnt budget.
	IRLIterations int `yaml:"irl_iterations"`
	// EvaluationSteps is the PPO budget of each evaluation run.
	EvaluationSteps int `yaml:"evaluation_steps"`
	// EvaluationPreset is the PPO preset of the evaluation runs ("" = the environment's RL Zoo preset).
	EvaluationPreset string `yaml:"evaluation_preset"`
	// Bins overrides lattice axis sizes by axis name (the appendix's --n-* flags), for every lattice preset.
	Bins map[string]int `yaml:"bins,omitempty"`
	// Features names the feature set: "paper" (64 RBF + bias),
	// "quadratic" (a set that spans the reward), "potential" (one that spans
	// the shaping potential), "held" (features of the state and the action
	// held through a lattice step of frame_skip frames) or "held_end" (held
	// with the episode's end and the legs' contacts predicted over the
	// step) or "held_step" (held_end's columns taken from the observed step
	// s → s′: averaged over each pair's replayed steps by the client's
	// model, from the step taken by a policy optimizer's reward), the last
	// five where the environment has one (tasks.ControlEnv). On the point
	// probe (lattices.<id>: points) the same sets are evaluated at the
	// state the observation holds, and two more exist
	// (tasks.LookupPointFeatures): "walker" (BipedalWalker's, whose span
	// holds its reward) and "additive" (Gaussians per coordinate, any Box
	// environment).
	Features string `yaml:"features"`
	// Absorbing, when set, overrides irl.absorbing for this environment:
	// false for a feature set without a bias column, into which the
	// absorbing state's value cannot be folded (LunarLander's held_step,
	// whose rest and crash columns value the episode's end themselves).
	Absorbing *bool `yaml:"absorbing,omitempty"`
	// DPClip is the clipping norm C of the clients' θ under privacy (> 0
	// when privacy.epsilon > 0; θ's scale differs by environment).
	DPClip float64 `yaml:"dp_clip,omitempty"`
	// FrameSkip holds every action of the lattice model's rollouts and
	// clones, of the demonstrations and of the ladder's planner for this
	// many simulator steps (frames), so that one lattice step is FrameSkip
	// frames (envs.FrameSkip: their rewards summed, the episode ending on
	// the frame it ends); the lattice model's discount is then γ^FrameSkip
	// per lattice step for γ per frame, and its time-limit horizon
	// ⌈T/FrameSkip⌉. The PPO runs (experts, evaluations) and the random
	// baseline act on every frame, and a learned reward is evaluated on
	// every frame, unless EvaluationFrameSkip holds the evaluations' actions. 0 (unset) is 1: every frame. Only environments whose
	// lattice model is built from rollouts (LunarLander) take a value > 1;
	// the presets set it for those and leave it unset for the others, so
	// a resolved config (which omits 0) reloads to the same settings.
	FrameSkip int `yaml:"frame_skip,omitempty"`
	// EvaluationFrameSkip holds every action of the PPO evaluation runs
	// (of the true, projected, local and fused rewards alike) for this
	// many frames: 1 acts on every frame, FrameSkip at the lattice's rate,
	// where a learned reward θᵀφ(s, a) of a lattice step is the reward of
	// one held step, as the lattice model and the demonstrations define
	// it. The budget (evaluation_steps) and the curve's spacing count
	// decisions (held steps); every return reported is still the episode's
	// total true reward. 0 (unset) is 1; other values are refused.
	EvaluationFrameSkip int `yaml:"evaluation_frame_skip,omitempty"`
	// DemoStart, when set, gives each training client its own region of
	// start states for its demonstrations (partial coverage): training
	// client k of K starts every demonstration episode with state
	// coordinate DemoStart.State uniform in the k-th of K equal intervals of
	// [Low, High), the other coordinates as the environment's reset draws
	// them; only the union of the clients' regions covers the task.
	DemoStart *StartRegion `yaml:"demo_start,omitempty"`
	// LocalIRL selects the clients' local IRL for this environment:
	// "lattice" (MaxEnt on the client's lattice model, the default; unset
	// is lattice) or "sample" (sampleirl.Learn: PPO on r_θ in the client's
	// own simulator alternating with MaxEnt steps on μ_D − μ̂_π, configured
	// by SampleIRL). Either learner's θ has the probe's feature dimension,
	// so every fusion and the evaluation read it alike; the pooled and
	// joint fits stay on the lattice model.
	LocalIRL string `yaml:"local_irl,omitempty"`
	// SampleIRL configures the sample-based learner (read only with
	// local_irl: sample); nil or a zero key is its default.
	SampleIRL *SampleIRLConfig `yaml:"sample_irl,omitempty"`
	// Probe is the environment's point probe (probe_points.go): a set of
	// steps of a public reference policy's rollouts in the nominal
	// simulator, on which the entry "points" of lattices.<id> studies the
	// environment without a lattice. Set exactly when lattices.<id> lists
	// points; nil otherwise.
	Probe *ProbeConfig `yaml:"probe,omitempty"`
}

// Local IRL learners (EnvConfig.LocalIRL).
const (
	LocalIRLLattice = "lattice"
	LocalIRLSample  = "sample"
)

// localIRL returns the environment's learner, lattice when unset.
func (ec EnvConfig) localIRL() string {
	if ec.LocalIRL == "" {
		return LocalIRLLattice
	}
	return ec.LocalIRL
}

// SampleIRLConfig is env.<id>.sample_irl, the sample-based learner's
// settings (package sampleirl); every zero value means the default in
// brackets.
type SampleIRLConfig struct {
	// PolicySteps is the PPO environment steps per outer iteration
	// [one rollout of the PPO preset: n_envs·n_steps].
	PolicySteps int `yaml:"policy_steps,omitempty" json:"policy_steps,omitempty"`
	// Episodes is the number of episodes of each estimate of μ̂_π and its standard error [64].
	Episodes int `yaml:"episodes,omitempty" json:"episodes,omitempty"`
	// ConfirmEpisodes is the size of the confirming estimate drawn where
	// the stopping rule passes, ≥ episodes [max(episodes, the client's
	// demonstrations)].
	ConfirmEpisodes int `yaml:"confirm_episodes,omitempty" json:"confirm_episodes,omitempty"`
	// MaxIter caps the outer iterations [50]; a weak client's is weak_clients.irl_iterations.
	MaxIter int `yaml:"max_iter,omitempty" json:"max_iter,omitempty"`
	// LearningRate is the reward step η [0.1].
	LearningRate float64 `yaml:"learning_rate,omitempty" json:"learning_rate,omitempty"`
	// Optimizer is "gd" or "adam" [gd].
	Optimizer string `yaml:"optimizer,omitempty" json:"optimizer,omitempty"`
	// Temperature is τ, PPO's entropy bonus with advantage normalisation
	// off (sampleirl.SoftPPO) [irl.temperature].
	Temperature float64 `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	// Tolerance is z of the stopping rule ‖μ_D − μ̂_π‖ ≤ z·SE [2], SE the
	// two-sample standard error s_π·sqrt(1/n_π + 1/n_D).
	Tolerance float64 `yaml:"tolerance,omitempty" json:"tolerance,omitempty"`
	// L2 is λ of −(λ/2)‖θ‖² [0].
	L2 float64 `yaml:"l2,omitempty" json:"l2,omitempty"`
	// PPOPreset names the policy's PPO preset [the environment's
	// evaluation_preset]; its linear schedules and reward normalisation
	// are turned off (the learner's budget grows per iteration, and a
	// rescaled reward changes the temperature).
	PPOPreset string `yaml:"ppo_preset,omitempty" json:"ppo_preset,omitempty"`
}

// validate checks c, naming the key env.<env>.sample_irl.<key>.
func (c *SampleIRLConfig) validate(env string) error {
	if c == nil {
		return nil
	}
	bad := func(k string, v any, want string) error {
		return fmt.Errorf("env.%s.sample_irl.%s: %v, want %s", env, k, v, want)
	}
	finiteNonNeg := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }
	switch {
	case c.PolicySteps < 0:
		return bad("policy_steps", c.PolicySteps, "≥ 1 (0: one PPO rollout)")
	case c.Episodes < 0 || c.Episodes == 1:
		return bad("episodes", c.Episodes, "≥ 2 (a standard error needs two; 0: 64)")
	case c.ConfirmEpisodes < 0 || (c.ConfirmEpisodes > 0 && c.ConfirmEpisodes < max(c.Episodes, 2)):
		return bad("confirm_episodes", c.ConfirmEpisodes, "≥ episodes (0: max(episodes, the demonstrations))")
	case c.MaxIter < 0:
		return bad("max_iter", c.MaxIter, "≥ 1 (0: 50)")
	case !finiteNonNeg(c.LearningRate):
		return bad("learning_rate", c.LearningRate, "> 0 (0: 0.1)")
	case c.Optimizer != "" && c.Optimizer != sampleirl.OptimizerGD && c.Optimizer != sampleirl.OptimizerAdam:
		return bad("optimizer", fmt.Sprintf("%q", c.Optimizer), sampleirl.OptimizerGD+" or "+sampleirl.OptimizerAdam)
	case !finiteNonNeg(c.Temperature):
		return bad("temperature", c.Temperature, "> 0 (0: irl.temperature)")
	case !finiteNonNeg(c.Tolerance):
		return bad("tolerance", c.Tolerance, "> 0 (0: 2)")
	case !finiteNonNeg(c.L2):
		return bad("l2", c.L2, "≥ 0")
	}
	if c.PPOPreset != "" {
		if _, err := ppo.Preset(c.PPOPreset); err != nil {
			return fmt.Errorf("env.%s.sample_irl.ppo_preset: %w", env, err)
		}
	}
	return nil
}

// StartRegion is a range of one simulator state coordinate (by Gymnasium's
// name, e.g. theta or x) split among the training clients.
type StartRegion struct {
	State string  `yaml:"state" json:"state"`
	Low   float64 `yaml:"low" json:"low"`
	High  float64 `yaml:"high" json:"high"`
}

// WeakClientsConfig makes a fraction of the training clients weak learners,
// the paper's weak-client ablation carried to continuous control: the last
// ⌈Fraction·K⌉ training clients stop their local IRL after IRLIterations
// major iterations, whatever env.<id>.irl_iterations says. Fraction 0 is
// no weak client.
type WeakClientsConfig struct {
	Fraction      float64 `yaml:"fraction"`
	IRLIterations int     `yaml:"irl_iterations"`
}

// FailingDemonstratorsConfig makes the last ⌈Fraction·K⌉ training clients
// demonstrate with a uniformly random policy instead of their expert: a
// fleet member whose demonstrations show only failures (on CartPole,
// episodes of a few tens of steps). Fraction 0 is none.
type FailingDemonstratorsConfig struct {
	Fraction float64 `yaml:"fraction"`
}

// PrivacyConfig is client-level local differential privacy of the θ_i the
// clients send to the fusion (pkg/privacy, the same mechanism as
// `fedirl client --dp-*`): θ_i is clipped to env.<id>.dp_clip and Gaussian
// noise calibrated to (Epsilon, Delta) for one release is added, from the
// client's own seeded stream, so the mean, barycentric and debiased fusions
// of a seed receive the same noisy θ_i; the stream is one per (seed,
// environment, ε, client), so two ε draw independent noise. Epsilon 0 is
// no privacy.
//
// PilotSeeds, when set, chooses each environment's clipping norm on pilot
// data the study does not otherwise use: C is the median ‖θ_i‖₂ of the
// training clients' local fits on those seeds (which must not be study
// seeds), so no client's C depends on the θ_i it clips; env.<id>.dp_clip
// must then be 0.
type PrivacyConfig struct {
	Epsilon    float64  `yaml:"epsilon"`
	Delta      float64  `yaml:"delta"`
	PilotSeeds []uint64 `yaml:"pilot_seeds,omitempty"`
}

// Config is the study's configuration; YAML keys follow the paper's
// hyperparameter names.
type Config struct {
	// Study must be "control".
	Study string `yaml:"study"`
	// Preset names the scale the config started from ("quick", "default",
	// "full"); a quick study's figures are titled as a smoke test.
	Preset string `yaml:"preset"`
	// Protocol labels the method the settings follow: "well-posed" (the
	// default: horizon-matched, absorbing-state local IRL solved by Newton's method,
	// lattices that pass the ladder, the same reward normalisation for every
	// evaluation) or "paper" (the appendix as written). The settings
	// themselves are the keys below; --protocol selects their preset.
	Protocol string `yaml:"protocol"`
	// Envs lists the environments, e.g. [Pendulum-v1, CartPole-v1, Acrobot-v1].
	Envs []string `yaml:"envs"`
	// Lattices lists the lattice presets per environment: paper, fine, ultra.
	Lattices map[string][]string `yaml:"lattices"`
	// Env holds the per-environment settings; a config file's partial block
	// changes only the keys it names.
	Env EnvConfigs `yaml:"env"`
	// NumberOfClients is the number of training clients (client indices 0…K−1).
	NumberOfClients int `yaml:"number_of_clients"`
	// HeldOutClients is the number of held-out clients (indices K…K+H−1): unseen physics of the same family.
	HeldOutClients int `yaml:"held_out_clients"`
	// ClientIDs lists the appendix clients (physics 0…10) that take part:
	// the number_of_clients training clients first, then the
	// held_out_clients held-out ones. Empty means 0, 1, …, K+H−1.
	ClientIDs []int `yaml:"client_ids,omitempty"`
	// WeakClients makes a fraction of the training clients stop their local IRL early.
	WeakClients WeakClientsConfig `yaml:"weak_clients,omitempty"`
	// NormalizationAnchor is the upper end of the normalized return:
	// "expert" (the client's PPO expert) or "best" (the better of the
	// expert and PPO on the true reward at the evaluation budget, so a weak
	// expert does not inflate normalized returns; needs method true).
	NormalizationAnchor string `yaml:"normalization_anchor"`
	// NumberOfSeeds is the number of independent repetitions of the whole pipeline.
	NumberOfSeeds int `yaml:"number_of_seeds"`
	// Seed is the first seed.
	Seed uint64 `yaml:"seed"`
	// EpisodesPerClient is the number of demonstration episodes per client.
	EpisodesPerClient int `yaml:"episodes_per_client"`
	// DeterministicExperts makes demonstrations use the expert's mode action.
	DeterministicExperts bool `yaml:"deterministic_experts"`
	// Model configures the sampled lattice model (K, successor crediting, γ).
	Model discretize.ModelConfig `yaml:"model"`
	// ModelRollouts configures the lattice model of environments whose
	// state cannot be set (LunarLander): replay clones of, or counts from,
	// the client's expert rollouts (RolloutConfig).
	ModelRollouts RolloutConfig `yaml:"model_rollouts"`
	// IRL holds the shared MaxEnt settings.
	IRL IRLConfig `yaml:"irl"`
	// Barycenter holds the fusion settings.
	Barycenter BarycenterConfig `yaml:"barycenter"`
	// Methods lists the rewards evaluated (default all).
	Methods []string `yaml:"methods"`
	// FailingDemonstrators makes some training clients demonstrate failures.
	FailingDemonstrators FailingDemonstratorsConfig `yaml:"failing_demonstrators,omitempty"`
	// Joint configures the pooled oracle and the personalized rewards
	// (methods pooled and personalized; jointfit).
	Joint jointfit.Config `yaml:"joint"`
	// NormalizeReward turns on PPO's reward normalisation (VecNormalize's
	// running std of the discounted return) in every evaluation run, of the
	// true, projected, local and fused rewards alike.
	NormalizeReward bool `yaml:"normalize_reward"`
	// Ladder configures the validation ladder.
	Ladder LadderConfig `yaml:"ladder"`
	// Privacy adds client-level differential privacy to the θ_i sent for fusion.
	Privacy PrivacyConfig `yaml:"privacy,omitempty"`
	// Attack, when set, makes the last attack.clients training clients
	// poison what they send to every fusion (poisoning.go); nil is an
	// honest federation.
	Attack *AttackConfig `yaml:"attack,omitempty"`
	// Clips configures the run folder's clips/: per environment, one
	// episode of the expert and one of the PPO policy trained on each
	// method's reward, as animated GIFs (clips.go).
	Clips ClipsConfig `yaml:"clips"`
	// LogEvery is the PPO evaluation curve's spacing in environment steps.
	LogEvery int `yaml:"log_every"`
	// MemoryLimitGB refuses a lattice whose model would need more.
	MemoryLimitGB float64 `yaml:"memory_limit_gb"`
}

// IRLConfig is the appendix's IRL block.
type IRLConfig struct {
	LearningRate float64 `yaml:"learning_rate"`
	Temperature  float64 `yaml:"temperature"`
	L2           float64 `yaml:"l2"`
	Optimizer    string  `yaml:"optimizer"`
	// SolverTol is the soft value iteration's and visit propagation's stopping tolerance.
	SolverTol float64 `yaml:"solver_tol"`
	// Solver is "newton" (Newton's method on the soft Bellman equation and a
	// Krylov solve for the visits, mdp.Options.Newton) or "fixed-point"
	// (sweeps with Anderson acceleration).
	Solver string `yaml:"solver"`
	// Anderson is the history length of the fixed-point solver's Anderson acceleration.
	Anderson int `yaml:"anderson"`
	// Horizon is the lattice MDP's horizon: "time-limit" (the environment's
	// episode limit T, which truncated demonstrations share), "auto"
	// (time-limit when γ^T ≥ 0.01, i.e. when the discounted weight beyond
	// the limit is at least 1 % of a step's; infinite otherwise, where the
	// two differ by less than that) or "infinite" (the paper's model).
	Horizon string `yaml:"horizon"`
	// Absorbing learns the value of ending an episode (irl.Config.Absorbing,
	// DAC's absorbing state) and folds it into the bias, so the reward sent
	// has a zero-valued terminal state like the simulator's.
	Absorbing bool `yaml:"absorbing"`
	// GradTol stops the local IRL once ‖∇‖₂ ≤ grad_tol (negative: never early).
	GradTol float64 `yaml:"grad_tol"`
	// MatchDiscount gives each environment's lattice model (so its IRL and
	// its ladder planner) the discount γ of its evaluation PPO preset
	// instead of model.gamma: MaxEnt determines a reward only up to
	// potential shaping at the γ it learns with, and shaping at one γ is
	// not neutral for a learner at another (Pendulum's RL Zoo preset has γ
	// 0.9, CartPole's 0.98).
	MatchDiscount bool `yaml:"match_discount"`
}

// LadderConfig configures the validation ladder's rungs and the thresholds
// a lattice must pass to be marked valid.
type LadderConfig struct {
	// Episodes is the number of episodes of the lattice planner and of the
	// random policy per client and seed.
	Episodes int `yaml:"episodes"`
	// PlannerMin is the least normalized return of the true-reward lattice
	// planner (rung a).
	PlannerMin float64 `yaml:"planner_min"`
	// ProjectedMin is the least normalized return of PPO on the projected
	// true reward (rung b).
	ProjectedMin float64 `yaml:"projected_min"`
}

// BarycenterConfig is the appendix's barycenter block.
type BarycenterConfig struct {
	// Epsilon is ε in squared lattice spacings.
	Epsilon float64 `yaml:"epsilon"`
	// SinkhornIterations per barycenter step.
	SinkhornIterations int `yaml:"sinkhorn_iterations"`
	// BarycenterIterations is the number of outer iterations.
	BarycenterIterations int `yaml:"barycenter_iterations"`
	// SigmaMode is the shift σ of every reward-space fusion
	// (normalized-mean, barycenter, debiased): "shared" (one σ from all
	// clients' rewards) or "per-client" (each client's σ_i from its own
	// reward, so one client's scale cannot flatten another's measure).
	SigmaMode string `yaml:"sigma_mode"`
}

// EnvConfigs maps an environment id to its settings. Decoding YAML into it
// merges each block into the block already there (a preset's), key by
// key, so `env: {CartPole-v1: {evaluation_steps: 6000}}` changes one
// budget and keeps the preset's others; unknown keys are errors.
type EnvConfigs map[string]EnvConfig

// UnmarshalYAML implements yaml.Unmarshaler.
func (m *EnvConfigs) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: env: want a mapping from environment ids to blocks", n.Line)
	}
	if *m == nil {
		*m = EnvConfigs{}
	}
	known := yamlKeys(reflect.TypeOf(EnvConfig{}))
	for i := 0; i+1 < len(n.Content); i += 2 {
		id, block := n.Content[i].Value, n.Content[i+1]
		if block.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: env.%s: want a mapping of settings", block.Line, id)
		}
		for j := 0; j+1 < len(block.Content); j += 2 {
			if k := block.Content[j].Value; !slices.Contains(known, k) {
				return fmt.Errorf("line %d: env.%s.%s: unknown key (known: %s)", block.Content[j].Line, id, k, strings.Join(known, ", "))
			}
		}
		old := (*m)[id]
		v := old
		v.Bins = maps.Clone(v.Bins)
		if v.SampleIRL != nil { // a partial sample_irl merges into a copy of the preset's
			c := *v.SampleIRL
			v.SampleIRL = &c
		}
		if v.Probe != nil { // a partial probe block merges into a copy of the preset's
			c := *v.Probe
			v.Probe = &c
		}
		if err := checkSubKeys(block, id, "sample_irl", reflect.TypeOf(SampleIRLConfig{})); err != nil {
			return err
		}
		if err := checkSubKeys(block, id, "probe", reflect.TypeOf(ProbeConfig{})); err != nil {
			return err
		}
		v.FrameSkip, v.EvaluationFrameSkip = 0, 0
		if err := block.Decode(&v); err != nil {
			return fmt.Errorf("env.%s: %w", id, err)
		}
		// An absent frame_skip or evaluation_frame_skip keeps the preset's;
		// an explicit 0 is refused.
		for _, f := range []struct {
			key       string
			got, base *int
		}{{"frame_skip", &v.FrameSkip, &old.FrameSkip}, {"evaluation_frame_skip", &v.EvaluationFrameSkip, &old.EvaluationFrameSkip}} {
			if *f.got != 0 {
				continue
			}
			*f.got = *f.base
			for j := 0; j+1 < len(block.Content); j += 2 {
				if block.Content[j].Value == f.key {
					return fmt.Errorf("line %d: env.%s.%s: 0, want ≥ 1 (1: every frame)", block.Content[j].Line, id, f.key)
				}
			}
		}
		(*m)[id] = v
	}
	return nil
}

// checkSubKeys refuses unknown keys in the mapping under key sub of an
// env block (node.Decode does not, unlike the file's decoder).
func checkSubKeys(block *yaml.Node, id, sub string, t reflect.Type) error {
	known := yamlKeys(t)
	for j := 0; j+1 < len(block.Content); j += 2 {
		if block.Content[j].Value != sub {
			continue
		}
		n := block.Content[j+1]
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: env.%s.%s: want a mapping of settings", n.Line, id, sub)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i].Value; !slices.Contains(known, k) {
				return fmt.Errorf("line %d: env.%s.%s.%s: unknown key (known: %s)", n.Content[i].Line, id, sub, k, strings.Join(known, ", "))
			}
		}
	}
	return nil
}

// yamlKeys lists the YAML keys of struct type t's fields.
func yamlKeys(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
			out = append(out, k)
		}
	}
	return out
}

// LoadConfig reads a YAML or JSON config over base (keys it omits keep
// base's values); unknown keys and a config of another study are errors.
func LoadConfig(path string, base Config) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("reading config: %w", err)
	}
	var probe struct {
		Study string `yaml:"study"`
	}
	if err := yaml.Unmarshal(b, &probe); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	if probe.Study != "" && probe.Study != StudyName {
		return Config{}, fmt.Errorf("config %s: study %q is not the control study (want study: %s)", path, probe.Study, StudyName)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	c := base
	c.Env = maps.Clone(base.Env) // the merge must not write into base's map
	c.Lattices = maps.Clone(base.Lattices)
	if h := base.ModelRollouts.HaltReward; h != nil { // nor into base's halt reward
		v := *h
		c.ModelRollouts.HaltReward = &v
	}
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, c.Validate()
}

// YAML returns the resolved config as YAML.
func (c Config) YAML() ([]byte, error) { return yaml.Marshal(c) }

// Validate returns an error naming the first bad key.
func (c Config) Validate() error {
	if c.Study != StudyName {
		return fmt.Errorf("study: %q, want %q", c.Study, StudyName)
	}
	if err := c.validateClients(); err != nil {
		return err
	}
	if len(c.Privacy.PilotSeeds) > 0 {
		if c.Privacy.Epsilon == 0 {
			return fmt.Errorf("privacy.pilot_seeds needs privacy.epsilon > 0")
		}
		for _, ps := range c.Privacy.PilotSeeds {
			if ps >= c.Seed && ps < c.Seed+uint64(c.NumberOfSeeds) {
				return fmt.Errorf("privacy.pilot_seeds: %d is a study seed (seeds %d…%d): pilot data must not be reused", ps, c.Seed, c.Seed+uint64(c.NumberOfSeeds)-1)
			}
		}
	}
	if c.Privacy.Epsilon == 0 && c.Privacy.Delta != 0 {
		return fmt.Errorf("privacy.delta = %v needs privacy.epsilon > 0 (epsilon 0 means no privacy)", c.Privacy.Delta)
	}
	if c.Protocol != ProtocolWellPosed && c.Protocol != ProtocolPaper {
		return fmt.Errorf("protocol: %q, want %q or %q", c.Protocol, ProtocolWellPosed, ProtocolPaper)
	}
	if len(c.Envs) == 0 {
		return fmt.Errorf("envs: empty")
	}
	for _, e := range c.Envs {
		ec, ok := c.Env[e]
		points := slices.Contains(c.Lattices[e], LatticePoints)
		ce, err := tasks.LookupControl(e)
		if err != nil && !(points && len(c.Lattices[e]) == 1 && ok) {
			return fmt.Errorf("envs: %w", err)
		}
		if !ok {
			return fmt.Errorf("env.%s: missing (total_expert_steps, irl_iterations, evaluation_steps)", e)
		}
		if points {
			if err := c.validatePoints(e, ec); err != nil {
				return err
			}
		} else if ec.Probe != nil {
			return fmt.Errorf("env.%s.probe: set, but lattices.%s (%s) does not list %q, which studies it: add it or remove the probe", e, e, strings.Join(c.Lattices[e], ", "), LatticePoints)
		}
		switch {
		case ec.TotalExpertSteps < 1:
			return fmt.Errorf("env.%s.total_expert_steps: %d, want ≥ 1", e, ec.TotalExpertSteps)
		case ec.IRLIterations < 1:
			return fmt.Errorf("env.%s.irl_iterations: %d, want ≥ 1", e, ec.IRLIterations)
		case ec.EvaluationSteps < 1:
			return fmt.Errorf("env.%s.evaluation_steps: %d, want ≥ 1", e, ec.EvaluationSteps)
		}
		// lattice: the environment has a lattice entry, whose model, features
		// and learner the checks below are about.
		lattice := ce != nil && slices.ContainsFunc(c.Lattices[e], func(l string) bool { return l != LatticePoints })
		switch {
		case ec.FrameSkip < 0:
			return fmt.Errorf("env.%s.frame_skip: %d, want ≥ 1 (1: every frame)", e, ec.FrameSkip)
		case !lattice:
		case ec.FrameSkip > 1 && !ce.Counted:
			return fmt.Errorf("env.%s.frame_skip: %d: holding actions is supported where the lattice model is built from rollouts (LunarLander); %s's model is sampled one simulator step per lattice step", e, ec.FrameSkip, e)
		case ec.EvaluationFrameSkip != 0 && ec.EvaluationFrameSkip != 1 && ec.EvaluationFrameSkip != ec.FrameSkip:
			return fmt.Errorf("env.%s.evaluation_frame_skip: %d, want 1 (every frame) or frame_skip %d (the lattice's rate)", e, ec.EvaluationFrameSkip, max(ec.FrameSkip, 1))
		}
		if lattice {
			spec, err := ce.Features(ec.Features, ec.FrameSkip)
			if err != nil {
				return fmt.Errorf("env.%s.features: %w", e, err)
			}
			if ec.absorbing(c.IRL) && !spec.Bias {
				return fmt.Errorf("env.%s.features %q has no bias column to fold the absorbing state's value into: set env.%s.absorbing: false (the set's own columns value the episode's end) or choose a set with a bias", e, ec.Features, e)
			}
			if spec.StepDependent() && (c.ModelRollouts.Clones < 1 || !ce.Counted) {
				return fmt.Errorf("env.%s.features %q: features of the observed step need a replay model (model_rollouts.clones ≥ 1)", e, ec.Features)
			}
		}
		switch {
		case c.Privacy.Epsilon == 0 && ec.DPClip != 0:
			return fmt.Errorf("env.%s.dp_clip = %v needs privacy.epsilon > 0", e, ec.DPClip)
		case len(c.Privacy.PilotSeeds) > 0 && ec.DPClip != 0:
			return fmt.Errorf("env.%s.dp_clip = %v: the clipping norm comes from privacy.pilot_seeds; set one or the other", e, ec.DPClip)
		case len(c.Privacy.PilotSeeds) > 0:
		case c.Privacy.Epsilon != 0:
			if err := (privacy.Params{Epsilon: c.Privacy.Epsilon, Delta: c.Privacy.Delta, Clip: ec.DPClip}).Validate(); err != nil {
				return fmt.Errorf("privacy (env.%s.dp_clip): %w", e, err)
			}
		}
		switch ec.LocalIRL {
		case "", LocalIRLLattice, LocalIRLSample:
		default:
			return fmt.Errorf("env.%s.local_irl: %q, want %q or %q", e, ec.LocalIRL, LocalIRLLattice, LocalIRLSample)
		}
		if err := ec.SampleIRL.validate(e); err != nil {
			return err
		}
		for _, p := range []string{ec.ExpertPreset, ec.EvaluationPreset} {
			if p != "" {
				if _, err := ppo.Preset(p); err != nil {
					return fmt.Errorf("env.%s: %w", e, err)
				}
			}
		}
		if ds := ec.DemoStart; ds != nil {
			labels, err := stateLabels(e)
			if err != nil {
				return fmt.Errorf("env.%s.demo_start: %w", e, err)
			}
			if !slices.Contains(labels, ds.State) {
				return fmt.Errorf("env.%s.demo_start.state: %q, want one of %s", e, ds.State, strings.Join(labels, ", "))
			}
			if !(ds.Low < ds.High) || math.IsInf(ds.Low, 0) || math.IsInf(ds.High, 0) {
				return fmt.Errorf("env.%s.demo_start: low %v < high %v, both finite, needed", e, ds.Low, ds.High)
			}
		}
		if len(c.Lattices[e]) == 0 {
			return fmt.Errorf("lattices.%s: no lattice preset", e)
		}
		for _, l := range c.Lattices[e] {
			if l == LatticePoints {
				continue
			}
			g, err := ce.Grid(l, ec.Bins)
			if err != nil {
				return fmt.Errorf("lattices.%s: %w", e, err)
			}
			grid, err := discretize.New(g)
			if err != nil {
				return fmt.Errorf("lattices.%s %s: %w", e, l, err)
			}
			if err := discretize.CheckSize(grid, c.Model, int64(c.MemoryLimitGB*1e9)); err != nil {
				return fmt.Errorf("lattices.%s %s (memory_limit_gb %g): %w", e, l, c.MemoryLimitGB, err)
			}
		}
	}
	switch {
	case c.NumberOfClients < 1:
		return fmt.Errorf("number_of_clients: %d, want ≥ 1", c.NumberOfClients)
	case c.HeldOutClients < 0:
		return fmt.Errorf("held_out_clients: %d, want ≥ 0", c.HeldOutClients)
	case c.NumberOfSeeds < 1:
		return fmt.Errorf("number_of_seeds: %d, want ≥ 1", c.NumberOfSeeds)
	case c.EpisodesPerClient < 1:
		return fmt.Errorf("episodes_per_client: %d, want ≥ 1", c.EpisodesPerClient)
	case !(c.IRL.LearningRate > 0) || !(c.IRL.Temperature > 0) || c.IRL.L2 < 0:
		return fmt.Errorf("irl: learning_rate %g and temperature %g must be > 0, l2 %g ≥ 0", c.IRL.LearningRate, c.IRL.Temperature, c.IRL.L2)
	case !slices.Contains(irl.Optimizers, c.IRL.Optimizer):
		return fmt.Errorf("irl.optimizer: %q, want one of %s", c.IRL.Optimizer, strings.Join(irl.Optimizers, ", "))
	case c.IRL.Solver != "newton" && c.IRL.Solver != "fixed-point":
		return fmt.Errorf("irl.solver: %q, want newton or fixed-point", c.IRL.Solver)
	case c.IRL.Horizon != "auto" && c.IRL.Horizon != "time-limit" && c.IRL.Horizon != "infinite":
		return fmt.Errorf("irl.horizon: %q, want auto, time-limit or infinite", c.IRL.Horizon)
	case math.IsNaN(c.IRL.GradTol) || c.IRL.GradTol == 0:
		return fmt.Errorf("irl.grad_tol: %g, want > 0 (stop at that gradient norm) or < 0 (never stop early)", c.IRL.GradTol)
	case c.Ladder.Episodes < 1:
		return fmt.Errorf("ladder.episodes: %d, want ≥ 1", c.Ladder.Episodes)
	case math.IsNaN(c.Ladder.PlannerMin) || math.IsNaN(c.Ladder.ProjectedMin):
		return fmt.Errorf("ladder: planner_min %g and projected_min %g must be numbers", c.Ladder.PlannerMin, c.Ladder.ProjectedMin)
	case !(c.Barycenter.Epsilon > 0) || c.Barycenter.SinkhornIterations < 1 || c.Barycenter.BarycenterIterations < 1:
		return fmt.Errorf("barycenter: epsilon %g > 0, sinkhorn_iterations %d ≥ 1 and barycenter_iterations %d ≥ 1 needed",
			c.Barycenter.Epsilon, c.Barycenter.SinkhornIterations, c.Barycenter.BarycenterIterations)
	case c.LogEvery < 1:
		return fmt.Errorf("log_every: %d, want ≥ 1", c.LogEvery)
	case !(c.MemoryLimitGB > 0):
		return fmt.Errorf("memory_limit_gb: %g, want > 0", c.MemoryLimitGB)
	}
	if err := c.ModelRollouts.Validate(); err != nil {
		return err
	}
	if err := c.Clips.validate(); err != nil {
		return err
	}
	if err := c.Model.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if (slices.Contains(c.Methods, MethodPooled) || slices.Contains(c.Methods, MethodPersonalized)) && !c.Joint.Pooled {
		return fmt.Errorf("methods pooled and personalized need joint.pooled: true")
	}
	if slices.Contains(c.Methods, MethodPersonalized) && !c.Joint.Personalized {
		return fmt.Errorf("method personalized needs joint.personalized: true")
	}
	if err := c.Joint.Validate(); err != nil {
		return err
	}
	if f := c.FailingDemonstrators.Fraction; !(f >= 0 && f < 1) {
		return fmt.Errorf("failing_demonstrators.fraction = %v, want in [0, 1) (at least one client demonstrates with its expert)", f)
	}
	if len(c.Methods) == 0 {
		return fmt.Errorf("methods: empty (known: %s)", strings.Join(AllMethods, ", "))
	}
	for _, m := range c.Methods {
		if !slices.Contains(AllMethods, m) && !slices.Contains(fusion.Methods(), m) {
			return fmt.Errorf("methods: %q unknown (known: %s and the fusion methods %s)", m, strings.Join(AllMethods, ", "), strings.Join(fusion.Methods(), ", "))
		}
	}
	if err := c.Attack.validate(c.NumberOfClients); err != nil {
		return err
	}
	switch c.NormalizationAnchor {
	case AnchorExpert:
	case AnchorBest:
		if !slices.Contains(c.Methods, MethodTrue) {
			return fmt.Errorf("normalization_anchor %q needs method %q in methods (or use %q)", AnchorBest, MethodTrue, AnchorExpert)
		}
	default:
		return fmt.Errorf("normalization_anchor: %q, want %q or %q", c.NormalizationAnchor, AnchorExpert, AnchorBest)
	}
	switch c.Barycenter.SigmaMode {
	case fusion.SigmaShared, fusion.SigmaPerClient:
	default:
		return fmt.Errorf("barycenter.sigma_mode: %q, want %q or %q", c.Barycenter.SigmaMode, fusion.SigmaShared, fusion.SigmaPerClient)
	}
	return nil
}

// Normalization anchors (Config.NormalizationAnchor).
const (
	AnchorExpert = "expert"
	AnchorBest   = "best"
)

// AllClients returns the appendix indices of every client, training first.
func (c Config) AllClients() []int {
	if len(c.ClientIDs) > 0 {
		return slices.Clone(c.ClientIDs)
	}
	out := make([]int, c.NumberOfClients+c.HeldOutClients)
	for i := range out {
		out[i] = i
	}
	return out
}

// TrainingClients returns the appendix indices of the training clients.
func (c Config) TrainingClients() []int { return c.AllClients()[:c.NumberOfClients] }

// weak reports whether training client id stops its local IRL early.
// failing reports whether training client id demonstrates with a random
// policy (failing_demonstrators).
func (c Config) failing(id int) bool {
	tr := c.TrainingClients()
	k := slices.Index(tr, id)
	n := int(math.Ceil(c.FailingDemonstrators.Fraction*float64(len(tr)) - 1e-9))
	return k >= 0 && k >= len(tr)-n
}

func (c Config) weak(id int) bool {
	tr := c.TrainingClients()
	k := slices.Index(tr, id)
	nWeak := int(math.Ceil(c.WeakClients.Fraction*float64(len(tr)) - 1e-9))
	return k >= 0 && k >= len(tr)-nWeak
}

func (c Config) validateClients() error {
	if len(c.ClientIDs) == 0 {
		if n := c.NumberOfClients + c.HeldOutClients; n > envs.MaxClient+1 {
			return fmt.Errorf("number_of_clients + held_out_clients = %d: the appendix has %d clients (0…%d)", n, envs.MaxClient+1, envs.MaxClient)
		}
	} else {
		if len(c.ClientIDs) != c.NumberOfClients+c.HeldOutClients {
			return fmt.Errorf("client_ids: %d ids for number_of_clients %d + held_out_clients %d", len(c.ClientIDs), c.NumberOfClients, c.HeldOutClients)
		}
		seen := map[int]bool{}
		for i, id := range c.ClientIDs {
			if err := envs.CheckClient(id); err != nil || id < 0 {
				return fmt.Errorf("client_ids[%d] = %d: want an appendix client 0…%d", i, id, envs.MaxClient)
			}
			if seen[id] {
				return fmt.Errorf("client_ids[%d] = %d: listed twice", i, id)
			}
			seen[id] = true
		}
	}
	if w := c.WeakClients; w.Fraction != 0 {
		if !(w.Fraction > 0 && w.Fraction < 1) || w.IRLIterations < 1 {
			return fmt.Errorf("weak_clients: fraction %g in (0, 1) and irl_iterations %d ≥ 1 needed", w.Fraction, w.IRLIterations)
		}
	}
	return nil
}

// absorbing returns irl.absorbing for this environment: ec.Absorbing where
// set, the study's irl.absorbing otherwise.
func (ec EnvConfig) absorbing(irl IRLConfig) bool {
	if ec.Absorbing != nil {
		return *ec.Absorbing
	}
	return irl.Absorbing
}
