package ot

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// randCloud returns n random points in [0, scale)^d with random cost
// weights in [0.5, 2).
func randCloud(t testing.TB, rng *rand.Rand, n, d int, scale float64) *PointCloud {
	pts := make([][]float64, n)
	for i := range pts {
		pts[i] = randVec(rng, d, 0, scale)
	}
	pc, err := NewPointCloud(pts, randVec(rng, d, 0.5, 2))
	if err != nil {
		t.Fatal(err)
	}
	return pc
}

// randMeasures returns K positive random measures of length n (a random
// bump over the points plus a floor), unnormalized.
func randMeasures(rng *rand.Rand, pc *PointCloud, K int) [][]float64 {
	out := make([][]float64, K)
	for k := range out {
		c := rng.IntN(pc.Len())
		m := make([]float64, pc.Len())
		for i := range m {
			m[i] = math.Exp(-pc.Cost(i, c)/4) + 1e-3 + 0.1*rng.Float64()
		}
		out[k] = m
	}
	return out
}

// TestPointKernelMatchesDense checks every operation of the on-the-fly
// kernel against the dense kernel of the cloud's explicit cost matrix,
// including an ε small enough that the scaling-domain entries underflow
// and one row spanning several column tiles.
func TestPointKernelMatchesDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 1))
	for _, tc := range []struct {
		n, d int
		eps  float64 // raw
	}{
		{1, 1, 0.5}, {7, 1, 0.5}, {37, 3, 0.5}, {150, 6, 2}, {300, 1, 0.5}, {90, 24, 0.05}, {60, 2, 1e-3},
	} {
		pc := randCloud(t, rng, tc.n, tc.d, 3)
		eps := tc.eps
		pk, err := NewPointKernel(pc, eps)
		if err != nil {
			t.Fatal(err)
		}
		dk, err := NewDenseKernel(pc.CostMatrix(), tc.n, tc.n, eps)
		if err != nil {
			t.Fatal(err)
		}
		v := randVec(rng, tc.n, 0.1, 2)
		x := randVec(rng, tc.n, -20, 5)
		x[0] = math.Inf(-1) // a zero scaling
		got, want := make([]float64, tc.n), make([]float64, tc.n)
		for _, op := range []struct {
			name string
			p, d func(dst, v []float64) []float64
			in   []float64
		}{
			{"Apply", pk.Apply, dk.Apply, v}, {"ApplyT", pk.ApplyT, dk.ApplyT, v},
			{"ApplyCost", pk.ApplyCost, dk.ApplyCost, v},
			{"LogApply", pk.LogApply, dk.LogApply, x}, {"LogApplyT", pk.LogApplyT, dk.LogApplyT, x},
			{"LogApplyCost", pk.LogApplyCost, dk.LogApplyCost, x},
		} {
			op.p(got, op.in)
			op.d(want, op.in)
			for i := range got {
				if math.IsInf(want[i], -1) && math.IsInf(got[i], -1) {
					continue
				}
				if !approx.Close(got[i], want[i], 1e-300, 1e-12) {
					t.Fatalf("n=%d d=%d ε=%g %s[%d] = %v, dense %v", tc.n, tc.d, tc.eps, op.name, i, got[i], want[i])
				}
			}
		}
	}
}

// TestPointKernelSmallEpsFinite checks that the log-domain application
// stays finite (and right) where every off-diagonal kernel entry underflows.
func TestPointKernelSmallEpsFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 2))
	pc := randCloud(t, rng, 200, 4, 10)
	pk, err := NewPointKernel(pc, 1e-6*pc.CostUnit())
	if err != nil {
		t.Fatal(err)
	}
	x := randVec(rng, 200, -1e4, 1e4) // log scalings of either sign
	got := pk.LogApply(make([]float64, 200), x)
	for i, g := range got {
		// Only the diagonal survives: log Σ_j exp(−C_ij/ε + x_j) ≈ x_i unless
		// a neighbour's x_j − C_ij/ε beats it.
		want := x[i]
		for j := range x {
			want = math.Max(want, -pc.Cost(i, j)/pk.Eps()+x[j])
		}
		if math.IsNaN(g) || math.IsInf(g, 0) || !approx.Close(g, want, 1e-9, 1e-12) {
			t.Fatalf("LogApply[%d] = %v, want ≈ %v", i, g, want)
		}
	}
}

