package control

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/floats"

	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/ot"
	"github.com/fedirl/fedirl/pkg/privacy"
	"github.com/fedirl/fedirl/pkg/tasks"
)

type fusionSpec struct {
	Kind    string             `json:"kind"`
	Version int                `json:"version"`
	Local   []string           `json:"local"`
	Probe   tasks.ControlProbe `json:"probe"`
	Fusion  fusion.Options     `json:"fusion"`
	// Privacy, when set, is the clients' mechanism (see PrivacyConfig).
	Privacy *privacy.Params `json:"privacy,omitempty"`
	// Pilot lists the pilot fits (keys of local IRL units on
	// privacy.pilot_seeds) whose median ‖θ‖₂ is the clipping norm.
	Pilot []string `json:"pilot,omitempty"`
	// Attack, when set, is the poisoning of the last attack.clients
	// clients' θ (absent for an honest fusion, whose key it leaves as it was).
	Attack *AttackConfig `json:"attack,omitempty"`
	// Points (the probe unit's key) and Features make the fusion's
	// support the point probe (lattice "points") instead of Probe's
	// lattice; absent for a lattice, whose keys they leave unchanged.
	Points   string               `json:"points,omitempty"`
	Features *tasks.PointFeatures `json:"features,omitempty"`
}

// FusionFile is the content of a fusion unit.
type FusionFile struct {
	Env           string    `json:"env"`
	Lattice       string    `json:"lattice"`
	Seed          uint64    `json:"seed"`
	Method        string    `json:"method"`
	Theta         []float64 `json:"theta"`
	MarginalError float64   `json:"marginal_error"`
	Iterations    int       `json:"iterations"`
	// Clip is the clipping norm C the clients used under privacy (0 without).
	Clip float64 `json:"clip,omitempty"`
	// JointReason is why a joint fit's rounds ended (Iterations is then
	// their number).
	JointReason string `json:"joint_reason,omitempty"`
}

// fusionOptions returns the fusion of a study method: the study's method
// names are the fusion registry's; every reward-space method shares the
// barycenter block's σ mode, and the transport-free ones besides the
// normalized mean (reward-median, reward-trimmed-mean) take only that; the
// robust θ methods take the registry's defaults (trimmed-mean's β 0.2,
// krum's largest f).
func (s *Study) fusionOptions(method string) fusion.Options {
	switch method {
	case MethodMean:
		return fusion.Options{Method: fusion.MethodMean}
	case fusion.MethodJoint:
		// the pooled unit's tolerance and round cap: the federated fit of the same objective
		return fusion.Options{Method: fusion.MethodJoint, GradTol: s.cfg.Joint.GradTol, MaxRounds: s.cfg.Joint.MaxRounds}
	case MethodNormalizedMean, MethodBarycenter, MethodDebiased:
	default:
		if m, err := fusion.Lookup(method); err == nil && m.Space() == fusion.RewardSpace {
			return fusion.Options{Method: method, SigmaMode: s.cfg.Barycenter.SigmaMode}
		}
		return fusion.Options{Method: method}
	}
	return fusion.Options{Method: method, Solver: ot.IBP, Eps: s.cfg.Barycenter.Epsilon,
		MaxIter: s.cfg.Barycenter.BarycenterIterations, InnerIter: s.cfg.Barycenter.SinkhornIterations,
		SigmaMode: s.cfg.Barycenter.SigmaMode,
	}
}

func (s *Study) fusionUnit(env, lattice, method string, seed uint64) (unit, fusionSpec, []unit, error) {
	var locals []unit
	var keys []string
	for _, c := range s.cfg.TrainingClients() {
		u, _, err := s.irlUnit(env, lattice, c, seed)
		if err != nil {
			return unit{}, fusionSpec{}, nil, err
		}
		locals = append(locals, u)
		keys = append(keys, u.key)
	}
	sp := fusionSpec{Kind: "fusion", Version: unitVersion, Local: keys, Fusion: s.fusionOptions(method), Attack: s.cfg.Attack}
	if lattice == LatticePoints {
		pu, _, _, _, err := s.probeUnit(env, seed)
		if err != nil {
			return unit{}, fusionSpec{}, nil, err
		}
		pf, err := s.pointFeatures(env)
		if err != nil {
			return unit{}, fusionSpec{}, nil, err
		}
		sp.Points, sp.Features = pu.key, &pf
	} else {
		p, err := s.probe(env, lattice)
		if err != nil {
			return unit{}, fusionSpec{}, nil, err
		}
		sp.Probe = p
	}
	if s.cfg.Privacy.Epsilon != 0 {
		sp.Privacy = &privacy.Params{Epsilon: s.cfg.Privacy.Epsilon, Delta: s.cfg.Privacy.Delta, Clip: s.cfg.Env[env].DPClip,
			Rounds: 1, Conversion: privacy.ConversionAnalytic}
		pilots, err := s.pilotUnits(env, lattice)
		if err != nil {
			return unit{}, fusionSpec{}, nil, err
		}
		for _, pu := range pilots {
			sp.Pilot = append(sp.Pilot, pu.key)
		}
	}
	return unit{"fusion", fmt.Sprintf("%s-%s-%s-s%d", env, lattice, method, seed), key(sp), ".json"}, sp, locals, nil
}

