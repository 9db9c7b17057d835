package control

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// ---- rung (b) and the fidelity column on a point probe ----

// stepRewardEnvs lists the environments whose true reward stepReward writes.
var stepRewardEnvs = []string{"Acrobot-v1", "BipedalWalker-v3", "CartPole-v1", "LunarLanderContinuous-v3", "Pendulum-v1"}

// stepReward returns client's true reward as a function of one observed
// step (s, a, s′, terminated) of frames simulator steps, in the
// simulator's own spaces: what the sample-based EPIC of a point probe
// compares learned rewards with, at steps no simulator took as well as at
// recorded ones, and what rung (b) projects. Written from each
// environment's reward, and checked against its simulator's rewards
// (TestStepRewardIsTheSimulators):
//
//   - Pendulum-v1: −(θ² + 0.1θ̇² + 0.001u²) at the observation's (θ, θ̇),
//     u the client's applied torque (torque_scale · the action clipped to
//     ±max_torque); exact where the observation has no noise;
//   - CartPole-v1: 1 on every step; Acrobot-v1: −1, 0 on the step that
//     reaches the goal;
//   - LunarLanderContinuous-v3: the held_step features with the true
//     weights (the shaping's change, leg contacts, rest +100, crash −100)
//     less the fuel of the held action; exact on every step that does not
//     end the episode (TestHeldStepRewardIsTheTrueReward);
//   - BipedalWalker-v3 (frames 1): tasks.WalkerFeatures with
//     tasks.WalkerTrueWeights, within 0.07 of Gymnasium's reward on every
//     step but the one that reaches the terrain's far end
//     (TestWalkerFeaturesSpanTheReward).
func stepReward(env string, client, frames int) (func(obs, act, next []float64, terminated bool) float64, error) {
	frames = max(frames, 1)
	switch env {
	case "Pendulum-v1", "CartPole-v1", "Acrobot-v1", "BipedalWalker-v3":
		if frames != 1 {
			return nil, fmt.Errorf("the true reward of a step of %d frames of %s is not written (frame_skip 1 only)", frames, env)
		}
	}
	switch env {
	case "Pendulum-v1":
		p := map[string]float64{classic.PendulumMaxTorque: 2, classic.PendulumTorqueScale: 1}
		if client >= 0 {
			cp, err := classic.ClientParams(env, client)
			if err != nil {
				return nil, err
			}
			for k, v := range cp {
				p[k] = v
			}
		}
		maxT, scale := p[classic.PendulumMaxTorque], p[classic.PendulumTorqueScale]
		if scale == 0 {
			scale = 1
		}
		return func(obs, act, _ []float64, _ bool) float64 {
			th, thdot := math.Atan2(obs[1], obs[0]), obs[2]
			u := scale * math.Max(-maxT, math.Min(maxT, act[0]))
			return -(th*th + 0.1*thdot*thdot + 0.001*u*u)
		}, nil
	case "CartPole-v1":
		return func(_, _, _ []float64, _ bool) float64 { return 1 }, nil
	case "Acrobot-v1":
		return func(_, _, _ []float64, term bool) float64 {
			if term {
				return 0
			}
			return -1
		}, nil
	case "BipedalWalker-v3":
		pf, err := tasks.LookupPointFeatures(env, tasks.FeaturesWalker, 1)
		if err != nil {
			return nil, err
		}
		return pf.RewardFunc(tasks.WalkerTrueWeights())
	case "LunarLanderContinuous-v3":
		pf, err := tasks.LookupPointFeatures(env, tasks.FeaturesHeldStep, frames)
		if err != nil {
			return nil, err
		}
		weights := map[string]float64{"distance": -100, "speed": -100, "angle": -100, "leg1": 10, "leg2": 10, "rest": 100, "crash": -100}
		theta := make([]float64, pf.Dim())
		for i, t := range pf.RBF.HeldLander.Terms {
			theta[i] = weights[t]
		}
		r, err := pf.RewardFunc(theta)
		if err != nil {
			return nil, err
		}
		return func(obs, act, next []float64, term bool) float64 {
			m, s := features.LanderThrottles(act[0], act[1])
			fuel := 0.0
			if !term {
				fuel = float64(frames) * (-0.30*m - 0.03*math.Abs(s))
			}
			return r(obs, act, next, term) + fuel
		}, nil
	}
	return nil, fmt.Errorf("no true reward of an observed step is written for %s (known: %v): the point probe's rung (b) and fidelity need one", env, stepRewardEnvs)
}