// TestPointBarycenterMatchesDense checks the scattered-support barycenter
// against DenseBarycenter on the cloud's explicit cost matrix, for every
// method, to solver tolerance. ε is raw (AbsoluteEps): in cost units the
// smallest gap of a random cloud makes it arbitrarily small.
func TestPointBarycenterMatchesDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 3))
	for _, tc := range []struct {
		n, d int
		m    Method
		eps  float64
		log  bool
	}{
		{40, 2, IBP, 0.5, false}, {120, 5, IBP, 1, false}, {80, 3, Stabilized, 0.5, false},
		{60, 4, Debiased, 0.5, false}, {60, 4, Debiased, 0.5, true}, {50, 3, Paper, 0.5, false},
		{70, 2, Stabilized, 0.05, false},
	} {
		pc := randCloud(t, rng, tc.n, tc.d, 4)
		mus := randMeasures(rng, pc, 3)
		w := []float64{0.5, 0.3, 0.2}
		opt := BarycenterOptions{Method: tc.m, Eps: tc.eps, AbsoluteEps: true, Tol: 1e-11, MaxIter: 5000, LogDomain: tc.log}
		if tc.m == Paper {
			opt.Tol, opt.MaxIter = -1, 60
		}
		got, err := PointBarycenter(pc, mus, w, opt)
		if err != nil {
			t.Fatalf("%v n=%d: %v", tc.m, tc.n, err)
		}
		want, err := DenseBarycenter(pc.CostMatrix(), tc.n, mus, w, opt)
		if err != nil {
			t.Fatal(err)
		}
		if tc.m != Paper && !(got.Converged && want.Converged) {
			t.Fatalf("%v n=%d: converged %v (%g), dense %v (%g)", tc.m, tc.n, got.Converged, got.MarginalError, want.Converged, want.MarginalError)
		}
		if got.Iterations != want.Iterations {
			t.Errorf("%v n=%d: %d iterations, dense %d", tc.m, tc.n, got.Iterations, want.Iterations)
		}
		approx.Slices(t, tc.m.String()+" barycenter", got.Barycenter, want.Barycenter, 1e-10, 1e-8)
	}
}

// TestPointBarycenterMatchesLattice checks that on a lattice's points (in
// row-major order, with the axes' weights) the scattered-support barycenter
// equals LatticeBarycenter with the same options, ε in cost units included.
func TestPointBarycenterMatchesLattice(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 4))
	explicit := Axis{Coords: []float64{0, 0.3, 1, 1.2, 2.5}, Weight: 2}
	for _, tc := range []struct {
		name string
		l    Lattice
		m    Method
	}{
		{"uniform 6x5x4 ibp", UniformLattice(1, 6, 5, 4), IBP},
		{"weighted ibp", Lattice{Axes: []Axis{UniformAxis(7, 0.5), {Coords: UniformAxis(5, 1).Coords, Weight: 3}}}, IBP},
		{"explicit stabilized", Lattice{Axes: []Axis{explicit, UniformAxis(4, 1)}}, Stabilized},
		{"categorical debiased", Lattice{Axes: []Axis{UniformAxis(6, 1), CategoricalAxis(2), UniformAxis(3, 1)}}, Debiased},
		{"gridworld-like paper", Lattice{Axes: []Axis{UniformAxis(5, 1), UniformAxis(5, 1), CategoricalAxis(5)}}, Paper},
	} {
		pc, err := NewLatticeCloud(tc.l)
		if err != nil {
			t.Fatal(err)
		}
		// The cloud's unit (median nearest-neighbour cost) is the lattice's
		// where every point has the same nearest-neighbour cost (uniform
		// axes); with the explicit axis ε is passed in absolute terms.
		cu, lu := pc.CostUnit(), tc.l.CostUnit()
		if !strings.HasPrefix(tc.name, "explicit") && !approx.Close(cu, lu, 0, 1e-14) {
			t.Fatalf("%s: cloud cost unit %v, lattice %v", tc.name, cu, lu)
		}
		mus := bumps(rng, tc.l, 3, 1e-3)
		w := []float64{0.2, 0.5, 0.3}
		opt := BarycenterOptions{Method: tc.m, Tol: 1e-11, MaxIter: 5000}
		if tc.m == Paper {
			opt.Tol, opt.MaxIter = -1, 50
		}
		popt := opt
		popt.Eps, popt.AbsoluteEps = opt.withDefaults().Eps*lu, true
		got, err := PointBarycenter(pc, mus, w, popt)
		if err != nil {
			t.Fatal(err)
		}
		want, err := LatticeBarycenter(tc.l, mus, w, opt)
		if err != nil {
			t.Fatal(err)
		}
		if tc.m != Paper && (!got.Converged || !want.Converged) {
			t.Fatalf("%s: converged %v, lattice %v", tc.name, got.Converged, want.Converged)
		}
		approx.Slices(t, tc.name, got.Barycenter, want.Barycenter, 1e-10, 1e-8)
	}
}

