package gridworld

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	gw "github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/fusion"
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

// arrowGlyph draws each greedy action as an arrow (up, right, down, left).
var arrowGlyph = [gw.NumActions]string{"↑", "→", "↓", "←"}

// rewardPanel draws z, the signed state reward φ(s)ᵀθ of env, on the colour
// scale [−m, m] (shared by the panels of a row), the greedy policy of θ on
// env as arrows, obstacles (×), the start "S" and the goal "G".
func rewardPanel(env *Env, theta, z []float64, title string, cmap palette.ColorMap, m float64) (*plot.Plot, error) {
	n := env.Spec.Size
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(9)
	p.X.Label.Text = "column"
	p.Y.Label.Text = "row"
	p.X.Tick.Marker = gridTicks(n, false)
	p.Y.Tick.Marker = gridTicks(n, true)
	hm := plotter.NewHeatMap(stateGrid{n: n, z: z}, cmap.Palette(64))
	hm.Min, hm.Max = -m, m
	p.Add(hm)
	pol := env.GreedyPolicy(theta)
	var axy plotter.XYs
	var arrows []string
	obstacle := map[int]bool{}
	for _, o := range env.Spec.Obstacles {
		obstacle[o] = true
	}
	for s := range n * n {
		if s == env.Spec.Goal || obstacle[s] {
			continue
		}
		axy = append(axy, plotter.XY{X: float64(s % n), Y: float64(n - 1 - s/n)})
		arrows = append(arrows, arrowGlyph[pol[s]])
	}
	if len(axy) > 0 {
		al, err := plotter.NewLabels(plotter.XYLabels{XYs: axy, Labels: arrows})
		if err != nil {
			return nil, err
		}
		for i := range al.TextStyle {
			al.TextStyle[i].Color = color.Black
			al.TextStyle[i].Font.Size = vg.Points(math.Max(5, 50/float64(n)))
			al.TextStyle[i].XAlign = draw.XCenter
			al.TextStyle[i].YAlign = draw.YCenter
		}
		p.Add(al)
	}
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
		sc.GlyphStyle.Color = color.Black
		p.Add(sc)
	}
	g := env.Spec.Goal
	xy := []plotter.XY{{X: float64(g % n), Y: float64(n - 1 - g/n)}}
	names := []string{"G"}
	if starts := env.Grid.Starts(); len(starts) == 1 {
		xy = append(xy, plotter.XY{X: float64(starts[0] % n), Y: float64(n-1-starts[0]/n) + 0.3})
		names = append(names, "S")
	}
	lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: names})
	if err != nil {
		return nil, err
	}
	for i := range lbl.TextStyle {
		lbl.TextStyle[i].Color = color.RGBA{0, 120, 0, 255}
		lbl.TextStyle[i].Font.Size = vg.Points(math.Max(7, 60/float64(n)))
		lbl.TextStyle[i].XAlign = draw.XCenter
		lbl.TextStyle[i].YAlign = draw.YCenter
	}
	p.Add(lbl)
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	return p, nil
}

// markLayout marks the goal (G) and the obstacles (×) of an n×n layout on p,
// as rewardPanel does.
func markLayout(p *plot.Plot, n, goal int, obstacles []int) error {
	var obs plotter.XYs
	for _, o := range obstacles {
		obs = append(obs, plotter.XY{X: float64(o % n), Y: float64(n - 1 - o/n)})
	}
	if len(obs) > 0 {
		sc, err := plotter.NewScatter(obs)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Shape = draw.CrossGlyph{}
		sc.GlyphStyle.Radius = vg.Points(float64(60) / float64(n))
		sc.GlyphStyle.Color = color.Gray{Y: 128}
		p.Add(sc)
	}
	lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: float64(goal % n), Y: float64(n - 1 - goal/n)}}, Labels: []string{"G"}})
	if err != nil {
		return err
	}
	lbl.TextStyle[0].Color = color.RGBA{0, 120, 0, 255}
	lbl.TextStyle[0].Font.Size = vg.Points(math.Max(7, 60/float64(n)))
	lbl.TextStyle[0].XAlign, lbl.TextStyle[0].YAlign = draw.XCenter, draw.YCenter
	p.Add(lbl)
	return nil
}

