package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/experiments/ppostudy"
	"github.com/fedirl/fedirl/pkg/progress"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

func newPPOCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ppo",
		Short: "Train and evaluate PPO policies on the classic-control environments",
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
}

func (f *ppoTrainFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.preset, "preset", "", `hyperparameter preset: "sb3", "paper", an environment id with an RL Zoo preset, or "" for the environment's preset (sb3 if none)`)
	cmd.Flags().StringVar(&f.config, "config", "", "YAML or JSON file of PPO hyperparameters (keys as in stable-baselines3, e.g. n_steps, batch_size) overriding the preset")
	cmd.Flags().IntVar(&f.steps, "steps", 0, "environment steps to train (0: the preset's total_steps; with --preset paper, the paper's expert steps)")
	cmd.Flags().IntVar(&f.client, "client", -1, "train in the paper's client i's perturbed environment (-1: the default environment)")
	cmd.Flags().IntVar(&f.evalEvery, "eval-every", 5000, "evaluate the deterministic policy every N steps (0: never)")
	cmd.Flags().IntVar(&f.evalEpisodes, "eval-episodes", 10, "episodes per evaluation")
	cmd.Flags().IntVar(&f.workers, "workers", 1, "goroutines for the update (1 or 2; results are identical; 1 is faster on a 2-core machine)")
	cmd.Flags().IntVar(&f.window, "window", 100, "episodes in the running mean of training returns")
	cmd.Flags().StringVar(&f.precision, "precision", "", "floating-point type of the networks during training: float32 or float64 (empty: PPO's default, float32)")
}

// resolve returns the PPO configuration for env: preset, then config file, then --steps.
func (f *ppoTrainFlags) resolve(env string) (ppo.Config, string, error) {
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
		return cfg, name, err
	}
	if name == "paper" {
		if s, ok := ppo.PaperExpertSteps[env]; ok {
			cfg.TotalSteps = s
		}
	}
	if f.config != "" {
		b, err := os.ReadFile(f.config)
		if err != nil {
			return cfg, name, fmt.Errorf("reading --config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil {
			return cfg, name, fmt.Errorf("config %s: %w", f.config, err)
		}
	}
	if f.steps > 0 {
		cfg.TotalSteps = f.steps
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, name, fmt.Errorf("config for %s: %w", env, err)
	}
	if _, err := ppo.ParsePrecision(f.precision); err != nil {
		return cfg, name, fmt.Errorf("--precision: %w", err)
	}
	return cfg, name, nil
}

// prec returns the resolved --precision (resolve has validated it).
func (f *ppoTrainFlags) prec() ppo.Precision {
	p, _ := ppo.ParsePrecision(f.precision)
	return p
}

func newPPOTrainCmd() *cobra.Command {
	var f ppoTrainFlags
	var env, out string
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a PPO policy and write policy.json, curve.csv/json/png and config.json",
		Example: `  fedirl ppo train --env CartPole-v1 --steps 100000 --seed 1 --out runs/cartpole
  fedirl ppo train --env Pendulum-v1 --client 3 --preset paper --out runs/pend-c3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, preset, err := f.resolve(env)
			if err != nil {
				return err
			}
			rc := ppostudy.RunConfig{Env: env, Client: f.client, Seed: f.seed, Preset: preset, PPO: cfg,
				EvalEvery: f.evalEvery, EvalEpisodes: f.evalEpisodes, Window: f.window, Precision: f.prec()}
			if _, err := ppostudy.EnvMaker(env, f.client, f.seed)(0); err != nil {
				return fmt.Errorf("--env/--client: %w", err)
			}
			bar := progress.New(cfg.TotalSteps, "ppo "+env)
			start := time.Now()
			tr, err := ppostudy.Train(cmd.Context(), rc, f.workers, bar)
			bar.Finish()
			if err != nil {
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
	f.register(cmd)
	cmd.Flags().StringVar(&env, "env", "CartPole-v1", "environment id: "+strings.Join(registry.Names(), ", "))
	cmd.Flags().Uint64Var(&f.seed, "seed", 0, "random seed (same seed, same output bytes)")
	cmd.Flags().StringVar(&out, "out", "", "output folder (empty: print the summary only)")
	return cmd
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
				return fmt.Errorf("--episodes = %d, want ≥ 1", episodes)
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
			e, err := ppostudy.EnvMaker(env, client, seed)(0)
			if err != nil {
				return fmt.Errorf("--env: %w", err)
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
	cmd.Flags().IntVar(&client, "client", -1, "evaluate in client i's perturbed environment (-1: default environment)")
	cmd.Flags().IntVar(&episodes, "episodes", 10, "number of episodes")
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
	cmd := &cobra.Command{
		Use:   "study",
		Short: "Learning study: train every env with several seeds, write curves, plots and a summary table",
		Long: `Trains PPO on each environment with seeds 0..n-1 using each environment's preset and
the issue's step budgets (CartPole-v1 100k, Pendulum-v1 200k, Acrobot-v1 100k,
LunarLanderContinuous-v3 1M; --steps overrides),
evaluating the deterministic policy every --eval-every steps. A run "reaches" the target
(CartPole 475, Pendulum -250, Acrobot -100, LunarLander 200) when an evaluation within the budget does.
Writes <out>/<env>/seed<k>/ (as ppo train), <out>/<env>.png and <out>/summary.{md,csv,json}.`,
		Example: `  fedirl ppo study --envs CartPole-v1,Pendulum-v1,Acrobot-v1 --seeds 5 --out runs/study`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if seeds < 1 || jobs < 1 {
				return fmt.Errorf("--seeds and --jobs must be ≥ 1")
			}
			if out == "" {
				return fmt.Errorf("--out is required")
			}
			var runs []ppostudy.RunConfig
			names := strings.Split(envList, ",")
			for _, env := range names {
				cfg, preset, err := f.resolve(env)
				if err != nil {
					return err
				}
				if s := ppostudy.StudySteps(env); s > 0 && f.steps == 0 {
					cfg.TotalSteps = s
				}
				if _, err := ppostudy.EnvMaker(env, f.client, 0)(0); err != nil {
					return fmt.Errorf("--envs: %w", err)
				}
				for s := 0; s < seeds; s++ {
					runs = append(runs, ppostudy.RunConfig{Env: env, Client: f.client, Seed: uint64(s), Preset: preset, PPO: cfg,
						EvalEvery: f.evalEvery, EvalEpisodes: f.evalEpisodes, Window: f.window, Precision: f.prec()})
				}
			}
			md, err := ppostudy.Run(cmd.Context(), runs, names, ppostudy.Options{Out: out, Jobs: jobs, Workers: f.workers, Log: os.Stderr})
			if err != nil {
				return err
			}
			fmt.Print(md)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&envList, "envs", "CartPole-v1,Pendulum-v1,Acrobot-v1", "comma-separated environment ids")
	cmd.Flags().IntVar(&seeds, "seeds", 5, "number of seeds (0..n-1)")
	cmd.Flags().IntVar(&jobs, "jobs", 1, "runs trained at the same time (results do not depend on it)")
	cmd.Flags().StringVar(&out, "out", "", "output folder")
	return cmd
}

func init() {
	rootCmd.AddCommand(newPPOCmd())
}
