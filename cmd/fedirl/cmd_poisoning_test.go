package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSweepPoisoning: "fedirl sweep poisoning" on a small benchmark file
// writes the benchmark's files, honours --seeds, and refuses a bad file
// naming the field.
func TestSweepPoisoning(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	os.WriteFile(file, []byte(`tolerance: 2
study:
  number_of_seeds: 5
  environments: [{grid_size: 5, number_of_clients: 3}]
  irl: {irl_iterations: 5}
  barycenter: {barycenter_iterations: 3}
  fusion_methods: [mean, barycenter, median]
attacks:
  - {name: scale, rationale: r, kind: scale, scale: 1000, clients: 1}
`), 0o644)
	out := filepath.Join(dir, "out")
	cmd := newSweepPoisoningCmd()
	var stdout strings.Builder
	cmd.SetOut(&stdout)
	cmd.SetErr(new(strings.Builder))
	cmd.SetArgs([]string{"--regimes", file, "--seeds", "1", "--out", out})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"poisoning.yaml", "poisoning.md", "poisoning.csv", "poisoning.json", "forest.png", "log.txt"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("missing %s: %v", name, err)
		}
	}
	if !strings.Contains(stdout.String(), "K = 3 honest clients, 1 seeds") || !strings.Contains(stdout.String(), "| median |") {
		t.Errorf("printed table:\n%s", stdout.String())
	}
	os.WriteFile(file, []byte("tolerance: 2\nattacks: [{name: a, rationale: r, kind: scale, scale: 2, clients: 0}]\n"), 0o644)
	cmd = newSweepPoisoningCmd()
	cmd.SetOut(new(strings.Builder))
	cmd.SetErr(new(strings.Builder))
	cmd.SetArgs([]string{"--regimes", file, "--out", filepath.Join(dir, "bad")})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "attacks[0].clients") {
		t.Errorf("bad benchmark: %v", err)
	}
}
