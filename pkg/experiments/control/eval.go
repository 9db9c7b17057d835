package control

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

type evalSpec struct {
	Kind     string     `json:"kind"`
	Version  int        `json:"version"`
	Env      string     `json:"env"`
	Client   int        `json:"client"`
	Seed     uint64     `json:"seed"`
	Reward   string     `json:"reward"` // key of the θ unit, or "true"
	PPO      ppo.Config `json:"ppo"`
	Steps    int        `json:"steps"`
	LogEvery int        `json:"log_every"`
	// FrameSkip is env.<id>.evaluation_frame_skip when > 1: PPO decides
	// once every FrameSkip frames and holds its action (envs.FrameSkip),
	// so a learned reward is the reward of one held (lattice) step.
	FrameSkip int `json:"frame_skip,omitempty"`
	// Personalized marks the client's personalized θ of the pooled unit
	// Reward (whose pooled θ is the same unit's other reward).
	Personalized bool `json:"personalized,omitempty"`
}

// EvalFile is the content of an evaluation unit: the PPO learning curve.
type EvalFile struct {
	Env     string      `json:"env"`
	Lattice string      `json:"lattice"`
	Method  string      `json:"method"`
	Seed    uint64      `json:"seed"`
	Client  int         `json:"client"`
	HeldOut bool        `json:"held_out"`
	Curve   []CurveStep `json:"curve"`
	// FinalTrue is the last evaluation's mean true return of the mode policy.
	FinalTrue float64 `json:"final_true"`
}

// CurveStep is one logged point of an evaluation run.
type CurveStep struct {
	Step int `json:"step"`
	// True is the mean true return of the mode policy over 10 episodes.
	True float64 `json:"true"`
	// TrainTrue and TrainLearned are the mean true and learned returns of the last 100 training episodes.
	TrainTrue    float64 `json:"train_true"`
	TrainLearned float64 `json:"train_learned"`
}

// evalJob identifies one evaluation run.
type evalJob struct {
	Env, Lattice, Method string
	Seed                 uint64
	Client               int
}

func (s *Study) heldOut(client int) bool { return !slices.Contains(s.cfg.TrainingClients(), client) }

// rewardUnit returns the unit whose θ method uses, and its lattice's probe.
func (s *Study) rewardUnit(j evalJob) (unit, error) {
	switch j.Method {
	case MethodTrue:
		return unit{}, nil
	case MethodLocal:
		u, _, err := s.irlUnit(j.Env, j.Lattice, j.Client, j.Seed)
		return u, err
	case MethodProjected:
		if j.Lattice == LatticePoints {
			u, _, err := s.pointsLadderUnit(j.Env, j.Client, j.Seed)
			return u, err
		}
		u, _, err := s.ladderUnit(j.Env, j.Lattice, j.Client, j.Seed)
		return u, err
	case MethodPooled, MethodPersonalized:
		u, _, _, err := s.pooledUnit(j.Env, j.Lattice, j.Seed)
		return u, err
	default:
		u, _, _, err := s.fusionUnit(j.Env, j.Lattice, j.Method, j.Seed)
		return u, err
	}
}

func (s *Study) evalUnit(j evalJob) (unit, evalSpec, error) {
	ec := s.cfg.Env[j.Env]
	c, err := preset(j.Env, ec.EvaluationPreset)
	if err != nil {
		return unit{}, evalSpec{}, err
	}
	if s.cfg.NormalizeReward {
		c.NormalizeReward = true // every method alike, the true reward included
	}
	ru, err := s.rewardUnit(j)
	if err != nil {
		return unit{}, evalSpec{}, err
	}
	rk := "true"
	if j.Method != MethodTrue {
		rk = ru.key
	}
	sp := evalSpec{Kind: "eval", Version: unitVersion, Env: j.Env, Client: j.Client, Seed: j.Seed, Reward: rk, PPO: c,
		Steps: ec.EvaluationSteps, LogEvery: s.cfg.LogEvery}
	if ec.EvaluationFrameSkip > 1 {
		sp.FrameSkip = ec.EvaluationFrameSkip
	}
	sp.Personalized = j.Method == MethodPersonalized
	return unit{"eval", fmt.Sprintf("%s-%s-%s-c%d-s%d", j.Env, j.Lattice, j.Method, j.Client, j.Seed), key(sp), ".json"}, sp, nil
}

func (s *Study) runEval(ctx context.Context, u unit, sp evalSpec, j evalJob) error {
	opts := ppo.Options{Seed: seedOf(j.Seed, "eval", j.Client), Workers: 1, EvalEvery: sp.LogEvery, EvalEpisodes: 10}
	if j.Method != MethodTrue {
		ru, err := s.rewardUnit(j)
		if err != nil {
			return err
		}
		theta, err := s.readTheta(ru, j.Method, j.Client)
		if err != nil {
			return err
		}
		var r func(obs, action, next []float64, terminated bool) float64
		if j.Lattice == LatticePoints {
			pf, err := s.pointFeatures(j.Env)
			if err != nil {
				return err
			}
			r, err = pf.RewardFunc(theta)
			if err != nil {
				return err
			}
		} else {
			p, err := s.probe(j.Env, j.Lattice)
			if err != nil {
				return err
			}
			if r, err = p.RewardFunc(theta); err != nil {
				return err
			}
		}
		opts.Reward = r
	}
	mk := clientMaker(j.Env, j.Client, j.Seed)
	if sp.FrameSkip > 1 {
		mk = heldMaker(mk, sp.FrameSkip)
	}
	tr, err := ppo.NewTrainer(sp.PPO, mk, opts)
	if err != nil {
		return err
	}
	if err := tr.Learn(ctx, sp.Steps); err != nil {
		return err
	}
	f := EvalFile{Env: j.Env, Lattice: j.Lattice, Method: j.Method, Seed: j.Seed, Client: j.Client, HeldOut: s.heldOut(j.Client)}
	for _, p := range tr.Curve() {
		if p.EvalReturn == nil {
			continue
		}
		f.Curve = append(f.Curve, CurveStep{p.Steps, *p.EvalReturn, p.MeanTrueReturn, p.MeanLearnedReturn})
	}
	if len(f.Curve) == 0 {
		return fmt.Errorf("evaluation %s: no evaluation point in %d steps (log_every %d)", u.name, sp.Steps, sp.LogEvery)
	}
	f.FinalTrue = f.Curve[len(f.Curve)-1].True
	if math.IsNaN(f.FinalTrue) {
		return fmt.Errorf("evaluation %s: NaN return", u.name)
	}
	if s.clipJob(j) {
		// The policy a clip shows, written before the unit it belongs to:
		// an evaluation unit on disk has its policy beside it.
		ck, err := tr.Policy().Checkpoint(&sp.PPO)
		if err != nil {
			return err
		}
		if err := report.WriteJSON(policyUnit(u).path(s.units), ck); err != nil {
			return err
		}
	}
	return report.WriteJSON(u.path(s.units), f)
}
