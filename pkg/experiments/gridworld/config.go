// Package gridworld is the paper's grid-world study, run end to end and turned
// into tables and figures (`fedirl reproduce gridworld`). GridWorld reproduces §Grid-World Navigation (Table 1,
// "Average success rates"; Figure 2, "Local vs. mean vs. barycentric
// rewards") and §Ablation (Table 2, "Ablation on the fraction of weak
// clients"); Bounds evaluates Theorems 1 and 2 on a run.
//
// A study is a pure function of its Config: every random draw comes from a
// PCG stream keyed by (seed, grid size, purpose, index), work runs on a fixed
// number of goroutines with results collected by index and reduced in a
// fixed order, so the same Config gives byte-identical tables whatever
// GOMAXPROCS is. See README-gridworld.md in this directory for the protocol
// and every choice the paper leaves open.
//
// The federation step of every study cell runs through
// federation.RunInProcess, the same Coordinator and RunClient as the
// networked server and clients; only the transport differs.
//
// The package deliberately contains no algorithms of its own: environments
// come from envs/gridworld, features from features, IRL from irl, dynamic
// programming from mdp, fusion from fusion, transport from ot, the task
// family (Φ, probe, server fuser) from tasks and the federation protocol from
// federation. It does not parse flags (cmd/fedirl does). The other studies
// live beside it under pkg/experiments.
package gridworld

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/ot"
)

// EnvConfig is one grid size of Table 1.
type EnvConfig struct {
	// GridSize is N of the N×N grid.
	GridSize int `yaml:"grid_size" json:"grid_size"`
	// NumberOfClients is K (paper: 3, 10, 20 for N = 5, 10, 20).
	NumberOfClients int `yaml:"number_of_clients" json:"number_of_clients"`
	// HeldOutEnvironments is the number of unseen environments per seed; 0 means K.
	HeldOutEnvironments int `yaml:"held_out_environments" json:"held_out_environments"`
	// Obstacles per layout; 0 means round(0.12·N²).
	Obstacles int `yaml:"obstacles" json:"obstacles"`
	// SlipMax is the upper end of u ~ U(0, SlipMax); 0 means 0.10 (paper).
	SlipMax float64 `yaml:"slip_max" json:"slip_max"`
	// MaxEpisodeLength is the horizon cap; 0 means 4N.
	MaxEpisodeLength int `yaml:"max_episode_length" json:"max_episode_length"`
	// RandomStart starts episodes uniformly on the free cells instead of the
	// top-left corner.
	RandomStart bool `yaml:"random_start" json:"random_start"`
}

// ExpertConfig describes the experts and their demonstrations.
type ExpertConfig struct {
	// TrueReward is θ* on the features (goal_distance, obstacle_distance).
	TrueReward []float64 `yaml:"true_reward" json:"true_reward"`
	// DiscountFactor is γ for planning and IRL.
	DiscountFactor float64 `yaml:"discount_factor" json:"discount_factor"`
	// EpisodesPerClient is the number of demonstrations per client.
	EpisodesPerClient int `yaml:"episodes_per_client" json:"episodes_per_client"`
}

// IRLConfig holds the local MaxEnt IRL hyperparameters (appendix names).
type IRLConfig struct {
	// IRLAlgorithm must be "maxent".
	IRLAlgorithm string `yaml:"irl_algorithm" json:"irl_algorithm"`
	// IRLIterations is the full gradient-step budget of a client.
	IRLIterations int `yaml:"irl_iterations" json:"irl_iterations"`
	// IRLLearningRate is the gradient step size.
	IRLLearningRate float64 `yaml:"irl_learning_rate" json:"irl_learning_rate"`
	// Temperature is the entropy weight τ of soft value iteration.
	Temperature float64 `yaml:"temperature" json:"temperature"`
	// RewardRegularizationL2 is λ.
	RewardRegularizationL2 float64 `yaml:"reward_regularization_l2" json:"reward_regularization_l2"`
	// Optimizer is "gd" or "adam".
	Optimizer string `yaml:"optimizer" json:"optimizer"`
}

// config converts the study's IRL keys (the paper's names) to irl.Config with
// the given gradient-step budget: the one place they are converted. The study
// runs exactly budget steps (GradTol −1) with one dynamic-programming worker
// per client (clients learn concurrently).
func (c IRLConfig) config(budget int) irl.Config {
	return irl.Config{
		LearningRate: c.IRLLearningRate,
		L2:           c.RewardRegularizationL2,
		Temperature:  c.Temperature,
		MaxIter:      budget,
		GradTol:      -1,
		Optimizer:    c.Optimizer,
		Solver:       mdp.Options{Workers: 1, Tol: 1e-5},
	}
}

