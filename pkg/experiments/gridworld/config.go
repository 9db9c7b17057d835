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
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fedirl/fedirl/pkg/experiments/jointfit"
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
	// WeakThetaNoise, when > 0, adds N(0, WeakThetaNoise²·I) noise (its own
	// seeded stream) to a weak client's learned θ before it is sent: a
	// bounded local error as in Theorem 2.
	WeakThetaNoise float64 `yaml:"weak_theta_noise" json:"weak_theta_noise"`
	// WeakExpertEpsilon, when > 0, makes a weak client's expert ε-greedy:
	// each demonstration step takes a uniformly random action with
	// probability ε (biased demonstrations). Default 0.5 with WeakEpisodes
	// 5: a cut budget alone does not make a client weak in this world
	// (README-gridworld.md, "Weak clients").
	WeakExpertEpsilon float64 `yaml:"weak_expert_epsilon" json:"weak_expert_epsilon"`
	// WeakEpisodes, when > 0, is the number of demonstrations of a weak
	// client (0: expert.episodes_per_client, as for the full clients).
	WeakEpisodes int `yaml:"weak_episodes" json:"weak_episodes"`
}

// Config is the whole grid-world study. Keys follow the paper's
// hyperparameter names; the zero value of a field means its default
// (DefaultConfig), so a config file need only list what it changes.
type Config struct {
	// Seed is the first seed; the study uses Seed, Seed+1, …
	Seed uint64 `yaml:"seed" json:"seed"`
	// NumberOfSeeds is the number of seeds of Table 1.
	NumberOfSeeds int          `yaml:"number_of_seeds" json:"number_of_seeds"`
	Environments  []EnvConfig  `yaml:"environments" json:"environments"`
	Expert        ExpertConfig `yaml:"expert" json:"expert"`
	IRL           IRLConfig    `yaml:"irl" json:"irl"`
	// FusionMethods lists the fused columns of every table, plot and sweep,
	// in order: names of fusion's registry (fusion.Methods()), a
	// reward-space one optionally suffixed "/per-client" for per-client σ
	// (e.g. "normalized-mean/per-client"). It must include "mean" and
	// "barycenter". Default DefaultFusionMethods.
	FusionMethods []string         `yaml:"fusion_methods" json:"fusion_methods"`
	Barycenter    BarycenterConfig `yaml:"barycenter" json:"barycenter"`
	Evaluation    EvaluationConfig `yaml:"evaluation" json:"evaluation"`
	Ablation      AblationConfig   `yaml:"ablation" json:"ablation"`
	// Privacy is local differential privacy of the clients' sent θ (off by default).
	Privacy PrivacyConfig `yaml:"privacy" json:"privacy"`
	// Joint is the pooled oracle and the personalized rewards (jointfit;
	// both on by default).
	Joint jointfit.Config `yaml:"joint" json:"joint"`
	// Workers is the number of cells run at once (results do not depend on
	// it); 0 means 2. Within a cell the clients learn concurrently. Its key
	// is jobs, as the --jobs flag; LoadConfig still reads the old key
	// workers, with a warning.
	Workers int `yaml:"jobs" json:"jobs"`
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
		FusionMethods: slices.Clone(DefaultFusionMethods),
		Barycenter: BarycenterConfig{EntropicRegularization: 0.5, SinkhornIterations: 10, BarycenterIterations: 50,
			Method: "paper", Weights: "uniform"},
		Evaluation: EvaluationConfig{Method: EvalExact, EvaluationEpisodes: 200},
		Ablation: AblationConfig{GridSize: 5, NumberOfClients: 10, WeakFractions: []float64{0, 0.25, 0.5},
			WeakFactorMin: 0.05, WeakFactorMax: 0.3, WeakExpertEpsilon: 0.5, WeakEpisodes: 5},
		Joint:   jointfit.DefaultConfig(),
		Workers: 2,
	}
}

// QuickConfig is a reduced study for smoke tests (CI): every table row and
// figure, but 2 seeds, 3 clients on 20×20 and 5 on 10×10 (each with as
// many held-out environments), 5 ablation clients and, should the evaluation
// be switched to sampled, 50 evaluation episodes per (policy, environment).
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
	if data, err = renameDeprecatedKeys(data, path); err != nil {
		return base, err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	c := base
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return base, fmt.Errorf("config %s: %w", path, nameKeys(data, err))
	}
	if err := c.Validate(); err != nil {
		return base, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Warn receives the config loader's deprecation warnings (an old key that
// is still read); by default they go to stderr.
var Warn = func(msg string) { fmt.Fprintln(os.Stderr, "fedirl: warning:", msg) }

// deprecatedKeys maps old top-level config keys to their names now.
var deprecatedKeys = map[string]string{"workers": "jobs"}

// renameDeprecatedKeys rewrites old top-level keys of a config document to
// their current names, warning once per key; a document that gives both
// spellings is refused. Documents it cannot parse are returned unchanged
// for the decoder to report.
func renameDeprecatedKeys(data []byte, path string) ([]byte, error) {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return data, nil
	}
	m := doc.Content[0]
	changed := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		now, old := deprecatedKeys[k.Value]
		if !old {
			continue
		}
		for j := 0; j+1 < len(m.Content); j += 2 {
			if m.Content[j].Value == now {
				return nil, fmt.Errorf("config %s: both %s (line %d) and its old name %s (line %d): keep %s", path, now, m.Content[j].Line, k.Value, k.Line, now)
			}
		}
		Warn(fmt.Sprintf("config %s: key %s (line %d) is deprecated, use %s", path, k.Value, k.Line, now))
		k.Value, changed = now, true
	}
	if !changed {
		return data, nil
	}
	return yaml.Marshal(&doc)
}

