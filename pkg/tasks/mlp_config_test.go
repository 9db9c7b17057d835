package tasks

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/rl/nn"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
	"github.com/fedirl/fedirl/pkg/sampleirl"
)

// TestMLPSettingsFile: the settings file's top-level keys and mlp block
// map onto sampleirl.MLPConfig (policy at τ = 1, the MLP's optimizer
// defaults where the file sets none), the block's net onto Config.Net with
// OwnNet, its distill block onto the distillation's nn.FitConfig; the
// linear learner refuses an mlp block, the neural one a temperature, and
// unknown keys and explicit zeros inside the block are refused by line and
// path.
func TestMLPSettingsFile(t *testing.T) {
	c := mustSampleConfig(t, `
episodes: 8
max_iter: 3
l2: 0.01
ppo: {n_steps: 64}
mlp:
  net: {hidden: [16, 8], activation: relu}
  reward_steps: 5
  holdout: 0.3
  distill: {max_steps: 300, tol: 0.01}
`)
	l := &MLPSampleLearner{Env: "CartPole-v1"}
	if err := c.ApplyMLP(l, 4); err != nil {
		t.Fatal(err)
	}
	g := l.Config
	if g.Episodes != 8 || g.MaxIter != 3 || g.L2 != 0.01 || g.Seed != 4 || g.RewardSteps != 5 || g.Holdout != 0.3 || g.PPO.NSteps != 64 ||
		g.PPO.EntCoef != 1 || !g.PPO.NoAdvantageNorm || !slices.Equal(g.Net.Hidden, []int{16, 8}) || g.Net.Activation != "relu" || !l.OwnNet {
		t.Errorf("config %+v, own net %v", g, l.OwnNet)
	}
	if l.Distill != (nn.FitConfig{MaxSteps: 300, Tol: 0.01}) {
		t.Errorf("distill %+v", l.Distill)
	}
	r, err := g.Resolve()
	if err != nil || r.Optimizer != sampleirl.OptimizerAdam || r.LearningRate != 3e-3 {
		t.Errorf("resolved optimizer %q at %v (%v), want the MLP's adam at 3e-3", r.Optimizer, r.LearningRate, err)
	}
	bare := &MLPSampleLearner{Env: "CartPole-v1"}
	if err := mustSampleConfig(t, "max_iter: 2\n").ApplyMLP(bare, 1); err != nil || bare.OwnNet || bare.Config.Net.Hidden != nil {
		t.Errorf("no mlp block: own net %v, net %+v (%v)", bare.OwnNet, bare.Config.Net, err)
	}
	if err := c.Apply(&SampleLearner{Env: "CartPole-v1"}, 1); err == nil || !strings.Contains(err.Error(), "mlp: the neural-reward learner's block") {
		t.Errorf("linear learner with an mlp block: %v", err)
	}
	if err := mustSampleConfig(t, "temperature: 0.5\n").ApplyMLP(&MLPSampleLearner{Env: "CartPole-v1"}, 1); err == nil || !strings.Contains(err.Error(), "τ = 1") {
		t.Errorf("temperature with the neural learner: %v", err)
	}
	for _, tc := range []struct{ text, want string }{
		{"mlp:\n  nett: {}\n", "line 2: mlp.nett: unknown key (known: net, reward_steps, holdout, distill)"},
		{"mlp:\n  net: {hiden: [3]}\n", "line 2: mlp.net.hiden: unknown key"},
		{"mlp:\n  reward_steps: 0\n", "line 2: mlp.reward_steps: 0, want ≥ 1"},
		{"mlp:\n  holdout: 0\n", "line 2: mlp.holdout: 0, want a fraction in (0, 1)"},
		{"mlp:\n  distill:\n    tol: 0\n", "line 3: mlp.distill.tol: 0, want > 0"},
		{"mlp:\n  net:\n    output_gain: 0\n", "line 3: mlp.net.output_gain: 0"},
		{"mlp: 3\n", "line 1: mlp: want a mapping"},
	} {
		if _, err := DecodeSampleConfig([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.text, err, tc.want)
		}
	}
	for _, tc := range []struct{ text, want string }{
		{"mlp:\n  net: {hidden: [0]}\n", "net.hidden[0] = 0"},
		{"mlp:\n  distill: {max_steps: -2}\n", "mlp.distill.max_steps: -2, want > 0"},
		{"mlp:\n  reward_steps: -1\n", "reward_steps = -1"},
		{"mlp:\n  holdout: 1\n", "holdout = 1, want a fraction in (0, 1)"},
	} {
		if err := mustSampleConfig(t, tc.text).ApplyMLP(&MLPSampleLearner{Env: "CartPole-v1"}, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.text, err, tc.want)
		}
	}
}

