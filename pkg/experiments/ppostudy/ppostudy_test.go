package ppostudy

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

// TestRunIsDeterministicAcrossJobs: the study's files do not depend on how
// many runs train at once, and the summary has one row per run with the
// CartPole target.
func TestRunIsDeterministicAcrossJobs(t *testing.T) {
	cfg, err := ppo.Preset("sb3")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TotalSteps = 4096
	cfg = cfg.WithDefaults()
	var runs []RunConfig
	for s := range 2 {
		runs = append(runs, RunConfig{Env: "CartPole-v1", Client: -1, Seed: uint64(s), Preset: "sb3", PPO: cfg,
			EvalEvery: 2048, EvalEpisodes: 2, Window: 10})
	}
	outs := [2]string{t.TempDir(), t.TempDir()}
	for j, out := range outs {
		md, err := Run(context.Background(), runs, []string{"CartPole-v1"}, Options{Out: out, Jobs: j + 1, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(md, "| CartPole-v1 | 0 | 4096 | 475 |") || !strings.Contains(md, "| CartPole-v1 | 1 | 4096 | 475 |") || !strings.Contains(md, " | 475 | ") {
			t.Fatalf("summary:\n%s", md)
		}
	}
	for _, f := range []string{"summary.csv", "summary.json", "CartPole-v1/seed0/curve.csv", "CartPole-v1/seed1/policy.json"} {
		a, err := os.ReadFile(filepath.Join(outs[0], f))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(outs[1], f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between --jobs 1 and 2", f)
		}
	}
	if _, err := os.Stat(filepath.Join(outs[0], "CartPole-v1.png")); err != nil {
		t.Error(err)
	}
	if _, err := Run(context.Background(), runs, nil, Options{Jobs: 0, Out: outs[0]}); err == nil {
		t.Error("jobs 0 accepted")
	}
}
