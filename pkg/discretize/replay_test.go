package discretize_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/envs/lunar"
)

// lunarGrid is a small lattice on LunarLander's observation.
var lunarGrid = discretize.GridSpec{
	State: []discretize.AxisSpec{{Name: "x", N: 3, Lo: -1, Hi: 1}, {Name: "y", N: 3, Lo: -0.1, Hi: 1.5},
		{Name: "vx", N: 3, Lo: -1, Hi: 1}, {Name: "vy", N: 3, Lo: -1.5, Hi: 0.5},
		{Name: "angle", N: 1, Lo: -0.5, Hi: 0.5}, {Name: "angvel", N: 1, Lo: -1, Hi: 1},
		{Name: "leg1", N: 2, Categorical: true}, {Name: "leg2", N: 2, Categorical: true}},
	Action: []discretize.AxisSpec{{Name: "main", N: 3, Lo: -1, Hi: 1}, {Name: "lateral", N: 3, Lo: -1, Hi: 1}},
}

// step is one recorded transition.
type step struct {
	obs, act, next []float64
	r              float64
	term           bool
}

// lunarParams is client 1 with a time limit of 80 steps, to keep replays short.
func lunarParams() lunar.Params {
	p := lunar.ClientParams(true, 1)
	p.MaxEpisodeSteps = 80
	return p
}

// recordLunar plays n episodes of the heuristic controller on lunarParams
// with every action replaced with probability 0.3 by a uniform random one.
func recordLunar(t testing.TB, n int) ([]discretize.Episode, []step) {
	t.Helper()
	e, err := lunar.New(lunarParams())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	var eps []discretize.Episode
	var steps []step
	for k := range n {
		ep := discretize.Episode{Seed: 300 + uint64(k)}
		obs := slices.Clone(e.Reset(ep.Seed))
		ep.States = append(ep.States, obs)
		for {
			act := lunar.Heuristic(make([]float64, 2), obs, true)
			if rng.Float64() < 0.3 {
				act[0], act[1] = 2*rng.Float64()-1, 2*rng.Float64()-1
			}
			o, r, term, trunc := e.Step(act)
			next := slices.Clone(o)
			steps = append(steps, step{obs, act, next, r, term})
			ep.Actions = append(ep.Actions, act)
			ep.States = append(ep.States, next)
			ep.Rewards = append(ep.Rewards, r)
			obs = next
			if term || trunc {
				ep.Terminated = term
				break
			}
		}
		eps = append(eps, ep)
	}
	return eps, steps
}

func lunarSim() (discretize.Replayer, error) { return lunar.New(lunarParams()) }

// TestCountedRewardEqualsSimulatorReward: the counted model's true reward
// of every visited pair is the mean of the simulator's rewards on the
// recorded transitions from that pair (computed here independently, by
// grouping the transitions), and a pair visited once has exactly the
// simulator's reward of its one step.
func TestCountedRewardEqualsSimulatorReward(t *testing.T) {
	g, err := discretize.New(lunarGrid)
	if err != nil {
		t.Fatal(err)
	}
	_, steps := recordLunar(t, 12)
	c := discretize.NewCounter(g)
	sum, n := map[int]float64{}, map[int]int{}
	for _, s := range steps {
		if err := c.AddState(s.obs, s.act, s.next, s.term, s.r); err != nil {
			t.Fatal(err)
		}
		k := g.SnapState(s.obs)*g.NumActions() + g.SnapAction(s.act)
		sum[k] += s.r
		n[k]++
	}
	r := c.Reward()
	once := 0
	for k := range r {
		want := 0.0
		if n[k] > 0 {
			want = sum[k] / float64(n[k])
		}
		if math.Abs(r[k]-want) > 1e-12*max(1, math.Abs(want)) {
			t.Fatalf("pair %d (%d steps): counted reward %v, the recorded steps' mean %v", k, n[k], r[k], want)
		}
		if n[k] == 1 {
			once++
			for _, s := range steps {
				if g.SnapState(s.obs)*g.NumActions()+g.SnapAction(s.act) == k && r[k] != s.r {
					t.Fatalf("pair %d visited once: counted reward %v, the simulator's %v", k, r[k], s.r)
				}
			}
		}
	}
	if len(n) < 10 || once == 0 {
		t.Fatalf("only %d pairs visited (%d once): the test exercises too little", len(n), once)
	}
}

