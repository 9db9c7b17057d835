package gridworld

import (
	"bytes"
	"context"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	gw "github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/fusion"
)

// TestExactEvaluationMatchesSampling: on random worlds (random obstacle
// layouts, slip up to 0.3) and random start cells, the study's exact
// evaluation of a greedy policy equals its sampled evaluation with 100k
// rollouts within 4 standard errors.
func TestExactEvaluationMatchesSampling(t *testing.T) {
	exact := DefaultConfig()
	sampled := exact
	sampled.Evaluation = EvaluationConfig{Method: EvalSampled, EvaluationEpisodes: 100_000, Seed: 3}
	rng := rand.New(rand.NewPCG(11, 12))
	for w, size := range []int{5, 6, 10} {
		goal := size*size - 1
		obs, err := gw.RandomLayout(rng, size, []int{goal}, int(math.Round(0.15*float64(size*size))))
		if err != nil {
			t.Fatal(err)
		}
		slip := 0.05 + 0.25*rng.Float64()
		theta := []float64{-rng.Float64(), rng.Float64() - 0.3} // a random reward: neither expert nor blind
		var starts []int
		for len(starts) < 2 {
			if s := rng.IntN(goal); !slices.Contains(obs, s) && !slices.Contains(starts, s) {
				starts = append(starts, s)
			}
		}
		for k, start := range starts {
			env, err := NewEnv(gw.Spec{Size: size, Goal: goal, Start: start, Obstacles: obs, Slip: slip, Horizon: 4 * size}, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			p := exact.success(env, 1, size, k, theta)
			mc := sampled.success(env, 1, size, k, theta)
			se := math.Sqrt(p * (1 - p) / 100_000)
			t.Logf("world %d (%d×%d, slip %.3f) start %d θ %.3f: exact %.5f, sampled %.5f", w, size, size, slip, start, theta, p, mc)
			if math.Abs(mc-p) > 4*se+1e-12 {
				t.Errorf("world %d (%d×%d, slip %.3f) start %d θ %v: exact %.5f, sampled %.5f (4 SE = %.5f)", w, size, size, slip, start, theta, p, mc, 4*se)
			}
		}
	}
}

// runFiles runs the study of c and returns its run files other than
// config.yaml (which records the config itself).
func runFiles(t *testing.T, c Config) map[string][]byte {
	t.Helper()
	st, err := GridWorld(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := st.WriteRun(dir); err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, name := range RunFiles {
		if name == "config.yaml" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = data
	}
	return out
}

// TestExactTablesIgnoreEvaluationStream: with the default (exact)
// evaluation, changing the evaluation seed or the number of evaluation
// episodes leaves every table, figure and bounds file byte-identical; with
// sampled evaluation a different evaluation seed changes the tables.
func TestExactTablesIgnoreEvaluationStream(t *testing.T) {
	eval := func(method string, seed uint64, episodes int) Config {
		c := tinyConfig()
		if DefaultConfig().Evaluation.Method != EvalExact {
			t.Fatal("the default evaluation is not exact")
		}
		c.Evaluation = EvaluationConfig{Method: method, Seed: seed, EvaluationEpisodes: episodes}
		return c
	}
	a, b := runFiles(t, eval(EvalExact, 0, 30)), runFiles(t, eval(EvalExact, 12345, 7))
	for name := range a {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("exact evaluation: %s changed with the evaluation seed and episodes", name)
		}
	}
	sa, sb := runFiles(t, eval(EvalSampled, 0, 30)), runFiles(t, eval(EvalSampled, 12345, 30))
	for _, name := range []string{"table1.csv", "table2.csv"} {
		if bytes.Equal(sa[name], sb[name]) {
			t.Errorf("sampled evaluation: %s did not change with the evaluation seed", name)
		}
	}
}

// TestSampledEvaluationCommonAcrossMethods: with sampled evaluation every
// method is rolled out on the same draws, so two methods whose greedy
// policies coincide on an environment get exactly the same success rate
// there (on independent streams they would differ by sampling noise).
func TestSampledEvaluationCommonAcrossMethods(t *testing.T) {
	c := tinyConfig()
	c.Evaluation = EvaluationConfig{Method: EvalSampled, EvaluationEpisodes: 40}
	st, err := GridWorld(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	pairs := 0
	check := func(f *Fit, envs []*Env, rates map[string][]float64, theta func(m string, i int) []float64, methods []string) {
		for i, env := range envs {
			for x, a := range methods {
				for _, b := range methods[x+1:] {
					if !slices.Equal(env.GreedyPolicy(theta(a, i)), env.GreedyPolicy(theta(b, i))) {
						continue
					}
					pairs++
					if rates[a][i] != rates[b][i] {
						t.Errorf("grid %d seed %d env %d: %v and %v have the same policy but success %v vs %v", f.GridSize, f.Seed, i, a, b, rates[a][i], rates[b][i])
					}
				}
			}
		}
	}
	fits := slices.Concat(st.Cells...)
	for _, fs := range st.Ablation {
		fits = append(fits, fs...)
	}
	for _, f := range fits {
		if f.clients == nil {
			t.Fatalf("grid %d seed %d: the fit keeps no environments", f.GridSize, f.Seed)
		}
		fused := func(m string, i int) []float64 {
			switch m {
			case ColLocal:
				return f.Local[i]
			case ColPersonalized:
				return f.Personal[i].Theta
			}
			return f.Fused[m]
		}
		methods := slices.Sorted(maps.Keys(f.InDist))
		check(f, f.clients, f.InDist, fused, methods)
		check(f, f.heldOut, f.HeldOut, fused, slices.DeleteFunc(methods, func(m string) bool { return slices.Contains(c.clientCols(), m) }))
	}
	if pairs == 0 {
		t.Fatal("no two methods share a policy: the test checks nothing")
	}
	t.Logf("%d method pairs with equal policies", pairs)
}

// TestTable2RespectsEnvironments: Table 2's clients and held-out
// environments are drawn from the environments entry of its grid size
// (obstacles, slip, horizon, start), not the family defaults, so changing
// that entry changes Table 2; it keeps as many held-out environments as
// ablation clients.
func TestTable2RespectsEnvironments(t *testing.T) {
	run := func(mutate func(*EnvConfig)) *Study {
		c := tinyConfig()
		c.Environments = c.Environments[:1] // 5×5, the ablation's size
		mutate(&c.Environments[0])
		st, err := GridWorld(context.Background(), c, nil)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	base := run(func(*EnvConfig) {})
	for _, tc := range []struct {
		name   string
		mutate func(*EnvConfig)
		holds  func(gw.Spec) bool // the changed property, on every ablation environment
	}{
		{"obstacles", func(e *EnvConfig) { e.Obstacles = 6 }, func(s gw.Spec) bool { return len(s.Obstacles) == 6 }},
		{"slip_max", func(e *EnvConfig) { e.SlipMax = 0.01 }, func(s gw.Spec) bool { return s.Slip <= 0.01 }},
		{"max_episode_length", func(e *EnvConfig) { e.MaxEpisodeLength = 9 }, func(s gw.Spec) bool { return s.Horizon == 9 }},
		{"random_start", func(e *EnvConfig) { e.RandomStart = true }, func(s gw.Spec) bool { return s.RandomStart }},
	} {
		st := run(tc.mutate)
		if bytes.Equal(base.Table2JSON(), st.Table2JSON()) || bytes.Equal(base.Table2Markdown(), st.Table2Markdown()) {
			t.Errorf("%s: Table 2 unchanged when the 5×5 environments entry changes", tc.name)
		}
		for _, fs := range st.Ablation {
			for _, f := range fs {
				if len(f.clients) != st.Config.Ablation.NumberOfClients || len(f.heldOut) != st.Config.Ablation.NumberOfClients {
					t.Fatalf("%s: %d clients and %d held-out environments, want %d of each", tc.name, len(f.clients), len(f.heldOut), st.Config.Ablation.NumberOfClients)
				}
				for _, env := range slices.Concat(f.clients, f.heldOut) {
					if !tc.holds(env.Spec) {
						t.Fatalf("%s: an ablation environment does not follow the entry: %+v", tc.name, env.Spec)
					}
				}
			}
		}
	}
}

// TestPairedDifferencesAreSeedwise: the tables' paired Barycenter − Mean is
// the mean over seeds of the per-seed differences of the per-seed means.
func TestPairedDifferencesAreSeedwise(t *testing.T) {
	st, err := GridWorld(context.Background(), tinyConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	row := st.Table1()[0]
	want := 0.0
	for _, f := range st.Cells[0] {
		var b, m float64
		for i := range f.InDist[fusion.MethodMean] {
			b += f.InDist[fusion.MethodBarycenter][i]
			m += f.InDist[fusion.MethodMean][i]
		}
		want += 100 * (b - m) / float64(len(f.InDist[fusion.MethodMean]))
	}
	want /= float64(len(st.Cells[0]))
	bm, ml := Pair{fusion.MethodBarycenter, fusion.MethodMean}, Pair{fusion.MethodMean, ColLocal}
	if got := *row.InDistPaired.get(bm); math.Abs(got.Mean-want) > 1e-9 || got.N != len(st.Cells[0]) {
		t.Fatalf("paired B − M = %+v, want mean %v over %d seeds", got, want, len(st.Cells[0]))
	}
	if row.InDistPaired.get(ml) == nil || row.HeldOutPaired.get(ml) != nil {
		t.Fatal("Mean − Local belongs to the in-distribution split only")
	}
	// Held-out B − M over the two seeds, by hand: the interval is
	// mean ± t₁·|d₁ − d₂|/2 with t₁ = tan(0.475π) = 12.706 (Cauchy quantile).
	if len(st.Cells[0]) != 2 {
		t.Fatalf("tinyConfig has %d seeds, the hand computation below wants 2", len(st.Cells[0]))
	}
	var d [2]float64
	for s, f := range st.Cells[0] {
		for j := range f.HeldOut[fusion.MethodMean] {
			d[s] += 100 * (f.HeldOut[fusion.MethodBarycenter][j] - f.HeldOut[fusion.MethodMean][j]) / float64(len(f.HeldOut[fusion.MethodMean]))
		}
	}
	ho := *row.HeldOutPaired.get(bm)
	half := math.Tan(0.475*math.Pi) * math.Abs(d[0]-d[1]) / 2
	if mid := (d[0] + d[1]) / 2; math.Abs(ho.Mean-mid) > 1e-9 || math.Abs(ho.Lo-(mid-half)) > 1e-9 || math.Abs(ho.Hi-(mid+half)) > 1e-9 {
		t.Fatalf("held-out B − M = %+v, want %v ± %v", ho, mid, half)
	}
	for pi, r := range st.Table2() {
		ml := r.InDistPaired.get(ml)
		if ml == nil || r.HeldOutPaired.get(Pair{fusion.MethodMean, ColLocal}) != nil || ml.N != len(st.Ablation) {
			t.Fatalf("Table 2 p = %v: Mean − Local %+v, want in-distribution only, over %d seeds", r.WeakFraction, ml, len(st.Ablation))
		}
		for s, fs := range st.Ablation {
			var d float64
			for i := range fs[pi].InDist[ColLocal] {
				d += fs[pi].InDist[fusion.MethodMean][i] - fs[pi].InDist[ColLocal][i]
			}
			d *= 100 / float64(len(fs[pi].InDist[ColLocal]))
			if math.Abs(ml.Diffs[s]-d) > 1e-9 {
				t.Fatalf("Table 2 p = %v seed %d: Mean − Local %v, want %v", r.WeakFraction, s, ml.Diffs[s], d)
			}
		}
	}
}
