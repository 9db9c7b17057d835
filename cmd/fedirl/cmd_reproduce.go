package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	gridstudy "github.com/fedirl/fedirl/pkg/experiments/gridworld"
	"github.com/fedirl/fedirl/pkg/progress"
)

// newReproduceCmd groups the paper's studies, one subcommand each.
func newReproduceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reproduce",
		Short: "Reproduce the paper's studies (tables and figures into a run folder)",
	}
	cmd.AddCommand(newReproduceGridworldCmd())
	cmd.AddCommand(newReproduceControlCmd())
	return cmd
}

func init() { rootCmd.AddCommand(newReproduceCmd()) }

// newReproduceGridworldCmd builds "fedirl reproduce gridworld".
func newReproduceGridworldCmd() *cobra.Command {
	var (
		configPath string
		seeds      int
		seed       int64
		out        string
		quick      bool
		workers    int
	)
	gw := &cobra.Command{
		Use:   "gridworld",
		Short: "Grid-world study: Table 1 (success rates), Figure 2 (rewards), Table 2 (weak-client ablation)",
		Long: `Runs the paper's grid-world study: for each grid size (20×20 with 20 clients,
10×10 with 10, 5×5 with 3) and seed, clients learn θ by MaxEnt IRL from expert
demonstrations, the server fuses them by averaging and by the Wasserstein
barycenter, and every θ's optimal policy is rolled out on the clients'
environments and on held-out ones. Then the 5×5, 10-client ablation on the
fraction of weak clients. Writes config.yaml, table1/table2 (.md/.csv/.json),
bounds.json, figure2.png, success.png, theta.png and log.txt into the run
folder. Seeds are --seed, --seed+1, …, --seed+--seeds−1; clients are
numbered from 0.

Same config and seeds → byte-identical tables and config, whatever GOMAXPROCS.`,
		Example: `  fedirl reproduce gridworld
  fedirl reproduce gridworld --quick --out /tmp/smoke
  fedirl reproduce gridworld --config my.yaml --seeds 10 --out runs/ten-seeds`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := gridConfig(cmd, quick, configPath, seeds, seed, workers)
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join("runs", fmt.Sprintf("gridworld-seed%d-n%d", cfg.Seed, cfg.NumberOfSeeds))
				if quick {
					out += "-quick"
				}
			}
			run, ctx, err := startRun(cmd, "fedirl reproduce gridworld", out, false)
			if err != nil {
				return err
			}
			defer run.Close()
			log := run.Log
			start := time.Now()
			fmt.Fprintf(log, "fedirl reproduce gridworld: %d grid sizes × %d seeds + ablation (%d seeds), %d jobs, GOMAXPROCS %d, started %s\n",
				len(cfg.Environments), cfg.NumberOfSeeds, cfg.AblationSeedCount(), cfg.Workers, runtime.GOMAXPROCS(0), start.UTC().Format(time.RFC3339))
			bar := progress.New(cfg.Units(), "grid-world study")
			study, err := gridstudy.GridWorld(ctx, cfg, bar)
			bar.Finish()
			if err != nil {
				if ctx.Err() != nil {
					// Ctrl-C: log.txt says so; main prints the one "interrupted" line.
					fmt.Fprintf(run.File, "interrupted after %v (a rerun starts the study over)\n", time.Since(start).Round(time.Millisecond))
					return errInterrupted
				}
				fmt.Fprintf(log, "failed after %v: %v\n", time.Since(start).Round(time.Millisecond), err)
				return err
			}
			studyTime := time.Since(start)
			if err := study.WriteRun(out); err != nil {
				return err
			}
			fmt.Fprintf(log, "study %v, total %v; wrote %s\n", studyTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), out)
			t1, t2 := study.Table1Markdown(), study.Table2Markdown()
			fmt.Fprintf(run.File, "\n%s\n%s", t1, t2)
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n%s", t1, t2)
			return nil
		},
	}
	f := gw.Flags()
	f.StringVar(&configPath, "config", "", "YAML/JSON config file (keys as in the paper; see the run folder's config.yaml)")
	countVar(f, &seeds, "seeds", 5, "seeds", "number of seeds (Table 1 and Table 2)")
	f.Int64Var(&seed, "seed", 1, "first seed")
	f.StringVar(&out, "out", "", "run folder (default runs/gridworld-seed<seed>-n<seeds>)")
	f.BoolVar(&quick, "quick", false, "reduced smoke-test study (2 seeds; 3, 5 and 3 clients on 20×20, 10×10, 5×5; 5 ablation clients; 50 evaluation episodes if sampled)")
	addJobsFlag(gw, &workers, 2, "goroutines")
	return gw
}

