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
// outputs. The outputs (curves.csv, summary.*, diagnostics, figures) are made
// from the unit files only, so a merged run equals a single run byte for byte.
//
// See README-control.md for every choice the paper leaves open.
package control

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// StudyName is the value of the config's "study" key.
const StudyName = "control"

// Methods evaluated, in table order: each client's own local reward, the
// fused rewards, and the true reward as the reference curve.
const (
	MethodLocal      = "local"
	MethodMean       = "mean"
	MethodBarycenter = "barycenter"
	MethodDebiased   = "debiased"
	MethodTrue       = "true"
)

// AllMethods lists the methods in table order.
var AllMethods = []string{MethodLocal, MethodMean, MethodBarycenter, MethodDebiased, MethodTrue}

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
}

// Config is the study's configuration; YAML keys follow the paper's
// hyperparameter names.
type Config struct {
	// Study must be "control".
	Study string `yaml:"study"`
	// Envs lists the environments, e.g. [Pendulum-v1, CartPole-v1, Acrobot-v1].
	Envs []string `yaml:"envs"`
	// Lattices lists the lattice presets per environment: paper, fine, ultra.
	Lattices map[string][]string `yaml:"lattices"`
	// Env holds the per-environment settings.
	Env map[string]EnvConfig `yaml:"env"`
	// NumberOfClients is the number of training clients (client indices 0…K−1).
	NumberOfClients int `yaml:"number_of_clients"`
	// HeldOutClients is the number of held-out clients (indices K…K+H−1): unseen physics of the same family.
	HeldOutClients int `yaml:"held_out_clients"`
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
	// ModelRollouts configures the counted model of environments whose state cannot be set (LunarLander).
	ModelRollouts RolloutConfig `yaml:"model_rollouts"`
	// IRL holds the shared MaxEnt settings.
	IRL IRLConfig `yaml:"irl"`
	// Barycenter holds the fusion settings.
	Barycenter BarycenterConfig `yaml:"barycenter"`
	// Methods lists the rewards evaluated (default all).
	Methods []string `yaml:"methods"`
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
}

// BarycenterConfig is the appendix's barycenter block.
type BarycenterConfig struct {
	// Epsilon is ε in squared lattice spacings.
	Epsilon float64 `yaml:"epsilon"`
	// SinkhornIterations per barycenter step.
	SinkhornIterations int `yaml:"sinkhorn_iterations"`
	// BarycenterIterations is the number of outer iterations.
	BarycenterIterations int `yaml:"barycenter_iterations"`
}

// paperEnv returns the appendix's per-environment values.
func paperEnv(env string) EnvConfig {
	c := EnvConfig{
		TotalExpertSteps: ppo.PaperExpertSteps[env],
		EvaluationSteps:  ppo.PaperEvalSteps[env],
	}
	c.IRLIterations = map[string]int{"Pendulum-v1": 50, "CartPole-v1": 25, "LunarLanderContinuous-v3": 100, "Acrobot-v1": 25}[env]
	return c
}

// FullConfig returns the paper's scale: 6 clients, 10 seeds, the appendix's
// expert, IRL and evaluation budgets, paper and fine lattices.
func FullConfig() Config {
	c := Config{
		Study: StudyName, Envs: []string{"Pendulum-v1", "CartPole-v1", "Acrobot-v1", "LunarLanderContinuous-v3"},
		Lattices:        map[string][]string{},
		Env:             map[string]EnvConfig{},
		NumberOfClients: 6, HeldOutClients: 2, NumberOfSeeds: 10, Seed: 1,
		EpisodesPerClient: 50, DeterministicExperts: true,
		Model:         discretize.ModelConfig{Samples: 8, Successor: discretize.SuccessorNearest, Seed: 1, Gamma: 0.99},
		ModelRollouts: RolloutConfig{Episodes: 200, Epsilon: 0.3},
		IRL:           IRLConfig{LearningRate: 5e-3, Temperature: 1e-3, L2: 1e-3, Optimizer: "gd", SolverTol: 1e-8, Solver: "newton", Anderson: 20},
		Barycenter:    BarycenterConfig{Epsilon: 0.5, SinkhornIterations: 10, BarycenterIterations: 50},
		Methods:       slices.Clone(AllMethods), LogEvery: 5000, MemoryLimitGB: 4,
	}
	for _, e := range c.Envs {
		c.Env[e] = paperEnv(e)
		c.Lattices[e] = []string{"paper", "fine"}
	}
	return c
}

// DefaultConfig returns the default study (≤ 15 min on 2 cores): 4 training
// clients and 1 held-out, 3 seeds, experts long enough to be experts (the
// appendix's 5000 Acrobot steps learn nothing), LunarLander's IRL budget
// halved and evaluation budgets cut to what fits, paper lattices everywhere
// and the fine lattices for Acrobot and LunarLander, where the paper lost.
func DefaultConfig() Config {
	c := FullConfig()
	c.NumberOfClients, c.HeldOutClients, c.NumberOfSeeds = 4, 1, 3
	c.EpisodesPerClient = 20
	c.Env = map[string]EnvConfig{
		"Pendulum-v1":              {TotalExpertSteps: 100_000, IRLIterations: 50, EvaluationSteps: 80_000},
		"CartPole-v1":              {TotalExpertSteps: 100_000, IRLIterations: 25, EvaluationSteps: 30_000},
		"Acrobot-v1":               {TotalExpertSteps: 100_000, IRLIterations: 25, EvaluationSteps: 50_000},
		"LunarLanderContinuous-v3": {TotalExpertSteps: 200_000, IRLIterations: 50, EvaluationSteps: 30_000},
	}
	c.Lattices = map[string][]string{"Pendulum-v1": {"paper"}, "CartPole-v1": {"paper"}, "Acrobot-v1": {"paper", "fine"},
		"LunarLanderContinuous-v3": {"paper", "fine"}}
	c.LogEvery = 5000
	return c
}

