package ppo

import (
	"reflect"
	"strings"
	"testing"
)

// zooPPO holds rl-zoo3's own entries for the four environments, copied
// verbatim from DLR-RM/rl-baselines3-zoo, hyperparams/ppo.yml at commit
// 22e3ff2450fd92033f7f032915e1f64894a09584 (MIT licence), comments included;
// the two BipedalWalker entries from commit 00128b5d46d497b772f3bd891ae9f520919e8971.
const zooPPO = `# Tuned
Pendulum-v1:
  n_envs: 4
  n_timesteps: !!float 1e5
  policy: 'MlpPolicy'
  n_steps: 1024
  gae_lambda: 0.95
  gamma: 0.9
  n_epochs: 10
  ent_coef: 0.0
  learning_rate: !!float 1e-3
  clip_range: 0.2
  use_sde: True
  sde_sample_freq: 4

# Tuned
CartPole-v1:
  n_envs: 8
  n_timesteps: !!float 1e5
  policy: 'MlpPolicy'
  n_steps: 32
  batch_size: 256
  gae_lambda: 0.8
  gamma: 0.98
  n_epochs: 20
  ent_coef: 0.0
  learning_rate: lin_0.001
  clip_range: lin_0.2

Acrobot-v1:
  normalize: true
  n_envs: 16
  n_timesteps: !!float 1e6
  policy: 'MlpPolicy'
  n_steps: 256
  gae_lambda: 0.94
  gamma: 0.99
  n_epochs: 4
  ent_coef: 0.0

LunarLanderContinuous-v3:
  n_envs: 16
  n_timesteps: !!float 1e6
  policy: 'MlpPolicy'
  n_steps: 1024
  batch_size: 64
  gae_lambda: 0.98
  gamma: 0.999
  n_epochs: 4
  ent_coef: 0.01

BipedalWalker-v3:
  normalize: true
  n_envs: 32
  n_timesteps: !!float 5e6
  policy: 'MlpPolicy'
  n_steps: 2048
  batch_size: 64
  gae_lambda: 0.95
  gamma: 0.999
  n_epochs: 10
  ent_coef: 0.0
  learning_rate: !!float 3e-4
  clip_range: 0.18

BipedalWalkerHardcore-v3:
  normalize: true
  n_envs: 16
  n_timesteps: !!float 10e7
  policy: 'MlpPolicy'
  n_steps: 2048
  batch_size: 64
  gae_lambda: 0.95
  gamma: 0.99
  n_epochs: 10
  ent_coef: 0.001
  learning_rate: lin_2.5e-4
  clip_range: lin_0.2
`

// zooEntry returns the block of env in zooPPO, with its header line, as a
// user would copy it into a file of its own.
func zooEntry(t *testing.T, env string) string {
	t.Helper()
	start := strings.Index(zooPPO, env+":\n")
	if start < 0 {
		t.Fatalf("no %s in zooPPO", env)
	}
	end := strings.Index(zooPPO[start:], "\n\n")
	if end < 0 {
		return zooPPO[start:]
	}
	return zooPPO[start : start+end+1]
}

