package control

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// The cost model prices every unit of a study before it runs, from costs
// measured per unit on this machine (2 vCPUs sharing one core's FMA units,
// 2 units at a time, float32 PPO), so that a user knows what a preset or a
// config costs — on this machine, and as N shards × C cores — before
// starting it. A unit's cost is
//
//	expert, eval        steps · perStep[kind][env]  (+ (k−1) · perHeldFrame[env] per step of an eval held k frames)
//	irl                 pairs · iterations · perPairIter[env]
//	ladder              pairs · perPair[ladder][env] + modelCost[env]
//	fidelity            pairs · perPair[fidelity][env]
//	fusion              pairs · perPair[fusion][env]
//	baseline, demos     a constant (they are milliseconds)
//
// with the constants below, measured on this machine: Pendulum, CartPole
// and Acrobot from the mean unit times in a quiet default run's log.txt
// (2 units at a time on 2 cores, 4 min 22 s; 2026-11-26, the code of issue
// 36's fourth pass); LunarLander's expert and local IRL (paper lattice,
// its model counted from 200 rollouts, horizon 1000 at the preset's γ
// 0.999) from a `--full --env LunarLanderContinuous-v3` calibration run,
// its evaluation from `fedirl ppo train --env LunarLanderContinuous-v3
// --steps 500000` (9.9 s). A unit's time depends on the machine's load, so
// the estimate is as good as the calibration (README-control, "Cost").

// perStep is seconds per PPO step, study evaluation overhead included.
// BipedalWalker-v3: ppo.CPUSecondsPerStep (RL Zoo's preset, 6,769 steps
// per CPU-second; BenchmarkTrain_BipedalWalker_Zoo), for experts and
// evaluations alike.
var perStep = map[string]map[string]float64{
	"expert": {"Pendulum-v1": 10e-6, "CartPole-v1": 18.2e-6, "Acrobot-v1": 5.3e-6, "LunarLanderContinuous-v3": 23e-6, "BipedalWalker-v3": 1 / 6769.0},
	"eval":   {"Pendulum-v1": 11e-6, "CartPole-v1": 19.7e-6, "Acrobot-v1": 6.8e-6, "LunarLanderContinuous-v3": 20e-6, "BipedalWalker-v3": 1 / 6769.0},
}

// perKernelEntry is seconds per entry of a point probe's exact Gibbs
// kernel per application (ot.PointKernel, O(n²·dim); 14–35 ns on this
// machine, BenchmarkPointKernelApply).
const perKernelEntry = 25e-9

// perRewardEval is seconds per evaluation of a reward in the sample-based
// EPIC of a point probe's fidelity unit (features and θᵀφ): a walker unit
// of the default sizes (4096 × 1024) on a 120-point probe, 4 rewards,
// took 1.36 s (2026-12-03, load 5) for at most 3.6·10⁷ evaluations as
// pointsUnitCost counts them.
const perRewardEval = 40e-9

// perHeldFrame is seconds per extra simulator frame of an evaluation run
// that holds each action (env.<id>.evaluation_frame_skip): LunarLander's
// 500k-decision units took 47–55 s held 8 frames against 8 s on every
// frame (2 units at a time, load 2; branch lunar4), (50 − 8)/(7 · 500k).
var perHeldFrame = map[string]float64{"LunarLanderContinuous-v3": 12e-6}

// perPairIter is seconds per state–action pair and iteration of the
// budget (irl_iterations) of a local IRL fit (model build included); the
// Newton fits stop well before the budget, so it is calibrated on the
// fits as they stop. LunarLander: the 12 irl units of the default
// LunarLander run on the lander lattice with the held_step features (5–6
// Newton iterations, the model shared with the ladder unit in the same
// process) took 5.6–6.8 s, 2 at a time, so a lander fit is priced at
// 140,625 pairs · 100 iterations · 3.7e-6 / 8 = 6.5 s (19 s with the
// paper's features, 10 iterations).
//
// CartPole and Acrobot: scaled by the ratio of their mean irl unit times in
// quiet default runs before and after the assembly Krylov kernels
// (package mdp; 2026-11-27: CartPole 4.44 → 3.63 s, Acrobot 2.03 → 1.58
// s), and again after the quasi-Newton start of the Newton fits (package
// irl; CartPole 3.63 → 2.52 s, Acrobot 1.58 → 1.73 s).
var perPairIter = map[string]float64{
	"Pendulum-v1": 7.8e-8, "CartPole-v1": 2.7e-7, "Acrobot-v1": 1.86e-7, "LunarLanderContinuous-v3": 3.7e-6,
}

// perPair is seconds per state–action pair of a ladder, fidelity or fusion unit.
var perPair = map[string]map[string]float64{
	"ladder":   {"Pendulum-v1": 1.6e-6, "CartPole-v1": 6.1e-6, "Acrobot-v1": 4.6e-6, "LunarLanderContinuous-v3": 2.7e-6},
	"fidelity": {"Pendulum-v1": 2.4e-6, "CartPole-v1": 2.5e-6, "Acrobot-v1": 2.7e-6, "LunarLanderContinuous-v3": 1e-6},
	"fusion":   {"Pendulum-v1": 5.9e-6, "CartPole-v1": 5.7e-6, "Acrobot-v1": 5e-6, "LunarLanderContinuous-v3": 7e-6},
}

