package control

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/lunar"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// heuristicEpisodes plays n episodes of Gymnasium's heuristic controller on
// LunarLanderContinuous client 0 (seeds base, base+1, …) with every action
// held for hold frames (a step of envs.FrameSkip), each action replaced
// with probability eps by a uniform random one, and returns them as replay
// episodes and as demonstrations.
func heuristicEpisodes(n, hold int, base uint64, eps float64, rng *rand.Rand, stateOf func(dst, obs []float64) []float64) ([]discretize.Episode, *Demos) {
	e, err := newHoldSim(hold)
	if err != nil {
		panic(err)
	}
	var out []discretize.Episode
	d := &Demos{}
	for k := range n {
		rec := discretize.Episode{Seed: base + uint64(k)}
		obs := e.Reset(rec.Seed)
		rec.States = append(rec.States, stateOf(make([]float64, 8), obs))
		term := false
		for {
			act := lunar.Heuristic(make([]float64, 2), obs, true)
			if rng.Float64() < eps {
				act[0], act[1] = 2*rng.Float64()-1, 2*rng.Float64()-1
			}
			o, r, tm, trunc := e.Step(act)
			obs, term = o, tm
			rec.Actions = append(rec.Actions, act)
			rec.States = append(rec.States, stateOf(make([]float64, 8), obs))
			rec.Rewards = append(rec.Rewards, r)
			d.Rews = append(d.Rews, r)
			if term || trunc {
				rec.Terminated = term
				break
			}
		}
		out = append(out, rec)
		d.States = append(d.States, rec.States...)
		d.Acts = append(d.Acts, rec.Actions...)
		d.Terminal = append(d.Terminal, term)
		d.Lengths = append(d.Lengths, len(rec.Actions))
	}
	return out, d
}

// lunarBenchEnv is the environment of the LunarLander benchmarks.
const lunarBenchEnv = "LunarLanderContinuous-v3"

// lunarBenchSetup returns what both LunarLander benchmarks start from: a
// study of cfg, the environment's control task, its first lattice preset's
// grid and features, and client 0's lattice-model settings at cfg's seed.
func lunarBenchSetup(b *testing.B, cfg Config) (*Study, *tasks.ControlEnv, *discretize.Grid, *mat.Dense, discretize.ModelConfig) {
	b.Helper()
	s := &Study{cfg: cfg}
	ce, err := tasks.LookupControl(lunarBenchEnv)
	if err != nil {
		b.Fatal(err)
	}
	p, err := s.probe(lunarBenchEnv, cfg.Lattices[lunarBenchEnv][0])
	if err != nil {
		b.Fatal(err)
	}
	g, phi, err := p.Features()
	if err != nil {
		b.Fatal(err)
	}
	return s, ce, g, phi, s.modelConfig(lunarBenchEnv, 0, cfg.Seed)
}

// BenchmarkLunarLocalFit times one client's local IRL on LunarLander's
// default lattice and feature set as the default study runs it: the replay
// model (model_rollouts: its ε-greedy rollouts, K clones per visited cell
// and action, its successor rule and halt reward; env.<id>.frame_skip
// frames per lattice step), with the client's own feature rows and μ_D
// from the demonstrations' own steps where the features are of the
// observed step (held_step, the default), and MaxEnt
// under the well-posed protocol (the irl.optimizer to irl.grad_tol or
// irl_iterations, the horizon irl.horizon gives, the environment's
// absorbing setting).
// Gymnasium's heuristic controller stands in for the PPO expert (rollouts
// and 20 deterministic demonstrations), so the benchmark needs no training.
// Sub-benchmarks: the default lattice and `fine` (8⁴·3·1³, issue 36's
// "LunarLander fine fit").
// Reported: model-s and fit-s (wall), iterations, grad-norm, converged (1
// when ‖∇‖ ≤ irl.grad_tol), horizon, and the model's cloned cells and
// simulator steps.
func BenchmarkLunarLocalFit(b *testing.B) {
	for _, lattice := range []string{DefaultConfig().Lattices[lunarBenchEnv][0], "fine"} {
		b.Run(lattice, func(b *testing.B) { benchLunarLocalFit(b, lattice) })
	}
}

