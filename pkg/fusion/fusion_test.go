package fusion_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/tasks"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/ot"
)

func probe5(t *testing.T) fusion.Probe {
	t.Helper()
	spec, err := gridworld.DefaultFamily(5).Probe(3)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tasks.GridProbe(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMean(t *testing.T) {
	th := []float64{-0.7, 0.3}
	got, err := fusion.Mean([][]float64{th, th, th, th}, nil)
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "mean of identical", got, th, 1e-15, 0)
	got, err = fusion.Mean([][]float64{{1, 2}, {3, 6}}, []float64{3, 1})
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "weighted mean", got, []float64{1.5, 3}, 1e-15, 0)
	for name, c := range map[string]struct {
		th [][]float64
		w  []float64
	}{
		"empty":           {nil, nil},
		"ragged":          {[][]float64{{1, 2}, {1}}, nil},
		"nan":             {[][]float64{{math.NaN(), 1}}, nil},
		"negative weight": {[][]float64{{1}, {2}}, []float64{1, -1}},
		"zero weights":    {[][]float64{{1}, {2}}, []float64{0, 0}},
		"weight count":    {[][]float64{{1}, {2}}, []float64{1}},
	} {
		if _, err := fusion.Mean(c.th, c.w); err == nil {
			t.Errorf("%s: fusion.Mean accepted bad input", name)
		}
	}
}

func TestShiftNormalize(t *testing.T) {
	r := []float64{-1, 0, 2}
	p, z, err := fusion.ShiftNormalize(nil, r, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	approx.Equal(t, "Z", z, 0.5+1.5+3.5, 1e-15, 0)
	approx.Slices(t, "p", p, []float64{0.5 / 5.5, 1.5 / 5.5, 3.5 / 5.5}, 1e-15, 0)
	if _, _, err := fusion.ShiftNormalize(nil, r, 1); err == nil {
		t.Fatal("σ = 1 leaves r+σ = 0 and must be rejected")
	}
	if s := fusion.AutoSigma(r, []float64{-3, 4}); !(s > 3) {
		t.Fatalf("fusion.AutoSigma = %v does not make every entry positive", s)
	}
}

// TestBackProjectRecoversSpan checks exact recovery when r̄ = Φθ and agreement
// with the normal equations (solved independently with a Cholesky
// factorization) for r̄ outside the span.
func TestBackProjectRecoversSpan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shape := range [][2]int{{10, 2}, {100, 2}, {57, 5}} {
		n, d := shape[0], shape[1]
		phi := mat.NewDense(n, d, nil)
		for i := range n {
			for j := range d {
				phi.Set(i, j, rng.NormFloat64())
			}
		}
		theta := make([]float64, d)
		for j := range theta {
			theta[j] = rng.NormFloat64()
		}
		r := make([]float64, n)
		var rv mat.VecDense
		rv.MulVec(phi, mat.NewVecDense(d, theta))
		copy(r, rv.RawVector().Data)
		got, err := fusion.BackProject(phi, r)
		if err != nil {
			t.Fatal(err)
		}
		approx.Slices(t, "θ from Φθ", got, theta, 1e-12, 1e-12)

		for i := range r {
			r[i] += rng.NormFloat64()
		}
		got, err = fusion.BackProject(phi, r)
		if err != nil {
			t.Fatal(err)
		}
		var ata mat.SymDense
		ata.SymOuterK(1, phi.T())
		var chol mat.Cholesky
		if !chol.Factorize(&ata) {
			t.Fatal("ΦᵀΦ not positive definite")
		}
		var atb, want mat.VecDense
		atb.MulVec(phi.T(), mat.NewVecDense(n, r))
		if err := chol.SolveVecTo(&want, &atb); err != nil {
			t.Fatal(err)
		}
		approx.Slices(t, "θ vs normal equations", got, want.RawVector().Data, 1e-10, 1e-10)
	}
	// The grid-world probe's own features: rewards in the span come back exactly.
	p := probe5(t)
	theta := []float64{-0.37, 0.81}
	r := make([]float64, p.Lattice.Len())
	for x := range r {
		r[x] = p.Phi.At(x, 0)*theta[0] + p.Phi.At(x, 1)*theta[1]
	}
	got, err := fusion.BackProject(p.Phi, r)
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "θ from the probe's Φθ", got, theta, 1e-13, 1e-13)
	// Rank deficiency is an error, not garbage.
	phi := mat.NewDense(4, 2, []float64{1, 2, 2, 4, 3, 6, 4, 8})
	if _, err := fusion.BackProject(phi, []float64{1, 2, 3, 4}); err == nil {
		t.Fatal("rank-deficient Φ accepted")
	}
}

