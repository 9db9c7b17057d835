package control

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/envs/lunar"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// heuristicEpisodes plays n episodes of Gymnasium's heuristic controller on
// LunarLanderContinuous client 0 (seeds base, base+1, …), each action
// replaced with probability eps by a uniform random one, and returns them
// as replay episodes and as demonstrations.
func heuristicEpisodes(n int, base uint64, eps float64, rng *rand.Rand, stateOf func(dst, obs []float64) []float64) ([]discretize.Episode, *Demos) {
	e, err := lunar.New(lunar.ClientParams(true, 0))
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

// BenchmarkLunarLocalFit times one client's local IRL on LunarLander's
// default lattice and feature set as the default study runs it: the replay
// model (model_rollouts: 200 ε-greedy rollouts, K clones per visited cell
// and action) and MaxEnt under the well-posed protocol (L-BFGS to irl.grad_tol
// or irl_iterations, the horizon irl.horizon gives, the absorbing state).
// Gymnasium's heuristic controller stands in for the PPO expert (rollouts
// and 20 deterministic demonstrations), so the benchmark needs no training.
// Reported: model-s and fit-s (wall), iterations, grad-norm, converged (1
// when ‖∇‖ ≤ irl.grad_tol), horizon, and the model's cloned cells and
// simulator steps.
func BenchmarkLunarLocalFit(b *testing.B) {
	const env = "LunarLanderContinuous-v3"
	cfg := DefaultConfig()
	s := &Study{cfg: cfg}
	ce, err := tasks.LookupControl(env)
	if err != nil {
		b.Fatal(err)
	}
	p, err := s.probe(env, cfg.Lattices[env][0])
	if err != nil {
		b.Fatal(err)
	}
	g, phi, err := p.Features()
	if err != nil {
		b.Fatal(err)
	}
	mc := s.modelConfig(env, 0, cfg.Seed)
	h, err := s.horizon(env)
	if err != nil {
		b.Fatal(err)
	}
	rc := cfg.ModelRollouts
	rng := rand.New(rand.NewPCG(1, 2))
	rollouts, _ := heuristicEpisodes(rc.Episodes, 1000, rc.Epsilon, rng, ce.StateOf)
	_, demos := heuristicEpisodes(cfg.EpisodesPerClient, 5000, 0, rng, ce.StateOf)
	trajs, err := demos.Trajectories(g)
	if err != nil {
		b.Fatal(err)
	}
	newSim := func() (discretize.Replayer, error) { return lunar.New(lunar.ClientParams(true, 0)) }
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		m, _, st, err := discretize.ReplayModel(context.Background(), g, newSim, ce.StateOf, slices.Clone(rollouts),
			discretize.ReplayConfig{Clones: rc.Clones, Expand: rc.Expand, Count: rc.Count, Seed: mc.Seed, Gamma: mc.Gamma}, 0)
		if err != nil {
			b.Fatal(err)
		}
		modelS := time.Since(start).Seconds()
		m.Horizon = h
		start = time.Now()
		ic := cfg.IRL
		res, err := irl.MaxEnt(context.Background(), m, phi, trajs, irl.Config{LearningRate: ic.LearningRate, Temperature: ic.Temperature,
			L2: ic.L2, MaxIter: cfg.Env[env].IRLIterations, Optimizer: ic.Optimizer, GradTol: ic.GradTol, Absorbing: ic.Absorbing,
			Solver: mdp.Options{Tol: ic.SolverTol, Anderson: ic.Anderson, Newton: ic.Solver == "newton"}})
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
		b.ReportMetric(float64(st.Steps), "sim-steps")
	}
}
