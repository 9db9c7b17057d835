package control

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// runStudy runs cfg into dir with the given GOMAXPROCS and writes the outputs.
func runStudy(t *testing.T, cfg Config, dir string, procs int, sh Shard) *Study {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	st, err := New(cfg, dir, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Run(context.Background(), sh); err != nil {
		t.Fatal(err)
	}
	if sh.Count <= 1 {
		if _, err := st.WriteOutputs(); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// files returns every file under dir except the log, by relative path.
func files(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "log.txt" {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFiles(t *testing.T, what string, a, b map[string][]byte) {
	t.Helper()
	for k, v := range a {
		w, ok := b[k]
		if !ok {
			t.Errorf("%s: %s missing from the second run", what, k)
		} else if !bytes.Equal(v, w) {
			t.Errorf("%s: %s differs", what, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			t.Errorf("%s: %s only in the second run", what, k)
		}
	}
}

// TestQuickDeterministicResumableSharded runs --quick: with GOMAXPROCS 1
// and 2 (byte-identical outputs), killed after some units and resumed
// (byte-identical, no finished unit recomputed), and as 3 shards merged
// (byte-identical to the single run).
func TestQuickDeterministicResumableSharded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quick study five times")
	}
	cfg := QuickConfig()
	root := t.TempDir()
	one, two := filepath.Join(root, "p1"), filepath.Join(root, "p2")
	runStudy(t, cfg, one, 1, Shard{})
	runStudy(t, cfg, two, 2, Shard{})
	ref := files(t, one)
	if len(ref) < 20 {
		t.Fatalf("the quick run wrote only %d files", len(ref))
	}
	for _, f := range []string{"curves.csv", "summary.md", "summary.csv", "summary.json", "irl_diagnostics.csv", "figure3.png", "figure5.png", "resolution.png", "config.yaml"} {
		if _, ok := ref[f]; !ok {
			t.Errorf("output %s missing", f)
		}
	}
	sameFiles(t, "GOMAXPROCS 1 vs 2", ref, files(t, two))

	// Kill after the 12th computed unit, then resume.
	killed := filepath.Join(root, "killed")
	ctx, cancel := context.WithCancel(context.Background())
	lw := &countingWriter{after: 12, cancel: cancel}
	st, err := New(cfg, killed, 2, lw)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Run(ctx, Shard{}); err == nil {
		t.Fatal("the killed run finished; kill it earlier")
	}
	before := map[string]time.Time{}
	filepath.WalkDir(filepath.Join(killed, "units"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") {
				t.Errorf("a temporary file survived the kill: %s", p)
			}
			info, _ := d.Info()
			before[p] = info.ModTime()
		}
		return nil
	})
	if len(before) == 0 {
		t.Fatal("the killed run left no finished unit")
	}
	st = runStudy(t, cfg, killed, 2, Shard{})
	total := 0
	for _, n := range st.Computed {
		total += n
	}
	units := 0
	for k := range ref {
		if strings.HasPrefix(k, "units"+string(filepath.Separator)) {
			units++
		}
	}
	if total != units-len(before) {
		t.Errorf("resume computed %d units; %d were missing (%d of %d on disk)", total, units-len(before), len(before), units)
	}
	for p, mt := range before {
		info, err := os.Stat(p)
		if err != nil || !info.ModTime().Equal(mt) {
			t.Errorf("finished unit %s was rewritten on resume", p)
		}
	}
	sameFiles(t, "killed and resumed", ref, files(t, killed))

	// Three shards, then merge.
	var dirs []string
	for i := range 3 {
		d := filepath.Join(root, "shard", string(rune('0'+i)))
		runStudy(t, cfg, d, 2, Shard{i, 3})
		dirs = append(dirs, d)
	}
	merged := filepath.Join(root, "merged")
	if _, err := Merge(merged, dirs); err != nil {
		t.Fatal(err)
	}
	st, err = New(cfg, merged, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.WriteOutputs(); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "3 shards merged", ref, files(t, merged))
}

// countingWriter cancels after a number of computed-unit log lines.
type countingWriter struct {
	mu     sync.Mutex
	n      int
	after  int
	cancel func()
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, line := range strings.Split(string(p), "\n") {
		if strings.HasPrefix(line, "  ") {
			w.n++
			if w.n == w.after {
				w.cancel()
			}
		}
	}
	return len(p), nil
}

// TestConfigErrors: bad configs and flags-turned-keys name what is wrong.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Envs = []string{"Nope-v0"} }, "Nope-v0"},
		{func(c *Config) { c.Study = "gridworld" }, "study"},
		{func(c *Config) {
			e := c.Env["Pendulum-v1"]
			e.Bins = map[string]int{"theta": 0}
			c.Env["Pendulum-v1"] = e
		}, "n = 0"},
		{func(c *Config) {
			e := c.Env["Pendulum-v1"]
			e.Bins = map[string]int{"zeta": 4}
			c.Env["Pendulum-v1"] = e
		}, "no lattice axis"},
		{func(c *Config) { c.Lattices["CartPole-v1"] = []string{"ultra"}; c.MemoryLimitGB = 0.01 }, "GB"},
		{func(c *Config) { c.Methods = []string{"median"} }, "median"},
	} {
		c := QuickConfig()
		c.Env = cloneEnv(c.Env)
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate = %v, want an error containing %q", err, tc.want)
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	os.WriteFile(p, []byte("study: gridworld\n"), 0o644)
	if _, err := LoadConfig(p, QuickConfig()); err == nil || !strings.Contains(err.Error(), "not the control study") {
		t.Errorf("a grid-world config: %v", err)
	}
	os.WriteFile(p, []byte("study: control\nnumber_of_clientz: 3\n"), 0o644)
	if _, err := LoadConfig(p, QuickConfig()); err == nil || !strings.Contains(err.Error(), "number_of_clientz") {
		t.Errorf("an unknown key: %v", err)
	}
}

func cloneEnv(m map[string]EnvConfig) map[string]EnvConfig {
	out := map[string]EnvConfig{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestPresetsValidate: every preset is a valid config, and all four
// environments are in each.
func TestPresetsValidate(t *testing.T) {
	for name, c := range map[string]Config{"quick": QuickConfig(), "default": DefaultConfig(), "full": FullConfig()} {
		if err := c.Validate(); err != nil {
			t.Errorf("%s preset: %v", name, err)
		}
		if len(c.Envs) != 4 {
			t.Errorf("%s preset has %d environments, want Pendulum, CartPole, Acrobot and LunarLander", name, len(c.Envs))
		}
	}
}
