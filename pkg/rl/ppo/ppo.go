// Package ppo trains actor-critic policies with Proximal Policy Optimization
// (Schulman et al. 2017) on fedirl's Gymnasium-shaped environments, following
// stable-baselines3's PPO: GAE, clipped surrogate, value loss, entropy bonus,
// minibatch epochs, per-minibatch advantage normalisation, global
// gradient-norm clipping, optional VecNormalize-style observation and return
// normalisation, n environment copies stepped in lock-step, and
// bootstrapping on truncation but not on termination.
//
// It can train on a learned reward r(s, a) in place of the environment's while
// logging the environment's true return, which is how the paper evaluates a
// fused reward. Training is deterministic given Options.Seed whatever
// GOMAXPROCS is: every random draw comes from its own seeded PCG stream and
// the two update goroutines (actor and critic) never share a reduction.
//
// The networks train in float32 by default (Options.Precision; float64 stays
// selectable): weights, activations, gradients and Adam state are float32,
// while returns, advantages, losses, log standard deviations and the
// normalisation statistics stay float64. The Policy's float64 networks
// receive the float32 parameters after every update, so checkpoints and
// evaluation are unchanged in form.
//
// gSDE (Config.UseSDE, generalized state-dependent exploration as
// stable-baselines3 does it) trains in float64: see Options.Precision.
//
// It deliberately implements neither recurrent policies, image
// observations nor a target KL early stop; the networks (package rl/nn) are
// hand-written for speed on tiny MLPs.
package ppo

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/rl/nn"
)

// Random stream identifiers: one PCG stream per purpose, all seeded with Options.Seed.
const (
	streamInit    = 1
	streamShuffle = 2
	streamEval    = 3
	streamSample  = 1 << 20 // + environment copy index
	streamReset   = 2 << 20 // + environment copy index
)

// EnvMaker returns a fresh environment copy; i numbers the copies from 0
// (copies NEnvs and above are used for evaluation).
type EnvMaker func(i int) (envs.Env, error)

// RewardFunc is a learned reward r(s, a, s′) of one environment step, as
// imitation's reward networks take (state, action, next state, done): obs
// is the raw observation before the step, action the action applied to the
// environment (clipped to a Box; a Discrete action as its index), next the
// observation the step returned (before any reset) and terminated whether
// it ended the episode (not a truncation). A reward r(s, a) ignores the
// last two. It is called from one goroutine, once per environment step in a
// fixed order, after the step; implementations must not retain or modify
// the slices.
type RewardFunc func(obs, action, next []float64, terminated bool) float64

// Options are the run settings that are not PPO hyperparameters.
type Options struct {
	// Seed seeds every random stream [0].
	Seed uint64
	// Reward, when not nil, replaces the environment's reward for training;
	// the true return is still logged.
	Reward RewardFunc
	// Window is the number of most recent episodes averaged in the curve [100, as stable-baselines3's ep_rew_mean].
	Window int
	// EvalEvery runs a deterministic evaluation every so many environment steps [0: never].
	EvalEvery int
	// EvalEpisodes is the number of episodes per evaluation [10].
	EvalEpisodes int
	// Workers is 1 or 2 goroutines for the update (actor and critic in
	// parallel) [1: on the project's 2-core machine the split does not pay
	// for its synchronisation; see BenchmarkTrain_*]. Results are
	// bit-identical either way.
	Workers int
	// OnUpdate, when not nil, is called after each rollout and update with the new curve point.
	OnUpdate func(CurvePoint)
	// Init, when not nil, is the policy training starts from: the trainer
	// copies its networks, log standard deviations and observation
	// statistics (Init itself is not modified) in place of a fresh
	// initialisation; it must have the shape Config gives the environment's
	// spaces. Adam's moments, the return statistics and the environments
	// start afresh, so a run continued this way differs from one Learn call.
	Init *Policy
	// Precision is the networks' floating-point type during training,
	// "float32" or "float64" ["": float32, or float64 with Config.UseSDE;
	// see Precision]. Results are deterministic for either; the two differ
	// by rounding. gSDE is implemented for float64 networks only: an
	// explicit "float32" with Config.UseSDE is refused.
	Precision Precision
}

