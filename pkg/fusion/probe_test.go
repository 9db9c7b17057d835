package fusion_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/ot"
)

// pointsOf returns the scattered probe whose points are p's lattice (in
// row-major order, the categorical action axis as one-hot coordinates) with
// p's Φ: the same support and cost as p, told as a point set.
func pointsOf(t *testing.T, p fusion.Probe) fusion.Probe {
	t.Helper()
	pc, err := ot.NewLatticeCloud(p.Lattice)
	if err != nil {
		t.Fatal(err)
	}
	pts := make([][]float64, pc.Len())
	for i := range pts {
		pts[i] = pc.Point(make([]float64, pc.Dim()), i)
	}
	sp, err := fusion.NewPointProbe(p.Phi, pts, pc.Weights())
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Validate(); err != nil {
		t.Fatal(err)
	}
	return sp
}

// TestScatteredProbeMatchesLattice is the metamorphic check of STYLE.md: a
// scattered probe whose points are the lattice fuses to the same θ as the
// lattice probe, for every reward-space method (the barycenters on the
// tiled kernel against the separable one, the others on the same values),
// with the default options (ε in cost units, the same on both supports).
func TestScatteredProbeMatchesLattice(t *testing.T) {
	lp := probe5(t)
	sp := pointsOf(t, lp)
	if !sp.Scattered() || sp.Len() != lp.Len() {
		t.Fatalf("scattered probe: %d points, lattice %d", sp.Len(), lp.Len())
	}
	rng := rand.New(rand.NewPCG(51, 9))
	_, d := lp.Phi.Dims()
	thetas := make([][]float64, 4)
	for i := range thetas {
		thetas[i] = make([]float64, d)
		for k := range thetas[i] {
			thetas[i][k] = rng.NormFloat64()
		}
	}
	weights := []float64{1, 2, 1, 3}
	ran := 0
	for _, name := range fusion.Methods() {
		m, err := fusion.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if m.Space() != fusion.RewardSpace {
			continue
		}
		opt := fusion.Options{Method: name, Tol: 1e-11, MaxIter: 5000}
		if name == fusion.MethodWassersteinMedian {
			opt = fusion.Options{Method: name} // its own schedule
		}
		want, err := fusion.Fuse(lp, thetas, weights, opt)
		if err != nil {
			t.Logf("%s: skipped, the lattice probe refuses it: %v", name, err)
			continue
		}
		got, err := fusion.Fuse(sp, thetas, weights, opt)
		if err != nil {
			t.Fatalf("%s on the scattered probe: %v", name, err)
		}
		approx.Slices(t, name+" θ", got.Theta, want.Theta, 1e-9, 1e-7)
		if want.Reward != nil {
			approx.Slices(t, name+" p̄", got.Reward.Barycenter, want.Reward.Barycenter, 1e-12, 1e-7)
		}
		t.Logf("%s: θ = %v on both", name, got.Theta)
		ran++
	}
	if ran < 3 {
		t.Fatalf("only %d reward-space methods compared", ran)
	}
	// Probe.Fuse (Barycentric) itself, with the paper's fixed schedule.
	opt := fusion.Options{Solver: ot.Paper}
	want, err := lp.Fuse(thetas, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sp.Fuse(thetas, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "paper θ", got.Theta, want.Theta, 1e-9, 1e-7)
}

// TestNewPointProbeRefusesBadPoints checks that a scattered probe with NaN
// or infinite coordinates or features, points of the wrong dimension, too
// many points or coordinates, a bad cost weight or a Φ of the wrong shape
// is refused with an error naming the point and the field.
func TestNewPointProbeRefusesBadPoints(t *testing.T) {
	pts := func() [][]float64 { return [][]float64{{0, 0}, {1, 0}, {0, 1}, {1, 1}} }
	phi := func() *mat.Dense { return mat.NewDense(4, 2, []float64{1, 0, 0, 1, 1, 1, 0.5, 2}) }
	if _, err := fusion.NewPointProbe(phi(), pts(), nil); err != nil {
		t.Fatal(err)
	}
	many := make([][]float64, fusion.MaxProbePoints+1)
	for i := range many {
		many[i] = []float64{float64(i)}
	}
	for _, tc := range []struct {
		name    string
		phi     *mat.Dense
		points  [][]float64
		weights []float64
		want    string
	}{
		{"no points", phi(), nil, nil, "points: no points"},
		{"nan", phi(), func() [][]float64 { p := pts(); p[2][1] = math.NaN(); return p }(), nil, "points[2][1] = NaN"},
		{"inf", phi(), func() [][]float64 { p := pts(); p[3][0] = math.Inf(1); return p }(), nil, "points[3][0] = +Inf"},
		{"wrong dimension", phi(), func() [][]float64 { p := pts(); p[1] = []float64{1, 0, 3}; return p }(), nil, "points[1]: dimension 3, want 2"},
		{"too many points", mat.NewDense(1, 1, nil), many, nil, "more than MaxProbePoints"},
		{"too many coordinates", phi(), [][]float64{make([]float64, fusion.MaxProbeDim+1)}, nil, "points[0]: dimension 257, more than MaxProbeDim"},
		{"weights length", phi(), pts(), []float64{1}, "cost_weights: 1 weights, points[0] has dimension 2"},
		{"negative weight", phi(), pts(), []float64{1, -2}, "cost_weights: ot: cost weight 1 is -2"},
		{"phi rows", mat.NewDense(3, 2, nil), pts(), nil, "phi has 3 rows, points 4"},
		{"phi nan", func() *mat.Dense { m := phi(); m.Set(2, 1, math.NaN()); return m }(), pts(), nil, "phi[2][1] = NaN (point 2)"},
		{"no phi", nil, pts(), nil, "no feature matrix"},
	} {
		_, err := fusion.NewPointProbe(tc.phi, tc.points, tc.weights)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	// A probe put together by hand is checked by Validate and by fusion.
	good, err := fusion.NewPointProbe(phi(), pts(), nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := good
	bad.Lattice = ot.UniformLattice(1, 2, 2)
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "both a lattice and points") {
		t.Errorf("lattice and points: Validate error %v", err)
	}
	if _, err := fusion.Fuse(bad, [][]float64{{1, 0}}, nil, fusion.Options{Method: fusion.MethodBarycenter}); err == nil {
		t.Errorf("lattice and points: Fuse accepted the probe")
	}
	bad = good
	bad.Phi = mat.NewDense(3, 2, []float64{1, 0, 0, 1, 1, 1})
	if _, err := fusion.Fuse(bad, [][]float64{{1, 0}}, nil, fusion.Options{Method: fusion.MethodBarycenter}); err == nil || !strings.Contains(err.Error(), "point set has 4 points, Φ has 3 rows") {
		t.Errorf("Φ rows: Fuse error %v", err)
	}
}