// TestReplayModelMatchesDirectClones rebuilds rows of the replay model by
// hand: with K above every cell's number of visits, the row of (cell,
// action) is, over all the cell's visits in episode order, a fresh
// environment reset with the episode's seed, its recorded actions replayed
// up to the visit, then stepped with the action level.
func TestReplayModelMatchesDirectClones(t *testing.T) {
	g, err := discretize.New(lunarGrid)
	if err != nil {
		t.Fatal(err)
	}
	eps, _ := recordLunar(t, 3)
	m, r, fm, st, err := discretize.ReplayModelSteps(context.Background(), g, lunarSim, nil, eps, discretize.ReplayConfig{Clones: 100000, Gamma: 0.99}, 2, probeStep)
	if err != nil {
		t.Fatal(err)
	}
	visits := map[int][][2]int{}
	for e, ep := range eps {
		for tt := range ep.Actions {
			c := g.SnapState(ep.States[tt])
			visits[c] = append(visits[c], [2]int{e, tt})
		}
	}
	if st.Cells != len(visits) || st.Expanded != 0 {
		t.Fatalf("stats %+v, want %d cells cloned and none expanded", st, len(visits))
	}
	checked := 0
	act := make([]float64, 2)
	for c, vs := range visits {
		for a := range g.NumActions() {
			g.Action(act, a)
			count := map[int32]int{}
			rsum := 0.0
			fsum := make([]float64, probeStep.Dim)
			for _, v := range vs {
				env, _ := lunar.New(lunarParams())
				env.Reset(eps[v[0]].Seed)
				for _, pa := range eps[v[0]].Actions[:v[1]] {
					env.Step(pa)
				}
				x := eps[v[0]].States[v[1]] // the cloned state
				obs, rew, term, _ := env.Step(act)
				fsum[0] += obs[1] - x[1]
				fsum[1] += act[0] * obs[3]
				if term {
					fsum[2]++
				}
				next := int32(g.Terminal())
				if !term {
					next = int32(g.SnapState(obs))
				}
				count[next]++
				rsum += rew
			}
			next, prob := m.Successors(c, a)
			if len(next) != len(count) {
				t.Fatalf("cell %d action %d: successors %v, direct clones %v", c, a, next, count)
			}
			for i, s := range next {
				if want := float64(count[s]) / float64(len(vs)); math.Abs(prob[i]-want) > 1e-12 {
					t.Fatalf("cell %d action %d: P(%d) = %v, direct clones %v", c, a, s, prob[i], want)
				}
			}
			if want := rsum / float64(len(vs)); math.Abs(r[c*g.NumActions()+a]-want) > 1e-9*max(1, math.Abs(want)) {
				t.Fatalf("cell %d action %d: reward %v, direct clones %v", c, a, r[c*g.NumActions()+a], want)
			}
			for j, f := range fsum {
				if got, want := fm.At(c*g.NumActions()+a, j), f/float64(len(vs)); math.Abs(got-want) > 1e-12*max(1, math.Abs(want)) {
					t.Fatalf("cell %d action %d: step feature %d's mean %v, direct clones %v", c, a, j, got, want)
				}
			}
			checked++
		}
	}
	if checked < 18 {
		t.Fatalf("only %d rows checked", checked)
	}
	// An unvisited cell keeps a self-loop with reward 0 and no step features.
	for c := range g.NumCells() {
		if _, ok := visits[c]; !ok {
			if next, _ := m.Successors(c, 0); len(next) != 1 || int(next[0]) != c || r[c*g.NumActions()] != 0 || fm.At(c*g.NumActions(), 0) != 0 {
				t.Fatalf("unvisited cell %d: row %v reward %v, want a self-loop with reward 0", c, next, r[c*g.NumActions()])
			}
			break
		}
	}
	// The model and reward are ReplayModel's.
	m0, r0, _, err := discretize.ReplayModel(context.Background(), g, lunarSim, nil, eps, discretize.ReplayConfig{Clones: 100000, Gamma: 0.99}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m0.Next, m.Next) || !slices.Equal(m0.Prob, m.Prob) || !slices.Equal(r0, r) {
		t.Fatal("ReplayModelSteps's model differs from ReplayModel's")
	}
	if _, _, _, _, err := discretize.ReplayModelSteps(context.Background(), g, lunarSim, nil, eps, discretize.ReplayConfig{}, 1,
		discretize.StepFeatures{Eval: probeStep.Eval}); err == nil {
		t.Fatal("step features of dimension 0 accepted")
	}
}

// probeStep is a step feature map of the tests: y′ − y, main·ẏ′ and the
// termination.
var probeStep = discretize.StepFeatures{Dim: 3, Eval: func(dst, x, action, next []float64, terminated bool) {
	dst[0], dst[1], dst[2] = next[1]-x[1], action[0]*next[3], 0
	if terminated {
		dst[2] = 1
	}
}}