// TestBarycentricIdenticalClients: K identical clients fuse back to their θ.
// The debiased barycenter removes the entropic blur, so it recovers θ at the
// paper's ε = 0.5; plain IBP is exact only as ε → 0 (at ε = 0.5 it blurs the
// reward, which the last case documents).
func TestBarycentricIdenticalClients(t *testing.T) {
	p := probe5(t)
	theta := []float64{-0.8, 0.35}
	cases := []struct {
		name   string
		k      int
		opt    fusion.Options
		tol    float64
		biased bool
	}{
		{"debiased eps 0.5, K=3", 3, fusion.Options{Solver: ot.Debiased}, 1e-6, false},
		{"debiased eps 0.5, K=1", 1, fusion.Options{Solver: ot.Debiased}, 1e-6, false},
		{"ibp eps 0.05, K=3", 3, fusion.Options{Solver: ot.IBP, Eps: 0.05}, 1e-6, false},
		{"stabilized eps 0.05, K=1", 1, fusion.Options{Solver: ot.Stabilized, Eps: 0.05}, 1e-6, false},
		{"ibp eps 0.5 is blurred", 3, fusion.Options{Solver: ot.IBP}, 1e-2, true},
	}
	for _, c := range cases {
		thetas := make([][]float64, c.k)
		for i := range thetas {
			thetas[i] = theta
		}
		res, err := p.Fuse(thetas, nil, c.opt)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		diff := approx.MaxAbsDiff(res.Theta, theta)
		t.Logf("%s: θ = %v (max diff %.2g, %d iterations)", c.name, res.Theta, diff, res.Iterations)
		if c.biased {
			if diff < c.tol {
				t.Errorf("%s: expected visible entropic blur, got diff %.2g", c.name, diff)
			}
			continue
		}
		if diff > c.tol {
			t.Errorf("%s: θ = %v, want %v (tol %g)", c.name, res.Theta, theta, c.tol)
		}
		// The barycenter itself must then be the common measure.
		r := make([]float64, p.Lattice.Len())
		for x := range r {
			r[x] = p.Phi.At(x, 0)*theta[0] + p.Phi.At(x, 1)*theta[1]
		}
		want, _, _ := fusion.ShiftNormalize(nil, r, res.Sigma)
		if d := approx.MaxAbsDiff(res.Barycenter, want); d > c.tol {
			t.Errorf("%s: barycenter differs from the client measure by %.2g", c.name, d)
		}
	}
}

