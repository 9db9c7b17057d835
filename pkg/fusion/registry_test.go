package fusion_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/lattice"
	"github.com/fedirl/fedirl/pkg/ot"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// probe3 is a three-point line with features (1, x): rewards are affine in x.
func probe3() fusion.Probe {
	return fusion.Probe{Phi: mat.NewDense(3, 2, []float64{1, 0, 1, 1, 1, 2}), Lattice: lattice.UniformLattice(1, 3)}
}

func ptr[T any](v T) *T { return &v }

func TestMethodsRegistry(t *testing.T) {
	want := []string{"mean", "normalized-mean", "barycenter", "debiased", "median", "trimmed-mean",
		"geometric-median", "krum", "multi-krum", "reward-median", "reward-trimmed-mean", "wasserstein-median", "joint"}
	if got := fusion.Methods(); !slices.Equal(got, want) {
		t.Fatalf("Methods() = %v, want %v", got, want)
	}
	for _, name := range want {
		m, err := fusion.Lookup(name)
		if err != nil || m.Name() != name {
			t.Errorf("Lookup(%q) = %v, %v", name, m, err)
		}
		if err := (fusion.Options{Method: name}).Validate(); err != nil {
			t.Errorf("method %q refused: %v", name, err)
		}
	}
	if c, ok := fusion.Canonical("barycentric"); !ok || c != "barycenter" {
		t.Errorf("alias barycentric → %q, %v", c, ok)
	}
	if c, ok := fusion.Canonical(""); !ok || c != "mean" {
		t.Errorf("empty method → %q, %v", c, ok)
	}
	err := fusion.Options{Method: "fedavg"}.Validate()
	if err == nil || !strings.Contains(err.Error(), "fusion.method") || !strings.Contains(err.Error(), "geometric-median") {
		t.Errorf("unknown method error does not name the key and the known methods: %v", err)
	}
}

func TestOptionsRefuseKeysTheMethodCannotUse(t *testing.T) {
	for _, c := range []struct {
		opt  fusion.Options
		want string // substring of the error; "" means accepted
	}{
		{fusion.Options{Method: "trimmed-mean", TrimFraction: ptr(0.0)}, ""},
		{fusion.Options{Method: "reward-trimmed-mean", TrimFraction: ptr(0.3)}, ""},
		{fusion.Options{Method: "trimmed-mean", TrimFraction: ptr(0.5)}, "trim_fraction"},
		{fusion.Options{Method: "trimmed-mean", TrimFraction: ptr(-0.1)}, "trim_fraction"},
		{fusion.Options{Method: "median", TrimFraction: ptr(0.1)}, "trim_fraction"},
		{fusion.Options{Method: "krum", Byzantine: ptr(0)}, ""},
		{fusion.Options{Method: "multi-krum", Byzantine: ptr(-1)}, "byzantine"},
		{fusion.Options{Method: "mean", Byzantine: ptr(1)}, "byzantine"},
		{fusion.Options{Method: "normalized-mean", SigmaMode: "per-client"}, ""},
		{fusion.Options{Method: "barycentric", SigmaMode: "shared", Sigma: 2}, ""},
		{fusion.Options{Method: "barycenter", SigmaMode: "per-client", Sigma: 2}, "fusion.sigma"},
		{fusion.Options{Method: "median", SigmaMode: "per-client"}, "sigma_mode"},
		{fusion.Options{Method: "mean", SigmaMode: "shared"}, "sigma_mode"},
		{fusion.Options{Method: "barycenter", SigmaMode: "own"}, "sigma_mode"},
		{fusion.Options{Method: "debiased", Solver: ot.Debiased}, ""},
		{fusion.Options{Method: "debiased", Solver: ot.Paper}, "fusion.solver"},
	} {
		err := c.opt.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v refused: %v", c.opt, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want one naming %s", c.opt, err, c.want)
		}
	}
	o, err := fusion.DecodeOptions([]byte(`{"method":"trimmed-mean","trim_fraction":0}`))
	if err != nil || o.TrimFraction == nil || *o.TrimFraction != 0 {
		t.Errorf("explicit trim_fraction 0 not honoured: %+v, %v", o, err)
	}
}

