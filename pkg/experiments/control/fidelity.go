package control

import (
	"context"
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
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
	// Coverages are the EPIC coverages scored (irl.Coverages); Demos is the
	// key of the client's demonstrations unit, which the demonstrations
	// coverage reads.
	Coverages []irl.Coverage `json:"coverages"`
	Demos     string         `json:"demos,omitempty"`
	// Rollouts and Expert (the expert unit's key) specify the model of a
	// simulator whose state cannot be set, built from the expert's
	// rollouts; absent for the others, whose keys they leave unchanged.
	Rollouts *RolloutConfig `json:"rollouts,omitempty"`
	Expert   string         `json:"expert,omitempty"`
}

// FidelityFile is the content of a fidelity unit: per method, the EPIC
// distance between its reward and the true lattice reward on one client's
// lattice model (latticeModel), under each of irl.Coverages by name:
//
//	"epic_to_true": {"barycenter": {"model": 0.12, "uniform": 0.31, "demonstrations": null}, …}
//
// model is fedirl's coverage (states uniform over the non-terminal cells,
// actions uniform, the terminal state's potential 0, Pearson weights from the
// model's transitions); uniform is evaluating-rewards' default (all states,
// all (s,a,s′) triples uniform); demonstrations takes D_S from the client's
// demonstrations snapped to the lattice (the demos unit's trajectories, as
// the local IRL sees them; a held-out client's expert demonstrates too,
// though its demonstrations play no part in any fit), counting the states
// where an action is taken, with the model's transitions. null means EPIC is
// undefined under that coverage: the learned reward, or the true one (see
// TrueConstant), is constant after canonicalization on the coverage's
// support. LunarLander's lattice model and true reward are built from its
// expert's rollouts (latticeModel), as for its ladder and local IRL.
type FidelityFile struct {
	Env     string                  `json:"env"`
	Lattice string                  `json:"lattice"`
	Client  int                     `json:"client"`
	Seed    uint64                  `json:"seed"`
	EPIC    map[string]CoverageEPIC `json:"epic_to_true"`
	// TrueConstant lists the coverages under which the true reward itself
	// is constant after canonicalization (every method's EPIC is null
	// there), e.g. CartPole's constant per-step reward on demonstrations
	// that never fall.
	TrueConstant []irl.Coverage `json:"true_constant,omitempty"`
	// DemoStates is the number of distinct non-terminal lattice states the
	// demonstrations act in (the demonstrations coverage's support of s),
	// DemoSteps the number of actions they take.
	DemoStates int `json:"demo_states"`
	DemoSteps  int `json:"demo_steps"`
	// Estimate is "sample" for a point probe's unit, whose EPIC is the
	// sample-based estimate (SampleFidelity, on the coverages of
	// pointCoverages) with its jackknife standard error in StdErr and its
	// sample sizes in Sample; absent for the exact EPIC on a lattice model.
	Estimate string                  `json:"estimate,omitempty"`
	StdErr   map[string]CoverageEPIC `json:"epic_stderr,omitempty"`
	Sample   *SampleFidelityConfig   `json:"sample,omitempty"`
}

// CoverageEPIC maps a coverage name (irl.CoverageModel, irl.CoverageUniform,
// irl.CoverageDemonstrations) to an EPIC distance, nil (JSON null) where
// EPIC is undefined under that coverage.
type CoverageEPIC map[irl.Coverage]*float64

