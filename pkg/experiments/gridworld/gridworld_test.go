package gridworld

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/fedirl/fedirl/pkg/approx"
	gw "github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
)

func tinyConfig() Config {
	c := DefaultConfig()
	c.NumberOfSeeds = 2
	c.Environments = []EnvConfig{{GridSize: 5, NumberOfClients: 3}, {GridSize: 6, NumberOfClients: 2, HeldOutEnvironments: 2}}
	c.IRL.IRLIterations = 10
	c.Evaluation.EvaluationEpisodes = 30
	c.Ablation.NumberOfClients = 4
	c.Ablation.NumberOfSeeds = 2
	c.Barycenter.BarycenterIterations = 10
	return c
}

// TestGridWorldDeterministic runs the same study with 1 and 2 workers and
// GOMAXPROCS 1 and 2 and requires byte-identical run files.
func TestGridWorldDeterministic(t *testing.T) {
	c := tinyConfig()
	var first map[string][]byte
	for _, run := range []struct{ workers, procs int }{{1, 1}, {2, 2}, {2, 1}} {
		prev := runtime.GOMAXPROCS(run.procs)
		c.Workers = run.workers
		st, err := GridWorld(context.Background(), c, nil)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		c.Workers = 2 // the config file records the same value for all runs
		st.Config.Workers = 2
		dir := t.TempDir()
		if err := st.WriteRun(dir); err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{}
		for _, name := range RunFiles {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			files[name] = data
		}
		if first == nil {
			first = files
			continue
		}
		for name, data := range files {
			if !bytes.Equal(data, first[name]) {
				t.Errorf("workers %d GOMAXPROCS %d: %s differs from the first run", run.workers, run.procs, name)
			}
		}
	}
}