func benchLunarLocalFit(b *testing.B, lattice string) {
	const env = lunarBenchEnv
	cfg := DefaultConfig()
	cfg.Lattices[env] = []string{lattice}
	s, ce, g, phi, mc := lunarBenchSetup(b, cfg)
	p, err := s.probe(env, lattice)
	if err != nil {
		b.Fatal(err)
	}
	h, err := s.horizon(env)
	if err != nil {
		b.Fatal(err)
	}
	rc := cfg.ModelRollouts
	rng := rand.New(rand.NewPCG(1, 2))
	hold := s.frameSkip(env)
	rollouts, _ := heuristicEpisodes(rc.Episodes, hold, 1000, rc.Epsilon, rng, ce.StateOf)
	_, demos := heuristicEpisodes(cfg.EpisodesPerClient, hold, 5000, 0, rng, ce.StateOf)
	trajs, err := demos.Trajectories(g)
	if err != nil {
		b.Fatal(err)
	}
	newSim := func() (discretize.Replayer, error) { return newHoldSim(hold) }
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		m, r, f, st, err := discretize.ReplayModelSteps(context.Background(), g, newSim, ce.StateOf, slices.Clone(rollouts), rc.replayConfig(mc), 0,
			stepFeatures(p.RBF, g))
		if err != nil {
			b.Fatal(err)
		}
		phiC := phi
		if f != nil { // the client's own rows, as latticeModel gives them
			phiC = clientFeatures(phi, f, discretize.ObservedPairs(m, r, rc.HaltReward))
		}
		modelS := time.Since(start).Seconds()
		m.Horizon = h
		start = time.Now()
		ic := cfg.IRL
		icfg := irl.Config{LearningRate: ic.LearningRate, Temperature: ic.Temperature,
			L2: ic.L2, MaxIter: cfg.Env[env].IRLIterations, Optimizer: ic.Optimizer, GradTol: ic.GradTol, Absorbing: cfg.Env[env].absorbing(ic),
			Solver: mdp.Options{Tol: ic.SolverTol, Anderson: ic.Anderson, Newton: ic.Solver == "newton"}}
		if p.RBF.StepDependent() { // μ_D from the demonstrations' own steps, as irlProblem
			icfg.EmpiricalFeatures = demoStepFeatures(p.RBF, demos, g.StateDim(), m.Gamma, trajs)
		}
		res, err := irl.MaxEnt(context.Background(), m, phiC, trajs, icfg)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(modelS, "model-s")
		b.ReportMetric(time.Since(start).Seconds(), "fit-s")
		b.ReportMetric(float64(res.Iterations), "iterations")
		b.ReportMetric(res.GradNorm[len(res.GradNorm)-1], "grad-norm")
		conv := 0.0
		if res.Converged {
			conv = 1
		}
		b.ReportMetric(conv, "converged")
		b.ReportMetric(float64(h), "horizon")
		b.ReportMetric(float64(st.Cells), "cells")
		b.ReportMetric(float64(st.Unexpanded), "unexpanded")
		b.ReportMetric(float64(st.Steps), "sim-steps")
	}
}

// newHoldSim returns client 0's simulator with every action held for hold
// frames (envs.FrameSkip, the study's env.<id>.frame_skip).
func newHoldSim(hold int) (*envs.FrameSkip, error) {
	e, err := lunar.New(lunar.ClientParams(true, 0))
	if err != nil {
		return nil, err
	}
	return envs.NewFrameSkip(e, hold)
}

