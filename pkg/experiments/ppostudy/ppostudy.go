// Package ppostudy is the PPO learning study (`fedirl ppo study`): PPO trained
// with several seeds on each environment with its preset, evaluated against
// the return targets of Gymnasium's classic-control tasks, with curves,
// plots and a summary table per run folder. It also holds the run-folder
// layout of a single training run (`fedirl ppo train`).
//
// PPO itself lives in pkg/rl/ppo and the environments in pkg/envs; this
// package only runs and reports, and parses no flags (cmd/fedirl does).
package ppostudy

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/progress"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// EnvMaker makes environment copies of name, perturbed for client ≥ 0;
// copy i of a client gets observation-noise seed derived from seed and i.
func EnvMaker(name string, client int, seed uint64) ppo.EnvMaker {
	return func(i int) (envs.Env, error) {
		if client < 0 {
			return registry.Make(name, -1, nil, 0)
		}
		return registry.Make(name, client, nil, seed*1_000_003+uint64(i))
	}
}

// RunConfig is the resolved configuration of one run, written as config.json so it can be rerun.
type RunConfig struct {
	Env          string     `json:"env"`
	Client       int        `json:"client"`
	Seed         uint64     `json:"seed"`
	Preset       string     `json:"preset"`
	PPO          ppo.Config `json:"ppo"`
	EvalEvery    int        `json:"eval_every"`
	EvalEpisodes int        `json:"eval_episodes"`
	Window       int        `json:"window"`
	// Precision is the networks' floating-point type during training (ppo.Options.Precision).
	Precision ppo.Precision `json:"precision,omitempty"`
}

