package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	gridstudy "github.com/fedirl/fedirl/pkg/experiments/gridworld"
)

func init() {
	var (
		size       int
		seed       int64
		configPath string
		runDir     string
		out        string
	)
	cmd := &cobra.Command{
		Use:   "bounds",
		Short: "Evaluate Theorems 1 and 2 (both sides) on one grid-world study cell",
		Long: `Runs one cell of the grid-world study (all clients' MaxEnt IRL at one grid
size and seed, then barycentric fusion) and evaluates the paper's bounds with
ε_i = ‖r̂_i − r*‖₁ measured against the true reward r* = Φθ* on the probe lattice:

  T1  W2(p̄, p*)            ≤ 2D/√Zmin · (Σα_i ε_i)^½        (LHS: exact LP when n ≤ 64,
                                                              else a Sinkhorn upper bound)
  T2  ‖r̄_Z(r*) − r*‖₂      ≤ 2√2 D Z(r*)/(δ√Zmin) · (Σα_i ε_i)^½
  T3  ‖θ̂ − θ*‖₂            ≤ κ_Φ · RHS(T2)
  Th2 J_i(π_r*; r*) − J_i(π_r̄; r*) ≤ 2/(1−γ) ‖r* − r̄‖∞ per client (deployed fused θ)

The config is the built-in study, or --config, or the config.yaml of --run.
The same numbers for the first seed of each grid size are in a run's bounds.json.`,
		Example: `  fedirl bounds --size 5 --seed 1
  fedirl bounds --run runs/gridworld-seed1-n5 --size 10 --out bounds10.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := gridstudy.DefaultConfig()
			path := configPath
			if runDir != "" {
				if path != "" {
					return fmt.Errorf("give --config or --run, not both")
				}
				path = filepath.Join(runDir, "config.yaml")
			}
			if path != "" {
				var err error
				if cfg, err = gridstudy.LoadConfig(path, cfg); err != nil {
					return err
				}
			}
			if size < 3 {
				return fmt.Errorf("--size %d: want ≥ 3", size)
			}
			if seed < 0 {
				return fmt.Errorf("--seed %d: want ≥ 0", seed)
			}
			f, err := cfg.Cell(cmd.Context(), size, uint64(seed))
			if err != nil {
				return err
			}
			b := f.Bounds
			w := cmd.OutOrStdout()
			if out != "" && out != "-" {
				if err := writeJSON(out, b); err != nil {
					return err
				}
			}
			fmt.Fprintf(w, "%d×%d grid, seed %d, %d clients; probe lattice n = %d, D = %.4g, δ = %.4g, κ_Φ = %.4g\n",
				size, size, seed, len(b.Eps), b.N, b.D, b.Delta, b.KappaPhi)
			fmt.Fprintf(w, "σ = %.4g, Z(r*) = %.4g, Z_min = %.4g, Σα_i ε_i = %.4g (ε_i = %.4g)\n", b.Sigma, b.ZStar, b.ZMin, b.WeightedEps, b.Eps)
			show := func(name string, q gridstudy.Inequality) {
				fmt.Fprintf(w, "%-4s LHS %-12.5g RHS %-12.5g holds %v\n", name, q.LHS, q.RHS, q.Holds)
			}
			if b.T1 != nil {
				show("T1", *b.T1)
				if !b.T1Exact {
					fmt.Fprintf(w, "     (T1 LHS is a certified upper bound on W2 from a Sinkhorn plan: n = %d > %d for the exact LP)\n", b.N, gridstudy.ExactLimit)
				}
			}
			show("T2", b.T2)
			show("T3", b.T3)
			for i, q := range b.Perf {
				show(fmt.Sprintf("Th2/%d", i), q)
			}
			fmt.Fprintf(w, "eq. (perf-explicit) RHS %.5g\n", b.PerfExplicit)
			if out == "-" {
				return writeJSON("-", b)
			}
			return nil
		},
	}
	f := cmd.Flags()
	countVar(f, &size, "size", 5, "cells per side", "grid side N")
	f.Int64Var(&seed, "seed", 1, "study seed")
	f.StringVar(&configPath, "config", "", "study config file")
	f.StringVar(&runDir, "run", "", "run folder whose config.yaml to use")
	f.StringVarP(&out, "out", "o", "", `also write the report as JSON to this file ("-" = stdout)`)
	rootCmd.AddCommand(cmd)
}
