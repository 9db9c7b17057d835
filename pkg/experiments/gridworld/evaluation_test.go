package gridworld

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// TestExactEvaluationMatchesSampling: on random study cells, the exact
// success probability of a greedy policy equals the mean of 100k sampled
// rollouts within 4 standard errors.
func TestExactEvaluationMatchesSampling(t *testing.T) {
	if testing.Short() {
		t.Skip("100k rollouts per cell")
	}
	c := DefaultConfig()
	rng := rand.New(rand.NewPCG(11, 12))
	const episodes = 100_000
	for _, cell := range []struct{ size, client int }{{5, 0}, {5, 2}, {10, 3}} {
		env, _, err := c.ClientTask(cell.size, cell.client, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		theta := []float64{-rng.Float64(), rng.Float64() - 0.3} // a random reward: neither expert nor blind
		pol := env.GreedyPolicy(theta)
		exact := env.Grid.SuccessProbability(pol)
		mc := env.Grid.SuccessRate(rand.New(rand.NewPCG(uint64(cell.size), uint64(cell.client))), pol, episodes)
		se := math.Sqrt(exact * (1 - exact) / episodes)
		if math.Abs(mc-exact) > 4*se+1e-12 {
			t.Errorf("%d×%d client %d θ %v: exact %.5f, sampled %.5f (4 SE = %.5f)", cell.size, cell.size, cell.client, theta, exact, mc, 4*se)
		}
	}
}

// TestExactTablesIgnoreEpisodes: with exact evaluation the tables do not
// depend on the sampling settings; with sampling they do.
func TestExactTablesIgnoreEpisodes(t *testing.T) {
	run := func(method string, episodes int) []byte {
		c := tinyConfig()
		c.Evaluation.Method, c.Evaluation.EvaluationEpisodes = method, episodes
		st, err := GridWorld(context.Background(), c, nil)
		if err != nil {
			t.Fatal(err)
		}
		return st.Table1CSV()
	}
	if a, b := run(EvalExact, 30), run(EvalExact, 7); !bytes.Equal(a, b) {
		t.Error("exact tables changed with evaluation_episodes")
	}
	if a, b := run(EvalSampled, 30), run(EvalSampled, 7); bytes.Equal(a, b) {
		t.Error("sampled tables did not change with evaluation_episodes")
	}
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