// fidelityMethods are the methods whose reward the fidelity unit scores.
func (s *Study) fidelityMethods(client int) []string {
	var out []string
	for _, m := range s.cfg.Methods {
		if m == MethodTrue || (perClientMethod(m) && s.heldOut(client)) {
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
	sp := fidelitySpec{Kind: "fidelity", Version: unitVersion, Env: env, Client: client, Seed: seed, Probe: p,
		Model: s.modelConfig(env, client, seed), Rewards: map[string]string{}, Coverages: irl.Coverages()}
	du, _, _, _, err := s.demosUnit(env, client, seed)
	if err != nil {
		return unit{}, fidelitySpec{}, nil, err
	}
	sp.Demos = du.key
	if sp.Rollouts, sp.Expert, err = s.rollouts(env, client, seed); err != nil {
		return unit{}, fidelitySpec{}, nil, err
	}
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
	f := FidelityFile{Env: sp.Env, Lattice: lattice, Client: sp.Client, Seed: sp.Seed, EPIC: map[string]CoverageEPIC{}}
	g, phi, err := s.features(sp.Probe)
	if err != nil {
		return err
	}
	m, rTrue, phi, err := s.latticeModel(ctx, sp.Probe, g, phi, sp.Env, sp.Client, sp.Seed, sp.Model, sp.Rollouts, workers)
	if err != nil {
		return fmt.Errorf("%s client %d %s lattice model: %w", sp.Env, sp.Client, lattice, err)
	}
	visits, err := s.demoVisits(sp, g, m)
	if err != nil {
		return err
	}
	for _, v := range visits {
		if v > 0 {
			f.DemoStates++
		}
		f.DemoSteps += int(v)
	}
	opts := make([]irl.EPICOptions, len(sp.Coverages))
	for i, c := range sp.Coverages {
		opts[i] = irl.EPICOptions{Coverage: c}
		if c == irl.CoverageDemonstrations {
			opts[i].StateWeights = visits
		}
		// The true reward against itself: undefined exactly where it is constant.
		if _, err := irl.EPIC(m, rTrue, rTrue, opts[i]); errors.Is(err, irl.ErrConstantReward) {
			f.TrueConstant = append(f.TrueConstant, c)
		} else if err != nil {
			return fmt.Errorf("%s client %d %s: EPIC of the true reward under the %s coverage: %w", sp.Env, sp.Client, lattice, c, err)
		}
	}
	r := make([]float64, m.NumPairs())
	for _, meth := range s.fidelityMethods(sp.Client) {
		th, err := s.readTheta(units[meth], meth, sp.Client)
		if err != nil {
			return err
		}
		var rv mat.VecDense
		rv.MulVec(phi, mat.NewVecDense(len(th), th))
		for k := range r {
			r[k] = rv.AtVec(k)
		}
		byCov := CoverageEPIC{}
		for i, c := range sp.Coverages {
			res, err := irl.EPIC(m, r, rTrue, opts[i])
			if errors.Is(err, irl.ErrConstantReward) {
				byCov[c] = nil // undefined, never 0
				continue
			}
			if err != nil {
				return fmt.Errorf("%s client %d %s: EPIC of %s under the %s coverage: %w", sp.Env, sp.Client, lattice, meth, c, err)
			}
			byCov[c] = &res.Distance
		}
		f.EPIC[meth] = byCov
	}
	return report.WriteJSON(u.path(s.units), f)
}

// demoVisits returns the state visits (irl.StateVisits) of the client's
// demonstrations snapped to g, the trajectories the local IRL fits.
func (s *Study) demoVisits(sp fidelitySpec, g *discretize.Grid, m *mdp.MDP) ([]float64, error) {
	du, _, _, _, err := s.demosUnit(sp.Env, sp.Client, sp.Seed)
	if err != nil {
		return nil, err
	}
	if du.key != sp.Demos {
		return nil, fmt.Errorf("%s client %d: demonstrations unit key %s, the fidelity unit was planned with %s", sp.Env, sp.Client, du.key, sp.Demos)
	}
	d, err := ReadDemos(du.path(s.units))
	if err != nil {
		return nil, err
	}
	demos, err := d.Trajectories(g)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", du.path(s.units), err)
	}
	visits, err := irl.StateVisits(m, demos)
	if err != nil {
		return nil, fmt.Errorf("%s on the %s lattice model: %w", du.path(s.units), sp.Env, err)
	}
	return visits, nil
}
