package tasks

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/rl/nn"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
	"github.com/fedirl/fedirl/pkg/sampleirl"
)

// MLPSampleLearner is the federation.Learner of a client with a neural
// reward: sampleirl.LearnMLP (AIRL with PPO) in the client's own simulator
// on its private demonstrations. It answers
//
//   - a points task (a scattered probe of (s, a) points: the observation's
//     coordinates, then the action's, a Discrete action as its index) with
//     its reward at the probe's points (federation.LocalResult.Reward), for
//     the task's reward-space fusion; the task's fused θ on its Φ is not a
//     network's weights, so it warm-starts nothing;
//   - an mlp-weights task with its network's weights (LocalResult.Theta),
//     on the task's network shape, from the round's warm start, else the
//     task's shared initialization, else its own seed's.
//
// Config is the client's own learner settings (its simulator, its budget);
// an mlp-weights task sets its network's shape (Config.Net), which a client
// whose shape is its own choice (OwnNet) must already have.
//
// It answers no joint task (RefuseJoint): AIRL's discriminator gradient is
// no likelihood's, and it has no Hessian.
type MLPSampleLearner struct {
	// Env is the id of MakeEnv's simulator (as fedirl env list names it);
	// an mlp-weights task that names another is refused. Empty: unchecked.
	Env     string
	MakeEnv ppo.EnvMaker
	Demos   []sampleirl.Trajectory
	Config  sampleirl.MLPConfig
	// Input is the network's input map; nil is (s, e_a),
	// sampleirl.StateActionInput of the environment's spaces.
	Input sampleirl.FeatureMap
	// OwnNet marks Config.Net as the client's explicit choice: an
	// mlp-weights task whose network has another shape is refused rather
	// than the client's shape replaced. Without it the task's shape is taken.
	OwnNet bool
	// Distill configures DistillFused's regression (nn.Fit's defaults for
	// zero fields).
	Distill nn.FitConfig
	// Distilling marks a client that will distil the fused reward
	// (DistillFused) once the task is fused: Learn then refuses, before
	// learning, a task whose fused result is no reward at probe points (an
	// mlp-weights task).
	Distilling bool
	// Logf, when set, receives one line per iteration of LearnMLP.
	Logf func(format string, args ...any)
}

var _ federation.JointRefuser = (*MLPSampleLearner)(nil)

// RefuseJoint implements federation.JointRefuser: every joint task is
// refused with the reason; a one-shot task gives nil.
func (l *MLPSampleLearner) RefuseJoint(spec federation.TaskSpec) error {
	opt, err := fusion.DecodeOptions(spec.Fusion)
	if err != nil {
		return fmt.Errorf("task %s: %w", spec.ID, err)
	}
	if !fusion.IsRoundMethod(opt.Method) {
		return nil
	}
	return fmt.Errorf("task %s runs joint rounds (fusion %q: each client's exact MaxEnt gradient and Hessian at the server's trial θ), which the neural-reward learner cannot answer: its reward is a network trained as AIRL's discriminator, which has no likelihood gradient or Hessian in the task's θ; join a one-shot points task with a reward fusion (%s) or an %s task",
		spec.ID, opt.MethodName(), strings.Join(fusion.RewardMethods(), ", "), MLPWeightsFamilyName)
}

// config returns l.Config with the per-iteration progress line of Logf.
func (l *MLPSampleLearner) config(spec federation.TaskSpec) (sampleirl.MLPConfig, error) {
	cfg := l.Config
	if l.Logf == nil {
		return cfg, nil
	}
	resolved, err := cfg.Resolve()
	if err != nil {
		return cfg, fmt.Errorf("neural-reward IRL: %w", err)
	}
	user := cfg.OnIteration
	cfg.OnIteration = func(it sampleirl.MLPIteration) {
		l.Logf("task %s: neural-reward IRL iteration %d of at most %d: log-odds gap %.4g, its standard error %.4g (stops at ≤ %g·SE), %d PPO steps so far",
			spec.ID, it.Index, resolved.MaxIter, it.Gap, it.GapSE, resolved.Tolerance, it.EnvSteps)
		if user != nil {
			user(it)
		}
	}
	return cfg, nil
}

