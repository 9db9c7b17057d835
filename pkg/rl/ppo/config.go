package ppo

import (
	"fmt"
	"sort"
)

// Config holds PPO's hyperparameters. Keys follow stable-baselines3's PPO
// arguments; every zero value means stable-baselines3's default, given in
// brackets.
type Config struct {
	// NEnvs is the number of parallel environment copies [1].
	NEnvs int `json:"n_envs" yaml:"n_envs"`
	// NSteps is the number of steps per environment copy in each rollout [2048].
	NSteps int `json:"n_steps" yaml:"n_steps"`
	// BatchSize is the minibatch size [64].
	BatchSize int `json:"batch_size" yaml:"batch_size"`
	// NEpochs is the number of passes over each rollout [10].
	NEpochs int `json:"n_epochs" yaml:"n_epochs"`
	// LearningRate is Adam's step size [3e-4].
	LearningRate float64 `json:"learning_rate" yaml:"learning_rate"`
	// LinearLR decays the learning rate linearly to zero over TotalSteps (zoo's "lin_").
	LinearLR bool `json:"linear_lr,omitempty" yaml:"linear_lr,omitempty"`
	// Gamma is the discount factor [0.99].
	Gamma float64 `json:"gamma" yaml:"gamma"`
	// GAELambda is the GAE λ [0.95].
	GAELambda float64 `json:"gae_lambda" yaml:"gae_lambda"`
	// ClipRange is the surrogate's clipping ε [0.2].
	ClipRange float64 `json:"clip_range" yaml:"clip_range"`
	// LinearClip decays ClipRange linearly to zero over TotalSteps.
	LinearClip bool `json:"linear_clip,omitempty" yaml:"linear_clip,omitempty"`
	// EntCoef weighs the entropy bonus [0].
	EntCoef float64 `json:"ent_coef" yaml:"ent_coef"`
	// VFCoef weighs the value loss [0.5].
	VFCoef float64 `json:"vf_coef" yaml:"vf_coef"`
	// MaxGradNorm bounds the global gradient norm [0.5]; negative disables clipping.
	MaxGradNorm float64 `json:"max_grad_norm" yaml:"max_grad_norm"`
	// NoAdvantageNorm turns off per-minibatch advantage normalisation [false: normalise].
	NoAdvantageNorm bool `json:"no_advantage_norm,omitempty" yaml:"no_advantage_norm,omitempty"`
	// NormalizeObs normalises observations with running statistics, like VecNormalize [false].
	NormalizeObs bool `json:"normalize_obs,omitempty" yaml:"normalize_obs,omitempty"`
	// NormalizeReward scales rewards by the running std of the discounted return, like VecNormalize [false].
	NormalizeReward bool `json:"normalize_reward,omitempty" yaml:"normalize_reward,omitempty"`
	// ClipObs bounds normalised observations [10].
	ClipObs float64 `json:"clip_obs,omitempty" yaml:"clip_obs,omitempty"`
	// ClipReward bounds normalised rewards [10].
	ClipReward float64 `json:"clip_reward,omitempty" yaml:"clip_reward,omitempty"`
	// Hidden lists the hidden widths of both actor and critic [64, 64].
	Hidden []int `json:"hidden,omitempty" yaml:"hidden,omitempty"`
	// Activation is the hidden nonlinearity, "tanh" or "relu" [tanh].
	Activation string `json:"activation,omitempty" yaml:"activation,omitempty"`
	// LogStdInit is the initial log standard deviation of a Gaussian policy [0].
	LogStdInit float64 `json:"log_std_init" yaml:"log_std_init"`
	// NoOrthoInit uses small Gaussian weights instead of orthogonal initialisation [false].
	NoOrthoInit bool `json:"no_ortho_init,omitempty" yaml:"no_ortho_init,omitempty"`
	// AdamEps is Adam's ε [1e-5, as stable-baselines3 sets for its policies].
	AdamEps float64 `json:"adam_eps,omitempty" yaml:"adam_eps,omitempty"`
	// UseSDE explores with generalized state-dependent exploration (gSDE;
	// Raffin, Kober & Stulp 2022) as stable-baselines3's use_sde=True with its
	// defaults: a latent × action matrix of log standard deviations
	// (initialised to LogStdInit), exploration matrices drawn per environment
	// copy, and the actor's last hidden layer as the (not learned through the
	// noise) feature [false]. Box action spaces only.
	UseSDE bool `json:"use_sde,omitempty" yaml:"use_sde,omitempty"`
	// SDESampleFreq redraws the gSDE exploration matrices every this many
	// steps; -1 or 0 only at the start of each rollout, as in stable-baselines3 [-1].
	SDESampleFreq int `json:"sde_sample_freq,omitempty" yaml:"sde_sample_freq,omitempty"`
	// TotalSteps is the default training budget in environment steps [1e6]; Learn may override it.
	TotalSteps int `json:"total_steps" yaml:"total_steps"`
}

