package control

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/longtest"
	"github.com/fedirl/fedirl/pkg/privacy"
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

// microConfig is the quick study cut to what exercises every unit kind
// (expert, baseline, demonstrations, local IRL, ladder, fusion, fidelity,
// evaluation) on a Box and a Discrete action space in a few seconds.
func microConfig() Config {
	c := QuickConfig()
	c.Envs = []string{"Pendulum-v1", "CartPole-v1"}
	c.NumberOfClients, c.HeldOutClients, c.NumberOfSeeds = 2, 1, 1
	c.EpisodesPerClient = 2
	c.Env = EnvConfigs{
		"Pendulum-v1": {TotalExpertSteps: 2048, IRLIterations: 4, EvaluationSteps: 2048, Features: "quadratic",
			Bins: map[string]int{"theta": 16, "thdot": 11}},
		"CartPole-v1": {TotalExpertSteps: 2048, IRLIterations: 4, EvaluationSteps: 1024, Features: "paper"},
	}
	c.Lattices = map[string][]string{"Pendulum-v1": {"paper"}, "CartPole-v1": {"paper"}}
	c.Barycenter.BarycenterIterations = 5
	c.Ladder.Episodes = 2
	c.LogEvery = 1024
	return c
}

// TestMicroDeterministicResumableSharded runs the micro study with
// GOMAXPROCS 1 and 2 (byte-identical outputs), killed after some units and
// resumed (byte-identical, no finished unit recomputed), and as 3 shards
// merged (byte-identical to the single run). The same test on the whole
// --quick study is TestQuickDeterministicResumableSharded (set
// FEDIRL_LONG_TESTS=1; .ci/run does).
func TestMicroDeterministicResumableSharded(t *testing.T) {
	checkDeterministicResumableSharded(t, microConfig(), 8)
}

// TestQuickDeterministicResumableSharded is the long variant of
// TestMicroDeterministicResumableSharded on the --quick preset.
func TestQuickDeterministicResumableSharded(t *testing.T) {
	if !longtest.Enabled() {
		t.Skipf("runs the quick study five times (about 2 minutes); set %s=1", longtest.Var)
	}
	checkDeterministicResumableSharded(t, QuickConfig(), 12)
}

