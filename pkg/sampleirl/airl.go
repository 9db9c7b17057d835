package sampleirl

// # The neural-reward learner (LearnMLP)
//
// LearnMLP learns a RewardNet r_w by adversarial IRL (AIRL, Fu, Luo &
// Levine 2018) with fedirl's PPO as the generator. Its discriminator is
// D(s, a) = exp(f_w)/(exp(f_w) + π(a|s)) = σ(z), z = f_w(s, a) − log π(a|s),
// with log π from the current PPO policy (ppo.Policy.LogProb). A fraction
// MLPConfig.Holdout of the demonstrations (drawn once, from Config.Seed) is
// held out: the discriminator never trains on them, and the stopping rule
// judges on them. From w₀ (Config.Theta0, or NewRewardNet's seeded
// initialisation), for k = 1, 2, …:
//
//  1. policy improvement: a PPO trainer starting from the policy of
//     iteration k−1 (ppo.Options.Init; fresh at k = 1) takes
//     Config.PolicySteps steps on r_{w_{k−1}}, seeded by (Config.Seed, k);
//  2. sampling: Config.Episodes on-policy episodes of the new policy π_k,
//     with log π_k(a|s) of every step, and log π_k at every demonstration step;
//  3. reward step: MLPConfig.RewardSteps full-batch steps (Adam by default)
//     on the discriminator's logistic loss on the training demonstrations
//     (those not held out) and the iteration's policy episodes, each
//     averaged over their steps,
//     L(w) = mean_D softplus(−z) + mean_π softplus(z) + (λ/2)‖w‖²,
//     ∂L/∂f = −(1 − D) at a demonstration step and D at a policy step;
//  4. stop, converged, when the gap in the discriminator's log-odds between
//     the held-out demonstrations and Config.Episodes fresh episodes of π_k
//     (neither seen by the reward step), Δ = mean_H Σ_t γ^t z_t −
//     mean_π Σ_t γ^t z_t (per-episode discounted sums under w_k and π_k),
//     is within Config.Tolerance of its standard error s_π·sqrt(1/n_π +
//     1/n_H), and again on Config.ConfirmEpisodes fresh ones, as the linear
//     learner's rule (package comment) with n_H held-out demonstrations in
//     place of n_D.
//
// Why AIRL's objective rather than MaxEnt's E_D[∇r] − E_π[∇r]: for a linear
// reward that gradient is the likelihood's and its objective is concave,
// but for an MLP the same step raises r without bound on the demonstrations'
// support wherever the policy has not yet been (its objective is only kept
// finite by the partition function, which on-policy samples do not see),
// and its magnitude grows with the reward's. The logistic loss is bounded
// below, its gradient bounded by one per step, and it saturates once a step
// is classified; at its fixed point (π = π_E) D ≡ ½, f = log π_E up to what
// the dynamics cannot tell apart, so PPO with SoftPPO(c, 1) — whose entropy
// bonus is AIRL's −log π term — on f reproduces the demonstrator. The
// reward is f on the step's (s, a) (not AIRL's state-only g(s) + γh(s′) −
// h(s)), so it is the demonstrator's advantage, a shaped reward on the
// dynamics it was learned in, not a disentangled one.
//
// Why the rule uses the log-odds z and measures them after the reward step:
// a gap in f alone is 0 for an uninformative f (the random initial network
// would pass at k = 1), while z carries −log π, which tells demonstrations
// from the policy as soon as the policy finds their actions unlikely; and f
// has just been fitted to separate demonstrations from the policy, so a
// gap within sampling error means that a discriminator trained to tell
// them apart cannot, on data it has not seen (a classifier two-sample
// test, Lopez-Paz & Oquab 2017).
//
// Why held-out data: judged on the demonstrations and episodes it was just
// fitted on, the discriminator separates them by what it memorised of
// those samples as well as by what tells the policy from the demonstrator,
// so the gap stays positive when the policy is as good as the data can
// show: with 200 expert demonstrations on the test grid (seeds 1–5) the
// training-data gap was still 2.7–7.5 standard errors at iteration 30,
// where four of the rewards planned at normalized values of 0.993–0.998.
// On held-out demonstrations and fresh episodes the memorised part
// averages out, and the gap measures only what generalises (on the same
// grid 4 of 5 seeds stop, at iterations 14–21, with policies at the
// demonstrator's value: TestLearnMLPHeldOutRuleStopsOnExpertData). What
// the rule certifies is the policy: the reward network's greedy plan can
// still alternate from one iteration to the next. Holding out costs the
// reward step a fraction of its data and the rule precision (n_H < n_D in
// the SE): the default 0.2 keeps 80 % for training.
//
// Result.Weights is w_{k−1}, the reward the final policy was trained on (as
// Result.Theta is for the linear learner); Result.DiscriminatorWeights is
// w_k, the discriminator that certified the stop.
//
// # Resuming
//
// Every iteration is a function of (w_{k−1}, the reward optimizer's state,
// π_{k−1}, k) and the inputs: PPO starts each iteration from π_{k−1}
// (networks and observation statistics; Adam's moments and the
// environments start afresh) with a seed of its own. With CheckpointDir
// set, iteration k writes mlp-iter-NNNN.json holding exactly that state
// (and the history); with MLPConfig.Resume, LearnMLP continues from the
// last checkpoint there, after checking that it was written with the same
// resolved configuration and demonstrations, and returns the same bytes as
// a run that was never interrupted.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

