package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/npy"
)

// writeMeasures writes k random positive measures of n entries as JSON
// arrays into dir, drawn from a fixed seed, and returns their paths.
func writeMeasures(t *testing.T, dir string, k, n int) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(38, 1))
	var paths []string
	for i := 0; i < k; i++ {
		var b strings.Builder
		b.WriteString("[")
		for j := 0; j < n; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%g", 0.01+rng.Float64())
		}
		b.WriteString("]")
		p := filepath.Join(dir, fmt.Sprintf("m%d.json", i))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// execute runs cmd with args and returns its stderr and error.
func execute(cmd *cobra.Command, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&stderr)
	err := cmd.Execute()
	return stderr.String(), err
}

// TestUnconvergedSolversAreLoud runs README's stabilized ε = 0.01 barycenter
// on a 32×21×5 lattice with a small cap (it stops unconverged) and an easy
// ot distance that stops at its cap: each warns on stderr naming the reached
// marginal error and --iters, still writes its output, and fails with
// --strict; a converged run prints nothing on stderr.
func TestUnconvergedSolversAreLoud(t *testing.T) {
	dir := t.TempDir()
	ms := writeMeasures(t, dir, 2, 32*21*5)
	out := filepath.Join(dir, "bar.json")
	bary := []string{"--method", "stabilized", "--eps", "0.01", "--shape", "32,21,5", "--categorical", "2", "--iters", "5", "--out", out, ms[0], ms[1]}
	small := writeMeasures(t, t.TempDir(), 2, 6)
	for _, c := range []struct {
		name string
		cmd  func() *cobra.Command
		args []string
	}{
		{"barycenter", newBarycenterCmd, bary},
		{"ot distance", newOTCmd, []string{"distance", "--iters", "2", "--tol", "1e-14", "--exact", "never", "--out", out, small[0], small[1]}},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(out)
			stderr, err := execute(c.cmd(), c.args...)
			if err != nil {
				t.Fatalf("without --strict: %v", err)
			}
			for _, want := range []string{"warning", "did not converge", "marginal error", "--iters", "--strict"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q does not contain %q", stderr, want)
				}
			}
			if _, err := os.Stat(out); err != nil {
				t.Errorf("no output written: %v", err)
			}
			os.Remove(out)
			_, err = execute(c.cmd(), append(c.args, "--strict")...)
			if err == nil || !strings.Contains(err.Error(), "did not converge") || !strings.Contains(err.Error(), "--iters") {
				t.Errorf("--strict: error %v, want one naming the non-convergence and --iters", err)
			}
			if _, err := os.Stat(out); err != nil {
				t.Errorf("--strict: output not written for inspection: %v", err)
			}
		})
	}
	// Converged: nothing on stderr, even with --strict.
	stderr, err := execute(newBarycenterCmd(), "--strict", "--eps", "1", "--tol", "1e-6", "--out", out, small[0], small[1])
	if err != nil || stderr != "" {
		t.Errorf("converged barycenter: error %v, stderr %q", err, stderr)
	}
}

// encodeNPY returns .npy bytes of the given dtype ("<f4", "<i8") and shape
// holding vals, by retyping pkg/npy's float64 encoding.
func encodeNPY(dtype string, shape []int, vals []float64) []byte {
	raw := npy.EncodeFloat64(shape, vals)
	hdr := strings.Replace(string(raw[:len(raw)-8*len(vals)]), "<f8", dtype, 1)
	var body bytes.Buffer
	for _, v := range vals {
		switch dtype {
		case "<f4":
			binary.Write(&body, binary.LittleEndian, math.Float32bits(float32(v)))
		case "<i8":
			binary.Write(&body, binary.LittleEndian, int64(v))
		case "<f2":
			binary.Write(&body, binary.LittleEndian, uint16(0))
		}
	}
	return append([]byte(hdr), body.Bytes()...)
}

