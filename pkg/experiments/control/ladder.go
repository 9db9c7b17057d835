package control

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// The validation ladder checks every rung of the pipeline in the run
// itself, before any fusion verdict:
//
//	(a) model:    the greedy planner of each client's lattice model under the
//	              true lattice reward, rolled in the client's real simulator
//	              (ladder unit: PlannerReturn);
//	(b) features: PPO trained on the least-squares projection of the true
//	              lattice reward onto the features (the "projected" method,
//	              whose θ the ladder unit computes);
//	(c) fit:      the local IRL's relative feature gap and the bias (and
//	              absorbing) column's μ_D − μ_π (irl unit).
//
// Returns are normalized per client and seed as (R − R_random)/(R_expert −
// R_random), with R_random from the baseline unit and R_expert the client's
// own expert, so 0 is a uniform random policy and 1 the expert.

// ---- ladder: rungs (a) and (b) per client and lattice ----

type ladderSpec struct {
	Kind     string                 `json:"kind"`
	Version  int                    `json:"version"`
	Env      string                 `json:"env"`
	Client   int                    `json:"client"`
	Seed     uint64                 `json:"seed"`
	Probe    tasks.ControlProbe     `json:"probe"`
	Model    discretize.ModelConfig `json:"model"`
	Episodes int                    `json:"episodes"`
	// Rollouts and Expert (the expert unit's key) specify the model of a
	// simulator whose state cannot be set, built from the expert's
	// rollouts; absent for the others, whose keys they leave unchanged.
	Rollouts *RolloutConfig `json:"rollouts,omitempty"`
	Expert   string         `json:"expert,omitempty"`
	// Projection is "observed" where rung (b) projects over the pairs
	// whose reward the rollouts observed (a model built from rollouts; see
	// runLadder); absent, over every non-terminal pair.
	Projection string `json:"projection,omitempty"`
}

// projectionObserved is ladderSpec.Projection for models built from rollouts.
const projectionObserved = "observed"

// LadderFile is the content of a ladder unit: rung (a)'s planner return and
// rung (b)'s projected θ on one client's lattice model.
type LadderFile struct {
	Env     string `json:"env"`
	Lattice string `json:"lattice"`
	Client  int    `json:"client"`
	Seed    uint64 `json:"seed"`
	Pairs   int    `json:"pairs"`
	// Available reports that rungs (a) and (b) were computed: every
	// environment has a true lattice reward, sampled in cells or, for
	// LunarLander, from replay clones of its expert's rollouts. (Ladder
	// files written before LunarLander's were computed hold false.)
	Available bool `json:"available"`
	// PlannerReturn is the mean true return of the true-reward lattice
	// planner (discretize.Planner on infinite-horizon value iteration) over
	// Episodes episodes of the real simulator.
	PlannerReturn float64 `json:"planner_return"`
	Episodes      int     `json:"episodes"`
	// Theta is the least-squares projection of the true lattice reward onto
	// the features over the non-terminal pairs; ProjectionR2 its R².
	Theta        []float64 `json:"theta"`
	ProjectionR2 float64   `json:"projection_r2"`
	// ProjectionPairs is the number of pairs projected over where it is
	// not every non-terminal pair (a model built from rollouts: the pairs
	// of the cells its clones observed).
	ProjectionPairs int `json:"projection_pairs,omitempty"`
	// Probe is "points" for a point probe's unit: rung (a) does not apply
	// (Available false: no lattice model to plan on) and rung (b)'s
	// projection is over the probe's ProjectionPairs points of the
	// client's true reward there (runPointsLadder).
	Probe string `json:"probe,omitempty"`
}

// modelConfig returns the lattice-model settings of one client of env: its
// own in-cell sampling stream and, with irl.match_discount, the evaluation
// PPO preset's γ.
//
// The model's sampling seed follows the client and the study seed, so seeds
// repeat the model's sampling too, not only the experts, demonstrations and
// PPO runs.
func (s *Study) modelConfig(env string, client int, seed uint64) discretize.ModelConfig {
	m := s.cfg.Model.WithDefaults()
	m.Seed = seedOf(m.Seed, "model", client, int(seed))
	if s.cfg.IRL.MatchDiscount {
		if c, err := preset(env, s.cfg.Env[env].EvaluationPreset); err == nil { // Validate checked the preset
			m.Gamma = c.Gamma
		}
	}
	if k := s.frameSkip(env); k > 1 { // a lattice step of k frames
		m.Gamma = math.Pow(m.Gamma, float64(k))
	}
	return m
}

func (s *Study) ladderUnit(env, lattice string, client int, seed uint64) (unit, ladderSpec, error) {
	p, err := s.probe(env, lattice)
	if err != nil {
		return unit{}, ladderSpec{}, err
	}
	sp := ladderSpec{Kind: "ladder", Version: unitVersion, Env: env, Client: client, Seed: seed, Probe: p,
		Model: s.modelConfig(env, client, seed), Episodes: s.cfg.Ladder.Episodes}
	if sp.Rollouts, sp.Expert, err = s.rollouts(env, client, seed); err != nil {
		return unit{}, ladderSpec{}, err
	}
	if sp.Rollouts != nil {
		sp.Projection = projectionObserved
	}
	return unit{"ladder", fmt.Sprintf("%s-%s-c%d-s%d", env, lattice, client, seed), key(sp), ".json"}, sp, nil
}

