package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// own folder (a rerun, a resume) is accepted.
func TestOutIntoAnotherRunRefused(t *testing.T) {
	dir := t.TempDir()
	control := filepath.Join(dir, "control")
	os.MkdirAll(control, 0o755)
	os.WriteFile(filepath.Join(control, "log.txt"), []byte("fedirl reproduce control (quick, protocol well-posed): CartPole-v1, seeds 1, 2, …\n"), 0o644)
	ppoRun := filepath.Join(dir, "ppo")
	os.MkdirAll(ppoRun, 0o755)
	os.WriteFile(filepath.Join(ppoRun, "policy.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(ppoRun, "curve.csv"), []byte("steps\n"), 0o644)
	for _, c := range []struct {
		cmd  func() *cobra.Command
		args []string
		want string
	}{
		{newReproduceGridworldCmd, []string{"--quick", "--out", control}, "holds a `fedirl reproduce control` run: give this `fedirl reproduce gridworld` run another folder"},
		{newSweepGridworldCmd, []string{"--quick", "--out", control}, "holds a `fedirl reproduce control` run"},
		{newReproduceControlCmd, []string{"--quick", "--out", ppoRun}, "holds a `fedirl ppo train` run"},
		{newPPOTrainCmd, []string{"--steps", "64", "--out", control}, "holds a `fedirl reproduce control` run"},
	} {
		before, _ := os.ReadDir(filepath.Dir(c.args[len(c.args)-1]))
		_, err := execute(c.cmd(), c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
		after, _ := os.ReadDir(filepath.Dir(c.args[len(c.args)-1]))
		if len(after) != len(before) {
			t.Errorf("%v: wrote into the parent folder", c.args)
		}
	}
	if got, _ := os.ReadDir(control); len(got) != 1 {
		t.Errorf("refused runs wrote into %s: %d files", control, len(got))
	}
	for _, kind := range []string{"fedirl reproduce control"} {
		if o := otherRun(control, kind); o != "" {
			t.Errorf("a control folder for a control rerun: %q", o)
		}
	}
}

// folder that is no run at all.
func TestControlMergeRefusesForeignShards(t *testing.T) {
	dir := t.TempDir()
	shard := func(name, cfg string) string {
		d := filepath.Join(dir, name)
		os.MkdirAll(filepath.Join(d, "units"), 0o755)
		os.WriteFile(filepath.Join(d, "config.yaml"), []byte(cfg), 0o644)
		os.WriteFile(filepath.Join(d, "log.txt"), []byte("fedirl reproduce control (quick, protocol well-posed): …\n"), 0o644)
		return d
	}
	a := shard("a", "seed: 1\nnumber_of_seeds: 2\n")
	b := shard("b", "seed: 1\nnumber_of_seeds: 3\n")
	gw := filepath.Join(dir, "gw")
	os.MkdirAll(gw, 0o755)
	os.WriteFile(filepath.Join(gw, "config.yaml"), []byte("environments: []\n"), 0o644)
	os.WriteFile(filepath.Join(gw, "log.txt"), []byte("fedirl reproduce gridworld: 3 grid sizes\n"), 0o644)
	empty := filepath.Join(dir, "empty")
	os.MkdirAll(empty, 0o755)
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{out, a, b}, b + ` ran with another config than ` + a + `: config.yaml line 2 is "number_of_seeds: 3", not "number_of_seeds: 2"`},
		{[]string{out, a, gw}, gw + " holds a `fedirl reproduce gridworld` run, not a shard of `fedirl reproduce control`"},
		{[]string{out, empty}, empty + " is not a `fedirl reproduce control` run folder (no config.yaml)"},
		{[]string{gw, a}, "--out " + gw + " holds a `fedirl reproduce gridworld` run"},
	} {
		cmd := newReproduceControlCmd()
		_, err := execute(cmd, append([]string{"merge"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("merge %v: error %v, want one line containing %q", c.args, err, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("refused merges created %s", out)
	}
}
