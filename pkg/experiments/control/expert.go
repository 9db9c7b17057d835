package control

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"gonum.org/v1/gonum/floats"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

type expertSpec struct {
	Kind    string     `json:"kind"`
	Version int        `json:"version"`
	Env     string     `json:"env"`
	Client  int        `json:"client"`
	Seed    uint64     `json:"seed"`
	PPO     ppo.Config `json:"ppo"`
	Steps   int        `json:"steps"`
}

// ExpertFile is the content of an expert unit.
type ExpertFile struct {
	Env        string          `json:"env"`
	Client     int             `json:"client"`
	Seed       uint64          `json:"seed"`
	Steps      int             `json:"steps"`
	EvalReturn float64         `json:"eval_return"` // mean true return of the mode policy over 20 episodes
	Policy     *ppo.Checkpoint `json:"policy"`
}

func preset(env, name string) (ppo.Config, error) {
	if name == "" {
		name = env
		if _, err := ppo.Preset(name); err != nil {
			name = "sb3"
		}
	}
	return ppo.Preset(name)
}

func (s *Study) expertUnit(env string, client int, seed uint64) (unit, expertSpec, error) {
	ec := s.cfg.Env[env]
	c, err := preset(env, ec.ExpertPreset)
	if err != nil {
		return unit{}, expertSpec{}, err
	}
	sp := expertSpec{"expert", unitVersion, env, client, seed, c, ec.TotalExpertSteps}
	name := fmt.Sprintf("%s-c%d-s%d", env, client, seed)
	if client == nominalClient { // a point probe's reference expert, on the nominal simulator
		name = fmt.Sprintf("%s-nominal-s%d", env, seed)
	}
	return unit{"expert", name, key(sp), ".json"}, sp, nil
}

func clientMaker(env string, client int, seed uint64) ppo.EnvMaker {
	return func(i int) (envs.Env, error) {
		return registry.Make(env, client, nil, seedOf(seed, "noise", client, i))
	}
}

// heldMaker returns mk's environments with every action held for skip
// frames (envs.FrameSkip).
func heldMaker(mk ppo.EnvMaker, skip int) ppo.EnvMaker {
	return func(i int) (envs.Env, error) {
		e, err := mk(i)
		if err != nil {
			return nil, err
		}
		return envs.NewFrameSkip(e, skip)
	}
}

func (s *Study) runExpert(ctx context.Context, u unit, sp expertSpec) error {
	tr, err := ppo.NewTrainer(sp.PPO, clientMaker(sp.Env, sp.Client, sp.Seed), ppo.Options{Seed: seedOf(sp.Seed, "expert", sp.Client), Workers: 1})
	if err != nil {
		return fmt.Errorf("expert %s client %d: %w", sp.Env, sp.Client, err)
	}
	if err := tr.Learn(ctx, sp.Steps); err != nil {
		return err
	}
	env, err := registry.Make(sp.Env, sp.Client, nil, seedOf(sp.Seed, "expert-eval", sp.Client))
	if err != nil {
		return err
	}
	ret := ppo.Evaluate(tr.Policy(), env, 20, seedOf(sp.Seed, "expert-eval-reset", sp.Client), true, 0)
	ck, err := tr.Policy().Checkpoint(&sp.PPO)
	if err != nil {
		return err
	}
	return report.WriteJSON(u.path(s.units), ExpertFile{sp.Env, sp.Client, sp.Seed, sp.Steps, floats.Sum(ret) / float64(len(ret)), ck})
}

func (s *Study) readExpert(u unit) (*ExpertFile, *ppo.Policy, error) {
	var f ExpertFile
	if err := readJSON(u.path(s.units), &f); err != nil {
		return nil, nil, err
	}
	p, err := ppo.FromCheckpoint(f.Policy)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", u.path(s.units), err)
	}
	return &f, p, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w (delete the file to recompute the unit)", path, err)
	}
	return nil
}
