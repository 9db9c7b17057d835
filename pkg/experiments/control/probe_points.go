package control

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/npy"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// ---- the point probe: a lattice-free support of scattered steps ----
//
// An environment with env.<id>.probe (kind points) and the entry "points"
// in lattices.<id> is studied without a lattice: the probe is a set of
// steps (s, a, s′, terminated) of rollouts of a public reference policy in
// the nominal simulator (the environment's default physics, no
// observation noise) — never a client's demonstrations, which stay with
// the client. The local IRL is the sample-based learner on the
// environment's point features (tasks.PointFeatures, evaluable at any
// step); every fusion method runs on the points (the federation's
// "points" family: the weighted squared-Euclidean cost between the
// points' (s, a), Φ at the points as data), the fused θ the least-squares
// fit of the fused reward on Φ there, as on a lattice; rung (a) of the
// ladder (the lattice planner) and the methods of the tabular model
// (pooled, personalized, joint) do not apply; rung (b) projects the
// client's true reward at the points; the fidelity column is the
// sample-based EPIC (SampleFidelity).

// LatticePoints is the entry of lattices.<id> that studies the environment
// on its point probe (env.<id>.probe) instead of a lattice.
const LatticePoints = "points"

// ProbeKindPoints is env.<id>.probe.kind of a point probe.
const ProbeKindPoints = "points"

// Reference policies of a point probe (ProbeConfig.Policy).
const (
	// ProbeExpert is a PPO expert trained by the study on the nominal
	// simulator's true reward (env.<id>.total_expert_steps and
	// expert_preset, as the clients' experts), acting by its mode.
	ProbeExpert = "expert"
	// ProbeRandom acts uniformly at random.
	ProbeRandom = "random"
	// ProbeHeuristic is the environment's own public controller
	// (registry.NewController: LunarLander's, Gymnasium's
	// BipedalWalkerHeuristics).
	ProbeHeuristic = "heuristic"
)

// ProbeConfig is env.<id>.probe, the point probe of an environment studied
// without a lattice. Every key but the fidelity sizes must be given.
type ProbeConfig struct {
	// Kind is "points".
	Kind string `yaml:"kind" json:"kind"`
	// Policy is the reference policy rolled out in the nominal simulator:
	// expert, random or heuristic.
	Policy string `yaml:"policy" json:"policy"`
	// Epsilon ∈ [0, 1] replaces each of the policy's actions by a uniform
	// random one with this probability (0: the policy as it is).
	Epsilon float64 `yaml:"epsilon" json:"epsilon"`
	// Episodes is the number of reference episodes (≥ 1).
	Episodes int `yaml:"episodes" json:"episodes"`
	// Every keeps every k-th step of each episode, from its first (≥ 1).
	Every int `yaml:"every" json:"every"`
	// MaxPoints caps the points (≥ 2): when the kept steps are more, MaxPoints
	// of them evenly spaced in episode order. It is bounded by what the
	// federation's task carries (federation.MaxProbeBytes; Validate names
	// the bound).
	MaxPoints int `yaml:"max_points" json:"max_points"`
	// FidelityBatch and FidelityMeanSamples are the sample-based EPIC's
	// batch and canonicalization sizes (SampleFidelityConfig; absent: 4096
	// and 1024; a value must be ≥ 2).
	FidelityBatch       *int `yaml:"fidelity_batch,omitempty" json:"fidelity_batch,omitempty"`
	FidelityMeanSamples *int `yaml:"fidelity_mean_samples,omitempty" json:"fidelity_mean_samples,omitempty"`
}