// BenchmarkLunarPlanner measures rung (a) of LunarLander's ladder for
// client 0 under variants of the lattice and the replay model: the
// true-reward lattice planner's mean return over 10 episodes of the real
// simulator (planner-return) and the fraction of them ending in a landing
// (planner-landed), beside Gymnasium's heuristic controller on the same
// reset seeds (heuristic-return, heuristic-landed: the stand-in expert
// whose ε-greedy rollouts, 200 of them with ε = 0.3 unless the variant
// says otherwise, the model is built from) and a uniform random policy
// (random-return). Every variant starts from the paper lattice (5⁴·1⁴ × 9)
// and the replay model with K 8, nearest successors and self-loops on
// never-cloned cells; its name says what it changes:
//   - holdN: a lattice step holds its action for N frames
//     (env.<id>.frame_skip; in the rollouts, the clones, the planner and
//     the two references alike, γ^N per lattice step);
//   - angleN: N points on angle and on angular velocity (env.bins; angle5 is
//     the lander lattice); pad: the non-uniform padLattice;
//   - crash: a never-cloned cell ends the episode with −100
//     (model_rollouts.halt_reward);
//   - count, expandN: model_rollouts.count, model_rollouts.expand N;
//   - disp, multi: model_rollouts.successor displacement, multilinear;
//   - a trailing number of rollouts (1000, 3000: model_rollouts.episodes);
//     e50: 50 episodes per policy instead of 10.
//
// angle5hold8crashdisp1000 is the study's default LunarLander model
// (lander lattice, frame_skip 8, presets.go's lunarRollouts). A variant
// takes half a minute to several minutes of CPU: -benchtime 1x.
func BenchmarkLunarPlanner(b *testing.B) {
	for _, v := range []lunarVariant{{name: "replay"}, {name: "count", count: true}, {name: "hold2", hold: 2},
		{name: "hold4", hold: 4}, {name: "hold8", hold: 8}, {name: "hold4count", hold: 4, count: true},
		{name: "expand2", expand: 2}, {name: "crash", crash: true},
		{name: "angle5", angle: 5}, {name: "angle5hold4", hold: 4, angle: 5}, {name: "angle5hold4crash", hold: 4, crash: true, angle: 5},
		{name: "angle5hold4expand1", hold: 4, expand: 1, angle: 5}, {name: "angle9hold4", hold: 4, angle: 9},
		{name: "angle9hold4crash", hold: 4, crash: true, angle: 9},
		{name: "angle5hold8crash", hold: 8, crash: true, angle: 5},
		{name: "angle5hold8crash1000", hold: 8, crash: true, angle: 5, episodes: 1000},
		{name: "angle5hold8crash3000", hold: 8, crash: true, angle: 5, episodes: 3000},
		{name: "angle7hold8crash3000", hold: 8, crash: true, angle: 7, episodes: 3000},
		{name: "angle5hold8crashdisp", hold: 8, crash: true, angle: 5, successor: discretize.SuccessorDisplacement},
		{name: "angle5hold8crashmulti", hold: 8, crash: true, angle: 5, successor: discretize.SuccessorMultilinear},
		{name: "angle5hold4crashdisp", hold: 4, crash: true, angle: 5, successor: discretize.SuccessorDisplacement},
		{name: "angle5hold8crashdisp1000", hold: 8, crash: true, angle: 5, episodes: 1000, successor: discretize.SuccessorDisplacement},
		{name: "hold8disp", hold: 8, successor: discretize.SuccessorDisplacement},
		{name: "angle5hold8disp", hold: 8, angle: 5, successor: discretize.SuccessorDisplacement},
		{name: "padhold8crashdisp", hold: 8, crash: true, pad: true, successor: discretize.SuccessorDisplacement},
		{name: "angle5hold8crashdisp1000e50", hold: 8, crash: true, angle: 5, episodes: 1000, successor: discretize.SuccessorDisplacement, evalEpisodes: 50},
		{name: "padhold8", hold: 8, pad: true}, {name: "padhold8crash", hold: 8, crash: true, pad: true},
		{name: "padhold8disp", hold: 8, pad: true, successor: discretize.SuccessorDisplacement},
	} {
		b.Run(v.name, func(b *testing.B) { benchLunarPlanner(b, v) })
	}
}

// lunarVariant is one variant of BenchmarkLunarPlanner: the frames each
// action is held (hold, 0 = 1), the replay model's expand and count, the
// crash rule, the number of points on angle and angular velocity (angle, 0
// = the lattice's 1) and the rollouts (episodes, 0 = model_rollouts.episodes).
type lunarVariant struct {
	name            string
	hold, expand    int
	count, crash    bool
	angle, episodes int
	successor       string
	// pad replaces the lattice's state axes with padLattice.
	pad bool
	// evalEpisodes is the number of episodes each policy plays (0: 10).
	evalEpisodes int
}

// padLattice is a non-uniform LunarLander state lattice, finer near the pad
// (x and y near 0), near rest (small velocities) and near upright, with
// both leg contacts: 5·6·5·5·5·5·2·2 = 75,000 cells.
var padLattice = []discretize.AxisSpec{
	{Name: "ll-x", N: 5, Coords: []float64{-0.6, -0.25, 0, 0.25, 0.6}},
	{Name: "ll-y", N: 6, Coords: []float64{0, 0.1, 0.25, 0.5, 0.9, 1.4}},
	{Name: "ll-vx", N: 5, Coords: []float64{-0.6, -0.25, 0, 0.25, 0.6}},
	{Name: "ll-vy", N: 5, Coords: []float64{-1.2, -0.6, -0.3, -0.1, 0.1}},
	{Name: "ll-angle", N: 5, Coords: []float64{-0.3, -0.1, 0, 0.1, 0.3}},
	{Name: "ll-angvel", N: 5, Coords: []float64{-0.4, -0.15, 0, 0.15, 0.4}},
	{Name: "ll-leg1", N: 2, Categorical: true}, {Name: "ll-leg2", N: 2, Categorical: true},
}

