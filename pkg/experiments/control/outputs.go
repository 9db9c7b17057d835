package control

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/fedirl/fedirl/pkg/experiments/report"
)

// Row is one line of the summary: the final true return of PPO trained on
// one method's reward, per seed averaged over the clients of one group
// (training or held-out), then mean ± std over seeds.
type Row struct {
	Env     string         `json:"env"`
	Lattice string         `json:"lattice"`
	Pairs   int            `json:"pairs,omitempty"`
	Method  string         `json:"method"`
	Group   string         `json:"group"`
	PerSeed []float64      `json:"per_seed"`
	Final   report.Summary `json:"final_true_return"`
}

// Comparison is a paired difference of two methods across seeds (same
// experts, demonstrations, local θ and PPO seeds).
type Comparison struct {
	Env     string        `json:"env"`
	Lattice string        `json:"lattice"`
	Group   string        `json:"group"`
	A       string        `json:"a"`
	B       string        `json:"b"`
	Diff    report.Paired `json:"diff"`
}

// Summary is summary.json.
type Summary struct {
	Rows        []Row        `json:"rows"`
	Comparisons []Comparison `json:"comparisons"`
	Experts     []ExpertRow  `json:"experts"`
	IRL         []IRLFile    `json:"local_irl"`
}

// ExpertRow reports one client's expert and demonstrations.
type ExpertRow struct {
	Env        string  `json:"env"`
	Seed       uint64  `json:"seed"`
	Client     int     `json:"client"`
	EvalReturn float64 `json:"expert_return"`
	DemoReturn float64 `json:"demo_mean_return"`
}

// WriteOutputs assembles the outputs from the unit files alone:
// config.yaml, curves.csv, summary.{md,csv,json}, irl_diagnostics.csv,
// figure3.png, figure5.png and resolution.png. It fails, listing them, if
// evaluation units are missing.
func (s *Study) WriteOutputs() (*Summary, error) {
	missing, err := s.Missing()
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%d evaluation units are missing (run the remaining shards, or without --shard), e.g. %s", len(missing), strings.Join(missing[:min(3, len(missing))], ", "))
	}
	if err := s.WriteConfig(); err != nil {
		return nil, err
	}
	var evals []EvalFile
	for _, j := range s.evalJobs() {
		u, _, _ := s.evalUnit(j)
		var f EvalFile
		if err := readJSON(u.path(s.dir), &f); err != nil {
			return nil, err
		}
		evals = append(evals, f)
	}
	if err := s.writeCurves(evals); err != nil {
		return nil, err
	}
	sum, err := s.summarize(evals)
	if err != nil {
		return nil, err
	}
	if err := report.WriteJSON(filepath.Join(s.dir, "summary.json"), sum); err != nil {
		return nil, err
	}
	if err := report.WriteFile(filepath.Join(s.dir, "summary.md"), []byte(sum.Markdown())); err != nil {
		return nil, err
	}
	if err := report.WriteFile(filepath.Join(s.dir, "summary.csv"), sum.CSV()); err != nil {
		return nil, err
	}
	if err := report.WriteFile(filepath.Join(s.dir, "irl_diagnostics.csv"), irlCSV(sum.IRL)); err != nil {
		return nil, err
	}
	if err := s.figures(evals, sum); err != nil {
		return nil, err
	}
	return sum, nil
}

// WriteConfig writes the resolved config to config.yaml (a shard's can be
// passed to merge with --config).
func (s *Study) WriteConfig() error {
	y, err := s.cfg.YAML()
	if err != nil {
		return err
	}
	return report.WriteFile(filepath.Join(s.dir, "config.yaml"), y)
}

func (s *Study) writeCurves(evals []EvalFile) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"env", "lattice", "method", "seed", "client", "held_out", "step", "true_return", "train_true_return", "train_learned_return"})
	for _, f := range evals {
		for _, c := range f.Curve {
			w.Write([]string{f.Env, f.Lattice, f.Method, fmt.Sprint(f.Seed), fmt.Sprint(f.Client), fmt.Sprint(f.HeldOut),
				fmt.Sprint(c.Step), num(c.True), num(c.TrainTrue), num(c.TrainLearned)})
		}
	}
	w.Flush()
	return report.WriteFile(filepath.Join(s.dir, "curves.csv"), buf.Bytes())
}

func num(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }

type cellKey struct{ env, lattice, method, group string }

func group(heldOut bool) string {
	if heldOut {
		return "held-out"
	}
	return "train"
}