// validate checks p, naming the key env.<env>.probe.<key>.
func (p *ProbeConfig) validate(env string) error {
	bad := func(k string, v any, want string) error {
		return fmt.Errorf("env.%s.probe.%s: %v, want %s", env, k, v, want)
	}
	switch {
	case p.Kind != ProbeKindPoints:
		return bad("kind", fmt.Sprintf("%q", p.Kind), fmt.Sprintf("%q (a set of scattered steps)", ProbeKindPoints))
	case p.Policy != ProbeExpert && p.Policy != ProbeRandom && p.Policy != ProbeHeuristic:
		return bad("policy", fmt.Sprintf("%q", p.Policy), fmt.Sprintf("%s, %s or %s", ProbeExpert, ProbeRandom, ProbeHeuristic))
	case !(p.Epsilon >= 0 && p.Epsilon <= 1):
		return bad("epsilon", p.Epsilon, "a probability in [0, 1]")
	case p.Episodes < 1:
		return bad("episodes", p.Episodes, "≥ 1")
	case p.Every < 1:
		return bad("every", p.Every, "≥ 1 (1: every step)")
	case p.MaxPoints < 2:
		return bad("max_points", p.MaxPoints, "≥ 2")
	case p.FidelityBatch != nil && *p.FidelityBatch < 2:
		return bad("fidelity_batch", *p.FidelityBatch, "≥ 2 (absent: 4096)")
	case p.FidelityMeanSamples != nil && *p.FidelityMeanSamples < 2:
		return bad("fidelity_mean_samples", *p.FidelityMeanSamples, "≥ 2 (absent: 1024)")
	}
	if p.Policy == ProbeHeuristic {
		if _, ok := registry.NewController(env); !ok {
			return bad("policy", fmt.Sprintf("%q", p.Policy), fmt.Sprintf("%s or %s: %s has no heuristic controller", ProbeExpert, ProbeRandom, env))
		}
	}
	return nil
}

// fidelityConfig returns the sample-based EPIC's sizes of p at discount γ.
func (p *ProbeConfig) fidelityConfig(gamma float64) SampleFidelityConfig {
	c := SampleFidelityConfig{Gamma: gamma}
	if p.FidelityBatch != nil {
		c.Batch = *p.FidelityBatch
	}
	if p.FidelityMeanSamples != nil {
		c.MeanSamples = *p.FidelityMeanSamples
	}
	return c.withDefaults()
}

// nominalClient is the client index of the nominal simulator (the
// environment's default parameters, registry.Make's client −1), on which
// a point probe's reference expert trains and its rollouts run.
const nominalClient = -1

// maxPointsFor returns the most points of dim coordinates (s, a) and feats
// features whose probe fits in a federation task: the points and Φ
// travel in its probe JSON as base64 .npy arrays (4/3 · 8 bytes a
// number), bounded by federation.MaxProbeBytes.
func maxPointsFor(dim, feats int) int {
	room := federation.MaxProbeBytes - 4096 - 32*dim // headers, names and cost weights
	return max(room*3/(32*(dim+feats)), 0)
}

// validatePoints checks an environment studied on its point probe: the
// probe block, the sample-based learner, the point features and the
// size the federation carries, naming the key.
func (c Config) validatePoints(e string, ec EnvConfig) error {
	if ec.Probe == nil {
		return fmt.Errorf("lattices.%s lists %q: set env.%s.probe (kind points, policy, epsilon, episodes, every, max_points)", e, LatticePoints, e)
	}
	if err := ec.Probe.validate(e); err != nil {
		return err
	}
	if ec.localIRL() != LocalIRLSample {
		return fmt.Errorf("env.%s.local_irl: %q: the point probe (lattices.%s: %s) has no lattice model to fit on; want %q", e, ec.localIRL(), e, LatticePoints, LocalIRLSample)
	}
	pf, err := tasks.LookupPointFeatures(e, ec.Features, max(ec.FrameSkip, 1))
	if err != nil {
		return fmt.Errorf("env.%s.features: %w", e, err)
	}
	if err := pf.Validate(); err != nil {
		return fmt.Errorf("env.%s.features: %w", e, err)
	}
	if _, err := stepReward(e, 0, max(ec.FrameSkip, 1)); err != nil {
		return fmt.Errorf("lattices.%s: %s: %w", e, LatticePoints, err)
	}
	sim, err := registry.Make(e, nominalClient, nil, 0)
	if err != nil {
		return fmt.Errorf("envs: %w", err)
	}
	dim := sim.ObservationSpace().Dim() + sim.ActionSpace().Dim()
	if m := maxPointsFor(dim, pf.Dim()); ec.Probe.MaxPoints > m {
		return fmt.Errorf("env.%s.probe.max_points: %d, at most %d: a federation task carries its probe's %d coordinates and %d features per point inline, within federation.MaxProbeBytes = %d", e, ec.Probe.MaxPoints, m, dim, pf.Dim(), federation.MaxProbeBytes)
	}
	for _, m := range c.Methods {
		switch m {
		case MethodPooled, MethodPersonalized, fusion.MethodJoint:
			return fmt.Errorf("methods: %q fits the tabular lattice model, which lattices.%s: %s has not; remove it or the point probe", m, e, LatticePoints)
		}
	}
	switch {
	case ec.DemoStart != nil:
		return fmt.Errorf("env.%s.demo_start: sets the simulator's state, which a point-probe study of %s does not assume; remove it", e, e)
	case c.Privacy.Epsilon != 0 || c.Attack != nil:
		return fmt.Errorf("privacy and attack: not yet run on a point probe (lattices.%s: %s)", e, LatticePoints)
	}
	return nil
}

