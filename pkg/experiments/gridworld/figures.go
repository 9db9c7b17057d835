package gridworld

import (
	"bytes"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/features"
)

// stateGrid is a GridXYZ of one value per cell; grid row 0 is drawn on top.
type stateGrid struct {
	n int
	z []float64
}

// Dims returns the grid's columns and rows.
func (g stateGrid) Dims() (c, r int) { return g.n, g.n }

// Z returns the value of the cell drawn at column c, plot row r (grid row n-1-r).
func (g stateGrid) Z(c, r int) float64 { return g.z[(g.n-1-r)*g.n+c] }

// X returns column c's coordinate.
func (g stateGrid) X(c int) float64 { return float64(c) }

// Y returns plot row r's coordinate.
func (g stateGrid) Y(r int) float64 { return float64(r) }

func gridTicks(n int, flip bool) plot.ConstantTicks {
	var t []plot.Tick
	for i := range n {
		v := float64(i)
		lbl := i
		if flip {
			lbl = n - 1 - i
		}
		if n <= 10 || lbl%5 == 0 {
			t = append(t, plot.Tick{Value: v, Label: fmt.Sprint(lbl)})
		} else {
			t = append(t, plot.Tick{Value: v})
		}
	}
	return t
}

// rewardPanel draws the state reward φ(s)ᵀθ of env, min–max normalized to
// [0, 1], with obstacles (cyan ×), the start "S" and the goal "G" (green).
func rewardPanel(env *Env, theta []float64, title string, cmap palette.ColorMap) (*plot.Plot, error) {
	n := env.Spec.Size
	st, err := features.Grid(n, env.Spec.Goal, env.Spec.Obstacles)
	if err != nil {
		return nil, err
	}
	r := features.Reward(nil, st, theta)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range r {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	z := make([]float64, len(r))
	for i, v := range r {
		if hi > lo {
			z[i] = (v - lo) / (hi - lo)
		}
	}
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(9)
	p.X.Label.Text = "column"
	p.Y.Label.Text = "row"
	p.X.Tick.Marker = gridTicks(n, false)
	p.Y.Tick.Marker = gridTicks(n, true)
	hm := plotter.NewHeatMap(stateGrid{n: n, z: z}, cmap.Palette(64))
	hm.Min, hm.Max = 0, 1
	p.Add(hm)
	var obs plotter.XYs
	for _, o := range env.Spec.Obstacles {
		obs = append(obs, plotter.XY{X: float64(o % n), Y: float64(n - 1 - o/n)})
	}
	if len(obs) > 0 {
		sc, err := plotter.NewScatter(obs)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Shape = draw.CrossGlyph{}
		sc.GlyphStyle.Radius = vg.Points(float64(60) / float64(n))
		sc.GlyphStyle.Color = color.RGBA{0, 220, 255, 255}
		p.Add(sc)
	}
	g := env.Spec.Goal
	xy := []plotter.XY{{X: float64(g % n), Y: float64(n - 1 - g/n)}}
	names := []string{"G"}
	if starts := env.Grid.Starts(); len(starts) == 1 {
		xy = append(xy, plotter.XY{X: float64(starts[0] % n), Y: float64(n - 1 - starts[0]/n)})
		names = append(names, "S")
	}
	lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: names})
	if err != nil {
		return nil, err
	}
	for i := range lbl.TextStyle {
		lbl.TextStyle[i].Color = color.RGBA{0, 160, 0, 255}
		lbl.TextStyle[i].Font.Size = vg.Points(math.Max(7, 60/float64(n)))
		lbl.TextStyle[i].XAlign = draw.XCenter
		lbl.TextStyle[i].YAlign = draw.YCenter
	}
	p.Add(lbl)
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	return p, nil
}

