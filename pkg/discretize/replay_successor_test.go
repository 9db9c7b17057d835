package discretize_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/fedirl/fedirl/pkg/discretize"
)

// drift is a deterministic one-dimensional Replayer: Reset(seed) starts at
// seed/10, a step moves by 0.3·action (wrapped into [0, period) when
// period > 0) and rewards the new position; it never ends.
type drift struct {
	x, period float64
	obs       [1]float64
}

func (d *drift) Reset(seed uint64) []float64 {
	d.x = float64(seed) / 10
	d.obs[0] = d.x
	return d.obs[:]
}

func (d *drift) Step(a []float64) ([]float64, float64, bool, bool) {
	d.x += 0.3 * a[0]
	if d.period > 0 {
		d.x = math.Mod(d.x+d.period, d.period)
	}
	d.obs[0] = d.x
	return d.obs[:], d.x, false, false
}

// TestReplaySuccessors checks the three successor rules of ReplayModel
// against closed forms on the drift simulator (lattice points 0, 1, 2, 3,
// 4; actions −1, 0, +1, a move of ±0.3): displacement credits the
// cell's point moved by 0.3·a, P(c±1) = 0.3 and P(c) = 0.7 whatever the
// cloned states' offsets in their cell (clamped at the ends), and on a
// periodic axis a move across the wrap lands on the far side;
// multilinear credits the weights of each clone's own successor
// x′ = x + 0.3·a, averaged over the clones; nearest credits the nearest
// point of x′. Episodes recording only steps of +1 are cloned with every
// action.
func TestReplaySuccessors(t *testing.T) {
	open := discretize.GridSpec{State: []discretize.AxisSpec{{Name: "x", N: 5, Lo: 0, Hi: 4}},
		Action: []discretize.AxisSpec{{Name: "a", N: 3, Lo: -1, Hi: 1}}}
	periodic := discretize.GridSpec{State: []discretize.AxisSpec{{Name: "x", N: 4, Lo: 0, Hi: 4, Periodic: true}},
		Action: open.Action}
	record := func(period float64, seeds ...uint64) []discretize.Episode {
		var eps []discretize.Episode
		for _, s := range seeds {
			d := &drift{period: period}
			ep := discretize.Episode{Seed: s, States: [][]float64{{d.Reset(s)[0]}}}
			for range 3 {
				o, r, _, _ := d.Step([]float64{1})
				ep.Actions = append(ep.Actions, []float64{1})
				ep.States = append(ep.States, []float64{o[0]})
				ep.Rewards = append(ep.Rewards, r)
			}
			eps = append(eps, ep)
		}
		return eps
	}
	newSim := func(period float64) func() (discretize.Replayer, error) {
		return func() (discretize.Replayer, error) { return &drift{period: period}, nil }
	}
	// weights of x on the open axis 0…4 (clamped), as a map.
	stencil := func(x float64) map[int32]float64 {
		x = math.Max(0, math.Min(4, x))
		j := math.Floor(x)
		if j == 4 {
			return map[int32]float64{4: 1}
		}
		out := map[int32]float64{int32(j): 1 - (x - j)}
		if x > j {
			out[int32(j)+1] = x - j
		}
		return out
	}
	row := func(m interface {
		Successors(s, a int) ([]int32, []float64)
	}, c, a int) map[int32]float64 {
		next, prob := m.Successors(c, a)
		out := map[int32]float64{}
		for i, s := range next {
			out[s] = prob[i]
		}
		return out
	}
	same := func(got, want map[int32]float64) bool {
		for s, p := range want {
			if p > 1e-12 && math.Abs(got[s]-p) > 1e-9 {
				return false
			}
		}
		for s, p := range got {
			if math.Abs(p-want[s]) > 1e-9 {
				return false
			}
		}
		return true
	}
	g, err := discretize.New(open)
	if err != nil {
		t.Fatal(err)
	}
	eps := record(0, 4, 9, 12, 33) // starts 0.4, 0.9, 1.2, 3.3
	visits := map[int][]float64{}
	for _, ep := range eps {
		for tt := range ep.Actions {
			c := g.SnapState(ep.States[tt])
			visits[c] = append(visits[c], ep.States[tt][0])
		}
	}
	for _, mode := range []string{discretize.SuccessorNearest, discretize.SuccessorMultilinear, discretize.SuccessorDisplacement} {
		m, r, _, err := discretize.ReplayModel(context.Background(), g, newSim(0), nil, eps,
			discretize.ReplayConfig{Clones: 100, Gamma: 0.9, Successor: mode}, 1)
		if err != nil {
			t.Fatal(err)
		}
		for c, xs := range visits {
			for a := range 3 {
				move := 0.3 * float64(a-1)
				want := map[int32]float64{}
				rsum := 0.0
				for _, x := range xs {
					x1 := x + move
					rsum += x1
					switch mode {
					case discretize.SuccessorNearest:
						want[int32(g.SnapState([]float64{x1}))] += 1 / float64(len(xs))
					case discretize.SuccessorMultilinear:
						for s, p := range stencil(x1) {
							want[s] += p / float64(len(xs))
						}
					case discretize.SuccessorDisplacement:
						for s, p := range stencil(float64(c) + move) {
							want[s] += p / float64(len(xs))
						}
					}
				}
				if got := row(m, c, a); !same(got, want) {
					t.Errorf("%s: cell %d (states %v) action %d: row %v, want %v", mode, c, xs, a, got, want)
				}
				if k := c*3 + a; math.Abs(r[k]-rsum/float64(len(xs))) > 1e-12 {
					t.Errorf("%s: cell %d action %d: reward %v, want %v", mode, c, a, r[k], rsum/float64(len(xs)))
				}
			}
		}
	}
	// Periodic: from 3.9 (cell 0 across the wrap: points 0, 1, 2, 3 with
	// period 4) the step +0.3 reaches 0.2, a displacement of +0.3, not −3.7.
	gp, err := discretize.New(periodic)
	if err != nil {
		t.Fatal(err)
	}
	peps := record(4, 39)
	m, _, _, err := discretize.ReplayModel(context.Background(), gp, newSim(4), nil, peps,
		discretize.ReplayConfig{Clones: 100, Gamma: 0.9, Successor: discretize.SuccessorDisplacement}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if c := gp.SnapState([]float64{3.9}); c != 0 {
		t.Fatalf("3.9 snaps to cell %d, want 0", c)
	}
	if got, want := row(m, 0, 2), map[int32]float64{0: 0.7, 1: 0.3}; !same(got, want) {
		t.Errorf("periodic displacement: cell 0 action +1: row %v, want %v", got, want)
	}
	if _, _, _, err := discretize.ReplayModel(context.Background(), g, newSim(0), nil, eps, discretize.ReplayConfig{Successor: "nearest-ish"}, 1); err == nil {
		t.Error("an unknown successor rule was accepted")
	}
}

// driftVisitingCells12 returns a 9-cell lattice with 3 action levels, one
// drift episode of 4 steps at action +1 (1.0, 1.3, …, 2.2: it visits cells
// 1 and 2) and the drift simulator it replays on.
func driftVisitingCells12(t *testing.T) (*discretize.Grid, discretize.Episode, func() (discretize.Replayer, error)) {
	t.Helper()
	spec := discretize.GridSpec{State: []discretize.AxisSpec{{Name: "x", N: 9, Lo: 0, Hi: 8}},
		Action: []discretize.AxisSpec{{Name: "a", N: 3, Lo: -1, Hi: 1}}}
	g, err := discretize.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	d := &drift{}
	ep := discretize.Episode{Seed: 10, States: [][]float64{{d.Reset(10)[0]}}}
	for range 4 {
		o, r, _, _ := d.Step([]float64{1})
		ep.Actions, ep.States, ep.Rewards = append(ep.Actions, []float64{1}), append(ep.States, []float64{o[0]}), append(ep.Rewards, r)
	}
	return g, ep, func() (discretize.Replayer, error) { return &drift{}, nil }
}

// TestReplayHalt: with HaltReward h, every pair of a cell no episode
// visited ends the episode (the terminal state with probability 1) with
// reward h, and the rows of the visited cells are those of the model
// without it; a non-finite h is refused.
func TestReplayHalt(t *testing.T) {
	g, ep, sim := driftVisitingCells12(t)
	cfg := discretize.ReplayConfig{Clones: 4, Gamma: 0.9, Successor: discretize.SuccessorDisplacement}
	m0, r0, _, err := discretize.ReplayModel(context.Background(), g, sim, nil, []discretize.Episode{ep}, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	h := -100.0
	cfg.HaltReward = &h
	m1, r1, _, err := discretize.ReplayModel(context.Background(), g, sim, nil, []discretize.Episode{ep}, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	for c := range g.NumCells() {
		for a := range 3 {
			n0, p0 := m0.Successors(c, a)
			n1, p1 := m1.Successors(c, a)
			k := c*3 + a
			if c == 1 || c == 2 {
				if !slices.Equal(n0, n1) || !slices.Equal(p0, p1) || r0[k] != r1[k] {
					t.Errorf("visited cell %d action %d: row %v %v reward %v with the halt, %v %v %v without", c, a, n1, p1, r1[k], n0, p0, r0[k])
				}
				continue
			}
			if len(n1) != 1 || int(n1[0]) != g.Terminal() || p1[0] != 1 || r1[k] != h {
				t.Errorf("unvisited cell %d action %d: row %v %v reward %v, want the terminal state with reward %v", c, a, n1, p1, r1[k], h)
			}
		}
	}
	nan := math.NaN()
	cfg.HaltReward = &nan
	if _, _, _, err := discretize.ReplayModel(context.Background(), g, sim, nil, []discretize.Episode{ep}, cfg, 1); err == nil {
		t.Error("a NaN halt reward was accepted")
	}
}

// TestObservedPairs: the pairs ObservedPairs reports are those of the cells
// the episode visited (the cells ReplayModel cloned, ReplayStats.Cells of
// them), with and without a halt reward; the terminal state's are not.
func TestObservedPairs(t *testing.T) {
	g, ep, sim := driftVisitingCells12(t)
	h := -100.0
	for _, halt := range []*float64{nil, &h} {
		for _, succ := range []string{discretize.SuccessorNearest, discretize.SuccessorDisplacement} {
			cfg := discretize.ReplayConfig{Clones: 4, Gamma: 0.9, Successor: succ, HaltReward: halt}
			m, r, st, err := discretize.ReplayModel(context.Background(), g, sim, nil, []discretize.Episode{ep}, cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			obs := discretize.ObservedPairs(m, r, halt)
			cells := 0
			for c := range g.NumStates() {
				want := c == 1 || c == 2
				for a := range 3 {
					if obs[c*3+a] != want {
						t.Errorf("halt %v, %s: cell %d action %d observed %v, want %v", halt != nil, succ, c, a, obs[c*3+a], want)
					}
				}
				if obs[c*3] {
					cells++
				}
			}
			if cells != st.Cells {
				t.Errorf("halt %v, %s: %d observed cells, ReplayStats.Cells %d", halt != nil, succ, cells, st.Cells)
			}
		}
	}
}
