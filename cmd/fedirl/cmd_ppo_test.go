package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/experiments/ppostudy"
)

// TestPPOTrainSameSeedSameBytes runs "fedirl ppo train" twice with the same
// seed (with 1 and 2 update goroutines) and checks every output file is
// byte-identical, then evaluates the saved policy with "fedirl ppo eval".
func TestPPOTrainSameSeedSameBytes(t *testing.T) {
	dir := t.TempDir()
	for k, workers := range []string{"1", "2"} {
		out := filepath.Join(dir, []string{"a", "b"}[k])
		rootCmd.SetArgs([]string{"ppo", "train", "--env", "Pendulum-v1", "--steps", "4096", "--seed", "3",
			"--eval-every", "2048", "--eval-episodes", "2", "--workers", workers, "--out", out})
		if err := rootCmd.Execute(); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"config.json", "policy.json", "curve.csv", "curve.json", "curve.png"} {
		a, err := os.ReadFile(filepath.Join(dir, "a", f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "b", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs with the same seed", f)
		}
	}
	evalOut := filepath.Join(dir, "eval.json")
	rootCmd.SetArgs([]string{"ppo", "eval", "--policy", filepath.Join(dir, "a", "policy.json"), "--episodes", "3", "--out", evalOut})
	if err := rootCmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Env     string    `json:"env"`
		Returns []float64 `json:"returns"`
	}
	b, err := os.ReadFile(evalOut)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Env != "Pendulum-v1" || len(ev.Returns) != 3 {
		t.Fatalf("eval output %+v: want 3 Pendulum-v1 returns", ev)
	}
	for _, r := range ev.Returns {
		if r > 0 || r < -16.3*200 { // Pendulum rewards lie in [-16.27, 0] for 200 steps
			t.Fatalf("Pendulum return %g out of range", r)
		}
	}
}

func TestPPOBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("n_stepz: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"ppo", "train", "--env", "NoSuchEnv-v0", "--steps", "10"},
		{"ppo", "train", "--env", "CartPole-v1", "--config", bad},
		{"ppo", "train", "--env", "CartPole-v1", "--preset", "nope"},
		{"ppo", "eval", "--policy", filepath.Join(dir, "missing.json")},
	} {
		rootCmd.SetArgs(args)
		if err := rootCmd.Execute(); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestPPOTrainSDEPrecision checks --precision with a gSDE (use_sde) config:
// gSDE trains float64 networks, so leaving --precision out trains (and
// records) float64, byte for byte as --precision float64 does, and an
// explicit --precision float32 is refused naming both.
func TestPPOTrainSDEPrecision(t *testing.T) {
	dir := t.TempDir()
	sde := filepath.Join(dir, "sde.yaml")
	if err := os.WriteFile(sde, []byte("use_sde: true\nsde_sample_freq: 4\nn_steps: 256\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	train := func(out string, extra ...string) error {
		cmd := newPPOTrainCmd()
		cmd.SetArgs(append([]string{"--env", "Pendulum-v1", "--config", sde, "--steps", "1024", "--seed", "2",
			"--eval-every", "0", "--out", out}, extra...))
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		return cmd.Execute()
	}
	a, b := filepath.Join(dir, "default"), filepath.Join(dir, "float64")
	if err := train(a); err != nil {
		t.Fatal(err)
	}
	if err := train(b, "--precision", "float64"); err != nil {
		t.Fatal(err)
	}
	var rc struct {
		Precision string `json:"precision"`
	}
	cj, err := os.ReadFile(filepath.Join(a, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(cj, &rc); err != nil || rc.Precision != "float64" {
		t.Errorf("use_sde without --precision recorded precision %q (%v), want float64", rc.Precision, err)
	}
	for _, f := range []string{"config.json", "policy.json", "curve.json"} {
		x, errX := os.ReadFile(filepath.Join(a, f))
		y, errY := os.ReadFile(filepath.Join(b, f))
		if errX != nil || errY != nil || !bytes.Equal(x, y) {
			t.Errorf("%s: use_sde without --precision differs from --precision float64 (%v, %v)", f, errX, errY)
		}
	}
	err = train(filepath.Join(dir, "float32"), "--precision", "float32")
	if err == nil || !strings.Contains(err.Error(), "--precision float32") || !strings.Contains(err.Error(), "use_sde") {
		t.Errorf("use_sde with --precision float32: error %v, want one naming --precision float32 and use_sde", err)
	}
}

// TestPPOTrainRerunsItsConfig: "ppo train --config RUN/config.json" reruns
// the run (same bytes in every file), flags given beside it override it,
// and an --out that is a file is refused before training.
func TestPPOTrainRerunsItsConfig(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	train := func(args ...string) error {
		cmd := newPPOTrainCmd()
		cmd.SetArgs(args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		return cmd.Execute()
	}
	if err := train("--env", "Acrobot-v1", "--client", "2", "--steps", "512", "--eval-every", "256", "--eval-episodes", "2", "--seed", "5", "--window", "7", "--out", a); err != nil {
		t.Fatal(err)
	}
	if err := train("--config", filepath.Join(a, "config.json"), "--out", b); err != nil {
		t.Fatalf("rerun from its own config.json: %v", err)
	}
	for _, f := range []string{"config.json", "policy.json", "curve.csv", "curve.json", "curve.png"} {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, err := os.ReadFile(filepath.Join(b, f))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s: rerun differs (%v)", f, err)
		}
	}
	if err := train("--config", filepath.Join(a, "config.json"), "--seed", "6", "--out", c); err != nil {
		t.Fatal(err)
	}
	var rc ppostudy.RunConfig
	raw, _ := os.ReadFile(filepath.Join(c, "config.json"))
	if err := json.Unmarshal(raw, &rc); err != nil || rc.Seed != 6 || rc.Env != "Acrobot-v1" || rc.Client != 2 || rc.Window != 7 || rc.PPO.TotalSteps != 512 {
		t.Errorf("--seed 6 over the run config: %+v (%v)", rc, err)
	}
	if err := train("--config", filepath.Join(a, "config.json"), "--preset", "sb3", "--out", c); err == nil || !strings.Contains(err.Error(), "--preset") {
		t.Errorf("--preset beside a run config: %v, want a refusal", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"env": "CartPole-v1", "ppo": {}, "colour": 1}`), 0o644)
	if err := train("--config", bad, "--out", c); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("unknown key in a run config: %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	start := time.Now()
	if err := train("--steps", "100000", "--out", file); err == nil || !strings.Contains(err.Error(), "--out "+file+" is a file") || time.Since(start) > 5*time.Second {
		t.Errorf("--out FILE: %v after %v, want a refusal before training", err, time.Since(start))
	}
}

// TestPPOTrainInterrupted: a cancelled context (what Ctrl-C does through
// interruptContext) stops ppo train with errInterrupted, which main prints as
// one "fedirl: interrupted (…)" line with exit status 130, and writes no
// --out folder.
func TestPPOTrainInterrupted(t *testing.T) {
	resetFlags(t)
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	// cobra keeps a subcommand's context from an earlier Execute in this
	// process, so the cancellable one is set on the command itself.
	train, _, err := rootCmd.Find([]string{"ppo", "train"})
	if err != nil {
		t.Fatal(err)
	}
	train.SetContext(ctx)
	defer train.SetContext(context.Background())
	rootCmd.SetArgs([]string{"ppo", "train", "--env", "CartPole-v1", "--steps", "50000000", "--out", out})
	start := time.Now()
	err = rootCmd.ExecuteContext(ctx)
	if !errors.Is(err, errInterrupted) || !strings.Contains(err.Error(), "nothing written") {
		t.Fatalf("ppo train under a cancelled context: %v", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("took %v to stop", time.Since(start))
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s written by an interrupted run", out)
	}
}
