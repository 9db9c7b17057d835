package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/experiments/ppostudy"
	"github.com/fedirl/fedirl/pkg/progress"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

func newPPOCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ppo",
		Short: "Train and evaluate PPO policies on the classic-control and LunarLander environments",
		Long: `PPO (stable-baselines3-style) on fedirl's Gymnasium-shaped environments.

  fedirl ppo train --env CartPole-v1 --out runs/cp     train one policy
  fedirl ppo eval --policy runs/cp/policy.json        evaluate a saved policy
  fedirl ppo study --seeds 5 --out runs/study         the learning study over several envs and seeds`,
	}
	cmd.AddCommand(newPPOTrainCmd(), newPPOEvalCmd(), newPPOStudyCmd())
	return cmd
}

// ppoTrainFlags are the flags shared by "ppo train" and "ppo study".
type ppoTrainFlags struct {
	preset       string
	config       string
	steps        int
	seed         uint64
	client       int
	evalEvery    int
	evalEpisodes int
	workers      int
	window       int
	precision    string
	// run is the run config read from --config when it is a run folder's
	// config.json (ppo train's own output); nil for a hyperparameter file.
	run *ppostudy.RunConfig
}

// readRunConfig reads --config as a run folder's config.json when it is one
// (a JSON object with "env" and "ppo"), strictly, into f.run; a
// hyperparameter file is left to resolve.
func (f *ppoTrainFlags) readRunConfig() error {
	if f.config == "" {
		return nil
	}
	b, err := os.ReadFile(f.config)
	if err != nil {
		return fmt.Errorf("reading --config: %w", err)
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(b, &probe) != nil || probe["env"] == nil || probe["ppo"] == nil {
		return nil
	}
	var rc ppostudy.RunConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rc); err != nil {
		return fmt.Errorf("--config %s (a run's config.json): %w", f.config, err)
	}
	f.run = &rc
	return nil
}

// applyRun takes every setting of the run config (f.run) that was not given
// as a flag: environment, client, seed, evaluation, window and precision.
// --preset is refused with it: the run config holds resolved hyperparameters.
func (f *ppoTrainFlags) applyRun(cmd *cobra.Command, env *string) error {
	rc := f.run
	if rc == nil {
		return nil
	}
	changed := func(name string) bool { return flagChanged(cmd, name) }
	if changed("preset") {
		return fmt.Errorf("--preset with --config %s: a run's config.json holds the resolved hyperparameters (preset %q); leave --preset out, or edit its \"ppo\" block", f.config, rc.Preset)
	}
	if !changed("env") {
		*env = rc.Env
	}
	if !changed("client") {
		f.client = rc.Client
	}
	if !changed("seed") {
		f.seed = rc.Seed
	}
	if !changed("eval-every") {
		f.evalEvery = rc.EvalEvery
	}
	if !changed("eval-episodes") {
		f.evalEpisodes = rc.EvalEpisodes
	}
	if !changed("window") {
		f.window = rc.Window
	}
	if !changed("precision") {
		f.precision = string(rc.Precision)
	}
	f.preset = rc.Preset
	return nil
}

