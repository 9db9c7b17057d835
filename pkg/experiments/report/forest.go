package report

import (
	"bytes"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// ForestSeries is one comparison drawn in every row of a forest panel.
type ForestSeries struct {
	Name  string
	Color color.Color
	Shape draw.GlyphDrawer
	// Values holds one paired difference per row (N = 0: not drawn).
	Values []Paired
}

// ForestPanel is one panel of a forest plot: rows from top to bottom, each
// with one marker and interval per series.
type ForestPanel struct {
	Title  string
	Rows   []string
	Series []ForestSeries
	// XLabel is the x axis label; "" means "paired difference (percentage points)".
	XLabel string
	// MinHalfWidth is the least half-width of the x range around 0; 0 means 0.5.
	MinHalfWidth float64
}

// ForestColors and ForestShapes tell up to four series apart in colour and
// in shape (for readers who print in grey).
var (
	ForestColors = []color.Color{
		color.RGBA{214, 39, 40, 255}, color.RGBA{31, 119, 180, 255},
		color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	}
	ForestShapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{}}
)

// ForestPNG draws panels side by side (cols per row of panels): per row and
// series a marker at the mean paired difference and a horizontal bar over
// its 95 % t-interval, a vertical line at 0, the x axis in percentage points
// and one legend below the header. Rows whose interval excludes 0 get a star
// after their label in that panel; an interval too wide for the panel's
// range (forestRange) is cut at the edge and marked there with < or >, and
// the panel's title says so.
func ForestPNG(header string, panels []ForestPanel, cols int, panelW, panelH float64) ([]byte, error) {
	var plots []*plot.Plot
	legend := plot.NewLegend()
	inLegend := map[string]bool{}
	for _, fp := range panels {
		p := plot.New()
		p.Title.Text = fp.Title
		p.X.Label.Text = fp.XLabel
		if p.X.Label.Text == "" {
			p.X.Label.Text = "paired difference (percentage points)"
		}
		n := len(fp.Rows)
		ns := len(fp.Series)
		xmin, xmax, clipped := forestRange(fp)
		if clipped {
			p.Title.Text += " (< >: interval cut at the edge)"
		}
		labels := make([]plot.Tick, n)
		star := make([]bool, n)
		var cuts plotter.XYs // where an interval is cut at the panel's edge, marked < or >
		var cutLabels []string
		for si, s := range fp.Series {
			var pts plotter.XYs
			var errs plotter.XErrors
			for r, v := range s.Values {
				if v.N == 0 {
					continue
				}
				// Row r is drawn at y = n−1−r (top to bottom); series spread within it.
				y := float64(n-1-r) + 0.3 - 0.6*float64(si)/math.Max(1, float64(ns-1))
				l, h := v.Lo, v.Hi
				if math.IsNaN(l) {
					l, h = v.Mean, v.Mean
				}
				for _, c := range cutMarks(l, h, xmin, xmax) {
					cuts = append(cuts, plotter.XY{X: c.x, Y: y})
					cutLabels = append(cutLabels, c.mark)
				}
				l, h = math.Max(l, xmin), math.Min(h, xmax)
				pts = append(pts, plotter.XY{X: v.Mean, Y: y})
				errs = append(errs, struct{ Low, High float64 }{v.Mean - l, h - v.Mean})
				if v.Excludes0() {
					star[r] = true
				}
			}
			if len(pts) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: s.Color, Radius: vg.Points(3), Shape: s.Shape}
			eb, err := plotter.NewXErrorBars(xErrPoints{pts, errs})
			if err != nil {
				return nil, err
			}
			eb.LineStyle.Color = s.Color
			eb.LineStyle.Width = vg.Points(1.2)
			eb.CapWidth = vg.Points(4)
			p.Add(eb, sc)
			if !inLegend[s.Name] {
				inLegend[s.Name] = true
				legend.Add(s.Name, sc)
			}
		}
		if len(cuts) > 0 {
			lb, err := plotter.NewLabels(plotter.XYLabels{XYs: cuts, Labels: cutLabels})
			if err != nil {
				return nil, err
			}
			for i := range lb.TextStyle {
				lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
				lb.TextStyle[i].Font.Size = vg.Points(11)
			}
			p.Add(lb)
		}
		ln, err := plotter.NewLine(plotter.XYs{{X: 0, Y: -0.6}, {X: 0, Y: float64(n) - 0.4}})
		if err != nil {
			return nil, err
		}
		ln.LineStyle.Color = color.Gray{Y: 90}
		ln.LineStyle.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(ln)
		for r, name := range fp.Rows {
			if star[r] {
				name += " *"
			}
			labels[r] = plot.Tick{Value: float64(n - 1 - r), Label: name}
		}
		p.Y.Tick.Marker = plot.ConstantTicks(labels)
		p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
		pad := 0.08 * math.Max(xmax-xmin, 0.2)
		p.X.Min, p.X.Max = xmin-pad, xmax+pad
		p.Add(plotter.NewGrid())
		plots = append(plots, p)
	}
	rows := (len(plots) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i, p := range plots {
		grid[i/cols] = append(grid[i/cols], p)
	}
	for len(grid[rows-1]) < cols {
		grid[rows-1] = append(grid[rows-1], nil)
	}
	headH := vg.Points(26 + 12*float64(len(inLegend)) + headerLineH*float64(strings.Count(header, "\n")))
	return HeadedPNG(header, legend, grid, vg.Points(panelW*float64(cols)), vg.Points(panelH*float64(rows))+headH, headH,
		draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(16), PadY: vg.Points(14),
			PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(6), PadRight: vg.Points(10)})
}

