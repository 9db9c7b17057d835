package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/gif"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

// TestEnvRenderWritesGIF runs "fedirl env render" for the walker's
// heuristic and checks the GIF it writes: the frame count the printed
// summary states (step 0, every 10th step, the last), the frame size, and
// the summary's return and steps.
func TestEnvRenderWritesGIF(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "walk.gif")
	cmd := newEnvRenderCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--env", "BipedalWalker-v3", "--policy", "heuristic", "--seed", "4", "--every", "10", "--max-steps", "95",
		"--width", "240", "--height", "160", "--out", path})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Steps, Frames int
		Return        float64
	}
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		t.Fatalf("summary %q: %v", out.String(), err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := gif.DecodeAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 95 || sum.Frames != 11 || len(g.Image) != 11 {
		t.Fatalf("%d steps, %d frames (GIF %d), want 95 steps in 11 frames", sum.Steps, sum.Frames, len(g.Image))
	}
	if g.Config.Width != 240 || g.Config.Height != 160 {
		t.Fatalf("GIF %d×%d, want 240×160", g.Config.Width, g.Config.Height)
	}
	if sum.Return <= 0 {
		t.Errorf("the heuristic's first 95 steps returned %v, want progress", sum.Return)
	}
}

// TestEnvRenderRefuses checks bad flags are refused naming the flag.
func TestEnvRenderRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--width", "0", "--out", filepath.Join(dir, "a.gif")}, "--width"},
		{[]string{"--every", "-1", "--out", filepath.Join(dir, "a.gif")}, "--every"},
		{[]string{"--env", "Nope-v0", "--out", filepath.Join(dir, "a.gif")}, "--env"},
		{[]string{"--policy", "heuristic", "--env", "Pendulum-v1", "--out", filepath.Join(dir, "a.gif")}, "heuristic"},
		{[]string{"--param", "friction=-1", "--out", filepath.Join(dir, "a.gif")}, "friction -1 must be in (0, 10]"},
		{[]string{"--seed", "1"}, "--out"},
	} {
		cmd := newEnvRenderCmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.args, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused runs wrote %d files", len(entries))
	}
}

// TestPPOTrainPlanPricesWalker checks "ppo train --plan" on the walker
// prices RL Zoo's 5e6 steps at the measured rate and trains nothing.
func TestPPOTrainPlanPricesWalker(t *testing.T) {
	dir := t.TempDir()
	cmd := newPPOTrainCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--env", "BipedalWalker-v3", "--plan", "--out", filepath.Join(dir, "run")})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "5000000 steps") || !strings.Contains(s, "CPU-min") || !strings.Contains(s, "32 copies, n_steps 2048, 10 epochs of batch 64") {
		t.Errorf("plan %q", s)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("--plan wrote %d entries", len(entries))
	}
}

// TestEnvRenderPPOPolicy trains a tiny PPO walker policy (one rollout),
// saves it as "ppo train" does, and renders it: the GIF must have the frames
// the summary states, and the summary's return must be the return of the
// same checkpoint's episode run by "env episodes"' policy resolution.
func TestEnvRenderPPOPolicy(t *testing.T) {
	dir := t.TempDir()
	cfg, err := ppo.Preset("BipedalWalker-v3")
	if err != nil {
		t.Fatal(err)
	}
	cfg.NEnvs, cfg.NSteps, cfg.NEpochs, cfg.TotalSteps = 2, 64, 1, 128
	tr, err := ppo.NewTrainer(cfg, func(int) (envs.Env, error) { return registry.Make("BipedalWalker-v3", -1, nil, 0) }, ppo.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Learn(context.Background(), cfg.TotalSteps); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "policy.json")
	if err := tr.Policy().Save(policy, &cfg); err != nil {
		t.Fatal(err)
	}
	gifPath := filepath.Join(dir, "ppo.gif")
	cmd := newEnvRenderCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--env", "BipedalWalker-v3", "--policy", policy, "--seed", "2", "--every", "7", "--max-steps", "60", "--out", gifPath})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Steps, Frames int
		Return        float64
	}
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(gifPath)
	defer f.Close()
	g, err := gif.DecodeAll(f)
	if err != nil {
		t.Fatal(err)
	}
	want := 1 + sum.Steps/7
	if sum.Steps%7 != 0 {
		want++
	}
	if len(g.Image) != want || sum.Frames != want {
		t.Fatalf("%d frames (summary %d) for %d steps, want %d", len(g.Image), sum.Frames, sum.Steps, want)
	}
	e, choose, reset, err := envWithPolicy("BipedalWalker-v3", -1, nil, policy, 2)
	if err != nil {
		t.Fatal(err)
	}
	reset()
	obs := e.Reset(2)
	ret := 0.0
	for k := 0; k < sum.Steps; k++ {
		var r float64
		var term, trunc bool
		obs, r, term, trunc = e.Step(choose(obs))
		ret += r
		if term || trunc {
			break
		}
	}
	if ret != sum.Return {
		t.Errorf("rendered return %v, the same checkpoint undrawn %v", sum.Return, ret)
	}
}
