package report

import (
	"math"
	"testing"
)

// TestForestMarksCutIntervals: in a panel where one two-seed interval is far
// wider than the rest, the range clips it, exactly that interval gets cut
// marks (at the edges it crosses), the others none, and the picture renders.
func TestForestMarksCutIntervals(t *testing.T) {
	vals := []Paired{
		{Mean: 0.1, Lo: -0.2, Hi: 0.4, N: 10},
		{Mean: -0.1, Lo: -0.3, Hi: 0.1, N: 10},
		{Mean: 1, Lo: -500, Hi: 502, N: 2},
		{Mean: 0.2, Lo: math.NaN(), Hi: math.NaN(), N: 1},
	}
	fp := ForestPanel{Title: "t", Rows: []string{"a", "b", "c", "d"}, Series: []ForestSeries{{Name: "x", Color: ForestColors[0], Shape: ForestShapes[0], Values: vals}}}
	xmin, xmax, clipped := forestRange(fp)
	if !clipped || xmin > -0.3 || xmax < 0.4 || xmax > 10 {
		t.Fatalf("range [%g, %g], clipped %v", xmin, xmax, clipped)
	}
	for i, v := range vals {
		l, h := v.Lo, v.Hi
		if math.IsNaN(l) {
			l, h = v.Mean, v.Mean
		}
		m := cutMarks(l, h, xmin, xmax)
		if i == 2 {
			if len(m) != 2 || m[0] != (cutMark{xmin, "<"}) || m[1] != (cutMark{xmax, ">"}) {
				t.Errorf("the wide interval's marks: %v", m)
			}
		} else if len(m) != 0 {
			t.Errorf("row %d (%v) marked %v", i, v, m)
		}
	}
	if b, err := ForestPNG("SMOKE TEST\nheader", []ForestPanel{fp}, 1, 300, 200); err != nil || len(b) < 1000 {
		t.Fatalf("ForestPNG: %d bytes, %v", len(b), err)
	}
}