// TestGridWorldTables checks the study's structure: the rows and columns of
// both tables, success rates in [0, 100], and that the expert's own reward
// succeeds at least as often as a reward that ignores the goal.
func TestGridWorldTables(t *testing.T) {
	c := tinyConfig()
	st, err := GridWorld(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	t1 := st.Table1()
	if len(t1) != 2 || t1[0].GridSize != 5 || t1[1].GridSize != 6 {
		t.Fatalf("Table 1 rows %+v", t1)
	}
	for _, r := range t1 {
		if r.InDist[ColLocal].N != 2*r.Clients || r.HeldOutS[ColLocal].N != 0 || r.HeldOutS[fusion.MethodBarycenter].N != 2*r.HeldOut {
			t.Fatalf("grid %d: pooled counts in %d, held-out local %d, held-out bary %d", r.GridSize, r.InDist[ColLocal].N, r.HeldOutS[ColLocal].N, r.HeldOutS[fusion.MethodBarycenter].N)
		}
		// local, personalized, the fusions, pooled and expert in; the fusions, pooled and expert held out.
		if len(r.InDist) != 4+len(DefaultFusionMethods) || len(r.HeldOutS) != 2+len(DefaultFusionMethods) {
			t.Fatalf("grid %d: columns in %d, held-out %d", r.GridSize, len(r.InDist), len(r.HeldOutS))
		}
		for m := range r.InDist {
			for _, s := range []Stat{r.InDist[m], r.HeldOutS[m]} {
				if s.N > 0 && (s.Mean < 0 || s.Mean > 100 || s.Std < 0) {
					t.Fatalf("grid %d %v: %+v", r.GridSize, m, s)
				}
			}
		}
	}
	t2 := st.Table2()
	if len(t2) != 3 || t2[2].WeakClients != 2 || t2[1].WeakClients != 1 {
		t.Fatalf("Table 2 rows %+v", t2)
	}
	// Weak clients really got smaller budgets.
	for _, fs := range st.Ablation {
		weak := 0
		for _, b := range fs[2].Budgets {
			if b < c.IRL.IRLIterations {
				weak++
			}
		}
		if weak != 2 {
			t.Fatalf("p = 0.5 with 4 clients: %d weak budgets %v, want 2", weak, fs[2].Budgets)
		}
	}
	// The true reward's policy succeeds more often than a goal-blind one.
	e := st.Cells[0][0].clients[0]
	expert := e.Grid.SuccessProbability(e.GreedyPolicy(c.Expert.TrueReward))
	blind := e.Grid.SuccessProbability(e.GreedyPolicy([]float64{0, 1}))
	if !(expert > blind) || expert < 0.5 {
		t.Fatalf("expert success %v, goal-blind %v", expert, blind)
	}
	if _, err := st.Figure2PNG(5); err != nil {
		t.Fatal(err)
	}
}

// expert5 returns the first 5×5 client of seed 1 and its expert policy.
func expert5(t *testing.T) (*Env, []int) {
	t.Helper()
	spec, err := gw.DefaultFamily(5).Client(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEnv(spec, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	return e, e.GreedyPolicy([]float64{-1, 0.5})
}

// TestDemonstrationsFollowExpert checks that demonstrations are valid
// trajectories of the expert policy padded in their absorbing cell.
func TestDemonstrationsFollowExpert(t *testing.T) {
	e, pol := expert5(t)
	demos, live := e.Demonstrations(stream(1, 5, purposeDemo, 0), pol, 5)
	if live == 0 {
		t.Fatal("no live steps")
	}
	for _, d := range demos {
		if len(d.Actions) != padLength(0.95) || len(d.States) != len(d.Actions)+1 {
			t.Fatalf("lengths %d/%d", len(d.States), len(d.Actions))
		}
		for k, s := range d.States[:len(d.Actions)] {
			if !e.Grid.IsTerminal(s) && d.Actions[k] != pol[s] {
				t.Fatalf("step %d: action %d, expert %d", k, d.Actions[k], pol[s])
			}
			if e.Grid.IsTerminal(s) && d.States[k+1] != s {
				t.Fatal("left an absorbing cell")
			}
		}
	}
}

func TestConfigValidateAndLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(good, []byte("number_of_seeds: 7\nbarycenter:\n  entropic_regularization: 0.25\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(good, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if c.NumberOfSeeds != 7 || c.Barycenter.EntropicRegularization != 0.25 || c.Barycenter.SinkhornIterations != 10 {
		t.Fatalf("loaded %+v", c)
	}
	for _, bad := range []string{"number_of_seeds: 0\n", "typo_key: 1\n", "barycenter:\n  method: debiased\n", "irl:\n  irl_algorithm: gail\n", "expert:\n  true_reward: [1]\n"} {
		p := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadConfig(p, DefaultConfig()); err == nil {
			t.Errorf("config %q accepted", bad)
		}
	}
}

// TestConfigErrorsNameKeys: every rejected value, wrong type or unknown key
// is reported with its config key.
func TestConfigErrorsNameKeys(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ yaml, key string }{
		{"number_of_seeds: 0\n", "number_of_seeds"},
		{"number_of_seeds: abc\n", "number_of_seeds"},
		{"typo_key: 1\n", "typo_key"},
		{"evaluation: {typo: 1}\n", "evaluation.typo"},
		{"evaluation:\n  seed: -1\n", "evaluation.seed"},
		{"evaluation: {method: mc}\n", "evaluation.method"},
		{"evaluation: {evaluation_episodes: 0}\n", "evaluation.evaluation_episodes"},
		{"environments:\n  - {grid_size: 5, number_of_clients: x}\n", "environments[0].number_of_clients"},
		{"environments:\n  - {grid_size: 5, number_of_clients: 3, slip_max: 1.5}\n", "environments[0].slip_max"},
		{"environments:\n  - {grid_size: 5, number_of_clients: 3, obstacles: 20}\n", "environments[0].obstacles"},
		{"environments:\n  - {grid_size: 5, number_of_clients: 3, held_out_environments: -1}\n", "environments[0].held_out_environments"},
		{"environments:\n  - {grid_size: 5, number_of_clients: 3, max_episode_length: -2}\n", "environments[0].max_episode_length"},
		{"expert: {true_reward: [1]}\n", "expert.true_reward"},
		{"expert: {true_reward: [1, .nan]}\n", "expert.true_reward[1]"},
		{"irl: {irl_iterations: 0}\n", "irl.irl_iterations"},
		{"irl: {irl_learning_rate: -1}\n", "irl.irl_learning_rate"},
		{"irl: {temperature: 0}\n", "irl.temperature"},
		{"irl: {reward_regularization_l2: -1}\n", "irl.reward_regularization_l2"},
		{"irl: {optimizer: sgd}\n", "irl.optimizer"},
		{"barycenter: {entropic_regularization: 0}\n", "barycenter.entropic_regularization"},
		{"barycenter: {sinkhorn_iterations: 0}\n", "barycenter.sinkhorn_iterations"},
		{"barycenter: {barycenter_iterations: 0}\n", "barycenter.barycenter_iterations"},
		{"barycenter: {shift: -1}\n", "barycenter.shift"},
		{"barycenter: {scale: -1}\n", "barycenter.scale"},
		{"barycenter: {weights: some}\n", "barycenter.weights"},
		{"barycenter: {method: debiased}\n", "barycenter.method"},
		{"ablation: {grid_size: 2}\n", "ablation.grid_size"},
		{"ablation: {number_of_clients: 0}\n", "ablation.number_of_clients"},
		{"ablation: {weak_fractions: []}\n", "ablation.weak_fractions"},
		{"ablation: {weak_fractions: [a, 0.5]}\n", "ablation.weak_fractions[0]"},
		{"ablation: {weak_fractions: [0.5, 2]}\n", "ablation.weak_fractions[1]"},
		{"ablation: {weak_factor_min: 0}\n", "ablation.weak_factor_min"},
		{"ablation: {weak_factor_max: 0.01}\n", "ablation.weak_factor_max"},
		{"ablation: {number_of_seeds: -1}\n", "ablation.number_of_seeds"},
		{"ablation: {init_scale: -1}\n", "ablation.init_scale"},
		{"ablation: {weak_theta_noise: -0.1}\n", "ablation.weak_theta_noise"},
		{"ablation: {weak_expert_epsilon: 1.5}\n", "ablation.weak_expert_epsilon"},
		{"ablation: {weak_episodes: -2}\n", "ablation.weak_episodes"},
		{"jobs: -1\n", "jobs"},
		{"jobs: 2\nworkers: 3\n", "both jobs (line 1) and its old name workers (line 2)"},
		{"privacy: {epsilon: -1, delta: 1e-5, clip: 1}\n", "privacy.epsilon"},
		{"privacy: {epsilon: .inf, delta: 1e-5, clip: 1}\n", "privacy.epsilon"},
		{"privacy: {epsilon: 1, delta: 1, clip: 1}\n", "privacy.delta"},
		{"privacy: {epsilon: 1, delta: 1e-5}\n", "privacy.clip"},
		{"privacy: {epsilon: 1, delta: 1e-5, clip: .nan}\n", "privacy.clip"},
		{"privacy: {delta: 1e-5}\n", "privacy.delta"},
		{"privacy: {clip: 0.1}\n", "privacy.clip"},
		{"privacy: {epsilon: 1, delta: 1e-5, clip: 1}\nbarycenter: {weights: demonstrations}\n", "barycenter.weights"},
		{"fusion_methods: [mean, fedavg, barycenter]\n", "fusion_methods[1]"},
		{"fusion_methods: [normalized-mean, barycenter]\n", "fusion_methods"},
		{"fusion_methods: [mean, barycenter, mean]\n", "fusion_methods[2]"},
		{"fusion_methods: [mean, barycenter, barycentric]\n", "write \"barycenter\""},
		{"fusion_methods: [mean, barycenter, median/per-client]\n", "sigma_mode"},
		{"fusion_methods: [mean, barycenter, normalized-mean/own]\n", "fusion_methods[2]"},
		{"fusion_methods: [mean, barycenter, normalized-mean/per-client]\nbarycenter: {shift: 2}\n", "fusion.sigma"},
	} {
		p := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(p, DefaultConfig())
		if err == nil {
			t.Errorf("config %q accepted", tc.yaml)
			continue
		}
		if !strings.Contains(err.Error(), tc.key) {
			t.Errorf("config %q: error %q does not name %s", tc.yaml, err, tc.key)
		}
	}
}

func BenchmarkLocalIRL10x10(b *testing.B) {
	c := DefaultConfig()
	env, demos, err := c.ClientTask(10, 0, 0, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := env.LocalIRL(context.Background(), demos, c.IRL, c.IRL.IRLIterations, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*c.IRL.IRLIterations)/b.Elapsed().Seconds(), "irl-steps/s")
}

func BenchmarkEvaluatePolicy20x20(b *testing.B) {
	c := DefaultConfig()
	env, _, err := c.ClientTask(20, 0, 0, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.success(env, 1, 20, 0, c.Expert.TrueReward)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evaluations/s")
}

// FuzzLoadConfig: any file content yields a config or an error, never a panic,
// and an accepted config validates.
func FuzzLoadConfig(f *testing.F) {
	f.Add([]byte("number_of_seeds: 3\n"))
	f.Add([]byte("{\"irl\": {\"irl_iterations\": 5}}"))
	f.Add([]byte("environments: [{grid_size: 4, number_of_clients: 2}]\n"))
	f.Add([]byte("ablation: {weak_fractions: [0.1, 2]}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := LoadConfig(p, DefaultConfig())
		if err == nil {
			if err := c.Validate(); err != nil {
				t.Fatalf("accepted config fails validation: %v", err)
			}
		}
	})
}

func TestClientTaskRangeChecked(t *testing.T) {
	c := DefaultConfig()
	if _, _, err := c.ClientTask(5, 2, 0, 1); err != nil {
		t.Fatalf("client 2 of the 5×5 study refused: %v", err)
	}
	for _, i := range []int{-1, 3, 1000} {
		if _, _, err := c.ClientTask(5, i, 0, 1); err == nil {
			t.Errorf("client %d of the 3-client 5×5 study accepted", i)
		}
	}
	if _, _, err := c.ClientTask(5, 3, 4, 1); err != nil {
		t.Errorf("client 3 of a 4-client federation refused: %v", err)
	}
}

// TestNoisyDemonstrations: with ε = 0 the ε-greedy expert draws exactly what
// Demonstrations draws; with ε = 1 its live actions are uniform (a χ² test
// with 3 degrees of freedom at the 0.1 % level, 4000+ draws).
func TestNoisyDemonstrations(t *testing.T) {
	e, pol := expert5(t)
	a, na := e.Demonstrations(stream(3, 5, purposeDemo, 0), pol, 7)
	b, nb := e.NoisyDemonstrations(stream(3, 5, purposeDemo, 0), pol, 7, 0)
	if na != nb || !reflect.DeepEqual(a, b) {
		t.Fatal("ε = 0 differs from Demonstrations")
	}
	d, _ := e.NoisyDemonstrations(stream(3, 5, purposeWeakDemo, 0), pol, 1000, 1)
	counts := make([]float64, e.MDP.NumActions)
	total := 0.0
	for _, tr := range d {
		for k, s := range tr.States[:len(tr.Actions)] {
			if !e.Grid.IsTerminal(s) {
				counts[tr.Actions[k]]++
				total++
			}
		}
	}
	if total < 4000 {
		t.Fatalf("only %v live steps", total)
	}
	chi2 := 0.0
	for _, c := range counts {
		exp := total / float64(len(counts))
		chi2 += (c - exp) * (c - exp) / exp
	}
	if chi2 > 16.27 { // χ²(3) 99.9 % quantile
		t.Fatalf("ε = 1 actions not uniform: counts %v, χ² = %.2f", counts, chi2)
	}
}

// TestWeakClientSettings: a weak client keeps its environment and starting
// θ, gets weak_episodes new demonstrations, and sends its learned θ plus the
// configured noise (drawn from its own stream, so equal for equal keys).
func TestWeakClientSettings(t *testing.T) {
	c := QuickConfig()
	c.Ablation.WeakEpisodes = 3
	c.Ablation.WeakExpertEpsilon = 0.3
	c.Ablation.WeakThetaNoise = 0.05
	st, err := c.buildSetup(c.ablationEnv(), 2)
	if err != nil {
		t.Fatal(err)
	}
	full := c.studyClients(st)
	w := c.weakClient(full[1], 2, 2, 1, 1)
	if w.env != full[1].env || len(w.demos) != 3 || w.budget != 2 {
		t.Fatalf("weak client: env shared %v, %d demos, budget %d", w.env == full[1].env, len(w.demos), w.budget)
	}
	if len(w.noise) != 2 || w.noise[0] == 0 {
		t.Fatalf("noise %v", w.noise)
	}
	if w2 := c.weakClient(full[1], 2, 2, 1, 1); !reflect.DeepEqual(w.noise, w2.noise) || !reflect.DeepEqual(w.demos, w2.demos) {
		t.Fatal("same keys, different draws")
	}
	if w3 := c.weakClient(full[1], 2, 2, 2, 1); reflect.DeepEqual(w.noise, w3.noise) {
		t.Fatal("another p index drew the same noise")
	}
	got, err := w.Learn(context.Background(), federation.TaskSpec{ID: "t", ThetaDim: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := got.Theta
	direct, err := w.env.LocalIRL(context.Background(), w.demos, c.IRL, 2, w.theta0)
	if err != nil {
		t.Fatal(err)
	}
	for k := range res {
		if want := direct.Theta[k] + w.noise[k]; res[k] != want {
			t.Fatalf("sent θ[%d] = %v, want learned %v + noise %v", k, res[k], direct.Theta[k], w.noise[k])
		}
	}
}

// TestFigure2ClientRule: Figure 2's rows are the locally worst client
// (lowest index on ties), then the others by index.
func TestFigure2ClientRule(t *testing.T) {
	f := &Fit{InDist: map[string][]float64{}}
	f.InDist[ColLocal] = []float64{0.9, 0.5, 0.95, 0.5}
	if got := figure2Clients(f, 3); !reflect.DeepEqual(got, []int{1, 0, 2}) {
		t.Fatalf("rows %v, want [1 0 2]", got)
	}
	f.InDist[ColLocal] = []float64{0.2, 0.9}
	if got := figure2Clients(f, 3); !reflect.DeepEqual(got, []int{0, 1}) {
		t.Fatalf("rows %v, want [0 1]", got)
	}
}

// TestFusionMethodsAreColumns: fusion_methods names the study's columns from
// fusion's registry (a robust aggregator, a per-client σ variant); every
// table, the sweep row and the plots take them, and each column's θ is the
// one fusion.Fuse gives on the cell's clients.
func TestFusionMethodsAreColumns(t *testing.T) {
	c := tinyConfig()
	c.NumberOfSeeds = 1
	c.Environments = c.Environments[:1]
	c.Ablation.NumberOfSeeds = 1
	c.Ablation.WeakFractions = []float64{0.5}
	c.FusionMethods = []string{"mean", "barycenter", "median", "normalized-mean/per-client"}
	st, err := GridWorld(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := st.Cells[0][0]
	for _, m := range append(c.FusionMethods, ColExpert) {
		if len(f.InDist[m]) != 3 || len(f.HeldOut[m]) != 3 {
			t.Fatalf("column %s: %d in-distribution and %d held-out rates", m, len(f.InDist[m]), len(f.HeldOut[m]))
		}
	}
	p, err := fusion.Fuse(f.probe, f.Local, nil, fusion.Options{Method: "normalized-mean", SigmaMode: "per-client"})
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "normalized-mean/per-client θ", f.Fused["normalized-mean/per-client"], p.Theta, 0, 0)
	med, err := fusion.Fuse(fusion.Probe{}, f.Local, nil, fusion.Options{Method: "median"})
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "median θ", f.Fused["median"], med.Theta, 0, 0)
	md := string(st.Table1Markdown())
	for _, want := range []string{"In: median", "Held-out: normalized-mean/per-client", "barycenter − mean", "mean − local"} {
		if !strings.Contains(md, want) {
			t.Errorf("table1.md lacks %q", want)
		}
	}
	if strings.Contains(md, "normalized-mean − mean") {
		t.Error("table1.md compares normalized-mean, which this study does not fuse")
	}
	rows := sweepRows("r", st)
	// barycenter − mean, mean − local and the joint block's four in; barycenter − mean and pooled − mean, − barycenter held out.
	if _, ok := rows[0].InSuccess["median"]; !ok || len(rows[0].In) != 6 || len(rows[0].HeldOut) != 3 {
		t.Errorf("sweep row %+v", rows[0])
	}
	if _, err := st.SuccessPNG(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ThetaPNG(); err != nil {
		t.Fatal(err)
	}
	seen := map[columnStyle]string{}
	for _, m := range append(slices.Clone(DefaultFusionMethods), ColExpert, ColLocal) {
		if other, ok := seen[styleOf(m)]; ok {
			t.Errorf("%s and %s share a style", m, other)
		}
		seen[styleOf(m)] = m
	}
}

// TestConfigOldWorkersKey: the old key workers is still read, as jobs, with
// a deprecation warning naming both keys; written configs say jobs.
func TestConfigOldWorkersKey(t *testing.T) {
	var warned []string
	old := Warn
	Warn = func(m string) { warned = append(warned, m) }
	defer func() { Warn = old }()
	p := filepath.Join(t.TempDir(), "old.yaml")
	if err := os.WriteFile(p, []byte("number_of_seeds: 3\nworkers: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(p, DefaultConfig())
	if err != nil || c.Workers != 1 || c.NumberOfSeeds != 3 {
		t.Fatalf("workers: 1 loaded as jobs %d, seeds %d (%v)", c.Workers, c.NumberOfSeeds, err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "key workers (line 2) is deprecated, use jobs") {
		t.Errorf("warnings %q", warned)
	}
	y, err := yaml.Marshal(c)
	if err != nil || !strings.Contains(string(y), "\njobs: 1\n") || strings.Contains(string(y), "workers") {
		t.Errorf("written config:\n%s", y)
	}
}