// register adds the shared flags to cmd; jobsName is the name of the flag for
// the update's goroutines (--jobs in ppo train, --update-jobs in ppo study,
// whose --jobs counts runs).
func (f *ppoTrainFlags) register(cmd *cobra.Command, jobsName string) {
	cmd.Flags().StringVar(&f.preset, "preset", "", `hyperparameter preset: "sb3", "paper", an environment id with an RL Zoo preset, or "" for the environment's preset (sb3 if none)`)
	cmd.Flags().StringVar(&f.config, "config", "", "YAML or JSON file of PPO hyperparameters overriding the preset: stable-baselines3's PPO argument names (n_steps, batch_size, …), or an RL Zoo hyperparams/ppo.yml entry as rl-zoo3 writes it (n_timesteps, policy, normalize, lin_ schedules, policy_kwargs), bare or under its environment id; ppo train also takes a run folder's config.json (the whole run: env, client, seed, hyperparameters, evaluation; flags override)")
	countVar(cmd.Flags(), &f.steps, "steps", 0, "environment steps", "environment steps to train (default: the preset's total_steps; with --preset paper, the paper's expert steps)")
	cmd.Flags().IntVar(&f.client, "client", -1, "train in the paper's client i's perturbed environment, i counted from 0 (-1: the default environment)")
	cmd.Flags().IntVar(&f.evalEvery, "eval-every", 5000, "evaluate the deterministic policy every N steps (0: never)")
	countVar(cmd.Flags(), &f.evalEpisodes, "eval-episodes", 10, "episodes", "episodes per evaluation")
	countVar(cmd.Flags(), &f.workers, jobsName, 1, "the number of things run at the same time", "goroutines for the update (1 or 2; results are identical; 1 is faster on a 2-core machine)")
	deprecatedAlias(cmd, "workers", jobsName)
	countVar(cmd.Flags(), &f.window, "window", 100, "episodes", "episodes in the running mean of training returns")
	cmd.Flags().StringVar(&f.precision, "precision", "", "floating-point type of the networks during training: float32 or float64 (default: float32; float64 with use_sde, which float32 does not implement)")
}

// check refuses explicit values the trainer would replace or cannot use.
func (f *ppoTrainFlags) check(cmd *cobra.Command, jobsName string) error {
	if err := refuseExplicitZero(cmd, map[string]string{
		"steps": "want ≥ 1 environment step (leave --steps out for the preset's budget)",
	}); err != nil {
		return err
	}
	switch {
	case f.steps < 0:
		return fmt.Errorf("--steps %d: want ≥ 1", f.steps)
	case f.evalEvery < 0:
		return fmt.Errorf("--eval-every %d: want ≥ 0 (0: never)", f.evalEvery)
	case f.evalEpisodes < 1:
		return fmt.Errorf("--eval-episodes %d: want ≥ 1", f.evalEpisodes)
	case f.window < 1:
		return fmt.Errorf("--window %d: want ≥ 1 episode", f.window)
	case f.client < -1:
		return fmt.Errorf("--client %d: want a client index ≥ 0, or -1 for the default environment", f.client)
	}
	if flagChanged(cmd, "precision") && f.precision == "" {
		return fmt.Errorf(`--precision "": want float32 or float64 (leave --precision out for the default)`)
	}
	if _, err := ppo.ParsePrecision(f.precision); err != nil {
		return fmt.Errorf("--precision: %w", err)
	}
	return checkJobs(jobsName, f.workers)
}

// resolve returns the PPO configuration for env (preset, then config file,
// then --steps), the preset's name and the networks' precision (see prec).
func (f *ppoTrainFlags) resolve(env string) (ppo.Config, string, ppo.Precision, error) {
	name := f.preset
	if name == "" {
		name = "sb3"
		for _, p := range ppo.PresetNames() {
			if p == env {
				name = env
			}
		}
	}
	cfg, err := ppo.Preset(name)
	if err != nil {
		return cfg, name, "", err
	}
	if name == "paper" {
		if s, ok := ppo.PaperExpertSteps[env]; ok {
			cfg.TotalSteps = s
		}
	}
	if f.run != nil {
		// A run's config.json: its resolved hyperparameters, exactly.
		cfg = f.run.PPO
	} else if f.config != "" {
		b, err := os.ReadFile(f.config)
		if err != nil {
			return cfg, name, "", fmt.Errorf("reading --config: %w", err)
		}
		if cfg, err = ppo.ApplyConfig(cfg, b, env); err != nil {
			return cfg, name, "", fmt.Errorf("--config %s: %w", f.config, err)
		}
	}
	if f.steps > 0 {
		cfg.TotalSteps = f.steps
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, name, "", fmt.Errorf("config for %s: %w", env, err)
	}
	prec, err := f.prec(cfg, name)
	if err != nil {
		return cfg, name, "", err
	}
	return cfg, name, prec, nil
}