// Figure2PNG draws the paper's Figure 2 for the first three clients of the
// first seed of the grid size given: one row per client, columns Local θ_i,
// Mean θ and Barycenter θ, each evaluated on that client's own layout, plus a
// colour bar.
func (s *Study) Figure2PNG(size int) ([]byte, error) {
	var f *Fit
	for k, e := range s.Config.Environments {
		if e.GridSize == size && len(s.Cells[k]) > 0 {
			f = s.Cells[k][0]
		}
	}
	if f == nil {
		return nil, fmt.Errorf("figure 2: no %d×%d cell in the study", size, size)
	}
	rows := min(3, len(f.clients))
	cmap := moreland.ExtendedBlackBody()
	cmap.SetMin(0)
	cmap.SetMax(1)
	plots := make([][]*plot.Plot, rows)
	for i := range rows {
		env := f.clients[i]
		cols := []struct {
			name  string
			theta []float64
		}{
			{fmt.Sprintf("Client %d local", i+1), f.Local[i]},
			{fmt.Sprintf("Mean (client %d layout)", i+1), f.Fused[Mean]},
			{fmt.Sprintf("Barycenter (client %d layout)", i+1), f.Fused[Barycenter]},
		}
		for _, c := range cols {
			title := fmt.Sprintf("%s\nθ = (%.3g, %.3g)", c.name, c.theta[0], c.theta[1])
			p, err := rewardPanel(env, c.theta, title, cmap)
			if err != nil {
				return nil, err
			}
			plots[i] = append(plots[i], p)
		}
		// Colour-bar column.
		cb := plot.New()
		cb.HideX()
		cb.Y.Label.Text = "normalized reward"
		cb.Title.Text = "low → high"
		cb.Title.TextStyle.Font.Size = vg.Points(8)
		cb.Add(&plotter.ColorBar{ColorMap: cmap, Vertical: true})
		plots[i] = append(plots[i], cb)
	}
	w, h := vg.Points(760), vg.Points(240*float64(rows)+40)
	img := vgimg.New(w, h)
	dc := draw.New(img)
	top := dc
	top.Max.Y -= vg.Points(30)
	header := fmt.Sprintf("Figure 2: local vs. mean vs. barycentric rewards, %d×%d grid, seed %d (× obstacle, S start, G goal; each panel min–max normalized)", size, size, f.Seed)
	hf := plot.DefaultFont
	hf.Size = vg.Points(11)
	dc.FillText(draw.TextStyle{Color: color.Black, Font: hf, Handler: plot.DefaultTextHandler,
		XAlign: draw.XCenter}, vg.Point{X: w / 2, Y: h - vg.Points(20)}, header)
	tiles := draw.Tiles{Rows: rows, Cols: 4, PadX: vg.Points(18), PadY: vg.Points(14), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	canvases := plot.Align(plots, tiles, top)
	for i := range plots {
		for j := range plots[i] {
			c := canvases[i][j]
			if j == 3 { // narrow colour bar
				c.Min.X += (c.Max.X - c.Min.X) * 0.55
			}
			plots[i][j].Draw(c)
		}
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// SuccessPNG draws the paired comparisons of Table 1 and Table 2 as a
// forest plot: per grid size and per weak fraction p, the mean per-seed
// difference of two methods' success (percentage points) with its 95 %
// t-interval, in distribution and held out, and Mean − Local. Success levels
// themselves (all near the Expert ceiling) are in table1.md and table2.md;
// pooled spreads would hide what pairing resolves.
func (s *Study) SuccessPNG() ([]byte, error) {
	var rows []string
	var bm, dm, bmH, dmH, ml []report.Paired
	for _, r := range s.Table1() {
		rows = append(rows, fmt.Sprintf("%d×%d", r.GridSize, r.GridSize))
		bm, dm = append(bm, r.InDistPaired.BarycenterMinusMean), append(dm, r.InDistPaired.DebiasedMinusMean)
		bmH, dmH = append(bmH, r.HeldOutPaired.BarycenterMinusMean), append(dmH, r.HeldOutPaired.DebiasedMinusMean)
		ml = append(ml, derefPaired(r.InDistPaired.MeanMinusLocal))
	}
	for _, r := range s.Table2() {
		rows = append(rows, fmt.Sprintf("T2 p=%.2f", r.WeakFraction))
		bm, dm = append(bm, r.InDistPaired.BarycenterMinusMean), append(dm, r.InDistPaired.DebiasedMinusMean)
		bmH, dmH = append(bmH, r.HeldOutPaired.BarycenterMinusMean), append(dmH, r.HeldOutPaired.DebiasedMinusMean)
		ml = append(ml, derefPaired(r.InDistPaired.MeanMinusLocal))
	}
	bSeries := func(v []report.Paired) forestSeries {
		return forestSeries{Name: "Barycenter − Mean", Color: forestColors[0], Shape: forestShapes[0], Values: v}
	}
	dSeries := func(v []report.Paired) forestSeries {
		return forestSeries{Name: "Debiased − Mean", Color: forestColors[2], Shape: forestShapes[2], Values: v}
	}
	panels := []forestPanel{
		{Title: "In-distribution (client environments)", Rows: rows, Series: []forestSeries{bSeries(bm), dSeries(dm)}},
		{Title: "Held-out (unseen environments)", Rows: rows, Series: []forestSeries{bSeries(bmH), dSeries(dmH)}},
		{Title: "In-distribution: Mean − Local", Rows: rows, Series: []forestSeries{
			{Name: "Mean − Local", Color: forestColors[1], Shape: forestShapes[1], Values: ml}}},
	}
	header := fmt.Sprintf("Paired success differences, mean and 95 %% t-interval over seeds (Table 1 rows by grid size, Table 2 rows by weak fraction p; * interval excludes 0)")
	return forestPNG(header, panels, 3, 380, 60+26*float64(len(rows)))
}

func derefPaired(p *report.Paired) report.Paired {
	if p == nil {
		return report.Paired{}
	}
	return *p
}

// figureGridSize returns the grid size Figure 2 uses: 5 if present, else the smallest.
func (s *Study) figureGridSize() int {
	best := 0
	for _, e := range s.Config.Environments {
		if e.GridSize == 5 {
			return 5
		}
		if best == 0 || e.GridSize < best {
			best = e.GridSize
		}
	}
	return best
}