// result is the LocalResult of a LearnMLP outcome, with the reward r at
// the probe or the weights; GradNorm is the final |log-odds gap|.
func (l *MLPSampleLearner) result(res sampleirl.MLPResult, reward []float64) federation.LocalResult {
	out := federation.LocalResult{Reward: reward, DemoCount: len(l.Demos), Iterations: res.Iterations,
		GradNorm: math.Abs(res.Gap), Converged: res.Converged, StopReason: res.StopReason}
	if reward == nil {
		out.Theta = res.Weights
	}
	return out
}

// Learn implements federation.Learner.
func (l *MLPSampleLearner) Learn(ctx context.Context, spec federation.TaskSpec, warmStart []float64) (federation.LocalResult, error) {
	env, err := l.MakeEnv(0)
	if err != nil {
		return federation.LocalResult{}, fmt.Errorf("client environment: %w", err)
	}
	obs, act := env.ObservationSpace(), env.ActionSpace()
	input := l.Input
	if input == nil {
		input = sampleirl.StateActionInput(obs, act)
	}
	if err := l.RefuseJoint(spec); err != nil {
		return federation.LocalResult{}, err
	}
	cfg, err := l.config(spec)
	if err != nil {
		return federation.LocalResult{}, err
	}
	switch spec.EnvFamily {
	case PointsFamilyName:
		opt, err := fusion.DecodeOptions(spec.Fusion)
		if err != nil {
			return federation.LocalResult{}, fmt.Errorf("task %s: %w", spec.ID, err)
		}
		if ok, _ := fusion.AcceptsRewards(opt.Method); !ok {
			return federation.LocalResult{}, fmt.Errorf("task %s fuses by %q, which combines θ on the task's features; a neural-reward client submits its reward at the probe's points, which %s take",
				spec.ID, opt.MethodName(), strings.Join(fusion.RewardMethods(), ", "))
		}
		p, err := DecodePointProbe(spec.Probe)
		if err != nil {
			return federation.LocalResult{}, fmt.Errorf("task %s: probe: %w", spec.ID, err)
		}
		rows, err := p.PointRows()
		if err != nil {
			return federation.LocalResult{}, fmt.Errorf("task %s: probe: %w", spec.ID, err)
		}
		steps, err := ProbeSteps(rows, obs, act)
		if err != nil {
			return federation.LocalResult{}, fmt.Errorf("task %s: %w", spec.ID, err)
		}
		res, err := sampleirl.LearnMLP(ctx, l.MakeEnv, input, l.Demos, cfg)
		if err != nil {
			return federation.LocalResult{}, fmt.Errorf("neural-reward IRL: %w", err)
		}
		r := make([]float64, len(steps))
		for i, s := range steps {
			r[i] = res.Net.Reward(s.Obs, s.Action, nil, false)
		}
		return l.result(res, r), nil
	case MLPWeightsFamilyName:
		if l.Distilling {
			return federation.LocalResult{}, fmt.Errorf("task %s is an %s task: its fused result is a network's weights (FedAvg), not a reward at probe points to distil; leave the distillation out (the fused weights are the report's final theta, in the task's network layout), or join a points task", spec.ID, MLPWeightsFamilyName)
		}
		p, sizes, err := DecodeMLPWeightsProbe(spec.Probe)
		if err != nil {
			return federation.LocalResult{}, fmt.Errorf("task %s: probe: %w", spec.ID, err)
		}
		if p.Env != "" && l.Env != "" && p.Env != l.Env {
			return federation.LocalResult{}, fmt.Errorf("task %s averages networks on %s's (s, e_a) and this client's simulator is %s: join it with a %s simulator (--env %s)", spec.ID, p.Env, l.Env, p.Env, p.Env)
		}
		if input.Dim() != p.Input {
			return federation.LocalResult{}, fmt.Errorf("task %s: the task's network takes %d inputs, this client's input map gives %d", spec.ID, p.Input, input.Dim())
		}
		if l.OwnNet {
			own, err := cfg.Net.Resolve()
			if err != nil {
				return federation.LocalResult{}, fmt.Errorf("neural-reward IRL: %w", err)
			}
			if !slices.Equal(own.Hidden, p.Net.Hidden) || own.Activation != p.Net.Activation || own.OutputGain != p.Net.OutputGain {
				return federation.LocalResult{}, fmt.Errorf("task %s averages networks of shape hidden %v, %s, output_gain %g, and this client's settings choose hidden %v, %s, output_gain %g: weights of different shapes cannot be averaged; leave mlp.net out of the settings to take the task's, or set it to the task's",
					spec.ID, p.Net.Hidden, p.Net.Activation, p.Net.OutputGain, own.Hidden, own.Activation, own.OutputGain)
			}
		}
		cfg.Net = p.Net
		switch {
		case warmStart != nil:
			cfg.Theta0 = slices.Clone(warmStart)
		case p.Init != nil:
			cfg.Theta0 = slices.Clone(p.Init)
		default:
			cfg.Theta0 = nil
		}
		if cfg.Theta0 != nil && len(cfg.Theta0) != numWeights(sizes) {
			return federation.LocalResult{}, fmt.Errorf("task %s: warm start of %d weights, the network %v has %d", spec.ID, len(cfg.Theta0), sizes, numWeights(sizes))
		}
		res, err := sampleirl.LearnMLP(ctx, l.MakeEnv, input, l.Demos, cfg)
		if err != nil {
			return federation.LocalResult{}, fmt.Errorf("neural-reward IRL: %w", err)
		}
		return l.result(res, nil), nil
	}
	return federation.LocalResult{}, fmt.Errorf("task %s: family %q; a neural-reward client answers %s tasks (its reward at the points) and %s tasks (its weights)",
		spec.ID, spec.EnvFamily, PointsFamilyName, MLPWeightsFamilyName)
}