// MLPConfig holds LearnMLP's settings: Config's loop settings (PPO, seed,
// γ, budgets, the stopping rule, the reward optimizer, L2 as weight decay
// λ, Theta0 as the initial weights w₀, CheckpointDir, Workers) and the
// network's; every zero value means the default in brackets, Config's
// except where said.
type MLPConfig struct {
	Config
	// Net is the reward network's shape.
	Net NetConfig `json:"net"`
	// RewardSteps is the number of optimizer steps on the discriminator's
	// loss per iteration [20].
	RewardSteps int `json:"reward_steps"`
	// Holdout is the fraction of the demonstrations held out from the
	// discriminator's training for the stopping rule, in (0, 1) [0.2]:
	// round(Holdout·n_D) of them, at least 1 and at most n_D − 1, drawn
	// once from Seed (so at least two demonstrations are needed).
	Holdout float64 `json:"holdout"`
	// Resume continues from the last checkpoint in CheckpointDir, if any.
	Resume bool `json:"-"`
	// OnIteration, when set, is called after each iteration (Config.OnIteration must be nil).
	OnIteration func(MLPIteration) `json:"-"`
}

const (
	defaultRewardSteps = 20
	defaultHoldout     = 0.2
	defaultMLPLR       = 3e-3
	streamPPOIter      = 0x7070_6f00_0000 // + iteration: the seed of the iteration's PPO trainer
	streamSampleIter   = 0x7361_6d00_0000 // + iteration: the iteration's policy episodes
	streamJudgeIter    = 0x6a75_6400_0000 // + iteration: the rule's fresh policy episodes
	streamHoldout      = 0x686f_6c64      // the held-out demonstrations' draw
)

// Resolve returns c with the defaults filled in — for the MLP the reward
// optimizer defaults to Adam with learning rate 3e-3 — or an error (wrapping
// ErrInput) naming the first invalid setting.
func (c MLPConfig) Resolve() (MLPConfig, error) {
	if c.Config.OnIteration != nil {
		return c, fmt.Errorf("%w: Config.OnIteration is the linear learner's; set MLPConfig.OnIteration", ErrInput)
	}
	if c.Optimizer == "" {
		c.Optimizer = OptimizerAdam
	}
	if c.LearningRate == 0 {
		c.LearningRate = defaultMLPLR
	}
	var err error
	if c.Config, err = c.Config.Resolve(); err != nil {
		return c, err
	}
	if c.Net, err = c.Net.Resolve(); err != nil {
		return c, err
	}
	if c.RewardSteps == 0 {
		c.RewardSteps = defaultRewardSteps
	}
	if c.RewardSteps < 1 {
		return c, fmt.Errorf("%w: reward_steps = %d, want ≥ 1", ErrInput, c.RewardSteps)
	}
	if c.Holdout == 0 {
		c.Holdout = defaultHoldout
	}
	if !(c.Holdout > 0 && c.Holdout < 1) {
		return c, fmt.Errorf("%w: holdout = %v, want a fraction in (0, 1)", ErrInput, c.Holdout)
	}
	if c.Resume && c.CheckpointDir == "" {
		return c, fmt.Errorf("%w: resume needs a checkpoint directory", ErrInput)
	}
	return c, nil
}

