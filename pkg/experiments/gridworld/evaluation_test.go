package gridworld

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	gw "github.com/fedirl/fedirl/pkg/envs/gridworld"
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
	check := func(f *Fit, envs []*Env, rates *[NumMethods][]float64, theta func(m Method, i int) []float64, methods []Method) {
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
		fused := func(m Method, i int) []float64 {
			if m == Local {
				return f.Local[i]
			}
			return f.Fused[m]
		}
		var methods []Method
		for m := range NumMethods {
			if f.InDist[m] != nil {
				methods = append(methods, m)
			}
		}
		check(f, f.clients, &f.InDist, fused, methods)
		check(f, f.heldOut, &f.HeldOut, fused, methods[1:])
	}
	if pairs == 0 {
		t.Fatal("no two methods share a policy: the test checks nothing")
	}
	t.Logf("%d method pairs with equal policies", pairs)
}

// TestTable2RespectsEnvironments: Table 2's clients are drawn from the
// environments entry of its grid size (obstacles, slip), not the defaults.
func TestTable2RespectsEnvironments(t *testing.T) {
	table2 := func(mutate func(*EnvConfig)) []byte {
		c := tinyConfig()
		c.Environments = c.Environments[:1] // 5×5, the ablation's size
		mutate(&c.Environments[0])
		st, err := GridWorld(context.Background(), c, nil)
		if err != nil {
			t.Fatal(err)
		}
		return st.Table2JSON()
	}
	base := table2(func(*EnvConfig) {})
	for name, m := range map[string]func(*EnvConfig){
		"obstacles": func(e *EnvConfig) { e.Obstacles = 6 },
		"slip":      func(e *EnvConfig) { e.SlipMax = 0.3 },
	} {
		if bytes.Equal(base, table2(m)) {
			t.Errorf("Table 2 unchanged when the 5×5 environments entry changes %s", name)
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
		for i := range f.InDist[Mean] {
			b += f.InDist[Barycenter][i]
			m += f.InDist[Mean][i]
		}
		want += 100 * (b - m) / float64(len(f.InDist[Mean]))
	}
	want /= float64(len(st.Cells[0]))
	if got := row.InDistPaired.BarycenterMinusMean; math.Abs(got.Mean-want) > 1e-9 || got.N != len(st.Cells[0]) {
		t.Fatalf("paired B − M = %+v, want mean %v over %d seeds", got, want, len(st.Cells[0]))
	}
	if row.InDistPaired.MeanMinusLocal == nil || row.HeldOutPaired.MeanMinusLocal != nil {
		t.Fatal("Mean − Local belongs to the in-distribution split only")
	}
}