// ppoRun trains one policy and returns the trainer; bar (may be nil) counts steps.
func Train(ctx context.Context, rc RunConfig, workers int, bar *progress.Bar) (*ppo.Trainer, error) {
	last := 0
	tr, err := ppo.NewTrainer(rc.PPO, EnvMaker(rc.Env, rc.Client, rc.Seed), ppo.Options{
		Seed: rc.Seed, Window: rc.Window, EvalEvery: rc.EvalEvery, EvalEpisodes: rc.EvalEpisodes, Workers: workers,
		Precision: rc.Precision,
		OnUpdate:  func(p ppo.CurvePoint) { bar.Add(p.Steps - last); last = p.Steps },
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
func WriteRun(dir string, rc RunConfig, tr *ppo.Trainer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating output folder: %w", err)
	}
	if err := report.WriteJSON(filepath.Join(dir, "config.json"), rc); err != nil {
		return err
	}
	cfg := tr.Config()
	if err := tr.Policy().Save(filepath.Join(dir, "policy.json"), &cfg); err != nil {
		return err
	}
	if err := report.WriteJSON(filepath.Join(dir, "curve.json"), tr.Curve()); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := ppo.WriteCurveCSV(&buf, tr.Curve()); err != nil {
		return err
	}
	if err := report.WriteFile(filepath.Join(dir, "curve.csv"), buf.Bytes()); err != nil {
		return err
	}
	title := rc.Env
	if rc.Client >= 0 {
		title += fmt.Sprintf(" client %d", rc.Client)
	}
	return PlotCurves(filepath.Join(dir, "curve.png"), title+fmt.Sprintf(", seed %d", rc.Seed),
		map[string][]ppo.CurvePoint{fmt.Sprintf("seed %d", rc.Seed): tr.Curve()}, math.NaN())
}

// plotCurves draws, for each named curve, the running mean of training returns (solid)
// and the deterministic evaluation returns (points), with an optional threshold line.
func PlotCurves(path, title string, curves map[string][]ppo.CurvePoint, threshold float64) error {
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

// Targets are the learning targets of the study: return threshold and step budget per environment.
var Targets = map[string]struct {
	threshold float64
	steps     int
}{
	"CartPole-v1": {475, 100_000},
	"Pendulum-v1": {-250, 200_000},
	"Acrobot-v1":  {-100, 100_000},
	// Gymnasium's reward threshold; the budget of 1M steps.
	"LunarLanderContinuous-v3": {200, 1_000_000},
}

// Row summarises one (environment, seed) run of the study.
type Row struct {
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

// WriteSummary writes summary.{md,csv,json} of the study's rows to out and
// returns the Markdown.
func WriteSummary(out string, names []string, rows []Row) (string, error) {
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
	if err := report.WriteFile(filepath.Join(out, "summary.md"), []byte(md.String())); err != nil {
		return "", err
	}
	if err := report.WriteFile(filepath.Join(out, "summary.csv"), []byte(csvb.String())); err != nil {
		return "", err
	}
	// JSON cannot hold NaN: use null for missing evaluations.
	type jrow struct {
		Row
		BestEval *float64 `json:"best_eval"`
	}
	var js []jrow
	for _, r := range rows {
		j := jrow{Row: r}
		if !math.IsNaN(r.BestEval) {
			v := r.BestEval
			j.BestEval = &v
		}
		js = append(js, j)
	}
	if err := report.WriteJSON(filepath.Join(out, "summary.json"), js); err != nil {
		return "", err
	}
	return md.String(), nil
}

// Options configures Run.
type Options struct {
	// Out is the study's output folder (required).
	Out string
	// Jobs is the number of runs trained at the same time (≥ 1; results do
	// not depend on it).
	Jobs int
	// Workers is PPO's update goroutines per run.
	Workers int
	// Log receives one line per finished run; nil means none.
	Log io.Writer
}

// Run trains every run, writes each to <Out>/<env>/seed<k>/ (as WriteRun),
// one learning-curve plot per environment (<Out>/<env>.png, with the target
// of Targets), and the summary (WriteSummary), whose Markdown it returns.
// names lists the environments in the order of the summary.
func Run(ctx context.Context, runs []RunConfig, names []string, opt Options) (string, error) {
	if opt.Jobs < 1 || opt.Out == "" {
		return "", fmt.Errorf("ppostudy: need jobs ≥ 1 and an output folder")
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
	sem := make(chan struct{}, opt.Jobs)
	for k := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			start := time.Now()
			tr, err := Train(ctx, runs[k], opt.Workers, nil)
			trainers[k], errs[k] = tr, err
			if err == nil {
				err = WriteRun(filepath.Join(opt.Out, runs[k].Env, fmt.Sprintf("seed%d", runs[k].Seed)), runs[k], tr)
				errs[k] = err
			}
			mu.Lock()
			bar.Add(runs[k].PPO.TotalSteps)
			if err == nil && opt.Log != nil {
				el := time.Since(start).Seconds()
				c := tr.Curve()
				fmt.Fprintf(opt.Log, "%s seed %d: %d steps in %.1fs (%.0f steps/s), final training mean %.1f\n",
					runs[k].Env, runs[k].Seed, tr.Steps(), el, float64(tr.Steps())/el, c[len(c)-1].MeanTrueReturn)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	bar.Finish()
	for k, err := range errs {
		if err != nil {
			return "", fmt.Errorf("%s seed %d: %w", runs[k].Env, runs[k].Seed, err)
		}
	}
	var rows []Row
	byEnv := map[string]map[string][]ppo.CurvePoint{}
	for k, rc := range runs {
		rows = append(rows, summarize(rc, trainers[k]))
		if byEnv[rc.Env] == nil {
			byEnv[rc.Env] = map[string][]ppo.CurvePoint{}
		}
		byEnv[rc.Env][fmt.Sprintf("seed %d", rc.Seed)] = trainers[k].Curve()
	}
	for _, env := range names {
		if err := PlotCurves(filepath.Join(opt.Out, env+".png"), env+": PPO learning curves", byEnv[env], target(env)); err != nil {
			return "", err
		}
	}
	return WriteSummary(opt.Out, names, rows)
}

// target is the return threshold of env, NaN when it has none.
func target(env string) float64 {
	if t, ok := Targets[env]; ok {
		return t.threshold
	}
	return math.NaN()
}

// summarize is the summary row of one finished run.
func summarize(rc RunConfig, tr *ppo.Trainer) Row {
	th := target(rc.Env)
	row := Row{Env: rc.Env, Seed: rc.Seed, Steps: tr.Steps(), Threshold: th,
		FirstEvalHit: -1, FirstTrainHit: -1, BestEval: math.Inf(-1)}
	for _, p := range tr.Curve() {
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
	return row
}

// StudySteps returns the study's step budget for env (Targets), or 0 when it
// has none.
func StudySteps(env string) int { return Targets[env].steps }
