// Package registry makes every fedirl simulator reachable by its Gymnasium
// id: the classic-control environments (package classic), LunarLander
// (package lunar) and BipedalWalker (package bipedal). Commands and studies that take --env use it; it adds no
// behaviour of its own.
package registry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/bipedal"
	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/envs/lunar"
)

// Names lists every registered id, sorted.
func Names() []string {
	out := append(classic.Names(), lunar.Names()...)
	out = append(out, bipedal.Names()...)
	slices.Sort(out)
	return out
}

// Make returns environment name with params over its defaults; client ≥ 0
// starts from the paper's client-i parameters, and seed seeds the
// observation noise where the environment has it.
func Make(name string, client int, params map[string]float64, seed uint64) (envs.Env, error) {
	if slices.Contains(lunar.Names(), name) {
		return lunar.Make(name, client, params)
	}
	if slices.Contains(bipedal.Names(), name) {
		return bipedal.Make(name, client, params)
	}
	if !slices.Contains(classic.Names(), name) {
		return nil, fmt.Errorf("%w: %q (known: %s)", classic.ErrUnknownEnv, name, strings.Join(Names(), ", "))
	}
	p := map[string]float64{}
	if client >= 0 {
		var err error
		if p, err = classic.ClientParams(name, client); err != nil {
			return nil, err
		}
	}
	for k, v := range params {
		p[k] = v
	}
	e, err := classic.MakeWithParams(name, p)
	if err != nil {
		return nil, err
	}
	e.SetNoiseSeed(seed)
	return e, nil
}

// Heuristic returns the environment's own heuristic controller, if it has one.
func Heuristic(name string) (func(dst, obs []float64) []float64, bool) {
	switch name {
	case "LunarLanderContinuous-v3":
		return func(dst, obs []float64) []float64 { return lunar.Heuristic(dst, obs, true) }, true
	case "LunarLander-v3":
		return func(dst, obs []float64) []float64 { return lunar.Heuristic(dst, obs, false) }, true
	}
	return nil, false
}

// Controller is a heuristic policy that may keep state within an episode.
type Controller interface {
	// Reset starts a new episode.
	Reset()
	// Act writes the action for obs into dst and returns it.
	Act(dst, obs []float64) []float64
}

// statelessController adapts a stateless heuristic.
type statelessController func(dst, obs []float64) []float64

func (statelessController) Reset()                             {}
func (c statelessController) Act(dst, obs []float64) []float64 { return c(dst, obs) }

// NewController returns a fresh instance of the environment's heuristic
// controller, if it has one: Heuristic's for LunarLander, Gymnasium's
// BipedalWalkerHeuristics (stateful) for BipedalWalker.
func NewController(name string) (Controller, bool) {
	if slices.Contains(bipedal.Names(), name) {
		return bipedal.NewHeuristic(), true
	}
	h, ok := Heuristic(name)
	if !ok {
		return nil, false
	}
	return statelessController(h), true
}

// List describes every environment: classic.List() followed by LunarLander's two versions and BipedalWalker's two.
func List() []classic.Info {
	out := classic.List()
	var params []classic.ParamInfo
	for _, p := range lunar.ParamInfo() {
		params = append(params, classic.ParamInfo{Name: p.Name, Default: p.Default, Doc: p.Doc})
	}
	out = append(out,
		classic.Info{Name: "LunarLander-v3", Summary: "land on the pad between the flags (Box2D); obs (x, y, ẋ, ẏ, angle, angular velocity, leg contacts ×2), actions 0 noop, 1 left, 2 main, 3 right engine", Params: params, Client: lunar.ClientDoc},
		classic.Info{Name: "LunarLanderContinuous-v3", Summary: "LunarLander with continuous throttle: action (main ∈ [−1, 1], lateral ∈ [−1, 1]); main fires above 0 at 50–100 %, a side engine beyond ±0.5", Params: params, Client: lunar.ClientDoc},
	)
	var bparams []classic.ParamInfo
	for _, p := range bipedal.ParamInfo() {
		bparams = append(bparams, classic.ParamInfo{Name: p.Name, Default: p.Default, Doc: p.Doc})
	}
	out = append(out,
		classic.Info{Name: "BipedalWalker-v3", Summary: "walk a 4-joint robot to the far end of uneven terrain (Box2D, float32 as pybox2d); obs: hull angle, angular velocity, vx, vy, per leg hip/knee angle and speed and ground contact, 10 lidar ranges (24); actions: hip and knee motor torques in [−1, 1] (4); hardcore = 1 adds stumps, stairs and pits", Params: bparams, Client: bipedal.ClientDoc},
		classic.Info{Name: "BipedalWalkerHardcore-v3", Summary: "BipedalWalker-v3 with hardcore = 1 (stumps, stairs and pits) and a TimeLimit of 2000 steps", Params: bparams, Client: bipedal.ClientDoc},
	)
	return out
}
