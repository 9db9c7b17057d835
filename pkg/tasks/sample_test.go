package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
	"github.com/fedirl/fedirl/pkg/sampleirl"
)

// pendulumMaker makes copy i of Pendulum-v1 with the paper's client
// physics (client −1: the defaults) and observation noise seeded by i, as
// fedirl client --env Pendulum-v1 --client c does.
func pendulumMaker(client int) ppo.EnvMaker {
	return func(i int) (envs.Env, error) {
		p := map[string]float64{}
		if client >= 0 {
			var err error
			if p, err = classic.ClientParams("Pendulum-v1", client); err != nil {
				return nil, err
			}
		}
		e, err := classic.MakeWithParams("Pendulum-v1", p)
		if err != nil {
			return nil, err
		}
		e.SetNoiseSeed(uint64(1000 + i))
		return e, nil
	}
}

// pendulumDemos returns n episodes of a damped energy-pumping controller
// with seeded noise in the client's simulator (200 steps each, truncated).
func pendulumDemos(t *testing.T, client, n int) []sampleirl.Trajectory {
	t.Helper()
	e, err := pendulumMaker(client)(99)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(client+10), 7))
	var out []sampleirl.Trajectory
	for k := range n {
		obs := slices.Clone(e.Reset(uint64(k)))
		tr := sampleirl.Trajectory{Obs: [][]float64{obs}}
		for {
			u := math.Max(-2, math.Min(2, -2*obs[1]-0.5*obs[2]+0.3*rng.NormFloat64()))
			next, _, term, trunc := e.Step([]float64{u})
			obs = slices.Clone(next)
			tr.Obs, tr.Actions = append(tr.Obs, obs), append(tr.Actions, []float64{u})
			if term || trunc {
				tr.Terminated = term
				break
			}
		}
		out = append(out, tr)
	}
	return out
}

// tinySampleConfig is a sampleirl budget of a few CPU seconds: a small
// PPO, two episodes per estimate, three iterations.
func tinySampleConfig() sampleirl.Config {
	pc := ppo.Config{NEnvs: 1, NSteps: 64, BatchSize: 32, NEpochs: 1, Hidden: []int{8}, Gamma: 0.95}.WithDefaults()
	return sampleirl.Config{PPO: pc, Seed: 5, Episodes: 2, MaxIter: 3, LearningRate: 0.05}
}

// pendulumTask is a one-shot control task on Pendulum-v1's paper lattice.
func pendulumTask(t *testing.T, id, irlJSON, fusionJSON string, quorum int) (federation.TaskSpec, ControlProbe) {
	t.Helper()
	p := controlProbe(t, "Pendulum-v1", "paper")
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return federation.TaskSpec{ID: id, EnvFamily: "control", Probe: raw, ThetaDim: p.RBF.Dim(), Quorum: quorum, MinClients: quorum, Rounds: 1,
		IRL: json.RawMessage(irlJSON), Fusion: json.RawMessage(fusionJSON)}, p
}