// CurvePoint is one row of the learning curve, logged after each rollout and update.
type CurvePoint struct {
	// Steps is the number of environment steps so far (over all copies).
	Steps int `json:"steps"`
	// Episodes is the number of finished episodes so far.
	Episodes int `json:"episodes"`
	// MeanTrueReturn is the mean true (environment) return of the last Window
	// finished episodes, 0 before the first episode ends.
	MeanTrueReturn float64 `json:"mean_true_return"`
	// MeanLearnedReturn is the same mean for the reward trained on (equal to
	// MeanTrueReturn without Options.Reward).
	MeanLearnedReturn float64 `json:"mean_learned_return"`
	// EvalReturn is the mean return of the deterministic policy over
	// EvalEpisodes episodes, when an evaluation ran at this point.
	EvalReturn *float64 `json:"eval_return,omitempty"`
	// PolicyLoss, ValueLoss, Entropy, ApproxKL and ClipFraction average the update's minibatches.
	PolicyLoss   float64 `json:"policy_loss"`
	ValueLoss    float64 `json:"value_loss"`
	Entropy      float64 `json:"entropy"`
	ApproxKL     float64 `json:"approx_kl"`
	ClipFraction float64 `json:"clip_fraction"`
	// LearningRate and ClipRange are the values used by this update.
	LearningRate float64 `json:"learning_rate"`
	ClipRange    float64 `json:"clip_range"`
}

// Trainer runs PPO. It is not safe for concurrent use.
type Trainer struct {
	cfg   Config
	opts  Options
	envs  []envs.Env
	maker EnvMaker
	pol   *Policy

	obsDim, actDim, outDim int
	discrete               bool

	sampleRng []*rand.Rand
	resetRng  []*rand.Rand
	shuffle   *rand.Rand

	// Rollout buffer, row t*NEnvs+i for step t of copy i. bufBoot marks
	// rows whose episode was truncated; bufTerm holds their normalised final
	// observation, whose value is added to bufRew once the rollout is done.
	bufObs, bufAct                                    []float64
	bufLogp, bufVal, bufRew, bufStart, bufAdv, bufRet []float64
	bufTerm                                           []float64
	bufBoot                                           []bool

	rawObs, normObs, termObs []float64
	envAct                   []float64
	needBoot                 []bool
	epStart                  []bool
	epTrue, epLearned        []float64
	stepRew                  []float64
	retRMS                   *RunningMeanStd
	retAcc                   []float64

	actor, critic       trainNet // the networks as trained (see Options.Precision)
	perm                []int
	mbObs, mbAct        []float64
	mbAdv, mbRet, mbOld []float64
	dOut, dV            []float64
	probs               []float64 // the categorical probabilities of one minibatch row (actorJob)
	gLogStd             []float64
	adamL               *nn.Adam

	// gSDE (Config.UseSDE): the exploration matrices of the environment
	// copies (NEnvs × latent × action) and per-row scratch.
	latent      int
	sdeMat      []float64
	sdeS, sdeDS []float64

	// Per-minibatch results of the two jobs.
	aStats    [4]float64 // policy loss, entropy, approx KL, clip fraction
	vLoss     float64
	clipRange float64
	lr        float64 // the learning rate of the current update
	mbN       int

	// The second worker runs jobs in the order sent and answers every jobSync on done.
	work chan job
	done chan struct{}

	steps, episodes int
	recentTrue      []float64
	recentLearned   []float64
	curve           []CurvePoint
	evalEnv         envs.Env
	nextEval        int
	started         bool
}

