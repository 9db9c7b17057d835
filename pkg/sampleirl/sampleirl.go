// Package sampleirl is the sample-based local learner: MaxEnt inverse
// reinforcement learning with an RL inner loop in the client's own
// simulator, for problems no lattice model can reach. The reward is linear,
// r_θ(s, a, s′) = θᵀφ(s, a, s′), for any FeatureMap; the policy is fedirl's
// PPO (package rl/ppo) trained on r_θ.
//
// # Algorithm
//
// Learn alternates, from θ₀ (Config.Theta0, default zeros), for k = 1, 2, …:
//
//  1. policy improvement: Config.PolicySteps more PPO steps on r_{θ_{k−1}},
//     continuing one Trainer (its networks, Adam state, normalisation
//     statistics and environment copies), so every iteration is warm-started
//     from the last;
//  2. evaluation: Config.Episodes fresh episodes of the (stochastic) policy
//     give μ̂_π = (1/n) Σ_e Σ_t γ^t φ(s_t, a_t, s_{t+1}) and, since the
//     episodes are independent (each from its own reset seed, with the policy
//     fixed while sampling), the standard error SE = sqrt(Σ_j Var̂_j / n) of
//     μ̂_π (the root of the trace of its covariance, the scale of ‖μ̂_π − μ_π‖);
//  3. stop, converged, when the gap ‖μ_D − μ̂_π‖₂ ≤ Config.Tolerance · SE,
//     SE = s_π·sqrt(1/n_π + 1/n_D) the standard error of the difference of
//     the two means if the demonstrations were episodes of the policy (s_π²
//     = Σ_j Var̂_j the policy's per-episode variance, pooled for both sides
//     under that hypothesis; n_π its episodes, n_D the demonstrations), on
//     the iteration's estimate and again on a confirming estimate from
//     Config.ConfirmEpisodes fresh episodes: the demonstrations cannot tell
//     the policy from their demonstrator;
//  4. otherwise a reward step on MaxEnt's gradient g = μ_D − μ̂_π − λθ
//     (with the confirming estimate's μ̂_π when there is one), gradient
//     ascent θ ← θ + η g or Adam, as package irl defines them.
//
// # Why a two-sample rule with a confirming estimate
//
// A rule on the policy's sampling error alone, ‖μ_D − μ̂_π‖ ≤ z·s_π/√n_π,
// has the power of n_π, whatever the data: with few episodes per estimate a
// far θ passes (with 4 episodes on the test grid, all 8 seeds stopped within
// 3 iterations, 2 of them on θ₀ = 0, 27–38 fresh SEs from the
// demonstrations), and with many it asks for a precision PPO's imperfect
// soft policy cannot reach, so it passes only on a lucky draw. The
// demonstrations fix the precision that matters: a policy they cannot tell
// from their demonstrator is as good as the data can show, and the
// confirming estimate, drawn only where the rule passes (so it costs
// little), has at least as many episodes as there are demonstrations
// [max(Episodes, n_D)], so that its own noise does not dominate the test.
// With few demonstrations the rule is lenient, as the data is: Result.DemoEpisodes
// and GapSE say how lenient.