// BarycenterConfig holds the barycentric fusion hyperparameters.
type BarycenterConfig struct {
	// EntropicRegularization is ε in units of the squared lattice spacing.
	EntropicRegularization float64 `yaml:"entropic_regularization" json:"entropic_regularization"`
	// SinkhornIterations is the number of Sinkhorn iterations per barycenter step.
	SinkhornIterations int `yaml:"sinkhorn_iterations" json:"sinkhorn_iterations"`
	// BarycenterIterations is the number of barycenter (outer) iterations.
	BarycenterIterations int `yaml:"barycenter_iterations" json:"barycenter_iterations"`
	// Method is the solver of the "Barycenter" column: paper, ibp or stabilized.
	Method string `yaml:"method" json:"method"`
	// Shift is σ of T_σ; 0 means automatic (fusion.AutoSigma).
	Shift float64 `yaml:"shift" json:"shift"`
	// Scale is Z of the map back r̄ = Z p̄ − σ; 0 means Σ α_i Z_i.
	Scale float64 `yaml:"scale" json:"scale"`
	// Weights is "uniform" or "demonstrations" (α_i ∝ number of demonstration steps).
	Weights string `yaml:"weights" json:"weights"`
}

// EvaluationConfig holds the evaluation protocol.
type EvaluationConfig struct {
	// Method is "exact" (the default: the greedy policy's success probability
	// computed from the environment's exact model, no sampling) or "sampled"
	// (EvaluationEpisodes rollouts, with common random numbers: every method
	// is rolled out on the same random stream per environment).
	Method string `yaml:"method" json:"method"`
	// EvaluationEpisodes is the number of rollouts per (policy, environment)
	// of the sampled method.
	EvaluationEpisodes int `yaml:"evaluation_episodes" json:"evaluation_episodes"`
	// Seed selects the sampled method's random streams (mixed with the study
	// seed, the grid size and the environment); the exact method uses none.
	Seed uint64 `yaml:"seed" json:"seed"`
}

// Evaluation methods.
const (
	EvalExact   = "exact"
	EvalSampled = "sampled"
)

// AblationConfig describes Table 2.
type AblationConfig struct {
	// GridSize is N (paper: 5).
	GridSize int `yaml:"grid_size" json:"grid_size"`
	// NumberOfClients is K (paper: 10).
	NumberOfClients int `yaml:"number_of_clients" json:"number_of_clients"`
	// WeakFractions are the values of p (paper: 0, 0.25, 0.5).
	WeakFractions []float64 `yaml:"weak_fractions" json:"weak_fractions"`
	// WeakFactorMin and WeakFactorMax bound the random budget factor f ~ U(min, max).
	WeakFactorMin float64 `yaml:"weak_factor_min" json:"weak_factor_min"`
	WeakFactorMax float64 `yaml:"weak_factor_max" json:"weak_factor_max"`
	// NumberOfSeeds is the number of seeds of Table 2; 0 means the study's.
	NumberOfSeeds int `yaml:"number_of_seeds" json:"number_of_seeds"`
	// InitScale, when > 0, starts every ablation client's local IRL from a
	// random θ0 = InitScale·g, g ~ N(0, I) (its own seeded stream), instead of
	// θ = 0, so that a cut budget leaves a weak client genuinely off rather
	// than a small step in the right direction (which averaging already
	// down-weights). 0 (the paper's setting as we read it) starts from 0.
	InitScale float64 `yaml:"init_scale" json:"init_scale"`
}

// Config is the whole grid-world study. Keys follow the paper's
// hyperparameter names; the zero value of a field means its default
// (DefaultConfig), so a config file need only list what it changes.
type Config struct {
	// Seed is the first seed; the study uses Seed, Seed+1, …
	Seed uint64 `yaml:"seed" json:"seed"`
	// NumberOfSeeds is the number of seeds of Table 1.
	NumberOfSeeds int              `yaml:"number_of_seeds" json:"number_of_seeds"`
	Environments  []EnvConfig      `yaml:"environments" json:"environments"`
	Expert        ExpertConfig     `yaml:"expert" json:"expert"`
	IRL           IRLConfig        `yaml:"irl" json:"irl"`
	Barycenter    BarycenterConfig `yaml:"barycenter" json:"barycenter"`
	Evaluation    EvaluationConfig `yaml:"evaluation" json:"evaluation"`
	Ablation      AblationConfig   `yaml:"ablation" json:"ablation"`
	// Workers is the number of cells run at once (results do not depend on
	// it); 0 means 2. Within a cell the clients learn concurrently.
	Workers int `yaml:"workers" json:"workers"`
}