// pooledEvals is the Newton evaluations (value, visits and Hessian) that
// one fit of a pooled unit costs, in local-IRL iterations: the pooled
// default runs took 5–15 rounds, a Hessian costing about two iterations.
const pooledEvals = 20

// modelCost is the seconds of building the lattice model of an
// environment whose state cannot be set (replay clones of 200 rollouts,
// model_rollouts.clones 8), charged to its ladder unit; the IRL and
// fidelity units of the same client reuse the model in the same process
// (sharedWork). LunarLander: the paper-lattice ladder unit took 97 s, the
// fine one 179 s, in a calibration run on this machine under a load of
// 15–30 (branch lunar); the default lander model (1000 rollouts held 8
// frames) 31–98 s per ladder unit at a load of 2–4.
var modelCost = map[string]float64{"LunarLanderContinuous-v3": 100}

// fixedCost is the cost of a baseline or demonstrations unit.
const fixedCost = 0.05

// UnitCost is the modelled cost of one kind of unit of one environment.
type UnitCost struct {
	Env, Kind, Lattice string
	Units              int
	// PerUnit is the modelled seconds of one unit on one core, the mean
	// over the row's units (a point probe's fusions differ by method).
	PerUnit float64
}

// Plan is the priced plan of a study.
type Plan struct {
	Rows []UnitCost
	// Total is the modelled sum over units, in core-seconds.
	Total float64
	// Shards holds, per shard of a Count-way split, its modelled core-seconds.
	Shards []float64
}

// unitCost returns the modelled seconds of task t.
func (s *Study) unitCost(t task) (float64, error) {
	pairs := 0
	if t.lattice == LatticePoints {
		return s.pointsUnitCost(t)
	}
	if t.lattice != "" && t.lattice != "-" {
		p, err := s.probe(t.env, t.lattice)
		if err != nil {
			return 0, err
		}
		pairs = p.Grid.NumPairs()
	}
	return s.unitCostByKind(t, pairs)
}

// unitCostByKind prices task t of a lattice with pairs state–action pairs.
func (s *Study) unitCostByKind(t task, pairs int) (float64, error) {
	ec := s.cfg.Env[t.env]
	switch t.u.kind {
	case "expert":
		return float64(ec.TotalExpertSteps) * perStep["expert"][t.env], nil
	case "eval":
		per := perStep["eval"][t.env]
		if k := ec.EvaluationFrameSkip; k > 1 { // each decision holds its action for k frames
			per += float64(k-1) * perHeldFrame[t.env]
		}
		return float64(ec.EvaluationSteps) * per, nil
	case "irl":
		if ec.localIRL() == LocalIRLSample {
			// PPO steps at the evaluation runs' rate; the estimates' episodes
			// are priced as one more policy_steps per iteration.
			c, err := s.sampleConfig(t.env, 0, 0)
			if err != nil {
				return 0, err
			}
			return float64(2*c.PolicySteps*c.MaxIter) * perStep["eval"][t.env], nil
		}
		// A finite-horizon fit's sweeps scale with its horizon, which
		// frame_skip k divides by k (LunarLander's rate is for k = 1).
		return float64(pairs) * float64(ec.IRLIterations) * perPairIter[t.env] / float64(s.frameSkip(t.env)), nil
	case "ladder":
		return float64(pairs)*perPair[t.u.kind][t.env] + modelCost[t.env], nil
	case "fidelity", "fusion":
		return float64(pairs) * perPair[t.u.kind][t.env], nil
	case "pooled":
		// The pooled fit and each client's personalization candidates
		// (and its refit), each about pooledEvals Newton evaluations of
		// one client's objective with its Hessian.
		k := len(s.cfg.TrainingClients())
		fits := k + k*(len(s.cfg.Joint.ProxCandidates)+1)
		return float64(pairs) * float64(fits*pooledEvals) * perPairIter[t.env] / float64(s.frameSkip(t.env)), nil
	}
	return fixedCost, nil
}

