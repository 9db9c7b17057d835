package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
	"github.com/fedirl/fedirl/pkg/sampleirl"
)

// SampleLearner is the client's federation.Learner for a robot with a
// simulator but no lattice model: sampleirl.Learn (MaxEnt IRL with a soft
// PPO policy trained in the client's own simulator, stopping when the
// feature gap ‖μ_D − μ̂_π‖ is within its two-sample standard error) on the
// client's demonstrations in the simulator's own spaces, with the task's
// features as a map evaluable at any step:
//
//   - a "control" task: its probe's RBF features of the state the
//     observation holds and the action (ControlProbe.FeatureMap); the task's
//     env must be the client's simulator (Env);
//   - a "points" task whose probe carries an rbf map over the points'
//     coordinates (PointFeatureMap: a point is (s, a) or (s, a, s′) in the
//     simulator's observation and action). A points task whose Φ is data at
//     its points (phi, phi_npy, phi_file) gives no features off the points
//     and is refused.
//
// Other families (lattice, gridworld) are lattice tasks: MaxEntLearner.
// θ is on the task's features, so it fuses with lattice clients' θ; a
// multi-round task warm-starts θ₀ from the previous fused θ. It answers no
// joint task (RefuseJoint): its gradient μ_D − μ̂_π is a Monte Carlo
// estimate and it has no Hessian, so it is no federation.JointLearner.
// Only θ and summary numbers leave it.
//
// The objective is the task's: τ (the policy's temperature,
// sampleirl.SoftPPO) and λ (L2) are the task's irl temperature and l2
// unless Temperature and L2 set the client's own (θ's scale grows with τ,
// so a client on another τ than the task's other clients fuses a θ on
// another scale).
type SampleLearner struct {
	// Env is the id of MakeEnv's simulator (as fedirl env list names it).
	Env string
	// MakeEnv makes copy i of the client's simulator, with its own physics
	// (ppo.EnvMaker; copies 0..n_envs−1 train PPO, copy n_envs evaluates).
	MakeEnv ppo.EnvMaker
	// Demos are the client's demonstrations in the simulator's spaces.
	Demos []sampleirl.Trajectory
	// Config configures sampleirl.Learn. Learn replaces its PPO by
	// sampleirl.SoftPPO(Config.PPO, τ), its L2 by λ and its Theta0 by the
	// warm start (zeros in round 1).
	Config sampleirl.Config
	// Temperature is the client's τ > 0; 0 takes the task's irl temperature
	// (irl's default 10⁻³ when the task sets none).
	Temperature float64
	// L2 is the client's λ ≥ 0; nil takes the task's irl l2.
	L2 *float64
	// Logf, when set, receives one line per outer iteration.
	Logf func(format string, args ...any)
}

var _ federation.JointRefuser = (*SampleLearner)(nil)

// ErrNoFeatureMap marks a task whose features exist only as data at its
// probe points (a points task with phi, phi_npy or phi_file): a learner
// that needs φ at every step of a simulator cannot use them.
var ErrNoFeatureMap = errors.New("no feature map off the probe points")

// RefuseJoint implements federation.JointRefuser: every joint task
// (gradient/Hessian or local-update rounds) is refused with the reason;
// a one-shot task gives nil.
func (l *SampleLearner) RefuseJoint(spec federation.TaskSpec) error {
	opt, err := fusion.DecodeOptions(spec.Fusion)
	if err != nil {
		return fmt.Errorf("task %s: %w", spec.ID, err)
	}
	if !fusion.IsRoundMethod(opt.Method) {
		return nil
	}
	return fmt.Errorf("task %s runs joint rounds (fusion %q: each client's exact MaxEnt gradient and Hessian at the server's trial θ), which the sample-based learner cannot answer: its gradient μ_D − μ̂_π is a Monte Carlo estimate and it has no Hessian, so Newton rounds on them would not reach the pooled fit; join a one-shot task (fusion mean, barycentric, …), or this one with a lattice model (fedirl client --learner maxent --mdp)",
		spec.ID, opt.MethodName())
}