// MLPIteration is one iteration's record.
type MLPIteration struct {
	// Index counts iterations from 1.
	Index int `json:"iteration"`
	// DemoLogOdds and PolicyLogOdds are the per-episode means of Σ_t γ^t z_t
	// on the held-out demonstrations and on the rule's fresh policy
	// episodes, after the reward step; Gap = DemoLogOdds − PolicyLogOdds.
	DemoLogOdds   float64 `json:"demo_log_odds"`
	PolicyLogOdds float64 `json:"policy_log_odds"`
	// Gap and GapSE are Δ and the rule's standard error s_π·sqrt(1/n_π + 1/n_H).
	Gap   float64 `json:"gap"`
	GapSE float64 `json:"gap_se"`
	// TrainGap and TrainGapSE are the same on the data the reward step
	// trained on (the training demonstrations and the iteration's
	// episodes): the statistic a rule without held-out data would use,
	// for comparison; the rule does not read them.
	TrainGap   float64 `json:"train_gap"`
	TrainGapSE float64 `json:"train_gap_se"`
	// ConfirmGap and ConfirmSE are the confirming estimate's, drawn when
	// |Gap| ≤ z·GapSE (ConfirmEpisodes > Episodes); both 0 otherwise.
	ConfirmGap float64 `json:"confirm_gap,omitempty"`
	ConfirmSE  float64 `json:"confirm_se,omitempty"`
	// Loss is the discriminator's loss L(w) before and after the reward step.
	LossBefore float64 `json:"loss_before"`
	Loss       float64 `json:"loss"`
	// DemoAccuracy and PolicyAccuracy are the fractions of demonstration
	// steps with D > ½ and of policy steps with D < ½, after the reward step.
	DemoAccuracy   float64 `json:"demo_accuracy"`
	PolicyAccuracy float64 `json:"policy_accuracy"`
	// EnvSteps and EvalSteps count PPO training steps and sampled steps so far.
	EnvSteps  int `json:"env_steps"`
	EvalSteps int `json:"eval_steps"`
	// MeanLearnedReturn and MeanTrueReturn are the iteration's PPO training
	// episodes' mean learned and true returns.
	MeanLearnedReturn float64 `json:"mean_learned_return"`
	MeanTrueReturn    float64 `json:"mean_true_return"`
}

// MLPResult is the outcome of LearnMLP.
type MLPResult struct {
	// Weights is the reward the final policy was trained on; Net holds it.
	Weights []float64 `json:"weights"`
	// DiscriminatorWeights is the network after the final reward step.
	DiscriminatorWeights []float64 `json:"discriminator_weights"`
	// Net is the reward network with Weights.
	Net *RewardNet `json:"-"`
	// Iterations is the number of iterations run; Converged whether the
	// rule was met; StopReason why LearnMLP stopped.
	Iterations int    `json:"iterations"`
	Converged  bool   `json:"converged"`
	StopReason string `json:"stop_reason"`
	// Gap and GapSE are the final Δ and its standard error (the confirming
	// estimate's when one was drawn).
	Gap   float64 `json:"gap"`
	GapSE float64 `json:"gap_se"`
	// DemoEpisodes is n_D, HeldOutEpisodes n_H of them held out for the
	// rule, ConfirmEpisodes the confirming estimate's size.
	DemoEpisodes    int `json:"demo_episodes"`
	HeldOutEpisodes int `json:"held_out_episodes"`
	ConfirmEpisodes int `json:"confirm_episodes"`
	// EnvSteps counts PPO training steps, EvalSteps sampled steps.
	EnvSteps  int `json:"env_steps"`
	EvalSteps int `json:"eval_steps"`
	// History holds every iteration.
	History []MLPIteration `json:"history"`
	// Policy is the final PPO policy.
	Policy *ppo.Policy `json:"-"`
}