// pointsUnitCost prices a unit of a point probe's entry: the reference
// rollouts at the evaluation's rate per step (every episode priced at the
// time limit), the sample-based fits as on a lattice entry, a barycentric
// fusion by its kernel applications (two per client, Sinkhorn iteration
// and outer step; twice for the debiased one) on max_points points, the
// sample-based EPIC by its reward evaluations ((1 + 2·N_M)·batch per
// method, the true reward's included, and coverage), the rest as
// constants.
func (s *Study) pointsUnitCost(t task) (float64, error) {
	ec := s.cfg.Env[t.env]
	n := float64(ec.Probe.MaxPoints)
	switch t.u.kind {
	case "probe":
		e, err := heldEnv(t.env, nominalClient, s.frameSkip(t.env), 0)
		if err != nil {
			return 0, err
		}
		T := 1000
		if lim, ok := e.(interface{ MaxEpisodeSteps() int }); ok && lim.MaxEpisodeSteps() > 0 {
			T = lim.MaxEpisodeSteps()
		}
		return float64(ec.Probe.Episodes*T) * perStep["eval"][t.env], nil
	case "irl":
		c, err := s.sampleConfig(t.env, 0, 0)
		if err != nil {
			return 0, err
		}
		return float64(2*c.PolicySteps*c.MaxIter) * perStep["eval"][t.env], nil
	case "fusion":
		apps := 2 * float64(len(s.cfg.TrainingClients())*s.cfg.Barycenter.SinkhornIterations*s.cfg.Barycenter.BarycenterIterations)
		switch {
		case strings.Contains(t.u.name, "-"+MethodDebiased+"-"):
			return 2 * apps * n * n * perKernelEntry, nil
		case strings.Contains(t.u.name, "-"+MethodBarycenter+"-"):
			return apps * n * n * perKernelEntry, nil
		}
		return fixedCost, nil
	case "fidelity":
		// SampleEPIC evaluates each reward once per batch transition and N_M
		// times per distinct state among the batch's s and s′: at most
		// 2·max_points on the probe's two coverages, 2·batch on the
		// demonstrations'.
		fc := ec.Probe.fidelityConfig(0)
		B, N := float64(fc.Batch), float64(fc.MeanSamples)
		perReward := 2*(B+N*min(2*B, 2*n)) + (B + N*2*B)
		return perReward * float64(len(s.fidelityMethods(0))+1) * perRewardEval, nil
	case "ladder":
		return fixedCost, nil
	}
	return s.unitCostByKind(t, 0)
}

// PlanCosts prices every unit of the study (all shards) and the split into
// shards ways (shards ≤ 1: none).
func (s *Study) PlanCosts(shards int) (*Plan, error) {
	phases, _, err := s.plan(Shard{})
	if err != nil {
		return nil, err
	}
	type key struct{ env, kind, lattice string }
	rows := map[key]*UnitCost{}
	p := &Plan{}
	for _, ts := range phases {
		for _, t := range ts {
			c, err := s.unitCost(t)
			if err != nil {
				return nil, err
			}
			k := key{t.env, t.u.kind, t.lattice}
			if rows[k] == nil {
				rows[k] = &UnitCost{Env: t.env, Kind: t.u.kind, Lattice: t.lattice}
			}
			rows[k].Units++
			rows[k].PerUnit += (c - rows[k].PerUnit) / float64(rows[k].Units)
			p.Total += c
		}
	}
	for _, r := range rows {
		p.Rows = append(p.Rows, *r)
	}
	sort.Slice(p.Rows, func(i, j int) bool {
		a, b := p.Rows[i], p.Rows[j]
		if a.Env != b.Env {
			return slices.Index(s.cfg.Envs, a.Env) < slices.Index(s.cfg.Envs, b.Env)
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Lattice < b.Lattice
	})
	for i := 0; shards > 1 && i < shards; i++ {
		phases, _, err := s.plan(Shard{i, shards})
		if err != nil {
			return nil, err
		}
		t := 0.0
		for _, ts := range phases {
			for _, u := range ts {
				c, _ := s.unitCost(u)
				t += c
			}
		}
		p.Shards = append(p.Shards, t)
	}
	return p, nil
}

// Write prints the plan as a table with the wall-time estimates for cores
// cores per run (units run cores at a time).
func (p *Plan) Write(w io.Writer, cores int) {
	fmt.Fprintf(w, "| env | unit | lattice | units | s per unit | core-hours |\n|---|---|---|---|---|---|\n")
	for _, r := range p.Rows {
		l := r.Lattice
		if l == "" || l == "-" {
			l = "–"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %.3g | %.3f |\n", r.Env, r.Kind, l, r.Units, r.PerUnit, float64(r.Units)*r.PerUnit/3600)
	}
	fmt.Fprintf(w, "\nTotal %.2f core-hours: about %s on this machine with --jobs %d.\n", p.Total/3600, hours(p.Total/float64(cores)), cores)
	if len(p.Shards) > 0 {
		longest := slices.Max(p.Shards)
		var parts []string
		for _, t := range p.Shards {
			parts = append(parts, fmt.Sprintf("%.2f", t/3600))
		}
		fmt.Fprintf(w, "%d shards × %d cores: the longest shard takes about %s (core-hours per shard: %s).\n",
			len(p.Shards), cores, hours(longest/float64(cores)), strings.Join(parts, ", "))
	}
}

// hours formats seconds as "2 h 5 min" or "7 min".
func hours(sec float64) string {
	m := int(sec/60 + 0.5)
	if m < 60 {
		return fmt.Sprintf("%d min", m)
	}
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}
