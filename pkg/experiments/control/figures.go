package control

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/fusion"
)

// methodColors are distinct for every method (the tab10 palette).
var methodColors = map[string]color.RGBA{
	MethodMean:           {31, 119, 180, 255},
	MethodNormalizedMean: {140, 86, 75, 255},
	MethodBarycenter:     {214, 39, 40, 255},
	MethodDebiased:       {44, 160, 44, 255},
	MethodLocal:          {148, 103, 189, 255},
	MethodProjected:      {255, 127, 14, 255},
	MethodTrue:           {80, 80, 80, 255},
	MethodPooled:         {23, 190, 207, 255},
	MethodPersonalized:   {188, 189, 34, 255},
	// the robust aggregators of the fusion registry (tab10's rest, tab20's shades)
	fusion.MethodMedian:            {227, 119, 194, 255},
	fusion.MethodTrimmedMean:       {188, 189, 34, 255},
	fusion.MethodGeometricMedian:   {23, 190, 207, 255},
	fusion.MethodKrum:              {57, 59, 121, 255},
	fusion.MethodMultiKrum:         {156, 158, 222, 255},
	fusion.MethodRewardMedian:      {140, 109, 49, 255},
	fusion.MethodRewardTrimmedMean: {231, 186, 82, 255},
}

// methodGlyphs tell methods apart without colour as well.
var methodGlyphs = map[string]draw.GlyphDrawer{
	MethodMean:           draw.CircleGlyph{},
	MethodNormalizedMean: draw.PyramidGlyph{},
	MethodBarycenter:     draw.SquareGlyph{},
	MethodDebiased:       draw.TriangleGlyph{},
	MethodLocal:          draw.CrossGlyph{},
	MethodProjected:      draw.PlusGlyph{},
	MethodTrue:           draw.RingGlyph{},
	MethodPooled:         draw.PlusGlyph{},
	MethodPersonalized:   draw.BoxGlyph{},
	// robust aggregators: θ-space ones boxes, reward-space ones rings
	fusion.MethodMedian:            draw.BoxGlyph{},
	fusion.MethodTrimmedMean:       draw.BoxGlyph{},
	fusion.MethodGeometricMedian:   draw.BoxGlyph{},
	fusion.MethodKrum:              draw.CrossGlyph{},
	fusion.MethodMultiKrum:         draw.CrossGlyph{},
	fusion.MethodRewardMedian:      draw.RingGlyph{},
	fusion.MethodRewardTrimmedMean: draw.RingGlyph{},
}

// dodge returns the offset of method i of n, in units of the spacing
// between neighbouring x values, so markers at the same x do not overlap.
func dodge(i, n int) float64 { return 0.05 * (float64(i) - float64(n-1)/2) }

// title returns t, marked as a smoke test when the study is one.
func (s *Study) title(t string) string {
	if s.cfg.Preset == "quick" {
		return "SMOKE TEST (--quick): budgets too small to mean anything\n" + t
	}
	return t
}

// panel draws mean ± std (over seeds, of the client-averaged evaluation
// curves of the training clients) against PPO steps for one env and lattice:
// a line through the means and an error bar at each evaluation point, each
// method's points dodged sideways (translucent bands of five or more
// methods would merge into one area).
func (s *Study) panel(evals []EvalFile, env, lattice string) (*plot.Plot, []legendEntry, error) {
	p := plot.New()
	p.Title.Text = s.title(env + " (" + lattice + " lattice)\ntraining clients")
	p.X.Label.Text = "PPO training steps"
	p.Y.Label.Text = fmt.Sprintf("true return: line = mean, bars = ± std over %d seeds", s.cfg.NumberOfSeeds)
	var legend []legendEntry
	for mi, m := range s.cfg.Methods {
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
		off := dodge(mi, len(s.cfg.Methods)) * float64(s.cfg.LogEvery)
		var mean, lo, hi plotter.XYs
		for _, st := range steps {
			var xs []float64
			for _, c := range curves {
				if v := c[st]; v != nil {
					xs = append(xs, v.s/float64(v.n))
				}
			}
			sm := report.Summarize(xs)
			x := float64(st) + off
			mean = append(mean, plotter.XY{X: x, Y: sm.Mean})
			lo = append(lo, plotter.XY{X: x, Y: sm.Mean - sm.Std})
			hi = append(hi, plotter.XY{X: x, Y: sm.Mean + sm.Std})
		}
		col := methodColors[m]
		eb, err := plotter.NewYErrorBars(errBars{mean, lo, hi})
		if err != nil {
			return nil, nil, err
		}
		eb.Color, eb.Width, eb.CapWidth = col, vg.Points(1), vg.Points(4)
		l, pts, err := plotter.NewLinePoints(mean)
		if err != nil {
			return nil, nil, err
		}
		l.Color, pts.Color = col, col
		l.Width = vg.Points(1.5)
		pts.Radius = vg.Points(2.5)
		pts.Shape = methodGlyphs[m]
		if m == MethodTrue {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(eb, l, pts)
		legend = append(legend, legendEntry{m, l, pts})
	}
	return p, legend, nil
}

// legendEntry is one method's line and markers for the legend tile.
type legendEntry struct {
	method string
	line   *plotter.Line
	pts    *plotter.Scatter
}

// legendPlot returns a tile holding only the legend, so it never covers
// data, with note (what the bars are, what was left out) below it.
func legendPlot(entries []legendEntry, note string) *plot.Plot {
	p := plot.New()
	p.HideAxes()
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(11)
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[e.method] {
			continue
		}
		seen[e.method] = true
		p.Legend.Add(e.method, e.line, e.pts)
	}
	if note != "" {
		p.Title.Text = note
		p.Title.TextStyle.Font.Size = vg.Points(9)
	}
	return p
}

