package control

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"

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
}

func (s *Study) fusionOptions(method string) fusion.Options {
	if method == MethodMean {
		return fusion.Options{Method: fusion.MethodMean}
	}
	o := fusion.Options{Method: fusion.MethodBarycentric, Solver: ot.IBP, Eps: s.cfg.Barycenter.Epsilon,
		MaxIter: s.cfg.Barycenter.BarycenterIterations, InnerIter: s.cfg.Barycenter.SinkhornIterations}
	if method == MethodDebiased {
		o.Solver = ot.Debiased
	}
	return o
}

func (s *Study) fusionUnit(env, lattice, method string, seed uint64) (unit, fusionSpec, []unit, error) {
	var locals []unit
	var keys []string
	for c := range s.cfg.NumberOfClients {
		u, _, err := s.irlUnit(env, lattice, c, seed)
		if err != nil {
			return unit{}, fusionSpec{}, nil, err
		}
		locals = append(locals, u)
		keys = append(keys, u.key)
	}
	p, err := s.probe(env, lattice)
	if err != nil {
		return unit{}, fusionSpec{}, nil, err
	}
	sp := fusionSpec{"fusion", unitVersion, keys, p, s.fusionOptions(method), nil}
	if s.cfg.Privacy.Epsilon != 0 {
		sp.Privacy = &privacy.Params{Epsilon: s.cfg.Privacy.Epsilon, Delta: s.cfg.Privacy.Delta, Clip: s.cfg.Env[env].DPClip,
			Rounds: 1, Conversion: privacy.ConversionAnalytic}
	}
	return unit{"fusion", fmt.Sprintf("%s-%s-%s-s%d", env, lattice, method, seed), key(sp), ".json"}, sp, locals, nil
}

// fixedLearner submits a θ learned earlier (a local IRL unit).
type fixedLearner struct {
	theta []float64
	demos int
}

func (l fixedLearner) Learn(context.Context, federation.TaskSpec, []float64) (federation.LocalResult, error) {
	return federation.LocalResult{Theta: slices.Clone(l.theta), DemoCount: l.demos}, nil
}

func (s *Study) runFusion(ctx context.Context, u unit, sp fusionSpec, locals []unit, env, lattice, method string, seed uint64) error {
	var clients []federation.LocalClient
	for i, lu := range locals {
		var f IRLFile
		if err := readJSON(lu.path(s.dir), &f); err != nil {
			return err
		}
		clients = append(clients, federation.LocalClient{ID: fmt.Sprintf("client-%06d", i), Learner: fixedLearner{f.Theta, f.DemoSteps}})
	}
	probe, err := json.Marshal(sp.Probe)
	if err != nil {
		return err
	}
	spec := federation.TaskSpec{ID: u.name, EnvFamily: tasks.Control{}.Name(), Probe: probe, ThetaDim: sp.Probe.RBF.Dim(),
		Quorum: len(clients), MinClients: len(clients), Rounds: 1}
	if spec.Fusion, err = tasks.EncodeFusion(sp.Fusion); err != nil {
		return err
	}
	run := federation.InProcessConfig{Fuser: tasks.NewFuser()}
	if sp.Privacy != nil {
		// One noise stream per client and seed, whatever the method: the
		// fusions of a seed receive the same noisy θ_i.
		run.Privacy = func(i int) *federation.ClientPrivacy {
			return &federation.ClientPrivacy{Params: *sp.Privacy, Noise: rand.New(rand.NewPCG(seedOf(seed, "dp-noise", i), 0))}
		}
	}
	fused, _, err := federation.RunInProcess(ctx, spec, clients, run)
	if err != nil {
		return fmt.Errorf("federation %s: %w", u.name, err)
	}
	if len(fused) != 1 {
		return fmt.Errorf("federation %s: %d rounds fused, want 1", u.name, len(fused))
	}
	return report.WriteJSON(u.path(s.dir), FusionFile{env, lattice, seed, method, fused[0].Theta, fused[0].MarginalError, fused[0].Iterations})
}