// TestSampleLearnerIsSampleIRL: the learner's θ, iterations, final gap and
// verdict are sampleirl.Learn's, run directly on the same simulator, the
// probe's feature map, the same demonstrations and the configuration the
// learner documents (SoftPPO at the task's τ, or the client's, the task's
// λ or the client's, θ₀ the warm start), bit for bit.
func TestSampleLearnerIsSampleIRL(t *testing.T) {
	ctx := context.Background()
	spec, probe := pendulumTask(t, "pend", `{"temperature": 0.5, "l2": 0.01}`, `{"method": "mean"}`, 1)
	demos := pendulumDemos(t, 2, 2)
	warm := make([]float64, spec.ThetaDim)
	for j := range warm {
		warm[j] = 0.01 * float64(j%5-2)
	}
	own := 0.2
	for _, tc := range []struct {
		name      string
		tau       float64
		l2        *float64
		warm      []float64
		wantTau   float64
		wantL2    float64
		wantTheta []float64
	}{
		{"the task's τ and λ, cold", 0, nil, nil, 0.5, 0.01, nil},
		{"the client's τ and λ, warm", 2, &own, warm, 2, 0.2, warm},
	} {
		var lines []string
		l := &SampleLearner{Env: "Pendulum-v1", MakeEnv: pendulumMaker(2), Demos: demos, Config: tinySampleConfig(), Temperature: tc.tau, L2: tc.l2,
			Logf: func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }}
		got, err := l.Learn(ctx, spec, tc.warm)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// One progress line per outer iteration, in order (and logging changes no result: θ is compared below).
		if len(lines) != got.Iterations {
			t.Errorf("%s: %d progress lines for %d iterations: %q", tc.name, len(lines), got.Iterations, lines)
		}
		for i, line := range lines {
			if want := fmt.Sprintf("task pend: sample IRL iteration %d of at most 3: feature gap", i+1); !strings.HasPrefix(line, want) {
				t.Errorf("%s: progress line %d %q, want it to start %q", tc.name, i+1, line, want)
			}
		}
		phi, err := probe.FeatureMap()
		if err != nil {
			t.Fatal(err)
		}
		cfg := tinySampleConfig()
		cfg.PPO.EntCoef, cfg.PPO.NoAdvantageNorm = tc.wantTau, true
		cfg.L2, cfg.Theta0 = tc.wantL2, tc.warm
		want, err := sampleirl.Learn(ctx, pendulumMaker(2), phi, demos, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Theta, want.Theta) {
			t.Errorf("%s: θ %v, sampleirl.Learn %v", tc.name, got.Theta, want.Theta)
		}
		if got.Iterations != want.Iterations || got.GradNorm != want.Gap || got.Converged != want.Converged ||
			got.StopReason != want.StopReason || got.DemoCount != len(demos) {
			t.Errorf("%s: %+v, sampleirl.Learn %d iterations, gap %v, converged %v, %q", tc.name, got, want.Iterations, want.Gap, want.Converged, want.StopReason)
		}
		start := tc.warm
		if start == nil {
			start = make([]float64, spec.ThetaDim)
		}
		if slices.Equal(got.Theta, start) {
			t.Errorf("%s: θ is still θ₀ after %d iterations", tc.name, got.Iterations)
		}
	}
}

// TestPointFeatureMapReproducesPhi: at a probe point's coordinates, split
// into (s, a) or (s, a, s′) of a simulator with 3 observations and 1
// action, the points task's rbf map gives the row of the Φ that
// PointsFamily.Probe built for the task, to 1e-12.
func TestPointFeatureMapReproducesPhi(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	const obsDim, actDim = 3, 1
	for _, dim := range []int{obsDim + actDim, 2*obsDim + actDim} {
		spec := features.RBFSpec{Bias: true}
		for k := range dim {
			n := 2 + k%2
			spec.Axes = append(spec.Axes, features.UniformRBFAxis(fmt.Sprintf("x%d", k), n, -1, 1, 0))
		}
		pts := make([][]float64, 40)
		for i := range pts {
			pts[i] = make([]float64, dim)
			for k := range pts[i] {
				pts[i][k] = 2*rng.Float64() - 1
			}
		}
		raw, err := json.Marshal(PointProbe{Points: pts, RBF: &spec})
		if err != nil {
			t.Fatal(err)
		}
		pr, err := PointsFamily{}.Probe(raw)
		if err != nil {
			t.Fatal(err)
		}
		p, err := DecodePointProbe(raw)
		if err != nil {
			t.Fatal(err)
		}
		fm, err := PointFeatureMap(p, obsDim, actDim)
		if err != nil {
			t.Fatal(err)
		}
		if _, d := pr.Phi.Dims(); fm.Dim() != d {
			t.Fatalf("dim %d: the map has %d features, Φ %d", dim, fm.Dim(), d)
		}
		dst := make([]float64, fm.Dim())
		for i, x := range pts {
			s, a := x[:obsDim], x[obsDim:obsDim+actDim]
			var next []float64
			if dim > obsDim+actDim {
				next = x[obsDim+actDim:]
			} else {
				next = []float64{9, 9, 9} // ignored by an (s, a) point
			}
			fm.Eval(dst, s, a, next, i%3 == 0)
			for j, v := range dst {
				if w := pr.Phi.At(i, j); math.Abs(v-w) > 1e-12 {
					t.Errorf("dim %d point %d feature %d: map %v, Φ %v", dim, i, j, v, w)
				}
			}
		}
		if _, err := PointFeatureMap(p, 2, 1); err == nil || !strings.Contains(err.Error(), "another simulator") {
			t.Errorf("dim %d: a simulator with 2 observations: error %v", dim, err)
		}
	}
}