// TestPaperScheduleMatchesIBP: on the 5×5 probe the paper's 50×10 schedule
// reaches the same entropic barycenter as IBP run to convergence, so the
// fused θ agree (an independent check of the solver the study uses).
func TestPaperScheduleMatchesIBP(t *testing.T) {
	p := probe5(t)
	thetas := [][]float64{{-0.06, 0.025}, {-0.005, 0.003}, {0.0003, -0.0027}, {-0.03, 0.013}}
	ibp, err := p.Fuse(thetas, nil, fusion.Options{Solver: ot.IBP, Tol: 1e-13, MaxIter: 5000})
	if err != nil {
		t.Fatal(err)
	}
	paper, err := p.Fuse(thetas, nil, fusion.Options{Solver: ot.Paper, Tol: -1, MaxIter: 50, InnerIter: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("IBP θ %v, paper θ %v, paper marginal error %.2g", ibp.Theta, paper.Theta, paper.MarginalError)
	approx.Slices(t, "paper vs IBP θ", paper.Theta, ibp.Theta, 1e-6, 1e-4)
}

// TestBarycentricZeroWeightIgnored: a zero-weight client has no influence.
func TestBarycentricZeroWeightIgnored(t *testing.T) {
	p := probe5(t)
	a := []float64{-0.8, 0.35}
	b := []float64{0.5, -2}
	opt := fusion.Options{Solver: ot.Debiased, Sigma: 5}
	one, err := p.Fuse([][]float64{a}, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.Z = one.Z
	two, err := p.Fuse([][]float64{a, b}, []float64{1, 0}, opt)
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "θ with a zero-weight client", two.Theta, one.Theta, 1e-9, 1e-9)
}

func BenchmarkBarycentric20x20K20(b *testing.B) {
	spec, _ := gridworld.DefaultFamily(20).Probe(1)
	p, _ := tasks.GridProbe(spec)
	rng := rand.New(rand.NewPCG(1, 1))
	thetas := make([][]float64, 20)
	for i := range thetas {
		thetas[i] = []float64{-0.05 * rng.Float64(), 0.03 * rng.Float64()}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Fuse(thetas, nil, fusion.Options{Solver: ot.IBP, MaxIter: 500}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*p.Lattice.Len()*20*500)/b.Elapsed().Seconds(), "point-iters/s")
}

func TestOptionsDecodeAndValidate(t *testing.T) {
	o, err := fusion.DecodeOptions([]byte(`{"method":"barycentric","solver":"paper","epsilon":0.5,"max_iter":50,"z":2}`))
	if err != nil || o.Solver != ot.Paper || o.Z != 2 || o.MethodName() != fusion.MethodBarycenter {
		t.Fatalf("decoded %+v, %v", o, err)
	}
	if o, err := fusion.DecodeOptions(nil); err != nil || o.MethodName() != fusion.MethodMean {
		t.Fatalf("empty options: %+v, %v", o, err)
	}
	for _, bad := range []string{`{"method":"medain"}`, `{"weighting":"size"}`, `{"solver":"lbfgs"}`, `{"epsilon":-1}`,
		`{"max_iter":-2}`, `{"eps":0.5}`, `{"sigma":1e400}`, `[1]`} {
		if _, err := fusion.DecodeOptions([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	b, _ := json.Marshal(fusion.Options{Method: fusion.MethodBarycentric, Solver: ot.Debiased, Tol: -1})
	back, err := fusion.DecodeOptions(b)
	if err != nil || back != (fusion.Options{Method: fusion.MethodBarycentric, Solver: ot.Debiased, Tol: -1}) {
		t.Fatalf("round trip of %s: %+v, %v", b, back, err)
	}
}

func TestClientWeights(t *testing.T) {
	o := fusion.Options{Weighting: fusion.WeightingDemos, DemoCap: ptr(5.0)}
	if w := o.ClientWeights([]int{1, 5, 4}); !slices.Equal(w, []float64{1, 5, 4}) {
		t.Errorf("demos weights %v", w)
	}
	// A client that reports no count (private) counts as the lower median of
	// the others; no client weighs more than DemoCap times that median.
	for _, c := range []struct {
		counts []int
		cap    *float64
		want   []float64
	}{
		{[]int{0, 0, 0, 1}, nil, []float64{1, 1, 1, 1}},
		{[]int{1, 5, 0}, nil, []float64{1, 1, 1}},
		{[]int{1, 1, 1, 1000}, nil, []float64{1, 1, 1, 1}},
		{[]int{2, 4, 6, 1000}, nil, []float64{2, 4, 4, 4}},
		{[]int{2, 4, 6, 1000}, ptr(4.0), []float64{2, 4, 6, 16}},
		{[]int{2, 4, 6, 1000}, ptr(1.0), []float64{2, 4, 4, 4}},
		{[]int{1, 1000}, nil, []float64{1, 1}},
		{[]int{1, 1000}, ptr(2.0), []float64{1, 2}},
	} {
		o := fusion.Options{Weighting: fusion.WeightingDemos, DemoCap: c.cap}
		if w := o.ClientWeights(c.counts); !slices.Equal(w, c.want) {
			t.Errorf("demo counts %v (cap %v): weights %v, want %v", c.counts, c.cap, w, c.want)
		}
	}
	// The documented bound: one client's weight ≤ c/(c + ⌊K/2⌋), on random
	// counts with one client declaring a huge count.
	rng := rand.New(rand.NewPCG(1, 3))
	for range 500 {
		k := 1 + rng.IntN(12)
		counts := make([]int, k)
		for i := range counts {
			if rng.IntN(3) > 0 {
				counts[i] = rng.IntN(50)
			}
		}
		counts[rng.IntN(k)] = 1 << 30
		for _, c := range []float64{1, 2, 7} {
			o := fusion.Options{Weighting: fusion.WeightingDemos, DemoCap: &c}
			alpha, err := fusion.Weights(o.ClientWeights(counts), k)
			if err != nil {
				t.Fatal(err)
			}
			if bound := c / (c + float64(k/2)); slices.Max(alpha) > bound*(1+1e-12) {
				t.Fatalf("counts %v, cap %v: largest weight %v above c/(c + ⌊K/2⌋) = %v", counts, c, slices.Max(alpha), bound)
			}
		}
	}
	if err := (fusion.Options{DemoCap: ptr(2.0)}).Validate(); err == nil || !strings.Contains(err.Error(), "demo_cap") {
		t.Errorf("demo_cap with uniform weighting: %v", err)
	}
	if err := (fusion.Options{Weighting: fusion.WeightingDemos, DemoCap: ptr(0.5)}).Validate(); err == nil {
		t.Error("demo_cap 0.5 accepted")
	}
	if w := o.ClientWeights([]int{0, 0}); w != nil {
		t.Errorf("no demonstrations reported: %v, want nil (uniform)", w)
	}
	if w := (fusion.Options{}).ClientWeights([]int{1, 5}); w != nil {
		t.Errorf("uniform weighting: %v, want nil", w)
	}
}