func benchLunarPlanner(b *testing.B, v lunarVariant) {
	const env = lunarBenchEnv
	hold, expand, count, crash := max(v.hold, 1), v.expand, v.count, v.crash
	cfg := DefaultConfig()
	// The variants start from the paper lattice and the model of 200
	// rollouts, nearest successors and self-loops on unknown cells (the
	// defaults before the lander settings).
	cfg.Lattices = map[string][]string{env: {"paper"}}
	cfg.ModelRollouts = RolloutConfig{Episodes: 200, Epsilon: 0.3, Clones: 8}
	ec := cfg.Env[env]
	ec.FrameSkip = hold // the model's γ per lattice step: γ^hold (Study.modelConfig)
	if v.angle > 1 {
		ec.Bins = map[string]int{"ll-angle": v.angle, "ll-angvel": v.angle}
	}
	cfg.Env = map[string]EnvConfig{env: ec}
	if v.episodes > 0 {
		cfg.ModelRollouts.Episodes = v.episodes
	}
	_, ce, g, _, mc := lunarBenchSetup(b, cfg)
	if v.pad {
		spec := g.Spec
		spec.State = padLattice
		var err error
		if g, err = discretize.New(spec); err != nil {
			b.Fatal(err)
		}
	}
	rc := cfg.ModelRollouts
	sim, err := newHoldSim(hold)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var eps []discretize.Episode
	for k := range rc.Episodes {
		rec := discretize.Episode{Seed: 1000 + uint64(k)}
		obs := sim.Reset(rec.Seed)
		rec.States = append(rec.States, ce.StateOf(make([]float64, 8), obs))
		for {
			act := lunar.Heuristic(make([]float64, 2), obs, true)
			if rng.Float64() < rc.Epsilon {
				act[0], act[1] = 2*rng.Float64()-1, 2*rng.Float64()-1
			}
			o, r, term, trunc := sim.Step(act)
			obs = o
			rec.Actions = append(rec.Actions, act)
			rec.States = append(rec.States, ce.StateOf(make([]float64, 8), obs))
			rec.Rewards = append(rec.Rewards, r)
			if term || trunc {
				rec.Terminated = term
				break
			}
		}
		eps = append(eps, rec)
	}
	gamma := mc.Gamma
	newSim := func() (discretize.Replayer, error) { return newHoldSim(hold) }
	episodes := 10
	if v.evalEpisodes > 0 {
		episodes = v.evalEpisodes
	}
	// play returns a policy's mean return and the fraction of its episodes
	// that end in a landing (terminated by a step of positive reward: the
	// +100 of coming to rest; a crash's step is below −50).
	play := func(policy func(obs []float64) []float64) (float64, float64) {
		sum, landed := 0.0, 0
		for e := range episodes {
			obs := sim.Reset(5000 + uint64(e))
			for {
				o, r, term, trunc := sim.Step(policy(obs))
				obs, sum = o, sum+r
				if term && r > 0 {
					landed++
				}
				if term || trunc {
					break
				}
			}
		}
		return sum / float64(episodes), float64(landed) / float64(episodes)
	}
	var halt *float64
	if crash { // a cell no rollout visited ends the episode as a crash does
		h := -100.0
		halt = &h
	}
	b.ResetTimer()
	for range b.N {
		m, r, st, err := discretize.ReplayModel(context.Background(), g, newSim, ce.StateOf, eps,
			discretize.ReplayConfig{Clones: rc.Clones, Expand: expand, Count: count, Successor: v.successor, HaltReward: halt, Seed: mc.Seed, Gamma: gamma}, 0)
		if err != nil {
			b.Fatal(err)
		}
		ws := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-6, Anderson: 20})
		val := ws.ValueIteration(nil, r)
		ws.Close()
		if !val.Converged {
			b.Fatalf("value iteration did not converge (residual %g)", val.Residual)
		}
		pl, err := discretize.NewPlanner(g, val.Q)
		if err != nil {
			b.Fatal(err)
		}
		act, x := make([]float64, 2), make([]float64, 8)
		ret, landed := play(func(obs []float64) []float64 { return pl.Act(act, ce.StateOf(x, obs)) })
		b.ReportMetric(ret, "planner-return")
		b.ReportMetric(landed, "planner-landed")
		ret, landed = play(func(obs []float64) []float64 { return lunar.Heuristic(act, obs, true) })
		b.ReportMetric(ret, "heuristic-return")
		b.ReportMetric(landed, "heuristic-landed")
		prng := rand.New(rand.NewPCG(3, 4))
		ret, _ = play(func([]float64) []float64 {
			act[0], act[1] = 2*prng.Float64()-1, 2*prng.Float64()-1
			return act
		})
		b.ReportMetric(ret, "random-return")
		b.ReportMetric(float64(st.Cells), "cells")
		b.ReportMetric(float64(st.Unexpanded), "unexpanded")
		b.ReportMetric(float64(st.Steps), "sim-steps")
	}
}
