package control

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/fedirl/fedirl/pkg/experiments/report"
)

// TestDefaultRegimesValid checks that the pre-declared regimes apply over
// both sweep bases and change what their rationale says.
func TestDefaultRegimesValid(t *testing.T) {
	for _, quick := range []bool{false, true} {
		base := SweepBase(quick)
		rs, err := LoadRegimes(DefaultRegimes, "built-in", base)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) < 6 {
			t.Fatalf("%d regimes, the issue declares at least six", len(rs))
		}
		got := map[string]Config{}
		for _, r := range rs {
			c, err := ApplyRegime(r, base)
			if err != nil {
				t.Fatal(err)
			}
			got[r.Name] = c
		}
		if got["scarce-demos"].EpisodesPerClient != 1 {
			t.Errorf("scarce-demos: %d episodes", got["scarce-demos"].EpisodesPerClient)
		}
		if ds := got["partial-coverage"].Env["CartPole-v1"].DemoStart; ds == nil || ds.State != "x" {
			t.Errorf("partial-coverage: CartPole demo_start %+v", ds)
		}
		// an env block merges into the base's: the rest of the block is kept
		if a, b := got["partial-coverage"].Env["CartPole-v1"].EvaluationSteps, base.Env["CartPole-v1"].EvaluationSteps; a != b {
			t.Errorf("partial-coverage changed CartPole's evaluation_steps %d → %d", b, a)
		}
		if base.Env["CartPole-v1"].DemoStart != nil {
			t.Error("applying a regime wrote into the base config")
		}
		if got["paper-features"].Env["Pendulum-v1"].Features != "paper" || !slices.Equal(got["paper-features"].Envs, []string{"Pendulum-v1"}) {
			t.Error("paper-features: not Pendulum with the paper's features")
		}
		if w := got["weak-clients"]; !w.weak(w.TrainingClients()[w.NumberOfClients-1]) || w.weak(w.TrainingClients()[0]) {
			t.Error("weak-clients: the last training client should be weak, the first not")
		}
		if p := got["private-eps4"].Privacy; p.Epsilon != 4 || len(p.PilotSeeds) == 0 {
			t.Errorf("private-eps4: %+v", p)
		}
		if ids := got["wide-heterogeneity"].AllClients(); !slices.Equal(ids, []int{0, 3, 6, 9, 10}) {
			t.Errorf("wide-heterogeneity clients %v", ids)
		}
	}
}

// TestRegimeRefusals checks that bad overrides are refused by name.
func TestRegimeRefusals(t *testing.T) {
	base := SweepBase(true)
	for _, tc := range []struct{ yaml, want string }{
		{"regimes: [{name: a, rationale: r, overrides: {no_such_key: 1}}]", "no_such_key"},
		{"regimes: [{name: a, rationale: r, overrides: {client_ids: [0, 1]}}]", "client_ids"},
		{"regimes: [{name: a, rationale: r, overrides: {client_ids: [0, 0, 1]}}]", "twice"},
		{"regimes: [{name: a, rationale: r, overrides: {env: {CartPole-v1: {demo_start: {state: nope, low: 0, high: 1}}}}}]", "demo_start.state"},
		{"regimes: [{name: a, rationale: r, overrides: {weak_clients: {fraction: 1.5, irl_iterations: 2}}}]", "weak_clients"},
		{"regimes: [{name: a, rationale: r, overrides: {privacy: {epsilon: 1, delta: 1.0e-5, pilot_seeds: [1]}}}]", "study seed"},
		{"regimes: [{name: a, rationale: r, overrides: {normalization_anchor: best, methods: [local, mean]}}]", "normalization_anchor"},
		{"regimes: [{name: a, rationale: r, overrides: {barycenter: {sigma_mode: wide}}}]", "sigma_mode"},
		{"regimes: [{name: a, rationale: ''}]", "rationale"},
		{"regimes: [{name: a, rationale: r}, {name: a, rationale: r}]", "twice"},
	} {
		_, err := LoadRegimes([]byte(tc.yaml), "test", base)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.yaml, err, tc.want)
		}
	}
}