// NewTrainer builds a Trainer: it creates cfg.NEnvs environment copies with
// makeEnv and initialises the networks from Options.Seed.
func NewTrainer(cfg Config, makeEnv EnvMaker, opts Options) (*Trainer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Window <= 0 {
		opts.Window = 100
	}
	if opts.EvalEpisodes <= 0 {
		opts.EvalEpisodes = 10
	}
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	prec, err := sdePrecision(opts.Precision, cfg.UseSDE)
	if err != nil {
		return nil, fmt.Errorf("ppo options: %w", err)
	}
	opts.Precision = prec
	t := &Trainer{cfg: cfg, opts: opts, maker: makeEnv}
	for i := 0; i < cfg.NEnvs; i++ {
		e, err := makeEnv(i)
		if err != nil {
			return nil, fmt.Errorf("ppo: making environment copy %d: %w", i, err)
		}
		t.envs = append(t.envs, e)
		t.sampleRng = append(t.sampleRng, rand.New(rand.NewPCG(opts.Seed, streamSample+uint64(i))))
		t.resetRng = append(t.resetRng, rand.New(rand.NewPCG(opts.Seed, streamReset+uint64(i))))
	}
	obsSp, actSp := t.envs[0].ObservationSpace(), t.envs[0].ActionSpace()
	for i, e := range t.envs[1:] {
		if o, a := e.ObservationSpace(), e.ActionSpace(); o.Dim() != obsSp.Dim() || a.Dim() != actSp.Dim() || a.N != actSp.N {
			return nil, fmt.Errorf("ppo: environment copy %d has different spaces from copy 0", i+1)
		}
	}
	pol, err := newPolicy(obsSp, actSp, cfg, rand.New(rand.NewPCG(opts.Seed, streamInit)))
	if err != nil {
		return nil, err
	}
	if opts.Init != nil {
		if err := pol.startFrom(opts.Init); err != nil {
			return nil, err
		}
	}
	t.pol = pol
	t.shuffle = rand.New(rand.NewPCG(opts.Seed, streamShuffle))
	t.obsDim, t.actDim, t.outDim = pol.ObsDim, actSp.Dim(), pol.Actor.Out()
	t.discrete = actSp.IsDiscrete()

	n, T, B := cfg.NEnvs, cfg.NEnvs*cfg.NSteps, cfg.BatchSize
	B = min(B, T)
	t.bufObs = make([]float64, T*t.obsDim)
	t.bufTerm = make([]float64, T*t.obsDim)
	t.bufBoot = make([]bool, T)
	t.bufAct = make([]float64, T*t.actDim)
	for _, p := range []*[]float64{&t.bufLogp, &t.bufVal, &t.bufRew, &t.bufStart, &t.bufAdv, &t.bufRet} {
		*p = make([]float64, T)
	}
	t.rawObs = make([]float64, n*t.obsDim)
	t.normObs = make([]float64, n*t.obsDim)
	t.termObs = make([]float64, n*t.obsDim)
	t.envAct = make([]float64, n*t.actDim)
	t.needBoot = make([]bool, n)
	t.epStart = make([]bool, n)
	t.epTrue = make([]float64, n)
	t.epLearned = make([]float64, n)
	t.stepRew = make([]float64, n)
	t.retAcc = make([]float64, n)
	if cfg.NormalizeReward {
		t.retRMS = NewRunningMeanStd(1)
	}
	t.actor = newTrainNet(prec, pol.Actor, cfg, n, B)
	t.critic = newTrainNet(prec, pol.Critic, cfg, n, B)
	t.perm = make([]int, T)
	t.mbObs = make([]float64, B*t.obsDim)
	t.mbAct = make([]float64, B*t.actDim)
	t.mbAdv = make([]float64, B)
	t.mbRet = make([]float64, B)
	t.mbOld = make([]float64, B)
	t.dOut = make([]float64, B*t.outDim)
	t.dV = make([]float64, B)
	t.probs = make([]float64, t.outDim)
	t.gLogStd = make([]float64, len(pol.LogStd))
	t.adamL = nn.NewAdam(len(t.gLogStd), cfg.LearningRate, cfg.AdamEps)
	if pol.SDE {
		t.latent = pol.Actor.Sizes[len(pol.Actor.Sizes)-2]
		t.sdeMat = make([]float64, n*t.latent*t.actDim)
		t.sdeS = make([]float64, t.actDim)
		t.sdeDS = make([]float64, t.actDim)
	}
	return t, nil
}

