package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gopkg.in/yaml.v3"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/progress"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

var ppoCmd = &cobra.Command{
	Use:   "ppo",
	Short: "Train and evaluate PPO policies on the classic-control environments",
	Long: `PPO (stable-baselines3-style) on fedirl's Gymnasium-shaped environments.

  fedirl ppo train --env CartPole-v1 --out runs/cp     train one policy
  fedirl ppo eval --policy runs/cp/policy.json        evaluate a saved policy
  fedirl ppo study --seeds 5 --out runs/study         the learning study over several envs and seeds`,
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
}

func (f *ppoTrainFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.preset, "preset", "", `hyperparameter preset: "sb3", "paper", an environment id with an RL Zoo preset, or "" for the environment's preset (sb3 if none)`)
	cmd.Flags().StringVar(&f.config, "config", "", "YAML or JSON file of PPO hyperparameters (keys as in stable-baselines3, e.g. n_steps, batch_size) overriding the preset")
	cmd.Flags().IntVar(&f.steps, "steps", 0, "environment steps to train (0: the preset's total_steps; with --preset paper, the paper's expert steps)")
	cmd.Flags().IntVar(&f.client, "client", -1, "train in the paper's client i's perturbed environment (-1: the default environment)")
	cmd.Flags().IntVar(&f.evalEvery, "eval-every", 5000, "evaluate the deterministic policy every N steps (0: never)")
	cmd.Flags().IntVar(&f.evalEpisodes, "eval-episodes", 10, "episodes per evaluation")
	cmd.Flags().IntVar(&f.workers, "workers", 2, "goroutines for the update (1 or 2; results are identical)")
	cmd.Flags().IntVar(&f.window, "window", 100, "episodes in the running mean of training returns")
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
	return cfg, name, nil
}

// ppoEnvMaker makes environment copies of name, perturbed for client ≥ 0;
// copy i of a client gets observation-noise seed derived from seed and i.
func ppoEnvMaker(name string, client int, seed uint64) ppo.EnvMaker {
	return func(i int) (envs.Env, error) {
		if client < 0 {
			return classic.Make(name)
		}
		return classic.ClientEnv(name, client, seed*1_000_003+uint64(i))
	}
}

// ppoRunConfig is the resolved configuration of one run, written as config.json so it can be rerun.
type ppoRunConfig struct {
	Env          string     `json:"env"`
	Client       int        `json:"client"`
	Seed         uint64     `json:"seed"`
	Preset       string     `json:"preset"`
	PPO          ppo.Config `json:"ppo"`
	EvalEvery    int        `json:"eval_every"`
	EvalEpisodes int        `json:"eval_episodes"`
	Window       int        `json:"window"`
}

// ppoRun trains one policy and returns the trainer; bar (may be nil) counts steps.
func ppoRun(ctx context.Context, rc ppoRunConfig, workers int, bar *progress.Bar) (*ppo.Trainer, error) {
	last := 0
	tr, err := ppo.NewTrainer(rc.PPO, ppoEnvMaker(rc.Env, rc.Client, rc.Seed), ppo.Options{
		Seed: rc.Seed, Window: rc.Window, EvalEvery: rc.EvalEvery, EvalEpisodes: rc.EvalEpisodes, Workers: workers,
		OnUpdate: func(p ppo.CurvePoint) { bar.Add(p.Steps - last); last = p.Steps },
	})
	if err != nil {
		return nil, err
	}
	if err := tr.Learn(ctx, rc.PPO.TotalSteps); err != nil {
		return nil, err
	}
	return tr, nil
}

// writeRun writes config.json, policy.json, curve.csv, curve.json and curve.png of one run to dir.
func writeRun(dir string, rc ppoRunConfig, tr *ppo.Trainer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating output folder: %w", err)
	}
	if err := writeJSON(filepath.Join(dir, "config.json"), rc); err != nil {
		return err
	}
	cfg := tr.Config()
	if err := tr.Policy().Save(filepath.Join(dir, "policy.json"), &cfg); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "curve.json"), tr.Curve()); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := ppo.WriteCurveCSV(&buf, tr.Curve()); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "curve.csv"), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing curve: %w", err)
	}
	title := rc.Env
	if rc.Client >= 0 {
		title += fmt.Sprintf(" client %d", rc.Client)
	}
	return plotCurves(filepath.Join(dir, "curve.png"), title+fmt.Sprintf(", seed %d", rc.Seed),
		map[string][]ppo.CurvePoint{fmt.Sprintf("seed %d", rc.Seed): tr.Curve()}, math.NaN())
}