var (
	yamlLine    = regexp.MustCompile(`^line (\d+): `)
	yamlValue   = regexp.MustCompile("cannot unmarshal !!\\w+ `([^`]*)`")
	yamlUnknown = regexp.MustCompile(`field (\S+) not found`)
)

// nameKeys rewrites the messages of a YAML decoding error ("line 3: cannot
// unmarshal !!int `-1` into uint64") to start with the config key they are
// about ("evaluation.seed: line 3: …"), found in the document's node tree by
// line and value. Other errors are returned unchanged.
func nameKeys(data []byte, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		return err
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		msgs[i] = m
		lm := yamlLine.FindStringSubmatch(m)
		if lm == nil {
			continue
		}
		line, _ := strconv.Atoi(lm[1])
		var key string
		if vm := yamlValue.FindStringSubmatch(m); vm != nil {
			key = findKey(&root, "", line, vm[1], false)
		} else if um := yamlUnknown.FindStringSubmatch(m); um != nil {
			key = findKey(&root, "", line, um[1], true)
		}
		if key != "" {
			msgs[i] = key + ": " + m
		}
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// findKey returns the dotted path (with [i] for list entries) of the first
// node on line whose value is value: a mapping key when isKey, else a
// scalar value. It returns "" when there is none.
func findKey(n *yaml.Node, path string, line int, value string, isKey bool) string {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if k := findKey(c, path, line, value, isKey); k != "" {
				return k
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if isKey && k.Line == line && k.Value == value {
				return p
			}
			if r := findKey(v, p, line, value, isKey); r != "" {
				return r
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if k := findKey(c, fmt.Sprintf("%s[%d]", path, i), line, value, isKey); k != "" {
				return k
			}
		}
	case yaml.ScalarNode:
		if !isKey && n.Line == line && n.Value == value {
			return path
		}
	}
	return ""
}

// Validate reports the first invalid field, naming it by its config key.
func (c Config) Validate() error {
	if err := c.Joint.Validate(); err != nil {
		return err
	}
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
		switch {
		case e.HeldOutEnvironments < 0:
			return fmt.Errorf("environments[%d].held_out_environments = %d, want ≥ 0 (0 = number_of_clients)", i, e.HeldOutEnvironments)
		case e.Obstacles < 0 || e.Obstacles > e.GridSize*e.GridSize/2:
			return fmt.Errorf("environments[%d].obstacles = %d, want between 0 (= default) and half the %d cells", i, e.Obstacles, e.GridSize*e.GridSize)
		case e.MaxEpisodeLength < 0:
			return fmt.Errorf("environments[%d].max_episode_length = %d, want ≥ 0 (0 = 4·grid_size)", i, e.MaxEpisodeLength)
		case !(e.SlipMax >= 0 && e.SlipMax <= 1):
			return fmt.Errorf("environments[%d].slip_max = %v, want in [0,1] (0 = 0.1)", i, e.SlipMax)
		}
	}
	if len(c.Expert.TrueReward) != 2 {
		return fmt.Errorf("expert.true_reward has %d entries, want 2 (goal_distance, obstacle_distance)", len(c.Expert.TrueReward))
	}
	for i, x := range c.Expert.TrueReward {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("expert.true_reward[%d] = %v, want a finite value", i, x)
		}
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
	switch {
	case c.IRL.IRLIterations < 1:
		return fmt.Errorf("irl.irl_iterations = %d, want ≥ 1", c.IRL.IRLIterations)
	case !(c.IRL.IRLLearningRate > 0) || math.IsInf(c.IRL.IRLLearningRate, 0):
		return fmt.Errorf("irl.irl_learning_rate = %v, want a finite value > 0", c.IRL.IRLLearningRate)
	case !(c.IRL.Temperature > 0) || math.IsInf(c.IRL.Temperature, 0):
		return fmt.Errorf("irl.temperature = %v, want a finite value > 0", c.IRL.Temperature)
	case !(c.IRL.RewardRegularizationL2 >= 0) || math.IsInf(c.IRL.RewardRegularizationL2, 0):
		return fmt.Errorf("irl.reward_regularization_l2 = %v, want a finite value ≥ 0", c.IRL.RewardRegularizationL2)
	}
	if c.IRL.Optimizer != "gd" && c.IRL.Optimizer != "adam" {
		return fmt.Errorf("irl.optimizer = %q, want gd or adam", c.IRL.Optimizer)
	}
	if _, err := c.barycenterMethod(); err != nil {
		return fmt.Errorf("barycenter.method: %w", err)
	}
	b := c.Barycenter
	switch {
	case !(b.EntropicRegularization > 0) || math.IsInf(b.EntropicRegularization, 0):
		return fmt.Errorf("barycenter.entropic_regularization = %v, want a finite value > 0", b.EntropicRegularization)
	case b.SinkhornIterations < 1:
		return fmt.Errorf("barycenter.sinkhorn_iterations = %d, want ≥ 1", b.SinkhornIterations)
	case b.BarycenterIterations < 1:
		return fmt.Errorf("barycenter.barycenter_iterations = %d, want ≥ 1", b.BarycenterIterations)
	case !(b.Shift >= 0) || math.IsInf(b.Shift, 0):
		return fmt.Errorf("barycenter.shift = %v, want a finite value ≥ 0 (0 = automatic)", b.Shift)
	case !(b.Scale >= 0) || math.IsInf(b.Scale, 0):
		return fmt.Errorf("barycenter.scale = %v, want a finite value ≥ 0 (0 = automatic)", b.Scale)
	}
	if b.Weights != "uniform" && b.Weights != "demonstrations" {
		return fmt.Errorf("barycenter.weights = %q, want uniform or demonstrations", b.Weights)
	}
	switch a := c.Ablation; {
	case !(a.InitScale >= 0) || math.IsInf(a.InitScale, 0):
		return fmt.Errorf("ablation.init_scale = %v, want a finite value ≥ 0", a.InitScale)
	case !(a.WeakThetaNoise >= 0) || math.IsInf(a.WeakThetaNoise, 0):
		return fmt.Errorf("ablation.weak_theta_noise = %v, want a finite value ≥ 0", a.WeakThetaNoise)
	case !(a.WeakExpertEpsilon >= 0 && a.WeakExpertEpsilon <= 1):
		return fmt.Errorf("ablation.weak_expert_epsilon = %v, want in [0,1]", a.WeakExpertEpsilon)
	case a.WeakEpisodes < 0:
		return fmt.Errorf("ablation.weak_episodes = %d, want ≥ 0 (0 = expert.episodes_per_client)", a.WeakEpisodes)
	}
	if err := c.Privacy.validate(); err != nil {
		return err
	}
	if c.Privacy.enabled() && c.Barycenter.Weights == "demonstrations" {
		return errors.New("privacy with barycenter.weights = demonstrations: a private client does not send its demonstration count; use uniform")
	}
	if c.Evaluation.Method != EvalExact && c.Evaluation.Method != EvalSampled {
		return fmt.Errorf("evaluation.method = %q, want %q or %q", c.Evaluation.Method, EvalExact, EvalSampled)
	}
	if c.Evaluation.EvaluationEpisodes < 1 {
		return fmt.Errorf("evaluation.evaluation_episodes = %d, want ≥ 1", c.Evaluation.EvaluationEpisodes)
	}
	a := c.Ablation
	switch {
	case a.GridSize < 3:
		return fmt.Errorf("ablation.grid_size = %d, want ≥ 3", a.GridSize)
	case a.NumberOfClients < 1:
		return fmt.Errorf("ablation.number_of_clients = %d, want ≥ 1", a.NumberOfClients)
	case len(a.WeakFractions) == 0:
		return errors.New("ablation.weak_fractions: empty")
	}
	for i, p := range a.WeakFractions {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("ablation.weak_fractions[%d] = %v, want in [0,1]", i, p)
		}
	}
	if !(a.WeakFactorMin > 0 && a.WeakFactorMin <= 1) {
		return fmt.Errorf("ablation.weak_factor_min = %v, want in (0,1]", a.WeakFactorMin)
	}
	if !(a.WeakFactorMax >= a.WeakFactorMin && a.WeakFactorMax <= 1) {
		return fmt.Errorf("ablation.weak_factor_max = %v, want in [weak_factor_min = %v, 1]", a.WeakFactorMax, a.WeakFactorMin)
	}
	if a.NumberOfSeeds < 0 {
		return fmt.Errorf("ablation.number_of_seeds = %d, want ≥ 0 (0 = number_of_seeds)", a.NumberOfSeeds)
	}
	if c.Workers < 0 {
		return fmt.Errorf("jobs = %d, want ≥ 0 (0 = 2)", c.Workers)
	}
	return c.validateMethods()
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
	r.FusionMethods = slices.Clone(c.methods())
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
