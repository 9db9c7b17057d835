package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/experiments/control"
	gridstudy "github.com/fedirl/fedirl/pkg/experiments/gridworld"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/progress"
)

// newSweepCmd groups the pre-declared regime sweeps, one subcommand per study.
func newSweepCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run a study under a pre-declared list of regimes and compare the fusions per regime",
	}
	cmd.AddCommand(newSweepGridworldCmd(), newSweepControlCmd(), newSweepPoisoningCmd())
	return cmd
}

func init() { rootCmd.AddCommand(newSweepCmd()) }

// sweepLog reports regime starts to the log and forwards units to the bar.
type sweepLog struct {
	w     io.Writer
	bar   *progress.Bar
	start time.Time
}

func (l *sweepLog) Regime(i, n int, name string, cached bool) {
	how := "running"
	if cached {
		how = "reused from an earlier run of this folder"
	}
	fmt.Fprintf(l.w, "[%s] regime %d/%d %s: %s\n", time.Since(l.start).Round(time.Second), i+1, n, name, how)
}

func (l *sweepLog) Add(n int) { l.bar.Add(n) }

// newSweepGridworldCmd builds "fedirl sweep gridworld".
func newSweepGridworldCmd() *cobra.Command {
	var (
		regimesPath, configPath, out string
		seeds, workers               int
		seed                         int64
		quick                        bool
	)
	cmd := &cobra.Command{
		Use:   "gridworld",
		Short: "Grid-world regime sweep: paired differences of the fusion methods per regime, grid size and split",
		Long: `Runs the grid-world study (Table 1 and Table 2, with Theorems 1-2 on the first
seed of each grid size) once per regime of a pre-declared regimes file and
writes, into --out:

  regimes.yaml            the regimes as run (name, rationale, config overrides)
  sweep.md, sweep.csv     per regime and row (grid size; Table 2's weak fraction):
  sweep.json              each fusion method's success (fusion_methods) and the
                          declared paired differences (barycenter − mean,
                          debiased − mean, normalized-mean − mean, barycenter −
                          normalized-mean) with 95 % t-intervals over seeds, in
                          distribution and held out, mean − local, the
                          barycenter solver's marginal error, the clients'
                          privacy noise (σ·2C, realized ‖θ̃ − θ‖ beside ‖θ‖)
                          and Theorem 2 on the first seed (achieved gap,
                          right-hand sides, Σα_iε_i of the θ the server fused)
  forest.png              forest plot of those intervals
  regimes/<name>/         each regime's full run folder (tables, figures) and
                          result.json

A regime is the base config (defaults, --quick, or --config) with its overrides
applied; lists in the overrides replace lists. Rerunning into the same folder
reuses every regime whose result.json holds the same resolved config, so a
killed sweep resumes. The default regimes file (printed by --print-regimes) was
declared before the sweep was first run.`,
		Example: `  fedirl sweep gridworld --out runs/sweep
  fedirl sweep gridworld --seeds 10 --out runs/sweep10
  fedirl sweep gridworld --print-regimes > my-regimes.yaml
  fedirl sweep gridworld --regimes my-regimes.yaml --quick --out /tmp/sweep
  fedirl sweep gridworld --regimes pkg/experiments/gridworld/regimes-privacy.yaml --out runs/private`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if p, _ := cmd.Flags().GetBool("print-regimes"); p {
				_, err := cmd.OutOrStdout().Write(gridstudy.DefaultRegimes)
				return err
			}
			base, err := gridConfig(cmd, quick, configPath, seeds, seed, workers)
			if err != nil {
				return err
			}
			data, src, err := regimesFile(regimesPath, gridstudy.DefaultRegimes)
			if err != nil {
				return err
			}
			regimes, err := gridstudy.LoadRegimes(data, src, base)
			if err != nil {
				return err
			}
			total := 0
			for _, r := range regimes {
				c, _ := gridstudy.ApplyRegime(r, base)
				total += c.Units()
			}
			if out == "" {
				out = filepath.Join("runs", fmt.Sprintf("sweep-gridworld-seed%d-n%d", base.Seed, base.NumberOfSeeds))
				if quick {
					out += "-quick"
				}
			}
			run, ctx, err := startRun(cmd, "fedirl sweep gridworld", out, true)
			if err != nil {
				return err
			}
			defer run.Close()
			log := run.Log
			start := time.Now()
			fmt.Fprintf(log, "fedirl sweep gridworld: %d regimes from %s, %d seeds, %d jobs, GOMAXPROCS %d, started %s\n",
				len(regimes), src, base.NumberOfSeeds, base.Workers, runtime.GOMAXPROCS(0), start.UTC().Format(time.RFC3339))
			bar := progress.New(total, "grid-world sweep")
			results, err := gridstudy.Sweep(ctx, base, regimes, out, &sweepLog{w: log, bar: bar, start: start})
			bar.Finish()
			if err != nil {
				return run.ended(ctx, start, err, "finished regimes are kept; rerun to resume")
			}
			if err := gridstudy.WriteSweep(out, data, results); err != nil {
				return err
			}
			fmt.Fprintf(log, "sweep %v; wrote %s\n", time.Since(start).Round(time.Millisecond), out)
			_, err = cmd.OutOrStdout().Write(gridstudy.SweepMarkdown(results))
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&regimesPath, "regimes", "", "regimes file (YAML: regimes: [{name, rationale, overrides}]; default the built-in list)")
	f.StringVar(&configPath, "config", "", "base study config the regimes override (default the study's defaults)")
	countVar(f, &seeds, "seeds", 5, "seeds", "number of seeds per regime (Table 1 and Table 2)")
	f.Int64Var(&seed, "seed", 1, "first seed: the regimes use --seed, …, --seed+--seeds−1")
	f.StringVar(&out, "out", "", "output folder (default runs/sweep-gridworld-seed<seed>-n<seeds>); rerun into it to resume")
	f.BoolVar(&quick, "quick", false, "base on the reduced smoke-test study (2 seeds, fewer clients)")
	addJobsFlag(cmd, &workers, 2, "goroutines per study")
	f.Bool("print-regimes", false, "print the built-in regimes file and exit")
	return cmd
}

