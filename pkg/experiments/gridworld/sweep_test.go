package gridworld

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/experiments/report"
)

// TestDefaultRegimes: the built-in regimes file parses, every regime
// validates, and the overrides reach the fields they name (lists replace
// lists; unnamed keys keep the base values).
func TestDefaultRegimes(t *testing.T) {
	base := DefaultConfig()
	rs, err := LoadRegimes(DefaultRegimes, "built-in", base)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"defaults", "adam", "demos-2", "obstacles-20", "slip-0.3", "weak-1step-random-start", "temperature-1", "hardest", "eps-0.1", "eps-2"}
	if len(rs) != len(want) {
		t.Fatalf("%d regimes, want %d", len(rs), len(want))
	}
	cfg := map[string]Config{}
	for i, r := range rs {
		if r.Name != want[i] {
			t.Fatalf("regime %d is %q, want %q", i, r.Name, want[i])
		}
		c, err := ApplyRegime(r, base)
		if err != nil {
			t.Fatal(err)
		}
		cfg[r.Name] = c
	}
	d := cfg["defaults"]
	if d.IRL != base.IRL || len(d.Environments) != 3 || d.Environments[0] != base.Environments[0] {
		t.Fatalf("defaults regime changed the config: %+v", d)
	}
	if cfg["adam"].IRL.Optimizer != "adam" || cfg["adam"].IRL.IRLLearningRate != base.IRL.IRLLearningRate {
		t.Error("adam regime")
	}
	if c := cfg["obstacles-20"]; c.Environments[0].Obstacles != 80 || c.Environments[2].Obstacles != 5 || c.Environments[1].NumberOfClients != 10 {
		t.Errorf("obstacles-20 environments %+v", c.Environments)
	}
	h := cfg["hardest"]
	if h.Expert.EpisodesPerClient != 2 || h.Environments[1].SlipMax != 0.3 || h.Ablation.InitScale != 0.3 ||
		h.Ablation.WeakExpertEpsilon != base.Ablation.WeakExpertEpsilon || h.Expert.DiscountFactor != base.Expert.DiscountFactor {
		t.Errorf("hardest regime %+v", h)
	}
	if cfg["eps-2"].Barycenter.EntropicRegularization != 2 || cfg["eps-0.1"].Barycenter.EntropicRegularization != 0.1 {
		t.Error("ε regimes")
	}
	if base.IRL.Optimizer != "gd" || base.Environments[0].Obstacles != 0 {
		t.Fatal("Apply modified the base config")
	}
}

// TestRegimeErrors: a bad regimes file is refused with an error naming the
// regime and the key.
func TestRegimeErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"regimes: []\n", "no regimes"},
		{"regime: []\n", "regime"},
		{"regimes:\n  - {name: a, rationale: r, overrides: {irl: {optimiser: adam}}}\n", "irl.optimiser"},
		{"regimes:\n  - {name: a, rationale: r, overrides: {barycenter: {entropic_regularization: -1}}}\n", "barycenter.entropic_regularization"},
		{"regimes:\n  - {name: a, rationale: r, overrides: {expert: {episodes_per_client: x}}}\n", "expert.episodes_per_client"},
		{"regimes:\n  - {name: a, rationale: r}\n  - {name: a, rationale: s}\n", "used twice"},
		{"regimes:\n  - {name: A/b, rationale: r}\n", "regimes[0].name"},
		{"regimes:\n  - {name: a}\n", "no rationale"},
	} {
		_, err := LoadRegimes([]byte(tc.yaml), "f.yaml", DefaultConfig())
		if err == nil {
			t.Errorf("%q accepted", tc.yaml)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "f.yaml") {
			t.Errorf("%q: error %q does not name %q and the file", tc.yaml, err, tc.want)
		}
	}
}

