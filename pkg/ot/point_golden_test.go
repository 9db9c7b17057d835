package ot

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/longtest"
)

// pointGolden is one case of testdata/point_goldens.json (see
// make_point_goldens.py).
type pointGolden struct {
	Name        string      `json:"name"`
	Method      string      `json:"method"` // POT's: sinkhorn or sinkhorn_log
	Eps         float64     `json:"eps"`    // POT's reg: the absolute ε
	CostUnit    float64     `json:"cost_unit"`
	CostWeights []float64   `json:"cost_weights"`
	Points      [][]float64 `json:"points"`
	Measures    [][]float64 `json:"measures"`
	Weights     []float64   `json:"weights"`
	Iterations  int         `json:"iterations"`
	Want        []float64   `json:"want"`
}

// Tolerance of TestPointBarycenterMatchesPOT per barycenter entry: absolute
// pointGoldenAbs/n (a millionth of a millionth of the uniform mass) plus
// relative pointGoldenRel. Measured worst (all six cases, long variant):
// 1.2e-11 of |want|, at n = 2000, d = 2.
const (
	pointGoldenAbs = 1e-12
	pointGoldenRel = 1e-9
)

func loadPointGoldens(t *testing.T) []pointGolden {
	t.Helper()
	raw, err := os.ReadFile("testdata/point_goldens.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []pointGolden `json:"cases"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) < 6 {
		t.Fatalf("only %d point golden cases", len(g.Cases))
	}
	return g.Cases
}

// solvePointGolden runs PointBarycenter on case c at absolute ε eps with
// the Go method matching POT's (sinkhorn: IBP; sinkhorn_log: Stabilized).
func solvePointGolden(t *testing.T, c pointGolden, pc *PointCloud, eps float64) BarycenterResult {
	t.Helper()
	m := IBP
	if c.Method == "sinkhorn_log" {
		m = Stabilized
	} else if c.Method != "sinkhorn" {
		t.Fatalf("unknown POT method %q", c.Method)
	}
	r, err := PointBarycenter(pc, c.Measures, c.Weights, BarycenterOptions{Method: m, Eps: eps, AbsoluteEps: true, Tol: 1e-13, MaxIter: 20000})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Converged {
		t.Fatalf("not converged after %d iterations: marginal error %.3g", r.Iterations, r.MarginalError)
	}
	return r
}

// TestPointBarycenterMatchesPOT compares PointBarycenter (the exact tiled
// kernel) with POT 0.8.2's ot.bregman.barycenter on the dense cost that
// make_point_goldens.py builds with numpy from scattered random points (n
// from 50 to 2000, d from 2 to 28, K from 2 to 5, non-uniform measures,
// non-uniform weights for sinkhorn_log), every entry within
// pointGoldenAbs/n + pointGoldenRel·|want|. It also checks CostUnit against
// the script's median nearest-neighbour cost, and that the comparison is
// sharp: with ε perturbed by 1e-5 relative, the first case must fail it.
// The two n = 2000 cases run in the long variant (FEDIRL_LONG_TESTS=1).
func TestPointBarycenterMatchesPOT(t *testing.T) {
	worst := 0.0
	for i, c := range loadPointGoldens(t) {
		t.Run(c.Name+"/"+c.Method, func(t *testing.T) {
			n := len(c.Points)
			if n >= 2000 && !longtest.Enabled() {
				t.Skipf("n = %d: long variant (%s=1)", n, longtest.Var)
			}
			pc, err := NewPointCloud(c.Points, c.CostWeights)
			if err != nil {
				t.Fatal(err)
			}
			approx.Equal(t, "cost unit", pc.CostUnit(), c.CostUnit, 0, 1e-12)
			r := solvePointGolden(t, c, pc, c.Eps)
			abs := pointGoldenAbs / float64(n)
			approx.Slices(t, "barycenter", r.Barycenter, c.Want, abs, pointGoldenRel)
			d := relDiff(r.Barycenter, c.Want, abs)
			worst = max(worst, d)
			t.Logf("n=%d d=%d K=%d ε=%g: %d iterations (POT %d), max |Δ|/(abs+|want|) %.2g of the tolerance's %.0g",
				n, pc.Dim(), len(c.Measures), c.Eps, r.Iterations, c.Iterations, d, pointGoldenRel)
			if i != 0 {
				return
			}
			// Sharpness: a kernel with a slightly wrong ε fails the comparison.
			p := solvePointGolden(t, c, pc, c.Eps*(1+1e-5))
			if err := approx.SlicesErr(p.Barycenter, c.Want, abs, pointGoldenRel); err == nil {
				t.Errorf("ε·(1+1e-5) also passes (max diff %.3g): the tolerance cannot tell a wrong kernel", approx.MaxAbsDiff(p.Barycenter, c.Want))
			} else {
				t.Logf("ε·(1+1e-5) fails as it should: %v", err)
			}
		})
	}
	t.Logf("worst max |Δ|/(abs+|want|): %.3g", worst)
}

// relDiff returns max_i |a_i − b_i| / (abs + |b_i|).
func relDiff(a, b []float64, abs float64) float64 {
	if len(a) != len(b) {
		panic(fmt.Sprintf("relDiff: lengths %d, %d", len(a), len(b)))
	}
	m := 0.0
	for i := range a {
		m = max(m, math.Abs(a[i]-b[i])/(abs+math.Abs(b[i])))
	}
	return m
}
