package discretize

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/mdp"
)

var (
	pendulumGrid = GridSpec{
		State:  []AxisSpec{{Name: "theta", N: 16, Lo: -math.Pi, Hi: math.Pi, Periodic: true}, {Name: "thetadot", N: 11, Lo: -8, Hi: 8}},
		Action: []AxisSpec{{Name: "torque", N: 3, Lo: -2, Hi: 2}},
	}
	cartPoleGrid = GridSpec{
		State: []AxisSpec{{Name: "x", N: 3, Lo: -2.4, Hi: 2.4}, {Name: "x_dot", N: 3, Lo: -3, Hi: 3},
			{Name: "theta", N: 7, Lo: -0.3, Hi: 0.3}, {Name: "theta_dot", N: 3, Lo: -3, Hi: 3}},
		Action: []AxisSpec{{Name: "push", N: 2, Categorical: true}},
	}
	acrobotGrid = GridSpec{
		State: []AxisSpec{{Name: "theta1", N: 8, Lo: -math.Pi, Hi: math.Pi, Periodic: true},
			{Name: "theta2", N: 8, Lo: -math.Pi, Hi: math.Pi, Periodic: true},
			{Name: "dtheta1", N: 3, Lo: -4 * math.Pi, Hi: 4 * math.Pi}, {Name: "dtheta2", N: 3, Lo: -9 * math.Pi, Hi: 9 * math.Pi}},
		Action: []AxisSpec{{Name: "torque", N: 3, Categorical: true}},
	}
)