// TestSampleLearnerRefuses: every task the sample-based learner cannot
// answer is a clear error naming the task and what is wrong, before any
// learning.
func TestSampleLearnerRefuses(t *testing.T) {
	ctx := context.Background()
	demos := pendulumDemos(t, -1, 1)
	l := &SampleLearner{Env: "Pendulum-v1", MakeEnv: pendulumMaker(-1), Demos: demos, Config: tinySampleConfig()}
	dataPhi := pointsSpec("pts-data", []byte(`{"points": [[1, 0, 0, 1], [0, 1, 0, -1]], "phi": [[1, 0], [0, 1]]}`), 2, 1, "mean")
	joint, _ := pendulumTask(t, "pend-joint", ``, `{"method": "joint"}`, 1)
	fedavg, _ := pendulumTask(t, "pend-fedavg", ``, `{"method": "joint", "update": "fedavg"}`, 1)
	joint.Rounds, fedavg.Rounds = 0, 0 // a joint task's rounds are its optimizer's
	cart := controlProbe(t, "CartPole-v1", "paper")
	cartRaw, _ := json.Marshal(cart)
	cartSpec := federation.TaskSpec{ID: "cart", EnvFamily: "control", Probe: cartRaw, ThetaDim: cart.RBF.Dim(), Fusion: json.RawMessage(`{"method": "mean"}`)}
	grid, gridDim, err := GridWorldProbe(5, 1, federation.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	gridSpec := federation.TaskSpec{ID: "grid", EnvFamily: "gridworld", Probe: grid, ThetaDim: gridDim}
	wrongDim, _ := pendulumTask(t, "pend-dim", ``, `{"method": "mean"}`, 1)
	wrongDim.ThetaDim = 3
	rbfPts := pointsSpec("pts-rbf3", []byte(`{"points": [[1, 0, 0], [0, 1, 0]], "rbf": {"axes": [{"centres": [0], "bandwidth": 1}, {"centres": [0], "bandwidth": 1}, {"centres": [0], "bandwidth": 1}]}}`), 1, 1, "mean")
	for _, tc := range []struct {
		spec federation.TaskSpec
		want []string
		is   error
	}{
		{dataPhi, []string{"task pts-data (points) gives its Φ only as data at its points (phi, phi_npy or phi_file)", "probe.rbf"}, ErrNoFeatureMap},
		{joint, []string{"task pend-joint runs joint rounds", "Monte Carlo estimate", "no Hessian", "--learner maxent"}, nil},
		{fedavg, []string{"task pend-fedavg runs joint rounds"}, nil},
		{cartSpec, []string{"task cart is on CartPole-v1 and this client's simulator is Pendulum-v1"}, nil},
		{gridSpec, []string{`task grid is a "gridworld" task, whose features live on a lattice`, "--learner maxent --mdp"}, nil},
		{wrongDim, []string{"task pend-dim wants theta_dim 3, its features have 65"}, nil},
		{rbfPts, []string{"task pts-rbf3: the points have 3 coordinates; a point of this simulator is (s, a), 3 + 1 = 4 coordinates, or (s, a, s′), 7"}, nil},
	} {
		_, err := l.Learn(ctx, tc.spec, nil)
		if err == nil {
			t.Errorf("%s: learned, want a refusal", tc.spec.ID)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q, want one containing %q", tc.spec.ID, err, w)
			}
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: error %v does not wrap %v", tc.spec.ID, err, tc.is)
		}
	}
	// Demonstrations of another simulator are refused by the learner, naming the demonstration.
	bad := &SampleLearner{Env: "Pendulum-v1", MakeEnv: pendulumMaker(-1), Config: tinySampleConfig(),
		Demos: []sampleirl.Trajectory{{Obs: [][]float64{{1, 0}, {1, 0}}, Actions: [][]float64{{0}}}}}
	one, _ := pendulumTask(t, "pend", ``, `{"method": "mean"}`, 1)
	if _, err := bad.Learn(ctx, one, nil); err == nil || !strings.Contains(err.Error(), "demonstration 0 observation 0: length 2, the environment's have 3") {
		t.Errorf("2-value observations: error %v", err)
	}
	// Through a real federation: the client's error is the learner's reason, and nothing is fused.
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, _, err = federation.RunInProcess(fctx, joint, []federation.LocalClient{{ID: "robot", Learner: l}}, federation.InProcessConfig{Fuser: NewFuser()})
	if err == nil || !strings.Contains(err.Error(), "client robot: task pend-joint: task pend-joint runs joint rounds") {
		t.Errorf("joint task in process: error %v", err)
	}
}

