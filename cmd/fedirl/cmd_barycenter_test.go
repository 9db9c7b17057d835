package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/ot"
	"github.com/spf13/cobra"
)

// TestOTReadInputsErrors checks that bad measure files give errors naming
// the file and the problem.
func TestOTReadInputsErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", "[1, 2, 3]")
	for _, tc := range []struct {
		name, body string
		want       string
	}{
		{"ragged.json", "[[1, 2], [3]]", "ragged"},
		{"neg.json", "[1, -2, 3]", "negative"},
		{"zero.json", "[0, 0, 0]", "zero"},
		{"nan.csv", "1,NaN,3\n", "NaN"},
		{"null.json", "[1, null, 3]", "null"},
		{"short.json", "[1, 2]", "has 2 entries"},
		{"text.csv", "1,x,3\n", "not a number"},
		{"bad.npy", "not numpy", "not a .npy"},
		{"what.xyz", "1", "unknown extension"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(tc.name, tc.body)
			_, err := otReadInputs([]string{good, p})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %s and %q", err, tc.name, tc.want)
			}
		})
	}
}

// TestBarycenterCommand runs the command on a bundle and checks the output
// against the library on the same input.
func TestBarycenterCommand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bundle.json")
	bundle := `{"shape":[3,4],"measures":[[1,2,3,4,5,6,7,8,9,10,11,12],[12,11,10,9,8,7,6,5,4,3,2,1]],"weights":[0.25,0.75]}`
	if err := os.WriteFile(in, []byte(bundle), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.json")
	var got barycenterOutput
	runJSONCommand(t, newBarycenterCmd(), out, &got, "--method", "stabilized", "--tol", "1e-12", "-o", out, in)
	want, err := ot.LatticeBarycenter(ot.UniformLattice(1, 3, 4), [][]float64{
		{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}},
		[]float64{0.25, 0.75}, ot.BarycenterOptions{Method: ot.Stabilized, Tol: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "barycenter", got.Barycenter, want.Barycenter, 0, 0)
	if got.Iterations != want.Iterations || !got.Converged || got.MarginalError >= 1e-12 {
		t.Errorf("iterations %d (want %d), converged %v, error %g", got.Iterations, want.Iterations, got.Converged, got.MarginalError)
	}
}

// FuzzOTParseJSONArray checks the JSON measure parser never panics and that
// what it accepts is rectangular.
func FuzzOTParseJSONArray(f *testing.F) {
	for _, s := range []string{"[1,2]", "[[1,2],[3,4]]", "[[1],[2,3]]", "{}", "[null]", "[[[]]]", "1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, shape, err := otParseJSONArray(b)
		if err != nil {
			return
		}
		n := 1
		for _, s := range shape {
			n *= s
		}
		if n != len(x) {
			t.Fatalf("shape %v but %d values", shape, len(x))
		}
	})
}

// FuzzOTParseCSV checks the CSV measure parser never panics.
func FuzzOTParseCSV(f *testing.F) {
	for _, s := range []string{"1,2\n3,4\n", "1\n2\n", "a,b", "1,NaN", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		x, shape, err := otParseCSV(strings.NewReader(s))
		if err != nil {
			return
		}
		n := 1
		for _, d := range shape {
			n *= d
		}
		if n != len(x) {
			t.Fatalf("shape %v but %d values", shape, len(x))
		}
		for _, v := range x {
			_ = math.IsNaN(v)
		}
	})
}

// TestOTDistanceSwitchesToLogDomain: two Diracs at the ends of a 50-point
// line overflow the scaling form at the default ε; the command switches to
// the log domain, says so, and reports the entropic cost next to the exact
// W2² = 49² (the only coupling moves all mass 49 spacings).
func TestOTDistanceSwitchesToLogDomain(t *testing.T) {
	dir := t.TempDir()
	a, b := make([]float64, 50), make([]float64, 50)
	a[0], b[49] = 1, 1
	pa, pb, out := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"), filepath.Join(dir, "out.json")
	for p, m := range map[string][]float64{pa: a, pb: b} {
		raw, _ := json.Marshal(m)
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got otDistanceOutput
	runJSONCommand(t, newOTCmd(), out, &got, "distance", "--shape", "50", "-o", out, pa, pb)
	if !got.LogDomain || got.Switched == "" || got.ExactW2Sq == nil {
		t.Fatalf("output %+v", got)
	}
	approx.Equal(t, "exact W2²", *got.ExactW2Sq, 49*49, 1e-9, 0)
	approx.Equal(t, "entropic cost", got.EntropicCost, 49*49, 0, 1e-9)
}

// runJSONCommand runs cmd with args and decodes the JSON it wrote to out into v.
func runJSONCommand(t *testing.T, cmd *cobra.Command, out string, v any, args ...string) {
	t.Helper()
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}