// pointsLadderSpec is the ladder unit of a point probe: rung (b) alone.
type pointsLadderSpec struct {
	Kind     string              `json:"kind"`
	Version  int                 `json:"version"`
	Env      string              `json:"env"`
	Client   int                 `json:"client"`
	Seed     uint64              `json:"seed"`
	Points   string              `json:"points"` // the probe unit's key
	Features tasks.PointFeatures `json:"features"`
	// FrameSkip is env.<id>.frame_skip when > 1.
	FrameSkip int `json:"frame_skip,omitempty"`
}

// ProbePoints is LadderFile.Probe of a point probe's ladder unit.
const ProbePoints = "points"

func (s *Study) pointsLadderUnit(env string, client int, seed uint64) (unit, pointsLadderSpec, error) {
	pu, _, _, _, err := s.probeUnit(env, seed)
	if err != nil {
		return unit{}, pointsLadderSpec{}, err
	}
	pf, err := s.pointFeatures(env)
	if err != nil {
		return unit{}, pointsLadderSpec{}, err
	}
	sp := pointsLadderSpec{Kind: "ladder", Version: unitVersion, Env: env, Client: client, Seed: seed, Points: pu.key, Features: pf}
	if k := s.frameSkip(env); k > 1 {
		sp.FrameSkip = k
	}
	return unit{"ladder", fmt.Sprintf("%s-%s-c%d-s%d", env, LatticePoints, client, seed), key(sp), ".json"}, sp, nil
}

// runPointsLadder computes rung (b) on the point probe: the least-squares
// projection onto Φ at the points of the client's true reward there
// (stepReward; rung (a), a lattice planner, does not apply).
func (s *Study) runPointsLadder(u unit, sp pointsLadderSpec) error {
	p, _, err := s.readProbe(sp.Env, sp.Seed)
	if err != nil {
		return err
	}
	phi, err := p.phi(sp.Features)
	if err != nil {
		return err
	}
	rTrue, err := stepReward(sp.Env, sp.Client, max(sp.FrameSkip, 1))
	if err != nil {
		return err
	}
	target := make([]float64, len(p.Obs))
	for i := range target {
		target[i] = rTrue(p.Obs[i], p.Act[i], p.Next[i], p.Terminated[i])
	}
	n, d := phi.Dims()
	if n < d {
		return fmt.Errorf("%s client %d: the probe has %d points, fewer than the %d features", sp.Env, sp.Client, n, d)
	}
	pj, err := newProjector(phi, n)
	if err != nil {
		return fmt.Errorf("%s client %d points: %w", sp.Env, sp.Client, err)
	}
	f := LadderFile{Env: sp.Env, Lattice: LatticePoints, Client: sp.Client, Seed: sp.Seed, Probe: ProbePoints, ProjectionPairs: n}
	f.Theta, f.ProjectionR2 = pj.project(target)
	return report.WriteJSON(u.path(s.units), f)
}

// pointsFidelitySpec is the fidelity unit of a point probe: the
// sample-based EPIC of every learned reward to the true one.
type pointsFidelitySpec struct {
	Kind     string               `json:"kind"`
	Version  int                  `json:"version"`
	Env      string               `json:"env"`
	Client   int                  `json:"client"`
	Seed     uint64               `json:"seed"`
	Points   string               `json:"points"`
	Features tasks.PointFeatures  `json:"features"`
	Rewards  map[string]string    `json:"rewards"`
	Demos    string               `json:"demos"`
	Sample   SampleFidelityConfig `json:"sample"`
	// FrameSkip is env.<id>.frame_skip when > 1.
	FrameSkip int `json:"frame_skip,omitempty"`
}