// # The policy's temperature
//
// MaxEnt IRL models the demonstrator as soft-optimal, π(a|s) ∝ exp(Q(s,a)/τ),
// and its gradient μ_D − μ_π is only the likelihood's gradient when π is that
// policy for r_θ. PPO with stable-baselines3's defaults is not: it normalises
// every minibatch's advantages, which makes it blind to the reward's scale, so
// any θ ≠ 0, however small, drives it towards a deterministic policy, and the
// reward steps then chase a moving target (on the test grid θ wandered and
// never converged). SoftPPO sets the two switches that make PPO's fixed point approximately
// π ∝ exp(A/τ) at temperature τ: the entropy bonus ent_coef = τ and no
// advantage normalisation. Learn uses Config.PPO as given; pass
// SoftPPO(c, 1) for classical MaxEnt IRL (irl.Config.Temperature = 1).
//
// μ_D and μ_π are discounted from the first step, γ^t with t = 0, 1, …, as
// irl.EmpiricalFeatureExpectations computes μ_D on a lattice, and λ is the
// weight of −(λ/2)‖θ‖² in the objective, as irl.Config.L2. Result.Theta is
// the θ the final policy was trained on, so the reported gap and its SE
// belong to it. After Config.MaxIter iterations without meeting the rule
// Learn returns with Converged false.
//
// # Determinism
//
// The PPO trainer is seeded with Config.Seed; the evaluation episodes draw
// their reset seeds and actions from a PCG stream keyed by Config.Seed and
// the iteration. Nothing runs concurrently outside PPO, whose results do not
// depend on its worker count, so the same Config gives the same θ bytes.
//
// # Checkpoints
//
// With Config.CheckpointDir set, each iteration writes iter-NNNN.json there
// (atomically): θ, the optimizer's moments, the iteration's statistics and
// the PPO policy (ppo.Checkpoint). Resuming a run from one is not yet
// implemented: an exact resume needs the PPO trainer's full state (Adam
// moments, random streams, environment copies), which ppo does not export.
// LearnMLP avoids the need by starting each iteration's PPO trainer afresh
// from the last policy (ppo.Options.Init), so its checkpoints resume exactly.
//
// LearnMLP (airl.go) is the neural-reward learner: a RewardNet (mlp.go) on
// the step's (s, a) or any input map, learned with AIRL's discriminator
// objective, with the same stopping rule's structure on the
// discriminator's log-odds and checkpoints it resumes from exactly.
//
// The package deliberately knows no particular environment, no lattice and
// no fusion.
package sampleirl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

// FeatureMap is a feature map φ(s, a, s′) of one environment step, with the
// arguments of ppo.RewardFunc: the observation before the step, the action
// applied, the observation the step returned and whether it terminated the
// episode.
type FeatureMap interface {
	// Dim returns d, the number of features.
	Dim() int
	// Eval writes φ(obs, action, next, terminated) into dst (length Dim)
	// and returns it; it must not retain or modify its arguments.
	Eval(dst, obs, action, next []float64, terminated bool) []float64
}

// FeatureFunc adapts a function of dimension D to a FeatureMap.
type FeatureFunc struct {
	// D is the number of features.
	D int
	// F writes the features of one step into dst and returns it.
	F func(dst, obs, action, next []float64, terminated bool) []float64
}

// Dim returns f.D.
func (f FeatureFunc) Dim() int { return f.D }

// Eval calls f.F.
func (f FeatureFunc) Eval(dst, obs, action, next []float64, terminated bool) []float64 {
	return f.F(dst, obs, action, next, terminated)
}

// SoftPPO returns c with the settings that make PPO's policy approximately
// soft-optimal at temperature tau for the reward it trains on: EntCoef = tau
// and NoAdvantageNorm (see the package comment).
func SoftPPO(c ppo.Config, tau float64) ppo.Config {
	c.EntCoef = tau
	c.NoAdvantageNorm = true
	return c
}

// Trajectory is one demonstration in the simulator's own spaces.
type Trajectory struct {
	// Obs are the observations, len(Actions)+1 of them: Obs[t+1] is what
	// the step with Actions[t] returned.
	Obs [][]float64 `json:"obs"`
	// Actions are the actions applied (a Discrete action as its index).
	Actions [][]float64 `json:"actions"`
	// Terminated reports whether the last step terminated the episode
	// (rather than the episode being truncated or cut).
	Terminated bool `json:"terminated,omitempty"`
}

// Optimizer names accepted by Config.Optimizer (package irl's spelling).
const (
	OptimizerGD   = "gd"
	OptimizerAdam = "adam"
)

// ErrInput marks an error in what the caller gave Learn: no demonstrations,
// a dimension mismatch, a non-finite value.
var ErrInput = errors.New("sampleirl: bad input")

// ErrNonFinite marks a feature or θ that became NaN or infinite during learning.
var ErrNonFinite = errors.New("sampleirl: non-finite value")

