package control

import (
	"context"
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// ---- fidelity: the EPIC distance of every learned reward to the true one ----

type fidelitySpec struct {
	Kind    string                 `json:"kind"`
	Version int                    `json:"version"`
	Env     string                 `json:"env"`
	Client  int                    `json:"client"`
	Seed    uint64                 `json:"seed"`
	Probe   tasks.ControlProbe     `json:"probe"`
	Model   discretize.ModelConfig `json:"model"`
	// Rewards maps a method to the key of the unit holding its θ.
	Rewards map[string]string `json:"rewards"`
}

// FidelityFile is the content of a fidelity unit: per method, the EPIC
// distance (irl.EPIC) between its reward and the true lattice reward on one
// client's lattice model, with states uniform over the cells, actions
// uniform and successors from the model.
type FidelityFile struct {
	Env     string             `json:"env"`
	Lattice string             `json:"lattice"`
	Client  int                `json:"client"`
	Seed    uint64             `json:"seed"`
	EPIC    map[string]float64 `json:"epic_to_true"`
	// Constant lists the methods whose reward is constant on the lattice
	// (EPIC is undefined for them).
	Constant []string `json:"constant,omitempty"`
}

// fidelityMethods are the methods whose reward the fidelity unit scores.
func (s *Study) fidelityMethods(client int) []string {
	var out []string
	for _, m := range s.cfg.Methods {
		if m == MethodTrue || (m == MethodLocal && s.heldOut(client)) {
			continue
		}
		out = append(out, m)
	}
	return out
}

func (s *Study) fidelityUnit(env, lattice string, client int, seed uint64) (unit, fidelitySpec, map[string]unit, error) {
	p, err := s.probe(env, lattice)
	if err != nil {
		return unit{}, fidelitySpec{}, nil, err
	}
	sp := fidelitySpec{"fidelity", unitVersion, env, client, seed, p, s.modelConfig(env, client), map[string]string{}}
	units := map[string]unit{}
	for _, m := range s.fidelityMethods(client) {
		ru, err := s.rewardUnit(evalJob{env, lattice, m, seed, client})
		if err != nil {
			return unit{}, fidelitySpec{}, nil, err
		}
		sp.Rewards[m], units[m] = ru.key, ru
	}
	return unit{"fidelity", fmt.Sprintf("%s-%s-c%d-s%d", env, lattice, client, seed), key(sp), ".json"}, sp, units, nil
}

func (s *Study) runFidelity(ctx context.Context, u unit, sp fidelitySpec, lattice string, units map[string]unit, workers int) error {
	f := FidelityFile{Env: sp.Env, Lattice: lattice, Client: sp.Client, Seed: sp.Seed, EPIC: map[string]float64{}}
	if ce, _ := tasks.LookupControl(sp.Env); ce.Counted {
		return report.WriteJSON(u.path(s.dir), f) // no true lattice reward: no EPIC
	}
	g, phi, err := sp.Probe.Features()
	if err != nil {
		return err
	}
	m, rTrue, err := s.model(ctx, key(sp.Probe), g, sp.Env, sp.Client, sp.Model, workers)
	if err != nil {
		return fmt.Errorf("%s client %d %s lattice model: %w", sp.Env, sp.Client, lattice, err)
	}
	r := make([]float64, m.NumPairs())
	for _, meth := range s.fidelityMethods(sp.Client) {
		var th struct {
			Theta []float64 `json:"theta"`
		}
		if err := readJSON(units[meth].path(s.dir), &th); err != nil {
			return err
		}
		var rv mat.VecDense
		rv.MulVec(phi, mat.NewVecDense(len(th.Theta), th.Theta))
		for k := range r {
			r[k] = rv.AtVec(k)
		}
		res, err := irl.EPIC(m, r, rTrue, irl.EPICOptions{})
		if errors.Is(err, irl.ErrConstantReward) {
			f.Constant = append(f.Constant, meth)
			continue
		}
		if err != nil {
			return fmt.Errorf("%s client %d %s: EPIC of %s: %w", sp.Env, sp.Client, lattice, meth, err)
		}
		f.EPIC[meth] = res.Distance
	}
	return report.WriteJSON(u.path(s.dir), f)
}