// TestSampleConfigFile: the settings file maps onto sampleirl.Config by
// its json names, the ppo preset resolved as the control study does with a
// partial ppo block over it; unknown keys, explicit zeros that would mean
// a default and reward normalisation are refused, naming the key and line.
func TestSampleConfigFile(t *testing.T) {
	c, err := DecodeSampleConfig([]byte(`
policy_steps: 128
episodes: 8
confirm_episodes: 16
max_iter: 7
tolerance: 2.5
optimizer: adam
learning_rate: 0.02
l2: 0
temperature: 0.3
ppo:
  n_steps: 64
  hidden: [16]
`))
	if err != nil {
		t.Fatal(err)
	}
	l := &SampleLearner{Env: "Pendulum-v1"}
	if err := c.Apply(l, 11); err != nil {
		t.Fatal(err)
	}
	pend, _ := ppo.Preset("Pendulum-v1")
	g := l.Config
	if g.PolicySteps != 128 || g.Episodes != 8 || g.ConfirmEpisodes != 16 || g.MaxIter != 7 || g.Tolerance != 2.5 || g.Optimizer != "adam" ||
		g.LearningRate != 0.02 || g.Seed != 11 || l.Temperature != 0.3 || l.L2 == nil || *l.L2 != 0 {
		t.Errorf("config %+v, τ %v, λ %v", g, l.Temperature, l.L2)
	}
	if g.PPO.NSteps != 64 || !slices.Equal(g.PPO.Hidden, []int{16}) || g.PPO.NEnvs != pend.NEnvs || g.PPO.Gamma != pend.Gamma || g.PPO.LearningRate != pend.LearningRate {
		t.Errorf("ppo %+v, want Pendulum-v1's preset (n_envs %d, gamma %v) with n_steps 64 and hidden [16]", g.PPO, pend.NEnvs, pend.Gamma)
	}
	// CartPole's preset has linear schedules, which are turned off; an env without a preset gets sb3's.
	for env, want := range map[string]string{"CartPole-v1": "CartPole-v1", "LunarLander-v3": "sb3"} {
		pc, err := SampleConfig{}.SamplePPO(env)
		base, _ := ppo.Preset(want)
		if err != nil || pc.LinearLR || pc.LinearClip || pc.NEnvs != base.NEnvs || pc.NSteps != base.NSteps {
			t.Errorf("%s: ppo %+v (%v), want preset %s without schedules", env, pc, err, want)
		}
	}
	// An empty file is every default.
	if c, err := DecodeSampleConfig(nil); err != nil || c.Temperature != 0 || c.L2 != nil {
		t.Errorf("empty file: %+v, %v", c, err)
	}
	for _, tc := range []struct{ text, want string }{
		{"episodes: 8\nepisode: 3\n", "line 2: episode: unknown key (known: policy_steps, episodes,"},
		{"ppo:\n  n_step: 64\n", "line 2: ppo.n_step: unknown key (known: n_envs, n_steps,"},
		{"episodes: 0\n", "line 1: episodes: 0, want ≥ 2 (leave the key out for 64)"},
		{"temperature: 0\n", "line 1: temperature: 0, want τ > 0"},
		{"l2: -1\n", "l2: -1, want a finite λ ≥ 0"},
		{"l2: .inf\n", "l2: +Inf, want a finite λ ≥ 0"},
		{"temperature: .nan\n", "temperature: NaN, want a finite τ > 0"},
		{"ppo: 3\n", "line 1: ppo: want a mapping"},
		{"- 1\n", "line 1: want a mapping of settings"},
		{"episodes: many\n", "cannot unmarshal"},
	} {
		if _, err := DecodeSampleConfig([]byte(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.text, err, tc.want)
		}
	}
	for _, tc := range []struct {
		c    SampleConfig
		want string
	}{
		{SampleConfig{PPOPreset: "nope"}, `ppo_preset: ppo: unknown preset "nope"`},
		{mustSampleConfig(t, "ppo:\n  normalize_reward: true\n"), "ppo.normalize_reward: true rescales the learned reward"},
		{mustSampleConfig(t, "ppo:\n  linear_lr: true\n"), "linear_lr and linear_clip need a fixed budget"},
		{mustSampleConfig(t, "episodes: 8\nconfirm_episodes: 4\n"), "confirm_episodes = 4, want ≥ episodes (8)"},
		{SampleConfig{Optimizer: "lbfgs"}, `optimizer "lbfgs"`},
	} {
		if err := tc.c.Apply(&SampleLearner{Env: "Pendulum-v1"}, 0); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.c, err, tc.want)
		}
	}
}