// TestWeakClients checks which training clients are weak: the last
// ⌈fraction·K⌉, never a held-out one.
func TestWeakClients(t *testing.T) {
	c := DefaultConfig()
	c.WeakClients = WeakClientsConfig{Fraction: 0.5, IRLIterations: 2}
	var weak []int
	for _, id := range c.AllClients() {
		if c.weak(id) {
			weak = append(weak, id)
		}
	}
	if !slices.Equal(weak, []int{2, 3}) {
		t.Errorf("weak clients %v, want [2 3] of training 0–3", weak)
	}
	c.WeakClients.Fraction = 0.3 // ⌈1.2⌉ = 2
	if !c.weak(2) || c.weak(1) {
		t.Error("fraction 0.3 of 4 should make 2 clients weak")
	}
}

// TestHeldOutFlagReusedFolder runs the micro study into a folder, then a
// study with another client split into the same folder: the true-reward
// evaluation units are shared (they do not depend on the split), and the
// second summary must group them by its own split, not the stored flag.
func TestHeldOutFlagReusedFolder(t *testing.T) {
	cfg := microConfig()
	cfg.Envs = []string{"CartPole-v1"}
	cfg.Methods = []string{MethodLocal, MethodMean, MethodTrue}
	dir := t.TempDir()
	cfg.ClientIDs = []int{0, 1, 2} // client 2 held out
	runStudy(t, cfg, dir, 2, Shard{})
	cfg.ClientIDs = []int{0, 2, 1} // client 1 held out, client 2 trains
	st := runStudy(t, cfg, dir, 2, Shard{})
	var sum Summary
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	finals := map[int]float64{}
	for _, c := range cfg.AllClients() {
		u, _, err := st.evalUnit(evalJob{"CartPole-v1", "-", MethodTrue, cfg.Seed, c})
		if err != nil {
			t.Fatal(err)
		}
		var f EvalFile
		if err := readJSON(u.path(st.units), &f); err != nil {
			t.Fatal(err)
		}
		finals[c] = f.FinalTrue
	}
	for _, r := range sum.Rows {
		if r.Method != MethodTrue {
			continue
		}
		want := finals[1]
		if r.Group == "train" {
			want = (finals[0] + finals[2]) / 2
		}
		if math.Abs(r.PerSeed[0]-want) > 1e-9 {
			t.Errorf("true reward, %s: per-seed %v, want %v (the clients of this study's split)", r.Group, r.PerSeed[0], want)
		}
	}
}