// prec returns the networks' precision for cfg (from preset name): --precision,
// or without it PPO's default (float32), except that gSDE (use_sde) trains
// float64 networks only, so with it the default is float64 and an explicit
// --precision float32 is refused.
func (f *ppoTrainFlags) prec(cfg ppo.Config, preset string) (ppo.Precision, error) {
	p, err := ppo.ParsePrecision(f.precision)
	if err != nil {
		return "", fmt.Errorf("--precision: %w", err)
	}
	if !cfg.UseSDE {
		return p, nil
	}
	if f.precision == "" {
		return ppo.Float64, nil
	}
	if p == ppo.Float32 {
		src := "preset " + preset
		if f.config != "" {
			src = "--config " + f.config
		}
		return "", fmt.Errorf("--precision float32 with use_sde (from %s): gSDE trains float64 networks only; use --precision float64 or leave --precision out", src)
	}
	return p, nil
}

func newPPOTrainCmd() *cobra.Command {
	var f ppoTrainFlags
	var env, out string
	var plan bool
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a PPO policy and write policy.json, curve.csv/json/png and config.json (rerun it with --config)",
		Example: `  fedirl ppo train --env CartPole-v1 --steps 100000 --seed 1 --out runs/cartpole
  fedirl ppo train --env Pendulum-v1 --client 3 --preset paper --out runs/pend-c3
  fedirl ppo train --config runs/cartpole/config.json --out runs/cartpole-again   # the same run again (flags override)
  fedirl ppo train --env BipedalWalker-v3 --plan                         # RL Zoo's walker preset (5e6 steps), priced
  fedirl ppo train --env BipedalWalker-v3 --out runs/walker              # the same, trained`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.readRunConfig(); err != nil {
				return err
			}
			if err := f.applyRun(cmd, &env); err != nil {
				return err
			}
			if err := f.check(cmd, "jobs"); err != nil {
				return err
			}
			if err := checkEnvClient(env, f.client); err != nil {
				return err
			}
			if err := checkOutFolder(out); err != nil {
				return err
			}
			cfg, preset, prec, err := f.resolve(env)
			if err != nil {
				return err
			}
			if plan {
				per, ok := ppo.CPUSecondsPerStep[env]
				if !ok {
					return fmt.Errorf("--plan: no measured training rate for %s (known: %s); measure one with a BenchmarkTrain_* in pkg/rl/ppo", env, strings.Join(slices.Sorted(maps.Keys(ppo.CPUSecondsPerStep)), ", "))
				}
				cpu := float64(cfg.TotalSteps) * per
				fmt.Fprintf(cmd.OutOrStdout(), "ppo train %s (preset %s): %d steps × %.1f µs of CPU per step = %.0f CPU-s (%.1f CPU-min) on one core; %d copies, n_steps %d, %d epochs of batch %d\n",
					env, preset, cfg.TotalSteps, per*1e6, cpu, cpu/60, cfg.NEnvs, cfg.NSteps, cfg.NEpochs, cfg.BatchSize)
				return nil
			}
			rc := ppostudy.RunConfig{Env: env, Client: f.client, Seed: f.seed, Preset: preset, PPO: cfg,
				EvalEvery: f.evalEvery, EvalEpisodes: f.evalEpisodes, Window: f.window, Precision: prec}
			bar := progress.New(cfg.TotalSteps, "ppo "+env)
			start := time.Now()
			ctx, stop := interruptContext(cmd.Context()) // Ctrl-C: "fedirl: interrupted", exit 130
			defer stop()
			tr, err := ppostudy.Train(ctx, rc, f.workers, bar)
			bar.Finish()
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("ppo train stopped after %v, nothing written (a rerun trains from the start): %w", time.Since(start).Round(time.Millisecond), errInterrupted)
				}
				return err
			}
			el := time.Since(start)
			c := tr.Curve()
			last := c[len(c)-1]
			fmt.Fprintf(os.Stderr, "%d steps in %.1fs (%.0f steps/s); mean return of last %d episodes %.2f\n",
				tr.Steps(), el.Seconds(), float64(tr.Steps())/el.Seconds(), f.window, last.MeanTrueReturn)
			if out == "" {
				return nil
			}
			if err := ppostudy.WriteRun(out, rc, tr); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "wrote %s\n", out)
			return nil
		},
	}
	f.register(cmd, "jobs")
	cmd.Flags().StringVar(&env, "env", "CartPole-v1", "environment id: "+strings.Join(registry.Names(), ", "))
	cmd.Flags().Uint64Var(&f.seed, "seed", 0, "random seed (same seed, same output bytes)")
	cmd.Flags().StringVar(&out, "out", "", "output folder (empty: print the summary only)")
	cmd.Flags().BoolVar(&plan, "plan", false, "print the run's modelled CPU time (steps × the measured rate of ppo.CPUSecondsPerStep) and train nothing")
	return cmd
}