// headerLineH is the height of one more line of a HeadedPNG header.
const headerLineH = 13

// HeadedPNG renders a w × h PNG: a centred header (one line per "\n"
// part; headH must include headerLineH points for each extra line), legend
// (top left, below the header) and, in the area below headH, the plots of
// grid aligned by tiles (nil cells stay empty).
func HeadedPNG(header string, legend plot.Legend, grid [][]*plot.Plot, w, h, headH vg.Length, tiles draw.Tiles) ([]byte, error) {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	hf := plot.DefaultFont
	hf.Size = vg.Points(11)
	extra := vg.Points(headerLineH * float64(strings.Count(header, "\n")))
	dc.FillText(draw.TextStyle{Color: color.Black, Font: hf, Handler: plot.DefaultTextHandler, XAlign: draw.XCenter},
		vg.Point{X: w / 2, Y: h - vg.Points(16) - extra}, header)
	lc := dc
	lc.Max.Y -= vg.Points(22) + extra
	lc.Min.X += vg.Points(10)
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(9)
	legend.Draw(lc)
	body := dc
	body.Max.Y -= headH
	canvases := plot.Align(grid, tiles, body)
	for i := range grid {
		for j, p := range grid[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	return PNGBytes(img)
}

// PNGBytes encodes a rendered canvas as PNG.
func PNGBytes(img *vgimg.Canvas) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// forestRange returns the x range of a panel: 0, every mean and every
// (clipped) interval are inside;
// interval ends reach at most max(2 × the median |end|, 1.25 × max |mean|,
// 0.5) from 0, so that one two-seed interval of ±500 does not flatten the
// others. clipped reports whether an interval was cut.
func forestRange(fp ForestPanel) (xmin, xmax float64, clipped bool) {
	var ends []float64
	maxMean := 0.0
	for _, s := range fp.Series {
		for _, v := range s.Values {
			if v.N == 0 {
				continue
			}
			maxMean = math.Max(maxMean, math.Abs(v.Mean))
			if !math.IsNaN(v.Lo) {
				ends = append(ends, math.Abs(v.Lo), math.Abs(v.Hi))
			}
		}
	}
	slices.Sort(ends)
	med := 0.0
	if len(ends) > 0 {
		med = ends[len(ends)/2]
	}
	floor := fp.MinHalfWidth
	if floor == 0 {
		floor = 0.5
	}
	lim := math.Max(math.Max(2*med, 1.25*maxMean), floor)
	for _, s := range fp.Series {
		for _, v := range s.Values {
			if v.N == 0 {
				continue
			}
			if math.IsNaN(v.Lo) { // one draw: the mean alone
				xmin, xmax = math.Min(xmin, v.Mean), math.Max(xmax, v.Mean)
				continue
			}
			xmin, xmax = math.Min(xmin, math.Max(v.Lo, -lim)), math.Max(xmax, math.Min(v.Hi, lim))
			clipped = clipped || v.Lo < -lim || v.Hi > lim
		}
	}
	return xmin, xmax, clipped
}

// cutMark is where an interval [l, h] is cut by a panel's range [xmin,
// xmax], and its mark: "<" at xmin, ">" at xmax.
type cutMark struct {
	x    float64
	mark string
}

// cutMarks returns the cut marks of the interval [l, h] in [xmin, xmax].
func cutMarks(l, h, xmin, xmax float64) []cutMark {
	var m []cutMark
	if l < xmin {
		m = append(m, cutMark{xmin, "<"})
	}
	if h > xmax {
		m = append(m, cutMark{xmax, ">"})
	}
	return m
}

type xErrPoints struct {
	plotter.XYs
	plotter.XErrors
}