// Learn implements federation.Learner.
func (l *SampleLearner) Learn(ctx context.Context, spec federation.TaskSpec, warmStart []float64) (federation.LocalResult, error) {
	if err := l.RefuseJoint(spec); err != nil {
		return federation.LocalResult{}, err
	}
	if l.MakeEnv == nil {
		return federation.LocalResult{}, fmt.Errorf("task %s: the sample-based learner has no simulator", spec.ID)
	}
	phi, err := l.taskFeatures(spec)
	if err != nil {
		return federation.LocalResult{}, err
	}
	if d := phi.Dim(); d != spec.ThetaDim {
		return federation.LocalResult{}, fmt.Errorf("task %s wants theta_dim %d, its features have %d", spec.ID, spec.ThetaDim, d)
	}
	if warmStart != nil && len(warmStart) != spec.ThetaDim {
		return federation.LocalResult{}, fmt.Errorf("task %s: the warm start has %d components, theta_dim %d", spec.ID, len(warmStart), spec.ThetaDim)
	}
	cfg, err := l.taskConfig(spec)
	if err != nil {
		return federation.LocalResult{}, err
	}
	cfg.Theta0 = slices.Clone(warmStart)
	if l.Logf != nil {
		resolved, err := cfg.Resolve()
		if err != nil {
			return federation.LocalResult{}, fmt.Errorf("sample-based IRL: %w", err)
		}
		user := cfg.OnIteration
		cfg.OnIteration = func(it sampleirl.Iteration) {
			l.Logf("task %s: sample IRL iteration %d of at most %d: feature gap ‖μ_D − μ̂_π‖ = %.4g, its standard error %.4g (stops at ≤ %g·SE), %d PPO steps so far",
				spec.ID, it.Index, resolved.MaxIter, it.Gap, it.GapSE, resolved.Tolerance, it.EnvSteps)
			if user != nil {
				user(it)
			}
		}
	}
	res, err := sampleirl.Learn(ctx, l.MakeEnv, phi, l.Demos, cfg)
	if err != nil {
		return federation.LocalResult{}, fmt.Errorf("sample-based IRL: %w", err)
	}
	return federation.LocalResult{Theta: res.Theta, DemoCount: len(l.Demos), Iterations: res.Iterations, GradNorm: res.Gap,
		Converged: res.Converged, StopReason: res.StopReason}, nil
}

// taskConfig returns l.Config with the task's objective: SoftPPO at τ and λ.
func (l *SampleLearner) taskConfig(spec federation.TaskSpec) (sampleirl.Config, error) {
	icfg, err := DecodeIRL(spec.IRL)
	if err != nil {
		return sampleirl.Config{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	if icfg, err = icfg.Resolve(); err != nil {
		return sampleirl.Config{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	tau, lambda := icfg.Temperature, icfg.L2
	if l.Temperature != 0 {
		tau = l.Temperature
	}
	if l.L2 != nil {
		lambda = *l.L2
	}
	cfg := l.Config
	cfg.PPO = sampleirl.SoftPPO(cfg.PPO, tau)
	cfg.L2 = lambda
	return cfg, nil
}

// taskFeatures returns the task's feature map for the client's simulator.
func (l *SampleLearner) taskFeatures(spec federation.TaskSpec) (sampleirl.FeatureMap, error) {
	switch spec.EnvFamily {
	case Control{}.Name():
		dec := json.NewDecoder(bytes.NewReader(spec.Probe))
		dec.DisallowUnknownFields()
		var p ControlProbe
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("task %s: decoding control probe: %w", spec.ID, err)
		}
		if p.Env != l.Env {
			return nil, fmt.Errorf("task %s is on %s and this client's simulator is %s: join it with a %s simulator (--env %s)", spec.ID, p.Env, l.Env, p.Env, p.Env)
		}
		phi, err := p.FeatureMap()
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", spec.ID, err)
		}
		return phi, nil
	case PointsFamilyName:
		p, err := DecodePointProbe(spec.Probe)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", spec.ID, err)
		}
		e, err := l.MakeEnv(0)
		if err != nil {
			return nil, fmt.Errorf("task %s: making the simulator: %w", spec.ID, err)
		}
		phi, err := PointFeatureMap(p, e.ObservationSpace().Dim(), e.ActionSpace().Dim())
		if errors.Is(err, ErrNoFeatureMap) {
			return nil, fmt.Errorf("task %s (points) gives its Φ only as data at its points (phi, phi_npy or phi_file), %w, which the sample-based learner needs at every step of its simulator: ask for the task with an rbf feature map over the points' coordinates (probe.rbf), or submit your reward at the points from your own model (a reward submission, Submission.reward)", spec.ID, err)
		}
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", spec.ID, err)
		}
		return phi, nil
	}
	return nil, fmt.Errorf("task %s is a %q task, whose features live on a lattice: the sample-based learner takes %q tasks and %q tasks with an rbf feature map; join this one with a lattice model (fedirl client --learner maxent --mdp)",
		spec.ID, spec.EnvFamily, Control{}.Name(), PointsFamilyName)
}