// DefaultConfig returns the default study (README-gridworld.md explains
// each value).
func DefaultConfig() Config {
	return Config{
		Seed:          1,
		NumberOfSeeds: 5,
		Environments: []EnvConfig{
			{GridSize: 20, NumberOfClients: 20},
			{GridSize: 10, NumberOfClients: 10},
			{GridSize: 5, NumberOfClients: 3},
		},
		Expert: ExpertConfig{TrueReward: []float64{-1, 0.5}, DiscountFactor: 0.95, EpisodesPerClient: 20},
		IRL: IRLConfig{IRLAlgorithm: "maxent", IRLIterations: 50, IRLLearningRate: 5e-3, Temperature: 1e-3,
			RewardRegularizationL2: 1e-3, Optimizer: "gd"},
		Barycenter: BarycenterConfig{EntropicRegularization: 0.5, SinkhornIterations: 10, BarycenterIterations: 50,
			Method: "paper", Weights: "uniform"},
		Evaluation: EvaluationConfig{Method: EvalExact, EvaluationEpisodes: 200},
		Ablation: AblationConfig{GridSize: 5, NumberOfClients: 10, WeakFractions: []float64{0, 0.25, 0.5},
			WeakFactorMin: 0.05, WeakFactorMax: 0.3},
		Workers: 2,
	}
}

// QuickConfig is a reduced study for smoke tests (CI): every table row and
// figure, but 2 seeds, 3 clients on 20×20 and 5 on 10×10 (each with as
// many held-out environments), 5 ablation clients and 50 evaluation episodes
// per (policy, environment).
func QuickConfig() Config {
	c := DefaultConfig()
	c.NumberOfSeeds = 2
	c.Environments[0].NumberOfClients = 3
	c.Environments[1].NumberOfClients = 5
	c.Evaluation.EvaluationEpisodes = 50
	c.Ablation.NumberOfClients = 5
	c.Ablation.NumberOfSeeds = 2
	return c
}