// checkOutFolder refuses an --out that exists and is not a folder, before
// any work is done.
func checkOutFolder(out string) error {
	if out == "" {
		return nil
	}
	if st, err := os.Stat(out); err == nil && !st.IsDir() {
		return fmt.Errorf("--out %s is a file: give a folder (the run writes config.json, policy.json, curve.csv, curve.json and curve.png into it)", out)
	}
	return checkRunFolder(out, "fedirl ppo train")
}

func newPPOEvalCmd() *cobra.Command {
	var policy, env, out string
	var episodes, client int
	var seed uint64
	var stochastic bool
	cmd := &cobra.Command{
		Use:     "eval",
		Short:   "Evaluate a saved policy: episode returns as JSON",
		Example: `  fedirl ppo eval --policy runs/cartpole/policy.json --episodes 20`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if episodes < 1 {
				return fmt.Errorf("--episodes %d: want ≥ 1", episodes)
			}
			if client < -1 {
				return fmt.Errorf("--client %d: want a client index ≥ 0, or -1 for the default environment", client)
			}
			p, err := ppo.Load(policy)
			if err != nil {
				return err
			}
			if env == "" {
				// Take the environment from the run's config.json beside the policy.
				var rc ppostudy.RunConfig
				b, err := os.ReadFile(filepath.Join(filepath.Dir(policy), "config.json"))
				if err != nil {
					return fmt.Errorf("no --env given and %w", err)
				}
				if err := json.Unmarshal(b, &rc); err != nil || rc.Env == "" {
					return fmt.Errorf("no --env given and config.json beside %s names no env (%v)", policy, err)
				}
				env = rc.Env
				if !cmd.Flags().Changed("client") {
					client = rc.Client
				}
			}
			if err := checkEnvClient(env, client); err != nil {
				return err
			}
			e, err := ppostudy.EnvMaker(env, client, seed)(0)
			if err != nil {
				return err
			}
			if o, a := e.ObservationSpace(), e.ActionSpace(); o.Dim() != p.ObsDim || a.N != p.Action.N || a.Dim() != p.Action.Dim() {
				return fmt.Errorf("policy %s does not fit %s (observation %d vs %d, action %d vs %d)", policy, env, p.ObsDim, o.Dim(), p.Action.Dim(), a.Dim())
			}
			rets := ppo.Evaluate(p, e, episodes, seed, !stochastic, 0)
			m, s := stat.PopMeanStdDev(rets, nil)
			fmt.Fprintf(os.Stderr, "%s: mean return %.2f ± %.2f over %d episodes\n", env, m, s, episodes)
			return writeJSON(out, map[string]any{"env": env, "client": client, "policy": policy, "deterministic": !stochastic,
				"seed": seed, "returns": rets, "mean": m, "std": s})
		},
	}
	cmd.Flags().StringVar(&policy, "policy", "", "policy checkpoint (policy.json from ppo train)")
	cmd.Flags().StringVar(&env, "env", "", "environment id (default: from config.json beside the policy)")
	cmd.Flags().IntVar(&client, "client", -1, "evaluate in the paper's client i's perturbed environment, i counted from 0 (-1: the default environment)")
	countVar(cmd.Flags(), &episodes, "episodes", 10, "episodes", "number of episodes")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "seed of the episodes' initial states")
	cmd.Flags().BoolVar(&stochastic, "stochastic", false, "sample actions instead of taking the mode")
	cmd.Flags().StringVar(&out, "out", "", "JSON output file (empty or -: stdout)")
	_ = cmd.MarkFlagRequired("policy")
	return cmd
}

