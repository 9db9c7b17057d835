package report

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

func TestPairedDiffClosedForm(t *testing.T) {
	a := []float64{3, 5, 4, 6, 7}
	b := []float64{1, 4, 4, 3, 5}
	p, err := PairedDiff(a, b, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	// d = (2, 1, 0, 3, 2): mean 1.6, s² = (0.16+0.36+2.56+1.96+0.16)/4 = 1.3.
	se := math.Sqrt(1.3 / 5)
	const t4 = 2.7764451051977987 // t_{4, 0.975} (scipy.stats.t.ppf(0.975, 4))
	approx.Equal(t, "mean", p.Mean, 1.6, 1e-15, 0)
	approx.Equal(t, "stderr", p.StdErr, se, 1e-15, 1e-14)
	approx.Equal(t, "lo", p.Lo, 1.6-t4*se, 1e-12, 0)
	approx.Equal(t, "hi", p.Hi, 1.6+t4*se, 1e-12, 0)
	if !p.Excludes0() {
		t.Errorf("[%g, %g] should exclude 0", p.Lo, p.Hi)
	}
	if q, _ := PairedDiff(b, a, 0.95); q.Excludes0() != p.Excludes0() || q.Mean != -p.Mean {
		t.Errorf("swapping the methods should negate the mean: %+v", q)
	}
}

// TestPairedAtLevel: the same differences at 90 % have t_{4, 0.95} =
// 2.131846786 (scipy.stats.t.ppf(0.95, 4)) instead of t_{4, 0.975}.
func TestPairedAtLevel(t *testing.T) {
	p, err := PairedDiff([]float64{3, 5, 4, 6, 7}, []float64{1, 4, 4, 3, 5}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	q, err := p.AtLevel(0.9)
	if err != nil {
		t.Fatal(err)
	}
	se := math.Sqrt(1.3 / 5)
	approx.Equal(t, "mean", q.Mean, 1.6, 1e-15, 0)
	approx.Equal(t, "lo at 90 %", q.Lo, 1.6-2.131846786326649*se, 1e-12, 0)
	approx.Equal(t, "hi at 90 %", q.Hi, 1.6+2.131846786326649*se, 1e-12, 0)
	if q.Level != 0.9 || !(q.Hi-q.Lo < p.Hi-p.Lo) {
		t.Errorf("AtLevel(0.9) = %+v, narrower than %+v expected", q, p)
	}
}

// TestPairedDiffCriticalValues checks the interval's half-width against
// Student-t quantiles known in closed form or from tables: ν = 1 is the
// Cauchy law, t = tan(π(p − ½)); ν = 2 has t = (2p − 1)/√(2p(1 − p)); ν = 4
// and ν = 9 are the textbook 2.776 and 2.262 (95 %), ν = 4 at 90 % is 2.132.
func TestPairedDiffCriticalValues(t *testing.T) {
	for _, tc := range []struct {
		n     int
		level float64
		crit  float64
		tol   float64
	}{
		{2, 0.95, math.Tan(math.Pi * (0.975 - 0.5)), 1e-9},
		{3, 0.95, 0.95 / math.Sqrt(2*0.975*0.025), 1e-9},
		{5, 0.95, 2.776, 5e-4},
		{10, 0.95, 2.262, 5e-4},
		{5, 0.90, 2.132, 5e-4},
	} {
		// Differences 0, 2, 0, 2, …: mean and standard error by hand.
		a, b := make([]float64, tc.n), make([]float64, tc.n)
		sum := 0.0
		for i := range a {
			a[i] = float64(2 * (i % 2))
			sum += a[i]
		}
		mean := sum / float64(tc.n)
		ss := 0.0
		for _, x := range a {
			ss += (x - mean) * (x - mean)
		}
		se := math.Sqrt(ss / float64(tc.n-1) / float64(tc.n))
		p, err := PairedDiff(a, b, tc.level)
		if err != nil {
			t.Fatal(err)
		}
		approx.Equal(t, "mean", p.Mean, mean, 1e-15, 0)
		approx.Equal(t, "stderr", p.StdErr, se, 1e-15, 1e-14)
		approx.Equal(t, "critical value (hi)", (p.Hi-p.Mean)/se, tc.crit, tc.tol, 0)
		approx.Equal(t, "critical value (lo)", (p.Mean-p.Lo)/se, tc.crit, tc.tol, 0)
	}
}

func TestPairedDiffEdgeCases(t *testing.T) {
	if _, err := PairedDiff([]float64{1}, []float64{1, 2}, 0); err == nil {
		t.Error("different lengths accepted")
	}
	if _, err := PairedDiff([]float64{math.NaN()}, []float64{1}, 0); err == nil {
		t.Error("NaN accepted")
	}
	if _, err := PairedDiff([]float64{1}, []float64{1}, 1.5); err == nil {
		t.Error("level 1.5 accepted")
	}
	p, err := PairedDiff([]float64{2}, []float64{1}, 0)
	if err != nil || p.Mean != 1 || !math.IsNaN(p.Lo) {
		t.Fatalf("one draw: %+v, %v", p, err)
	}
	b, err := json.Marshal(p)
	if err != nil || !strings.Contains(string(b), `"lo":null`) {
		t.Fatalf("JSON of a one-draw comparison: %s, %v", b, err)
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{1, 2, 3, 4})
	approx.Equal(t, "mean", s.Mean, 2.5, 0, 0)
	approx.Equal(t, "std", s.Std, math.Sqrt(5.0/3), 1e-15, 0)
	if s := Summarize([]float64{7}); s.Std != 0 || s.N != 1 {
		t.Errorf("one value: %+v", s)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "x.json")
	if err := WriteJSON(p, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("second\n")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "second\n" {
		t.Fatalf("content %q", b)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
	if err := WriteFile(filepath.Join(p, "under-a-file"), nil); err == nil {
		t.Error("writing under a regular file succeeded")
	}
}

// TestRegimeOverridesYAMLWithoutComments checks that a comment after a
// regime's last override key (the next block's heading) is not part of the
// regime's overrides as written to a sweep's tables, while the overrides
// themselves are kept and still decode.
func TestRegimeOverridesYAMLWithoutComments(t *testing.T) {
	rs, err := LoadRegimes([]byte(`regimes:
  - name: a
    rationale: r
    overrides:
      x: 1 # inline
      y: {z: 2}
# Round 2: a heading for the next block
  - name: b
    rationale: r
`), "t.yaml", func(Regime) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	got := rs[0].OverridesYAML()
	if strings.Contains(got, "#") || strings.Contains(got, "Round 2") || strings.Contains(got, "inline") {
		t.Errorf("overrides carry the file's comments: %q", got)
	}
	var v struct {
		X int `yaml:"x"`
		Y struct {
			Z int `yaml:"z"`
		} `yaml:"y"`
	}
	if err := rs[0].Decode(&v, nil); err != nil || v.X != 1 || v.Y.Z != 2 {
		t.Errorf("overrides decode to %+v, %v; want x 1, y.z 2", v, err)
	}
	if !strings.Contains(got, "x: 1") || !strings.Contains(got, "z: 2") {
		t.Errorf("overrides lost keys: %q", got)
	}
}