func mustSampleConfig(t *testing.T, text string) SampleConfig {
	t.Helper()
	c, err := DecodeSampleConfig([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSampleClientsFederate: two sample-based clients on Pendulum-v1 with
// different physics (the paper's clients 0 and 4) join a control task
// through a real federation (the coordinator and RunClient, in process),
// submit θ learnt in their own simulators, and receive the fused θ of
// mean fusion, which is the mean of their θ computed here.
func TestSampleClientsFederate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	spec, _ := pendulumTask(t, "pend-mean", `{"temperature": 1}`, `{"method": "mean"}`, 2)
	var clients []federation.LocalClient
	for _, c := range []int{0, 4} {
		clients = append(clients, federation.LocalClient{ID: fmt.Sprintf("robot%d", c), Learner: &SampleLearner{
			Env: "Pendulum-v1", MakeEnv: pendulumMaker(c), Demos: pendulumDemos(t, c, 2), Config: tinySampleConfig()}})
	}
	fused, reps, err := federation.RunInProcess(ctx, spec, clients, federation.InProcessConfig{Fuser: NewFuser()})
	if err != nil {
		t.Fatal(err)
	}
	a, b := reps[0].Rounds[0].Local.Theta, reps[1].Rounds[0].Local.Theta
	if len(a) != spec.ThetaDim || slices.Equal(a, b) {
		t.Fatalf("local θ %v and %v: want two different θ of %d components", a, b, spec.ThetaDim)
	}
	if fused[0].Method != fusion.MethodMean || len(fused[0].Clients) != 2 {
		t.Errorf("fused by %q from %v", fused[0].Method, fused[0].Clients)
	}
	for j := range a {
		if want := (a[j] + b[j]) / 2; math.Abs(fused[0].Theta[j]-want) > 1e-15*math.Max(1, math.Abs(want)) {
			t.Errorf("fused θ[%d] = %v, the mean of the clients' %v and %v is %v", j, fused[0].Theta[j], a[j], b[j], want)
		}
	}
	for _, r := range reps {
		if !slices.Equal(r.Final.Theta, fused[0].Theta) {
			t.Errorf("client %s received %v, the server fused %v", r.ClientID, r.Final.Theta, fused[0].Theta)
		}
		if l := r.Rounds[0].Local; l.DemoCount != 2 || l.Iterations < 1 || l.StopReason == "" {
			t.Errorf("client %s local result %+v", r.ClientID, l)
		}
	}
}
