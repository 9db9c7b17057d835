package tasks

import (
	"context"
	"fmt"
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
// its Net is replaced by an mlp-weights task's.
type MLPSampleLearner struct {
	MakeEnv ppo.EnvMaker
	Demos   []sampleirl.Trajectory
	Config  sampleirl.MLPConfig
	// Input is the network's input map; nil is (s, e_a),
	// sampleirl.StateActionInput of the environment's spaces.
	Input sampleirl.FeatureMap
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
	cfg := l.Config
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
		return federation.LocalResult{Reward: r, DemoCount: len(l.Demos), Iterations: res.Iterations,
			Converged: res.Converged, StopReason: res.StopReason}, nil
	case MLPWeightsFamilyName:
		p, sizes, err := DecodeMLPWeightsProbe(spec.Probe)
		if err != nil {
			return federation.LocalResult{}, fmt.Errorf("task %s: probe: %w", spec.ID, err)
		}
		if input.Dim() != p.Input {
			return federation.LocalResult{}, fmt.Errorf("task %s: the task's network takes %d inputs, this client's input map gives %d", spec.ID, p.Input, input.Dim())
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
		return federation.LocalResult{Theta: res.Weights, DemoCount: len(l.Demos), Iterations: res.Iterations,
			Converged: res.Converged, StopReason: res.StopReason}, nil
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

var _ federation.Learner = (*MLPSampleLearner)(nil)
