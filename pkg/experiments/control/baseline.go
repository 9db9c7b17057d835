package control

import (
	"context"
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/experiments/report"
)

// ---- baseline: the random policy's return ----

type baselineSpec struct {
	Kind     string `json:"kind"`
	Version  int    `json:"version"`
	Env      string `json:"env"`
	Client   int    `json:"client"`
	Seed     uint64 `json:"seed"`
	Episodes int    `json:"episodes"`
}

// BaselineFile is the content of a baseline unit: a uniform random policy's
// mean true return on one client.
type BaselineFile struct {
	Env          string  `json:"env"`
	Client       int     `json:"client"`
	Seed         uint64  `json:"seed"`
	Episodes     int     `json:"episodes"`
	RandomReturn float64 `json:"random_return"`
}

func (s *Study) baselineUnit(env string, client int, seed uint64) (unit, baselineSpec) {
	sp := baselineSpec{"baseline", unitVersion, env, client, seed, max(s.cfg.Ladder.Episodes, 20)}
	return unit{"baseline", fmt.Sprintf("%s-c%d-s%d", env, client, seed), key(sp), ".json"}, sp
}

func (s *Study) runBaseline(ctx context.Context, u unit, sp baselineSpec) error {
	env, err := registry.Make(sp.Env, sp.Client, nil, seedOf(sp.Seed, "baseline-noise", sp.Client))
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seedOf(sp.Seed, "baseline-actions", sp.Client), 0))
	space := env.ActionSpace()
	act := make([]float64, space.Dim())
	ret, err := episodeReturns(ctx, env, sp.Episodes, seedOf(sp.Seed, "baseline-reset", sp.Client),
		func([]float64) []float64 { return space.Sample(act, rng) })
	if err != nil {
		return err
	}
	return report.WriteJSON(u.path(s.units), BaselineFile{sp.Env, sp.Client, sp.Seed, sp.Episodes, floats.Sum(ret) / float64(len(ret))})
}

// episodeReturns runs episodes of policy in env (reset seeds seed, seed+1, …)
// and returns their true returns.
func episodeReturns(ctx context.Context, env envs.Env, episodes int, seed uint64, policy func(obs []float64) []float64) ([]float64, error) {
	out := make([]float64, episodes)
	for e := range episodes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		obs := env.Reset(seed + uint64(e))
		for {
			o, r, term, trunc := env.Step(policy(obs))
			obs = o
			out[e] += r
			if term || trunc {
				break
			}
		}
	}
	return out, nil
}