// TestPartialCoverageStarts checks that each training client's
// demonstrations start in its own interval of demo_start and that a
// held-out client has no region.
func TestPartialCoverageStarts(t *testing.T) {
	cfg := microConfig()
	cfg.Envs = []string{"CartPole-v1"}
	cfg.Methods = []string{MethodLocal, MethodMean, MethodTrue}
	ec := cfg.Env["CartPole-v1"]
	ec.DemoStart = &StartRegion{State: "x", Low: -1, High: 1}
	cfg.Env["CartPole-v1"] = ec
	cfg.EpisodesPerClient = 3
	dir := t.TempDir()
	st := runStudy(t, cfg, dir, 2, Shard{})
	for k, c := range cfg.TrainingClients() {
		du, sp, _, _, err := st.demosUnit("CartPole-v1", c, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := -1+float64(k), float64(k) // K = 2: [-1, 0) and [0, 1)
		if sp.Start == nil || sp.Start.Low != lo || sp.Start.High != hi {
			t.Fatalf("client %d: start region %+v, want [%v, %v)", c, sp.Start, lo, hi)
		}
		d, err := ReadDemos(du.path(st.units))
		if err != nil {
			t.Fatal(err)
		}
		at := 0
		for _, n := range d.Lengths {
			x := d.States[at][0] // CartPole's state: x, x_dot, theta, theta_dot
			if !(x >= lo && x < hi) {
				t.Errorf("client %d: an episode starts at x = %v, outside [%v, %v)", c, x, lo, hi)
			}
			at += n + 1
		}
	}
	if _, sp, _, _, _ := st.demosUnit("CartPole-v1", cfg.AllClients()[2], cfg.Seed); sp.Start != nil { // held out
		t.Error("a held-out client got a start region")
	}
}

// TestPilotClip checks that the private fusion's clipping norm is the median
// ‖θ‖ of the pilot fits, recomputed here from their unit files.
func TestPilotClip(t *testing.T) {
	cfg := microConfig()
	cfg.Envs = []string{"CartPole-v1"}
	cfg.Methods = []string{MethodLocal, MethodMean, MethodTrue}
	cfg.Privacy = PrivacyConfig{Epsilon: 4, Delta: 1e-5, PilotSeeds: []uint64{101, 102}}
	dir := t.TempDir()
	st := runStudy(t, cfg, dir, 2, Shard{})
	var norms []float64
	for _, ps := range cfg.Privacy.PilotSeeds {
		for _, c := range cfg.TrainingClients() {
			u, _, err := st.irlUnit("CartPole-v1", "paper", c, ps)
			if err != nil {
				t.Fatal(err)
			}
			var f IRLFile
			if err := readJSON(u.path(st.units), &f); err != nil {
				t.Fatalf("pilot fit seed %d client %d: %v", ps, c, err)
			}
			norms = append(norms, floats.Norm(f.Theta, 2))
		}
	}
	slices.Sort(norms)
	want := (norms[1] + norms[2]) / 2 // 4 pilot fits
	fu, _, _, err := st.fusionUnit("CartPole-v1", "paper", MethodMean, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	var f FusionFile
	if err := readJSON(fu.path(st.units), &f); err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.Clip-want) > 1e-12*want {
		t.Errorf("clip %v, want the pilot fits' median norm %v", f.Clip, want)
	}
}

// TestSweepResumesAndFlags runs a two-regime micro sweep twice into one
// folder (the second computes no unit) and checks the Bonferroni intervals
// against report.PairedDiff at level 1 − 0.05/m.
func TestSweepResumesAndFlags(t *testing.T) {
	base := microConfig()
	base.Envs = []string{"CartPole-v1"}
	base.NumberOfSeeds = 2
	base.Methods = []string{MethodLocal, MethodMean, MethodNormalizedMean, MethodBarycenter, MethodTrue}
	regimes, err := report.LoadRegimes([]byte(`regimes:
  - {name: base, rationale: the micro study}
  - {name: one-episode, rationale: one episode per client, overrides: {episodes_per_client: 1}}
`), "test", func(r report.Regime) error { _, err := ApplyRegime(r, base); return err })
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := Sweep(context.Background(), base, regimes, dir, SweepOptions{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sweep.md", "sweep.csv", "sweep.json", "forest.png", "regimes/base/summary.json", "regimes/one-episode/summary.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("output %s: %v", f, err)
		}
	}
	m := map[string]int{}
	for _, r := range res {
		for _, row := range r.Rows {
			for _, c := range row.Comparisons {
				m[c.Metric]++
			}
		}
	}
	if m[MetricNormalizedReturn] != 2*2*len(SweepPairs) { // 2 regimes × 2 groups × 3 pairs
		t.Errorf("%d normalized-return comparisons, want %d", m[MetricNormalizedReturn], 2*2*len(SweepPairs))
	}
	for _, r := range res {
		for _, row := range r.Rows {
			for _, c := range row.Comparisons {
				want, err := report.PairedDiff(c.Diff.Diffs, make([]float64, len(c.Diff.Diffs)), 1-0.05/float64(m[c.Metric]))
				if err != nil {
					t.Fatal(err)
				}
				if c.Bonferroni.Lo != want.Lo || c.Bonferroni.Hi != want.Hi || c.Resolved != want.Excludes0() {
					t.Errorf("%s %s %s−%s: Bonferroni %v, want %v", r.Regime, c.Metric, c.A, c.B, c.Bonferroni, want)
				}
				if !(c.Bonferroni.Lo <= c.Diff.Lo && c.Bonferroni.Hi >= c.Diff.Hi) {
					t.Errorf("%s %s: the Bonferroni interval does not contain the 95 %% one", r.Regime, c.Metric)
				}
			}
		}
	}
	// The overview's worst client, recomputed from each regime's per-client
	// values: per seed the lowest client normalized return, mean over seeds.
	for _, r := range res {
		b, err := os.ReadFile(filepath.Join(dir, "regimes", r.Regime, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var sum Summary
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, row := range r.Rows {
			for _, sr := range sum.Rows {
				if sr.Env != row.Env || sr.Group != row.Group || (sr.Lattice != row.Lattice && sr.Method != MethodTrue) {
					continue
				}
				lowest := map[uint64]float64{}
				for _, c := range sr.PerClient {
					if c.Normalized == nil {
						continue
					}
					if v, ok := lowest[c.Seed]; !ok || *c.Normalized < v {
						lowest[c.Seed] = *c.Normalized
					}
				}
				got, ok := row.Worst[sr.Method]
				if len(lowest) == 0 {
					if ok {
						t.Errorf("%s %s %s %s: worst client %g without per-client values", r.Regime, row.Env, row.Group, sr.Method, got)
					}
					continue
				}
				want := 0.0
				for _, v := range lowest {
					want += v
				}
				want /= float64(len(lowest))
				if !ok || math.Abs(got-want) > 1e-12 {
					t.Errorf("%s %s %s %s: worst client %g (present %v), want %g", r.Regime, row.Env, row.Group, sr.Method, got, ok, want)
				}
				if got > row.Normalized[sr.Method]+1e-12 {
					t.Errorf("%s %s %s %s: worst client %g above the mean %g", r.Regime, row.Env, row.Group, sr.Method, got, row.Normalized[sr.Method])
				}
				checked++
			}
		}
		if checked < len(base.Methods) {
			t.Errorf("%s: %d worst-client values checked, want at least %d", r.Regime, checked, len(base.Methods))
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "sweep.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## The worst client") {
		t.Error("sweep.md has no worst-client table")
	}
	// Rerun: every unit is on disk, nothing is computed.
	for _, r := range regimes {
		c, _ := ApplyRegime(r, base)
		st, err := New(c, filepath.Join(dir, "regimes", r.Name), 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		st.UseUnits(filepath.Join(dir, "units"))
		if err := st.Run(context.Background(), Shard{}); err != nil {
			t.Fatal(err)
		}
		if len(st.Computed) != 0 {
			t.Errorf("regime %s: the rerun computed %v", r.Name, st.Computed)
		}
	}
}

// TestResolutionFigureNeedsTwoLattices: resolution.png is drawn only for
// environments with at least two lattice sizes, and is not written (an old
// one removed) when no environment has two.
func TestResolutionFigureNeedsTwoLattices(t *testing.T) {
	dir := t.TempDir()
	cfg := microConfig()
	st, err := New(cfg, dir, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	row := func(env string, pairs int) Row {
		return Row{Env: env, Lattice: "l", Pairs: pairs, Method: MethodMean, Group: "train", NormalizedReturn: report.Summary{Mean: 0.5, Std: 0.1, N: 2}}
	}
	path := filepath.Join(dir, "resolution.png")
	if err := st.figures(nil, &Summary{Rows: []Row{row("Pendulum-v1", 100), row("Pendulum-v1", 1000), row("CartPole-v1", 500)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("two Pendulum lattices: %v", err)
	}
	if err := st.figures(nil, &Summary{Rows: []Row{row("Pendulum-v1", 100), row("CartPole-v1", 500)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("one lattice per environment: resolution.png still there (%v)", err)
	}
}