// fusionTask returns the federation task of fusion unit u: a control task
// on Probe's lattice, or a points task on the point probe (its (s, a)
// with their cost weights and Φ at the points, tasks.PointProbe).
func (s *Study) fusionTask(u unit, sp fusionSpec, env string, seed uint64, clients int) (federation.TaskSpec, error) {
	spec := federation.TaskSpec{ID: u.name, Quorum: clients, MinClients: clients, Rounds: 1}
	var err error
	if sp.Features == nil {
		spec.EnvFamily, spec.ThetaDim = tasks.Control{}.Name(), sp.Probe.RBF.Dim()
		spec.Probe, err = json.Marshal(sp.Probe)
		return spec, err
	}
	p, pu, err := s.readProbe(env, seed)
	if err != nil {
		return spec, err
	}
	if pu.key != sp.Points {
		return spec, fmt.Errorf("fusion %s: probe unit key %s, the fusion was planned with %s", u.name, pu.key, sp.Points)
	}
	sim, err := registry.Make(env, nominalClient, nil, 0)
	if err != nil {
		return spec, err
	}
	spec.EnvFamily, spec.ThetaDim = tasks.PointsFamilyName, sp.Features.Dim()
	spec.Probe, err = p.taskProbe(*sp.Features, pointNames(sim))
	return spec, err
}

// fixedLearner submits a θ learned earlier (a local IRL unit) with that
// fit's convergence verdict.
type fixedLearner struct {
	fit IRLFile
}

func (l fixedLearner) Learn(context.Context, federation.TaskSpec, []float64) (federation.LocalResult, error) {
	f := l.fit
	return federation.LocalResult{Theta: slices.Clone(f.Theta), DemoCount: f.DemoSteps, Iterations: f.Iterations,
		GradNorm: f.GradNorm, Converged: f.Converged, StopReason: f.StopReason}, nil
}

func (s *Study) runFusion(ctx context.Context, u unit, sp fusionSpec, locals []unit, env, lattice, method string, seed uint64) error {
	if method == fusion.MethodJoint {
		return s.runJoint(ctx, u, sp, env, lattice, seed)
	}
	var clients []federation.LocalClient
	for i, lu := range locals {
		var f IRLFile
		if err := readJSON(lu.path(s.units), &f); err != nil {
			return err
		}
		clients = append(clients, federation.LocalClient{ID: fmt.Sprintf("client-%06d", i), Learner: fixedLearner{f}})
	}
	if sp.Attack != nil {
		if err := s.poison(clients, sp, env, seed); err != nil {
			return fmt.Errorf("fusion %s: %w", u.name, err)
		}
	}
	spec, err := s.fusionTask(u, sp, env, seed, len(clients))
	if err != nil {
		return err
	}
	if spec.Fusion, err = tasks.EncodeFusion(sp.Fusion); err != nil {
		return err
	}
	run := federation.InProcessConfig{Fuser: s.fuser()}
	clip := 0.0
	if sp.Privacy != nil {
		params := *sp.Privacy
		if len(sp.Pilot) > 0 {
			if params.Clip, err = s.pilotClip(env, lattice); err != nil {
				return err
			}
		}
		clip = params.Clip
		// One noise stream per client, seed, environment and ε, whatever the
		// method: the fusions of a seed receive the same noisy θ_i, and each
		// ε (and environment) draws its own noise.
		stream := fmt.Sprintf("dp-noise/%s/eps=%g", env, params.Epsilon)
		run.Privacy = func(i int) *federation.ClientPrivacy {
			return &federation.ClientPrivacy{Params: params, Noise: rand.New(rand.NewPCG(seedOf(seed, stream, i), 0))}
		}
	}
	fused, _, err := federation.RunInProcess(ctx, spec, clients, run)
	if err != nil {
		return fmt.Errorf("federation %s: %w", u.name, err)
	}
	if len(fused) != 1 {
		return fmt.Errorf("federation %s: %d rounds fused, want 1", u.name, len(fused))
	}
	return report.WriteJSON(u.path(s.units), FusionFile{Env: env, Lattice: lattice, Seed: seed, Method: method, Theta: fused[0].Theta,
		MarginalError: fused[0].MarginalError, Iterations: fused[0].Iterations, Clip: clip})
}

// pilotUnits returns the local IRL units of the training clients on the
// pilot seeds (privacy.pilot_seeds), in order; none without pilot seeds.
func (s *Study) pilotUnits(env, lattice string) ([]unit, error) {
	var out []unit
	for _, ps := range s.cfg.Privacy.PilotSeeds {
		for _, c := range s.cfg.TrainingClients() {
			u, _, err := s.irlUnit(env, lattice, c, ps)
			if err != nil {
				return nil, err
			}
			out = append(out, u)
		}
	}
	return out, nil
}

// pilotClip returns the clipping norm chosen on pilot data: the median
// ‖θ_i‖₂ of the pilot fits.
func (s *Study) pilotClip(env, lattice string) (float64, error) {
	us, err := s.pilotUnits(env, lattice)
	if err != nil {
		return 0, err
	}
	norms := make([]float64, len(us))
	for i, u := range us {
		var f IRLFile
		if err := readJSON(u.path(s.units), &f); err != nil {
			return 0, fmt.Errorf("pilot fit: %w", err)
		}
		norms[i] = floats.Norm(f.Theta, 2)
	}
	slices.Sort(norms)
	n := len(norms)
	if n == 0 {
		return 0, fmt.Errorf("privacy.pilot_seeds: no pilot fit for %s", env)
	}
	c := (norms[(n-1)/2] + norms[n/2]) / 2
	if !(c > 0) {
		return 0, fmt.Errorf("privacy.pilot_seeds: the pilot fits of %s have median ‖θ‖ %v, no clipping norm", env, c)
	}
	return c, nil
}