// TestNormalizedMeanByHand: on the three-point line with Φ = [1 x], clients
// θ_1 = (0, 1) and θ_2 = (1, −1) have rewards (0, 1, 2) and (1, 0, −1).
// Shared σ = 2: p_1 = (2, 3, 4)/9, p_2 = (3, 2, 1)/6, p̄ = (13/36, 1/3, 11/36),
// Z = (9 + 6)/2 = 7.5, r̄ = 7.5 p̄ − 2 = (17, 12, 7)/24, affine in x, so
// θ = (17/24, −5/24) exactly. Per-client σ: σ_1 = AutoSigma(r_1) = 0.2,
// σ_2 = 1.2, p_1 = (0.2, 1.2, 2.2)/3.6, p_2 = (2.2, 1.2, 0.2)/3.6, p̄ = 1/3
// everywhere, Z = 3.6, σ = 0.7, r̄ = 0.5: θ = (0.5, 0).
func TestNormalizedMeanByHand(t *testing.T) {
	p := probe3()
	thetas := [][]float64{{0, 1}, {1, -1}}
	out, err := fusion.Fuse(p, thetas, nil, fusion.Options{Method: "normalized-mean", Sigma: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Reward
	approx.Slices(t, "p̄", r.Barycenter, []float64{13.0 / 36, 1.0 / 3, 11.0 / 36}, 1e-15, 0)
	approx.Equal(t, "Z", r.Z, 7.5, 1e-15, 0)
	approx.Slices(t, "r̄", r.Reward, []float64{17.0 / 24, 12.0 / 24, 7.0 / 24}, 1e-14, 0)
	approx.Slices(t, "θ", out.Theta, []float64{17.0 / 24, -5.0 / 24}, 1e-14, 0)
	if out.Method != "normalized-mean" || out.Barycentric != nil {
		t.Errorf("method %q, barycentric %v", out.Method, out.Barycentric)
	}

	out, err = fusion.Fuse(p, thetas, nil, fusion.Options{Method: "normalized-mean", SigmaMode: "per-client"})
	if err != nil {
		t.Fatal(err)
	}
	r = out.Reward
	approx.Slices(t, "σ_i", r.ClientSigma, []float64{0.2, 1.2}, 1e-15, 0)
	approx.Slices(t, "Z_i", r.ClientZ, []float64{3.6, 3.6}, 1e-14, 0)
	approx.Slices(t, "per-client p̄", r.Barycenter, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-15, 0)
	approx.Equal(t, "σ", r.Sigma, 0.7, 1e-15, 0)
	approx.Slices(t, "per-client θ", out.Theta, []float64{0.5, 0}, 1e-14, 0)
}

// TestPerClientSigmaScaleInvariance: scaling one client's θ by c > 0 leaves
// its measure unchanged under per-client σ, so the combined measure p̄ of the
// normalized mean and of the barycenter does not move and the fused reward
// keeps its shape (r̄ changes only by a positive affine map, through Σα_iZ_i
// and Σα_iσ_i). Under shared σ the same client's huge range flattens every
// other measure and moves p̄.
func TestPerClientSigmaScaleInvariance(t *testing.T) {
	p := probe5(t)
	rng := rand.New(rand.NewPCG(3, 4))
	thetas := make([][]float64, 5)
	for i := range thetas {
		thetas[i] = []float64{-0.8 + 0.2*rng.NormFloat64(), 0.35 + 0.1*rng.NormFloat64()}
	}
	const c = 1000.0
	scaled := slices.Clone(thetas)
	scaled[0] = []float64{c * thetas[0][0], c * thetas[0][1]}

	// The measure itself, computed independently of the fusion path.
	measure := func(th []float64) []float64 {
		r := make([]float64, p.Lattice.Len())
		for x := range r {
			r[x] = p.Phi.At(x, 0)*th[0] + p.Phi.At(x, 1)*th[1]
		}
		m, _, err := fusion.ShiftNormalize(nil, r, fusion.AutoSigma(r))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	approx.Slices(t, "own-σ measure of c·θ", measure(scaled[0]), measure(thetas[0]), 1e-15, 1e-12)

	for _, method := range []string{"normalized-mean", "barycenter", "reward-median", "reward-trimmed-mean"} {
		opt := fusion.Options{Method: method, SigmaMode: fusion.SigmaPerClient}
		a, err := fusion.Fuse(p, thetas, nil, opt)
		if err != nil {
			t.Fatal(err)
		}
		b, err := fusion.Fuse(p, scaled, nil, opt)
		if err != nil {
			t.Fatal(err)
		}
		approx.Slices(t, method+" per-client p̄ after scaling a client", b.Reward.Barycenter, a.Reward.Barycenter, 1e-15, 1e-12)
		// r̄_b = s·r̄_a + t with s > 0: fit s, t on two points, check all.
		ra, rb := a.Reward.Reward, b.Reward.Reward
		lo, hi := slices.Index(ra, slices.Min(ra)), slices.Index(ra, slices.Max(ra))
		s := (rb[hi] - rb[lo]) / (ra[hi] - ra[lo])
		off := rb[lo] - s*ra[lo]
		if !(s > 0) {
			t.Fatalf("%s: fused reward flipped (slope %v)", method, s)
		}
		for x := range ra {
			approx.Equal(t, method+" r̄ affine in the unscaled r̄", rb[x], s*ra[x]+off, 1e-9*math.Abs(s), 1e-9)
		}
	}

	// Shared σ: the huge client sets σ, every honest measure flattens.
	a, err := fusion.Fuse(p, thetas, nil, fusion.Options{Method: "normalized-mean"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := fusion.Fuse(p, scaled, nil, fusion.Options{Method: "normalized-mean"})
	if err != nil {
		t.Fatal(err)
	}
	spread := func(sigma float64, th []float64) float64 {
		r := make([]float64, p.Lattice.Len())
		for x := range r {
			r[x] = p.Phi.At(x, 0)*th[0] + p.Phi.At(x, 1)*th[1]
		}
		m, _, err := fusion.ShiftNormalize(nil, r, sigma)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Max(m) - slices.Min(m)
	}
	for i := 1; i < len(thetas); i++ {
		before, after := spread(a.Reward.Sigma, thetas[i]), spread(b.Reward.Sigma, thetas[i])
		if !(after < before/100) {
			t.Errorf("shared σ: honest client %d's measure spread %.3g → %.3g, expected flattening by > 100×", i, before, after)
		}
	}
	if d := approx.MaxAbsDiff(a.Reward.Barycenter, b.Reward.Barycenter); d < 1e-3 {
		t.Errorf("shared σ: p̄ moved only %.2g when one client scaled by %g", d, c)
	}
}

// sortedColumn returns the j-th entries of vs, sorted.
func sortedColumn(vs [][]float64, j int) []float64 {
	col := make([]float64, len(vs))
	for i, v := range vs {
		col[i] = v[j]
	}
	slices.Sort(col)
	return col
}

func randomThetas(rng *rand.Rand, k, d int) [][]float64 {
	out := make([][]float64, k)
	for i := range out {
		out[i] = make([]float64, d)
		for j := range out[i] {
			out[i][j] = rng.NormFloat64()
		}
	}
	return out
}

// TestMedianAndTrimmedMeanBySorting compares with the textbook definitions on
// sorted columns (uniform weights) and with hand values (weights, fractional
// trimming).
func TestMedianAndTrimmedMeanBySorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{1, 2, 7, 10, 11} {
		thetas := randomThetas(rng, k, 4)
		med, err := fusion.Fuse(fusion.Probe{}, thetas, nil, fusion.Options{Method: "median"})
		if err != nil {
			t.Fatal(err)
		}
		for j := range 4 {
			col := sortedColumn(thetas, j)
			want := col[k/2]
			if k%2 == 0 {
				want = (col[k/2-1] + col[k/2]) / 2
			}
			approx.Equal(t, "median", med.Theta[j], want, 1e-15, 0)
		}
		for _, beta := range []float64{0, 0.1, 0.2, 0.4} {
			drop := int(beta * float64(k))
			if float64(drop) != beta*float64(k) {
				continue // fractional cut: checked by hand below
			}
			tm, err := fusion.Fuse(fusion.Probe{}, thetas, nil, fusion.Options{Method: "trimmed-mean", TrimFraction: &beta})
			if err != nil {
				t.Fatal(err)
			}
			for j := range 4 {
				col := sortedColumn(thetas, j)[drop : k-drop]
				want := 0.0
				for _, v := range col {
					want += v
				}
				approx.Equal(t, "trimmed mean", tm.Theta[j], want/float64(len(col)), 1e-14, 1e-14)
			}
		}
	}
	for _, c := range []struct {
		method string
		beta   *float64
		vals   []float64
		w      []float64
		want   float64
	}{
		{"median", nil, []float64{3, 1, 2}, []float64{0.2, 0.6, 0.2}, 1},   // weight 0.6 at 1
		{"median", nil, []float64{4, 1, 2, 3}, []float64{1, 1, 1, 1}, 2.5}, // even K
		{"median", nil, []float64{1, 2, 3, 100}, []float64{1, 1, 1, 0}, 2}, // zero weight ignored
		{"median", nil, []float64{1, 2, 3}, []float64{1, 1, 2}, 2.5},       // weight 1/2 on each side of (2, 3)
		{"trimmed-mean", ptr(0.125), []float64{4, 1, 2, 3}, nil, 7.5 / 3},  // (0.5·1 + 2 + 3 + 0.5·4)/3
		{"trimmed-mean", ptr(0.25), []float64{1, 2, 3, 10}, []float64{1, 1, 1, 1}, 2.5},
		{"trimmed-mean", ptr(0.2), []float64{1, 2, 3}, []float64{0.5, 0.25, 0.25}, (0.3*1 + 0.25*2 + 0.05*3) / 0.6},
	} {
		thetas := make([][]float64, len(c.vals))
		for i, v := range c.vals {
			thetas[i] = []float64{v}
		}
		out, err := fusion.Fuse(fusion.Probe{}, thetas, c.w, fusion.Options{Method: c.method, TrimFraction: c.beta})
		if err != nil {
			t.Fatal(err)
		}
		approx.Equal(t, c.method+" by hand", out.Theta[0], c.want, 1e-14, 1e-14)
	}
}

// TestGeometricMedianOptimality checks the optimality condition of
// argmin Σ α_i ‖y − θ_i‖: the weighted unit vectors sum to ≈ 0 at y, or y is
// a client's θ_j with ‖Σ_{i≠j} α_i (y − θ_i)/‖y − θ_i‖‖ ≤ α_j.
func TestGeometricMedianOptimality(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 20 {
		k, d := 3+rng.IntN(10), 1+rng.IntN(4)
		thetas := randomThetas(rng, k, d)
		w := make([]float64, k)
		for i := range w {
			w[i] = 0.1 + rng.Float64()
		}
		if trial%4 == 0 {
			w[0] = 10 // a majority client: the median is its θ
		}
		out, err := fusion.Fuse(fusion.Probe{}, thetas, w, fusion.Options{Method: "geometric-median"})
		if err != nil {
			t.Fatal(err)
		}
		y := out.Theta
		alpha, _ := fusion.Weights(w, k)
		grad := make([]float64, d)
		atPoint := 0.0
		for i, x := range thetas {
			dist := 0.0
			for j := range d {
				dist += (y[j] - x[j]) * (y[j] - x[j])
			}
			dist = math.Sqrt(dist)
			if dist < 1e-12 {
				atPoint += alpha[i]
				continue
			}
			for j := range d {
				grad[j] += alpha[i] * (y[j] - x[j]) / dist
			}
		}
		g := 0.0
		for _, v := range grad {
			g += v * v
		}
		g = math.Sqrt(g)
		if g > fusion.GeometricMedianTol*10 && g > atPoint {
			t.Errorf("trial %d (K=%d, d=%d): gradient norm %.3g at y (weight at y %.3g)", trial, k, d, g, atPoint)
		}
		if trial%4 == 0 {
			approx.Slices(t, "majority client's θ", y, thetas[0], 1e-12, 1e-12)
		}
	}
	// Collinear points: the geometric median is the ordinary median.
	out, err := fusion.Fuse(fusion.Probe{}, [][]float64{{0, 0}, {1, 2}, {10, 20}}, nil, fusion.Options{Method: "geometric-median"})
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "collinear median", out.Theta, []float64{1, 2}, 1e-12, 0)
}

// TestKrumByScoreDefinition: the score of client i is the smallest sum of
// squared distances to K − f − 2 other clients, found here by enumerating
// every subset; krum picks the lowest score, multi-krum averages the K − f
// lowest.
func TestKrumByScoreDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 10 {
		k := 5 + rng.IntN(4)
		thetas := randomThetas(rng, k, 3)
		thetas[rng.IntN(k)] = []float64{50, -50, 50} // a planted attacker
		f := (k - 3) / 2
		if trial%2 == 1 {
			f = 1
		}
		n := k - f - 2
		scores := make([]float64, k)
		for i := range k {
			var others []int
			for j := range k {
				if j != i {
					others = append(others, j)
				}
			}
			best := math.Inf(1)
			for mask := 0; mask < 1<<len(others); mask++ {
				if popcount(mask) != n {
					continue
				}
				s := 0.0
				for b, j := range others {
					if mask&(1<<b) != 0 {
						for c := range 3 {
							s += (thetas[i][c] - thetas[j][c]) * (thetas[i][c] - thetas[j][c])
						}
					}
				}
				best = min(best, s)
			}
			scores[i] = best
		}
		order := make([]int, k)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(scores[a], scores[b]) })
		kr, err := fusion.Fuse(fusion.Probe{}, thetas, nil, fusion.Options{Method: "krum", Byzantine: &f})
		if err != nil {
			t.Fatal(err)
		}
		approx.Slices(t, "krum", kr.Theta, thetas[order[0]], 0, 0)
		mk, err := fusion.Fuse(fusion.Probe{}, thetas, nil, fusion.Options{Method: "multi-krum", Byzantine: &f})
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, 3)
		for _, i := range order[:k-f] {
			for c := range 3 {
				want[c] += thetas[i][c] / float64(k-f)
			}
		}
		approx.Slices(t, "multi-krum", mk.Theta, want, 1e-13, 1e-13)
		if mk.Theta[0] > 40 {
			t.Errorf("trial %d: multi-krum kept the planted attacker", trial)
		}
	}
	if _, err := fusion.Fuse(fusion.Probe{}, randomThetas(rng, 6, 2), nil, fusion.Options{Method: "krum", Byzantine: ptr(2)}); err == nil ||
		!strings.Contains(err.Error(), "K > 2f + 2") {
		t.Errorf("krum with K = 6, f = 2: error %v, want the K > 2f + 2 condition", err)
	}
}