// WithDefaults returns c with every zero field replaced by its default.
func (c Config) WithDefaults() Config {
	setI := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	setF := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	setI(&c.NEnvs, 1)
	setI(&c.NSteps, 2048)
	setI(&c.BatchSize, 64)
	setI(&c.NEpochs, 10)
	setF(&c.LearningRate, 3e-4)
	setF(&c.Gamma, 0.99)
	setF(&c.GAELambda, 0.95)
	setF(&c.ClipRange, 0.2)
	setF(&c.VFCoef, 0.5)
	setF(&c.MaxGradNorm, 0.5)
	setF(&c.ClipObs, 10)
	setF(&c.ClipReward, 10)
	setF(&c.AdamEps, 1e-5)
	setI(&c.TotalSteps, 1_000_000)
	if len(c.Hidden) == 0 {
		c.Hidden = []int{64, 64}
	}
	if c.Activation == "" {
		c.Activation = "tanh"
	}
	return c
}

// Validate reports the first field of c (after WithDefaults) that is out of range.
func (c Config) Validate() error {
	switch {
	case c.NEnvs < 1:
		return fmt.Errorf("ppo config: n_envs = %d, want ≥ 1", c.NEnvs)
	case c.NSteps < 1:
		return fmt.Errorf("ppo config: n_steps = %d, want ≥ 1", c.NSteps)
	case c.BatchSize < 1:
		return fmt.Errorf("ppo config: batch_size = %d, want ≥ 1", c.BatchSize)
	case c.NEpochs < 1:
		return fmt.Errorf("ppo config: n_epochs = %d, want ≥ 1", c.NEpochs)
	case !(c.LearningRate > 0):
		return fmt.Errorf("ppo config: learning_rate = %g, want > 0", c.LearningRate)
	case !(c.Gamma > 0 && c.Gamma <= 1):
		return fmt.Errorf("ppo config: gamma = %g, want in (0, 1]", c.Gamma)
	case !(c.GAELambda >= 0 && c.GAELambda <= 1):
		return fmt.Errorf("ppo config: gae_lambda = %g, want in [0, 1]", c.GAELambda)
	case !(c.ClipRange > 0):
		return fmt.Errorf("ppo config: clip_range = %g, want > 0", c.ClipRange)
	case c.EntCoef < 0 || c.VFCoef < 0:
		return fmt.Errorf("ppo config: ent_coef = %g, vf_coef = %g, want ≥ 0", c.EntCoef, c.VFCoef)
	case c.TotalSteps < 1:
		return fmt.Errorf("ppo config: total_steps = %d, want ≥ 1", c.TotalSteps)
	case c.SDESampleFreq < -1:
		return fmt.Errorf("ppo config: sde_sample_freq = %d, want ≥ -1", c.SDESampleFreq)
	case c.SDESampleFreq != 0 && c.SDESampleFreq != -1 && !c.UseSDE:
		return fmt.Errorf("ppo config: sde_sample_freq = %d applies only with use_sde", c.SDESampleFreq)
	}
	for _, h := range c.Hidden {
		if h < 1 {
			return fmt.Errorf("ppo config: hidden width %d, want ≥ 1", h)
		}
	}
	if c.Activation != "tanh" && c.Activation != "relu" {
		return fmt.Errorf("ppo config: activation %q, want tanh or relu", c.Activation)
	}
	return nil
}