// plotCurves draws, for each named curve, the running mean of training returns (solid)
// and the deterministic evaluation returns (points), with an optional threshold line.
func plotCurves(path, title string, curves map[string][]ppo.CurvePoint, threshold float64) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "environment steps"
	p.Y.Label.Text = "true return (line: training mean, points: evaluation)"
	names := make([]string, 0, len(curves))
	for n := range curves {
		names = append(names, n)
	}
	sort.Strings(names)
	for k, n := range names {
		c := curves[n]
		var train, ev plotter.XYs
		for _, pt := range c {
			if pt.Episodes > 0 {
				train = append(train, plotter.XY{X: float64(pt.Steps), Y: pt.MeanTrueReturn})
			}
			if pt.EvalReturn != nil {
				ev = append(ev, plotter.XY{X: float64(pt.Steps), Y: *pt.EvalReturn})
			}
		}
		col := plotutil.Color(k)
		if len(train) > 0 {
			l, err := plotter.NewLine(train)
			if err != nil {
				return err
			}
			l.Color = col
			p.Add(l)
			p.Legend.Add(n, l)
		}
		if len(ev) > 0 {
			s, err := plotter.NewScatter(ev)
			if err != nil {
				return err
			}
			s.Color = col
			s.Radius = vg.Points(1.5)
			p.Add(s)
		}
	}
	if !math.IsNaN(threshold) {
		f := plotter.NewFunction(func(float64) float64 { return threshold })
		f.Color = color.Gray{Y: 100}
		f.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		p.Add(f)
		p.Legend.Add(fmt.Sprintf("target %g", threshold), f)
	}
	p.Legend.Top = false
	p.Legend.Left = false
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("saving plot %s: %w", path, err)
	}
	return nil
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
			rc := ppoRunConfig{Env: env, Client: f.client, Seed: f.seed, Preset: preset, PPO: cfg,
				EvalEvery: f.evalEvery, EvalEpisodes: f.evalEpisodes, Window: f.window}
			if _, err := ppoEnvMaker(env, f.client, f.seed)(0); err != nil {
				return fmt.Errorf("--env/--client: %w", err)
			}
			bar := progress.New(cfg.TotalSteps, "ppo "+env)
			start := time.Now()
			tr, err := ppoRun(cmd.Context(), rc, f.workers, bar)
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
			if err := writeRun(out, rc, tr); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "wrote %s\n", out)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&env, "env", "CartPole-v1", "environment id: "+strings.Join(classic.Names(), ", "))
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
				var rc ppoRunConfig
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
			e, err := ppoEnvMaker(env, client, seed)(0)
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

// studyTargets are the learning targets: return threshold and step budget per environment.
var studyTargets = map[string]struct {
	threshold float64
	steps     int
}{
	"CartPole-v1": {475, 100_000},
	"Pendulum-v1": {-250, 200_000},
	"Acrobot-v1":  {-100, 100_000},
}

// studyRow summarises one (environment, seed) run of the study.
type studyRow struct {
	Env       string  `json:"env"`
	Seed      uint64  `json:"seed"`
	Steps     int     `json:"steps"`
	Threshold float64 `json:"threshold"`
	// FirstEvalHit is the first step at which the deterministic evaluation reached the threshold (-1: never).
	FirstEvalHit int     `json:"first_eval_hit"`
	BestEval     float64 `json:"best_eval"`
	FinalEval    float64 `json:"final_eval"`
	// FirstTrainHit is the first step at which the running training mean reached the threshold (-1: never).
	FirstTrainHit int     `json:"first_train_hit"`
	FinalTrain    float64 `json:"final_train_mean"`
	Reached       bool    `json:"reached"`
}