// LearnMLP runs the neural-reward learner (see the comment above) on the
// simulator made by makeEnv (copies 0..n_envs−1 train PPO, copy n_envs
// samples), with the network's input map input (nil:
// StateActionInput of the environment's spaces) and the demonstrations.
// Input errors wrap ErrInput; a cancelled ctx returns the result so far
// with ctx's error.
func LearnMLP(ctx context.Context, makeEnv ppo.EnvMaker, input FeatureMap, demos []Trajectory, cfg MLPConfig) (MLPResult, error) {
	cfg, err := cfg.Resolve()
	if err != nil {
		return MLPResult{}, err
	}
	env, err := makeEnv(cfg.PPO.NEnvs)
	if err != nil {
		return MLPResult{}, fmt.Errorf("sampleirl: making the sampling environment: %w", err)
	}
	obsSp, actSp := env.ObservationSpace(), env.ActionSpace()
	if input == nil {
		input = StateActionInput(obsSp, actSp)
	}
	net, err := NewRewardNet(input, cfg.Net, cfg.Seed)
	if err != nil {
		return MLPResult{}, err
	}
	if cfg.Theta0 != nil {
		if err := net.SetWeights(cfg.Theta0); err != nil {
			return MLPResult{}, fmt.Errorf("theta0: %w", err)
		}
	}
	if _, _, err := DemoFeatures(input, cfg.Gamma, demos, obsSp.Dim(), actSp.Dim()); err != nil {
		return MLPResult{}, err
	}
	if len(demos) < 2 {
		return MLPResult{}, fmt.Errorf("%w: %d demonstration(s); the neural-reward learner holds some out for its stopping rule and trains on the rest, so it needs at least 2", ErrInput, len(demos))
	}
	all, err := demoSteps(input, cfg.Gamma, demos, actSp)
	if err != nil {
		return MLPResult{}, err
	}
	heldIdx := heldOut(len(demos), cfg.Holdout, cfg.Seed)
	var trainIdx []int
	for i := range demos {
		if !slices.Contains(heldIdx, i) {
			trainIdx = append(trainIdx, i)
		}
	}
	demo, held := all.subset(trainIdx), all.subset(heldIdx)
	if cfg.ConfirmEpisodes == 0 {
		cfg.ConfirmEpisodes = max(cfg.Episodes, len(demos))
	}
	digest, err := demosDigest(demos)
	if err != nil {
		return MLPResult{}, err
	}
	l := &mlpLearner{cfg: cfg, makeEnv: makeEnv, env: env, net: net, demo: demo, held: held, digest: digest,
		opt: newOptimizer(cfg.Config, net.NumWeights()), prev: net.Weights()}
	l.res = MLPResult{DemoEpisodes: len(demos), HeldOutEpisodes: len(heldIdx), ConfirmEpisodes: cfg.ConfirmEpisodes}
	start := 1
	if cfg.Resume {
		k, done, err := l.resume()
		if err != nil {
			return MLPResult{}, err
		}
		if done {
			return l.res, nil
		}
		start = k + 1
	}
	for k := start; k <= cfg.MaxIter; k++ {
		pass, err := l.iterate(ctx, k)
		if err != nil {
			return l.res, err
		}
		if pass {
			return l.res, nil
		}
	}
	return l.res, nil
}

// mlpLearner is LearnMLP's state between iterations.
type mlpLearner struct {
	cfg     MLPConfig
	makeEnv ppo.EnvMaker
	env     envs.Env
	net     *RewardNet // w_k
	prev    []float64  // w_{k−1}
	demo    *steps     // the training demonstrations
	held    *steps     // the held-out demonstrations the rule judges on
	digest  string
	opt     *optimizer
	pol     *ppo.Policy // π_{k−1}; nil before iteration 1
	res     MLPResult
}