// TestReplayModelIndependentOfWorkers checks the same model, reward and
// statistics with 1 and 2 workers, with K below the visits and one
// expansion round.
func TestReplayModelIndependentOfWorkers(t *testing.T) {
	spec := lunarGrid
	spec.State = slices.Clone(spec.State)
	for k := range 4 {
		spec.State[k].N = 7
	}
	g, err := discretize.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	eps, _ := recordLunar(t, 2)
	cfg := discretize.ReplayConfig{Clones: 2, Expand: 1, Count: true, Seed: 9, Gamma: 0.99}
	a, ra, fa, sa, err := discretize.ReplayModelSteps(context.Background(), g, lunarSim, nil, eps, cfg, 1, probeStep)
	if err != nil {
		t.Fatal(err)
	}
	b, rb, fb, sb, err := discretize.ReplayModelSteps(context.Background(), g, lunarSim, nil, eps, cfg, 2, probeStep)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.RowPtr, b.RowPtr) || !slices.Equal(a.Next, b.Next) || !slices.Equal(a.Prob, b.Prob) || !slices.Equal(ra, rb) || sa != sb || !mat.Equal(fa, fb) {
		t.Fatal("the replay model differs between 1 and 2 workers")
	}
	if sa.Expanded == 0 {
		t.Fatalf("stats %+v: no cell expanded", sa)
	}
	if _, _, _, err := discretize.ReplayModel(context.Background(), g, lunarSim, nil, eps, discretize.ReplayConfig{Clones: -1}, 1); err == nil {
		t.Fatal("clones −1 accepted")
	}
	bad := []discretize.Episode{{Seed: 1, Actions: [][]float64{{0, 0}}, States: [][]float64{make([]float64, 8)}}}
	if _, _, _, err := discretize.ReplayModel(context.Background(), g, lunarSim, nil, bad, cfg, 1); err == nil {
		t.Fatal("an episode with one state for one action accepted")
	}
}

// TestReplayModelCountsRecordedSteps: with Count, every row is the
// clones' row (ReplayModel without Count) and the counted row of the
// recorded steps (Counter) pooled by their numbers of samples, in
// probabilities and in reward.
func TestReplayModelCountsRecordedSteps(t *testing.T) {
	g, err := discretize.New(lunarGrid)
	if err != nil {
		t.Fatal(err)
	}
	eps, steps := recordLunar(t, 3)
	cfg := discretize.ReplayConfig{Clones: 100000, Gamma: 0.99}
	ma, ra, _, err := discretize.ReplayModel(context.Background(), g, lunarSim, nil, eps, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Count = true
	mb, rb, _, err := discretize.ReplayModel(context.Background(), g, lunarSim, nil, eps, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	c := discretize.NewCounter(g)
	visits := map[int]int{}
	for _, s := range steps {
		if err := c.AddState(s.obs, s.act, s.next, s.term, s.r); err != nil {
			t.Fatal(err)
		}
		visits[g.SnapState(s.obs)]++
	}
	mc, err := c.Model(0.99)
	if err != nil {
		t.Fatal(err)
	}
	rc := c.Reward()
	A := g.NumActions()
	pooled := 0
	for cell, nClone := range visits {
		for a := range A {
			k := cell*A + a
			nRec := c.Visits[k]
			n := float64(nClone + nRec)
			want := map[int32]float64{}
			next, prob := ma.Successors(cell, a)
			for i, s := range next {
				want[s] += float64(nClone) * prob[i] / n
			}
			if nRec > 0 {
				pooled++
				next, prob = mc.Successors(cell, a)
				for i, s := range next {
					want[s] += float64(nRec) * prob[i] / n
				}
			}
			next, prob = mb.Successors(cell, a)
			if len(next) != len(want) {
				t.Fatalf("cell %d action %d: successors %v, pooled %v", cell, a, next, want)
			}
			for i, s := range next {
				if math.Abs(prob[i]-want[s]) > 1e-12 {
					t.Fatalf("cell %d action %d: P(%d) = %v, pooled %v", cell, a, s, prob[i], want[s])
				}
			}
			wr := (float64(nClone)*ra[k] + float64(nRec)*rc[k]) / n
			if math.Abs(rb[k]-wr) > 1e-9*max(1, math.Abs(wr)) {
				t.Fatalf("cell %d action %d: reward %v, pooled %v", cell, a, rb[k], wr)
			}
		}
	}
	if pooled < 10 {
		t.Fatalf("only %d rows with recorded steps", pooled)
	}
	eps[0].Rewards = eps[0].Rewards[1:]
	if _, _, _, err := discretize.ReplayModel(context.Background(), g, lunarSim, nil, eps, cfg, 1); err == nil {
		t.Fatal("counting an episode with a missing reward was accepted")
	}
}
