package sampleirl

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

// TestRewardNetGradient: ∇_w r_w against central finite differences of
// Reward, for both activations, on a Discrete and a Box step.
func TestRewardNetGradient(t *testing.T) {
	for _, act := range []string{"tanh", "relu"} {
		for _, sp := range []envs.Space{{N: 3}, {Low: []float64{-1, -1}, High: []float64{1, 1}}} {
			obs := envs.Space{Low: []float64{-1, -1, -1}, High: []float64{1, 1, 1}}
			r, err := NewRewardNet(StateActionInput(obs, sp), NetConfig{Hidden: []int{5, 4}, Activation: act, OutputGain: 1}, 3)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for j := range r.Net.Params { // biases away from zero, so ReLU kinks are not at the evaluation point
				r.Net.Params[j] += 0.1 * rng.NormFloat64()
			}
			o := []float64{0.3, -0.7, 0.2}
			a := []float64{2}
			if !sp.IsDiscrete() {
				a = []float64{0.4, -0.1}
			}
			v, g := r.Grad(make([]float64, r.NumWeights()), o, a, nil, false)
			if v != r.Reward(o, a, nil, false) {
				t.Fatalf("Grad's value %v, Reward's %v", v, r.Reward(o, a, nil, false))
			}
			const h = 1e-6
			worst := 0.0
			for j := range r.Net.Params {
				w := r.Net.Params[j]
				r.Net.Params[j] = w + h
				up := r.Reward(o, a, nil, false)
				r.Net.Params[j] = w - h
				dn := r.Reward(o, a, nil, false)
				r.Net.Params[j] = w
				worst = math.Max(worst, math.Abs((up-dn)/(2*h)-g[j]))
			}
			t.Logf("%s, %v actions: max |∇ − finite difference| = %.2g over %d weights", act, sp, worst, r.NumWeights())
			if worst > 1e-7 {
				t.Errorf("%s, action space %v: gradient differs from finite differences by %.3g", act, sp, worst)
			}
		}
	}
}

// TestRewardNetLayout: the reward equals a forward pass written out from
// the documented weight layout (per layer W_l row-major out×in, then b_l),
// and one seed gives one initialisation.
func TestRewardNetLayout(t *testing.T) {
	in := FeatureFunc{D: 3, F: func(dst, o, _, _ []float64, _ bool) []float64 { return append(dst[:0], o...) }}
	r, err := NewRewardNet(in, NetConfig{Hidden: []int{4}, OutputGain: 1}, 9)
	if err != nil {
		t.Fatal(err)
	}
	w := r.Weights()
	if len(w) != 4*3+4+4+1 {
		t.Fatalf("%d weights, want 21", len(w))
	}
	x := []float64{0.5, -1, 2}
	out := w[4*3+4+4] // b_1
	for o := 0; o < 4; o++ {
		s := w[12+o] // b_0[o]
		for k := 0; k < 3; k++ {
			s += w[o*3+k] * x[k]
		}
		out += w[16+o] * math.Tanh(s)
	}
	if got := r.Reward(x, nil, nil, false); math.Abs(got-out) > 1e-14 {
		t.Errorf("Reward = %v, the layout's forward pass %v", got, out)
	}
	r2, _ := NewRewardNet(in, NetConfig{Hidden: []int{4}, OutputGain: 1}, 9)
	r3, _ := NewRewardNet(in, NetConfig{Hidden: []int{4}, OutputGain: 1}, 10)
	if !slices.Equal(r2.Weights(), w) || slices.Equal(r3.Weights(), w) {
		t.Error("seed 9 twice must give one initialisation, seed 10 another")
	}
	if err := r.SetWeights(w[:3]); !errors.Is(err, ErrInput) {
		t.Errorf("SetWeights of 3 weights: %v", err)
	}
}

// TestDiscriminatorGradient: the reward step's gradient ∇_w L of AIRL's
// loss (with weight decay) against central finite differences of L.
func TestDiscriminatorGradient(t *testing.T) {
	obs := envs.Space{Low: []float64{-1, -1}, High: []float64{1, 1}}
	r, err := NewRewardNet(StateActionInput(obs, envs.Space{N: 2}), NetConfig{Hidden: []int{6}, OutputGain: 1}, 4)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	mk := func(n int) *steps {
		b := &steps{starts: []int{0, n / 2, n}}
		for range n {
			b.x = append(b.x, rng.NormFloat64(), rng.NormFloat64(), 0, 0)
			b.x[len(b.x)-2+rng.IntN(2)] = 1
			b.logp = append(b.logp, -rng.Float64()*2)
			b.disc = append(b.disc, 1)
		}
		return b
	}
	d := newDiscriminator(r, mk(7), mk(9))
	const l2 = 0.03
	w := r.Net.Params
	_, g := d.gradient(l2, w)
	g = slices.Clone(g)
	lossAt := func() float64 { d.forward(); l, _, _ := d.loss(l2, w); return l }
	const h = 1e-6
	worst := 0.0
	for j := range w {
		v := w[j]
		w[j] = v + h
		up := lossAt()
		w[j] = v - h
		dn := lossAt()
		w[j] = v
		worst = math.Max(worst, math.Abs((up-dn)/(2*h)-g[j]))
	}
	t.Logf("max |∇L − finite difference| = %.2g over %d weights", worst, len(w))
	if worst > 1e-8 {
		t.Errorf("∇L differs from finite differences by %.3g", worst)
	}
}

