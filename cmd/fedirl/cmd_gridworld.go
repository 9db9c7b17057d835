package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	gridstudy "github.com/fedirl/fedirl/pkg/experiments/gridworld"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/tasks"
)

func init() {
	var (
		size, client, clients int
		seed                  int64
		out                   string
		configPath            string
	)
	gw := &cobra.Command{
		Use:   "gridworld",
		Short: "Grid-world task utilities (export a client's MDP and demonstrations)",
	}
	export := &cobra.Command{
		Use:   "export",
		Short: "Write one grid-world client's MDP spec, features and expert demonstrations for `fedirl irl`",
		Long: `Rebuilds client --client of the --size×--size grid-world family at --seed exactly
as "fedirl reproduce gridworld" does and writes into --out:

  mdp.json      the exact MDP (absorbing goal/obstacle cells) with the grid
                features, in the IRL spec format ("fedirl irl --spec")
  demos.jsonl   the expert's demonstrations (JSON Lines, "fedirl irl --demos")
  env.json      the environment spec (size, goal, start, obstacles, slip, horizon)
  truth.json    the true reward θ* and the feature names
  task.json     the task spec of this family and seed (as "fedirl server task
                create --gridworld-size N --seed S" defines it, with the quick
                start's irl settings: Newton's method, l2 1e-3), for
                "fedirl server task create --spec", "fedirl fuse" and
                "fedirl simulate"

Then: fedirl irl --spec DIR/mdp.json --demos DIR/demos.jsonl --iters 50 --l2 1e-3`,
		Example: `  fedirl gridworld export --size 5 --client 0 --seed 1 --out /tmp/gw5
  fedirl irl --spec /tmp/gw5/mdp.json --demos /tmp/gw5/demos.jsonl --iters 50 --l2 1e-3 --tol 1e-5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := gridstudy.DefaultConfig()
			if configPath != "" {
				var err error
				if cfg, err = gridstudy.LoadConfig(configPath, cfg); err != nil {
					return err
				}
			}
			if err := refuseExplicitZero(cmd, map[string]string{
				"clients": "want ≥ 1 client (leave the flag out for the study's: 3, 10, 20 for N = 5, 10, 20)",
			}); err != nil {
				return err
			}
			if size < 3 {
				return fmt.Errorf("--size %d: want ≥ 3", size)
			}
			if client < 0 {
				return fmt.Errorf("--client %d: want ≥ 0", client)
			}
			if seed < 0 {
				return fmt.Errorf("--seed %d: want ≥ 0", seed)
			}
			env, demos, err := cfg.ClientTask(size, client, clients, uint64(seed))
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return fmt.Errorf("creating --out %s: %w", out, err)
			}
			if err := irl.WriteSpecFile(filepath.Join(out, "mdp.json"), env.MDP, env.Phi); err != nil {
				return err
			}
			if err := irl.WriteTrajectoriesFile(filepath.Join(out, "demos.jsonl"), demos); err != nil {
				return err
			}
			if err := writeJSON(filepath.Join(out, "env.json"), env.Spec); err != nil {
				return err
			}
			truth := map[string]any{"theta": cfg.Expert.TrueReward, "features": []string{"goal_distance", "obstacle_distance"},
				"discount_factor": cfg.Expert.DiscountFactor}
			if err := writeJSON(filepath.Join(out, "truth.json"), truth); err != nil {
				return err
			}
			probe, dim, err := tasks.GridWorldProbe(size, uint64(seed), federation.Limits{})
			if err != nil {
				return err
			}
			irlSection, err := tasks.EncodeIRL(irl.Config{Optimizer: irl.OptimizerNewton, L2: 1e-3})
			if err != nil {
				return err
			}
			spec := federation.TaskSpec{ID: fmt.Sprintf("grid%d", size), EnvFamily: "gridworld", ThetaDim: dim, Probe: probe,
				IRL: irlSection, Fusion: json.RawMessage(`{"method":"barycenter"}`)}
			if err := writeJSON(filepath.Join(out, "task.json"), spec); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s/{mdp.json,demos.jsonl,env.json,truth.json,task.json}: %d×%d grid, client %d, seed %d, slip %.4f, %d demonstrations\n",
				out, size, size, client, seed, env.Spec.Slip, len(demos))
			return nil
		},
	}
	f := export.Flags()
	countVar(f, &size, "size", 5, "cells per side", "grid side N")
	f.IntVar(&client, "client", 0, "client index, counted from 0 (below --clients)")
	countVar(f, &clients, "clients", 0, "clients", "number of clients in the federation (default: the study's, 3/10/20 for N = 5/10/20)")
	f.Int64Var(&seed, "seed", 1, "study seed")
	f.StringVar(&out, "out", "gridworld-export", "output folder")
	f.StringVar(&configPath, "config", "", "study config (expert settings); default: the built-in study")
	gw.AddCommand(export)
	rootCmd.AddCommand(gw)
}