// iterate runs iteration k and reports whether the rule passed.
func (l *mlpLearner) iterate(ctx context.Context, k int) (bool, error) {
	cfg := l.cfg
	// 1. Policy improvement on r_{w_{k−1}}.
	rnet := l.net.Clone()
	var rewardErr error
	reward := func(obs, act, next []float64, term bool) float64 {
		r := rnet.Reward(obs, act, next, term)
		if (math.IsNaN(r) || math.IsInf(r, 0)) && rewardErr == nil {
			rewardErr = fmt.Errorf("%w: reward %v at a training step", ErrNonFinite, r)
		}
		return r
	}
	seed := rand.New(rand.NewPCG(cfg.Seed, streamPPOIter+uint64(k))).Uint64()
	tr, err := ppo.NewTrainer(cfg.PPO, l.makeEnv, ppo.Options{Seed: seed, Reward: reward, Workers: cfg.Workers, Init: l.pol})
	if err != nil {
		return false, fmt.Errorf("sampleirl: iteration %d: %w", k, err)
	}
	if err := tr.Learn(ctx, cfg.PolicySteps); err != nil {
		return false, err
	}
	if rewardErr != nil {
		return false, rewardErr
	}
	pol := tr.Policy()
	// 2. On-policy episodes, log π at the demonstrations.
	evalSteps := l.res.EvalSteps
	pi, n, err := samplePolicy(l.env, pol, l.net.Input, cfg.Config, k, cfg.Episodes, streamSampleIter)
	if err != nil {
		return false, fmt.Errorf("sampleirl: iteration %d: %w", k, err)
	}
	evalSteps += n
	if err := l.demo.setLogProbs(pol); err != nil {
		return false, fmt.Errorf("sampleirl: iteration %d: %w", k, err)
	}
	if err := l.held.setLogProbs(pol); err != nil {
		return false, fmt.Errorf("sampleirl: iteration %d: %w", k, err)
	}
	// 3. Reward step.
	l.prev = l.net.Weights()
	it := MLPIteration{Index: k}
	it.LossBefore, err = l.rewardStep(pi)
	if err != nil {
		return false, fmt.Errorf("sampleirl: iteration %d: %w", k, err)
	}
	// 4. The rule: held-out demonstrations against fresh episodes, and a
	// confirming estimate.
	d := newDiscriminator(l.net, l.demo, pi)
	it.Loss, it.DemoAccuracy, it.PolicyAccuracy = d.loss(cfg.L2, l.net.Net.Params)
	nH := l.held.episodes()
	twoSample := func(se float64, n int) float64 {
		return se * math.Sqrt(float64(n)) * math.Sqrt(1/float64(n)+1/float64(nH))
	}
	tm, _ := d.logOdds(l.demo, d.fD)
	tpm, tpse := d.logOdds(pi, d.fP)
	it.TrainGap = tm - tpm
	it.TrainGapSE = tpse * math.Sqrt(float64(cfg.Episodes)) * math.Sqrt(1/float64(cfg.Episodes)+1/float64(l.demo.episodes()))
	fresh, n, err := samplePolicy(l.env, pol, l.net.Input, cfg.Config, k, cfg.Episodes, streamJudgeIter)
	if err != nil {
		return false, fmt.Errorf("sampleirl: iteration %d, the rule's episodes: %w", k, err)
	}
	evalSteps += n
	dm, _ := d.logOdds(l.held, l.net.Values(nil, l.held.x, l.held.rows()))
	pm, pse := d.logOdds(fresh, l.net.Values(nil, fresh.x, fresh.rows()))
	it.DemoLogOdds, it.PolicyLogOdds = dm, pm
	it.Gap, it.GapSE = dm-pm, twoSample(pse, cfg.Episodes)
	gap, se := it.Gap, it.GapSE
	pass := math.Abs(gap) <= cfg.Tolerance*se
	if pass && cfg.ConfirmEpisodes > cfg.Episodes {
		c, n, err := samplePolicy(l.env, pol, l.net.Input, cfg.Config, k, cfg.ConfirmEpisodes, streamConfirm)
		if err != nil {
			return false, fmt.Errorf("sampleirl: iteration %d, confirming estimate: %w", k, err)
		}
		evalSteps += n
		f := l.net.Values(nil, c.x, c.rows())
		cm, cse := d.logOdds(c, f)
		it.ConfirmGap, it.ConfirmSE = dm-cm, twoSample(cse, cfg.ConfirmEpisodes)
		gap, se = it.ConfirmGap, it.ConfirmSE
		pass = math.Abs(gap) <= cfg.Tolerance*se
	}
	it.EnvSteps = l.res.EnvSteps + tr.Steps()
	it.EvalSteps = evalSteps
	if c := tr.Curve(); len(c) > 0 {
		it.MeanLearnedReturn, it.MeanTrueReturn = c[len(c)-1].MeanLearnedReturn, c[len(c)-1].MeanTrueReturn
	}
	l.pol = pol
	l.record(it, gap, se, pass)
	if cfg.OnIteration != nil {
		cfg.OnIteration(it)
	}
	if cfg.CheckpointDir != "" {
		if err := l.writeCheckpoint(k); err != nil {
			return false, err
		}
	}
	return pass || k == cfg.MaxIter, nil
}

// record folds iteration it into the result.
func (l *mlpLearner) record(it MLPIteration, gap, se float64, pass bool) {
	r := &l.res
	r.History = append(r.History, it)
	r.Iterations, r.Gap, r.GapSE = it.Index, gap, se
	r.EnvSteps, r.EvalSteps = it.EnvSteps, it.EvalSteps
	r.Weights, r.DiscriminatorWeights = slices.Clone(l.prev), l.net.Weights()
	r.Net = l.net.Clone()
	copy(r.Net.Net.Params, l.prev)
	r.Policy = l.pol
	r.Converged = pass
	z := l.cfg.Tolerance
	switch {
	case pass:
		r.StopReason = fmt.Sprintf("log-odds gap %.4g within %g × its standard error %.4g", gap, z, se)
		if it.ConfirmSE > 0 {
			r.StopReason += fmt.Sprintf(" on %d confirming episodes (and %.4g within %g × %.4g on the iteration's %d)", l.cfg.ConfirmEpisodes, it.Gap, z, it.GapSE, l.cfg.Episodes)
		}
	default:
		r.StopReason = fmt.Sprintf("iteration cap %d reached with log-odds gap %.4g beyond %g × its standard error %.4g", l.cfg.MaxIter, gap, z, se)
	}
}