// Config holds the learner's settings; every zero value means the default in brackets.
type Config struct {
	// PPO configures the policy's trainer [ppo's defaults]. Its linear
	// learning-rate and clip schedules are refused: they need one fixed
	// budget, and the learner's budget grows by PolicySteps per iteration.
	PPO ppo.Config `json:"ppo"`
	// Seed seeds the PPO trainer and the evaluation episodes [0].
	Seed uint64 `json:"seed"`
	// Gamma is the discount γ of the feature expectations [PPO's gamma].
	Gamma float64 `json:"gamma"`
	// PolicySteps is the number of PPO environment steps per iteration [one rollout: n_envs·n_steps].
	PolicySteps int `json:"policy_steps"`
	// Episodes is the number of episodes sampled per iteration to estimate μ_π [64].
	Episodes int `json:"episodes"`
	// ConfirmEpisodes is the number of fresh episodes of the confirming
	// estimate drawn where the stopping rule passes; ≥ Episodes, and equal
	// to it for no confirmation [max(Episodes, number of demonstrations)].
	ConfirmEpisodes int `json:"confirm_episodes"`
	// MaxEpisodeSteps cuts a sampled episode after this many steps [0: the
	// environment must end every episode itself, within 10⁶ steps].
	MaxEpisodeSteps int `json:"max_episode_steps"`
	// MaxIter is the cap on outer iterations [50].
	MaxIter int `json:"max_iter"`
	// Tolerance is z of the stopping rule ‖μ_D − μ̂_π‖ ≤ z·SE [2].
	Tolerance float64 `json:"tolerance"`
	// Optimizer is "gd" or "adam" [gd, as irl].
	Optimizer string `json:"optimizer"`
	// LearningRate is the reward step's η [0.1].
	LearningRate float64 `json:"learning_rate"`
	// L2 is λ of −(λ/2)‖θ‖², as irl.Config.L2 [0].
	L2 float64 `json:"l2"`
	// Beta1, Beta2 and Epsilon are Adam's constants [0.9, 0.999, 1e-8].
	Beta1   float64 `json:"beta1"`
	Beta2   float64 `json:"beta2"`
	Epsilon float64 `json:"epsilon"`
	// Theta0 is the starting θ [zeros]; it is copied.
	Theta0 []float64 `json:"theta0,omitempty"`
	// CheckpointDir, when set, receives one checkpoint file per iteration.
	CheckpointDir string `json:"-"`
	// Workers is PPO's update goroutines (ppo.Options.Workers); it never changes a result [1].
	Workers int `json:"-"`
	// OnIteration, when set, is called after each iteration's evaluation.
	OnIteration func(Iteration) `json:"-"`
}

const (
	defaultEpisodes  = 64
	defaultMaxIter   = 50
	defaultTolerance = 2
	defaultLR        = 0.1
	hardEpisodeCap   = 1_000_000
	streamEvalBase   = 0x5a4d_0000      // + iteration: the evaluation episodes' PCG stream
	streamConfirm    = 0x4346_0000_0000 // + iteration: the confirming estimates' stream
)