// resampleSDE draws every environment copy's gSDE exploration matrix, entry
// (j, k) from N(0, exp(L_jk)²), from the copy's own sampling stream.
func (t *Trainer) resampleSDE() {
	L := t.pol.LogStd
	for i, rng := range t.sampleRng {
		m := t.sdeMat[i*len(L) : (i+1)*len(L)]
		for q, l := range L {
			m[q] = math.Exp(l) * rng.NormFloat64()
		}
	}
}

// sdeLatent returns the actor's latent features (its last hidden layer) of
// the last forward pass in workspace ws. gSDE trains float64 networks only
// (see sdePrecision), so the actor is a net64.
func (t *Trainer) sdeLatent(ws int) []float64 {
	a := t.actor.(*net64)
	return a.ws[ws].Output(a.m, a.m.NumLayers()-2)
}

// Config returns the resolved configuration.
func (t *Trainer) Config() Config { return t.cfg }

// Policy returns the policy being trained (shared, not a copy).
func (t *Trainer) Policy() *Policy { return t.pol }

// Steps returns the number of environment steps taken so far.
func (t *Trainer) Steps() int { return t.steps }

// Curve returns the learning curve logged so far.
func (t *Trainer) Curve() []CurvePoint { return t.curve }

// Learn trains until at least total environment steps have been taken (over
// all copies, rounded up to whole rollouts as stable-baselines3 does); total
// ≤ 0 means Config.TotalSteps. It can be called again to continue training.
func (t *Trainer) Learn(ctx context.Context, total int) error {
	if total <= 0 {
		total = t.cfg.TotalSteps
	}
	if !t.started {
		t.resetAll()
		t.started = true
		if t.opts.EvalEvery > 0 {
			e, err := t.maker(t.cfg.NEnvs)
			if err != nil {
				return fmt.Errorf("ppo: making evaluation environment: %w", err)
			}
			t.evalEnv = e
			t.nextEval = t.opts.EvalEvery
		}
	}
	if t.opts.Workers > 1 {
		t.work = make(chan job, 16)
		t.done = make(chan struct{})
		go func() {
			for j := range t.work {
				switch j.kind {
				case jobCritic:
					if j.step {
						t.stepCritic(j.scale)
					}
					t.criticJob()
				case jobValues:
					t.rolloutValues(j.lo, j.hi)
				}
				if j.kind != jobValues {
					t.done <- struct{}{}
				}
			}
		}()
		defer func() { close(t.work); t.work = nil }()
	}
	for t.steps < total {
		if err := ctx.Err(); err != nil {
			return err
		}
		t.collect()
		pt := t.update(total)
		if t.evalEnv != nil && t.steps >= t.nextEval {
			r := Evaluate(t.pol, t.evalEnv, t.opts.EvalEpisodes, t.opts.Seed*1_000_003+7_777_777, true, 0)
			m := mean(r)
			pt.EvalReturn = &m
			for t.nextEval <= t.steps {
				t.nextEval += t.opts.EvalEvery
			}
		}
		t.curve = append(t.curve, pt)
		if t.opts.OnUpdate != nil {
			t.opts.OnUpdate(pt)
		}
	}
	return nil
}

// job is a piece of work for the second worker.
type job struct {
	kind   int
	lo, hi int // jobValues: the rollout steps [lo, hi)
	// jobCritic: first apply the previous minibatch's critic update, its
	// gradient scaled by scale (see update).
	step  bool
	scale float64
}

// Job kinds. jobValues does not answer on done: a later job of another kind
// (processed after it) does.
const (
	jobCritic = iota // stepCritic if asked, then criticJob
	jobValues        // rolloutValues
	jobSync          // nothing: answer on done
)

