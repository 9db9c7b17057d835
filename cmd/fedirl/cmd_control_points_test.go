package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestControlWalkerConfigPlan prices the declared point-probe study
// (configs/control-walker.yaml) with --plan: it loads and validates,
// every environment has its point-probe units (probe, sample-based local
// IRL, points fusion, ladder and fidelity), nothing is written; --env
// selects the walker, which has no lattice discretisation, from that
// config, and a lattice-axis flag is refused for it by name, not a panic.
func TestControlWalkerConfigPlan(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := newReproduceControlCmd()
		cmd.SetArgs(append(args, "--out", dir))
		cmd.SetOut(&out)
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run("--config", "../../configs/control-walker.yaml", "--plan")
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"Pendulum-v1", "CartPole-v1", "LunarLanderContinuous-v3", "BipedalWalker-v3"} {
		for _, kind := range []string{"probe", "irl", "fusion", "ladder", "fidelity", "eval"} {
			if !strings.Contains(out, "| "+env+" | "+kind+" | points |") {
				t.Errorf("the plan has no %s unit of %s on points:\n%s", kind, env, out)
			}
		}
	}
	if !strings.Contains(out, "| Pendulum-v1 | fusion | paper |") || !strings.Contains(out, "core-hours") || !strings.Contains(out, "seeds 1, 2, …, 5") {
		t.Errorf("plan:\n%s", out)
	}
	if out, err := run("--config", "../../configs/control-walker.yaml", "--env", "BipedalWalker-v3", "--plan"); err != nil || strings.Contains(out, "Pendulum") {
		t.Errorf("--env BipedalWalker-v3: %v\n%s", err, out)
	}
	if _, err := run("--config", "../../configs/control-walker.yaml", "--env", "BipedalWalker-v3", "--n-theta", "8", "--plan"); err == nil || !strings.Contains(err.Error(), "--n-theta") {
		t.Errorf("--n-theta for the walker: %v, want a refusal naming the flag", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("--plan wrote %d files into --out", len(entries))
	}
}