// TestPointBarycenterProperties checks, on random clouds, that the
// barycenter is a probability vector, that it is symmetric in swapping
// the inputs together with their weights, and that the barycenter of
// identical measures tends to that measure as ε shrinks.
func TestPointBarycenterProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 5))
	for trial := 0; trial < 4; trial++ {
		pc := randCloud(t, rng, 30+rng.IntN(70), 1+rng.IntN(6), 5)
		mus := randMeasures(rng, pc, 2)
		w := []float64{0.3 + 0.4*rng.Float64(), 0}
		w[1] = 1 - w[0]
		opt := BarycenterOptions{Method: []Method{IBP, Stabilized, Debiased}[trial%3], Eps: 1, AbsoluteEps: true, Tol: 1e-11, MaxIter: 5000}
		r, err := PointBarycenter(pc, mus, w, opt)
		if err != nil {
			t.Fatal(err)
		}
		s := 0.0
		for i, v := range r.Barycenter {
			if !(v >= 0) {
				t.Fatalf("trial %d: barycenter[%d] = %v", trial, i, v)
			}
			s += v
		}
		approx.Equal(t, "mass", s, 1, 1e-9, 0)
		sw, err := PointBarycenter(pc, [][]float64{mus[1], mus[0]}, []float64{w[1], w[0]}, opt)
		if err != nil {
			t.Fatal(err)
		}
		approx.Slices(t, "swapped", sw.Barycenter, r.Barycenter, 1e-12, 1e-9)
	}
	// Identical measures: the entropic blur vanishes with ε.
	pc := randCloud(t, rng, 80, 3, 5)
	mu := randMeasures(rng, pc, 1)[0]
	s := sum(mu)
	for i := range mu {
		mu[i] /= s
	}
	prev := math.Inf(1)
	for _, eps := range []float64{1, 0.1, 0.01, 0.001} {
		r, err := PointBarycenter(pc, [][]float64{mu, mu, mu}, nil, BarycenterOptions{Method: Stabilized, Eps: eps, AbsoluteEps: true, Tol: 1e-12, MaxIter: 20000})
		if err != nil {
			t.Fatal(err)
		}
		l1 := 0.0
		for i, v := range r.Barycenter {
			l1 += math.Abs(v - mu[i])
		}
		t.Logf("ε = %g: ‖bar − μ‖₁ = %.3g after %d iterations", eps, l1, r.Iterations)
		if l1 > prev {
			t.Errorf("ε = %g: ‖bar − μ‖₁ = %g grew from %g", eps, l1, prev)
		}
		prev = l1
	}
	if prev > 1e-4 {
		t.Errorf("ε = 0.001: ‖bar − μ‖₁ = %g, want ≈ 0", prev)
	}
}

// TestPointBarycenterDeterministicAcrossWorkers checks that results are
// bitwise identical on one worker and on all of them.
func TestPointBarycenterDeterministicAcrossWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 6))
	pc := randCloud(t, rng, 700, 3, 5)
	mus := randMeasures(rng, pc, 3)
	run := func() [][]float64 {
		var out [][]float64
		for _, m := range []Method{IBP, Stabilized, Debiased} {
			r, err := PointBarycenter(pc, mus, []float64{0.2, 0.3, 0.5}, BarycenterOptions{Method: m, Eps: 1, AbsoluteEps: true, MaxIter: 4, Tol: -1})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, append(r.Barycenter, r.MarginalError))
		}
		return out
	}
	sameWithOneWorker(t, run)
}