// PointFeatureMap returns the rbf feature map of a points probe for a
// client whose simulator has observations of obsDim values and actions of
// actDim values. A point's coordinates are, in order, the observation s,
// the action a (a Discrete action as its index) and optionally the next
// observation s′ — obsDim+actDim or 2·obsDim+actDim of them, which tells
// the two apart — so that φ(s, a, s′) of a simulator step is the rbf spec
// at (s, a) or (s, a, s′), and at a probe point's coordinates it is that
// point's row of the task's Φ. A probe whose Φ is data (phi, phi_npy,
// phi_file) gives an error wrapping ErrNoFeatureMap. The map allocates
// nothing per call and is not safe for concurrent use.
func PointFeatureMap(p PointProbe, obsDim, actDim int) (sampleirl.FeatureMap, error) {
	if p.RBF == nil {
		return nil, ErrNoFeatureMap
	}
	rows, err := p.PointRows()
	if err != nil {
		return nil, err
	}
	spec := *p.RBF
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("rbf: %w", err)
	}
	dim := len(rows[0])
	if len(spec.Axes) != dim {
		return nil, fmt.Errorf("rbf: %d axes, the points have %d coordinates", len(spec.Axes), dim)
	}
	if spec.StepDependent() {
		return nil, fmt.Errorf("rbf: step-dependent features cannot be evaluated at points")
	}
	var next bool
	switch dim {
	case obsDim + actDim:
	case 2*obsDim + actDim:
		next = true
	default:
		return nil, fmt.Errorf("the points have %d coordinates; a point of this simulator is (s, a), %d + %d = %d coordinates, or (s, a, s′), %d: this task is for another simulator",
			dim, obsDim, actDim, obsDim+actDim, 2*obsDim+actDim)
	}
	x := make([]float64, dim)
	return sampleirl.FeatureFunc{D: spec.Dim(), F: func(dst, obs, action, nextObs []float64, _ bool) []float64 {
		copy(x, obs)
		copy(x[obsDim:], action)
		if next {
			copy(x[obsDim+actDim:], nextObs)
		}
		return spec.Eval(dst, x)
	}}, nil
}