// trueModel builds a client's sampled lattice model (infinite horizon) and
// the true lattice reward (the simulator's mean reward over each row's
// samples; 0 on the terminal state).
func trueModel(ctx context.Context, g *discretize.Grid, env string, client int, cfg discretize.ModelConfig, workers int) (*mdp.MDP, []float64, error) {
	params, err := classic.ClientParams(env, client)
	if err != nil {
		return nil, nil, err
	}
	return discretize.SampleModelReward(ctx, g, func() (discretize.Simulator, error) { return classic.MakeWithParams(env, params) }, cfg, workers)
}

func (s *Study) runLadder(ctx context.Context, u unit, sp ladderSpec, lattice string, workers int) error {
	g, phi, err := s.features(sp.Probe)
	if err != nil {
		return err
	}
	f := LadderFile{Env: sp.Env, Lattice: lattice, Client: sp.Client, Seed: sp.Seed, Pairs: g.NumPairs(), Episodes: sp.Episodes, Available: true}
	ce, err := tasks.LookupControl(sp.Env)
	if err != nil {
		return err
	}
	m, r, phi, err := s.latticeModel(ctx, sp.Probe, g, phi, sp.Env, sp.Client, sp.Seed, sp.Model, sp.Rollouts, workers)
	if err != nil {
		return fmt.Errorf("%s client %d %s lattice model: %w", sp.Env, sp.Client, lattice, err)
	}
	// (a) plan on the model with the true reward, act in the real simulator.
	ws := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-6, Anderson: 20, Workers: workers})
	v := ws.ValueIteration(nil, r)
	ws.Close()
	if !v.Converged {
		return fmt.Errorf("%s client %d %s: value iteration did not converge (residual %g)", sp.Env, sp.Client, lattice, v.Residual)
	}
	pl, err := discretize.NewPlanner(g, v.Q)
	if err != nil {
		return err
	}
	skip := 1
	if sp.Rollouts != nil {
		skip = sp.Rollouts.FrameSkip
	}
	env, err := heldEnv(sp.Env, sp.Client, skip, seedOf(sp.Seed, "ladder-noise", sp.Client))
	if err != nil {
		return err
	}
	// The planner acts on the lattice's state: the simulator's full state
	// where the model was sampled on it, the observation's coordinates
	// where it was built from rollouts of observations.
	state := make([]float64, g.StateDim())
	stateOf := func(obs []float64) []float64 { return ce.StateOf(state, obs) }
	if sp.Rollouts == nil {
		st, ok := env.(interface{ State([]float64) []float64 })
		if !ok {
			return fmt.Errorf("%s: the simulator's state cannot be read for the planner", sp.Env)
		}
		stateOf = func([]float64) []float64 { return st.State(state) }
	}
	act := make([]float64, g.ActionDim())
	ret, err := episodeReturns(ctx, env, sp.Episodes, seedOf(sp.Seed, "ladder-reset", sp.Client),
		func(obs []float64) []float64 { return pl.Act(act, stateOf(obs)) })
	if err != nil {
		return err
	}
	f.PlannerReturn = floats.Sum(ret) / float64(len(ret))
	// (b) project the true reward onto the features (non-terminal pairs).
	var pj *projector
	target := r
	if sp.Projection == projectionObserved {
		// A model built from rollouts knows the true reward only in the
		// cells its clones observed; the others carry the model's
		// placeholder (a zero-reward self-loop or the halt reward), which
		// no feature set should be asked to fit.
		obs := discretize.ObservedPairs(m, r, sp.Rollouts.HaltReward)
		rows := make([]int, 0, len(obs))
		for k, o := range obs {
			if o {
				rows = append(rows, k)
			}
		}
		_, d := phi.Dims()
		if len(rows) < d {
			return fmt.Errorf("%s client %d %s: the rollouts observed %d pairs, fewer than the %d features", sp.Env, sp.Client, lattice, len(rows), d)
		}
		sub := mat.NewDense(len(rows), d, nil)
		target = make([]float64, len(rows))
		for i, k := range rows {
			sub.SetRow(i, phi.RawRowView(k))
			target[i] = r[k]
		}
		f.ProjectionPairs = len(rows)
		pj, err = newProjector(sub, len(rows))
	} else {
		pj, err = s.shared.projector(key(sp.Probe), phi, g.NumCells()*g.NumActions())
	}
	if err != nil {
		return fmt.Errorf("%s client %d %s: %w", sp.Env, sp.Client, lattice, err)
	}
	f.Theta, f.ProjectionR2 = pj.project(target)
	return report.WriteJSON(u.path(s.units), f)
}