// TestMLPWeightsTaskProbe: the task probe of --mlp-weights has the (s, e_a)
// input width of the spaces, theta_dim the network's weight count, and a
// shared initialization from a seed that is sampleirl.NewRewardNet's of
// that seed; given weights of the wrong length are refused.
func TestMLPWeightsTaskProbe(t *testing.T) {
	obs := envs.Space{Low: make([]float64, 4), High: []float64{1, 1, 1, 1}}
	act := envs.Space{N: 2}
	net := sampleirl.NetConfig{Hidden: []int{8}}
	seed := uint64(5)
	raw, dim, err := MLPWeightsTaskProbe("CartPole-v1", obs, act, net, nil, &seed)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := DecodeMLPWeightsProbe(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := sampleirl.NewRewardNet(sampleirl.StateActionInput(obs, act), net, 5)
	if p.Env != "CartPole-v1" || p.Input != 6 || dim != 6*8+8+8+1 || !slices.Equal(p.Init, want.Weights()) {
		t.Errorf("probe env %q input %d, theta_dim %d, init equal to seed 5's: %v", p.Env, p.Input, dim, slices.Equal(p.Init, want.Weights()))
	}
	if raw, _, err := MLPWeightsTaskProbe("", obs, act, net, nil, nil); err != nil || strings.Contains(string(raw), "init") {
		t.Errorf("no shared initialization: %s (%v)", raw, err)
	}
	if _, _, err := MLPWeightsTaskProbe("", obs, act, net, []float64{1, 2}, nil); err == nil || !strings.Contains(err.Error(), "init: 2 weights, the network [6 8 1] has 65") {
		t.Errorf("short init: %v", err)
	}
}

// TestMLPLearnerRefusesBeforeLearning: an mlp-weights task of another
// simulator, of another shape than the client's own choice, or joined by a
// client that will distil, and a joint task, are refused with the reason
// before any PPO step (the learner's simulator panics if stepped).
func TestMLPLearnerRefusesBeforeLearning(t *testing.T) {
	obs := envs.Space{Low: []float64{-1}, High: []float64{1}}
	act := envs.Space{N: 2}
	noStep := ppo.EnvMaker(func(int) (envs.Env, error) { return spacesOnly{obs, act}, nil })
	probe := func(env string, hidden int) json.RawMessage {
		b, _ := json.Marshal(MLPWeightsProbe{Env: env, Input: 3, Net: sampleirl.NetConfig{Hidden: []int{hidden}}})
		return b
	}
	spec := func(p json.RawMessage, fusionJSON string) federation.TaskSpec {
		return federation.TaskSpec{ID: "t", EnvFamily: MLPWeightsFamilyName, Probe: p, ThetaDim: 3*4 + 4 + 4 + 1, Fusion: json.RawMessage(fusionJSON)}
	}
	demos := []sampleirl.Trajectory{{Obs: [][]float64{{0}, {0.5}}, Actions: [][]float64{{1}}}}
	own := sampleirl.MLPConfig{Net: sampleirl.NetConfig{Hidden: []int{8}}}
	for _, tc := range []struct {
		name string
		l    *MLPSampleLearner
		spec federation.TaskSpec
		want string
	}{
		{"other simulator", &MLPSampleLearner{Env: "Pendulum-v1", MakeEnv: noStep, Demos: demos}, spec(probe("CartPole-v1", 4), `{"method": "mean"}`), "averages networks on CartPole-v1's (s, e_a) and this client's simulator is Pendulum-v1"},
		{"own shape", &MLPSampleLearner{MakeEnv: noStep, Demos: demos, Config: own, OwnNet: true}, spec(probe("", 4), `{"method": "mean"}`), "shape hidden [4], tanh, output_gain 0.1, and this client's settings choose hidden [8]"},
		{"distilling", &MLPSampleLearner{MakeEnv: noStep, Demos: demos, Distilling: true}, spec(probe("", 4), `{"method": "mean"}`), "not a reward at probe points to distil"},
		{"joint", &MLPSampleLearner{MakeEnv: noStep, Demos: demos}, spec(probe("", 4), `{"method": "joint"}`), "runs joint rounds"},
	} {
		_, err := tc.l.Learn(context.Background(), tc.spec, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}

// spacesOnly is an environment that has spaces and panics when used.
type spacesOnly struct{ obs, act envs.Space }

func (e spacesOnly) Reset(uint64) []float64 { panic("the learner reset the simulator before refusing") }
func (e spacesOnly) Step([]float64) ([]float64, float64, bool, bool) {
	panic("the learner stepped the simulator before refusing")
}
func (e spacesOnly) ObservationSpace() envs.Space { return e.obs }
func (e spacesOnly) ActionSpace() envs.Space      { return e.act }