// Resolve returns c with its zero fields replaced by the defaults, or an
// error (wrapping ErrInput) naming the first invalid setting.
func (c Config) Resolve() (Config, error) {
	c.PPO = c.PPO.WithDefaults()
	if err := c.PPO.Validate(); err != nil {
		return c, fmt.Errorf("%w: %w", ErrInput, err)
	}
	if c.PPO.LinearLR || c.PPO.LinearClip {
		return c, fmt.Errorf("%w: ppo.linear_lr and linear_clip need a fixed budget; the learner's grows by policy_steps per iteration", ErrInput)
	}
	if c.Gamma == 0 {
		c.Gamma = c.PPO.Gamma
	}
	if c.PolicySteps == 0 {
		c.PolicySteps = c.PPO.NEnvs * c.PPO.NSteps
	}
	if c.Episodes == 0 {
		c.Episodes = defaultEpisodes
	}
	if c.MaxIter == 0 {
		c.MaxIter = defaultMaxIter
	}
	if c.Tolerance == 0 {
		c.Tolerance = defaultTolerance
	}
	if c.Optimizer == "" {
		c.Optimizer = OptimizerGD
	}
	if c.LearningRate == 0 {
		c.LearningRate = defaultLR
	}
	if c.Beta1 == 0 {
		c.Beta1 = 0.9
	}
	if c.Beta2 == 0 {
		c.Beta2 = 0.999
	}
	if c.Epsilon == 0 {
		c.Epsilon = 1e-8
	}
	if c.Workers == 0 {
		c.Workers = 1
	}
	switch {
	case !(c.Gamma > 0 && c.Gamma <= 1):
		return c, fmt.Errorf("%w: gamma = %v, want in (0, 1]", ErrInput, c.Gamma)
	case c.PolicySteps < 1:
		return c, fmt.Errorf("%w: policy_steps = %d, want ≥ 1", ErrInput, c.PolicySteps)
	case c.Episodes < 2:
		return c, fmt.Errorf("%w: episodes = %d, want ≥ 2 (a standard error needs two)", ErrInput, c.Episodes)
	case c.ConfirmEpisodes != 0 && c.ConfirmEpisodes < c.Episodes:
		return c, fmt.Errorf("%w: confirm_episodes = %d, want ≥ episodes (%d); equal turns the confirmation off", ErrInput, c.ConfirmEpisodes, c.Episodes)
	case c.MaxEpisodeSteps < 0:
		return c, fmt.Errorf("%w: max_episode_steps = %d, want ≥ 0", ErrInput, c.MaxEpisodeSteps)
	case c.MaxIter < 1:
		return c, fmt.Errorf("%w: max_iter = %d, want ≥ 1", ErrInput, c.MaxIter)
	case !(c.Tolerance > 0) || math.IsInf(c.Tolerance, 0):
		return c, fmt.Errorf("%w: tolerance = %v, want > 0", ErrInput, c.Tolerance)
	case c.Optimizer != OptimizerGD && c.Optimizer != OptimizerAdam:
		return c, fmt.Errorf("%w: optimizer %q, want %q or %q", ErrInput, c.Optimizer, OptimizerGD, OptimizerAdam)
	case !(c.LearningRate > 0) || math.IsInf(c.LearningRate, 0):
		return c, fmt.Errorf("%w: learning_rate = %v, want > 0", ErrInput, c.LearningRate)
	case !(c.L2 >= 0) || math.IsInf(c.L2, 0):
		return c, fmt.Errorf("%w: l2 = %v, want ≥ 0", ErrInput, c.L2)
	case !(c.Beta1 >= 0 && c.Beta1 < 1) || !(c.Beta2 >= 0 && c.Beta2 < 1) || !(c.Epsilon > 0):
		return c, fmt.Errorf("%w: Adam constants beta1=%v beta2=%v epsilon=%v out of range", ErrInput, c.Beta1, c.Beta2, c.Epsilon)
	case c.Workers < 1:
		return c, fmt.Errorf("%w: workers = %d, want ≥ 1", ErrInput, c.Workers)
	}
	for j, v := range c.Theta0 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return c, fmt.Errorf("%w: theta0[%d] = %v", ErrInput, j, v)
		}
	}
	return c, nil
}

// Iteration is one outer iteration's record.
type Iteration struct {
	// Index counts iterations from 1.
	Index int `json:"iteration"`
	// Theta is the θ the iteration's policy was trained on.
	Theta []float64 `json:"theta"`
	// PolicyFeatures is μ̂_π.
	PolicyFeatures []float64 `json:"policy_features"`
	// Gap is ‖μ_D − μ̂_π‖₂.
	Gap float64 `json:"gap"`
	// GapSE is the rule's standard error of the difference, s_π·sqrt(1/n_π + 1/n_D).
	GapSE float64 `json:"gap_se"`
	// ConfirmGap and ConfirmSE are the confirming estimate's gap and the
	// rule's SE, drawn when Gap ≤ z·GapSE (ConfirmEpisodes > Episodes); both 0 otherwise.
	ConfirmGap float64 `json:"confirm_gap,omitempty"`
	ConfirmSE  float64 `json:"confirm_se,omitempty"`
	// EnvSteps counts PPO training steps so far.
	EnvSteps int `json:"env_steps"`
	// MeanLearnedReturn and MeanTrueReturn are PPO's running means of the
	// training episodes' learned and true returns.
	MeanLearnedReturn float64 `json:"mean_learned_return"`
	MeanTrueReturn    float64 `json:"mean_true_return"`
}