func mustGrid(t testing.TB, s GridSpec) *Grid {
	t.Helper()
	g, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func simOf(t testing.TB, name string, params map[string]float64) func() (Simulator, error) {
	t.Helper()
	return func() (Simulator, error) { return classic.MakeWithParams(name, params) }
}

func mustModel(t testing.TB, g *Grid, newSim func() (Simulator, error), cfg ModelConfig, workers int) *mdp.MDP {
	t.Helper()
	m, err := SampleModel(context.Background(), g, newSim, cfg, workers)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRowsSumToOne checks every non-terminal row of sampled models of the
// three classic environments sums to 1 and the terminal row is empty.
func TestRowsSumToOne(t *testing.T) {
	for _, tc := range []struct {
		env  string
		spec GridSpec
	}{{"Pendulum-v1", pendulumGrid}, {"CartPole-v1", cartPoleGrid}, {"Acrobot-v1", acrobotGrid}} {
		for _, succ := range []string{SuccessorNearest, SuccessorMultilinear} {
			g := mustGrid(t, tc.spec)
			m := mustModel(t, g, simOf(t, tc.env, nil), ModelConfig{Samples: 5, Successor: succ, Seed: 3}, 2)
			for s := range m.NumStates {
				for a := range m.NumActions {
					next, prob := m.Successors(s, a)
					if s == g.Terminal() {
						if len(next) != 0 {
							t.Fatalf("%s %s: terminal state has successors %v", tc.env, succ, next)
						}
						continue
					}
					sum := 0.0
					for _, p := range prob {
						sum += p
					}
					if math.Abs(sum-1) > 1e-12 {
						t.Fatalf("%s %s: row (%d,%d) sums to %.15g", tc.env, succ, s, a, sum)
					}
				}
			}
			if est, got := EstimateModelBytes(g, ModelConfig{Samples: 5, Successor: succ}), int64(len(m.Next))*12+int64(len(m.RowPtr))*8; est < got {
				t.Errorf("%s %s: estimate %d bytes below the model's %d", tc.env, succ, est, got)
			}
		}
	}
}

// TestRowMatchesEmpiricalSuccessors compares a sampled row with the
// simulator's successor distribution from independent samples in the same
// cell: by the Bretagnolle–Huber–Carol inequality, the total-variation
// distance between the K-sample row and the truth exceeds
// √((m ln 2 + ln(1/δ))/(2K)) with probability at most δ (m = number of
// successor cells), and the same for the M-sample reference.
func TestRowMatchesEmpiricalSuccessors(t *testing.T) {
	spec := GridSpec{
		State:  []AxisSpec{{Name: "theta", N: 64, Lo: -math.Pi, Hi: math.Pi, Periodic: true}, {Name: "thetadot", N: 81, Lo: -8, Hi: 8}},
		Action: []AxisSpec{{Name: "torque", N: 3, Lo: -2, Hi: 2}},
	}
	g := mustGrid(t, spec)
	const K, M, delta = 400, 40000, 1e-6
	m := mustModel(t, g, simOf(t, "Pendulum-v1", nil), ModelConfig{Samples: K, Seed: 11}, 2)
	sim, _ := classic.Make("Pendulum-v1")
	rng := rand.New(rand.NewPCG(99, 100))
	lo, hi, x := make([]float64, 2), make([]float64, 2), make([]float64, 2)
	for _, cell := range []int{g.States.Flat([]int{5, 40}), g.States.Flat([]int{32, 10}), g.States.Flat([]int{50, 70})} {
		for a := range g.NumActions() {
			g.CellBounds(lo, hi, cell)
			emp := map[int32]float64{}
			for range M {
				for k := range x {
					x[k] = lo[k] + rng.Float64()*(hi[k]-lo[k])
				}
				if err := sim.SetState(x); err != nil {
					t.Fatal(err)
				}
				sim.Step(g.Action(make([]float64, 1), a))
				emp[int32(g.SnapState(sim.State(nil)))] += 1.0 / M
			}
			next, prob := m.Successors(cell, a)
			row := map[int32]float64{}
			for i, s := range next {
				row[s] = prob[i]
			}
			support := map[int32]bool{}
			tv := 0.0
			for s, p := range emp {
				support[s] = true
				tv += math.Abs(p - row[s])
			}
			for s, p := range row {
				if !support[s] {
					support[s] = true
					tv += p
				}
			}
			tv /= 2
			mm := float64(len(support))
			bound := math.Sqrt((mm*math.Ln2+math.Log(1/delta))/(2*K)) + math.Sqrt((mm*math.Ln2+math.Log(1/delta))/(2*M))
			if len(support) < 2 {
				t.Fatalf("cell %d action %d: only %d successor cells; the test needs a spread row", cell, a, len(support))
			}
			if tv > bound {
				t.Errorf("cell %d action %d: TV(model row, empirical) = %.4f > bound %.4f (%d successor cells)", cell, a, tv, bound, len(support))
			}
			t.Logf("cell %d action %d: TV %.4f, bound %.4f, %d successor cells", cell, a, tv, bound, len(support))
		}
	}
}

// affineSim moves the state by an affine map and records where it was set.
type affineSim struct {
	x, set [][]float64
	cur    []float64
}

func (s *affineSim) SetState(x []float64) error {
	s.cur = slices.Clone(x)
	s.set = append(s.set, s.cur)
	return nil
}

func (s *affineSim) Step(action []float64) ([]float64, float64, bool, bool) {
	// x' = 0.5 x + (0.3, −0.2) + action·(0.1, 0.05): stays inside [−1, 1]² for x in it.
	s.cur = []float64{0.5*s.cur[0] + 0.3 + 0.1*action[0], 0.5*s.cur[1] - 0.2 + 0.05*action[0]}
	return s.cur, 0, false, false
}

func (s *affineSim) State(dst []float64) []float64 { return append(dst[:0], s.cur...) }

// TestMultilinearReproducesAffine checks that under multilinear crediting
// the expected value of an affine function of the successor point equals its
// average over the sampled successors exactly.
func TestMultilinearReproducesAffine(t *testing.T) {
	g := mustGrid(t, GridSpec{
		State:  []AxisSpec{{Name: "u", N: 9, Lo: -1, Hi: 1}, {Name: "v", N: 7, Lo: -1, Hi: 1}},
		Action: []AxisSpec{{Name: "a", N: 2, Lo: -1, Hi: 1}},
	})
	sim := &affineSim{}
	const K = 6
	m := mustModel(t, g, func() (Simulator, error) { return sim, nil }, ModelConfig{Samples: K, Successor: SuccessorMultilinear, Seed: 5}, 1)
	f := func(x []float64) float64 { return 2.5*x[0] - 1.25*x[1] + 0.75 }
	pt := make([]float64, 2)
	for c := range g.NumCells() {
		for a := range g.NumActions() {
			act := g.Action(make([]float64, 1), a)
			k := c*g.NumActions() + a
			want := 0.0
			for _, x := range sim.set[k*K : (k+1)*K] {
				sim.cur = slices.Clone(x)
				nx, _, _, _ := sim.Step(act)
				want += f(nx) / K
			}
			next, prob := m.Successors(c, a)
			got := 0.0
			for i, s := range next {
				got += prob[i] * f(g.States.Point(pt, int(s)))
			}
			if math.Abs(got-want) > 1e-12 {
				t.Fatalf("cell %d action %d: E[f(next)] = %.15g under the row, %.15g over the samples", c, a, got, want)
			}
		}
	}
}

// TestTerminalHandling checks that CartPole failures and Acrobot successes
// go to the absorbing terminal state, and that cells far from them do not.
func TestTerminalHandling(t *testing.T) {
	terminalMass := func(m *mdp.MDP, g *Grid, c, a int) float64 {
		next, prob := m.Successors(c, a)
		for i, s := range next {
			if int(s) == g.Terminal() {
				return prob[i]
			}
		}
		return 0
	}
	g := mustGrid(t, cartPoleGrid)
	m := mustModel(t, g, simOf(t, "CartPole-v1", nil), ModelConfig{Samples: 8, Seed: 1}, 2)
	// θ index 0 and 6 are ±0.3 rad, cells [−0.35, −0.25] and [0.25, 0.35], all beyond ±12°.
	for _, th := range []int{0, 6} {
		c := g.States.Flat([]int{1, 1, th, 1})
		for a := range 2 {
			if p := terminalMass(m, g, c, a); p != 1 {
				t.Errorf("CartPole: cell θ=%v action %d: terminal mass %v, want 1", g.States.Axes[2].Coords[th], a, p)
			}
		}
	}
	if p := terminalMass(m, g, g.States.Flat([]int{1, 1, 3, 1}), 0); p != 0 {
		t.Errorf("CartPole: upright centre cell reaches the terminal state with mass %v", p)
	}

	// Velocity cells of width π/3 and π·3/4 rad/s, so that one 0.2 s step
	// from the upright cell cannot leave the goal region.
	spec := acrobotGrid
	spec.State = slices.Clone(spec.State)
	spec.State[2].N, spec.State[3].N = 25, 25
	g = mustGrid(t, spec)
	m = mustModel(t, g, simOf(t, "Acrobot-v1", nil), ModelConfig{Samples: 8, Seed: 1}, 2)
	// θ1 = π (index 0 is −π), θ2 = 0 (index 4), at rest: −cos π − cos π = 2 > 1, the goal.
	if p := terminalMass(m, g, g.States.Flat([]int{0, 4, 12, 12}), 1); p != 1 {
		t.Errorf("Acrobot: the upright cell reaches the terminal state with mass %v, want 1", p)
	}
	// θ1 = 0, θ2 = 0 hanging at rest: far from the goal.
	if p := terminalMass(m, g, g.States.Flat([]int{4, 4, 12, 12}), 1); p != 0 {
		t.Errorf("Acrobot: the hanging cell reaches the terminal state with mass %v", p)
	}
}

// TestTruncationIsNotTermination builds Pendulum and CartPole models whose
// time limit truncates every single step: no mass may reach the terminal
// state from a cell that does not fail.
func TestTruncationIsNotTermination(t *testing.T) {
	g := mustGrid(t, pendulumGrid)
	m := mustModel(t, g, simOf(t, "Pendulum-v1", map[string]float64{"max_episode_steps": 1}), ModelConfig{Samples: 4}, 2)
	for k := range m.Next {
		if int(m.Next[k]) == g.Terminal() {
			t.Fatal("Pendulum with max_episode_steps 1: a truncated step was credited to the terminal state")
		}
	}
	g = mustGrid(t, cartPoleGrid)
	m = mustModel(t, g, simOf(t, "CartPole-v1", map[string]float64{"max_episode_steps": 1}), ModelConfig{Samples: 4}, 2)
	next, _ := m.Successors(g.States.Flat([]int{1, 1, 3, 1}), 1)
	if slices.Contains(next, int32(g.Terminal())) {
		t.Fatal("CartPole with max_episode_steps 1: the upright cell's truncated step was credited to the terminal state")
	}
	c := NewCounter(g)
	if err := c.Add(0, 1, 5, false, 0); err != nil { // a truncated step is recorded as a plain step
		t.Fatal(err)
	}
	cm, err := c.Model(0.99)
	if err != nil {
		t.Fatal(err)
	}
	if next, _ := cm.Successors(0, 1); len(next) != 1 || next[0] != 5 {
		t.Fatalf("counted row (0,1) = %v, want [5]", next)
	}
}

// TestModelIndependentOfWorkers checks the sampled model is the same for 1 and 2 workers.
func TestModelIndependentOfWorkers(t *testing.T) {
	g := mustGrid(t, acrobotGrid)
	for _, succ := range []string{SuccessorNearest, SuccessorMultilinear} {
		a := mustModel(t, g, simOf(t, "Acrobot-v1", nil), ModelConfig{Samples: 3, Successor: succ, Seed: 7}, 1)
		b := mustModel(t, g, simOf(t, "Acrobot-v1", nil), ModelConfig{Samples: 3, Successor: succ, Seed: 7}, 2)
		if !slices.Equal(a.RowPtr, b.RowPtr) || !slices.Equal(a.Next, b.Next) || !slices.Equal(a.Prob, b.Prob) {
			t.Fatalf("%s: the model differs between 1 and 2 workers", succ)
		}
	}
}

// TestCounter checks counted probabilities, terminal steps and self-loops on unvisited pairs.
func TestCounter(t *testing.T) {
	g := mustGrid(t, pendulumGrid)
	c := NewCounter(g)
	for _, e := range []struct {
		s, a, n int
		term    bool
		r       float64
	}{{3, 0, 4, false, 1}, {3, 0, 4, false, 2}, {3, 0, 9, false, -4}, {3, 0, 0, true, -100}, {5, 1, 6, false, 0.25}} {
		if err := c.Add(e.s, e.a, e.n, e.term, e.r); err != nil {
			t.Fatal(err)
		}
	}
	m, err := c.Model(0.9)
	if err != nil {
		t.Fatal(err)
	}
	next, prob := m.Successors(3, 0)
	if !slices.Equal(next, []int32{4, 9, int32(g.Terminal())}) || !slices.Equal(prob, []float64{0.5, 0.25, 0.25}) {
		t.Fatalf("row (3,0) = %v %v", next, prob)
	}
	if next, prob := m.Successors(7, 2); !slices.Equal(next, []int32{7}) || prob[0] != 1 {
		t.Fatalf("unvisited row (7,2) = %v %v, want a self-loop", next, prob)
	}
	r := c.Reward()
	A := g.NumActions()
	if len(r) != g.NumStates()*A || r[3*A] != (1+2-4-100)/4.0 || r[5*A+1] != 0.25 || r[7*A+2] != 0 {
		t.Fatalf("counted reward: %d entries, (3,0) %v (want %v), (5,1) %v, unvisited (7,2) %v", len(r), r[3*A], (1+2-4-100)/4.0, r[5*A+1], r[7*A+2])
	}
	if err := c.Add(g.NumCells(), 0, 0, false, 0); err == nil {
		t.Fatal("a transition from outside the grid was accepted")
	}
	if err := c.Add(0, 0, 0, false, math.NaN()); err == nil || !strings.Contains(err.Error(), "reward") {
		t.Fatalf("a NaN reward: error %v, want one naming the reward", err)
	}
}

// TestGridErrors checks that bad grids are refused with the axis named.
func TestGridErrors(t *testing.T) {
	for _, tc := range []struct {
		spec GridSpec
		want string
	}{
		{GridSpec{State: []AxisSpec{{Name: "x", N: 0, Lo: 0, Hi: 1}}, Action: []AxisSpec{{N: 2, Categorical: true}}}, "state axis 0 (x): n = 0"},
		{GridSpec{State: []AxisSpec{{Name: "x", N: 3, Lo: 1, Hi: 1}}, Action: []AxisSpec{{N: 2, Categorical: true}}}, "need finite lo < hi"},
		{GridSpec{State: []AxisSpec{{Name: "x", N: 3, Lo: 0, Hi: 1}}, Action: []AxisSpec{{Name: "a", N: -1, Categorical: true}}}, "action axis 0 (a): n = -1"},
		{GridSpec{State: []AxisSpec{{Name: "x", N: 3, Lo: 0, Hi: 1}}}, "no action axes"},
	} {
		_, err := New(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
	g := mustGrid(t, pendulumGrid)
	if err := CheckSize(g, ModelConfig{Samples: 64}, 1<<10); err == nil || !strings.Contains(err.Error(), "GB") {
		t.Errorf("CheckSize with 2^20 samples per row = %v, want a refusal with the estimate", err)
	}
}
