package ot

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// goldenCase is one entry of testdata/goldens.json (see make_goldens.py).
type goldenCase struct {
	Kind   string `json:"kind"`
	Name   string `json:"lattice"`
	Method string `json:"method"`
	Axes   []struct {
		Coords      []float64 `json:"coords"`
		Weight      float64   `json:"weight"`
		Period      float64   `json:"period"`
		Categorical bool      `json:"categorical"`
	} `json:"axes"`
	Eps      float64         `json:"eps"`
	Measures [][]float64     `json:"measures"`
	Weights  []float64       `json:"weights"`
	A        []float64       `json:"a"`
	B        []float64       `json:"b"`
	Want     json.RawMessage `json:"want"`
}

// TestGoldensPOT compares barycenters, Sinkhorn costs and exact costs with
// POT 0.8.2 to 1e-8 absolute per entry.
func TestGoldensPOT(t *testing.T) {
	raw, err := os.ReadFile("testdata/goldens.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []goldenCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) < 40 {
		t.Fatalf("only %d golden cases", len(g.Cases))
	}
	worst := 0.0
	for i, c := range g.Cases {
		t.Run(fmt.Sprintf("%d/%s/%s/%s/eps%g", i, c.Kind, c.Name, c.Method, c.Eps), func(t *testing.T) {
			var l Lattice
			for _, a := range c.Axes {
				l.Axes = append(l.Axes, Axis{Coords: a.Coords, Weight: a.Weight, Period: a.Period, Categorical: a.Categorical})
			}
			switch c.Kind {
			case "barycenter":
				var want []float64
				if err := json.Unmarshal(c.Want, &want); err != nil {
					t.Fatal(err)
				}
				m, err := ParseMethod(c.Method)
				if err != nil {
					t.Fatal(err)
				}
				r, err := LatticeBarycenter(l, c.Measures, c.Weights, BarycenterOptions{Eps: c.Eps, AbsoluteEps: true, Method: m, MaxIter: 20000, Tol: 1e-13})
				if err != nil {
					t.Fatal(err)
				}
				approx.Slices(t, "barycenter", r.Barycenter, want, 1e-8, 0)
				worst = max(worst, approx.MaxAbsDiff(r.Barycenter, want))
				t.Logf("%d iterations, marginal error %.2g, max diff %.2g", r.Iterations, r.MarginalError, approx.MaxAbsDiff(r.Barycenter, want))
			case "sinkhorn":
				var want float64
				if err := json.Unmarshal(c.Want, &want); err != nil {
					t.Fatal(err)
				}
				k, err := NewLatticeKernel(l, c.Eps)
				if err != nil {
					t.Fatal(err)
				}
				for _, log := range []bool{false, true} {
					r, err := Sinkhorn(k, c.A, c.B, SinkhornOptions{Log: log, MaxIter: 20000, Tol: 1e-14})
					if err != nil {
						t.Fatal(err)
					}
					approx.Equal(t, fmt.Sprintf("cost log=%v", log), r.Cost, want, 1e-8, 0)
					t.Logf("log=%v: %d iterations, diff %.2g", log, r.Iterations, r.Cost-want)
					worst = max(worst, abs(r.Cost-want))
				}
			case "emd":
				var want float64
				if err := json.Unmarshal(c.Want, &want); err != nil {
					t.Fatal(err)
				}
				n := l.Len()
				got, _, err := ExactCost(l.CostMatrix(), n, n, c.A, c.B)
				if err != nil {
					t.Fatal(err)
				}
				approx.Equal(t, "W2²", got, want, 1e-8, 0)
				worst = max(worst, abs(got-want))
			default:
				t.Fatalf("unknown kind %q", c.Kind)
			}
		})
	}
	t.Logf("worst absolute difference from POT: %.3g", worst)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