// LoadConfig reads a YAML (or JSON, a subset of YAML) config file over base:
// keys present in the file replace base's values. Unknown keys are errors.
func LoadConfig(path string, base Config) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return base, fmt.Errorf("reading config: %w", err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	c := base
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return base, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return base, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Validate reports the first invalid field, naming it by its config key.
func (c Config) Validate() error {
	if c.NumberOfSeeds < 1 {
		return fmt.Errorf("number_of_seeds = %d, want ≥ 1", c.NumberOfSeeds)
	}
	if len(c.Environments) == 0 {
		return errors.New("environments: empty")
	}
	for i, e := range c.Environments {
		if e.GridSize < 3 {
			return fmt.Errorf("environments[%d].grid_size = %d, want ≥ 3", i, e.GridSize)
		}
		if e.NumberOfClients < 1 {
			return fmt.Errorf("environments[%d].number_of_clients = %d, want ≥ 1", i, e.NumberOfClients)
		}
		if e.HeldOutEnvironments < 0 || e.Obstacles < 0 || e.MaxEpisodeLength < 0 || e.SlipMax < 0 || e.SlipMax > 1 {
			return fmt.Errorf("environments[%d]: negative held_out_environments/obstacles/max_episode_length or slip_max outside [0,1]", i)
		}
	}
	if len(c.Expert.TrueReward) != 2 {
		return fmt.Errorf("expert.true_reward has %d entries, want 2 (goal_distance, obstacle_distance)", len(c.Expert.TrueReward))
	}
	if !(c.Expert.DiscountFactor > 0 && c.Expert.DiscountFactor < 1) {
		return fmt.Errorf("expert.discount_factor = %v, want in (0,1)", c.Expert.DiscountFactor)
	}
	if c.Expert.EpisodesPerClient < 1 {
		return fmt.Errorf("expert.episodes_per_client = %d, want ≥ 1", c.Expert.EpisodesPerClient)
	}
	if c.IRL.IRLAlgorithm != "maxent" {
		return fmt.Errorf("irl.irl_algorithm = %q, only \"maxent\" is implemented", c.IRL.IRLAlgorithm)
	}
	if c.IRL.IRLIterations < 1 || !(c.IRL.IRLLearningRate > 0) || !(c.IRL.Temperature > 0) || c.IRL.RewardRegularizationL2 < 0 {
		return errors.New("irl: irl_iterations, irl_learning_rate and temperature must be positive, reward_regularization_l2 non-negative")
	}
	if c.IRL.Optimizer != "gd" && c.IRL.Optimizer != "adam" {
		return fmt.Errorf("irl.optimizer = %q, want gd or adam", c.IRL.Optimizer)
	}
	if _, err := c.barycenterMethod(); err != nil {
		return fmt.Errorf("barycenter.method: %w", err)
	}
	b := c.Barycenter
	if !(b.EntropicRegularization > 0) || b.SinkhornIterations < 1 || b.BarycenterIterations < 1 || b.Shift < 0 || b.Scale < 0 {
		return errors.New("barycenter: entropic_regularization, sinkhorn_iterations and barycenter_iterations must be positive, shift and scale non-negative")
	}
	if b.Weights != "uniform" && b.Weights != "demonstrations" {
		return fmt.Errorf("barycenter.weights = %q, want uniform or demonstrations", b.Weights)
	}
	if !(c.Ablation.InitScale >= 0) || math.IsInf(c.Ablation.InitScale, 0) {
		return fmt.Errorf("ablation.init_scale = %v, want a finite value ≥ 0", c.Ablation.InitScale)
	}
	if c.Evaluation.Method != EvalExact && c.Evaluation.Method != EvalSampled {
		return fmt.Errorf("evaluation.method = %q, want %q or %q", c.Evaluation.Method, EvalExact, EvalSampled)
	}
	if c.Evaluation.EvaluationEpisodes < 1 {
		return fmt.Errorf("evaluation.evaluation_episodes = %d, want ≥ 1", c.Evaluation.EvaluationEpisodes)
	}
	a := c.Ablation
	if a.GridSize < 3 || a.NumberOfClients < 1 || len(a.WeakFractions) == 0 {
		return errors.New("ablation: grid_size ≥ 3, number_of_clients ≥ 1 and weak_fractions non-empty required")
	}
	for i, p := range a.WeakFractions {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("ablation.weak_fractions[%d] = %v, want in [0,1]", i, p)
		}
	}
	if !(a.WeakFactorMin > 0 && a.WeakFactorMin <= a.WeakFactorMax && a.WeakFactorMax <= 1) {
		return fmt.Errorf("ablation: need 0 < weak_factor_min ≤ weak_factor_max ≤ 1, got %v, %v", a.WeakFactorMin, a.WeakFactorMax)
	}
	if a.NumberOfSeeds < 0 || c.Workers < 0 {
		return errors.New("ablation.number_of_seeds and workers must be non-negative")
	}
	return nil
}

// Resolved returns c with every "0 means default" field replaced by the
// value the study uses, so a written config states the protocol in full.
func (c Config) Resolved() Config {
	r := c
	r.Environments = make([]EnvConfig, len(c.Environments))
	for i, e := range c.Environments {
		f := c.family(e)
		e.HeldOutEnvironments = heldOutCount(e)
		e.Obstacles, e.SlipMax, e.MaxEpisodeLength = f.Obstacles, f.SlipMax, f.Horizon
		r.Environments[i] = e
	}
	r.Ablation.WeakFractions = append([]float64(nil), c.Ablation.WeakFractions...)
	r.Ablation.NumberOfSeeds = c.ablationSeeds()
	r.Expert.TrueReward = append([]float64(nil), c.Expert.TrueReward...)
	if r.Workers == 0 {
		r.Workers = 2
	}
	return r
}

func (c Config) barycenterMethod() (ot.Method, error) {
	m, err := ot.ParseMethod(c.Barycenter.Method)
	if err != nil {
		return 0, err
	}
	if m == ot.Debiased {
		return 0, errors.New("debiased is always reported as its own column; choose paper, ibp or stabilized")
	}
	return m, nil
}

// evaluationText describes the evaluation protocol for the tables.
func (c Config) evaluationText() string {
	if c.Evaluation.Method == EvalExact {
		return "exact success probabilities of each greedy policy (computed from the exact model, no sampling)"
	}
	return fmt.Sprintf("%d sampled rollouts per policy and environment, on the same random stream for every method", c.Evaluation.EvaluationEpisodes)
}
