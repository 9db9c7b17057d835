package tasks

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fedirl/fedirl/pkg/rl/nn"
	"github.com/fedirl/fedirl/pkg/sampleirl"
)

// MLPSettings is the mlp block of a sample-based client's settings file
// (SampleConfig.MLP, fedirl client --learner mlp --sample-config): the
// neural-reward learner's own settings. The loop's settings are the file's
// top-level keys, shared with the linear learner (policy_steps, episodes,
// confirm_episodes, max_episode_steps, max_iter, tolerance, optimizer,
// learning_rate, l2, gamma, beta1, beta2, epsilon, ppo_preset, ppo), with
// sampleirl.MLPConfig's defaults where they differ (optimizer adam,
// learning_rate 3e-3, l2 0: weight decay of the network). Every absent key
// has its default (in brackets); an explicit 0 that would mean the default
// is refused; unknown keys are refused.
type MLPSettings struct {
	// Net is the reward network's shape: hidden, activation, output_gain
	// [sampleirl's: hidden [32], tanh, output_gain 0.1].
	Net *sampleirl.NetConfig `yaml:"net,omitempty" json:"net,omitempty"`
	// RewardSteps is the discriminator's optimizer steps per iteration [20].
	RewardSteps int `yaml:"reward_steps,omitempty" json:"reward_steps,omitempty"`
	// Holdout is the fraction of the demonstrations held out from the
	// discriminator's training for the stopping rule, in (0, 1) [0.2].
	Holdout float64 `yaml:"holdout,omitempty" json:"holdout,omitempty"`
	// Distill configures the regression of a fused reward at a points
	// task's probe into a network of Net's shape (fedirl client
	// --distill-out; nn.Fit's settings) [nn.Fit's defaults].
	Distill *DistillSettings `yaml:"distill,omitempty" json:"distill,omitempty"`
}

// DistillSettings is the distill block of MLPSettings: nn.FitConfig's
// fields by their json names.
type DistillSettings struct {
	// LearningRate is Adam's step size [1e-2].
	LearningRate float64 `yaml:"learning_rate,omitempty" json:"learning_rate,omitempty"`
	// MaxSteps caps the full-batch Adam steps [5000].
	MaxSteps int `yaml:"max_steps,omitempty" json:"max_steps,omitempty"`
	// Patience is the steps without a new best error before the step is halved [250].
	Patience int `yaml:"patience,omitempty" json:"patience,omitempty"`
	// Tol stops the fit at RMSE ≤ tol·std(fused reward) [1e-3].
	Tol float64 `yaml:"tol,omitempty" json:"tol,omitempty"`
}

// mlpZeroRefused are the keys of the mlp block (by their path) whose 0
// would mean the default, with what is wanted.
var mlpZeroRefused = map[string]string{
	"mlp.reward_steps":          "≥ 1 (leave the key out for 20)",
	"mlp.holdout":               "a fraction in (0, 1) (leave the key out for 0.2)",
	"mlp.net.output_gain":       "> 0 (leave the key out for 0.1)",
	"mlp.distill.learning_rate": "> 0 (leave the key out for 1e-2)",
	"mlp.distill.max_steps":     "≥ 1 (leave the key out for 5000)",
	"mlp.distill.patience":      "≥ 1 (leave the key out for 250)",
	"mlp.distill.tol":           "> 0 (leave the key out for 1e-3)",
}

// checkMLPBlock checks the mlp block's keys (and its net and distill
// blocks') before decoding: a mapping, known keys, no explicit zero that
// would mean a default; errors name the line and the key's path.
func checkMLPBlock(v *yaml.Node) error {
	sub := map[string]reflect.Type{
		"net":     reflect.TypeOf(sampleirl.NetConfig{}),
		"distill": reflect.TypeOf(DistillSettings{}),
	}
	return checkYAMLBlock(v, "mlp", reflect.TypeOf(MLPSettings{}), func(path string, k, val *yaml.Node) error {
		if t, ok := sub[k.Value]; ok && path == "mlp."+k.Value {
			return checkYAMLBlock(val, path, t, nil)
		}
		return nil
	})
}

// checkYAMLBlock checks that v is a mapping whose keys are the yaml keys
// of t, refusing explicit zeros listed in mlpZeroRefused; nested is called
// for every key (its path, key and value nodes).
func checkYAMLBlock(v *yaml.Node, path string, t reflect.Type, nested func(path string, k, val *yaml.Node) error) error {
	if v.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: %s: want a mapping of settings", v.Line, path)
	}
	known := yamlKeys(t)
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		p := path + "." + k.Value
		if !slices.Contains(known, k.Value) {
			return fmt.Errorf("line %d: %s: unknown key (known: %s)", k.Line, p, strings.Join(known, ", "))
		}
		if want, ok := mlpZeroRefused[p]; ok && val.Kind == yaml.ScalarNode {
			var x float64
			if val.Decode(&x) == nil && x == 0 {
				return fmt.Errorf("line %d: %s: 0, want %s", k.Line, p, want)
			}
		}
		if nested != nil {
			if err := nested(p, k, val); err != nil {
				return err
			}
		}
	}
	return nil
}

// ApplyMLP sets l's Config (with seed), its network choice (OwnNet) and its
// distillation settings from c for l.Env, and checks the result as
// sampleirl.LearnMLP will. The policy is SoftPPO at τ = 1, AIRL's fixed
// point, so the file's temperature is refused.
func (c SampleConfig) ApplyMLP(l *MLPSampleLearner, seed uint64) error {
	if c.Temperature != 0 {
		return fmt.Errorf("temperature: %v; the neural-reward learner trains its policy at τ = 1, where the entropy bonus is the discriminator's −log π term (AIRL's fixed point f = log π_E); leave the key out", c.Temperature)
	}
	pc, err := c.SamplePPO(l.Env)
	if err != nil {
		return err
	}
	cfg := sampleirl.MLPConfig{Config: sampleirl.Config{PPO: sampleirl.SoftPPO(pc, 1), Seed: seed, Gamma: c.Gamma, PolicySteps: c.PolicySteps,
		Episodes: c.Episodes, ConfirmEpisodes: c.ConfirmEpisodes, MaxEpisodeSteps: c.MaxEpisodeSteps, MaxIter: c.MaxIter,
		Tolerance: c.Tolerance, Optimizer: c.Optimizer, LearningRate: c.LearningRate, Beta1: c.Beta1, Beta2: c.Beta2, Epsilon: c.Epsilon}}
	if c.L2 != nil {
		cfg.L2 = *c.L2
	}
	l.OwnNet, l.Distill = false, nn.FitConfig{}
	if m := c.MLP; m != nil {
		if m.Net != nil {
			cfg.Net, l.OwnNet = *m.Net, true
		}
		cfg.RewardSteps, cfg.Holdout = m.RewardSteps, m.Holdout
		if d := m.Distill; d != nil {
			for _, f := range []struct {
				key string
				v   float64
			}{{"learning_rate", d.LearningRate}, {"max_steps", float64(d.MaxSteps)}, {"patience", float64(d.Patience)}, {"tol", d.Tol}} {
				if f.v < 0 || math.IsInf(f.v, 0) || math.IsNaN(f.v) {
					return fmt.Errorf("mlp.distill.%s: %v, want > 0", f.key, f.v)
				}
			}
			l.Distill = nn.FitConfig{LearningRate: d.LearningRate, MaxSteps: d.MaxSteps, Patience: d.Patience, Tol: d.Tol}
		}
	}
	l.Config = cfg
	if _, err := cfg.Resolve(); err != nil {
		return err
	}
	return nil
}