// Result is the outcome of Learn.
type Result struct {
	// Theta is the θ the final policy was trained on.
	Theta []float64 `json:"theta"`
	// Iterations is the number of outer iterations run.
	Iterations int `json:"iterations"`
	// Converged reports whether the stopping rule was met.
	Converged bool `json:"converged"`
	// StopReason says why Learn stopped.
	StopReason string `json:"stop_reason"`
	// Gap and GapSE are the final ‖μ_D − μ̂_π‖₂ and the rule's standard
	// error of it, s_π·sqrt(1/n_π + 1/n_D).
	Gap   float64 `json:"gap"`
	GapSE float64 `json:"gap_se"`
	// DemoEpisodes is n_D, ConfirmEpisodes the resolved confirming estimate's size.
	DemoEpisodes    int `json:"demo_episodes"`
	ConfirmEpisodes int `json:"confirm_episodes"`
	// DemoSE is the standard error of μ_D over the demonstrations
	// (informational: the rule pools the policy's variance for both sides).
	DemoSE float64 `json:"demo_se"`
	// DemoFeatures is μ_D; PolicyFeatures the final μ̂_π.
	DemoFeatures   []float64 `json:"demo_features"`
	PolicyFeatures []float64 `json:"policy_features"`
	// EnvSteps counts PPO training steps, EvalSteps the evaluation episodes' steps.
	EnvSteps  int `json:"env_steps"`
	EvalSteps int `json:"eval_steps"`
	// History holds every iteration.
	History []Iteration `json:"history"`
	// Policy is the final PPO policy.
	Policy *ppo.Policy `json:"-"`
}

// DemoFeatures returns μ_D = (1/N) Σ_i Σ_t γ^t φ(s_t, a_t, s_{t+1}) of the
// demonstrations and the standard error of that mean, sqrt(Σ_j Var̂_j/N)
// (0 for one demonstration), after checking them: at least one, each with
// at least one step and len(Obs) = len(Actions)+1, finite observations of
// length obsDim and actions of length actDim (either length check skipped
// when ≤ 0), and finite features of length φ.Dim(). Errors wrap ErrInput and name the
// demonstration and step.
func DemoFeatures(phi FeatureMap, gamma float64, demos []Trajectory, obsDim, actDim int) (mu []float64, se float64, err error) {
	if len(demos) == 0 {
		return nil, 0, fmt.Errorf("%w: no demonstrations", ErrInput)
	}
	d := phi.Dim()
	if d < 1 {
		return nil, 0, fmt.Errorf("%w: feature map has dimension %d", ErrInput, d)
	}
	acc := newMoments(d)
	sum := make([]float64, d)
	f := make([]float64, d)
	for i, tr := range demos {
		if len(tr.Actions) == 0 {
			return nil, 0, fmt.Errorf("%w: demonstration %d has no steps", ErrInput, i)
		}
		if len(tr.Obs) != len(tr.Actions)+1 {
			return nil, 0, fmt.Errorf("%w: demonstration %d has %d observations for %d actions, want actions+1", ErrInput, i, len(tr.Obs), len(tr.Actions))
		}
		clear(sum)
		g := 1.0
		for t, a := range tr.Actions {
			o, next := tr.Obs[t], tr.Obs[t+1]
			if t == 0 {
				if err := checkVector(o, obsDim); err != nil {
					return nil, 0, fmt.Errorf("%w: demonstration %d observation 0: %w", ErrInput, i, err)
				}
			}
			if err := checkVector(next, obsDim); err != nil {
				return nil, 0, fmt.Errorf("%w: demonstration %d observation %d: %w", ErrInput, i, t+1, err)
			}
			if err := checkVector(a, actDim); err != nil {
				return nil, 0, fmt.Errorf("%w: demonstration %d action %d: %w", ErrInput, i, t, err)
			}
			term := tr.Terminated && t == len(tr.Actions)-1
			v, err := evalChecked(phi, f, o, a, next, term)
			if err != nil {
				return nil, 0, fmt.Errorf("%w: demonstration %d step %d: %w", ErrInput, i, t, err)
			}
			for j := range sum {
				sum[j] += g * v[j]
			}
			g *= gamma
		}
		acc.add(sum)
	}
	return acc.mean(), acc.se(), nil
}

// checkVector reports a vector of the wrong length (dim > 0) or with a
// non-finite entry.
func checkVector(v []float64, dim int) error {
	if dim > 0 && len(v) != dim {
		return fmt.Errorf("length %d, the environment's have %d", len(v), dim)
	}
	for j, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%w: entry %d = %v", ErrNonFinite, j, x)
		}
	}
	return nil
}

