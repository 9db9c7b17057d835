package approx

import (
	"math"
	"testing"
)

func TestClose(t *testing.T) {
	cases := []struct {
		got, want, abs, rel float64
		ok                  bool
	}{
		{1, 1, 0, 0, true},
		{1 + 1e-13, 1, 0, 1e-12, true},
		{1 + 1e-11, 1, 0, 1e-12, false},
		{1e-9, 0, 1e-8, 0, true},
		{math.NaN(), math.NaN(), 1, 1, false},
		{math.Inf(1), math.Inf(1), 0, 0, true},
		{math.Inf(1), 1e308, 0, 1e-12, false},
	}
	for _, c := range cases {
		if Close(c.got, c.want, c.abs, c.rel) != c.ok {
			t.Errorf("Close(%g, %g, %g, %g) = %v, want %v", c.got, c.want, c.abs, c.rel, !c.ok, c.ok)
		}
	}
}

func TestSlicesErrNamesEntry(t *testing.T) {
	err := SlicesErr([]float64{1, 2, 3}, []float64{1, 2, 4}, 1e-9, 0)
	if err == nil || err.Error()[:7] != "entry 2" {
		t.Fatalf("SlicesErr = %v, want an error naming entry 2", err)
	}
	if SlicesErr([]float64{1}, []float64{1, 2}, 1, 1) == nil {
		t.Fatal("length mismatch not reported")
	}
	if MaxAbsDiff([]float64{1, 5}, []float64{2, 1}) != 4 {
		t.Fatal("MaxAbsDiff wrong")
	}
}