// mlpTestConfig is a small LearnMLP configuration for the 4×4 grid.
func mlpTestConfig(seed uint64) MLPConfig {
	return MLPConfig{Config: Config{PPO: testPPO(), Seed: seed, Gamma: gamma, PolicySteps: 1024, Episodes: 64, MaxIter: 30},
		Net: NetConfig{Hidden: []int{16}}, RewardSteps: 20}
}

// rewardOnGrid returns the network's reward at every (s, a) of the grid.
func rewardOnGrid(p *problem, r *RewardNet) []float64 {
	S, A := p.m.NumStates, p.m.NumActions
	out := make([]float64, S*A)
	o := make([]float64, S)
	for s := range S {
		clear(o)
		o[s] = 1
		for a := range A {
			out[s*A+a] = r.Reward(o, []float64{float64(a)}, nil, false)
		}
	}
	return out
}

// normalizedValueOf plans greedily with the reward r (one value per (s, a))
// in the exact model and returns its true value, 0 for the uniform policy
// and 1 for the optimal one.
func (p *problem) normalizedValueOf(r []float64) float64 {
	ws := mdp.NewWorkspace(p.m, mdp.Options{})
	defer ws.Close()
	rTrue := p.reward(p.theta)
	greedy := func(r []float64) *mdp.Policy {
		return ws.SoftPolicy(nil, ws.ValueIteration(nil, r), 0)
	}
	opt := ws.Return(greedy(rTrue), rTrue)
	unif := ws.Return(mdp.NewPolicy(p.m), rTrue)
	return (ws.Return(greedy(r), rTrue) - unif) / (opt - unif)
}

func mlpBits(r MLPResult) []uint64 {
	var b []uint64
	for _, v := range slices.Concat(r.Weights, r.DiscriminatorWeights, r.Policy.Actor.Params, r.Policy.Critic.Params) {
		b = append(b, math.Float64bits(v))
	}
	for _, h := range r.History {
		for _, v := range []float64{h.Gap, h.GapSE, h.Loss, h.LossBefore, h.DemoLogOdds, h.PolicyLogOdds, h.ConfirmGap, h.ConfirmSE} {
			b = append(b, math.Float64bits(v))
		}
	}
	return b
}

// runMLP runs LearnMLP on the grid's demonstrations.
func runMLP(t *testing.T, ctx context.Context, p *problem, cfg MLPConfig) (MLPResult, error) {
	t.Helper()
	return LearnMLP(ctx, p.maker(), nil, p.demos, cfg)
}