func checkDeterministicResumableSharded(t *testing.T, cfg Config, killAfter int) {
	root := t.TempDir()
	one, two := filepath.Join(root, "p1"), filepath.Join(root, "p2")
	runStudy(t, cfg, one, 1, Shard{})
	runStudy(t, cfg, two, 2, Shard{})
	ref := files(t, one)
	if len(ref) < 20 {
		t.Fatalf("the quick run wrote only %d files", len(ref))
	}
	want := []string{"curves.csv", "summary.md", "summary.csv", "summary.json", "irl_diagnostics.csv", "figure3.png", "config.yaml"}
	if _, ok := ref["resolution.png"]; ok {
		t.Error("resolution.png drawn for a study with one lattice per environment")
	}
	if slices.Contains(cfg.Envs, "Acrobot-v1") {
		want = append(want, "figure5.png")
	}
	for _, f := range want {
		if _, ok := ref[f]; !ok {
			t.Errorf("output %s missing", f)
		}
	}
	sameFiles(t, "GOMAXPROCS 1 vs 2", ref, files(t, two))

	// Kill after the 12th computed unit, then resume.
	killed := filepath.Join(root, "killed")
	ctx, cancel := context.WithCancel(context.Background())
	lw := &countingWriter{after: killAfter, cancel: cancel}
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
		{func(c *Config) { c.Methods = []string{"medain", "true"} }, `methods: "medain" unknown`},
		{func(c *Config) { c.ModelRollouts.Clones = -1 }, "model_rollouts.clones"},
		{func(c *Config) { c.ModelRollouts.Epsilon = 2 }, "model_rollouts.epsilon"},
		{func(c *Config) { c.ModelRollouts.Episodes = 0 }, "model_rollouts.episodes"},
		{func(c *Config) { c.ModelRollouts.Clones, c.ModelRollouts.Count = 0, true }, "count, expand, successor and halt_reward apply"},
		{func(c *Config) { h := math.Inf(-1); c.ModelRollouts.HaltReward = &h }, "model_rollouts.halt_reward"},
		{func(c *Config) { c.ModelRollouts.Successor = "nearset" }, `model_rollouts.successor: "nearset"`},
		{func(c *Config) { c.Clips.Steps = 0 }, "clips.steps: 0, want ≥ 1"},
		{func(c *Config) { c.Clips.Enabled, c.Clips.Every = true, -2 }, "clips.every: -2, want ≥ 1"},
		{func(c *Config) { c.Clips.Height = 0 }, "clips.height: 0, want ≥ 1"},
		{func(c *Config) { c.Clips.Width = 10 }, "clips.width 10, clips.height 200: render: frame size 10×200 outside"},
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

func cloneEnv(m EnvConfigs) EnvConfigs {
	out := EnvConfigs{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestPresetsValidate: every preset, under both protocols, is a valid
// config; the full preset has all four environments, and every preset has
// settings for every environment so that --env can select any of them.
func TestPresetsValidate(t *testing.T) {
	for name, c := range map[string]Config{"quick": QuickConfig(), "default": DefaultConfig(), "full": FullConfig()} {
		for _, c := range []Config{c, PaperProtocol(c)} {
			if err := c.Validate(); err != nil {
				t.Errorf("%s preset, %s protocol: %v", name, c.Protocol, err)
			}
		}
		if name == "full" && len(c.Envs) != 4 {
			t.Errorf("full preset has %d environments, want Pendulum, CartPole, Acrobot and LunarLander", len(c.Envs))
		}
		for _, e := range []string{"Pendulum-v1", "CartPole-v1", "Acrobot-v1", "LunarLanderContinuous-v3"} {
			if _, ok := c.Env[e]; !ok {
				t.Errorf("%s preset has no settings for %s", name, e)
			}
		}
	}
	p := PaperProtocol(DefaultConfig())
	for _, e := range p.Envs {
		if l := p.Lattices[e]; len(l) != 1 || l[0] != "paper" {
			t.Errorf("paper protocol: %s lattices %v, want [paper]", e, l)
		}
		if p.Env[e].Features != "paper" || p.Env[e].IRLIterations > paperEnv(e).IRLIterations {
			t.Errorf("paper protocol: %s features %q, %d IRL iterations", e, p.Env[e].Features, p.Env[e].IRLIterations)
		}
	}
	if p.IRL != paperIRL || p.NormalizeReward || p.IRL.Absorbing || p.IRL.Horizon != "infinite" {
		t.Errorf("paper protocol IRL %+v, normalize_reward %v", p.IRL, p.NormalizeReward)
	}
}

// TestConfigMergesPartialBlocks: a partial per-environment block changes
// only the keys it names; other environments and keys keep the preset's
// values; an unknown key inside a block is named with its path.
func TestConfigMergesPartialBlocks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	os.WriteFile(p, []byte("env:\n  CartPole-v1:\n    evaluation_steps: 6000\n    bins: {x: 4}\nirl:\n  l2: 0.01\n"), 0o644)
	base := DefaultConfig()
	c, err := LoadConfig(p, base)
	if err != nil {
		t.Fatal(err)
	}
	want := base.Env["CartPole-v1"]
	want.EvaluationSteps, want.Bins = 6000, map[string]int{"x": 4}
	if got := c.Env["CartPole-v1"]; got.EvaluationSteps != 6000 || got.TotalExpertSteps != want.TotalExpertSteps ||
		got.IRLIterations != want.IRLIterations || got.Features != want.Features || got.Bins["x"] != 4 {
		t.Errorf("CartPole block %+v, want %+v", got, want)
	}
	if c.Env["Pendulum-v1"].Features != base.Env["Pendulum-v1"].Features || c.Env["Pendulum-v1"].EvaluationSteps != base.Env["Pendulum-v1"].EvaluationSteps {
		t.Errorf("Pendulum block changed: %+v", c.Env["Pendulum-v1"])
	}
	if c.IRL.L2 != 0.01 || c.IRL.Optimizer != base.IRL.Optimizer || c.IRL.Temperature != base.IRL.Temperature {
		t.Errorf("irl block %+v", c.IRL)
	}
	os.WriteFile(p, []byte("clips: {steps: 50}\n"), 0o644)
	if c, err := LoadConfig(p, base); err != nil || c.Clips != (ClipsConfig{true, 50, base.Clips.Every, base.Clips.Width, base.Clips.Height}) {
		t.Errorf("clips block %+v (%v), want the preset's with steps 50", c.Clips, err)
	}
	if base.Env["CartPole-v1"].EvaluationSteps == 6000 || base.Env["CartPole-v1"].Bins != nil {
		t.Error("loading a config changed the base preset")
	}
	os.WriteFile(p, []byte("env:\n  CartPole-v1:\n    evaluaton_steps: 6000\n"), 0o644)
	if _, err := LoadConfig(p, base); err == nil || !strings.Contains(err.Error(), "env.CartPole-v1.evaluaton_steps") {
		t.Errorf("unknown key in an env block: %v", err)
	}
}

// TestShardsPartitionUnits: for 2, 3 and 7 shards of the quick and default
// studies, every unit of the whole study is planned by exactly one shard,
// so the shards together compute what one run computes; the cost model's
// shard totals add up to its total.
func TestShardsPartitionUnits(t *testing.T) {
	for name, cfg := range map[string]Config{"quick": QuickConfig(), "default": DefaultConfig()} {
		st, err := New(cfg, t.TempDir(), 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		all := map[string]bool{}
		phases, _, err := st.plan(Shard{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ts := range phases {
			for _, u := range ts {
				all[u.u.kind+"/"+u.u.name+"-"+u.u.key] = true
			}
		}
		for _, n := range []int{2, 3, 7} {
			seen := map[string]int{}
			for i := range n {
				phases, _, err := st.plan(Shard{i, n})
				if err != nil {
					t.Fatal(err)
				}
				for _, ts := range phases {
					for _, u := range ts {
						seen[u.u.kind+"/"+u.u.name+"-"+u.u.key]++
					}
				}
			}
			for k := range all {
				if seen[k] != 1 {
					t.Errorf("%s, %d shards: unit %s planned by %d shards", name, n, k, seen[k])
				}
			}
			if len(seen) != len(all) {
				t.Errorf("%s, %d shards: %d units planned, the whole study has %d", name, n, len(seen), len(all))
			}
			p, err := st.PlanCosts(n)
			if err != nil {
				t.Fatal(err)
			}
			sum := 0.0
			for _, c := range p.Shards {
				sum += c
			}
			if math.Abs(sum-p.Total) > 1e-9*p.Total {
				t.Errorf("%s, %d shards: shard costs add up to %g, the total is %g", name, n, sum, p.Total)
			}
		}
	}
}

// TestPrivacyNoiseIndependentAcrossEpsilon runs the private study at three
// ε into one folder (the same experts and local fits) and recovers each ε's
// noise from the mean fusion: fused − mean_i clip(θ_i) is the mean of the
// clients' noise, N(0, (σ_ε·2C)²/K · I) for σ_ε from the analytic Gaussian
// mechanism, so z_ε = (fused − mean clip)·√K/(σ_ε·2C) is a standard normal
// vector. Each z_ε must be one (n·mean z² inside the χ²_n interval of
// probability 1 − 2·10⁻⁶), and the three must be independent draws: a noise
// stream shared across ε gives z_2 = z_8 = z_32 (correlation 1), independent
// ones a correlation within 5 standard errors of 0 (Fisher's z).
func TestPrivacyNoiseIndependentAcrossEpsilon(t *testing.T) {
	const env, lattice, clip, delta = "CartPole-v1", "paper", 2.0, 1e-5
	cfg := microConfig()
	cfg.Envs = []string{env}
	cfg.Methods = []string{MethodMean}
	cfg.NormalizationAnchor = AnchorExpert // no true-reward PPO in this study
	cfg.Env = cloneEnv(cfg.Env)
	e := cfg.Env[env]
	e.DPClip = clip
	cfg.Env[env] = e
	dir := t.TempDir()
	k := len(cfg.TrainingClients())
	var meanClip []float64
	z := map[float64][]float64{}
	epsilons := []float64{2, 8, 32}
	for _, eps := range epsilons {
		cfg.Privacy = PrivacyConfig{Epsilon: eps, Delta: delta}
		st := runStudy(t, cfg, dir, 2, Shard{})
		if meanClip == nil {
			for _, c := range cfg.TrainingClients() {
				u, _, err := st.irlUnit(env, lattice, c, cfg.Seed)
				if err != nil {
					t.Fatal(err)
				}
				var f IRLFile
				if err := readJSON(u.path(st.units), &f); err != nil {
					t.Fatal(err)
				}
				cl := privacy.Clip(nil, f.Theta, clip)
				if meanClip == nil {
					meanClip = make([]float64, len(cl))
				}
				floats.AddScaled(meanClip, 1/float64(k), cl)
			}
		}
		fu, _, _, err := st.fusionUnit(env, lattice, MethodMean, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		var f FusionFile
		if err := readJSON(fu.path(st.units), &f); err != nil {
			t.Fatal(err)
		}
		sigma, err := privacy.AnalyticSigma(eps, delta)
		if err != nil {
			t.Fatal(err)
		}
		zs := make([]float64, len(f.Theta))
		floats.SubTo(zs, f.Theta, meanClip)
		floats.Scale(math.Sqrt(float64(k))/(sigma*2*clip), zs)
		z[eps] = zs
	}
	n := float64(len(meanClip))
	chi := distuv.ChiSquared{K: n}
	lo, hi := chi.Quantile(1e-6), chi.Quantile(1-1e-6)
	for _, eps := range epsilons {
		if ss := floats.Dot(z[eps], z[eps]); ss < lo || ss > hi {
			t.Errorf("ε = %g: the standardized noise has ‖z‖² = %.1f over %v coordinates, outside the χ² interval [%.1f, %.1f]", eps, ss, n, lo, hi)
		}
	}
	bound := math.Tanh(5 / math.Sqrt(n-3))
	for i, a := range epsilons {
		for _, b := range epsilons[i+1:] {
			if r := stat.Correlation(z[a], z[b], nil); math.Abs(r) > bound {
				t.Errorf("ε = %g and %g: their noise correlates %.3f over %v coordinates (independent draws: |r| ≤ %.3f)", a, b, r, n, bound)
			}
		}
	}
}

// TestPrivacyNoisesTheFusedThetas: with privacy on, the mean fusion is the
// average of the clients' released θ_i = clip(θ_i) + noise, recomputed here
// from the local IRL units with the same mechanism and the client's seeded
// stream (which does not depend on the method, so every fusion of a seed
// receives the same released θ_i); the private fusion is a unit of its own;
// privacy without a clipping norm is refused.
func TestPrivacyNoisesTheFusedThetas(t *testing.T) {
	cfg := microConfig()
	cfg.Envs = []string{"Pendulum-v1"}
	cfg.Methods = []string{MethodMean}
	cfg.NormalizationAnchor = AnchorExpert // no true-reward PPO in this study
	cfg.Privacy = PrivacyConfig{Epsilon: 4, Delta: 1e-5}
	e := cfg.Env["Pendulum-v1"]
	e.DPClip = 2
	cfg.Env = cloneEnv(cfg.Env)
	cfg.Env["Pendulum-v1"] = e
	dir := t.TempDir()
	st := runStudy(t, cfg, dir, 2, Shard{})
	seed := cfg.Seed
	mech, err := privacy.New(privacy.Params{Epsilon: 4, Delta: 1e-5, Clip: 2, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	for c := range cfg.NumberOfClients {
		u, _, err := st.irlUnit("Pendulum-v1", "paper", c, seed)
		if err != nil {
			t.Fatal(err)
		}
		var f IRLFile
		if err := readJSON(u.path(filepath.Join(dir, "units")), &f); err != nil {
			t.Fatal(err)
		}
		r := mech.Release(nil, f.Theta, rand.New(rand.NewPCG(seedOf(seed, "dp-noise/Pendulum-v1/eps=4", c), 0)))
		if want == nil {
			want = make([]float64, len(r))
		}
		for j := range r {
			want[j] += r[j] / float64(cfg.NumberOfClients)
		}
	}
	fu, _, _, err := st.fusionUnit("Pendulum-v1", "paper", MethodMean, seed)
	if err != nil {
		t.Fatal(err)
	}
	var got FusionFile
	if err := readJSON(fu.path(filepath.Join(dir, "units")), &got); err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "mean of the released θ_i", got.Theta, want, 1e-12, 1e-12)

	// Without privacy the fusion unit is another unit with another θ.
	cfg.Privacy, e.DPClip = PrivacyConfig{}, 0
	cfg.Env["Pendulum-v1"] = e
	plain, err := New(cfg, dir, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	pu, _, _, err := plain.fusionUnit("Pendulum-v1", "paper", MethodMean, seed)
	if err != nil {
		t.Fatal(err)
	}
	if pu.key == fu.key {
		t.Error("the private and the plain fusion have the same unit key")
	}
	cfg.Privacy = PrivacyConfig{Epsilon: 4, Delta: 1e-5}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "dp_clip") {
		t.Errorf("privacy without env.*.dp_clip: %v", err)
	}
}

// TestLocalOnlyStudy runs the micro study with methods [local] only: no
// evaluation scores the held-out client, so its expert is never trained,
// and the summary must be written from the training clients' ends alone
// (it used to fail opening the held-out client's missing expert file).
func TestLocalOnlyStudy(t *testing.T) {
	c := microConfig()
	c.Envs = []string{"Pendulum-v1"}
	c.Methods = []string{MethodLocal}
	c.NormalizationAnchor = "expert"
	dir := t.TempDir()
	runStudy(t, c, dir, 2, Shard{})
	var sum struct {
		Experts []ExpertRow `json:"experts"`
		Rows    []struct {
			Method string `json:"method"`
			Group  string `json:"group"`
		} `json:"rows"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Experts) != c.NumberOfClients {
		t.Errorf("%d expert rows, want the %d training clients'", len(sum.Experts), c.NumberOfClients)
	}
	for _, e := range sum.Experts {
		if e.HeldOut {
			t.Errorf("expert row of held-out client %d, which no run evaluates", e.Client)
		}
	}
	if len(sum.Rows) == 0 {
		t.Fatal("no summary rows")
	}
	for _, r := range sum.Rows {
		if r.Method != MethodLocal || r.Group != "train" {
			t.Errorf("row %s/%s, want local/train only", r.Method, r.Group)
		}
	}
}