// pointFeatures returns env's feature map on its point probe.
func (s *Study) pointFeatures(env string) (tasks.PointFeatures, error) {
	return tasks.LookupPointFeatures(env, s.cfg.Env[env].Features, s.frameSkip(env))
}

type probeSpec struct {
	Kind    string      `json:"kind"`
	Version int         `json:"version"`
	Env     string      `json:"env"`
	Seed    uint64      `json:"seed"`
	Probe   ProbeConfig `json:"probe"`
	// Expert is the key of the reference expert unit (policy expert).
	Expert string `json:"expert,omitempty"`
	// FrameSkip is env.<id>.frame_skip when > 1: each step holds its
	// action for that many frames, as the clients' demonstrations do.
	FrameSkip int `json:"frame_skip,omitempty"`
}

// ProbeFile is the content of a probe unit: the points, steps of the
// reference rollouts in the nominal simulator in its own spaces, with the
// nominal reward of each.
type ProbeFile struct {
	Env    string `json:"env"`
	Seed   uint64 `json:"seed"`
	Policy string `json:"policy"`
	// Episodes and Steps count the reference rollouts and their steps;
	// MeanReturn is their mean nominal return.
	Episodes   int     `json:"episodes"`
	Steps      int     `json:"steps"`
	MeanReturn float64 `json:"mean_return"`
	// Obs, Act, Next and Terminated are the points' steps (s, a, s′,
	// terminated); Reward the nominal simulator's reward of each.
	Obs        [][]float64 `json:"obs"`
	Act        [][]float64 `json:"act"`
	Next       [][]float64 `json:"next"`
	Terminated []bool      `json:"terminated"`
	Reward     []float64   `json:"reward"`
}

// probeUnit returns env's probe unit for seed and, with policy expert, the
// reference expert's unit and spec.
func (s *Study) probeUnit(env string, seed uint64) (unit, probeSpec, *unit, expertSpec, error) {
	ec := s.cfg.Env[env]
	sp := probeSpec{Kind: "probe", Version: unitVersion, Env: env, Seed: seed, Probe: *ec.Probe}
	if k := s.frameSkip(env); k > 1 {
		sp.FrameSkip = k
	}
	var ref *unit
	var esp expertSpec
	if ec.Probe.Policy == ProbeExpert {
		eu, es, err := s.expertUnit(env, nominalClient, seed)
		if err != nil {
			return unit{}, probeSpec{}, nil, expertSpec{}, err
		}
		sp.Expert, ref, esp = eu.key, &eu, es
	}
	return unit{"probe", fmt.Sprintf("%s-%s-s%d", env, LatticePoints, seed), key(sp), ".json"}, sp, ref, esp, nil
}