func (s *Study) pointsFidelityUnit(env string, client int, seed uint64) (unit, pointsFidelitySpec, map[string]unit, error) {
	pu, _, _, _, err := s.probeUnit(env, seed)
	if err != nil {
		return unit{}, pointsFidelitySpec{}, nil, err
	}
	pf, err := s.pointFeatures(env)
	if err != nil {
		return unit{}, pointsFidelitySpec{}, nil, err
	}
	du, _, _, _, err := s.demosUnit(env, client, seed)
	if err != nil {
		return unit{}, pointsFidelitySpec{}, nil, err
	}
	sp := pointsFidelitySpec{Kind: "fidelity", Version: unitVersion, Env: env, Client: client, Seed: seed, Points: pu.key, Features: pf,
		Rewards: map[string]string{}, Demos: du.key, Sample: s.cfg.Env[env].Probe.fidelityConfig(s.modelConfig(env, client, seed).Gamma)}
	if k := s.frameSkip(env); k > 1 {
		sp.FrameSkip = k
	}
	units := map[string]unit{}
	for _, m := range s.fidelityMethods(client) {
		ru, err := s.rewardUnit(evalJob{env, LatticePoints, m, seed, client})
		if err != nil {
			return unit{}, pointsFidelitySpec{}, nil, err
		}
		sp.Rewards[m], units[m] = ru.key, ru
	}
	return unit{"fidelity", fmt.Sprintf("%s-%s-c%d-s%d", env, LatticePoints, client, seed), key(sp), ".json"}, sp, units, nil
}

// withEnd appends the end flag to an observation: the state vector of the
// sample-based EPIC, so that the reward of a step that ends the episode is
// a function of (s, a, s′) and a state that ended one acts no more (its
// rewards 0, the exact EPIC's terminal state).
func withEnd(obs []float64, end bool) []float64 {
	v := 0.0
	if end {
		v = 1
	}
	return append(slices.Clone(obs), v)
}

// sampleReward returns r as an irl.SampleReward on withEnd's states.
func sampleReward(r func(obs, act, next []float64, terminated bool) float64) irl.SampleReward {
	return func(s, a, next []float64) float64 {
		n := len(s) - 1
		if s[n] == 1 {
			return 0
		}
		return r(s[:n], a, next[:n], next[n] == 1)
	}
}

// pointCoverages returns the sample-based EPIC's coverages of a point
// probe, named as the exact ones and built as their sample analogues
// where no model exists; every coverage draws actions A uniformly from
// the action space and the canonicalization's states S′ from the states
// where its transitions act:
//
//   - model: transitions (s, a, s′) resampled from the probe's recorded
//     steps (the nominal simulator under the reference policy: the task's
//     own model of the environment), S′ from the probe's s;
//   - uniform: s and s′ drawn independently from the probe's s and s′
//     (evaluating-rewards' uniform: no dynamics), a uniform;
//   - demonstrations: transitions resampled from the client's own
//     demonstrations (as recorded), S′ from their s.
func pointCoverages(p *ProbeFile, d *Demos, act func(rng *rand.Rand) []float64) ([]irl.SampleCoverage, error) {
	type step struct{ s, a, next []float64 }
	probe := make([]step, len(p.Obs))
	for i := range probe {
		probe[i] = step{withEnd(p.Obs[i], false), p.Act[i], withEnd(p.Next[i], p.Terminated[i])}
	}
	var demo []step
	o, a := 0, 0
	for ep, n := range d.Lengths {
		for t := range n {
			demo = append(demo, step{withEnd(d.Obs[o+t], false), d.Acts[a+t], withEnd(d.Obs[o+t+1], d.Terminal[ep] && t == n-1)})
		}
		o += n + 1
		a += n
	}
	if len(demo) == 0 {
		return nil, errors.New("no demonstration step")
	}
	resample := func(steps []step) func(*rand.Rand) irl.Transition {
		return func(rng *rand.Rand) irl.Transition {
			x := steps[rng.IntN(len(steps))]
			return irl.Transition{State: x.s, Action: x.a, Next: x.next}
		}
	}
	states := func(steps []step) func(*rand.Rand) []float64 {
		return func(rng *rand.Rand) []float64 { return steps[rng.IntN(len(steps))].s }
	}
	uniform, err := irl.NewSampleCoverage(irl.CoverageUniform, states(probe), act,
		func(rng *rand.Rand, _, _ []float64) []float64 { return probe[rng.IntN(len(probe))].next })
	if err != nil {
		return nil, err
	}
	return []irl.SampleCoverage{
		{Name: irl.CoverageModel, Transition: resample(probe), State: states(probe), Action: act},
		uniform,
		{Name: irl.CoverageDemonstrations, Transition: resample(demo), State: states(demo), Action: act},
	}, nil
}