// newSweepControlCmd builds "fedirl sweep control".
func newSweepControlCmd() *cobra.Command {
	var (
		regimesPath, configPath, out string
		seeds, jobs                  int
		seed                         uint64
		quick                        bool
	)
	cmd := &cobra.Command{
		Use:   "control",
		Short: "Control-study regime sweep: where fusion has something to fix; barycenter, normalized-mean and mean compared per regime",
		Long: `Runs the continuous-control study once per regime of a pre-declared regimes
file (regimes where the local rewards are imperfect for reasons a federation
meets: scarce demonstrations, partial coverage, the paper's features, weak
clients, partly trained experts, wider physics, privacy noise) and writes, into --out:

  regimes.yaml            the regimes as run (name, rationale, config overrides)
  sweep.md, sweep.csv     per regime, environment and client group: whether the
  sweep.json              regime puts the local rewards below the ceiling
                          (training clients' normalized return ≤ 0.85), the
                          methods' normalized and raw returns and their worst
                          client's, and the paired differences of two declared
                          families — barycenter − mean, normalized-mean − mean,
                          barycenter − normalized-mean (the transport effect);
                          pooled − mean, pooled − barycenter, personalized −
                          local, personalized − pooled (the joint block) — in
                          normalized, worst-client and raw return and in EPIC
                          to the true reward under three coverages (model,
                          uniform, demonstrations), with 95 % t-intervals over
                          seeds and Bonferroni flags (level 1 − 0.05/m per
                          metric and family)
  forest.png              forest plot of those intervals (training clients)
  poisoning.md, .csv,     only when some regime sets attack (a poisoning run,
  poisoning.json          e.g. configs/control-poisoning.yaml): per attacked
                          regime, environment, group and fusion method, attacked
                          − honest-only (the regime with the same config
                          without attack) in normalized return and EPIC, paired
                          over seeds with 95 % t-intervals
  regimes/<name>/         each regime's full run folder (summary, figures)
  units/                  the unit files, shared by the regimes

A regime is the base config (the default study with 10 seeds on Pendulum-v1 and
CartPole-v1; --quick: the smoke-test study with 2 seeds; or --config) with its
overrides applied (an env block merges key by key). Every unit of work is a file
named by a hash of what it depends on, so a unit two regimes share (an expert,
a baseline) is computed once, and rerunning into the same folder computes
nothing that is already there: a killed sweep resumes.`,
		Example: `  fedirl sweep control --print-regimes
  fedirl sweep control --quick --out /tmp/sweep-control
  fedirl sweep control --out runs/sweep-control          # the pre-declared 10-seed sweep
  fedirl sweep control --regimes my-regimes.yaml --seeds 3 --out runs/mine`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkJobs("jobs", jobs); err != nil {
				return err
			}
			base := control.SweepBase(quick)
			if configPath != "" {
				var err error
				if base, err = control.LoadConfig(configPath, base); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("seeds") {
				base.NumberOfSeeds = seeds
			}
			if cmd.Flags().Changed("seed") {
				base.Seed = seed
			}
			if err := base.Validate(); err != nil {
				return err
			}
			data, src, err := regimesFile(regimesPath, control.DefaultRegimes)
			if err != nil {
				return err
			}
			regimes, err := control.LoadRegimes(data, src, base)
			if err != nil {
				return err
			}
			if p, _ := cmd.Flags().GetBool("print-regimes"); p {
				_, err := cmd.OutOrStdout().Write(data)
				return err
			}
			if out == "" {
				out = filepath.Join("runs", fmt.Sprintf("sweep-control-seed%d-n%d", base.Seed, base.NumberOfSeeds))
				if quick {
					out += "-quick"
				}
			}
			run, ctx, err := startRun(cmd, "fedirl sweep control", out, true)
			if err != nil {
				return err
			}
			defer run.Close()
			log := run.Log
			start := time.Now()
			fmt.Fprintf(log, "fedirl sweep control: %d regimes from %s, %d seeds from %d, %d jobs, GOMAXPROCS %d, started %s\n",
				len(regimes), src, base.NumberOfSeeds, base.Seed, jobs, runtime.GOMAXPROCS(0), start.UTC().Format(time.RFC3339))
			if err := report.WriteFile(filepath.Join(out, "regimes.yaml"), data); err != nil {
				return err
			}
			results, err := control.Sweep(ctx, base, regimes, out, control.SweepOptions{Jobs: jobs, Progress: true, Log: run.File,
				OnRegime: func(i, n int, name string) {
					fmt.Fprintf(log, "[%s] regime %d/%d %s\n", time.Since(start).Round(time.Second), i+1, n, name)
				}})
			if err != nil {
				return run.ended(ctx, start, err, "finished units are kept; rerun to resume")
			}
			fmt.Fprintf(log, "sweep %v; wrote %s\n", time.Since(start).Round(time.Millisecond), out)
			_, err = cmd.OutOrStdout().Write(control.SweepMarkdown(results))
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&regimesPath, "regimes", "", "regimes file (YAML: regimes: [{name, rationale, overrides}]; default the built-in, pre-declared list)")
	f.StringVar(&configPath, "config", "", "base study config the regimes override (default: the default study with 10 seeds on Pendulum-v1 and CartPole-v1)")
	countVar(f, &seeds, "seeds", 10, "seeds", "number of seeds per regime")
	f.Uint64Var(&seed, "seed", 1, "first seed: the regimes use --seed, …, --seed+--seeds−1")
	f.StringVar(&out, "out", "", "output folder (default runs/sweep-control-seed<seed>-n<seeds>); rerun into it to resume")
	f.BoolVar(&quick, "quick", false, "base on the smoke-test study (2 seeds, tiny budgets): tests the plumbing, its numbers mean nothing")
	addJobsFlag(cmd, &jobs, 2, "units run in parallel")
	f.Bool("print-regimes", false, "print the regimes file (after checking every regime against the base config) and exit")
	return cmd
}

// regimesFile returns the pre-declared file a sweep runs: the one at path
// (--regimes), or builtin when path is empty, with its name for errors.
func regimesFile(path string, builtin []byte) ([]byte, string, error) {
	if path == "" {
		return builtin, "(built-in)", nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("--regimes: %w", err)
	}
	return data, path, nil
}
