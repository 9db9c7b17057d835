package control

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/fedirl/fedirl/pkg/longtest"
)

// TestResultsDefaultIsTheDefaultRun (long: the default study, about 5 min
// on 2 idle cores) runs `fedirl reproduce control` at its defaults and
// requires the committed results/default — the source of README-control.md's
// default-run tables, which go test ./pkg/doccheck holds to it — to be what
// the code writes now, byte for byte: so a change of the code that moves any
// number of those tables fails here until results/default is recomputed.
//
// The committed run was computed with the AVX2/FMA kernels (pkg/rl/nn,
// pkg/ot, pkg/mdp: AVX-512 sums in the same order, so Zen 3 and Xeon agree);
// the portable kernels round differently in the last bits, so a machine
// without them skips.
func TestResultsDefaultIsTheDefaultRun(t *testing.T) {
	if !longtest.Enabled() {
		t.Skip("the default study; set " + longtest.Var + "=1 (.ci/run does)")
	}
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		t.Skip("results/default was computed with the AVX2/FMA kernels; this CPU runs the portable ones")
	}
	dir := t.TempDir()
	st, err := New(DefaultConfig(), dir, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WriteConfig(); err != nil { // as `reproduce control` does before it runs
		t.Fatal(err)
	}
	if err := st.Run(context.Background(), Shard{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WriteOutputs(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.yaml", "summary.md", "summary.csv", "summary.json", "irl_diagnostics.csv"} {
		want, err := os.ReadFile(filepath.Join("results", "default", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Error(err)
			continue
		}
		if bytes.Equal(got, want) {
			continue
		}
		g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(g), len(w)); i++ {
			if i >= len(g) || i >= len(w) || g[i] != w[i] {
				t.Errorf("results/default/%s differs from the default run's from line %d:\n  run:       %.300s\n  committed: %.300s\n(recompute it: fedirl reproduce control --out DIR, copy %s)",
					name, i+1, line(g, i), line(w, i), name)
				break
			}
		}
	}
}

func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}