// evalChecked evaluates φ into f and checks its length and finiteness.
func evalChecked(phi FeatureMap, f, obs, act, next []float64, term bool) ([]float64, error) {
	v := phi.Eval(f, obs, act, next, term)
	if len(v) != len(f) {
		return nil, fmt.Errorf("feature map returned %d values, its Dim is %d", len(v), len(f))
	}
	for j, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%w: feature %d = %v", ErrNonFinite, j, x)
		}
	}
	return v, nil
}

// moments accumulates per-coordinate means and variances (Welford).
type moments struct {
	n      int
	mu, m2 []float64
}

func newMoments(d int) *moments {
	return &moments{mu: make([]float64, d), m2: make([]float64, d)}
}

func (m *moments) add(x []float64) {
	m.n++
	for j, v := range x {
		dlt := v - m.mu[j]
		m.mu[j] += dlt / float64(m.n)
		m.m2[j] += dlt * (v - m.mu[j])
	}
}

func (m *moments) mean() []float64 { return slices.Clone(m.mu) }

// se returns sqrt(Σ_j s_j²/n) with s_j² the unbiased sample variance.
func (m *moments) se() float64 {
	if m.n < 2 {
		return 0
	}
	s := 0.0
	for _, v := range m.m2 {
		s += v / float64(m.n-1)
	}
	return math.Sqrt(s / float64(m.n))
}

