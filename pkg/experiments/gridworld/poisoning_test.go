package gridworld

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	gw "github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// TestDefaultPoisoningParses: the committed benchmark loads, with the
// acceptance attack and the three robust methods in it.
func TestDefaultPoisoningParses(t *testing.T) {
	p, err := LoadPoisoning(DefaultPoisoning, "poisoning.yaml", DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if p.Tolerance != 2 || p.Study.NumberOfSeeds != 10 || p.Study.Environments[0].NumberOfClients != 10 || p.Attacks[0].Scale != 1000 {
		t.Fatalf("benchmark %+v", p)
	}
	for _, m := range []string{"median", "trimmed-mean", "geometric-median", "mean", "normalized-mean", "normalized-mean/per-client", "barycenter"} {
		found := false
		for _, c := range p.Study.FusionMethods {
			found = found || c == m
		}
		if !found {
			t.Errorf("benchmark lacks method %s", m)
		}
	}
	for _, bad := range []struct{ yaml, want string }{
		{"tolerance: 0\nattacks: [{name: a, rationale: r, kind: scale, scale: 2, clients: 1}]\n", "tolerance"},
		{"tolerance: 2\nattacks: [{name: a, rationale: r, kind: boost, scale: 2, clients: 1}]\n", "kind"},
		{"tolerance: 2\nattacks: [{name: a, rationale: r, kind: scale, scale: 0, clients: 1}]\n", "scale"},
		{"tolerance: 2\nattacks: [{name: a, rationale: r, kind: spike, scale: -1, clients: 1}]\n", "attacks[0].scale = -1: a spike attack"},
		{"tolerance: 2\nattacks: [{name: a, rationale: r, kind: gaussian, scale: -2, clients: 1}]\n", "attacks[0].scale = -2: a gaussian attack"},
		{"tolerance: 2\nattacks: [{name: a, rationale: r, kind: scale, scale: 2, clients: 0}]\n", "clients"},
		{"tolerance: 2\nattacks: [{name: a, rationale: '', kind: scale, scale: 2, clients: 1}]\n", "rationale"},
		{"tolerance: 2\nstudy: {fusion_methods: [mean]}\nattacks: [{name: a, rationale: r, kind: scale, scale: 2, clients: 1}]\n", "fusion_methods"},
		{"tolerance: 2\n", "no attacks"},
	} {
		if _, err := LoadPoisoning([]byte(bad.yaml), "bad.yaml", DefaultConfig()); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: error %v, want one naming %s", bad.yaml, err, bad.want)
		}
	}
}