// presets maps a preset name to its configuration; see Preset.
var presets = map[string]Config{
	// stable-baselines3 PPO defaults
	// (DLR-RM/stable-baselines3, stable_baselines3/ppo/ppo.py: learning_rate=3e-4,
	// n_steps=2048, batch_size=64, n_epochs=10, gamma=0.99, gae_lambda=0.95,
	// clip_range=0.2, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5; policies.py:
	// net_arch pi=[64,64], vf=[64,64], Tanh, ortho_init=True, log_std_init=0, Adam eps=1e-5).
	"sb3": {},

	// RL Baselines3 Zoo, hyperparams/ppo.yml, "CartPole-v1" (tuned):
	// n_envs 8, n_timesteps 1e5, n_steps 32, batch_size 256, gae_lambda 0.8,
	// gamma 0.98, n_epochs 20, ent_coef 0.0, learning_rate lin_0.001, clip_range lin_0.2.
	"CartPole-v1": {NEnvs: 8, TotalSteps: 100_000, NSteps: 32, BatchSize: 256, GAELambda: 0.8,
		Gamma: 0.98, NEpochs: 20, LearningRate: 1e-3, LinearLR: true, ClipRange: 0.2, LinearClip: true},

	// RL Baselines3 Zoo, hyperparams/ppo.yml, "Acrobot-v1":
	// normalize true, n_envs 16, n_timesteps 1e6, n_steps 256, gae_lambda 0.94,
	// gamma 0.99, n_epochs 4, ent_coef 0.0.
	"Acrobot-v1": {NormalizeObs: true, NormalizeReward: true, NEnvs: 16, TotalSteps: 1_000_000,
		NSteps: 256, GAELambda: 0.94, Gamma: 0.99, NEpochs: 4},

	// RL Baselines3 Zoo, hyperparams/ppo.yml, "Pendulum-v1" (tuned):
	// n_envs 4, n_timesteps 1e5, n_steps 1024, gae_lambda 0.95, gamma 0.9,
	// n_epochs 10, ent_coef 0.0, learning_rate 1e-3, clip_range 0.2,
	// use_sde True, sde_sample_freq 4.
	// This preset keeps all the other zoo values but explores with the
	// ordinary state-independent Gaussian (log_std_init 0), as when the PPO
	// study in pkg/rl/ppo/study was made (evaluation return about −200 by
	// 2e5 steps). The zoo entry itself, gSDE included (UseSDE,
	// SDESampleFreq), is honoured by ApplyConfig: pass it with
	// "fedirl ppo train --config".
	"Pendulum-v1": {NEnvs: 4, TotalSteps: 100_000, NSteps: 1024, GAELambda: 0.95, Gamma: 0.9,
		NEpochs: 10, LearningRate: 1e-3, ClipRange: 0.2},

	// RL Baselines3 Zoo, hyperparams/ppo.yml, "LunarLanderContinuous-v3"
	// (same as -v2): n_envs 16, n_timesteps 1e6, n_steps 1024, batch_size 64,
	// gae_lambda 0.98, gamma 0.999, n_epochs 4, ent_coef 0.01.
	"LunarLanderContinuous-v3": {NEnvs: 16, TotalSteps: 1_000_000, NSteps: 1024, BatchSize: 64,
		GAELambda: 0.98, Gamma: 0.999, NEpochs: 4, EntCoef: 0.01},

	// RL Baselines3 Zoo, hyperparams/ppo.yml, "BipedalWalker-v3":
	// normalize true, n_envs 32, n_timesteps 5e6, n_steps 2048, batch_size 64,
	// gae_lambda 0.95, gamma 0.999, n_epochs 10, ent_coef 0.0,
	// learning_rate 3e-4, clip_range 0.18.
	"BipedalWalker-v3": {NormalizeObs: true, NormalizeReward: true, NEnvs: 32, TotalSteps: 5_000_000,
		NSteps: 2048, BatchSize: 64, GAELambda: 0.95, Gamma: 0.999, NEpochs: 10, LearningRate: 3e-4, ClipRange: 0.18},

	// RL Baselines3 Zoo, hyperparams/ppo.yml, "BipedalWalkerHardcore-v3":
	// normalize true, n_envs 16, n_timesteps 10e7, n_steps 2048, batch_size 64,
	// gae_lambda 0.95, gamma 0.99, n_epochs 10, ent_coef 0.001,
	// learning_rate lin_2.5e-4, clip_range lin_0.2.
	"BipedalWalkerHardcore-v3": {NormalizeObs: true, NormalizeReward: true, NEnvs: 16, TotalSteps: 100_000_000,
		NSteps: 2048, BatchSize: 64, GAELambda: 0.95, Gamma: 0.99, NEpochs: 10, EntCoef: 0.001,
		LearningRate: 2.5e-4, LinearLR: true, ClipRange: 0.2, LinearClip: true},

	// The paper's appendix, table "General training hyperparameters" (expert
	// training): batch size 64, learning rate 3e-3, γ 0.99, GAE λ 0.95, clip
	// range 0.2; other values are stable-baselines3 defaults. Total steps are
	// per environment, see PaperExpertSteps.
	"paper": {BatchSize: 64, LearningRate: 3e-3, Gamma: 0.99, GAELambda: 0.95, ClipRange: 0.2},
}

// PaperExpertSteps gives the paper's "Total expert steps" per environment (appendix table).
var PaperExpertSteps = map[string]int{
	"Pendulum-v1":              50_000,
	"CartPole-v1":              200_000,
	"LunarLanderContinuous-v3": 300_000,
	"Acrobot-v1":               5_000,
}

// PaperEvalSteps gives the paper's "Evaluation steps" per environment (appendix table).
var PaperEvalSteps = map[string]int{
	"Pendulum-v1":              500_000,
	"CartPole-v1":              30_000,
	"LunarLanderContinuous-v3": 2_000_000,
	"Acrobot-v1":               25_000,
}

// Preset returns the named configuration with defaults filled in: "sb3"
// (stable-baselines3 defaults), an environment id with an RL Baselines3 Zoo
// preset ("CartPole-v1", "Pendulum-v1", "Acrobot-v1",
// "LunarLanderContinuous-v3", "BipedalWalker-v3", "BipedalWalkerHardcore-v3"),
// or "paper" (the paper's appendix table).
func Preset(name string) (Config, error) {
	c, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("ppo: unknown preset %q (known: %v)", name, PresetNames())
	}
	c.Hidden = append([]int(nil), c.Hidden...)
	return c.WithDefaults(), nil
}

// PresetNames lists the known presets in sorted order.
func PresetNames() []string {
	var s []string
	for k := range presets {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}