func newPPOStudyCmd() *cobra.Command {
	var f ppoTrainFlags
	var envList, out string
	var seeds, jobs int
	cmd := &cobra.Command{
		Use:   "study",
		Short: "Learning study: train every env with several seeds, write curves, plots and a summary table",
		Long: `Trains PPO on each environment with seeds 0..n-1 using each environment's preset and
the issue's step budgets (CartPole-v1 100k, Pendulum-v1 200k, Acrobot-v1 100k; --steps overrides),
evaluating the deterministic policy every --eval-every steps. A run "reaches" the target
(CartPole 475, Pendulum -250, Acrobot -100) when an evaluation within the budget does.
Writes <out>/<env>/seed<k>/ (as ppo train), <out>/<env>.png and <out>/summary.{md,csv,json}.`,
		Example: `  fedirl ppo study --envs CartPole-v1,Pendulum-v1,Acrobot-v1 --seeds 5 --out runs/study`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if seeds < 1 || jobs < 1 {
				return fmt.Errorf("--seeds and --jobs must be ≥ 1")
			}
			if out == "" {
				return fmt.Errorf("--out is required")
			}
			var runs []ppoRunConfig
			names := strings.Split(envList, ",")
			for _, env := range names {
				cfg, preset, err := f.resolve(env)
				if err != nil {
					return err
				}
				if t, ok := studyTargets[env]; ok && f.steps == 0 {
					cfg.TotalSteps = t.steps
				}
				if _, err := ppoEnvMaker(env, f.client, 0)(0); err != nil {
					return fmt.Errorf("--envs: %w", err)
				}
				for s := 0; s < seeds; s++ {
					runs = append(runs, ppoRunConfig{Env: env, Client: f.client, Seed: uint64(s), Preset: preset, PPO: cfg,
						EvalEvery: f.evalEvery, EvalEpisodes: f.evalEpisodes, Window: f.window})
				}
			}
			total := 0
			for _, r := range runs {
				total += r.PPO.TotalSteps
			}
			bar := progress.New(total, "ppo study")
			trainers := make([]*ppo.Trainer, len(runs))
			errs := make([]error, len(runs))
			var mu sync.Mutex
			var wg sync.WaitGroup
			sem := make(chan struct{}, jobs)
			for k := range runs {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					start := time.Now()
					tr, err := ppoRun(cmd.Context(), runs[k], f.workers, nil)
					trainers[k], errs[k] = tr, err
					if err == nil {
						err = writeRun(filepath.Join(out, runs[k].Env, fmt.Sprintf("seed%d", runs[k].Seed)), runs[k], tr)
						errs[k] = err
					}
					mu.Lock()
					bar.Add(runs[k].PPO.TotalSteps)
					if err == nil {
						el := time.Since(start).Seconds()
						c := tr.Curve()
						fmt.Fprintf(os.Stderr, "%s seed %d: %d steps in %.1fs (%.0f steps/s), final training mean %.1f\n",
							runs[k].Env, runs[k].Seed, tr.Steps(), el, float64(tr.Steps())/el, c[len(c)-1].MeanTrueReturn)
					}
					mu.Unlock()
				}()
			}
			wg.Wait()
			bar.Finish()
			for k, err := range errs {
				if err != nil {
					return fmt.Errorf("%s seed %d: %w", runs[k].Env, runs[k].Seed, err)
				}
			}
			var rows []studyRow
			byEnv := map[string]map[string][]ppo.CurvePoint{}
			for k, rc := range runs {
				th := math.NaN()
				if t, ok := studyTargets[rc.Env]; ok {
					th = t.threshold
				}
				row := studyRow{Env: rc.Env, Seed: rc.Seed, Steps: trainers[k].Steps(), Threshold: th,
					FirstEvalHit: -1, FirstTrainHit: -1, BestEval: math.Inf(-1)}
				for _, p := range trainers[k].Curve() {
					if p.EvalReturn != nil {
						row.FinalEval = *p.EvalReturn
						row.BestEval = math.Max(row.BestEval, *p.EvalReturn)
						if row.FirstEvalHit < 0 && *p.EvalReturn >= th {
							row.FirstEvalHit = p.Steps
						}
					}
					if row.FirstTrainHit < 0 && p.Episodes > 0 && p.MeanTrueReturn >= th {
						row.FirstTrainHit = p.Steps
					}
					row.FinalTrain = p.MeanTrueReturn
				}
				if math.IsInf(row.BestEval, -1) {
					row.BestEval = math.NaN()
				}
				row.Reached = row.FirstEvalHit >= 0
				rows = append(rows, row)
				if byEnv[rc.Env] == nil {
					byEnv[rc.Env] = map[string][]ppo.CurvePoint{}
				}
				byEnv[rc.Env][fmt.Sprintf("seed %d", rc.Seed)] = trainers[k].Curve()
			}
			for _, env := range names {
				th := math.NaN()
				if t, ok := studyTargets[env]; ok {
					th = t.threshold
				}
				if err := plotCurves(filepath.Join(out, env+".png"), env+": PPO learning curves", byEnv[env], th); err != nil {
					return err
				}
			}
			return writeStudySummary(out, names, rows)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&envList, "envs", "CartPole-v1,Pendulum-v1,Acrobot-v1", "comma-separated environment ids")
	cmd.Flags().IntVar(&seeds, "seeds", 5, "number of seeds (0..n-1)")
	cmd.Flags().IntVar(&jobs, "jobs", 1, "runs trained at the same time (results do not depend on it)")
	cmd.Flags().StringVar(&out, "out", "", "output folder")
	return cmd
}