// Learn runs the sample-based MaxEnt learner on the simulator made by
// makeEnv (copies 0..n_envs−1 train PPO, copy n_envs samples the evaluation
// episodes) with feature map phi and the demonstrations. Input errors wrap
// ErrInput; a cancelled ctx returns the result so far with ctx's error.
func Learn(ctx context.Context, makeEnv ppo.EnvMaker, phi FeatureMap, demos []Trajectory, cfg Config) (Result, error) {
	cfg, err := cfg.Resolve()
	if err != nil {
		return Result{}, err
	}
	if phi == nil {
		return Result{}, fmt.Errorf("%w: no feature map", ErrInput)
	}
	d := phi.Dim()
	if cfg.Theta0 != nil && len(cfg.Theta0) != d {
		return Result{}, fmt.Errorf("%w: theta0 has %d entries, the feature map %d", ErrInput, len(cfg.Theta0), d)
	}
	evalEnv, err := makeEnv(cfg.PPO.NEnvs)
	if err != nil {
		return Result{}, fmt.Errorf("sampleirl: making the evaluation environment: %w", err)
	}
	obsSp, actSp := evalEnv.ObservationSpace(), evalEnv.ActionSpace()
	muD, demoSE, err := DemoFeatures(phi, cfg.Gamma, demos, obsSp.Dim(), actSp.Dim())
	if err != nil {
		return Result{}, err
	}

	theta := make([]float64, d)
	copy(theta, cfg.Theta0)
	fbuf := make([]float64, d)
	var rewardErr error
	reward := func(obs, act, next []float64, term bool) float64 {
		v := phi.Eval(fbuf, obs, act, next, term)
		r := 0.0
		for j, x := range v {
			r += theta[j] * x
		}
		if (math.IsNaN(r) || math.IsInf(r, 0)) && rewardErr == nil {
			rewardErr = fmt.Errorf("%w: reward %v at a training step (features %v)", ErrNonFinite, r, v)
		}
		return r
	}
	tr, err := ppo.NewTrainer(cfg.PPO, makeEnv, ppo.Options{Seed: cfg.Seed, Reward: reward, Workers: cfg.Workers})
	if err != nil {
		return Result{}, fmt.Errorf("sampleirl: %w", err)
	}
	nD := float64(len(demos))
	if cfg.ConfirmEpisodes == 0 {
		cfg.ConfirmEpisodes = max(cfg.Episodes, len(demos))
	}
	res := Result{DemoFeatures: muD, DemoSE: demoSE, DemoEpisodes: len(demos), ConfirmEpisodes: cfg.ConfirmEpisodes, Policy: tr.Policy()}
	// twoSample turns the policy's standard error of its mean over n episodes
	// into the rule's: s_π·sqrt(1/n + 1/n_D).
	twoSample := func(se float64, n int) float64 {
		return se * math.Sqrt(float64(n)) * math.Sqrt(1/float64(n)+1/nD)
	}
	ev := newEvaluator(phi, evalEnv, cfg)
	opt := newOptimizer(cfg, d)
	grad := make([]float64, d)
	for k := 1; k <= cfg.MaxIter; k++ {
		if err := tr.Learn(ctx, tr.Steps()+cfg.PolicySteps); err != nil {
			return res, err
		}
		if rewardErr != nil {
			return res, rewardErr
		}
		muPi, se, err := ev.sample(tr.Policy(), k, cfg.Episodes, streamEvalBase)
		if err != nil {
			return res, fmt.Errorf("sampleirl: iteration %d: %w", k, err)
		}
		se = twoSample(se, cfg.Episodes)
		gap := distance(muD, muPi)
		it := Iteration{Index: k, Theta: slices.Clone(theta), PolicyFeatures: muPi, Gap: gap, GapSE: se}
		pass := gap <= cfg.Tolerance*se
		if pass && cfg.ConfirmEpisodes > cfg.Episodes {
			muPi, se, err = ev.sample(tr.Policy(), k, cfg.ConfirmEpisodes, streamConfirm)
			if err != nil {
				return res, fmt.Errorf("sampleirl: iteration %d, confirming estimate: %w", k, err)
			}
			se = twoSample(se, cfg.ConfirmEpisodes)
			gap = distance(muD, muPi)
			it.ConfirmGap, it.ConfirmSE = gap, se
			pass = gap <= cfg.Tolerance*se
		}
		for j := range grad {
			grad[j] = muD[j] - muPi[j] - cfg.L2*theta[j]
		}
		it.EnvSteps = tr.Steps()
		if c := tr.Curve(); len(c) > 0 {
			it.MeanLearnedReturn, it.MeanTrueReturn = c[len(c)-1].MeanLearnedReturn, c[len(c)-1].MeanTrueReturn
		}
		res.History = append(res.History, it)
		res.Iterations, res.Theta, res.PolicyFeatures, res.Gap, res.GapSE = k, slices.Clone(it.Theta), muPi, gap, se
		res.EnvSteps, res.EvalSteps = tr.Steps(), ev.steps
		if cfg.OnIteration != nil {
			cfg.OnIteration(it)
		}
		if cfg.CheckpointDir != "" {
			if err := writeCheckpoint(cfg, tr, it, opt); err != nil {
				return res, err
			}
		}
		if pass {
			res.Converged = true
			res.StopReason = fmt.Sprintf("feature gap %.4g ≤ %g × its standard error %.4g", gap, cfg.Tolerance, se)
			if it.ConfirmSE > 0 {
				res.StopReason += fmt.Sprintf(" on %d confirming episodes (and %.4g ≤ %g × %.4g on the iteration's %d)", cfg.ConfirmEpisodes, it.Gap, cfg.Tolerance, it.GapSE, cfg.Episodes)
			}
			return res, nil
		}
		if k == cfg.MaxIter {
			break
		}
		opt.step(theta, grad)
		for j, v := range theta {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return res, fmt.Errorf("%w: θ[%d] = %v after iteration %d (learning rate %v too large?)", ErrNonFinite, j, v, k, cfg.LearningRate)
			}
		}
	}
	res.StopReason = fmt.Sprintf("iteration cap %d reached with feature gap %.4g > %g × its standard error %.4g", cfg.MaxIter, res.Gap, cfg.Tolerance, res.GapSE)
	return res, nil
}

// evaluator samples the evaluation episodes of one iteration.
type evaluator struct {
	phi       FeatureMap
	env       envs.Env
	cfg       Config
	act, f    []float64
	obs, sums []float64
	steps     int
}

func newEvaluator(phi FeatureMap, env envs.Env, cfg Config) *evaluator {
	d := phi.Dim()
	return &evaluator{phi: phi, env: env, cfg: cfg, act: make([]float64, env.ActionSpace().Dim()),
		f: make([]float64, d), obs: make([]float64, env.ObservationSpace().Dim()), sums: make([]float64, d)}
}