// Step is one (s, a) of a scattered probe in the simulator's spaces.
type Step struct {
	Obs, Action []float64
}

// ProbeSteps splits each probe point into the observation (the first
// obs.Dim() coordinates) and the action (the rest: one index for a
// Discrete space, act.Dim() coordinates for a Box), checking the points'
// dimension and that a Discrete action is an index of the space.
func ProbeSteps(points [][]float64, obs, act envs.Space) ([]Step, error) {
	od, ad := obs.Dim(), act.Dim()
	out := make([]Step, len(points))
	for i, x := range points {
		if len(x) != od+ad {
			return nil, fmt.Errorf("probe point %d has %d coordinates; an (s, a) point of this simulator has %d (observation %d, action %d)", i, len(x), od+ad, od, ad)
		}
		out[i] = Step{Obs: x[:od:od], Action: x[od:]}
		if act.IsDiscrete() {
			if k := int(x[od]); float64(k) != x[od] || k < 0 || k >= act.N {
				return nil, fmt.Errorf("probe point %d: action %v is not an index of Discrete(%d)", i, x[od], act.N)
			}
		}
	}
	return out, nil
}

// DistillReward fits a reward network of shape net, initialised from seed,
// to the reward values at the (s, a) steps by regression (nn.Fit with fit):
// FedDF-style distillation of a fused reward on the probe into a network
// whose Reward any client can train PPO on (a ppo.RewardFunc). input is
// the network's input map (nil: StateActionInput of the spaces).
func DistillReward(steps []Step, values []float64, obs, act envs.Space, input sampleirl.FeatureMap, net sampleirl.NetConfig, seed uint64, fit nn.FitConfig) (*sampleirl.RewardNet, nn.FitResult, error) {
	if len(steps) != len(values) || len(steps) == 0 {
		return nil, nn.FitResult{}, fmt.Errorf("distill: %d reward values for %d probe points", len(values), len(steps))
	}
	if input == nil {
		input = sampleirl.StateActionInput(obs, act)
	}
	r, err := sampleirl.NewRewardNet(input, net, seed)
	if err != nil {
		return nil, nn.FitResult{}, fmt.Errorf("distill: %w", err)
	}
	d := input.Dim()
	X := make([]float64, 0, len(steps)*d)
	buf := make([]float64, d)
	for _, s := range steps {
		X = append(X, input.Eval(buf, s.Obs, s.Action, nil, false)...)
	}
	res, err := nn.Fit(r.Net, X, len(steps), values, fit)
	if err != nil {
		return nil, res, fmt.Errorf("distill: %w", err)
	}
	return r, res, nil
}