// TestPointBarycenterNoAllocs checks that kernel applications and a solve
// with a caller-provided dst allocate nothing.
func TestPointBarycenterNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 7))
	pc := randCloud(t, rng, 300, 4, 5)
	k, err := NewPointKernel(pc, 1)
	if err != nil {
		t.Fatal(err)
	}
	v, dst := randVec(rng, 300, 0, 1), make([]float64, 300)
	if a := testing.AllocsPerRun(3, func() { k.Apply(dst, v); k.LogApply(dst, v) }); a > 0 {
		t.Errorf("kernel application: %.1f allocations", a)
	}
	mus := randMeasures(rng, pc, 3)
	checkSolvesAllocateNothing(t, k, dst, mus)
}

// TestPointCloudRefusesBadInput checks that unusable points, weights and
// measures are refused with an error naming the point, coordinate or
// field, never a panic.
func TestPointCloudRefusesBadInput(t *testing.T) {
	good := [][]float64{{0, 0, 0}, {1, 0, 2}, {0, 1, 1}, {2, 2, 2}}
	clone := func() [][]float64 {
		out := make([][]float64, len(good))
		for i, p := range good {
			out[i] = append([]float64(nil), p...)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		mod     func(p [][]float64) [][]float64
		weights []float64
		want    string
	}{
		{"empty", func([][]float64) [][]float64 { return nil }, nil, "no points"},
		{"zero dimension", func([][]float64) [][]float64 { return [][]float64{{}, {}} }, nil, "point 0 has no coordinates"},
		{"nan", func(p [][]float64) [][]float64 { p[2][1] = math.NaN(); return p }, nil, "point 2 coordinate 1 is NaN"},
		{"inf", func(p [][]float64) [][]float64 { p[3][0] = math.Inf(-1); return p }, nil, "point 3 coordinate 0 is -Inf"},
		{"wrong dimension", func(p [][]float64) [][]float64 { p[1] = p[1][:2]; return p }, nil, "point 1 has dimension 2, want 3"},
		{"weights length", func(p [][]float64) [][]float64 { return p }, []float64{1, 1}, "2 cost weights for points of dimension 3"},
		{"negative weight", func(p [][]float64) [][]float64 { return p }, []float64{1, -1, 1}, "cost weight 1 is -1"},
		{"zero weight", func(p [][]float64) [][]float64 { return p }, []float64{0, 1, 1}, "cost weight 0 is 0"},
		{"nan weight", func(p [][]float64) [][]float64 { return p }, []float64{1, 1, math.NaN()}, "cost weight 2 is NaN"},
	} {
		_, err := NewPointCloud(tc.mod(clone()), tc.weights)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrPoints) {
			t.Errorf("%s: error %v, want one containing %q and wrapping ErrPoints", tc.name, err, tc.want)
		}
	}
	if _, err := NewLatticeCloud(Lattice{Axes: []Axis{PeriodicAxis(8, 2*math.Pi)}}); err == nil || !strings.Contains(err.Error(), "axis 0 is periodic") {
		t.Errorf("periodic lattice: error %v", err)
	}
	pc, err := NewPointCloud(good, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		measures [][]float64
		weights  []float64
		opt      BarycenterOptions
		want     string
	}{
		{"measure length", [][]float64{{1, 1, 1, 1}, {1, 1, 1}}, nil, BarycenterOptions{}, "measure 1 has length 3, want 4"},
		{"measure nan", [][]float64{{1, math.NaN(), 1, 1}}, nil, BarycenterOptions{}, "measure 0: entry 1 is NaN"},
		{"weights length", [][]float64{{1, 1, 1, 1}}, []float64{1, 1}, BarycenterOptions{}, "2 weights for 1 measures"},
		{"negative eps", [][]float64{{1, 1, 1, 1}}, nil, BarycenterOptions{Eps: -1}, "ε = -"},
	} {
		if _, err := PointBarycenter(pc, tc.measures, tc.weights, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := PointBarycenter(nil, [][]float64{{1}}, nil, BarycenterOptions{}); !errors.Is(err, ErrPoints) {
		t.Errorf("nil cloud: error %v", err)
	}
}

// TestCostUnitRobustToNearDuplicates: the unit is the median of the points'
// nearest-neighbour costs, checked against a brute-force O(n²) computation
// on random points; adding a near-duplicate of one point (1e-9 away) moves it
// at most two ranks of the old nearest-neighbour costs (the duplicate and
// its twin both get a tiny one; measured ×0.989),
// where the smallest positive cost falls to 1e-18; an explicit
// lattice axis gives the median, not the lattice's smallest cost.
func TestCostUnitRobustToNearDuplicates(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 70))
	const n, d = 301, 3
	pts := make([][]float64, n)
	for i := range pts {
		pts[i] = []float64{rng.Float64(), rng.Float64(), 2 * rng.Float64()}
	}
	w := []float64{1, 2, 0.5}
	var sorted []float64
	brute := func(pts [][]float64) (median, smallest float64) {
		var nn []float64
		smallest = math.Inf(1)
		for i, x := range pts {
			m := math.Inf(1)
			for j, y := range pts {
				c := 0.0
				for k := range x {
					c += w[k] * (x[k] - y[k]) * (x[k] - y[k])
				}
				if i != j && c > 0 {
					m = math.Min(m, c)
				}
			}
			nn = append(nn, m)
			smallest = math.Min(smallest, m)
		}
		slices.Sort(nn)
		sorted = nn
		if len(nn)%2 == 1 {
			return nn[len(nn)/2], smallest
		}
		return (nn[len(nn)/2-1] + nn[len(nn)/2]) / 2, smallest
	}
	pc, err := NewPointCloud(pts, w)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := brute(pts)
	approx.Equal(t, "cost unit", pc.CostUnit(), want, 0, 1e-14)
	old, k := sorted, n/2
	dup := append(slices.Clone(pts), []float64{pts[5][0] + 1e-9, pts[5][1], pts[5][2]})
	pd, err := NewPointCloud(dup, w)
	if err != nil {
		t.Fatal(err)
	}
	wantDup, smallest := brute(dup)
	approx.Equal(t, "cost unit with a near-duplicate", pd.CostUnit(), wantDup, 0, 1e-14)
	if u := pd.CostUnit(); u < old[k-2] || u > old[k+1] || smallest > 1e-17 {
		t.Errorf("a near-duplicate moved the unit from %v to %v, beyond two ranks [%v, %v] (smallest positive cost %g)", pc.CostUnit(), u, old[k-2], old[k+1], smallest)
	}
	explicit := Lattice{Axes: []Axis{{Coords: []float64{0, 0.3, 1, 1.2, 2.5}, Weight: 2}, UniformAxis(4, 1)}}
	lc, err := NewLatticeCloud(explicit)
	if err != nil {
		t.Fatal(err)
	}
	// Per point: axis 0 gives 2·0.3², 2·0.3², 2·0.2², 2·0.2², min(2·1.3², 1);
	// four rows of each, so the median over the 20 points is 2·0.09 = 0.18,
	// where the lattice's smallest cost is 2·0.04 = 0.08.
	approx.Equal(t, "explicit lattice cloud unit", lc.CostUnit(), 0.18, 0, 1e-14)
	approx.Equal(t, "explicit lattice unit", explicit.CostUnit(), 0.08, 0, 1e-14)
}

// checkSolvesAllocateNothing requires every barycenter method on kernel k to
// allocate nothing per solve once its workspace exists.
func checkSolvesAllocateNothing(t *testing.T, k Kernel, dst []float64, mus [][]float64) {
	t.Helper()
	w := NewWorkspace(k, 3)
	for _, m := range []Method{IBP, Stabilized, Debiased, Paper} {
		opt := BarycenterOptions{Method: m, MaxIter: 2, Tol: -1, InnerIter: 2}
		if _, err := w.Barycenter(dst, mus, nil, opt); err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(2, func() {
			if _, err := w.Barycenter(dst, mus, nil, opt); err != nil {
				t.Fatal(err)
			}
		}); a > 0 {
			t.Errorf("%v: %.1f allocations per solve", m, a)
		}
	}
}
