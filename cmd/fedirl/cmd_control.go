package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/experiments/control"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// controlAxisNames lists every lattice axis name of the control family (the appendix's --n-* flags).
func controlAxisNames() []string {
	var out []string
	for _, env := range tasks.ControlEnvNames() {
		e, _ := tasks.LookupControl(env)
		for _, a := range e.AxisNames() {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	return out
}

// countsText renders unit counts by kind as "expert 3, irl 4" (sorted by kind), or "none".
func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// newReproduceControlCmd builds "fedirl reproduce control" and its "merge".
func newReproduceControlCmd() *cobra.Command {
	var (
		envList, lattice, configPath, out, shard, protocol, localIRL string
		quick, full, plan                                            bool
		seeds, jobs, planShards                                      int
		seed                                                         uint64
	)
	bins := map[string]*int{}
	cmd := &cobra.Command{
		Use:   "control",
		Short: "Continuous-control study: experts, demonstrations, lattice MaxEnt IRL, mean vs barycentric fusion, PPO on the fused rewards (Figures 3 and 5)",
		Long: `Runs the paper's continuous-control study. For each environment and seed, each
client (its own physics, appendix "Setups") trains a PPO expert and records
demonstrations; MaxEnt IRL on a lattice model of its own simulator gives θ_i;
the server fuses them by averaging, by the Wasserstein barycenter and by the
debiased barycenter, through the same federation code as the network path;
PPO is trained on each reward in every training and held-out client's
environment and judged by the true return, normalized per client as
(R − R_random)/(R_expert − R_random), beside the EPIC distance of each reward
to the true one on the client's lattice model.

Every run checks its pipeline rung by rung and writes the verdict first in
summary.md and summary.json ("validation"): (a) the lattice planner with the
true reward in the real simulator, (b) PPO on the true reward projected onto
the features, (c) the local IRL's feature gap. --protocol paper runs the
appendix as written, to show where it loses the signal.

Every unit of work is a file under OUT/units, named by a hash of what it
depends on: rerunning continues a killed run, and changing a setting
recomputes only what depends on it. --shard i/n runs a deterministic subset
of the (environment, seed) groups with all their units (no unit is computed
by two shards; at most environments × seeds shards have work); then
"fedirl reproduce control merge OUT SHARD_DIR..." assembles the outputs.

Outputs: config.yaml, curves.csv, summary.{md,csv,json}, irl_diagnostics.csv,
figure3.png (Pendulum, CartPole), figure5.png (Acrobot; LunarLander when
present), resolution.png, log.txt, and clips/ (clips.enabled; off with
--quick): per environment an animated GIF of the expert and of the PPO
policy of each method's reward, listed in clips/clips.json.`,
		Example: `  fedirl reproduce control --quick --out /tmp/control-smoke
  fedirl reproduce control --protocol paper --out runs/control-paper
  fedirl reproduce control --env Acrobot-v1 --lattice fine --seeds 5
  fedirl reproduce control --quick --seed 7 --seeds 2                    # seeds 7 and 8
  fedirl reproduce control --env Pendulum-v1 --n-theta 64 --n-thdot 41
  fedirl reproduce control --full --shard 3/10 --out runs/control-full   # one job of an array`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if quick && full {
				return fmt.Errorf("--quick and --full exclude each other")
			}
			cfg := control.DefaultConfig()
			name := "default"
			switch {
			case quick:
				cfg, name = control.QuickConfig(), "quick"
			case full:
				cfg, name = control.FullConfig(), "full"
			}
			switch protocol {
			case control.ProtocolWellPosed:
			case control.ProtocolPaper:
				cfg = control.PaperProtocol(cfg)
				name += "-paper"
			default:
				return fmt.Errorf("--protocol %q: want %s or %s", protocol, control.ProtocolWellPosed, control.ProtocolPaper)
			}
			if configPath != "" {
				var err error
				if cfg, err = control.LoadConfig(configPath, cfg); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("env") {
				var envs []string
				for _, e := range strings.Split(envList, ",") {
					e = strings.TrimSpace(e)
					// An environment without a lattice discretisation is studied
					// on its point probe alone (config lattices.<id>: [points]).
					if _, err := tasks.LookupControl(e); err != nil && !slices.Equal(cfg.Lattices[e], []string{control.LatticePoints}) {
						return fmt.Errorf("--env: %w", err)
					}
					if _, ok := cfg.Env[e]; !ok {
						return fmt.Errorf("--env %s: the %s preset has no settings for it", e, name)
					}
					envs = append(envs, e)
				}
				cfg.Envs = envs
			}
			if cmd.Flags().Changed("local-irl") {
				for _, e := range cfg.Envs {
					ec := cfg.Env[e]
					ec.LocalIRL = localIRL // Validate names a bad value
					cfg.Env[e] = ec
				}
			}
			if cmd.Flags().Changed("lattice") {
				ls := strings.Split(lattice, ",")
				for _, l := range ls {
					if !slices.Contains(tasks.LatticePresets, l) {
						return fmt.Errorf("--lattice %q: want paper, fine or ultra (comma-separated for several)", l)
					}
				}
				for _, e := range cfg.Envs {
					cfg.Lattices[e] = ls
				}
			}
			for axis, n := range bins {
				if !cmd.Flags().Changed("n-" + axis) {
					continue
				}
				if *n < 1 {
					return fmt.Errorf("--n-%s %d: want ≥ 1 bins", axis, *n)
				}
				used := false
				for _, e := range cfg.Envs {
					ce, _ := tasks.LookupControl(e)
					if ce != nil && slices.Contains(ce.AxisNames(), axis) {
						ec := cfg.Env[e]
						ec.Bins = mapsClone(ec.Bins)
						ec.Bins[axis] = *n
						cfg.Env[e] = ec
						used = true
					}
				}
				if !used {
					return fmt.Errorf("--n-%s: none of the selected environments (%s) has a %q axis", axis, strings.Join(cfg.Envs, ", "), axis)
				}
			}
			if cmd.Flags().Changed("seeds") {
				if seeds < 1 {
					return fmt.Errorf("--seeds %d: want ≥ 1", seeds)
				}
				cfg.NumberOfSeeds = seeds
			}
			if cmd.Flags().Changed("seed") {
				cfg.Seed = seed
			}
			var sh control.Shard
			if shard != "" {
				var err error
				if sh, err = control.ParseShard(shard); err != nil {
					return err
				}
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if plan {
				st, err := control.New(cfg, out, jobs, nil)
				if err != nil {
					return err
				}
				p, err := st.PlanCosts(planShards)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "fedirl reproduce control (%s, protocol %s): %s, %s, %d+%d clients — modelled cost per unit on this machine\n\n",
					name, cfg.Protocol, strings.Join(cfg.Envs, ", "), seedsText(cfg.Seed, cfg.NumberOfSeeds), cfg.NumberOfClients, cfg.HeldOutClients)
				p.Write(cmd.OutOrStdout(), jobs)
				return nil
			}
			if cmd.Flags().Changed("plan-shards") {
				return fmt.Errorf("--plan-shards goes with --plan")
			}
			if out == "" {
				out = filepath.Join("runs", "control-"+name)
			}
			run, ctx, err := startRun(cmd, "fedirl reproduce control", out, true) // a resumed run appends to its log
			if err != nil {
				return err
			}
			defer run.Close()
			log := run.Log
			start := time.Now()
			part := "the whole study"
			if shard != "" {
				part = "shard " + shard
			}
			fmt.Fprintf(log, "fedirl reproduce control (%s, protocol %s): %s, %s, %d+%d clients, %d jobs, GOMAXPROCS %d, %s, started %s\n",
				name, cfg.Protocol, strings.Join(cfg.Envs, ", "), seedsText(cfg.Seed, cfg.NumberOfSeeds), cfg.NumberOfClients, cfg.HeldOutClients, jobs, runtime.GOMAXPROCS(0), part, start.UTC().Format(time.RFC3339))
			st, err := control.New(cfg, out, jobs, run.File)
			if err != nil {
				return err
			}
			st.Progress = true
			if err := st.WriteConfig(); err != nil {
				return err
			}
			if err := st.Run(ctx, sh); err != nil {
				if ctx.Err() != nil { // Ctrl-C: the log file records it, main prints one line
					fmt.Fprintf(run.File, "interrupted after %v; rerun the same command to continue\n", time.Since(start).Round(time.Millisecond))
					return errInterrupted
				}
				fmt.Fprintf(log, "failed after %v: %v\n", time.Since(start).Round(time.Millisecond), err)
				return err
			}
			fmt.Fprintf(log, "units computed: %s; %v\n", countsText(st.Computed), time.Since(start).Round(time.Millisecond))
			if sh.Count > 1 {
				fmt.Fprintf(log, "shard %s done; assemble with: fedirl reproduce control merge OUT SHARD_DIRS...\n", shard)
				return nil
			}
			sum, err := st.WriteOutputs()
			if err != nil {
				return err
			}
			fmt.Fprintf(log, "wrote %s in %v\n", out, time.Since(start).Round(time.Millisecond))
			fmt.Fprint(cmd.OutOrStdout(), sum.Markdown())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&envList, "env", "", "comma-separated environments (default: the preset's; known: "+strings.Join(tasks.ControlEnvNames(), ", ")+")")
	f.StringVar(&lattice, "lattice", "", "lattice preset(s) for every environment: paper, fine (≈1e5 pairs), ultra (≈1e6), comma-separated")
	f.StringVar(&configPath, "config", "", "YAML config (keys as in the run folder's config.yaml) over the preset")
	f.StringVar(&localIRL, "local-irl", "", "local IRL of every selected environment: lattice or sample (env.<id>.local_irl; settings in env.<id>.sample_irl)")
	f.StringVar(&out, "out", "", "run folder (default runs/control-<preset>[-paper])")
	f.StringVar(&shard, "shard", "", "run only shard i/n of the (environment, seed) groups (e.g. $SLURM_ARRAY_TASK_ID/10), then merge")
	f.BoolVar(&quick, "quick", false, "smoke test of the plumbing (≤ 60 s on 2 cores): 2+1 clients, 2 seeds, tiny budgets; its numbers mean nothing")
	f.BoolVar(&full, "full", false, "the paper's scale: 6+2 clients, 10 seeds, all four environments")
	f.StringVar(&protocol, "protocol", control.ProtocolWellPosed, "well-posed (horizon-matched absorbing-state IRL by Newton's method on lattices that pass the ladder, normalized rewards) or paper (the appendix as written: paper lattices, GD 5e-3, τ 1e-3, no normalisation)")
	f.Uint64Var(&seed, "seed", 1, "first seed: the run uses seeds --seed, …, --seed+--seeds−1 (default: the preset's, config key seed)")
	countVar(f, &seeds, "seeds", 0, "seeds", "number of seeds (default: the preset's, config key number_of_seeds)")
	f.BoolVar(&plan, "plan", false, "print every unit's modelled cost and the wall-time estimate, and run nothing")
	countVar(f, &planShards, "plan-shards", 0, "shards", "with --plan: also estimate a split into this many shards (--shard i/n)")
	countVar(f, &jobs, "jobs", 2, "the number of things run at the same time", "units run in parallel (results do not depend on it)")
	for _, a := range controlAxisNames() {
		bins[a] = new(int)
		countVar(f, bins[a], "n-"+a, 0, "bins", fmt.Sprintf("bins of the %q lattice axis in every selected environment that has one (0: the lattice preset's)", a))
	}
	cmd.AddCommand(newControlMergeCmd())
	return cmd
}

// seedsText lists the seeds first, first+1, …, first+n−1 as "seeds 7, 8"
// (or "seeds 1, 2, …, 10" when there are more than four).
func seedsText(first uint64, n int) string {
	switch {
	case n == 1:
		return fmt.Sprintf("seed %d", first)
	case n <= 4:
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprint(first + uint64(i))
		}
		return "seeds " + strings.Join(parts, ", ")
	}
	return fmt.Sprintf("seeds %d, %d, …, %d", first, first+1, first+uint64(n)-1)
}

// checkShards refuses a merge into out of folders that are not shards of
// one control run: each must hold a `fedirl reproduce control` run
// (config.yaml and units/), all with the same config.yaml; out must not
// hold another command's run. Each refusal is one line naming the folder.
func checkShards(out string, shards []string) error {
	const kind = "fedirl reproduce control"
	if err := checkRunFolder(out, kind); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	var first []byte
	for i, dir := range shards {
		if other := otherRun(dir, kind); other != "" {
			return fmt.Errorf("merge: %s holds a `%s` run, not a shard of `%s`", dir, other, kind)
		}
		cfg, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
		if err != nil {
			return fmt.Errorf("merge: %s is not a `%s` run folder (no config.yaml)", dir, kind)
		}
		if st, err := os.Stat(filepath.Join(dir, "units")); err != nil || !st.IsDir() {
			return fmt.Errorf("merge: %s is not a `%s` run folder (no units/)", dir, kind)
		}
		if i == 0 {
			first = cfg
			continue
		}
		if !bytes.Equal(cfg, first) {
			a, b := strings.Split(string(first), "\n"), strings.Split(string(cfg), "\n")
			line := 0
			for line < min(len(a), len(b)) && a[line] == b[line] {
				line++
			}
			got, want := "(end)", "(end)"
			if line < len(b) {
				got = strings.TrimSpace(b[line])
			}
			if line < len(a) {
				want = strings.TrimSpace(a[line])
			}
			return fmt.Errorf("merge: %s ran with another config than %s: config.yaml line %d is %q, not %q (shards of one run share their config)", dir, shards[0], line+1, got, want)
		}
	}
	return nil
}

// mapsClone returns a copy of m.
func mapsClone(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// newControlMergeCmd builds "fedirl reproduce control merge".
func newControlMergeCmd() *cobra.Command {
	var (
		configPath  string
		quick, full bool
	)
	cmd := &cobra.Command{
		Use:   "merge OUT SHARD_DIR...",
		Short: "Assemble the outputs of sharded runs into OUT (the same bytes as one unsharded run)",
		Example: `  fedirl reproduce control merge runs/control runs/control-shard-*
  fedirl reproduce control merge --full runs/full runs/full-shard-*`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := control.DefaultConfig()
			switch {
			case quick && full:
				return fmt.Errorf("--quick and --full exclude each other")
			case quick:
				cfg = control.QuickConfig()
			case full:
				cfg = control.FullConfig()
			}
			if err := checkOutputPath(args[0], outputFolder); err != nil { // OUT, before any work (as every --out)
				return fmt.Errorf("OUT %s: %w", args[0], err)
			}
			if err := checkShards(args[0], args[1:]); err != nil {
				return err
			}
			if configPath == "" && len(args) > 1 && !quick && !full {
				// The shards' folders hold the resolved config they ran with.
				configPath = filepath.Join(args[1], "config.yaml")
			}
			if configPath != "" {
				var err error
				if cfg, err = control.LoadConfig(configPath, cfg); err != nil {
					return err
				}
			}
			out := args[0]
			n, err := control.Merge(out, args[1:])
			if err != nil {
				return err
			}
			st, err := control.New(cfg, out, 1, nil)
			if err != nil {
				return err
			}
			sum, err := st.WriteOutputs()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "merged %d unit files into %s\n", n, out)
			fmt.Fprint(cmd.OutOrStdout(), sum.Markdown())
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "the config the shards ran with (default: the first shard folder's config.yaml)")
	cmd.Flags().BoolVar(&quick, "quick", false, "the shards ran with --quick")
	cmd.Flags().BoolVar(&full, "full", false, "the shards ran with --full")
	return cmd
}