// TestBarycenterNPYInputs: float32 and int64 .npy measures are read as the
// same measure as float64 ones; an unsupported dtype is refused naming the
// file and dtype; --shape contradicting the arrays' own shape is refused.
func TestBarycenterNPYInputs(t *testing.T) {
	dir := t.TempDir()
	vals := []float64{1, 2, 3, 4, 5, 6}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f64 := write("f64.npy", npy.EncodeFloat64([]int{2, 3}, vals))
	f32 := write("f32.npy", encodeNPY("<f4", []int{2, 3}, vals))
	i64 := write("i64.npy", encodeNPY("<i8", []int{2, 3}, vals))
	f16 := write("f16.npy", encodeNPY("<f2", []int{2, 3}, vals))
	var want barycenterOutput
	outW := filepath.Join(dir, "want.json")
	runJSONCommand(t, newBarycenterCmd(), outW, &want, "--out", outW, f64, f64)
	for _, p := range []string{f32, i64} {
		var got barycenterOutput
		out := filepath.Join(dir, "got.json")
		runJSONCommand(t, newBarycenterCmd(), out, &got, "--out", out, p, f64)
		if fmt.Sprint(got.Shape) != "[2 3]" || fmt.Sprint(got.Barycenter) != fmt.Sprint(want.Barycenter) {
			t.Errorf("%s: shape %v barycenter %v, want [2 3] %v", filepath.Base(p), got.Shape, got.Barycenter, want.Barycenter)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{f16, f64}, "f16.npy: has dtype <f2, want little-endian float64, float32, int64 or int32"},
		{[]string{"--shape", "3,2", f64, f64}, "--shape 3,2 contradicts the shape [2 3] of " + f64},
		{[]string{"--shape", "6", f64, f64}, "--shape 6 contradicts"},
	} {
		if _, err := execute(newBarycenterCmd(), append(c.args, "--out", filepath.Join(dir, "x.json"))...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
	other := write("other.npy", npy.EncodeFloat64([]int{3, 2}, vals))
	if _, err := execute(newBarycenterCmd(), "--out", filepath.Join(dir, "x.json"), f64, other); err == nil || !strings.Contains(err.Error(), "other.npy has shape [3 2]") {
		t.Errorf("measures of different shapes: error %v", err)
	}
}

// TestConnHintNamesTheFlag: each connection mistake that no retry fixes is
// reported with the flag that fixes it; other errors pass through unchanged.
func TestConnHintNamesTheFlag(t *testing.T) {
	for kind, want := range map[error]string{
		federation.ErrPlaintextServer: "give the client --insecure",
		federation.ErrTLSServer:       "drop --insecure",
		federation.ErrUnknownHost:     "--server",
		federation.ErrCertificate:     "--ca",
	} {
		err := connHint(fmt.Errorf("task t: %w", &federation.ConnError{Kind: kind, Msg: "transport says"}))
		if !errors.Is(err, kind) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "transport says") {
			t.Errorf("%v: %q, want the kind, the transport's message and %q", kind, err, want)
		}
	}
	plain := errors.New("Unavailable: connection refused")
	if connHint(plain) != plain {
		t.Errorf("a transient error was rewritten: %v", connHint(plain))
	}
}

// TestClientRerunKeepsReport: a client run that found its task already fused
// (nothing learnt or submitted) does not overwrite an existing --out; a run
// that learnt does, and a first run writes even with nothing learnt.
func TestClientRerunKeepsReport(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "report.json")
	learnt := federation.ClientReport{TaskID: "t", ClientID: "c0", Rounds: []federation.RoundReport{{Round: 1, Local: federation.LocalResult{Theta: []float64{1, 2}}}},
		Final: federation.FusedResult{Theta: []float64{3, 4}, Method: "mean"}}
	rerun := federation.ClientReport{TaskID: "t", ClientID: "c0", Rounds: []federation.RoundReport{{Round: 1}}, Final: learnt.Final}
	var stderr bytes.Buffer
	if err := writeClientReport(&stderr, out, learnt); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(out)
	if err := writeClientReport(&stderr, out, rerun); err != nil {
		t.Fatal(err)
	}
	if kept, _ := os.ReadFile(out); !bytes.Equal(kept, first) || !strings.Contains(stderr.String(), "kept "+out) {
		t.Errorf("rerun after fusion: file changed %v, stderr %q", !bytes.Equal(kept, first), stderr.String())
	}
	fresh := filepath.Join(dir, "fresh.json")
	if err := writeClientReport(&stderr, fresh, rerun); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(fresh); err != nil || !strings.Contains(string(b), `"mean"`) {
		t.Errorf("first run with nothing learnt: %s, %v", b, err)
	}
}

// TestOutIntoAnotherRunRefused: a study, sweep or ppo train run whose --out
// holds another command's run is refused before anything is written; its
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

// TestControlMergeRefusesForeignShards: merge refuses, in one line naming
// the folder, a shard with another config, a grid-world run folder, and a
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