func (s *Study) summarize(evals []EvalFile) (*Summary, error) {
	// per (env, lattice, method, group): per seed the mean over clients.
	type acc struct {
		sum map[uint64]float64
		n   map[uint64]int
	}
	cells := map[cellKey]*acc{}
	var order []cellKey
	for _, f := range evals {
		k := cellKey{f.Env, f.Lattice, f.Method, group(f.HeldOut)}
		a := cells[k]
		if a == nil {
			a = &acc{map[uint64]float64{}, map[uint64]int{}}
			cells[k] = a
			order = append(order, k)
		}
		a.sum[f.Seed] += f.FinalTrue
		a.n[f.Seed]++
	}
	seeds := make([]uint64, s.cfg.NumberOfSeeds)
	for i := range seeds {
		seeds[i] = s.cfg.Seed + uint64(i)
	}
	perSeed := func(k cellKey) []float64 {
		a := cells[k]
		if a == nil {
			return nil
		}
		out := make([]float64, len(seeds))
		for i, sd := range seeds {
			out[i] = a.sum[sd] / float64(a.n[sd])
		}
		return out
	}
	sum := &Summary{}
	for _, k := range order {
		ps := perSeed(k)
		r := Row{Env: k.env, Lattice: k.lattice, Method: k.method, Group: k.group, PerSeed: ps, Final: report.Summarize(ps)}
		if k.lattice != "-" {
			p, err := s.probe(k.env, k.lattice)
			if err != nil {
				return nil, err
			}
			r.Pairs = 1
			for _, a := range append(slices.Clone(p.Grid.State), p.Grid.Action...) {
				r.Pairs *= a.N
			}
		}
		sum.Rows = append(sum.Rows, r)
	}
	for _, env := range s.cfg.Envs {
		for _, l := range s.cfg.Lattices[env] {
			for _, g := range []string{"train", "held-out"} {
				for _, cmp := range [][2]string{{MethodBarycenter, MethodMean}, {MethodDebiased, MethodMean}, {MethodBarycenter, MethodLocal}} {
					a, b := perSeed(cellKey{env, l, cmp[0], g}), perSeed(cellKey{env, l, cmp[1], g})
					if a == nil || b == nil {
						continue
					}
					d, err := report.PairedDiff(a, b, 0.95)
					if err != nil {
						return nil, err
					}
					sum.Comparisons = append(sum.Comparisons, Comparison{env, l, g, cmp[0], cmp[1], d})
				}
			}
		}
	}
	// Experts, demonstrations and local IRL diagnostics of the training clients.
	for _, env := range s.cfg.Envs {
		for si := range s.cfg.NumberOfSeeds {
			seed := s.cfg.Seed + uint64(si)
			for c := range s.cfg.NumberOfClients {
				du, _, eu, _, err := s.demosUnit(env, c, seed)
				if err != nil {
					return nil, err
				}
				ef, _, err := s.readExpert(eu)
				if err != nil {
					return nil, err
				}
				d, err := ReadDemos(du.path(s.dir))
				if err != nil {
					return nil, err
				}
				ret := d.Returns()
				m := 0.0
				for _, r := range ret {
					m += r / float64(len(ret))
				}
				sum.Experts = append(sum.Experts, ExpertRow{env, seed, c, ef.EvalReturn, m})
				for _, l := range s.cfg.Lattices[env] {
					iu, _, err := s.irlUnit(env, l, c, seed)
					if err != nil {
						return nil, err
					}
					if !exists(iu.path(s.dir)) {
						continue // only needed by methods not run
					}
					var f IRLFile
					if err := readJSON(iu.path(s.dir), &f); err != nil {
						return nil, err
					}
					sum.IRL = append(sum.IRL, f)
				}
			}
		}
	}
	return sum, nil
}