// TestPoisoningAgainstDirectFusion: on a small benchmark, the attacked mean
// is the plain average of the honest θ_i and the attacker's 1000·θ (its own
// θ learned directly with Env.LocalIRL), the attacked median stays in the
// honest coordinate range, and the attacker has the largest outlier score.
func TestPoisoningAgainstDirectFusion(t *testing.T) {
	data := []byte(`tolerance: 2
study:
  number_of_seeds: 2
  environments: [{grid_size: 5, number_of_clients: 4}]
  irl: {irl_iterations: 10}
  barycenter: {barycenter_iterations: 5}
  fusion_methods: [mean, barycenter, median, geometric-median]
attacks:
  - {name: scale-1000, rationale: r, kind: scale, scale: 1000, clients: 1}
  - {name: flip-mean, rationale: r, kind: flip-mean, scale: 5, clients: 1}
`)
	p, err := LoadPoisoning(data, "test", DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunPoisoning(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2*4 {
		t.Fatalf("%d rows, want 8", len(res.Rows))
	}
	c := p.Study
	e := c.Environments[0]
	for s := range c.NumberOfSeeds {
		seed := c.Seed + uint64(s)
		st, err := c.buildSetup(e, seed)
		if err != nil {
			t.Fatal(err)
		}
		honest := c.studyClients(st)
		h := &Fit{GridSize: e.GridSize, Seed: seed}
		if err := c.federate(context.Background(), "h", h, st, honest, purposePrivacy); err != nil {
			t.Fatal(err)
		}
		f, err := c.attacked(context.Background(), p.Attacks[0], e, seed, st, honest, h.Local)
		if err != nil {
			t.Fatal(err)
		}
		// The attacker: client 4 of the family, learning on its own.
		spec, _ := c.family(e).Client(seed, 4)
		env, err := NewEnv(spec, c.Expert.DiscountFactor)
		if err != nil {
			t.Fatal(err)
		}
		demos, _ := env.Demonstrations(stream(seed, e.GridSize, purposeDemo, 4), env.GreedyPolicy(c.Expert.TrueReward), c.Expert.EpisodesPerClient)
		own, err := env.LocalIRL(context.Background(), demos, c.IRL, c.IRL.IRLIterations, nil)
		if err != nil {
			t.Fatal(err)
		}
		sent := append(append([][]float64{}, h.Local...), []float64{1000 * own.Theta[0], 1000 * own.Theta[1]})
		want, err := fusion.Mean(sent, nil)
		if err != nil {
			t.Fatal(err)
		}
		approx.Slices(t, "attacked mean", f.Fused["mean"], want, 1e-15, 1e-12)
		for j := range 2 {
			lo, hi := h.Local[0][j], h.Local[0][j]
			for _, th := range h.Local {
				lo, hi = min(lo, th[j]), max(hi, th[j])
			}
			if v := f.Fused["median"][j]; v < lo || v > hi {
				t.Errorf("seed %d: attacked median θ[%d] = %v outside the honest range [%v, %v]", seed, j, v, lo, hi)
			}
		}
		if !attackersFlagged(f.OutlierScores["mean"], 4) {
			t.Errorf("seed %d: outlier scores %v do not flag the attacker", seed, f.OutlierScores["mean"])
		}
		if len(f.InDist["mean"]) != 4 || len(f.InDist[ColLocal]) != 4 {
			t.Errorf("evaluated %d environments, want the 4 honest ones", len(f.InDist["mean"]))
		}
	}
	// Breakdown by hand: the two attacks are different families, so no table;
	// with a second scale attack of 2 clients, mean survives f = 0 or more.
	if strings.Contains(string(PoisoningMarkdown(res)), "## Breakdown") {
		t.Error("breakdown table without a family of several f")
	}
	two := *res
	two.Poisoning.Attacks = append(slices.Clone(res.Poisoning.Attacks), Attack{Name: "scale-1000-f2", Kind: AttackScale, Scale: 1000, Clients: 2})
	two.Rows = slices.Clone(res.Rows)
	for _, m := range c.FusionMethods {
		d := 0.0
		if m == "median" {
			d = 6 // pretend the median fails at f = 2
		}
		two.Rows = append(two.Rows, PoisoningRow{Attack: "scale-1000-f2", Method: m, DiffIn: report.Paired{Mean: d}})
	}
	bd := breakdownMarkdown(&two)
	i := slices.IndexFunc(res.Rows, func(r PoisoningRow) bool { return r.Attack == "scale-1000" && r.Method == "median" })
	wantMedian := "| median | 0 |"
	if math.Abs(res.Rows[i].DiffIn.Mean) <= 5 && math.Abs(res.Rows[i].DiffHeld.Mean) <= 5 {
		wantMedian = "| median | 1 |"
	}
	if !strings.Contains(bd, "scale ×1000 (f = 1, 2)") || !strings.Contains(bd, wantMedian) {
		t.Errorf("breakdown table:\n%s\nwant %q", bd, wantMedian)
	}
	md := string(PoisoningMarkdown(res))
	for _, want := range []string{"## scale-1000", "| geometric-median |", "## flip-mean"} {
		if !strings.Contains(md, want) {
			t.Errorf("poisoning.md lacks %q", want)
		}
	}
	if _, err := PoisoningForestPNG(res); err != nil {
		t.Fatal(err)
	}
}

// TestAttackConstructions checks each attack's θ against its definition:
// scale and flip-mean exactly; the spike's reward by the least-squares
// optimality condition Φᵀ(Φθ − s) = 0 on the grid probe, with s of the
// attacker's own mass on one cell, and exactly the spike on one-hot
// features; the Gaussian draw's norm equal to the honest mean's,
// deterministic from its stream.
func TestAttackConstructions(t *testing.T) {
	spec, err := gw.DefaultFamily(5).Probe(3)
	if err != nil {
		t.Fatal(err)
	}
	probe, err := tasks.GridProbe(spec)
	if err != nil {
		t.Fatal(err)
	}
	phi := probe.Phi
	own := []float64{-0.8, 0.3}
	meanTheta := []float64{-1.2, 0.7}
	cell := spikeCell(spec)
	rng := func() *rand.Rand { return stream(3, 5, purposeAttack, 10) }

	approx.Slices(t, "scale", attackSend(Attack{Kind: AttackScale, Scale: 100}, meanTheta, phi, cell, rng())(own), []float64{-80, 30}, 0, 0)
	approx.Slices(t, "sign flip", attackSend(Attack{Kind: AttackScale, Scale: -1}, meanTheta, phi, cell, rng())(own), []float64{0.8, -0.3}, 0, 0)
	f := 11.0 // a variable: constant arithmetic would round once, at the end
	approx.Slices(t, "flip-mean", attackSend(Attack{Kind: AttackFlipMean, Scale: 11}, meanTheta, phi, cell, rng())(own), []float64{-f * meanTheta[0], -f * meanTheta[1]}, 0, 0)

	// Spike: the cell is the farthest from the goal (brute force over cells).
	gr, gc := spec.Goal/5, spec.Goal%5
	for c := range 25 {
		if d, dc := math.Hypot(float64(c/5-gr), float64(c%5-gc)), math.Hypot(float64(cell/5-gr), float64(cell%5-gc)); d > dc || (d == dc && c < cell) {
			t.Fatalf("spike cell %d (distance %v), but cell %d is at %v", cell, dc, c, d)
		}
	}
	n, d := phi.Dims()
	mass := 0.0
	for x := range n {
		mass += math.Abs(mat.Dot(phi.RowView(x), mat.NewVecDense(2, slices.Clone(own))))
	}
	th := attackSend(Attack{Kind: AttackSpike, Scale: 2}, meanTheta, phi, cell, rng())(own)
	s := make([]float64, n)
	for a := range 4 {
		s[cell*4+a] = 2 * mass / 4
	}
	if floats.Sum(s) != 2*mass || mass <= 0 {
		t.Fatalf("spike mass %v, want 2·%v", floats.Sum(s), mass)
	}
	// Optimality: every column of Φ is orthogonal to the residual Φθ − s.
	for j := range d {
		g := 0.0
		for x := range n {
			g += phi.At(x, j) * (phi.At(x, 0)*th[0] + phi.At(x, 1)*th[1] - s[x])
		}
		if math.Abs(g) > 1e-9*2*mass {
			t.Errorf("spike θ = %v: Φᵀ(Φθ − s)[%d] = %v, want 0", th, j, g)
		}
	}
	// Gaussian: norm of the honest mean, same stream same draw, another differs.
	g1 := attackSend(Attack{Kind: AttackGaussian, Scale: 1}, meanTheta, phi, cell, rng())(own)
	g2 := attackSend(Attack{Kind: AttackGaussian, Scale: 1}, meanTheta, phi, cell, rng())(own)
	g3 := attackSend(Attack{Kind: AttackGaussian, Scale: 1}, meanTheta, phi, cell, stream(3, 5, purposeAttack, 11))(own)
	approx.Equal(t, "gaussian norm", floats.Norm(g1, 2), floats.Norm(meanTheta, 2), 0, 1e-14)
	approx.Slices(t, "gaussian determinism", g2, g1, 0, 0)
	if slices.Equal(g1, g3) {
		t.Errorf("attackers 10 and 11 drew the same θ %v", g1)
	}
	approx.Equal(t, "gaussian ×3 norm", floats.Norm(attackSend(Attack{Kind: AttackGaussian, Scale: 3}, meanTheta, phi, cell, rng())(own), 2), 3*floats.Norm(meanTheta, 2), 0, 1e-14)
}