func popcount(m int) int {
	n := 0
	for ; m != 0; m &= m - 1 {
		n++
	}
	return n
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestBreakdown: f < K/2 arbitrary vectors cannot move the median outside the
// honest coordinate range, nor f < βK the trimmed mean; the geometric median
// stays within 2h/(2h − 1)·R of any point z, R the largest honest distance
// to z and h > 1/2 the honest weight (compare f(y) ≤ f(z)).
func TestBreakdown(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 50 {
		k := 3 + rng.IntN(10)
		f := (k - 1) / 2
		honest := randomThetas(rng, k-f, 3)
		thetas := slices.Clone(honest)
		for range f {
			scale := math.Pow(10, float64(rng.IntN(10)))
			v := make([]float64, 3)
			for j := range v {
				v[j] = scale * rng.NormFloat64()
			}
			thetas = append(thetas, v)
		}
		rng.Shuffle(len(thetas), func(i, j int) { thetas[i], thetas[j] = thetas[j], thetas[i] })
		inRange := func(name string, y []float64, hs [][]float64) {
			for j := range y {
				col := sortedColumn(hs, j)
				if y[j] < col[0] || y[j] > col[len(col)-1] {
					t.Errorf("trial %d (K=%d, f=%d): %s coordinate %d = %g outside the honest range [%g, %g]", trial, k, f, name, j, y[j], col[0], col[len(col)-1])
				}
			}
		}
		med, err := fusion.Fuse(fusion.Probe{}, thetas, nil, fusion.Options{Method: "median"})
		if err != nil {
			t.Fatal(err)
		}
		inRange("median", med.Theta, honest)
		beta := (float64(f) + 0.5) / float64(k)
		if beta < 0.5 {
			tm, err := fusion.Fuse(fusion.Probe{}, thetas, nil, fusion.Options{Method: "trimmed-mean", TrimFraction: &beta})
			if err != nil {
				t.Fatal(err)
			}
			inRange("trimmed mean", tm.Theta, honest)
		}
		gm, err := fusion.Fuse(fusion.Probe{}, thetas, nil, fusion.Options{Method: "geometric-median"})
		if err != nil {
			t.Fatal(err)
		}
		z, _ := fusion.Mean(honest, nil)
		r := 0.0
		for _, x := range honest {
			r = math.Max(r, dist(x, z))
		}
		h := float64(k-f) / float64(k)
		if bound := 2 * h / (2*h - 1) * r; dist(gm.Theta, z) > bound*(1+1e-9) {
			t.Errorf("trial %d: geometric median at distance %g from the honest mean, bound %g", trial, dist(gm.Theta, z), bound)
		}
	}
}

func dist(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}

// TestEveryMethodIgnoresZeroWeightClients: a client of weight 0 has no
// influence on any method (reward-space methods with per-client σ, since a
// shared AutoSigma is computed over every client), and K identical clients
// fuse back to their θ.
func TestEveryMethodIgnoresZeroWeightClients(t *testing.T) {
	p := probe5(t)
	rng := rand.New(rand.NewPCG(13, 14))
	thetas := make([][]float64, 6)
	w := make([]float64, 6)
	for i := range thetas {
		thetas[i] = []float64{-0.8 + 0.2*rng.NormFloat64(), 0.35 + 0.1*rng.NormFloat64()}
		w[i] = 0.5 + rng.Float64()
	}
	withBad := append(slices.Clone(thetas), []float64{400, -900})
	wBad := append(slices.Clone(w), 0)
	for _, name := range fusion.Methods() {
		m, _ := fusion.Lookup(name)
		if m.Space() == fusion.JointSpace {
			continue // fuses no θ_i (TestJointFusesNoTheta)
		}
		opt := fusion.Options{Method: name}
		if m.Space() == fusion.RewardSpace {
			opt.SigmaMode = fusion.SigmaPerClient
		}
		a, err := fusion.Fuse(p, thetas, w, opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := fusion.Fuse(p, withBad, wBad, opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		approx.Slices(t, name+" θ with a zero-weight client", b.Theta, a.Theta, 1e-9, 1e-9)

		same := [][]float64{thetas[0], thetas[0], thetas[0]}
		if name == "barycenter" {
			continue // IBP at ε = 0.5 blurs (TestBarycentricIdenticalClients)
		}
		c, err := fusion.Fuse(p, same, nil, opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		approx.Slices(t, name+" θ of identical clients", c.Theta, thetas[0], 1e-6, 1e-6)
	}
}

// TestDistances: the outlier score is ‖θ_i − θ̄‖ without a probe and the RMS
// reward difference on the probe with one.
func TestDistances(t *testing.T) {
	thetas := [][]float64{{0, 1}, {1, -1}, {3, 3}}
	out, err := fusion.Fuse(fusion.Probe{}, thetas, nil, fusion.Options{Method: "median"})
	if err != nil {
		t.Fatal(err)
	}
	// median θ̄ = (1, 1)
	approx.Slices(t, "θ distances", out.Distances, []float64{1, 2, math.Sqrt(8)}, 1e-15, 0)
	if out.DistanceSpace != "theta" {
		t.Errorf("space %q", out.DistanceSpace)
	}
	out, err = fusion.Fuse(probe3(), thetas, nil, fusion.Options{Method: "median"})
	if err != nil {
		t.Fatal(err)
	}
	// rewards minus fused (1, 2, 3): (−1, −1, −1), (0, −2, −4), (2, 4, 6)
	approx.Slices(t, "reward distances", out.Distances, []float64{1, math.Sqrt(20.0 / 3), math.Sqrt(56.0 / 3)}, 1e-14, 0)
	if out.DistanceSpace != "reward" {
		t.Errorf("space %q", out.DistanceSpace)
	}
}

func TestFuseCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := fusion.FuseContext(ctx, probe5(t), [][]float64{{-0.8, 0.35}, {-0.5, 0.2}}, nil, fusion.Options{Method: "debiased"})
	if err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("cancelled fusion: %v", err)
	}
}

// BenchmarkFuseMethods runs every registry method on the 20×20 grid-world
// probe (1600 points) with K = 20 clients and reports fusions per second.
func BenchmarkFuseMethods(b *testing.B) {
	spec, err := gridworld.DefaultFamily(20).Probe(1)
	if err != nil {
		b.Fatal(err)
	}
	p, err := tasks.GridProbe(spec)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	thetas := make([][]float64, 20)
	for i := range thetas {
		thetas[i] = []float64{-0.05 * rng.Float64(), 0.03 * rng.Float64()}
	}
	for _, name := range fusion.Methods() {
		if fusion.IsRoundMethod(name) {
			continue
		}
		b.Run(name, func(b *testing.B) {
			opt := fusion.Options{Method: name, MaxIter: 200}
			if m, _ := fusion.Lookup(name); m.Space() == fusion.ThetaSpace || name == fusion.MethodWassersteinMedian {
				opt.MaxIter = 0 // no solver budget (wasserstein-median runs its own schedule)
			}
			for b.Loop() {
				if _, err := fusion.Fuse(p, thetas, nil, opt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fusions/s")
		})
	}
}

// TestRewardMedianAndTrimmedMeanBySorting: reward-median and
// reward-trimmed-mean combine the clients' measures point by point exactly
// as sorting them does, and map back with the median (trimmed mean) Z of
// the clients' Z_i and, under per-client σ, the σ that gives the fused
// reward the median (trimmed mean) of the clients' mean/std ratios on the
// probe: mean(r̄)/std(r̄) = stat(q_i), checked on r̄ itself.
func TestRewardMedianAndTrimmedMeanBySorting(t *testing.T) {
	p := probe5(t)
	rng := rand.New(rand.NewPCG(15, 16))
	thetas := make([][]float64, 5)
	for i := range thetas {
		thetas[i] = []float64{-0.8 + 0.3*rng.NormFloat64(), 0.35 + 0.2*rng.NormFloat64()}
	}
	thetas[4] = []float64{900, -400}
	n := p.Lattice.Len()
	ms := make([][]float64, len(thetas))
	zs, ss, qs := make([]float64, len(thetas)), make([]float64, len(thetas)), make([]float64, len(thetas))
	meanStd := func(r []float64) (float64, float64) {
		m := 0.0
		for _, v := range r {
			m += v / float64(len(r))
		}
		s := 0.0
		for _, v := range r {
			s += (v - m) * (v - m) / float64(len(r))
		}
		return m, math.Sqrt(s)
	}
	for i, th := range thetas {
		r := make([]float64, n)
		for x := range r {
			r[x] = p.Phi.At(x, 0)*th[0] + p.Phi.At(x, 1)*th[1]
		}
		m, sd := meanStd(r)
		qs[i] = m / sd
		ss[i] = fusion.AutoSigma(r)
		var err error
		if ms[i], zs[i], err = fusion.ShiftNormalize(nil, r, ss[i]); err != nil {
			t.Fatal(err)
		}
	}
	median := func(v []float64) float64 { // K = 5: the third smallest
		s := slices.Clone(v)
		slices.Sort(s)
		return s[2]
	}
	trimmed := func(v []float64) float64 { // β = 0.2, K = 5: drop one at each end
		s := slices.Clone(v)
		slices.Sort(s)
		return (s[1] + s[2] + s[3]) / 3
	}
	for _, c := range []struct {
		method string
		stat   func([]float64) float64
	}{{"reward-median", median}, {"reward-trimmed-mean", trimmed}} {
		out, err := fusion.Fuse(p, thetas, nil, fusion.Options{Method: c.method, SigmaMode: "per-client"})
		if err != nil {
			t.Fatal(err)
		}
		col := make([]float64, len(thetas))
		want := make([]float64, n)
		for x := range n {
			for i := range thetas {
				col[i] = ms[i][x]
			}
			want[x] = c.stat(col)
		}
		approx.Slices(t, c.method+" p̄", out.Reward.Barycenter, want, 1e-15, 1e-12)
		approx.Equal(t, c.method+" Z", out.Reward.Z, c.stat(zs), 0, 1e-12)
		r := make([]float64, n)
		for x := range r {
			r[x] = out.Reward.Z*want[x] - out.Reward.Sigma
		}
		m, sd := meanStd(r)
		approx.Equal(t, c.method+" mean/std of r̄", m/sd, c.stat(qs), 1e-12, 1e-9)
		theta, err := fusion.BackProject(p.Phi, r)
		if err != nil {
			t.Fatal(err)
		}
		approx.Slices(t, c.method+" θ", out.Theta, theta, 1e-12, 1e-9)
	}
}
