package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// TestClientEvalIsTheClientsAnswer runs "fedirl client eval" on a small
// MDP and checks its output bit for bit against what "fedirl client"'s
// learner sends in a joint round (MaxEntLearner.Evaluate, and LocalUpdate
// for update fedavg), and that a one-shot task is refused.
func TestClientEvalIsTheClientsAnswer(t *testing.T) {
	const S, A, d = 6, 2, 3
	rng := rand.New(rand.NewPCG(2, 3))
	b := mdp.NewBuilder(S, A)
	b.Gamma = 0.9
	b.SetTerminal(S - 1)
	for s := 0; s < S-1; s++ {
		for a := 0; a < A; a++ {
			b.AddTransition(s, a, (s+1+a)%S, 0.8)
			b.AddTransition(s, a, rng.IntN(S), 0.2)
		}
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	phi := mat.NewDense(S*A, d, nil)
	for k := range S * A {
		for j := range d {
			phi.Set(k, j, rng.Float64())
		}
	}
	pi := mdp.NewPolicy(m)
	var demos []irl.Trajectory
	for len(demos) < 15 {
		if s, a := m.Rollout(rng, pi, 30); len(a) > 0 {
			demos = append(demos, irl.Trajectory{States: s, Actions: a})
		}
	}
	dir := t.TempDir()
	mdpFile, demoFile, thetaFile := filepath.Join(dir, "mdp.json"), filepath.Join(dir, "demos.jsonl"), filepath.Join(dir, "theta.json")
	if err := irl.WriteSpecFile(mdpFile, m, phi); err != nil {
		t.Fatal(err)
	}
	if err := irl.WriteTrajectoriesFile(demoFile, demos); err != nil {
		t.Fatal(err)
	}
	theta := []float64{0.3, -0.2, 0.1}
	if err := os.WriteFile(thetaFile, []byte("[0.3, -0.2, 0.1]"), 0o644); err != nil {
		t.Fatal(err)
	}
	learner, err := tasks.LoadMaxEntLearner(mdpFile, demoFile)
	if err != nil {
		t.Fatal(err)
	}
	learner.Solver = mdp.Options{Newton: true}
	for _, c := range []struct{ name, fusion string }{
		{"newton", `{"method": "joint"}`},
		{"fedavg", `{"method": "joint", "update": "fedavg", "local_steps": 2}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := federation.TaskSpec{ID: "j", EnvFamily: "custom", ThetaDim: d, IRL: json.RawMessage(`{"temperature": 0.2, "l2": 0.01}`),
				Fusion: json.RawMessage(c.fusion)}
			specFile, out := filepath.Join(dir, c.name+"-task.json"), filepath.Join(dir, c.name+"-eval.json")
			data, _ := json.Marshal(spec)
			if err := os.WriteFile(specFile, data, 0o644); err != nil {
				t.Fatal(err)
			}
			var got clientEvalOutput
			runJSONCommand(t, rootCmd, out, &got, "client", "eval", "--spec", specFile, "--mdp", mdpFile, "--demos", demoFile,
				"--theta", thetaFile, "--out", out)
			if c.name == "newton" {
				want, n, err := learner.Evaluate(context.Background(), spec, theta)
				if err != nil {
					t.Fatal(err)
				}
				if got.Value != want.Value || !slices.Equal(got.Grad, want.Grad) || !slices.Equal(got.Hess, want.Hess) || got.DemoCount != n || got.Update != nil {
					t.Fatalf("client eval wrote %+v, the learner's evaluation is %+v (demos %d)", got, want, n)
				}
				return
			}
			u, want, _, err := learner.LocalUpdate(context.Background(), spec, theta)
			if err != nil {
				t.Fatal(err)
			}
			if got.Value != want.Value || !slices.Equal(got.Grad, want.Grad) || !slices.Equal(got.Update, u) || got.Hess != nil {
				t.Fatalf("client eval wrote %+v, the learner's local update is %v with %+v", got, u, want)
			}
		})
	}
	spec := federation.TaskSpec{ID: "once", EnvFamily: "custom", ThetaDim: d, Fusion: json.RawMessage(`{"method": "mean"}`)}
	specFile := filepath.Join(dir, "once.json")
	data, _ := json.Marshal(spec)
	if err := os.WriteFile(specFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rootCmd.SetArgs([]string{"client", "eval", "--spec", specFile, "--mdp", mdpFile, "--demos", demoFile, "--theta", thetaFile, "--out", filepath.Join(dir, "x.json")})
	if err := rootCmd.Execute(); err == nil || !strings.Contains(err.Error(), "not joint") {
		t.Fatalf("a one-shot task: err %v, want a refusal naming joint", err)
	}
}