func (s *Study) runPointsFidelity(u unit, sp pointsFidelitySpec, units map[string]unit) error {
	p, _, err := s.readProbe(sp.Env, sp.Seed)
	if err != nil {
		return err
	}
	du, _, _, _, err := s.demosUnit(sp.Env, sp.Client, sp.Seed)
	if err != nil {
		return err
	}
	if du.key != sp.Demos {
		return fmt.Errorf("%s client %d: demonstrations unit key %s, the fidelity unit was planned with %s", sp.Env, sp.Client, du.key, sp.Demos)
	}
	d, err := ReadDemos(du.path(s.units))
	if err != nil {
		return err
	}
	sim, err := registry.Make(sp.Env, sp.Client, nil, 0)
	if err != nil {
		return err
	}
	space := sim.ActionSpace()
	covs, err := pointCoverages(p, d, func(rng *rand.Rand) []float64 { return space.Sample(make([]float64, space.Dim()), rng) })
	if err != nil {
		return fmt.Errorf("%s: %w", du.path(s.units), err)
	}
	rt, err := stepReward(sp.Env, sp.Client, max(sp.FrameSkip, 1))
	if err != nil {
		return err
	}
	rTrue := sampleReward(rt)
	rewards := map[string]irl.SampleReward{}
	for _, m := range s.fidelityMethods(sp.Client) {
		th, err := s.readTheta(units[m], m, sp.Client)
		if err != nil {
			return err
		}
		r, err := sp.Features.RewardFunc(th)
		if err != nil {
			return err
		}
		rewards[m] = sampleReward(r)
	}
	f := FidelityFile{Env: sp.Env, Lattice: LatticePoints, Client: sp.Client, Seed: sp.Seed, EPIC: map[string]CoverageEPIC{},
		Estimate: estimateSample, StdErr: map[string]CoverageEPIC{}, Sample: &sp.Sample, DemoSteps: len(d.Acts)}
	// The true reward against itself: undefined exactly where it is constant.
	self, err := SampleFidelity(covs, map[string]irl.SampleReward{MethodTrue: rTrue}, rTrue, sp.Seed, sp.Sample)
	if err != nil {
		return err
	}
	for _, c := range covs {
		if self[MethodTrue][c.Name] == nil {
			f.TrueConstant = append(f.TrueConstant, c.Name)
		}
	}
	got, err := SampleFidelity(covs, rewards, rTrue, sp.Seed, sp.Sample)
	if err != nil {
		return fmt.Errorf("%s client %d points: %w", sp.Env, sp.Client, err)
	}
	for m, byCov := range got {
		f.EPIC[m], f.StdErr[m] = CoverageEPIC{}, CoverageEPIC{}
		for c, e := range byCov {
			if e == nil {
				f.EPIC[m][c], f.StdErr[m][c] = nil, nil
				continue
			}
			dist, se := e.Distance, e.StdErr
			f.EPIC[m][c], f.StdErr[m][c] = &dist, finitePtr(se)
		}
	}
	return report.WriteJSON(u.path(s.units), f)
}

// estimateSample is FidelityFile.Estimate of a sample-based fidelity unit.
const estimateSample = "sample"

// pointPhiMean returns the mean row of Φ at env's probe points of seed.
func (s *Study) pointPhiMean(env string, seed uint64) ([]float64, error) {
	p, _, err := s.readProbe(env, seed)
	if err != nil {
		return nil, err
	}
	pf, err := s.pointFeatures(env)
	if err != nil {
		return nil, err
	}
	phi, err := p.phi(pf)
	if err != nil {
		return nil, err
	}
	n, d := phi.Dims()
	out := make([]float64, d)
	ones := make([]float64, n)
	for i := range ones {
		ones[i] = 1 / float64(n)
	}
	mat.NewVecDense(d, out).MulVec(phi.T(), mat.NewVecDense(n, ones))
	return out, nil
}
