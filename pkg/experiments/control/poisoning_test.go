package control

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
)

// TestAttackConfigValidation: the committed poisoning regimes load over the
// sweep's base, with one honest regime and the four attacks; bad attack
// keys are refused with errors naming them.
func TestAttackConfigValidation(t *testing.T) {
	data, err := os.ReadFile("../../../configs/control-poisoning.yaml")
	if err != nil {
		t.Fatal(err)
	}
	regimes, err := LoadRegimes(data, "control-poisoning.yaml", SweepBase(false))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range regimes {
		c, err := ApplyRegime(r, SweepBase(false))
		if err != nil {
			t.Fatal(err)
		}
		if c.NumberOfSeeds != 3 || c.Seed != 1 || !strings.Contains(strings.Join(c.Methods, ","), "geometric-median") {
			t.Errorf("regime %s: seeds %d from %d, methods %v", r.Name, c.NumberOfSeeds, c.Seed, c.Methods)
		}
		if c.Attack != nil {
			kinds = append(kinds, c.Attack.Kind)
		}
	}
	if strings.Join(kinds, ",") != "spike,scale,sign-flip,gaussian" {
		t.Errorf("attacks %v", kinds)
	}
	for _, tc := range []struct {
		a    *AttackConfig
		want string
	}{
		{&AttackConfig{Clients: 1, Kind: "boost", Scale: 1}, `attack.kind: "boost"`},
		{&AttackConfig{Clients: 0, Kind: AttackScale, Scale: 1}, "attack.clients: 0"},
		{&AttackConfig{Clients: 4, Kind: AttackScale, Scale: 1}, "attack.clients: 4"},
		{&AttackConfig{Clients: 1, Kind: AttackSpike, Scale: -1}, "attack.scale: -1"},
		{&AttackConfig{Clients: 1, Kind: AttackGaussian, Scale: math.Inf(1)}, "attack.scale: +Inf"},
	} {
		c := DefaultConfig()
		c.Attack = tc.a
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", *tc.a, err, tc.want)
		}
	}
	c := DefaultConfig()
	c.Methods = []string{"median", "krum", "reward-trimmed-mean", "true"}
	c.Attack = &AttackConfig{Clients: 1, Kind: AttackSpike, Scale: 1}
	if err := c.Validate(); err != nil {
		t.Errorf("robust methods with a spike attack: %v", err)
	}
}

