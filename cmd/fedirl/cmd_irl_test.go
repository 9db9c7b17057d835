package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
)

// TestIRLCommandMatchesLibrary writes a spec and demonstrations, runs
// "fedirl irl" on them and checks the output against irl.MaxEnt called directly.
func TestIRLCommandMatchesLibrary(t *testing.T) {
	const S, A, d = 6, 2, 3
	rng := rand.New(rand.NewPCG(1, 1))
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
	for k := 0; k < S*A; k++ {
		for j := 0; j < d; j++ {
			phi.Set(k, j, rng.Float64())
		}
	}
	pi := mdp.NewPolicy(m)
	var demos []irl.Trajectory
	for len(demos) < 20 {
		s, a := m.Rollout(rng, pi, 30)
		if len(a) > 0 {
			demos = append(demos, irl.Trajectory{States: s, Actions: a})
		}
	}
	dir := t.TempDir()
	spec, demoFile, out := filepath.Join(dir, "mdp.json"), filepath.Join(dir, "demos.jsonl"), filepath.Join(dir, "theta.json")
	if err := irl.WriteSpecFile(spec, m, phi); err != nil {
		t.Fatal(err)
	}
	if err := irl.WriteTrajectoriesFile(demoFile, demos); err != nil {
		t.Fatal(err)
	}
	rootCmd.SetArgs([]string{"irl", "--spec", spec, "--demos", demoFile, "--out", out,
		"--temperature", "0.5", "--lr", "0.05", "--iters", "30", "--optimizer", "adam", "--l2", "0.01"})
	if err := rootCmd.Execute(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Theta      []float64 `json:"theta"`
		Iterations int       `json:"iterations"`
		LogLik     []float64 `json:"loglik"`
		GradNorm   []float64 `json:"grad_norm"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want, err := irl.MaxEnt(context.Background(), m, phi, demos, irl.Config{Temperature: 0.5, LearningRate: 0.05,
		MaxIter: 30, Optimizer: irl.OptimizerAdam, L2: 0.01, Solver: mdp.Options{Tol: 1e-10, Newton: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Iterations != want.Iterations || len(got.LogLik) != len(want.LogLik) || len(got.GradNorm) != len(want.GradNorm) {
		t.Fatalf("iterations %d (curve %d), want %d (curve %d)", got.Iterations, len(got.LogLik), want.Iterations, len(want.LogLik))
	}
	approx.Slices(t, "theta", got.Theta, want.Theta, 0, 1e-12)
	approx.Slices(t, "loglik", got.LogLik, want.LogLik, 0, 1e-12)

	// Every run says whether it converged: Newton reaches the tolerance, one
	// gradient step does not.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--optimizer", "newton", "--temperature", "1", "--l2", "0.1", "--grad-tol", "1e-8"}, "irl: converged after"},
		{[]string{"--iters", "1"}, "irl: warning: not converged: ‖∇‖ ="},
	} {
		var stderr strings.Builder
		rootCmd.SetErr(&stderr)
		rootCmd.SetArgs(append([]string{"irl", "--spec", spec, "--demos", demoFile, "--out", out}, c.args...))
		err := rootCmd.Execute()
		rootCmd.SetErr(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stderr.String(), c.want) {
			t.Fatalf("fedirl irl %v: stderr %q, want it to contain %q", c.args, stderr.String(), c.want)
		}
	}

	// A malformed demonstration file names file, line and field.
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"states":[0,1],"actions":[1]}`+"\n"+`{"states":[0,99],"actions":[1]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rootCmd.SetArgs([]string{"irl", "--spec", spec, "--demos", bad, "--out", out})
	err = rootCmd.Execute()
	if err == nil || !strings.Contains(err.Error(), bad+":2: field states[1]: state 99 out of range") {
		t.Fatalf("error = %v", err)
	}
}