// SampleConfig is a sample-based client's settings file (fedirl client
// --sample-config, YAML or JSON): sampleirl.Config's fields by their json
// names, the PPO trainer as a preset and a partial block over it, and τ.
// Every absent key has sampleirl's default (in brackets); an explicit 0 is
// refused where 0 would mean that default. Unknown keys are refused.
type SampleConfig struct {
	// PolicySteps is PPO's environment steps per outer iteration [one rollout: n_envs·n_steps].
	PolicySteps int `yaml:"policy_steps,omitempty" json:"policy_steps,omitempty"`
	// Episodes is the size of each estimate of μ̂_π [64].
	Episodes int `yaml:"episodes,omitempty" json:"episodes,omitempty"`
	// ConfirmEpisodes is the confirming estimate's size, ≥ episodes [max(episodes, the demonstrations)].
	ConfirmEpisodes int `yaml:"confirm_episodes,omitempty" json:"confirm_episodes,omitempty"`
	// MaxEpisodeSteps cuts a sampled episode [0: the simulator ends every episode].
	MaxEpisodeSteps int `yaml:"max_episode_steps,omitempty" json:"max_episode_steps,omitempty"`
	// MaxIter caps the outer iterations [50].
	MaxIter int `yaml:"max_iter,omitempty" json:"max_iter,omitempty"`
	// Tolerance is z of the stopping rule [2].
	Tolerance float64 `yaml:"tolerance,omitempty" json:"tolerance,omitempty"`
	// Optimizer is "gd" or "adam" [gd].
	Optimizer string `yaml:"optimizer,omitempty" json:"optimizer,omitempty"`
	// LearningRate is the reward step η [0.1].
	LearningRate float64 `yaml:"learning_rate,omitempty" json:"learning_rate,omitempty"`
	// L2 is the client's λ [the task's irl l2].
	L2 *float64 `yaml:"l2,omitempty" json:"l2,omitempty"`
	// Gamma is the discount of the feature expectations [PPO's gamma].
	Gamma float64 `yaml:"gamma,omitempty" json:"gamma,omitempty"`
	// Beta1, Beta2 and Epsilon are Adam's constants [0.9, 0.999, 1e-8].
	Beta1   float64 `yaml:"beta1,omitempty" json:"beta1,omitempty"`
	Beta2   float64 `yaml:"beta2,omitempty" json:"beta2,omitempty"`
	Epsilon float64 `yaml:"epsilon,omitempty" json:"epsilon,omitempty"`
	// PPOPreset names ppo's preset [the environment's own, where ppo has
	// one, else sb3: as the control study]; its linear schedules and reward
	// normalisation are turned off (the learner's budget grows per
	// iteration, and a rescaled reward changes the temperature).
	PPOPreset string `yaml:"ppo_preset,omitempty" json:"ppo_preset,omitempty"`
	// PPO overrides the preset key by key (ppo.Config's names: n_envs,
	// n_steps, batch_size, n_epochs, hidden, …).
	PPO yaml.Node `yaml:"ppo,omitempty" json:"-"`
	// Temperature is the client's τ [the task's irl temperature].
	Temperature float64 `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	// MLP is the neural-reward learner's block (MLPSettings; fedirl client
	// --learner mlp), refused by the linear learner's Apply.
	MLP *MLPSettings `yaml:"mlp,omitempty" json:"mlp,omitempty"`
}

// sampleZeroRefused are the keys whose 0 would mean the default, with what is wanted.
var sampleZeroRefused = map[string]string{
	"policy_steps": "≥ 1 (leave the key out for one PPO rollout)", "episodes": "≥ 2 (leave the key out for 64)",
	"confirm_episodes": "≥ episodes (leave the key out for max(episodes, the demonstrations))",
	"max_iter":         "≥ 1 (leave the key out for 50)", "tolerance": "> 0 (leave the key out for 2)",
	"learning_rate": "> 0 (leave the key out for 0.1)", "gamma": "in (0, 1] (leave the key out for PPO's gamma)",
	"beta1": "in (0, 1) (leave the key out for 0.9)", "beta2": "in (0, 1) (leave the key out for 0.999)",
	"epsilon": "> 0 (leave the key out for 1e-8)", "temperature": "τ > 0 (leave the key out for the task's irl temperature)",
}

// ReadSampleConfig reads a sample-based client's settings file (see
// SampleConfig); errors name the file, the line and the key.
func ReadSampleConfig(path string) (SampleConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return SampleConfig{}, fmt.Errorf("sample config: %w", err)
	}
	c, err := DecodeSampleConfig(b)
	if err != nil {
		return SampleConfig{}, fmt.Errorf("sample config %s: %w", path, err)
	}
	return c, nil
}

// DecodeSampleConfig decodes the YAML (or JSON) of a SampleConfig,
// refusing unknown keys (in the ppo block too) and explicit zeros that
// would mean a default.
func DecodeSampleConfig(b []byte) (SampleConfig, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return SampleConfig{}, err
	}
	if len(doc.Content) == 0 {
		return SampleConfig{}, nil // an empty file: every default
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return SampleConfig{}, fmt.Errorf("line %d: want a mapping of settings (policy_steps: …, episodes: …)", root.Line)
	}
	known := yamlKeys(reflect.TypeOf(SampleConfig{}))
	ppoKnown := yamlKeys(reflect.TypeOf(ppo.Config{}))
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if !slices.Contains(known, k.Value) {
			return SampleConfig{}, fmt.Errorf("line %d: %s: unknown key (known: %s)", k.Line, k.Value, strings.Join(known, ", "))
		}
		if want, ok := sampleZeroRefused[k.Value]; ok && v.Kind == yaml.ScalarNode {
			var x float64
			if v.Decode(&x) == nil && x == 0 {
				return SampleConfig{}, fmt.Errorf("line %d: %s: 0, want %s", k.Line, k.Value, want)
			}
		}
		if k.Value == "mlp" {
			if err := checkMLPBlock(v); err != nil {
				return SampleConfig{}, err
			}
		}
		if k.Value == "ppo" {
			if v.Kind != yaml.MappingNode {
				return SampleConfig{}, fmt.Errorf("line %d: ppo: want a mapping of PPO settings (n_steps: …)", v.Line)
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				if pk := v.Content[j]; !slices.Contains(ppoKnown, pk.Value) {
					return SampleConfig{}, fmt.Errorf("line %d: ppo.%s: unknown key (known: %s)", pk.Line, pk.Value, strings.Join(ppoKnown, ", "))
				}
			}
		}
	}
	var c SampleConfig
	if err := root.Decode(&c); err != nil {
		return SampleConfig{}, err
	}
	if c.L2 != nil && (!(*c.L2 >= 0) || math.IsInf(*c.L2, 0)) {
		return SampleConfig{}, fmt.Errorf("l2: %v, want a finite λ ≥ 0", *c.L2)
	}
	if !(c.Temperature >= 0) || math.IsInf(c.Temperature, 0) {
		return SampleConfig{}, fmt.Errorf("temperature: %v, want a finite τ > 0", c.Temperature)
	}
	return c, nil
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

// SamplePPO returns the PPO trainer of c for environment env: the preset
// (PPOPreset, or env's own where ppo has one, else sb3) with its linear
// schedules and reward normalisation off, then c's ppo block over it.
func (c SampleConfig) SamplePPO(env string) (ppo.Config, error) {
	name := c.PPOPreset
	if name == "" {
		name = env
		if _, err := ppo.Preset(name); err != nil {
			name = "sb3"
		}
	}
	pc, err := ppo.Preset(name)
	if err != nil {
		return ppo.Config{}, fmt.Errorf("ppo_preset: %w", err)
	}
	pc.LinearLR, pc.LinearClip, pc.NormalizeReward = false, false, false
	if !c.PPO.IsZero() {
		if err := c.PPO.Decode(&pc); err != nil {
			return ppo.Config{}, fmt.Errorf("ppo: %w", err)
		}
	}
	if pc.NormalizeReward {
		return ppo.Config{}, fmt.Errorf("ppo.normalize_reward: true rescales the learned reward, and with it the policy's temperature; leave it off")
	}
	return pc.WithDefaults(), nil
}

// Apply sets l's Config (with seed), Temperature and L2 from c for l.Env,
// and checks the result as sampleirl.Learn will.
func (c SampleConfig) Apply(l *SampleLearner, seed uint64) error {
	if c.MLP != nil {
		return fmt.Errorf("mlp: the neural-reward learner's block (its network, reward steps, held-out demonstrations, distillation; fedirl client --learner mlp), and this learner's reward is linear on the task's features: leave the block out, or run the neural-reward learner")
	}
	pc, err := c.SamplePPO(l.Env)
	if err != nil {
		return err
	}
	l.Config = sampleirl.Config{PPO: pc, Seed: seed, Gamma: c.Gamma, PolicySteps: c.PolicySteps, Episodes: c.Episodes,
		ConfirmEpisodes: c.ConfirmEpisodes, MaxEpisodeSteps: c.MaxEpisodeSteps, MaxIter: c.MaxIter, Tolerance: c.Tolerance,
		Optimizer: c.Optimizer, LearningRate: c.LearningRate, Beta1: c.Beta1, Beta2: c.Beta2, Epsilon: c.Epsilon}
	l.Temperature, l.L2 = c.Temperature, c.L2
	check := l.Config
	check.PPO = sampleirl.SoftPPO(check.PPO, max(c.Temperature, 1e-3))
	if _, err := check.Resolve(); err != nil {
		return err
	}
	return nil
}