func newPPOStudyCmd() *cobra.Command {
	var f ppoTrainFlags
	var envList, out string
	var seeds, jobs int
	var firstSeed uint64
	cmd := &cobra.Command{
		Use:   "study",
		Short: "Learning study: train every env with several seeds, write curves, plots and a summary table",
		Long: `Trains PPO on each environment with seeds --seed, …, --seed+--seeds−1 using each
environment's preset and the study's step budgets (CartPole-v1 100k, Pendulum-v1 200k, Acrobot-v1 100k,
LunarLanderContinuous-v3 1M; --steps overrides),
evaluating the deterministic policy every --eval-every steps. A run "reaches" the target
(CartPole 475, Pendulum -250, Acrobot -100, LunarLander 200) when an evaluation within the budget does.
Writes <out>/<env>/seed<k>/ (as ppo train), <out>/<env>.png and <out>/summary.{md,csv,json}.`,
		Example: `  fedirl ppo study --env CartPole-v1,Pendulum-v1,Acrobot-v1 --seeds 5 --out runs/study`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if seeds < 1 {
				return fmt.Errorf("--seeds %d: want ≥ 1", seeds)
			}
			if err := checkJobs("jobs", jobs); err != nil {
				return err
			}
			if err := f.check(cmd, "update-jobs"); err != nil {
				return err
			}
			if out == "" {
				return fmt.Errorf("--out is required")
			}
			var runs []ppostudy.RunConfig
			names := strings.Split(envList, ",")
			for _, env := range names {
				if err := checkEnvClient(env, f.client); err != nil {
					return err
				}
				cfg, preset, prec, err := f.resolve(env)
				if err != nil {
					return err
				}
				if s := ppostudy.StudySteps(env); s > 0 && f.steps == 0 {
					cfg.TotalSteps = s
				}
				for s := range uint64(seeds) {
					runs = append(runs, ppostudy.RunConfig{Env: env, Client: f.client, Seed: firstSeed + s, Preset: preset, PPO: cfg,
						EvalEvery: f.evalEvery, EvalEpisodes: f.evalEpisodes, Window: f.window, Precision: prec})
				}
			}
			ctx, stop := interruptContext(cmd.Context())
			defer stop()
			md, err := ppostudy.Run(ctx, runs, names, ppostudy.Options{Out: out, Jobs: jobs, Workers: f.workers, Log: os.Stderr})
			if err != nil {
				if ctx.Err() != nil {
					return errInterrupted
				}
				return err
			}
			fmt.Print(md)
			return nil
		},
	}
	f.register(cmd, "update-jobs")
	cmd.Flags().StringVar(&envList, "env", "CartPole-v1,Pendulum-v1,Acrobot-v1", "comma-separated environment ids")
	deprecatedAlias(cmd, "envs", "env")
	cmd.Flags().Uint64Var(&firstSeed, "seed", 0, "first seed")
	countVar(cmd.Flags(), &seeds, "seeds", 5, "seeds", "number of seeds: --seed, …, --seed+--seeds−1")
	countVar(cmd.Flags(), &jobs, "jobs", 1, "the number of things run at the same time", "runs trained at the same time (results do not depend on it)")
	cmd.Flags().StringVar(&out, "out", "", "output folder")
	return cmd
}

func init() {
	rootCmd.AddCommand(newPPOCmd())
}