func fmtNum(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	if x == 0 {
		x = 0 // no negative zero
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}

// Markdown renders the summary tables.
func (s *Summary) Markdown() string {
	var b strings.Builder
	b.WriteString("## Final true return of PPO on each reward (mean ± std over seeds; per seed the mean over clients)\n\n")
	b.WriteString("| env | lattice | pairs | method | clients | final true return | seeds |\n|---|---|---|---|---|---|---|\n")
	for _, r := range s.Rows {
		pairs := "–"
		if r.Pairs > 0 {
			pairs = fmt.Sprint(r.Pairs)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s ± %s | %d |\n", r.Env, r.Lattice, pairs, r.Method, r.Group, fmtNum(r.Final.Mean), fmtNum(r.Final.Std), r.Final.N)
	}
	b.WriteString("\n## Paired differences across seeds (95% t-interval)\n\n")
	b.WriteString("| env | lattice | clients | difference | mean | 95% CI | seeds |\n|---|---|---|---|---|---|---|\n")
	for _, c := range s.Comparisons {
		fmt.Fprintf(&b, "| %s | %s | %s | %s − %s | %s | [%s, %s] | %d |\n", c.Env, c.Lattice, c.Group, c.A, c.B, fmtNum(c.Diff.Mean), fmtNum(c.Diff.Lo), fmtNum(c.Diff.Hi), c.Diff.N)
	}
	b.WriteString("\n## Experts (mode policy, 20 episodes) and demonstrations\n\n| env | seed | client | expert return | demonstration mean return |\n|---|---|---|---|---|\n")
	for _, e := range s.Experts {
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s |\n", e.Env, e.Seed, e.Client, fmtNum(e.EvalReturn), fmtNum(e.DemoReturn))
	}
	b.WriteString("\n## Local MaxEnt IRL convergence\n\n| env | lattice | seed | client | iterations | ‖∇‖ at θ=0 | final ‖∇‖ | feature gap | log-lik θ=0 | final log-lik |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range s.IRL {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %.3g | %.3g | %.3g | %.4g | %.4g |\n", f.Env, f.Lattice, f.Seed, f.Client, f.Iterations, f.GradNorm0, f.GradNorm, f.FeatureGap, f.LogLik0, f.LogLik)
	}
	return b.String()
}

// CSV renders the summary rows and comparisons as one long table.
func (s *Summary) CSV() []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"env", "lattice", "pairs", "method", "clients", "mean", "std_or_lo", "n_or_hi", "seeds"})
	for _, r := range s.Rows {
		w.Write([]string{r.Env, r.Lattice, fmt.Sprint(r.Pairs), r.Method, r.Group, num(r.Final.Mean), num(r.Final.Std), "", fmt.Sprint(r.Final.N)})
	}
	for _, c := range s.Comparisons {
		w.Write([]string{c.Env, c.Lattice, "", c.A + "-" + c.B, c.Group, num(c.Diff.Mean), num(c.Diff.Lo), num(c.Diff.Hi), fmt.Sprint(c.Diff.N)})
	}
	w.Flush()
	return buf.Bytes()
}

func irlCSV(fs []IRLFile) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"env", "lattice", "seed", "client", "pairs", "iterations", "grad_norm_0", "grad_norm", "feature_gap", "loglik_0", "loglik", "demo_steps"})
	for _, f := range fs {
		w.Write([]string{f.Env, f.Lattice, fmt.Sprint(f.Seed), fmt.Sprint(f.Client), fmt.Sprint(f.Pairs), fmt.Sprint(f.Iterations),
			num(f.GradNorm0), num(f.GradNorm), num(f.FeatureGap), num(f.LogLik0), num(f.LogLik), fmt.Sprint(f.DemoSteps)})
	}
	w.Flush()
	return buf.Bytes()
}

var methodColors = map[string]color.RGBA{
	MethodMean:       {31, 119, 180, 255},
	MethodBarycenter: {214, 39, 40, 255},
	MethodDebiased:   {44, 160, 44, 255},
	MethodLocal:      {148, 103, 189, 255},
	MethodTrue:       {80, 80, 80, 255},
}

// panel draws mean ± std (over seeds, of the client-averaged evaluation
// curves of the training clients) against PPO steps for one env and lattice.
func panel(evals []EvalFile, env, lattice string, methods []string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = env + " (" + lattice + " lattice)"
	p.X.Label.Text = "PPO training steps"
	p.Y.Label.Text = "true environment return"
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	for _, m := range methods {
		// seed -> step -> (sum, n)
		type sn struct {
			s float64
			n int
		}
		curves := map[uint64]map[int]*sn{}
		for _, f := range evals {
			if f.Env != env || f.Method != m || f.HeldOut || (m != MethodTrue && f.Lattice != lattice) {
				continue
			}
			c := curves[f.Seed]
			if c == nil {
				c = map[int]*sn{}
				curves[f.Seed] = c
			}
			for _, pt := range f.Curve {
				if c[pt.Step] == nil {
					c[pt.Step] = &sn{}
				}
				c[pt.Step].s += pt.True
				c[pt.Step].n++
			}
		}
		if len(curves) == 0 {
			continue
		}
		stepSet := map[int]bool{}
		for _, c := range curves {
			for st := range c {
				stepSet[st] = true
			}
		}
		var steps []int
		for st := range stepSet {
			steps = append(steps, st)
		}
		slices.Sort(steps)
		var mean, lo, hi plotter.XYs
		for _, st := range steps {
			var xs []float64
			for _, c := range curves {
				if v := c[st]; v != nil {
					xs = append(xs, v.s/float64(v.n))
				}
			}
			sm := report.Summarize(xs)
			mean = append(mean, plotter.XY{X: float64(st), Y: sm.Mean})
			lo = append(lo, plotter.XY{X: float64(st), Y: sm.Mean - sm.Std})
			hi = append(hi, plotter.XY{X: float64(st), Y: sm.Mean + sm.Std})
		}
		col := methodColors[m]
		band := make(plotter.XYs, 0, 2*len(lo))
		band = append(band, lo...)
		for i := len(hi) - 1; i >= 0; i-- {
			band = append(band, hi[i])
		}
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return nil, err
		}
		poly.Color = color.NRGBA{col.R, col.G, col.B, 45} // non-premultiplied: a translucent band
		poly.LineStyle.Width = 0
		l, pts, err := plotter.NewLinePoints(mean)
		if err != nil {
			return nil, err
		}
		l.Color, pts.Color = col, col
		l.Width = vg.Points(1.5)
		pts.Radius = vg.Points(1.5)
		pts.Shape = draw.CircleGlyph{}
		if m == MethodTrue {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(poly, l, pts)
		p.Legend.Add(m, l)
	}
	return p, nil
}