// figure writes a row of panels, one per (env, lattice) of envs present in
// the study, and a legend tile.
func (s *Study) figure(path string, evals []EvalFile, envs []string) error {
	var plots []*plot.Plot
	var legend []legendEntry
	for _, env := range envs {
		if !slices.Contains(s.cfg.Envs, env) {
			continue
		}
		for _, l := range s.cfg.Lattices[env] {
			p, le, err := s.panel(evals, env, l)
			if err != nil {
				return err
			}
			plots = append(plots, p)
			legend = append(legend, le...)
		}
	}
	if len(plots) == 0 {
		return nil
	}
	return savePanels(path, append(plots, legendPlot(legend, "bars: ± std over seeds")))
}

func savePanels(path string, plots []*plot.Plot) error {
	const w, h = 6.5 * vg.Inch, 4.5 * vg.Inch
	img := vgimg.New(w*vg.Length(len(plots)-1)+2*vg.Inch, h)
	dc := draw.New(img)
	// Every tile is as wide as a panel except the last (the legend), which is
	// narrower: draw.Tiles has equal widths, so the canvas is cropped by hand.
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 2,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	full := draw.Crop(dc, 0, 0, 0, 0)
	panelsW := w * vg.Length(len(plots)-1)
	if len(plots) > 1 {
		left := draw.Crop(full, 0, -(full.Max.X - full.Min.X - panelsW), 0, 0)
		tiles.Cols = len(plots) - 1
		canvases := plot.Align([][]*plot.Plot{plots[:len(plots)-1]}, tiles, left)
		for i, p := range plots[:len(plots)-1] {
			p.Draw(canvases[0][i])
		}
	}
	legendCanvas := draw.Crop(full, panelsW, 0, vg.Millimeter*4, -vg.Millimeter*4)
	plots[len(plots)-1].Draw(legendCanvas)
	var buf bytes.Buffer
	png := vgimg.PngCanvas{Canvas: img}
	if _, err := png.WriteTo(&buf); err != nil {
		return fmt.Errorf("rendering %s: %w", path, err)
	}
	return report.WriteFile(path, buf.Bytes())
}

// figures writes figure3.png (Pendulum, CartPole), figure5.png (LunarLander,
// Acrobot) and resolution.png (normalized return against lattice size).
func (s *Study) figures(evals []EvalFile, sum *Summary) error {
	if err := s.figure(filepath.Join(s.dir, "figure3.png"), evals, []string{"Pendulum-v1", "CartPole-v1"}); err != nil {
		return err
	}
	if err := s.figure(filepath.Join(s.dir, "figure5.png"), evals, []string{"LunarLanderContinuous-v3", "Acrobot-v1"}); err != nil {
		return err
	}
	var plots []*plot.Plot
	var legend []legendEntry
	var single []string // environments with one lattice size: no resolution panel
	fused := []string{MethodLocal, MethodPersonalized, MethodMean, MethodNormalizedMean, MethodBarycenter, MethodDebiased, MethodPooled, MethodProjected}
	for _, env := range s.cfg.Envs {
		sizes := map[int]bool{}
		for _, r := range sum.Rows {
			if r.Env == env && r.Pairs > 0 {
				sizes[r.Pairs] = true
			}
		}
		if len(sizes) < 2 {
			single = append(single, env)
			continue
		}
		p := plot.New()
		p.Title.Text = s.title(env + ": normalized return vs lattice size\n(training clients)")
		p.X.Label.Text = "state–action pairs (log scale)"
		p.Y.Label.Text = "normalized return, mean ± std over seeds"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range sum.Rows {
			if r.Env == env && r.Pairs > 0 {
				lo, hi = math.Min(lo, float64(r.Pairs)), math.Max(hi, float64(r.Pairs))
			}
		}
		if lo <= hi { // at least a decade either side, so the log axis has labelled ticks
			p.X.Min, p.X.Max = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi*1.01)))
		}
		for mi, m := range fused {
			var pts, lo, hi plotter.XYs
			for _, r := range sum.Rows {
				if r.Env == env && r.Method == m && r.Group == "train" && r.Pairs > 0 {
					x := float64(r.Pairs) * math.Pow(10, dodge(mi, len(fused))*0.3) // dodged on the log axis
					n := r.NormalizedReturn
					pts = append(pts, plotter.XY{X: x, Y: n.Mean})
					lo = append(lo, plotter.XY{X: x, Y: n.Mean - n.Std})
					hi = append(hi, plotter.XY{X: x, Y: n.Mean + n.Std})
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
			sc.Shape, sc.Radius = methodGlyphs[m], vg.Points(3)
			eb, err := plotter.NewYErrorBars(errBars{pts, lo, hi})
			if err == nil {
				eb.Color = methodColors[m]
				p.Add(eb)
			}
			p.Add(l, sc)
			legend = append(legend, legendEntry{m, l, sc})
		}
		plots = append(plots, p)
	}
	res := filepath.Join(s.dir, "resolution.png")
	if len(plots) == 0 {
		// Every environment has one lattice: a figure of single points says
		// nothing, and one left by an earlier run in this folder would mislead.
		if err := os.Remove(res); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	note := ""
	if len(single) > 0 {
		note = "not drawn (one lattice):\n" + strings.Join(single, ", ")
	}
	return savePanels(res, append(plots, legendPlot(legend, note)))
}

type errBars struct{ pts, lo, hi plotter.XYs }

func (e errBars) Len() int                    { return len(e.pts) }
func (e errBars) XY(i int) (float64, float64) { return e.pts[i].X, e.pts[i].Y }
func (e errBars) YError(i int) (float64, float64) {
	return e.pts[i].Y - e.lo[i].Y, e.hi[i].Y - e.pts[i].Y
}