func writeStudySummary(out string, names []string, rows []studyRow) error {
	var md, csvb strings.Builder
	md.WriteString("| env | seed | steps | target | first eval ≥ target | best eval | final eval | first train mean ≥ target | final train mean | reached |\n")
	md.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	csvb.WriteString("env,seed,steps,threshold,first_eval_hit,best_eval,final_eval,first_train_hit,final_train_mean,reached\n")
	for _, r := range rows {
		fmt.Fprintf(&md, "| %s | %d | %d | %g | %d | %.1f | %.1f | %d | %.1f | %v |\n", r.Env, r.Seed, r.Steps, r.Threshold,
			r.FirstEvalHit, r.BestEval, r.FinalEval, r.FirstTrainHit, r.FinalTrain, r.Reached)
		fmt.Fprintf(&csvb, "%s,%d,%d,%g,%d,%g,%g,%d,%g,%v\n", r.Env, r.Seed, r.Steps, r.Threshold,
			r.FirstEvalHit, r.BestEval, r.FinalEval, r.FirstTrainHit, r.FinalTrain, r.Reached)
	}
	md.WriteString("\n| env | seeds reaching the target |\n|---|---|\n")
	for _, env := range names {
		n, k := 0, 0
		for _, r := range rows {
			if r.Env == env {
				n++
				if r.Reached {
					k++
				}
			}
		}
		fmt.Fprintf(&md, "| %s | %d / %d |\n", env, k, n)
	}
	if err := os.WriteFile(filepath.Join(out, "summary.md"), []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("writing summary: %w", err)
	}
	if err := os.WriteFile(filepath.Join(out, "summary.csv"), []byte(csvb.String()), 0o644); err != nil {
		return fmt.Errorf("writing summary: %w", err)
	}
	// JSON cannot hold NaN: use null for missing evaluations.
	type jrow struct {
		studyRow
		BestEval *float64 `json:"best_eval"`
	}
	var js []jrow
	for _, r := range rows {
		j := jrow{studyRow: r}
		if !math.IsNaN(r.BestEval) {
			v := r.BestEval
			j.BestEval = &v
		}
		js = append(js, j)
	}
	if err := writeJSON(filepath.Join(out, "summary.json"), js); err != nil {
		return err
	}
	fmt.Print(md.String())
	return nil
}

func init() {
	ppoCmd.AddCommand(newPPOTrainCmd(), newPPOEvalCmd(), newPPOStudyCmd())
	rootCmd.AddCommand(ppoCmd)
}