// TestAttackTheta checks each attack, through Study.poison on Pendulum's
// quick probe, against its definition: scale and sign-flip exactly, honest
// clients untouched; the spike by the least-squares optimality condition
// Φᵀ(Φθ − s) = 0, s the attacker's own reward mass on the cell where its
// own reward (mean over action levels) is lowest; the Gaussian draw's norm
// equal to the honest mean's, the same draw for the same seed and another
// for another seed.
func TestAttackTheta(t *testing.T) {
	st, err := New(QuickConfig(), t.TempDir(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.probe("Pendulum-v1", "paper")
	if err != nil {
		t.Fatal(err)
	}
	probe, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	g, err := discretize.New(p.Grid)
	if err != nil {
		t.Fatal(err)
	}
	n, d := probe.Phi.Dims()
	A := g.NumActions()
	rng := rand.New(rand.NewPCG(7, 0))
	thetas := make([][]float64, 4)
	for i := range thetas {
		thetas[i] = make([]float64, d)
		for j := range d {
			thetas[i][j] = rng.NormFloat64()
		}
	}
	honestMean := make([]float64, d)
	for _, th := range thetas[:3] {
		floats.AddScaled(honestMean, 1.0/3, th)
	}
	sent := func(a AttackConfig, seed uint64) [][]float64 {
		t.Helper()
		var cl []federation.LocalClient
		for i, th := range thetas {
			cl = append(cl, federation.LocalClient{ID: fmt.Sprint(i), Learner: fixedLearner{IRLFile{Theta: slices.Clone(th), DemoSteps: 10}}})
		}
		if err := st.poison(cl, fusionSpec{Probe: p, Attack: &a}, "Pendulum-v1", seed); err != nil {
			t.Fatal(err)
		}
		out := make([][]float64, len(cl))
		for i, c := range cl {
			out[i] = c.Learner.(fixedLearner).fit.Theta
			if i < 3 {
				approx.Slices(t, fmt.Sprintf("%s: honest client %d", a.Kind, i), out[i], thetas[i], 0, 0)
			}
		}
		return out
	}
	scaled := make([]float64, d)
	flipped := make([]float64, d)
	for j, v := range thetas[3] {
		scaled[j], flipped[j] = 100*v, -2*v
	}
	approx.Slices(t, "scale", sent(AttackConfig{1, AttackScale, 100}, 1)[3], scaled, 0, 0)
	approx.Slices(t, "sign-flip", sent(AttackConfig{1, AttackSignFlip, 2}, 1)[3], flipped, 0, 0)

	// Spike: brute-force the cell and the mass, then check optimality.
	r := features.Reward(nil, probe.Phi, thetas[3])
	mass, cell := 0.0, 0
	for x, v := range r {
		mass += math.Abs(v)
		if c := x / A; floats.Sum(r[c*A:(c+1)*A]) < floats.Sum(r[cell*A:(cell+1)*A]) {
			cell = c
		}
	}
	spike := make([]float64, n)
	for a := range A {
		spike[cell*A+a] = 3 * mass / float64(A)
	}
	th := sent(AttackConfig{1, AttackSpike, 3}, 1)[3]
	res := features.Reward(nil, probe.Phi, th)
	floats.Sub(res, spike)
	for j := range d {
		g := 0.0
		for x := range n {
			g += probe.Phi.At(x, j) * res[x]
		}
		if math.Abs(g) > 1e-8*mass {
			t.Errorf("spike: Φᵀ(Φθ − s)[%d] = %v, want 0 (mass %v on cell %d)", j, g, 3*mass, cell)
		}
	}

	// Gaussian: the honest mean's norm (×2), deterministic from the seed.
	g1, g2, g3 := sent(AttackConfig{1, AttackGaussian, 2}, 1)[3], sent(AttackConfig{1, AttackGaussian, 2}, 1)[3], sent(AttackConfig{1, AttackGaussian, 2}, 2)[3]
	approx.Equal(t, "gaussian norm", floats.Norm(g1, 2), 2*floats.Norm(honestMean, 2), 0, 1e-14)
	approx.Slices(t, "gaussian, same seed", g2, g1, 0, 0)
	if slices.Equal(g1, g3) {
		t.Error("gaussian: seeds 1 and 2 drew the same θ")
	}
	// Two attackers: clients 2 and 3 attack, the mean is of clients 0 and 1.
	var cl []federation.LocalClient
	for i, th := range thetas {
		cl = append(cl, federation.LocalClient{ID: fmt.Sprint(i), Learner: fixedLearner{IRLFile{Theta: slices.Clone(th), DemoSteps: 10}}})
	}
	if err := st.poison(cl, fusionSpec{Probe: p, Attack: &AttackConfig{2, AttackScale, 10}}, "Pendulum-v1", 1); err != nil {
		t.Fatal(err)
	}
	for i, c := range cl {
		want := slices.Clone(thetas[i])
		if i >= 2 {
			floats.Scale(10, want)
		}
		approx.Slices(t, fmt.Sprintf("two attackers: client %d", i), c.Learner.(fixedLearner).fit.Theta, want, 0, 0)
	}
}

// TestPoisoningRows: an attacked regime is compared with the regime of the
// same config without attack, method by method, per seed; local, projected
// and true are left out; a regime without an honest twin is an error.
func TestPoisoningRows(t *testing.T) {
	base := SweepBase(true)
	att := base
	att.Attack = &AttackConfig{1, AttackSpike, 1}
	row := func(method string, norm []float64, epic []float64) Row {
		return Row{Env: "Pendulum-v1", Lattice: "paper", Method: method, Group: "train", PerSeedNormalized: norm,
			PerSeedEPIC: map[string]nullable{EPICCoverages[MetricEPICModel]: epic}}
	}
	honest := &Summary{Rows: []Row{row("local", []float64{1, 1}, nil), row("mean", []float64{0.9, 0.8}, []float64{0.1, 0.2}), row("median", []float64{0.7, 0.9}, nil)}}
	attacked := &Summary{Rows: []Row{row("local", []float64{1, 1}, nil), row("mean", []float64{0.5, 0.2}, []float64{0.4, 0.3}), row("median", []float64{0.7, math.NaN()}, nil)}}
	rows, err := poisoningRows([]SweepResult{{Regime: "honest", Config: base, summary: honest}, {Regime: "spike", Config: att, summary: attacked}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Method != "mean" || rows[0].Metric != MetricNormalizedReturn || rows[1].Metric != MetricEPICModel {
		t.Fatalf("rows %+v, want mean's normalized return and EPIC (median has a NaN seed, local no fusion)", rows)
	}
	approx.Slices(t, "normalized return differences", rows[0].Diff.Diffs, []float64{0.5 - 0.9, 0.2 - 0.8}, 1e-15, 0)
	approx.Slices(t, "EPIC differences", rows[1].Diff.Diffs, []float64{0.4 - 0.1, 0.3 - 0.2}, 1e-15, 0)
	if rows[0].Attack.Kind != AttackSpike || rows[0].Regime != "spike" {
		t.Errorf("row attack %+v", rows[0])
	}
	md := string(poisoningMarkdown(rows))
	if !strings.Contains(md, "## spike (1 attacker, spike, scale 1)") || !strings.Contains(md, "| Pendulum-v1 paper | train | mean | 2 | 0.850 | 0.350 | -0.500") {
		t.Errorf("poisoning.md:\n%s", md)
	}
	other := base
	other.NumberOfSeeds = 3
	if _, err := poisoningRows([]SweepResult{{Regime: "honest", Config: other, summary: honest}, {Regime: "spike", Config: att, summary: attacked}}); err == nil || !strings.Contains(err.Error(), `regime "spike": no regime has the same config without attack`) {
		t.Errorf("no twin: error %v", err)
	}
	if rows, err := poisoningRows([]SweepResult{{Regime: "honest", Config: base, summary: honest}}); rows != nil || err != nil {
		t.Errorf("no attack: rows %v, error %v", rows, err)
	}
}

// TestPoisoningSweep runs a micro sweep with an honest regime and a scale
// attack: the attacked mean fusion is the mean of the honest fits with the
// attacker's (client 1 of 0–1) scaled by 100, read back from the unit
// files; the honest regime's fusion is the plain mean; poisoning.md holds
// the attack's rows.
func TestPoisoningSweep(t *testing.T) {
	base := microConfig()
	base.Envs = []string{"CartPole-v1"}
	base.NumberOfSeeds = 2
	base.Methods = []string{MethodMean, fusion.MethodMedian, MethodTrue}
	regimes, err := report.LoadRegimes([]byte(`regimes:
  - {name: honest, rationale: r}
  - {name: scale, rationale: r, overrides: {attack: {clients: 1, kind: scale, scale: 100}}}
`), "test", func(r report.Regime) error { _, err := ApplyRegime(r, base); return err })
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Sweep(context.Background(), base, regimes, dir, SweepOptions{Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "poisoning.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## scale (1 attacker, scale, scale 100)", "| CartPole-v1 paper | train | mean | 2 |", "| CartPole-v1 paper | held-out | median | 2 |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("poisoning.md lacks %q:\n%s", want, md)
		}
	}
	for _, regime := range []string{"honest", "scale"} {
		c, _ := ApplyRegime(regimes[slices.IndexFunc(regimes, func(r report.Regime) bool { return r.Name == regime })], base)
		st, err := New(c, filepath.Join(dir, "x"), 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		st.UseUnits(filepath.Join(dir, "units"))
		u, _, locals, err := st.fusionUnit("CartPole-v1", "paper", MethodMean, 1)
		if err != nil {
			t.Fatal(err)
		}
		var fused FusionFile
		if err := readJSON(u.path(st.units), &fused); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, len(fused.Theta))
		for i, lu := range locals {
			var f IRLFile
			if err := readJSON(lu.path(st.units), &f); err != nil {
				t.Fatal(err)
			}
			w := 0.5
			if i == 1 && regime == "scale" {
				w = 50
			}
			floats.AddScaled(want, w, f.Theta)
		}
		approx.Slices(t, regime+": fused mean", fused.Theta, want, 1e-12, 1e-12)
	}
}