// TestLearnMLPTeachesTheExpertsBehaviour: on the 4×4 grid with 200
// demonstrations of the soft-optimal policy of a known reward, planning
// greedily in the exact model with the learned MLP reward (on one-hot (s, a))
// must be nearly as good under the true reward as planning with the true
// reward itself (normalized value ≥ 0.85; 0 is the uniform policy's), where
// the network's seeded initialisation is not (≤ 0.2). Measured (Adam at the
// default 3e-3), seeds 1, 3 and 5 after 10 iterations (10k PPO steps, ≈2 s
// each): 0.998 each, against 0.04–0.13 at initialisation (at learning rate
// 1e-3: 0.917–0.993; at 1e-2 the game is unstable: 0.39–0.998).
func TestLearnMLPTeachesTheExpertsBehaviour(t *testing.T) {
	p := newProblem(t, 200)
	for _, seed := range []uint64{1, 3} {
		cfg := mlpTestConfig(seed)
		cfg.MaxIter = 10
		res, err := runMLP(t, context.Background(), p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		init, err := NewRewardNet(StateActionInput(p.maker0Spaces()), cfg.Net, seed)
		if err != nil {
			t.Fatal(err)
		}
		v, v0 := p.normalizedValueOf(rewardOnGrid(p, res.Net)), p.normalizedValueOf(rewardOnGrid(p, init))
		t.Logf("seed %d: %d iterations, %d PPO steps, gap %.3f (SE %.3f), normalized value %.3f (initial network %.3f); %s", seed, res.Iterations, res.EnvSteps, res.Gap, res.GapSE, v, v0, res.StopReason)
		if v < 0.85 {
			t.Errorf("seed %d: the learned reward's normalized value is %.3f, want ≥ 0.85", seed, v)
		}
		if v0 > 0.2 {
			t.Errorf("seed %d: the initial network already reaches %.3f: the test shows nothing", seed, v0)
		}
		if !slices.Equal(res.Weights, res.Net.Weights()) || len(res.History) != res.Iterations {
			t.Errorf("seed %d: Result.Net does not hold Result.Weights, or the history is short", seed)
		}
	}
}

// TestLearnMLPStopsWhenDemosAreThePolicy: demonstrations drawn from the
// very policy the learner's first iteration trains (PPO seeded as the
// learner seeds it, from a fresh start, on the initial network's reward)
// cannot be told from it, so the learner must stop at iteration 1 with
// Converged; demonstrations of the expert (previous test) must not stop it
// there. Measured with the held-out rule (40 of the 200 demonstrations
// held out), seeds 1, 3, 5: 7.0, 8.1 and 5.3 standard errors at iteration
// 1 (the training-data statistic the rule used before: 8.0, 10.3 and 4.1).
// With Adam at 1e-3 the training-data gaps were 5.3, 11.3 and 2.1, which is
// why the default is 3e-3: a weak witness is a lenient test.
func TestLearnMLPStopsWhenDemosAreThePolicy(t *testing.T) {
	p := newProblem(t, 200)
	cfg := mlpTestConfig(5)
	cfg.MaxIter = 1
	rc, err := cfg.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	net, err := NewRewardNet(StateActionInput(p.maker0Spaces()), rc.Net, rc.Seed)
	if err != nil {
		t.Fatal(err)
	}
	seed := rand.New(rand.NewPCG(rc.Seed, streamPPOIter+1)).Uint64()
	tr, err := ppo.NewTrainer(rc.PPO, p.maker(), ppo.Options{Seed: seed, Reward: net.Reward})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Learn(context.Background(), rc.PolicySteps); err != nil {
		t.Fatal(err)
	}
	demos := policyEpisodes(t, p, tr.Policy(), 500, 11)
	res, err := LearnMLP(context.Background(), p.maker(), nil, demos, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("own policy's episodes: converged=%v gap %.4f SE %.4f; %s", res.Converged, res.Gap, res.GapSE, res.StopReason)
	if !res.Converged || res.Iterations != 1 {
		t.Errorf("converged=%v after %d iterations, want true after 1 (%s)", res.Converged, res.Iterations, res.StopReason)
	}
	res, err = runMLP(t, context.Background(), p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("expert's episodes: converged=%v gap %.4f SE %.4f", res.Converged, res.Gap, res.GapSE)
	if res.Converged {
		t.Errorf("the expert's demonstrations stopped the learner at iteration 1 (%s)", res.StopReason)
	}
}

// policyEpisodes samples n episodes of pol on the grid.
func policyEpisodes(t *testing.T, p *problem, pol *ppo.Policy, n int, seed uint64) []Trajectory {
	t.Helper()
	env, _ := p.maker()(0)
	rng := rand.New(rand.NewPCG(seed, 12))
	act := make([]float64, 1)
	var demos []Trajectory
	for range n {
		var d Trajectory
		obs := slices.Clone(env.Reset(rng.Uint64()))
		for {
			pol.Act(act, obs, rng)
			next, _, term, trunc := env.Step(act)
			d.Obs, d.Actions = append(d.Obs, obs), append(d.Actions, slices.Clone(act))
			obs = slices.Clone(next)
			if term || trunc {
				break
			}
		}
		demos = append(demos, Trajectory{Obs: append(d.Obs, obs), Actions: d.Actions})
	}
	return demos
}

// TestLearnMLPDeterministic: the same seed gives the same bytes (weights,
// policy, history) with one or two PPO update goroutines; another seed
// gives other weights.
func TestLearnMLPDeterministic(t *testing.T) {
	p := newProblem(t, 100)
	run := func(seed uint64, workers int) MLPResult {
		cfg := mlpTestConfig(seed)
		cfg.MaxIter, cfg.Workers, cfg.PolicySteps = 3, workers, 512
		res, err := runMLP(t, context.Background(), p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, c := run(3, 1), run(3, 2), run(4, 1)
	if !slices.Equal(mlpBits(a), mlpBits(b)) {
		t.Error("seed 3: one and two workers gave different bytes")
	}
	if slices.Equal(a.Weights, c.Weights) {
		t.Error("seeds 3 and 4 gave the same weights")
	}
}

// TestLearnMLPResume: a run cancelled after iteration 2 and resumed from
// its checkpoints returns the same bytes as the uninterrupted run; resuming
// a finished run returns its result without training; a checkpoint written
// with another configuration or other demonstrations is refused.
func TestLearnMLPResume(t *testing.T) {
	p := newProblem(t, 100)
	base := mlpTestConfig(6)
	base.MaxIter, base.PolicySteps = 4, 512
	full, err := runMLP(t, context.Background(), p, base)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cut := base
	cut.CheckpointDir = dir
	cut.OnIteration = func(it MLPIteration) {
		if it.Index == 2 {
			cancel()
		}
	}
	if _, err := runMLP(t, ctx, p, cut); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, mlpCheckpointName(3))); err == nil {
		t.Fatal("the cancelled run wrote iteration 3")
	}
	res := base
	res.CheckpointDir, res.Resume = dir, true
	ran := 0
	res.OnIteration = func(MLPIteration) { ran++ }
	resumed, err := runMLP(t, context.Background(), p, res)
	if err != nil {
		t.Fatal(err)
	}
	if ran != 2 {
		t.Errorf("the resumed run ran %d iterations, want 2 (3 and 4)", ran)
	}
	if !slices.Equal(mlpBits(full), mlpBits(resumed)) || full.StopReason != resumed.StopReason || full.EnvSteps != resumed.EnvSteps || full.EvalSteps != resumed.EvalSteps {
		t.Errorf("resumed run differs from the uninterrupted one: %s vs %s", resumed.StopReason, full.StopReason)
	}
	ran = 0
	again, err := runMLP(t, context.Background(), p, res)
	if err != nil {
		t.Fatal(err)
	}
	if ran != 0 || !slices.Equal(mlpBits(full), mlpBits(again)) {
		t.Errorf("resuming a finished run trained %d iterations or changed the result", ran)
	}
	other := res
	other.RewardSteps = 7
	if _, err := runMLP(t, context.Background(), p, other); !errors.Is(err, ErrInput) {
		t.Errorf("another configuration: err = %v, want ErrInput", err)
	}
	if _, err := LearnMLP(context.Background(), p.maker(), nil, p.demos[:50], res); !errors.Is(err, ErrInput) {
		t.Errorf("other demonstrations: err = %v, want ErrInput", err)
	}
}

// TestLearnMLPBadInput: bad settings and demonstrations are errors wrapping
// ErrInput, never a panic.
func TestLearnMLPBadInput(t *testing.T) {
	p := newProblem(t, 10)
	bad := slices.Clone(p.demos)
	bad[2] = Trajectory{Obs: bad[2].Obs, Actions: slices.Clone(bad[2].Actions)}
	bad[2].Actions[1] = []float64{4}
	half := slices.Clone(p.demos)
	half[1] = Trajectory{Obs: half[1].Obs, Actions: slices.Clone(half[1].Actions)}
	half[1].Actions[0] = []float64{1.5}
	for _, tc := range []struct {
		name  string
		demos []Trajectory
		cfg   func(*MLPConfig)
	}{
		{"action out of range", bad, nil},
		{"fractional action", half, nil},
		{"no demonstrations", nil, nil},
		{"theta0 length", p.demos, func(c *MLPConfig) { c.Theta0 = []float64{1, 2} }},
		{"hidden width 0", p.demos, func(c *MLPConfig) { c.Net.Hidden = []int{0} }},
		{"identity activation", p.demos, func(c *MLPConfig) { c.Net.Activation = "identity" }},
		{"negative output gain", p.demos, func(c *MLPConfig) { c.Net.OutputGain = -1 }},
		{"reward steps", p.demos, func(c *MLPConfig) { c.RewardSteps = -3 }},
		{"linear learner's callback", p.demos, func(c *MLPConfig) { c.Config.OnIteration = func(Iteration) {} }},
		{"resume without a directory", p.demos, func(c *MLPConfig) { c.Resume = true }},
		{"holdout of 1", p.demos, func(c *MLPConfig) { c.Holdout = 1 }},
		{"negative holdout", p.demos, func(c *MLPConfig) { c.Holdout = -0.1 }},
		{"one demonstration", p.demos[:1], nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mlpTestConfig(1)
			cfg.MaxIter = 1
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			_, err := LearnMLP(context.Background(), p.maker(), nil, tc.demos, cfg)
			if !errors.Is(err, ErrInput) {
				t.Fatalf("err = %v, want ErrInput", err)
			}
			t.Log(err)
		})
	}
}

func (p *problem) maker0Spaces() (envs.Space, envs.Space) {
	e, _ := p.maker()(0)
	return e.ObservationSpace(), e.ActionSpace()
}