// Distilled is a fused reward distilled into a network (DistillFused).
type Distilled struct {
	// Net is the distilled network, on StateActionInput(Obs, Act) unless
	// the learner has its own Input.
	Net      *sampleirl.RewardNet
	Obs, Act envs.Space
	// Env is the client's simulator id (MLPSampleLearner.Env).
	Env string
	// Provenance says what was distilled and how well.
	Provenance DistillProvenance
}

// DistillProvenance is the provenance of a distilled reward network file:
// the fused result it was fitted to and the fit.
type DistillProvenance struct {
	Task    string   `json:"task"`
	Round   int      `json:"round"`
	Method  string   `json:"method"`
	Clients []string `json:"clients"`
	// Points is the number of probe points the network was fitted at.
	Points int `json:"points"`
	// Seed seeded the network's initialisation.
	Seed uint64 `json:"seed"`
	// Fit is nn.Fit's outcome; RelativeRMSE is Fit.RMSE / Fit.TargetStd
	// (the RMSE itself for a constant fused reward).
	Fit          nn.FitResult `json:"fit"`
	RelativeRMSE float64      `json:"relative_rmse"`
}

// File returns the reward network file of d (sampleirl.MarshalRewardNet,
// with d.Provenance).
func (d Distilled) File() ([]byte, error) {
	return sampleirl.MarshalRewardNet(d.Net, d.Env, d.Obs, d.Act, d.Provenance)
}

// DistillFused distils a points task's fused reward (fused.Reward, one
// value per probe point) into a fresh network of the client's shape
// (Config.Net, seeded by Config.Seed) on the client's input map, by
// DistillReward with l.Distill. It refuses a task that is not a points
// task and a fused result without a reward of the probe's length.
func (l *MLPSampleLearner) DistillFused(spec federation.TaskSpec, fused federation.FusedResult) (Distilled, error) {
	if spec.EnvFamily != PointsFamilyName {
		return Distilled{}, fmt.Errorf("task %s is a %q task; only a points task's fused reward at its (s, a) points can be distilled", spec.ID, spec.EnvFamily)
	}
	if fused.Reward == nil {
		return Distilled{}, fmt.Errorf("task %s: the fused result carries no reward at the probe's points (fused from θ only?)", spec.ID)
	}
	env, err := l.MakeEnv(0)
	if err != nil {
		return Distilled{}, fmt.Errorf("client environment: %w", err)
	}
	obs, act := env.ObservationSpace(), env.ActionSpace()
	p, err := DecodePointProbe(spec.Probe)
	if err != nil {
		return Distilled{}, fmt.Errorf("task %s: probe: %w", spec.ID, err)
	}
	rows, err := p.PointRows()
	if err != nil {
		return Distilled{}, fmt.Errorf("task %s: probe: %w", spec.ID, err)
	}
	steps, err := ProbeSteps(rows, obs, act)
	if err != nil {
		return Distilled{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	if len(fused.Reward) != len(steps) {
		return Distilled{}, fmt.Errorf("task %s: a fused reward of %d values for %d probe points", spec.ID, len(fused.Reward), len(steps))
	}
	net, fit, err := DistillReward(steps, fused.Reward, obs, act, l.Input, l.Config.Net, l.Config.Seed, l.Distill)
	if err != nil {
		return Distilled{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	rel := fit.RMSE
	if fit.TargetStd > 0 {
		rel = fit.RMSE / fit.TargetStd
	}
	return Distilled{Net: net, Obs: obs, Act: act, Env: l.Env, Provenance: DistillProvenance{Task: spec.ID, Round: fused.Round,
		Method: fused.Method, Clients: fused.Clients, Points: len(steps), Seed: l.Config.Seed, Fit: fit, RelativeRMSE: rel}}, nil
}

var _ federation.Learner = (*MLPSampleLearner)(nil)
