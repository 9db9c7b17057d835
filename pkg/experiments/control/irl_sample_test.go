package control

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sampleMicroConfig is the micro study cut to Pendulum with two training
// clients, one seed and the sample-based learner with a few iterations of
// one PPO rollout each.
func sampleMicroConfig() Config {
	c := microConfig()
	c.Envs = []string{"Pendulum-v1"}
	c.HeldOutClients = 0
	c.Methods = []string{MethodLocal, MethodMean, MethodBarycenter, MethodTrue}
	ec := c.Env["Pendulum-v1"]
	ec.LocalIRL = LocalIRLSample
	ec.SampleIRL = &SampleIRLConfig{MaxIter: 2, Episodes: 4, LearningRate: 0.05}
	c.Env = EnvConfigs{"Pendulum-v1": ec}
	c.Lattices = map[string][]string{"Pendulum-v1": {"paper"}}
	return c
}

// TestSampleIRLStudyDeterministicResumes runs the sample micro study
// end to end twice into two folders (same bytes) and once more into the
// first (nothing recomputed), and checks that its local units are
// sample-based fits of the probe's dimension with their diagnostics, and
// that the lattice learner's unit keys are not those of the sample one.
func TestSampleIRLStudyDeterministicResumes(t *testing.T) {
	cfg := sampleMicroConfig()
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	start := time.Now()
	st := runStudy(t, cfg, a, 2, Shard{})
	t.Logf("sample micro study: %v, computed %v", time.Since(start).Round(time.Millisecond), st.Computed)
	runStudy(t, cfg, b, 2, Shard{})
	sameFiles(t, "two sample runs", files(t, a), files(t, b))

	again := runStudy(t, cfg, a, 2, Shard{})
	for k, n := range again.Computed {
		if n > 0 {
			t.Errorf("the resumed run computed %d %s units", n, k)
		}
	}
	p, err := st.probe("Pendulum-v1", "paper")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.TrainingClients() {
		u, sp, err := st.irlUnit("Pendulum-v1", "paper", c, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		if sp.Learner != LocalIRLSample || sp.Sample == nil {
			t.Fatalf("client %d: unit spec %+v is not the sample learner's", c, sp)
		}
		lu, _, err := st.latticeIRLUnit("Pendulum-v1", "paper", c, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		if lu.key == u.key {
			t.Errorf("client %d: the lattice and sample units share key %s", c, u.key)
		}
		var f IRLFile
		if err := readJSON(u.path(st.units), &f); err != nil {
			t.Fatal(err)
		}
		if len(f.Theta) != p.RBF.Dim() {
			t.Errorf("client %d: θ has %d entries, the features %d", c, len(f.Theta), p.RBF.Dim())
		}
		if f.Learner != LocalIRLSample || f.Sample == nil || f.Iterations < 1 || f.Iterations > 2 ||
			!(f.Sample.GapSE > 0) || !(f.Sample.Gap > 0) || len(f.Sample.GapHistory) != f.Iterations {
			t.Errorf("client %d: diagnostics %+v %+v", c, f, f.Sample)
		}
		if f.Converged != (f.Sample.Gap <= f.Sample.Tolerance*f.Sample.GapSE) {
			t.Errorf("client %d: converged %v with gap %g, SE %g, z %g", c, f.Converged, f.Sample.Gap, f.Sample.GapSE, f.Sample.Tolerance)
		}
	}
	diag, err := os.ReadFile(filepath.Join(a, "sample_irl_diagnostics.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(diag), "\n"); n < 1+len(cfg.TrainingClients()) {
		t.Errorf("sample_irl_diagnostics.csv has %d lines:\n%s", n, diag)
	}
	md, err := os.ReadFile(filepath.Join(a, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## Sample-based local IRL convergence") || !strings.Contains(string(md), "(sample)") {
		t.Errorf("summary.md lacks the sample fits' convergence table or the ladder's gap ± SE")
	}
}

// TestLatticeDefaultKeepsKeys checks that local_irl unset and
// local_irl: lattice (with or without a sample_irl block) give the same
// local IRL unit as before the key existed: the lattice unit's key.
func TestLatticeDefaultKeepsKeys(t *testing.T) {
	base := microConfig()
	st, err := New(base, t.TempDir(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := st.irlUnit("Pendulum-v1", "paper", 0, base.Seed)
	if err != nil {
		t.Fatal(err)
	}
	c := microConfig()
	ec := c.Env["Pendulum-v1"]
	ec.LocalIRL, ec.SampleIRL = LocalIRLLattice, &SampleIRLConfig{MaxIter: 3}
	c.Env["Pendulum-v1"] = ec
	st2, err := New(c, t.TempDir(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := st2.irlUnit("Pendulum-v1", "paper", 0, c.Seed)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("local_irl: lattice gives unit %+v, unset %+v", got, want)
	}
	y, err := base.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(y), "local_irl") || strings.Contains(string(y), "sample_irl") || strings.Contains(string(y), "probe") {
		t.Errorf("a lattice config's resolved YAML names the new keys:\n%s", y)
	}
}

// TestSampleIRLConfigErrors checks that bad local_irl and sample_irl
// settings are refused, naming the key, and that a partial sample_irl
// block merges into the preset's.
func TestSampleIRLConfigErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"env: {Pendulum-v1: {local_irl: tabular}}", "env.Pendulum-v1.local_irl"},
		{"env: {Pendulum-v1: {local_irl: sample, sample_irl: {episodes: 1}}}", "env.Pendulum-v1.sample_irl.episodes"},
		{"env: {Pendulum-v1: {local_irl: sample, sample_irl: {policy_steps: -5}}}", "env.Pendulum-v1.sample_irl.policy_steps"},
		{"env: {Pendulum-v1: {local_irl: sample, sample_irl: {max_iter: -1}}}", "env.Pendulum-v1.sample_irl.max_iter"},
		{"env: {Pendulum-v1: {local_irl: sample, sample_irl: {learning_rate: -0.1}}}", "env.Pendulum-v1.sample_irl.learning_rate"},
		{"env: {Pendulum-v1: {local_irl: sample, sample_irl: {temperature: .nan}}}", "env.Pendulum-v1.sample_irl.temperature"},
		{"env: {Pendulum-v1: {local_irl: sample, sample_irl: {tolerance: -2}}}", "env.Pendulum-v1.sample_irl.tolerance"},
		{"env: {Pendulum-v1: {local_irl: sample, sample_irl: {l2: .inf}}}", "env.Pendulum-v1.sample_irl.l2"},
		{"env: {Pendulum-v1: {local_irl: sample, sample_irl: {optimizer: lbfgs}}}", "env.Pendulum-v1.sample_irl.optimizer"},
		{"env: {Pendulum-v1: {local_irl: sample, sample_irl: {ppo_preset: nope}}}", "env.Pendulum-v1.sample_irl.ppo_preset"},
		{"env: {Pendulum-v1: {local_irl: sample, sample_irl: {ppo_steps: 10}}}", "env.Pendulum-v1.sample_irl.ppo_steps: unknown key"},
		{"env: {Pendulum-v1: {local_irl: sample, sample_irl: 3}}", "env.Pendulum-v1.sample_irl"},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(path, sampleMicroConfig())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.yaml, err, tc.want)
		}
	}
	base := sampleMicroConfig()
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("env: {Pendulum-v1: {sample_irl: {tolerance: 3}}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(path, base)
	if err != nil {
		t.Fatal(err)
	}
	got, orig := c.Env["Pendulum-v1"].SampleIRL, base.Env["Pendulum-v1"].SampleIRL
	if got.Tolerance != 3 || got.MaxIter != orig.MaxIter || got.Episodes != orig.Episodes || c.Env["Pendulum-v1"].LocalIRL != LocalIRLSample {
		t.Errorf("partial sample_irl block: got %+v (local_irl %q), want the preset's %+v with tolerance 3", got, c.Env["Pendulum-v1"].LocalIRL, orig)
	}
	if orig.Tolerance != 0 {
		t.Errorf("the merge wrote into the base config's block: %+v", orig)
	}
	if _, err := New(c, t.TempDir(), 1, nil); err != nil {
		t.Fatal(err)
	}
}
