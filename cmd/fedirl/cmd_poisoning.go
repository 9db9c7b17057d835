package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	gridstudy "github.com/fedirl/fedirl/pkg/experiments/gridworld"
	"github.com/fedirl/fedirl/pkg/progress"
)

// newSweepPoisoningCmd builds "fedirl sweep poisoning".
func newSweepPoisoningCmd() *cobra.Command {
	var (
		regimesPath, out string
		seeds            int
		seed             int64
	)
	cmd := &cobra.Command{
		Use:   "poisoning",
		Short: "Poisoning benchmark: every fusion method with and without attacking clients, grid world, exact evaluation",
		Long: `Runs the pre-declared poisoning benchmark (issue 33): per seed, K honest
grid-world clients learn once; the honest-only federation and, per declared
attack, the federation with f attacking clients appended (scaled θ, sign-flipped
θ, the sign-flipped honest mean, a least-squares spike reward, Gaussian noise of
the honest norm) fuse with every listed fusion method; each
fused θ is evaluated exactly on the honest clients' environments and the
held-out ones and compared with the same method's honest-only fusion, paired
over seeds. Writes into --out:

  poisoning.yaml          the benchmark as run (study overrides, tolerance, attacks)
  poisoning.md, .csv      per attack and method: honest-only and attacked success,
  poisoning.json          attacked − honest-only with 95 % t-intervals, whether
                          it stays within the declared tolerance, and how often
                          the attackers have the largest outlier scores
  forest.png              forest plot of the paired differences
  log.txt`,
		Example: `  fedirl sweep poisoning --out runs/poisoning
  fedirl sweep poisoning --seeds 2 --out /tmp/poisoning
  fedirl sweep poisoning --print-regimes > my-poisoning.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if p, _ := cmd.Flags().GetBool("print-regimes"); p {
				_, err := cmd.OutOrStdout().Write(gridstudy.DefaultPoisoning)
				return err
			}
			data, src, err := regimesFile(regimesPath, gridstudy.DefaultPoisoning)
			if err != nil {
				return err
			}
			p, err := gridstudy.LoadPoisoning(data, src, gridstudy.DefaultConfig())
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("seeds") {
				if seeds < 1 {
					return fmt.Errorf("--seeds %d: want ≥ 1", seeds)
				}
				p.Study.NumberOfSeeds = seeds
			}
			if cmd.Flags().Changed("seed") {
				if seed < 0 {
					return fmt.Errorf("--seed %d: want ≥ 0", seed)
				}
				p.Study.Seed = uint64(seed)
			}
			if out == "" {
				out = fmt.Sprintf("runs/poisoning-seed%d-n%d", p.Study.Seed, p.Study.NumberOfSeeds)
			}
			run, ctx, err := startRun(cmd, "fedirl sweep poisoning", out, false)
			if err != nil {
				return err
			}
			defer run.Close()
			start := time.Now()
			fmt.Fprintf(run.Log, "fedirl sweep poisoning: %d attacks from %s, %d methods, %d seeds, GOMAXPROCS %d, started %s\n",
				len(p.Attacks), src, len(p.Study.FusionMethods), p.Study.NumberOfSeeds, runtime.GOMAXPROCS(0), start.UTC().Format(time.RFC3339))
			bar := progress.New(p.Study.NumberOfSeeds, "poisoning benchmark")
			res, err := gridstudy.RunPoisoning(ctx, p, bar)
			bar.Finish()
			if err != nil {
				if ctx.Err() != nil {
					return errInterrupted
				}
				return err
			}
			if err := gridstudy.WritePoisoning(out, data, res); err != nil {
				return err
			}
			fmt.Fprintf(run.Log, "poisoning benchmark %v; wrote %s\n", time.Since(start).Round(time.Millisecond), out)
			_, err = cmd.OutOrStdout().Write(gridstudy.PoisoningMarkdown(res))
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&regimesPath, "regimes", "", "benchmark file (YAML: study, tolerance, attacks; default the built-in, pre-declared one)")
	countVar(f, &seeds, "seeds", 0, "seeds", "number of seeds (default the file's study.number_of_seeds)")
	f.Int64Var(&seed, "seed", 1, "first seed (default the file's study.seed)")
	f.StringVar(&out, "out", "", "output folder (default runs/poisoning-seed<seed>-n<seeds>)")
	f.Bool("print-regimes", false, "print the built-in benchmark file and exit")
	return cmd
}