// gridConfig builds a grid-world study config from the shared flags: the
// defaults or --quick, then --config, then --seeds (Table 1 and Table 2),
// --seed and --jobs where given.
func gridConfig(cmd *cobra.Command, quick bool, configPath string, seeds int, seed int64, workers int) (gridstudy.Config, error) {
	cfg := gridstudy.DefaultConfig()
	if quick {
		cfg = gridstudy.QuickConfig()
	}
	if configPath != "" {
		var err error
		if cfg, err = gridstudy.LoadConfig(configPath, cfg); err != nil {
			return cfg, err
		}
	}
	if cmd.Flags().Changed("seeds") {
		if seeds < 1 {
			return cfg, fmt.Errorf("--seeds %d: want ≥ 1", seeds)
		}
		cfg.NumberOfSeeds, cfg.Ablation.NumberOfSeeds = seeds, seeds
	}
	if cmd.Flags().Changed("seed") {
		if seed < 0 {
			return cfg, fmt.Errorf("--seed %d: want ≥ 0", seed)
		}
		cfg.Seed = uint64(seed)
	}
	if flagChanged(cmd, "jobs") {
		if err := checkJobs("jobs", workers); err != nil {
			return cfg, err
		}
		cfg.Workers = workers
	}
	return cfg, nil
}

// runLog is a study command's run: its log.txt (File) and Log, which writes
// to both log.txt and stderr.
type runLog struct {
	File *os.File
	Log  io.Writer
	stop context.CancelFunc
}

// ended records why a run stopped early and returns what main reports:
// Ctrl-C (in log.txt only; main prints the one "interrupted" line) or the
// error; kept says what a rerun resumes from.
func (r *runLog) ended(ctx context.Context, start time.Time, err error, kept string) error {
	if ctx.Err() != nil {
		fmt.Fprintf(r.File, "interrupted after %v (%s)\n", time.Since(start).Round(time.Second), kept)
		return errInterrupted
	}
	fmt.Fprintf(r.Log, "failed after %v: %v (%s)\n", time.Since(start).Round(time.Second), err, kept)
	return err
}

// Close stops watching for Ctrl-C and closes log.txt.
func (r *runLog) Close() {
	r.stop()
	r.File.Close()
}

// startRun creates the run folder out of the command kind (its log.txt's
// first words, e.g. "fedirl reproduce control"), opens its log.txt
// (appended to or truncated) and returns it with a context that Ctrl-C
// cancels. A folder that holds another command's run is refused.
func startRun(cmd *cobra.Command, kind, out string, appendLog bool) (*runLog, context.Context, error) {
	if err := checkRunFolder(out, kind); err != nil {
		return nil, nil, err
	}
	f, err := openRunFolder(out, appendLog)
	if err != nil {
		return nil, nil, err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	return &runLog{File: f, Log: io.MultiWriter(f, cmd.ErrOrStderr()), stop: stop}, ctx, nil
}

// openRunFolder creates the run folder out and opens its log.txt, appended
// to or truncated.
func openRunFolder(out string, appendLog bool) (*os.File, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("creating --out %s: %w", out, err)
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendLog {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(filepath.Join(out, "log.txt"), flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the log in %s: %w", out, err)
	}
	return f, nil
}
