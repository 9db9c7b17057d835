package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/npy"
)

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