func mean(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func (t *Trainer) resetAll() {
	d := t.obsDim
	for i, e := range t.envs {
		copy(t.rawObs[i*d:(i+1)*d], e.Reset(t.resetRng[i].Uint64()))
		t.epStart[i] = true
	}
	if t.pol.ObsRMS != nil {
		t.pol.ObsRMS.Update(t.rawObs, len(t.envs))
	}
	t.pol.normalizeObs(t.normObs, t.rawObs, len(t.envs))
}

// collect fills the rollout buffer with NSteps steps of every copy and computes GAE.
// The critic's values do not influence the rollout, so with two workers the
// second one computes them, a chunk of steps at a time, while the first
// steps the environments.
func (t *Trainer) collect() {
	n, d, ad, od := t.cfg.NEnvs, t.obsDim, t.actDim, t.outDim
	gamma := t.cfg.Gamma
	p := t.pol
	chunk := max(1, 64/n) // steps per value job
	sent := 0             // steps handed to the value job so far
	for step := 0; step < t.cfg.NSteps; step++ {
		if p.SDE && (step == 0 || t.cfg.SDESampleFreq > 0 && step%t.cfg.SDESampleFreq == 0) {
			t.resampleSDE()
		}
		out := t.actor.forward(wsRollout, t.normObs, n)
		var lat []float64
		if p.SDE {
			lat = t.sdeLatent(wsRollout)
		}
		base := step * n
		copy(t.bufObs[base*d:(base+n)*d], t.normObs)
		for i, e := range t.envs {
			row := base + i
			o := out[i*od : (i+1)*od]
			a := t.bufAct[row*ad : (row+1)*ad]
			ea := t.envAct[i*ad : (i+1)*ad]
			rng := t.sampleRng[i]
			if t.discrete {
				k := sampleCategorical(o, rng)
				a[0] = float64(k)
				ea[0] = a[0]
				t.bufLogp[row], _ = catLogProbEntropy(o, k)
			} else if p.SDE {
				// gSDE: the noise is the latent features times the copy's exploration matrix.
				z := lat[i*t.latent : (i+1)*t.latent]
				E := t.sdeMat[i*t.latent*ad : (i+1)*t.latent*ad]
				for k, m := range o {
					noise := 0.0
					for j, zj := range z {
						noise += zj * E[j*ad+k]
					}
					a[k] = m + noise
					ea[k] = math.Max(p.Action.Low[k], math.Min(p.Action.High[k], a[k]))
				}
				t.bufLogp[row] = gaussLogProb(o, sdeLogStd(t.sdeS, z, p.LogStd), a)
			} else {
				for j, m := range o {
					a[j] = m + math.Exp(p.LogStd[j])*rng.NormFloat64()
					ea[j] = math.Max(p.Action.Low[j], math.Min(p.Action.High[j], a[j]))
				}
				t.bufLogp[row] = gaussLogProb(o, p.LogStd, a)
			}
			t.bufStart[row] = b2f(t.epStart[i])
			obsI := t.rawObs[i*d : (i+1)*d]
			next, r, term, trunc := e.Step(ea)
			t.steps++
			learned := 0.0
			if t.opts.Reward != nil {
				learned = t.opts.Reward(obsI, ea, next, term)
				t.stepRew[i] = learned
			} else {
				t.stepRew[i], learned = r, r
			}
			t.epTrue[i] += r
			t.epLearned[i] += learned
			done := term || trunc
			t.needBoot[i] = trunc && !term
			if t.needBoot[i] {
				copy(t.termObs[i*d:(i+1)*d], next)
			}
			if done {
				t.finishEpisode(i)
				next = e.Reset(t.resetRng[i].Uint64())
			}
			copy(obsI, next)
			t.epStart[i] = done
		}
		if p.ObsRMS != nil {
			p.ObsRMS.Update(t.rawObs, n)
		}
		if t.retRMS != nil {
			for i := range t.retAcc {
				t.retAcc[i] = t.retAcc[i]*gamma + t.stepRew[i]
			}
			t.retRMS.Update(t.retAcc, n)
			sc := 1 / math.Sqrt(t.retRMS.Var[0]+obsEps)
			c := t.cfg.ClipReward
			for i := range t.stepRew {
				t.stepRew[i] = math.Max(-c, math.Min(c, t.stepRew[i]*sc))
				if t.epStart[i] {
					t.retAcc[i] = 0
				}
			}
		}
		for i := range t.envs {
			row := base + i
			t.bufBoot[row] = t.needBoot[i]
			if t.needBoot[i] {
				p.normalizeObs(t.bufTerm[row*d:(row+1)*d], t.termObs[i*d:(i+1)*d], 1)
			}
			t.bufRew[row] = t.stepRew[i]
		}
		p.normalizeObs(t.normObs, t.rawObs, n)
		if t.work != nil && step+1-sent >= chunk {
			t.work <- job{kind: jobValues, lo: sent, hi: step + 1}
			sent = step + 1
		}
	}
	if t.work != nil {
		if sent < t.cfg.NSteps {
			t.work <- job{kind: jobValues, lo: sent, hi: t.cfg.NSteps}
		}
		t.work <- job{kind: jobSync}
		<-t.done
	} else {
		t.rolloutValues(0, t.cfg.NSteps)
	}
	last := t.critic.forward(wsRollout, t.normObs, n)
	computeGAE(t.bufAdv, t.bufRet, t.bufRew, t.bufVal, t.bufStart, last, t.epStart, n, gamma, t.cfg.GAELambda)
}

// rolloutValues fills bufVal for rollout steps [lo, hi) and adds the
// discounted value of the final observation to the reward of truncated rows.
// It only reads rows that collect has finished writing and the critic, which
// does not change during a rollout.
func (t *Trainer) rolloutValues(lo, hi int) {
	n, d := t.cfg.NEnvs, t.obsDim
	t.critic.values(t.bufVal[lo*n:hi*n], t.bufObs[lo*n*d:hi*n*d], n)
	for row := lo * n; row < hi*n; row++ {
		if t.bufBoot[row] {
			t.bufRew[row] += t.cfg.Gamma * t.critic.forward(wsTerminal, t.bufTerm[row*d:(row+1)*d], 1)[0]
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (t *Trainer) finishEpisode(i int) {
	t.episodes++
	if len(t.recentTrue) < t.opts.Window {
		t.recentTrue = append(t.recentTrue, t.epTrue[i])
		t.recentLearned = append(t.recentLearned, t.epLearned[i])
	} else {
		copy(t.recentTrue, t.recentTrue[1:])
		copy(t.recentLearned, t.recentLearned[1:])
		t.recentTrue[len(t.recentTrue)-1] = t.epTrue[i]
		t.recentLearned[len(t.recentLearned)-1] = t.epLearned[i]
	}
	t.epTrue[i], t.epLearned[i] = 0, 0
}

// computeGAE writes generalised advantage estimates and returns (adv + value)
// for a rollout laid out as rows t*n+i (step t of copy i). starts[row] is 1
// when the row's observation begins an episode; lastValues and lastDones
// describe the observation after the final step.
func computeGAE(adv, ret, rew, val, starts, lastValues []float64, lastDones []bool, n int, gamma, lambda float64) {
	T := len(rew) / n
	for i := 0; i < n; i++ {
		gae := 0.0
		for s := T - 1; s >= 0; s-- {
			row := s*n + i
			var nextV, nonTerm float64
			if s == T-1 {
				nextV, nonTerm = lastValues[i], 1-b2f(lastDones[i])
			} else {
				nextV, nonTerm = val[row+n], 1-starts[row+n]
			}
			delta := rew[row] + gamma*nextV*nonTerm - val[row]
			gae = delta + gamma*lambda*nonTerm*gae
			adv[row] = gae
			ret[row] = gae + val[row]
		}
	}
}

// update runs NEpochs of minibatch updates over the rollout and returns the curve point.
func (t *Trainer) update(total int) CurvePoint {
	cfg := t.cfg
	progress := math.Max(0, 1-float64(t.steps)/float64(total))
	lr := cfg.LearningRate
	if cfg.LinearLR {
		lr *= progress
	}
	t.clipRange = cfg.ClipRange
	if cfg.LinearClip {
		t.clipRange *= progress
	}
	t.adamL.LR = lr
	t.lr = lr
	T := len(t.perm)
	B := min(cfg.BatchSize, T)
	var sums [5]float64
	nmb := 0
	pending, scale := false, 1.0 // a critic step waiting for the worker's next job
	d, ad := t.obsDim, t.actDim
	for ep := 0; ep < cfg.NEpochs; ep++ {
		for i := range t.perm {
			t.perm[i] = i
		}
		t.shuffle.Shuffle(T, func(i, j int) { t.perm[i], t.perm[j] = t.perm[j], t.perm[i] })
		for start := 0; start < T; start += B {
			idx := t.perm[start:min(start+B, T)]
			m := len(idx)
			for k, r := range idx {
				copy(t.mbObs[k*d:(k+1)*d], t.bufObs[r*d:(r+1)*d])
				copy(t.mbAct[k*ad:(k+1)*ad], t.bufAct[r*ad:(r+1)*ad])
				t.mbAdv[k] = t.bufAdv[r]
				t.mbRet[k] = t.bufRet[r]
				t.mbOld[k] = t.bufLogp[r]
			}
			t.mbN = m
			if t.work != nil {
				// The worker first finishes the previous minibatch's
				// critic step, then computes this one's critic gradient:
				// one hand-off per minibatch.
				t.work <- job{kind: jobCritic, step: pending, scale: scale}
				t.actorJob()
				<-t.done
			} else {
				t.actorJob()
				t.criticJob()
			}
			// Global gradient-norm clipping, as nn.ClipGradNorm (the same
			// sum, actor then log-std then critic, and scale factor).
			ss := t.actor.sumSquares(0)
			for _, v := range t.gLogStd {
				ss += v * v
			}
			norm := math.Sqrt(t.critic.sumSquares(ss))
			scale = 1.0
			if c := cfg.MaxGradNorm / (norm + 1e-6); cfg.MaxGradNorm > 0 && c < 1 {
				scale = c
				scaleGrad(t.gLogStd, c)
			}
			t.actor.step(lr, scale)
			if len(t.gLogStd) > 0 {
				t.adamL.Step(t.pol.LogStd, t.gLogStd)
			}
			if t.work != nil {
				pending = true
			} else {
				t.stepCritic(scale)
			}
			for k := 0; k < 4; k++ {
				sums[k] += t.aStats[k]
			}
			sums[4] += t.vLoss
			nmb++
		}
	}
	if pending { // the worker is idle
		t.stepCritic(scale)
	}
	t.actor.sync()
	t.critic.sync()
	f := 1 / float64(nmb)
	return CurvePoint{Steps: t.steps, Episodes: t.episodes,
		MeanTrueReturn: mean(t.recentTrue), MeanLearnedReturn: mean(t.recentLearned),
		PolicyLoss: sums[0] * f, Entropy: sums[1] * f, ApproxKL: sums[2] * f, ClipFraction: sums[3] * f,
		ValueLoss: sums[4] * f, LearningRate: lr, ClipRange: t.clipRange}
}

// scaleGrad multiplies g by c < 1, as nn.ClipGradNorm does.
func scaleGrad(g []float64, c float64) {
	for i := range g {
		g[i] *= c
	}
}

// stepCritic scales the critic's gradient by the clipping factor scale
// (1: unclipped) and takes its Adam step.
func (t *Trainer) stepCritic(scale float64) {
	t.critic.step(t.lr, scale)
}

// actorJob computes the policy and entropy losses of the current minibatch
// and their gradients in gActor and gLogStd.
func (t *Trainer) actorJob() {
	m, od, ad := t.mbN, t.outDim, t.actDim
	p := t.pol
	adv := t.mbAdv[:m]
	if !t.cfg.NoAdvantageNorm && m > 1 {
		mu := mean(adv)
		ss := 0.0
		for _, a := range adv {
			ss += (a - mu) * (a - mu)
		}
		sd := math.Sqrt(ss / float64(m-1)) // torch's unbiased std
		for k := range adv {
			adv[k] = (adv[k] - mu) / (sd + 1e-8)
		}
	}
	out := t.actor.forward(wsMinibatch, t.mbObs, m)
	t.actor.clearGrad()
	var lat, sk []float64
	if p.SDE {
		lat = t.sdeLatent(wsMinibatch)
	}
	dOut := t.dOut[:m*od]
	clear(dOut)
	clear(t.gLogStd)
	eps := t.clipRange
	inv := 1 / float64(m)
	entC := t.cfg.EntCoef
	var pl, ent, kl, cf float64
	for k := 0; k < m; k++ {
		o := out[k*od : (k+1)*od]
		a := t.mbAct[k*ad : (k+1)*ad]
		var logp, h, lse float64
		switch {
		case t.discrete:
			lse, logp, h = catProbs(o, int(a[0]), t.probs)
		case p.SDE:
			sk = sdeLogStd(t.sdeS, lat[k*t.latent:(k+1)*t.latent], p.LogStd)
			logp, h = gaussLogProb(o, sk, a), gaussEntropy(sk)
		default:
			logp = gaussLogProb(o, p.LogStd, a)
		}
		lr := logp - t.mbOld[k]
		ratio := math.Exp(lr)
		A := adv[k]
		s1 := A * ratio
		s2 := A * math.Max(1-eps, math.Min(1+eps, ratio))
		c := 0.0
		if s1 <= s2 {
			pl -= s1
			c = -A * ratio * inv
		} else {
			pl -= s2
		}
		if math.Abs(ratio-1) > eps {
			cf++
		}
		kl += (ratio - 1) - lr
		if t.discrete {
			catGrad(o, int(a[0]), lse, h, t.probs, c, -entC*inv, dOut[k*od:(k+1)*od])
		} else if p.SDE {
			// The latent features are not learned through the noise (SB3's
			// learn_features=False): only L gets the log-std gradient.
			clear(t.sdeDS)
			if c != 0 {
				gaussLogProbGrad(o, sk, a, c, dOut[k*od:(k+1)*od], t.sdeDS)
			}
			for j := range t.sdeDS {
				t.sdeDS[j] -= entC * inv // ∂(-entC·mean H)/∂s_j
			}
			sdeLogStdGrad(t.gLogStd, lat[k*t.latent:(k+1)*t.latent], p.LogStd, sk, t.sdeDS)
		} else if c != 0 {
			gaussLogProbGrad(o, p.LogStd, a, c, dOut[k*od:(k+1)*od], t.gLogStd)
		}
		ent += h
	}
	if !t.discrete && !p.SDE {
		h := gaussEntropy(p.LogStd)
		ent = h * float64(m)
		for j := range t.gLogStd {
			t.gLogStd[j] -= entC // ∂(-entC·H)/∂logσ_j
		}
	}
	t.actor.backward(dOut)
	t.aStats = [4]float64{pl * inv, ent * inv, kl * inv, cf * inv}
}

// criticJob computes the value loss of the current minibatch and its gradient in gCritic.
func (t *Trainer) criticJob() {
	m := t.mbN
	v := t.critic.forward(wsMinibatch, t.mbObs, m)
	t.critic.clearGrad()
	inv := 1 / float64(m)
	loss := 0.0
	for k := 0; k < m; k++ {
		e := v[k] - t.mbRet[k]
		loss += e * e
		t.dV[k] = t.cfg.VFCoef * 2 * e * inv
	}
	t.critic.backward(t.dV[:m])
	t.vLoss = loss * inv
}

// Train is NewTrainer followed by Learn for cfg.TotalSteps steps; it returns
// the trained policy and its learning curve.
func Train(ctx context.Context, cfg Config, makeEnv EnvMaker, opts Options) (*Policy, []CurvePoint, error) {
	t, err := NewTrainer(cfg, makeEnv, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := t.Learn(ctx, 0); err != nil {
		return nil, nil, err
	}
	return t.Policy(), t.Curve(), nil
}