// QuickConfig returns the smoke test run in CI (≤ 90 s on 2 cores): 2
// clients and 1 held-out, 2 seeds, tiny budgets and lattices.
func QuickConfig() Config {
	c := FullConfig()
	c.NumberOfClients, c.HeldOutClients, c.NumberOfSeeds = 2, 1, 2
	c.EpisodesPerClient = 5
	c.Env = map[string]EnvConfig{
		"Pendulum-v1":              {TotalExpertSteps: 20_000, IRLIterations: 10, EvaluationSteps: 8_000, Bins: map[string]int{"theta": 16, "thdot": 11}},
		"CartPole-v1":              {TotalExpertSteps: 20_000, IRLIterations: 10, EvaluationSteps: 5_000},
		"Acrobot-v1":               {TotalExpertSteps: 20_000, IRLIterations: 10, EvaluationSteps: 5_000, Bins: map[string]int{"theta1": 6, "theta2": 6, "thdot1": 3, "thdot2": 3}},
		"LunarLanderContinuous-v3": {TotalExpertSteps: 20_000, IRLIterations: 10, EvaluationSteps: 5_000, Bins: map[string]int{"ll-x": 3, "ll-y": 3, "ll-vx": 3, "ll-vy": 3}},
	}
	c.Lattices = map[string][]string{"Pendulum-v1": {"paper"}, "CartPole-v1": {"paper"}, "Acrobot-v1": {"paper"},
		"LunarLanderContinuous-v3": {"paper"}}
	c.ModelRollouts.Episodes = 20
	c.Barycenter.BarycenterIterations = 20
	c.LogEvery = 2000
	return c
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
	if len(c.Envs) == 0 {
		return fmt.Errorf("envs: empty")
	}
	for _, e := range c.Envs {
		ce, err := tasks.LookupControl(e)
		if err != nil {
			return fmt.Errorf("envs: %w", err)
		}
		ec, ok := c.Env[e]
		if !ok {
			return fmt.Errorf("env.%s: missing (total_expert_steps, irl_iterations, evaluation_steps)", e)
		}
		switch {
		case ec.TotalExpertSteps < 1:
			return fmt.Errorf("env.%s.total_expert_steps: %d, want ≥ 1", e, ec.TotalExpertSteps)
		case ec.IRLIterations < 1:
			return fmt.Errorf("env.%s.irl_iterations: %d, want ≥ 1", e, ec.IRLIterations)
		case ec.EvaluationSteps < 1:
			return fmt.Errorf("env.%s.evaluation_steps: %d, want ≥ 1", e, ec.EvaluationSteps)
		}
		for _, p := range []string{ec.ExpertPreset, ec.EvaluationPreset} {
			if p != "" {
				if _, err := ppo.Preset(p); err != nil {
					return fmt.Errorf("env.%s: %w", e, err)
				}
			}
		}
		if len(c.Lattices[e]) == 0 {
			return fmt.Errorf("lattices.%s: no lattice preset", e)
		}
		for _, l := range c.Lattices[e] {
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
	case c.IRL.Optimizer != "gd" && c.IRL.Optimizer != "adam":
		return fmt.Errorf("irl.optimizer: %q, want gd or adam", c.IRL.Optimizer)
	case c.IRL.Solver != "newton" && c.IRL.Solver != "fixed-point":
		return fmt.Errorf("irl.solver: %q, want newton or fixed-point", c.IRL.Solver)
	case !(c.Barycenter.Epsilon > 0) || c.Barycenter.SinkhornIterations < 1 || c.Barycenter.BarycenterIterations < 1:
		return fmt.Errorf("barycenter: epsilon %g > 0, sinkhorn_iterations %d ≥ 1 and barycenter_iterations %d ≥ 1 needed",
			c.Barycenter.Epsilon, c.Barycenter.SinkhornIterations, c.Barycenter.BarycenterIterations)
	case c.ModelRollouts.Episodes < 1 || !(c.ModelRollouts.Epsilon >= 0 && c.ModelRollouts.Epsilon <= 1):
		return fmt.Errorf("model_rollouts: episodes %d ≥ 1 and epsilon %g in [0, 1] needed", c.ModelRollouts.Episodes, c.ModelRollouts.Epsilon)
	case c.LogEvery < 1:
		return fmt.Errorf("log_every: %d, want ≥ 1", c.LogEvery)
	case !(c.MemoryLimitGB > 0):
		return fmt.Errorf("memory_limit_gb: %g, want > 0", c.MemoryLimitGB)
	}
	if err := c.Model.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if len(c.Methods) == 0 {
		return fmt.Errorf("methods: empty (known: %s)", strings.Join(AllMethods, ", "))
	}
	for _, m := range c.Methods {
		if !slices.Contains(AllMethods, m) {
			return fmt.Errorf("methods: %q unknown (known: %s)", m, strings.Join(AllMethods, ", "))
		}
	}
	return nil
}