// TestZooEntriesVerbatim applies each rl-zoo3 entry over SB3's defaults, as
// the whole file (selected by environment id), as the entry alone under its
// id, and as the bare mapping, and checks every hyperparameter against the
// values written in the entry.
func TestZooEntriesVerbatim(t *testing.T) {
	sb3, _ := Preset("sb3")
	want := map[string]Config{
		"CartPole-v1": {NEnvs: 8, TotalSteps: 100_000, NSteps: 32, BatchSize: 256, GAELambda: 0.8, Gamma: 0.98,
			NEpochs: 20, LearningRate: 0.001, LinearLR: true, ClipRange: 0.2, LinearClip: true},
		"Acrobot-v1": {NormalizeObs: true, NormalizeReward: true, NEnvs: 16, TotalSteps: 1_000_000, NSteps: 256,
			GAELambda: 0.94, Gamma: 0.99, NEpochs: 4},
		"LunarLanderContinuous-v3": {NEnvs: 16, TotalSteps: 1_000_000, NSteps: 1024, BatchSize: 64, GAELambda: 0.98,
			Gamma: 0.999, NEpochs: 4, EntCoef: 0.01},
		"Pendulum-v1": {NEnvs: 4, TotalSteps: 100_000, NSteps: 1024, GAELambda: 0.95, Gamma: 0.9, NEpochs: 10,
			LearningRate: 1e-3, ClipRange: 0.2, UseSDE: true, SDESampleFreq: 4},
		"BipedalWalker-v3": {NormalizeObs: true, NormalizeReward: true, NEnvs: 32, TotalSteps: 5_000_000, NSteps: 2048,
			BatchSize: 64, GAELambda: 0.95, Gamma: 0.999, NEpochs: 10, LearningRate: 3e-4, ClipRange: 0.18},
		"BipedalWalkerHardcore-v3": {NormalizeObs: true, NormalizeReward: true, NEnvs: 16, TotalSteps: 100_000_000,
			NSteps: 2048, BatchSize: 64, GAELambda: 0.95, Gamma: 0.99, NEpochs: 10, EntCoef: 0.001,
			LearningRate: 2.5e-4, LinearLR: true, ClipRange: 0.2, LinearClip: true},
	}
	for env, w := range want {
		w = w.WithDefaults()
		entry := zooEntry(t, env)
		bare := strings.ReplaceAll(strings.TrimPrefix(entry, env+":\n"), "\n  ", "\n")
		bare = strings.TrimPrefix(bare, "  ")
		for form, text := range map[string]string{"whole file": zooPPO, "entry": entry, "bare": bare} {
			got, err := ApplyConfig(sb3, []byte(text), env)
			if err != nil {
				t.Errorf("%s (%s): %v", env, form, err)
				continue
			}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("%s (%s):\n got %+v\nwant %+v", env, form, got, w)
			}
			// The hand-written preset of the same name must agree with the
			// zoo's text (Pendulum-v1's preset leaves out gSDE; see presets).
			if env == "Pendulum-v1" {
				got.UseSDE, got.SDESampleFreq = false, 0
			}
			if p, err := Preset(env); err != nil || !reflect.DeepEqual(p, got) {
				t.Errorf("%s: preset %+v differs from the zoo entry %+v (%v)", env, p, got, err)
			}
		}
	}
}

func TestApplyConfigPolicyKwargsAndRefusals(t *testing.T) {
	sb3, _ := Preset("sb3")
	// policy_kwargs as the zoo writes them (MountainCarContinuous-v0 and the
	// pybullet entries), a folded multi-line string included.
	got, err := ApplyConfig(sb3, []byte(`policy_kwargs: "dict(log_std_init=-2,
                       ortho_init=False,
                       activation_fn=nn.ReLU,
                       net_arch=[dict(pi=[256, 256], vf=[256, 256])]
                       )"
normalize: "{'norm_obs': False, 'norm_reward': True}"
normalize_advantage: false
`), "X")
	if err != nil {
		t.Fatal(err)
	}
	if got.LogStdInit != -2 || !got.NoOrthoInit || got.Activation != "relu" || !reflect.DeepEqual(got.Hidden, []int{256, 256}) ||
		got.NormalizeObs || !got.NormalizeReward || !got.NoAdvantageNorm {
		t.Errorf("policy_kwargs/normalize not honoured: %+v", got)
	}
	got, err = ApplyConfig(sb3, []byte(`policy_kwargs: "dict(net_arch=[32, 16])"`), "X")
	if err != nil || !reflect.DeepEqual(got.Hidden, []int{32, 16}) {
		t.Errorf("net_arch list: %v %v", got.Hidden, err)
	}
	for _, c := range []struct{ text, want string }{
		{"n_step: 64", "n_step: unknown key"},
		{"gamma: 0", "gamma: 0 would be read as the default"},
		{"n_steps: 0", "n_steps: 0; want ≥ 1"},
		{"n_timesteps: 1.5", "want a whole number"},
		{"learning_rate: lin_x", "lin_<number>"},
		{"policy: CnnPolicy", "only MlpPolicy"},
		{`policy_kwargs: "dict(net_arch=dict(pi=[64], vf=[32]))"`, "different actor"},
		{`policy_kwargs: "dict(squash_output=True)"`, "squash_output is not implemented"},
		{"env_wrapper:\n  - gymnasium.wrappers.TimeLimit", "env_wrapper: unknown key"},
		{"n_timesteps: 10\ntotal_steps: 10", "both n_timesteps and total_steps"},
		{"sde_sample_freq: -2", "want ≥ -1"},
		{"CartPole-v1:\n  n_steps: 8\nAcrobot-v1:\n  n_steps: 8", "no entry for Pendulum-v1"},
	} {
		_, err := ApplyConfig(sb3, []byte(c.text), "Pendulum-v1")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.text, err, c.want)
		}
	}
}