// figure2Clients picks Figure 2's rows by rule: the client with the lowest
// local success on its own environment (ties: lowest index), then the
// lowest-indexed others, rows in all.
func figure2Clients(f *Fit, rows int) []int {
	worst := 0
	for i, v := range f.InDist[ColLocal] {
		if v < f.InDist[ColLocal][worst] {
			worst = i
		}
	}
	out := []int{worst}
	for i := 0; len(out) < rows && i < len(f.InDist[ColLocal]); i++ {
		if i != worst {
			out = append(out, i)
		}
	}
	return out
}

// colourBar is a plot of cmap's range, drawn narrow by Figure2PNG.
func colourBar(cmap palette.ColorMap, label string) *plot.Plot {
	cb := plot.New()
	cb.HideX()
	cb.Y.Label.Text = label
	cb.Add(&plotter.ColorBar{ColorMap: cmap, Vertical: true})
	return cb
}

// Figure2PNG draws the paper's Figure 2 for the grid size given, chosen by
// rule: the seed and client with the lowest local success (ties: first seed,
// lowest index) and the next clients of that seed by index, one row each, columns Local θ_i, Mean θ and Barycenter θ, each
// as the signed state reward on that client's own layout with its greedy
// policy, on one colour scale per row; the last row shows the barycenter
// measure p̄ itself (summed over actions) on the probe layout.
func (s *Study) Figure2PNG(size int) ([]byte, error) {
	// The seed whose worst client does worst locally (ties: the first seed).
	var f *Fit
	worst := math.Inf(1)
	for k, e := range s.Config.Environments {
		if e.GridSize != size {
			continue
		}
		for _, c := range s.Cells[k] {
			if v := slices.Min(c.InDist[ColLocal]); v < worst {
				f, worst = c, v
			}
		}
	}
	if f == nil {
		return nil, fmt.Errorf("figure 2: no %d×%d cell in the study", size, size)
	}
	clients := figure2Clients(f, min(3, len(f.clients)))
	plots := make([][]*plot.Plot, 0, len(clients)+1)
	bars := map[*plot.Plot][2]float64{} // colour bars, drawn narrow: the part [from, to] of their tile's width they take
	for _, i := range clients {
		env := f.clients[i]
		cols := []struct {
			name  string
			theta []float64
		}{
			{fmt.Sprintf("Client %d local (success %.1f %%)", i, 100*f.InDist[ColLocal][i]), f.Local[i]},
			{fmt.Sprintf("Mean on client %d (%.1f %%)", i, 100*f.InDist[fusion.MethodMean][i]), f.Fused[fusion.MethodMean]},
			{fmt.Sprintf("Barycenter on client %d (%.1f %%)", i, 100*f.InDist[fusion.MethodBarycenter][i]), f.Fused[fusion.MethodBarycenter]},
		}
		st, err := features.Grid(env.Spec.Size, env.Spec.Goal, env.Spec.Obstacles)
		if err != nil {
			return nil, err
		}
		m := 0.0
		z := make([][]float64, len(cols))
		for k, c := range cols {
			z[k] = features.Reward(nil, st, c.theta)
			for _, v := range z[k] {
				m = math.Max(m, math.Abs(v))
			}
		}
		if m == 0 {
			m = 1
		}
		cmap := moreland.SmoothBlueRed()
		cmap.SetMin(-m)
		cmap.SetMax(m)
		var row []*plot.Plot
		for k, c := range cols {
			title := fmt.Sprintf("%s\nθ = (%.3g, %.3g)", c.name, c.theta[0], c.theta[1])
			p, err := rewardPanel(env, c.theta, z[k], title, cmap, m)
			if err != nil {
				return nil, err
			}
			row = append(row, p)
		}
		cb := colourBar(cmap, "reward φ(s)ᵀθ")
		bars[cb] = [2]float64{0.55, 1}
		plots = append(plots, append(row, cb))
	}
	// The barycenter measure the server computed, on the probe layout.
	n := f.probeSpec.Size
	if len(f.baryMeasure) != n*n*gw.NumActions {
		return nil, fmt.Errorf("figure 2: barycenter measure has %d points, want %d", len(f.baryMeasure), n*n*gw.NumActions)
	}
	pb := make([]float64, n*n)
	hi := 0.0
	for x, v := range f.baryMeasure {
		pb[x/gw.NumActions] += v
	}
	for _, v := range pb {
		hi = math.Max(hi, v)
	}
	bmap := moreland.ExtendedBlackBody()
	bmap.SetMin(0)
	bmap.SetMax(math.Max(hi, 1e-300))
	bp := plot.New()
	// "p̄" is not written: its combining macron renders beside the p.
	bp.Title.Text = fmt.Sprintf("Barycenter measure (summed over actions)\nprobe layout, ε = %g, marginal error %.1e\nG goal (most mass: white), × obstacle", s.Config.Barycenter.EntropicRegularization, f.Info[fusion.MethodBarycenter].MarginalError)
	bp.Title.TextStyle.Font.Size = vg.Points(9)
	bp.X.Label.Text = "column"
	bp.Y.Label.Text = "row"
	bp.X.Tick.Marker = gridTicks(n, false)
	bp.Y.Tick.Marker = gridTicks(n, true)
	hm := plotter.NewHeatMap(stateGrid{n: n, z: pb}, bmap.Palette(64))
	hm.Min, hm.Max = 0, bmap.Max()
	bp.Add(hm)
	if err := markLayout(bp, n, f.probeSpec.Goal, f.probeSpec.Obstacles); err != nil {
		return nil, err
	}
	bp.X.Min, bp.X.Max = -0.5, float64(n)-0.5
	bp.Y.Min, bp.Y.Max = -0.5, float64(n)-0.5
	cb := colourBar(bmap, "mass")
	bars[cb] = [2]float64{0, 0.45} // next to its panel
	plots = append(plots, []*plot.Plot{bp, cb, nil, nil})
	rows := len(plots)
	w, h := vg.Points(800), vg.Points(250*float64(rows)+50)
	img := vgimg.New(w, h)
	dc := draw.New(img)
	top := dc
	top.Max.Y -= vg.Points(40)
	hf := plot.DefaultFont
	hf.Size = vg.Points(11)
	for k, line := range []string{
		fmt.Sprintf("Figure 2: local vs. mean vs. barycentric rewards, %d×%d grid, seed %d; rows: the client with the lowest local success over all seeds, then clients by index", size, size, f.Seed),
		"signed reward φ(s)ᵀθ (one colour scale per row, blue < 0 < red), arrows: greedy policy of that θ on that layout, × obstacle, S start, G goal",
	} {
		dc.FillText(draw.TextStyle{Color: color.Black, Font: hf, Handler: plot.DefaultTextHandler,
			XAlign: draw.XCenter}, vg.Point{X: w / 2, Y: h - vg.Points(16+15*float64(k))}, line)
	}
	tiles := draw.Tiles{Rows: rows, Cols: 4, PadX: vg.Points(18), PadY: vg.Points(14), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	canvases := plot.Align(plots, tiles, top)
	for i := range plots {
		for j := range plots[i] {
			if plots[i][j] == nil {
				continue
			}
			c := canvases[i][j]
			if part, ok := bars[plots[i][j]]; ok {
				w := c.Max.X - c.Min.X
				c.Min.X, c.Max.X = c.Min.X+w*vg.Length(part[0]), c.Min.X+w*vg.Length(part[1])
			}
			plots[i][j].Draw(c)
		}
	}
	return report.PNGBytes(img)
}

// SuccessPNG draws the paired comparisons of Table 1 and Table 2 as a
// forest plot: per grid size and per weak fraction p, the mean per-seed
// difference of each declared pair of fusions (DeclaredPairs) with its 95 %
// t-interval, in distribution and held out, and mean − local. Success levels
// themselves (all near the expert ceiling) are in table1.md and table2.md;
// pooled spreads would hide what pairing resolves.
func (s *Study) SuccessPNG() ([]byte, error) {
	var rows []string
	srows := sweepRows("", s)
	for _, r := range srows {
		rows = append(rows, r.Label())
	}
	series := func(ps []Pair, held bool) []report.ForestSeries {
		var out []report.ForestSeries
		for _, p := range ps {
			st := pairStyle(p)
			v := make([]report.Paired, len(srows))
			for k, r := range srows {
				if held {
					v[k] = r.HeldOut[p.Key()]
				} else {
					v[k] = r.In[p.Key()]
				}
			}
			out = append(out, report.ForestSeries{Name: p.Label(), Color: st.Color, Shape: st.Shape, Values: v})
		}
		return out
	}
	fused := pairs(s.Config.heldCols(false))
	panels := []report.ForestPanel{
		{Title: "In-distribution (client environments)", Rows: rows, Series: series(fused, false)},
		{Title: "Held-out (unseen environments)", Rows: rows, Series: series(fused, true)},
		{Title: "In-distribution: mean − local", Rows: rows, Series: series([]Pair{{fusion.MethodMean, ColLocal}}, false)},
	}
	header := fmt.Sprintf("Paired success differences, mean and 95 %% t-interval over seeds (Table 1 rows by grid size, Table 2 rows by weak fraction p; * interval excludes 0)")
	return report.ForestPNG(header, panels, 3, 380, 60+26*float64(len(rows)))
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

// ThetaPNG draws the θ directions of the first seed of every Table-1 grid
// size: each θ scaled to unit length in the (goal-distance,
// obstacle-distance) weight plane, the clients' local θ_i in grey, every
// fused θ (colours keyed by method name) and θ* in colour. Angles are what the greedy policy
// sees (it is invariant to θ's scale); norms are in table1.json.
func (s *Study) ThetaPNG() ([]byte, error) {
	type dir struct {
		name  string
		col   color.Color
		width float64
		dash  bool
	}
	dirOf := func(col string) dir {
		st := styleOf(col)
		switch col {
		case ColExpert:
			return dir{"θ* (true)", st.Color, 2.2, false}
		case fusion.MethodMean, fusion.MethodBarycenter:
			return dir{col, st.Color, 2.2, false}
		}
		return dir{col, st.Color, 1.6, true}
	}
	unit := func(t []float64) plotter.XYs {
		n := math.Hypot(t[0], t[1])
		if n == 0 {
			return plotter.XYs{{}, {}}
		}
		return plotter.XYs{{}, {X: t[0] / n, Y: t[1] / n}}
	}
	var panels []*plot.Plot
	legend, entries := plot.NewLegend(), 0
	for k, e := range s.Config.Environments {
		if len(s.Cells[k]) == 0 {
			continue
		}
		f := s.Cells[k][0]
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%d×%d, seed %d (%d clients)", e.GridSize, e.GridSize, f.Seed, len(f.Local))
		p.X.Label.Text = "goal-distance weight (unit θ)"
		p.Y.Label.Text = "obstacle-distance weight"
		for i, t := range f.Local {
			l, err := plotter.NewLine(unit(t))
			if err != nil {
				return nil, err
			}
			l.LineStyle.Color = color.Gray{Y: 170}
			l.LineStyle.Width = vg.Points(0.8)
			p.Add(l)
			if len(panels) == 0 && i == 0 {
				legend.Add("local θ_i", l)
				entries++
			}
		}
		order := append([]string{ColExpert}, s.Config.methods()...)
		// The paper's barycenter is drawn last, on top.
		order = append(slices.DeleteFunc(order, func(m string) bool { return m == fusion.MethodBarycenter }), fusion.MethodBarycenter)
		for _, m := range order {
			d := dirOf(m)
			l, err := plotter.NewLine(unit(f.Fused[m]))
			if err != nil {
				return nil, err
			}
			l.LineStyle.Color = d.col
			l.LineStyle.Width = vg.Points(d.width)
			if d.dash {
				l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(l)
			if len(panels) == 0 {
				legend.Add(d.name, l)
				entries++
			}
		}
		p.Add(plotter.NewGrid())
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -1.1, 1.1, -1.1, 1.1
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return nil, fmt.Errorf("theta plot: no Table-1 cells")
	}
	side := 300.0
	// The header holds the title and the legend, one line per entry (the
	// barycenter's, last, was cut off when the height was fixed).
	headH := 26 + 12*float64(entries)
	return report.HeadedPNG("Directions of θ (unit length): local, fused and true rewards", legend, [][]*plot.Plot{panels},
		vg.Points(side*float64(len(panels))), vg.Points(side+headH), vg.Points(headH),
		draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Points(16), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(6), PadRight: vg.Points(10)})
}