// TestSweepResumesAndMatchesStudy: a sweep's rows are the regime's own
// study's paired differences; a second run into the same folder reuses the
// stored results and writes byte-identical outputs; a changed config reruns.
func TestSweepResumesAndMatchesStudy(t *testing.T) {
	base := tinyConfig()
	regimes, err := LoadRegimes([]byte("regimes:\n  - {name: base, rationale: r}\n  - {name: eps1, rationale: r, overrides: {barycenter: {entropic_regularization: 1}}}\n"), "t", base)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func() []byte {
		res, err := Sweep(context.Background(), base, regimes, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteSweep(dir, DefaultRegimes, res); err != nil {
			t.Fatal(err)
		}
		var all []byte
		for _, f := range []string{"sweep.md", "sweep.csv", "sweep.json", "forest.png"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return all
	}
	first := run()
	c, _ := ApplyRegime(regimes[1], base)
	s, err := GridWorld(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Sweep(context.Background(), base, regimes, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range s.Table1() {
		got := res[1].Rows[k]
		if len(got.In) != 10 || len(got.HeldOut) != 7 {
			t.Fatalf("row %d: %d in-distribution and %d held-out pairs, want the 10 and 7 declared", k, len(got.In), len(got.HeldOut))
		}
		for key, p := range r.InDistPaired {
			if got.In[key].Mean != p.Mean || got.In[key].Hi != p.Hi {
				t.Fatalf("row %d %s: sweep %+v, study %+v", k, key, got.In[key], p)
			}
		}
		for key, p := range r.HeldOutPaired {
			if got.HeldOut[key].Mean != p.Mean || got.HeldOut[key].Lo != p.Lo {
				t.Fatalf("row %d %s held out: sweep %+v, study %+v", k, key, got.HeldOut[key], p)
			}
		}
	}
	// Mark the stored result so a rerun can be told from a reuse.
	p := filepath.Join(dir, "regimes", "eps1", "result.json")
	stored, _ := os.ReadFile(p)
	if err := os.WriteFile(p, bytes.Replace(stored, []byte(`"rationale": "r"`), []byte(`"rationale": "stored"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if second := run(); !bytes.Equal(first, second) {
		t.Fatal("resumed sweep wrote different bytes")
	}
	if b, _ := os.ReadFile(p); !bytes.Contains(b, []byte("stored")) {
		t.Fatal("an unchanged regime was rerun")
	}
	base.Barycenter.SinkhornIterations = 7 // changes "base" and "eps1"
	if _, err := Sweep(context.Background(), base, regimes, dir, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("stored")) {
		t.Fatal("a regime with a changed config was reused")
	}
}

// TestSweepForestStatesOmissions: forest.png draws every grid size and
// Table 2's largest weak fraction only; the rows it leaves out are named in
// its header, and the figure still renders.
func TestSweepForestStatesOmissions(t *testing.T) {
	pd := map[string]report.Paired{"barycenter-mean": {Mean: 0.5, Lo: -1, Hi: 2, N: 3}}
	var rows []SweepRow
	rows = append(rows, SweepRow{Table: "table1", GridSize: 5, In: pd, HeldOut: pd})
	for _, p := range []float64{0, 0.25, 0.5} {
		rows = append(rows, SweepRow{Table: "table2", GridSize: 5, WeakFraction: p, In: pd, HeldOut: pd})
	}
	res := []SweepResult{{Regime: "a", Rows: rows}, {Regime: "b", Rows: rows}}
	labels := ForestLabels(res)
	if !slices.Equal(labels, []string{"5×5", "T2 p=0.50"}) {
		t.Fatalf("labels %v", labels)
	}
	h := sweepForestHeader(res, labels)
	if !strings.Contains(h, "Not drawn: T2 p=0.00; T2 p=0.25 (every row is in sweep.md and sweep.csv)") {
		t.Errorf("header %q does not name the omitted rows", h)
	}
	if h := sweepForestHeader(res, []string{"5×5", "T2 p=0.00", "T2 p=0.25", "T2 p=0.50"}); strings.Contains(h, "Not drawn") {
		t.Errorf("nothing omitted, header %q", h)
	}
	png, err := SweepForestPNG(res, labels)
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("forest.png: %d bytes, %v", len(png), err)
	}
}
