package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/fedirl/fedirl/pkg/experiments/control"
	gridstudy "github.com/fedirl/fedirl/pkg/experiments/gridworld"
)

// TestRunOutputsReloadAsInputs: every file a run writes that is documented
// as an input reads back: gridworld export's mdp.json, demos.jsonl and
// truth.json into irl and reward distance, irl's θ output into reward
// distance (and --theta0); the grid-world and control studies' config.yaml
// into their --config, from another preset, giving the same config. (ppo
// train's config.json: TestPPOTrainRerunsItsConfig; control demos .npz:
// control.TestDemosFileHasImitationFields.)
func TestRunOutputsReloadAsInputs(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "gw5")
	if _, err := execute(rootCmd, "gridworld", "export", "--size", "5", "--client", "0", "--seed", "1", "--out", exp); err != nil {
		t.Fatal(err)
	}
	spec, demos, truth := filepath.Join(exp, "mdp.json"), filepath.Join(exp, "demos.jsonl"), filepath.Join(exp, "truth.json")
	theta := filepath.Join(dir, "theta.json")
	if _, err := execute(newIRLCmd(), "--spec", spec, "--demos", demos, "--iters", "20", "--out", theta); err != nil {
		t.Fatalf("irl on gridworld export's files: %v", err)
	}
	if _, err := execute(newIRLCmd(), "--spec", spec, "--demos", demos, "--iters", "2", "--theta0", theta, "--out", filepath.Join(dir, "warm.json")); err != nil {
		t.Fatalf("irl --theta0 <irl output>: %v", err)
	}
	for _, pair := range [][2]string{{truth, theta}, {theta, theta}} {
		out := filepath.Join(dir, "epic.json")
		if _, err := execute(newRewardCmd(), "distance", "--spec", spec, "--out", out, pair[0], pair[1]); err != nil {
			t.Fatalf("reward distance %s %s: %v", filepath.Base(pair[0]), filepath.Base(pair[1]), err)
		}
		var got struct {
			EPIC float64 `json:"epic"`
		}
		raw, _ := os.ReadFile(out)
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if pair[0] == pair[1] && got.EPIC > 1e-9 {
			t.Errorf("EPIC(θ, θ) = %g, want 0", got.EPIC)
		}
	}

	gw := gridstudy.QuickConfig()
	y, err := yaml.Marshal(gw) // what WriteRun puts in config.yaml, below its comment line
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "gw.yaml")
	os.WriteFile(p, append([]byte("# Resolved fedirl grid-world study config (rerun with --config this-file).\n"), y...), 0o644)
	back, err := gridstudy.LoadConfig(p, gridstudy.DefaultConfig())
	if err != nil || !reflect.DeepEqual(back, gw) {
		t.Errorf("grid-world config.yaml → --config: %v\n got %+v\nwant %+v", err, back, gw)
	}

	// Each preset's config.yaml, and the paper protocol's (which acts on
	// every frame where the presets hold actions), reloads over the
	// default preset as the config it was written from.
	paper := control.DefaultConfig()
	paper.Envs = append(paper.Envs, "LunarLanderContinuous-v3")
	paper = control.PaperProtocol(paper)
	for name, cc := range map[string]control.Config{"quick": control.QuickConfig(), "full": control.FullConfig(), "paper": paper} {
		cc.Seed, cc.NumberOfSeeds = 7, 2
		st, err := control.New(cc, filepath.Join(dir, "control-"+name), 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.WriteConfig(); err != nil {
			t.Fatal(err)
		}
		cback, err := control.LoadConfig(filepath.Join(dir, "control-"+name, "config.yaml"), control.DefaultConfig())
		if err != nil || !reflect.DeepEqual(cback, cc) {
			t.Errorf("control %s config.yaml → --config: %v\n got %+v\nwant %+v", name, err, cback, cc)
		}
	}
}

// TestIRLErrorsNameFormats: a demonstrations or spec file irl cannot read is
// refused naming the flag and the formats it takes.
func TestIRLErrorsNameFormats(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "gw5")
	if _, err := execute(rootCmd, "gridworld", "export", "--size", "5", "--client", "0", "--seed", "1", "--out", exp); err != nil {
		t.Fatal(err)
	}
	csv := filepath.Join(dir, "d.csv")
	os.WriteFile(csv, []byte("0,1\n"), 0o644)
	fake := filepath.Join(dir, "x.npz")
	os.WriteFile(fake, []byte("{}"), 0o644)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--spec", filepath.Join(exp, "mdp.json"), "--demos", csv}, []string{"--demos: ", "d.csv", "JSON Lines", ".npz", `"obs"/"acts"/"indices"`}},
		{[]string{"--spec", fake, "--demos", filepath.Join(exp, "demos.jsonl")}, []string{"--spec: ", "x.npz", "JSON MDP spec", "sparse transitions"}},
	} {
		_, err := execute(newIRLCmd(), c.args...)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %v, want it to contain %q", c.args, err, w)
			}
		}
	}
}
