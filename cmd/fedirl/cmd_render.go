package main

import (
	"encoding/json"
	"fmt"
	"image/gif"
	"math/rand/v2"
	"os"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/envs/render"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

// policyDoc documents --policy for "env episodes" and "env render".
const policyDoc = `--policy is one of:
  random     uniform actions in the action space (a seeded stream)
  zero       the zero action (index 0 for a Discrete space)
  heuristic  the environment's own heuristic controller (LunarLander's and
             BipedalWalker's: Gymnasium's)
  FILE       a PPO checkpoint (policy.json from "fedirl ppo train"), mode actions`

// envPolicy resolves --policy for environment e: the action function, and
// the function to call at each episode's start (a stateful heuristic's reset).
func envPolicy(name, policy string, e envs.Env, seed uint64) (func(obs []float64) []float64, func(), error) {
	space := e.ActionSpace()
	act := make([]float64, space.Dim())
	noReset := func() {}
	switch policy {
	case "random":
		rng := rand.New(rand.NewPCG(seed, 0x65706973))
		return func([]float64) []float64 { return space.Sample(act, rng) }, noReset, nil
	case "zero":
		return func([]float64) []float64 { clear(act); return act }, noReset, nil
	case "heuristic":
		h, ok := registry.NewController(name)
		if !ok {
			return nil, nil, fmt.Errorf("--policy heuristic: %s has no heuristic controller (LunarLander and BipedalWalker have)", name)
		}
		return func(obs []float64) []float64 { return h.Act(act, obs) }, h.Reset, nil
	}
	pol, err := ppo.Load(policy)
	if err != nil {
		return nil, nil, fmt.Errorf("--policy %s: not random, zero or heuristic, and not a PPO checkpoint: %w", policy, err)
	}
	if err := checkPolicySpaces(pol, e, name, trainedOn(policy)); err != nil {
		return nil, nil, fmt.Errorf("--policy %s: %w", policy, err)
	}
	return func(obs []float64) []float64 { return pol.Act(act, obs, nil) }, noReset, nil
}

// envWithPolicy makes environment name (--env, --client, --param, --seed)
// and resolves --policy for it, each error naming its flag.
func envWithPolicy(name string, client int, params []string, policy string, seed uint64) (envs.Env, func([]float64) []float64, func(), error) {
	if err := checkEnvClient(name, client); err != nil {
		return nil, nil, nil, err
	}
	p, err := parseEnvParams(params)
	if err != nil {
		return nil, nil, nil, err
	}
	e, err := registry.Make(name, client, p, seed)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--param: %w", err)
	}
	choose, reset, err := envPolicy(name, policy, e, seed)
	if err != nil {
		return nil, nil, nil, err
	}
	return e, choose, reset, nil
}

// newEnvRenderCmd builds "fedirl env render".
func newEnvRenderCmd() *cobra.Command {
	var (
		name, policy, out string
		params            []string
		client            int
		seed              uint64
		width, height     int
		every, maxSteps   int
	)
	cmd := &cobra.Command{
		Use:   "render --env NAME --policy P --out FILE.gif",
		Short: "Write an animated GIF of one episode of a policy, with its return",
		Long: `render runs one episode of an environment (any of "fedirl env list", with
--client and --param as in "fedirl env rollout") from Reset(--seed) under a
policy and writes it as an animated GIF, one frame every --every steps, each
frame showing the step and the return so far; it prints the episode's
summary (steps, return, terminated, truncated, frames) as JSON.

BipedalWalker is drawn as Gymnasium draws it (terrain and obstacles, clouds,
the walker, its ten lidar rays, the start flag; the camera follows the hull);
CartPole, Pendulum and Acrobot from their states; LunarLander's lander over
its pad; other environments as a bar chart of the observation.

` + policyDoc,
		Example: `  fedirl env render --env BipedalWalker-v3 --policy heuristic --seed 4 --out walk.gif
  fedirl env render --env BipedalWalkerHardcore-v3 --client 3 --policy random --out fall.gif
  fedirl env render --env CartPole-v1 --policy runs/cartpole/policy.json --out cartpole.gif --width 300 --height 200`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("--out: a GIF file name is required")
			}
			e, choose, reset, err := envWithPolicy(name, client, params, policy, seed)
			if err != nil {
				return err
			}
			reset()
			opt := render.Options{Width: width, Height: height, Every: every, MaxSteps: maxSteps}
			g, res, err := render.Episode(e, name, seed, choose, opt)
			if err != nil {
				return err
			}
			f, err := os.Create(out)
			if err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			if err := gif.EncodeAll(f, g); err != nil {
				f.Close()
				return fmt.Errorf("--out %s: %w", out, err)
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("--out %s: %w", out, err)
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(struct {
				Env    string `json:"env"`
				Policy string `json:"policy"`
				Seed   uint64 `json:"seed"`
				Out    string `json:"out"`
				render.Result
			}{name, policy, seed, out, res})
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "env", "BipedalWalker-v3", "environment id (see fedirl env list)")
	f.StringVar(&policy, "policy", "random", "random, zero, heuristic or a PPO checkpoint file")
	f.StringArrayVar(&params, "param", nil, "k=v parameter override (repeatable)")
	f.IntVar(&client, "client", -1, fmt.Sprintf("the paper's client i, counted from 0 (0..%d; -1: the default environment)", envs.MaxClient))
	f.Uint64Var(&seed, "seed", 0, "the episode's reset seed (and the random policy's stream)")
	f.StringVar(&out, "out", "", "the GIF file to write")
	countVar(f, &width, "width", 600, "pixels", "frame width in pixels")
	countVar(f, &height, "height", 400, "pixels", "frame height in pixels")
	countVar(f, &every, "every", 2, "steps", "draw one frame every this many steps (the first and last are always drawn)")
	countVar(f, &maxSteps, "max-steps", 2000, "steps", "stop the episode after this many steps (the TimeLimit stops it earlier)")
	return cmd
}