func (s *Study) runProbe(ctx context.Context, u unit, sp probeSpec, ref *unit) error {
	env, err := heldEnv(sp.Env, nominalClient, sp.FrameSkip, 0)
	if err != nil {
		return err
	}
	space := env.ActionSpace()
	rng := rand.New(rand.NewPCG(seedOf(sp.Seed, "probe-actions"), 0))
	var policy func(dst, obs []float64) []float64
	var reset func()
	switch sp.Probe.Policy {
	case ProbeExpert:
		_, pol, err := s.readExpert(*ref)
		if err != nil {
			return err
		}
		policy = func(dst, obs []float64) []float64 { return pol.Act(dst, obs, nil) } // the mode action
	case ProbeHeuristic:
		h, ok := registry.NewController(sp.Env)
		if !ok {
			return fmt.Errorf("%s has no heuristic controller", sp.Env)
		}
		policy, reset = h.Act, h.Reset
	default:
		policy = func(dst, _ []float64) []float64 { return space.Sample(dst, rng) }
	}
	f := ProbeFile{Env: sp.Env, Seed: sp.Seed, Policy: sp.Probe.Policy, Episodes: sp.Probe.Episodes}
	act := make([]float64, space.Dim())
	ret := 0.0
	for ep := range sp.Probe.Episodes {
		if err := ctx.Err(); err != nil {
			return err
		}
		if reset != nil {
			reset()
		}
		obs := slices.Clone(env.Reset(seedOf(sp.Seed, "probe-reset", ep)))
		for t := 0; ; t++ {
			policy(act, obs)
			if sp.Probe.Epsilon > 0 && rng.Float64() < sp.Probe.Epsilon {
				space.Sample(act, rng)
			}
			next, r, term, trunc := env.Step(act)
			f.Steps++
			ret += r
			if t%sp.Probe.Every == 0 {
				f.Obs, f.Act, f.Next = append(f.Obs, obs), append(f.Act, slices.Clone(act)), append(f.Next, slices.Clone(next))
				f.Terminated, f.Reward = append(f.Terminated, term), append(f.Reward, r)
			}
			if term || trunc {
				break
			}
			obs = slices.Clone(next)
		}
	}
	f.MeanReturn = ret / float64(sp.Probe.Episodes)
	if n, m := len(f.Obs), sp.Probe.MaxPoints; n > m {
		keep := func(xs [][]float64) [][]float64 {
			out := make([][]float64, m)
			for i := range out {
				out[i] = xs[i*n/m]
			}
			return out
		}
		term, rew := make([]bool, m), make([]float64, m)
		for i := range m {
			term[i], rew[i] = f.Terminated[i*n/m], f.Reward[i*n/m]
		}
		f.Obs, f.Act, f.Next, f.Terminated, f.Reward = keep(f.Obs), keep(f.Act), keep(f.Next), term, rew
	}
	if len(f.Obs) < 2 {
		return fmt.Errorf("probe %s: %d point(s) from %d steps (every %d), want ≥ 2", u.name, len(f.Obs), f.Steps, sp.Probe.Every)
	}
	return report.WriteJSON(u.path(s.units), f)
}

// readProbe reads env's probe for seed.
func (s *Study) readProbe(env string, seed uint64) (*ProbeFile, unit, error) {
	u, _, _, _, err := s.probeUnit(env, seed)
	if err != nil {
		return nil, unit{}, err
	}
	var f ProbeFile
	if err := readJSON(u.path(s.units), &f); err != nil {
		return nil, unit{}, err
	}
	return &f, u, nil
}

// phi returns Φ at the probe's points (one row per point).
func (f *ProbeFile) phi(pf tasks.PointFeatures) (*mat.Dense, error) {
	ev, err := pf.Evaluator()
	if err != nil {
		return nil, err
	}
	phi := mat.NewDense(len(f.Obs), pf.Dim(), nil)
	for i := range f.Obs {
		ev(phi.RawRowView(i), f.Obs[i], f.Act[i], f.Next[i], f.Terminated[i])
	}
	return phi, nil
}

// taskProbe returns the probe JSON of a "points" federation task on f: the
// points (s, a), their cost weights 1/var of each coordinate over the
// points (1 for a constant one), so that every coordinate is measured in
// its own spread, and Φ at the points as data.
func (f *ProbeFile) taskProbe(pf tasks.PointFeatures, names []string) ([]byte, error) {
	n := len(f.Obs)
	d := len(f.Obs[0]) + len(f.Act[0])
	pts := make([]float64, 0, n*d)
	for i := range f.Obs {
		pts = append(append(pts, f.Obs[i]...), f.Act[i]...)
	}
	w := make([]float64, d)
	for k := range w {
		m, v := 0.0, 0.0
		for i := range n {
			m += pts[i*d+k] / float64(n)
		}
		for i := range n {
			v += (pts[i*d+k] - m) * (pts[i*d+k] - m) / float64(n)
		}
		w[k] = 1
		if v > 0 && !math.IsInf(1/v, 0) {
			w[k] = 1 / v
		}
	}
	phi, err := f.phi(pf)
	if err != nil {
		return nil, err
	}
	p := tasks.PointProbe{Names: names, PointsNPY: npy.EncodeFloat64([]int{n, d}, pts), CostWeights: w,
		PhiNPY: npy.EncodeFloat64([]int{n, pf.Dim()}, phi.RawMatrix().Data)}
	return json.Marshal(p)
}

// pointNames labels the coordinates of a point (s, a) of env.
func pointNames(sim envs.Env) []string {
	var out []string
	for k := range sim.ObservationSpace().Dim() {
		out = append(out, fmt.Sprintf("obs[%d]", k))
	}
	for k := range sim.ActionSpace().Dim() {
		out = append(out, fmt.Sprintf("action[%d]", k))
	}
	return out
}