// figure writes a row of panels, one per (env, lattice) of envs present in the study.
func (s *Study) figure(path string, evals []EvalFile, envs []string) error {
	var plots []*plot.Plot
	for _, env := range envs {
		if !slices.Contains(s.cfg.Envs, env) {
			continue
		}
		for _, l := range s.cfg.Lattices[env] {
			p, err := panel(evals, env, l, s.cfg.Methods)
			if err != nil {
				return err
			}
			plots = append(plots, p)
		}
	}
	if len(plots) == 0 {
		return nil
	}
	return savePanels(path, plots)
}

func savePanels(path string, plots []*plot.Plot) error {
	const w, h = 6 * vg.Inch, 4.5 * vg.Inch
	img := vgimg.New(w*vg.Length(len(plots)), h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 2,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	var buf bytes.Buffer
	png := vgimg.PngCanvas{Canvas: img}
	if _, err := png.WriteTo(&buf); err != nil {
		return fmt.Errorf("rendering %s: %w", path, err)
	}
	return report.WriteFile(path, buf.Bytes())
}

// figures writes figure3.png (Pendulum, CartPole), figure5.png (LunarLander,
// Acrobot) and resolution.png (final return against lattice size).
func (s *Study) figures(evals []EvalFile, sum *Summary) error {
	if err := s.figure(filepath.Join(s.dir, "figure3.png"), evals, []string{"Pendulum-v1", "CartPole-v1"}); err != nil {
		return err
	}
	if err := s.figure(filepath.Join(s.dir, "figure5.png"), evals, []string{"LunarLanderContinuous-v3", "Acrobot-v1"}); err != nil {
		return err
	}
	var plots []*plot.Plot
	for _, env := range s.cfg.Envs {
		p := plot.New()
		p.Title.Text = env + ": final true return vs lattice size (training clients)"
		p.X.Label.Text = "state–action pairs (log scale)"
		p.Y.Label.Text = "final true return"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Top = true
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range sum.Rows {
			if r.Env == env && r.Pairs > 0 {
				lo, hi = math.Min(lo, float64(r.Pairs)), math.Max(hi, float64(r.Pairs))
			}
		}
		if lo <= hi { // at least a decade either side, so the log axis has labelled ticks
			p.X.Min, p.X.Max = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi*1.01)))
		}
		for _, m := range []string{MethodMean, MethodBarycenter, MethodDebiased} {
			var pts, lo, hi plotter.XYs
			for _, r := range sum.Rows {
				if r.Env == env && r.Method == m && r.Group == "train" && r.Pairs > 0 {
					pts = append(pts, plotter.XY{X: float64(r.Pairs), Y: r.Final.Mean})
					lo = append(lo, plotter.XY{X: float64(r.Pairs), Y: r.Final.Mean - r.Final.Std})
					hi = append(hi, plotter.XY{X: float64(r.Pairs), Y: r.Final.Mean + r.Final.Std})
				}
			}
			if len(pts) == 0 {
				continue
			}
			l, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			l.Color, sc.Color = methodColors[m], methodColors[m]
			sc.Shape = draw.CircleGlyph{}
			eb, err := plotter.NewYErrorBars(errBars{pts, lo, hi})
			if err == nil {
				eb.Color = methodColors[m]
				p.Add(eb)
			}
			p.Add(l, sc)
			p.Legend.Add(m, l, sc)
		}
		plots = append(plots, p)
	}
	return savePanels(filepath.Join(s.dir, "resolution.png"), plots)
}

type errBars struct{ pts, lo, hi plotter.XYs }

func (e errBars) Len() int                    { return len(e.pts) }
func (e errBars) XY(i int) (float64, float64) { return e.pts[i].X, e.pts[i].Y }
func (e errBars) YError(i int) (float64, float64) {
	return e.pts[i].Y - e.lo[i].Y, e.hi[i].Y - e.pts[i].Y
}