// sample runs n episodes of pol (sampled actions) from the PCG stream
// base+iter and returns μ̂_π and its standard error.
func (e *evaluator) sample(pol *ppo.Policy, iter, n int, base uint64) ([]float64, float64, error) {
	rng := rand.New(rand.NewPCG(e.cfg.Seed, base+uint64(iter)))
	acc := newMoments(len(e.f))
	limit := e.cfg.MaxEpisodeSteps
	if limit == 0 {
		limit = hardEpisodeCap
	}
	for ep := 0; ep < n; ep++ {
		copy(e.obs, e.env.Reset(rng.Uint64()))
		clear(e.sums)
		g := 1.0
		for t := 0; ; t++ {
			if t == limit {
				if e.cfg.MaxEpisodeSteps == 0 {
					return nil, 0, fmt.Errorf("episode %d did not end within %d steps; set max_episode_steps", ep, hardEpisodeCap)
				}
				break
			}
			pol.Act(e.act, e.obs, rng)
			next, _, term, trunc := e.env.Step(e.act)
			e.steps++
			v, err := evalChecked(e.phi, e.f, e.obs, e.act, next, term)
			if err != nil {
				return nil, 0, fmt.Errorf("episode %d step %d: %w", ep, t, err)
			}
			for j := range e.sums {
				e.sums[j] += g * v[j]
			}
			g *= e.cfg.Gamma
			copy(e.obs, next)
			if term || trunc {
				break
			}
		}
		acc.add(e.sums)
	}
	return acc.mean(), acc.se(), nil
}

// distance returns ‖a − b‖₂.
func distance(a, b []float64) float64 {
	s := 0.0
	for j := range a {
		d := a[j] - b[j]
		s += d * d
	}
	return math.Sqrt(s)
}

// optimizer is the reward step: gradient ascent or Adam.
type optimizer struct {
	cfg    Config
	t      int
	m1, m2 []float64
}

func newOptimizer(cfg Config, d int) *optimizer {
	return &optimizer{cfg: cfg, m1: make([]float64, d), m2: make([]float64, d)}
}

// step moves theta along grad (ascent).
func (o *optimizer) step(theta, grad []float64) {
	c := o.cfg
	if c.Optimizer == OptimizerGD {
		for j, g := range grad {
			theta[j] += c.LearningRate * g
		}
		return
	}
	o.t++
	c1 := 1 - math.Pow(c.Beta1, float64(o.t))
	c2 := 1 - math.Pow(c.Beta2, float64(o.t))
	for j, g := range grad {
		o.m1[j] = c.Beta1*o.m1[j] + (1-c.Beta1)*g
		o.m2[j] = c.Beta2*o.m2[j] + (1-c.Beta2)*g*g
		theta[j] += c.LearningRate * (o.m1[j] / c1) / (math.Sqrt(o.m2[j]/c2) + c.Epsilon)
	}
}

// Checkpoint is the content of one iteration's checkpoint file.
type Checkpoint struct {
	// Config is the resolved configuration.
	Config Config `json:"config"`
	// Iteration is the iteration's record (θ, μ̂_π, gap, SE).
	Iteration Iteration `json:"iteration"`
	// AdamStep, AdamM1 and AdamM2 are the reward optimizer's state.
	AdamStep int       `json:"adam_step"`
	AdamM1   []float64 `json:"adam_m1"`
	AdamM2   []float64 `json:"adam_m2"`
	// Policy is the PPO policy after the iteration's training.
	Policy *ppo.Checkpoint `json:"policy"`
}

// writeCheckpoint writes iter-NNNN.json into cfg.CheckpointDir atomically.
func writeCheckpoint(cfg Config, tr *ppo.Trainer, it Iteration, opt *optimizer) error {
	pc := tr.Config()
	ck, err := tr.Policy().Checkpoint(&pc)
	if err != nil {
		return fmt.Errorf("sampleirl: checkpoint: %w", err)
	}
	c := Checkpoint{Config: cfg, Iteration: it, AdamStep: opt.t, AdamM1: opt.m1, AdamM2: opt.m2, Policy: ck}
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("sampleirl: checkpoint: %w", err)
	}
	if err := os.MkdirAll(cfg.CheckpointDir, 0o755); err != nil {
		return fmt.Errorf("sampleirl: checkpoint: %w", err)
	}
	path := filepath.Join(cfg.CheckpointDir, fmt.Sprintf("iter-%04d.json", it.Index))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("sampleirl: checkpoint %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("sampleirl: checkpoint %s: %w", path, err)
	}
	return nil
}

// ReadCheckpoint reads a checkpoint file written by Learn.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sampleirl: reading checkpoint: %w", err)
	}
	var c Checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("sampleirl: checkpoint %s: %w", path, err)
	}
	return &c, nil
}
