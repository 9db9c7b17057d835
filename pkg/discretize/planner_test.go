package discretize

import (
	"context"
	"math"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/mdp"
)

// walker is a hand-checkable simulator on [−2.25, 2.25): action index 0, 1,
// 2 moves x by −0.5, 0, +0.5 (a move that would leave the interval stays
// put), and the reward −c² − 0.01·|move| depends only on the cell centre c
// of x on the lattice −2, −1.5, …, 2, so every point of a cell has the same
// reward and moves to the same neighbouring cell: the sampled lattice model
// is exactly a deterministic chain.
type walker struct{ x float64 }

func (w *walker) SetState(s []float64) error { w.x = s[0]; return nil }
func (w *walker) State(dst []float64) []float64 {
	if len(dst) < 1 {
		dst = make([]float64, 1)
	}
	dst[0] = w.x
	return dst
}
func (w *walker) Step(a []float64) ([]float64, float64, bool, bool) {
	move := 0.5 * (a[0] - 1)
	c := math.Round(2*w.x) / 2
	r := -c*c - 0.01*math.Abs(move)
	if nx := w.x + move; nx >= -2.25 && nx < 2.25 {
		w.x = nx
	}
	return []float64{w.x}, r, false, false
}

// TestPlannerHandChecked: the model of the walker, its optimal action
// values against the closed form, and the planner's actions at points on
// and between the lattice points.
func TestPlannerHandChecked(t *testing.T) {
	g, err := New(GridSpec{
		State:  []AxisSpec{{Name: "x", N: 9, Lo: -2, Hi: 2}},
		Action: []AxisSpec{{Name: "action", N: 3, Categorical: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	const gamma = 0.9
	m, r, err := SampleModelReward(context.Background(), g, func() (Simulator, error) { return &walker{}, nil },
		ModelConfig{Samples: 4, Seed: 1, Gamma: gamma}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The model: cell i moves to i−1, i, i+1 (clamped at the ends) with
	// probability 1, reward −c_i² − 0.01·|move|.
	for s := range 9 {
		c := -2 + 0.5*float64(s)
		for a := range 3 {
			next, prob := m.Successors(s, a)
			want := min(max(s+a-1, 0), 8)
			if s == 0 && a == 0 || s == 8 && a == 2 {
				want = s // the move would leave the interval
			}
			if len(next) != 1 || int(next[0]) != want || prob[0] != 1 {
				t.Fatalf("cell %d action %d: successors %v %v, want cell %d with probability 1", s, a, next, prob, want)
			}
			approx.Equal(t, "model reward", r[s*3+a], -c*c-0.01*math.Abs(0.5*float64(a-1)), 1e-12, 0)
		}
	}
	// Closed form: from the cell k steps from the centre the optimal path
	// walks to the centre and stays, so V(k) = Σ_{t<k} γ^t (−c_{k−t}² − 0.005).
	V := func(k int) float64 {
		v := 0.0
		for t := range k {
			c := 0.5 * float64(k-t)
			v += math.Pow(gamma, float64(t)) * (-c*c - 0.005)
		}
		return v
	}
	ws := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-13, Anderson: -1})
	defer ws.Close()
	vals := ws.ValueIteration(nil, r)
	for s := range 9 {
		k := s - 4
		c := 0.5 * float64(k)
		step := func(d int) int { return min(max(abs(k+d), 0), 4) }
		toward := -1
		if k < 0 {
			toward = 1
		}
		if k != 0 {
			approx.Equal(t, "Q(toward the centre)", vals.Q[s*3+1+toward], -c*c-0.005+gamma*V(step(toward)), 1e-9, 0)
		}
		approx.Equal(t, "Q(stay)", vals.Q[s*3+1], -c*c+gamma*V(abs(k)), 1e-9, 0)
		approx.Equal(t, "V", vals.V[s], V(abs(k)), 1e-9, 0)
	}
	pl, err := NewPlanner(g, vals.Q)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		x    float64
		want int
	}{{1.0, 0}, {1.2, 0}, {0.6, 0}, {0.0, 1}, {0.1, 1}, {-0.7, 2}, {-2.2, 2}, {2.2, 0}} {
		if got := pl.ActionIndex([]float64{tc.x}); got != tc.want {
			t.Errorf("planner at x = %g: action %d, want %d", tc.x, got, tc.want)
		}
	}
	// Rolled in the simulator from x = 1.9 it reaches the centre cell in 4 steps and stays.
	sim := &walker{x: 1.9}
	act := make([]float64, 1)
	for step := range 10 {
		pl.Act(act, sim.State(nil))
		sim.Step(act)
		if c := math.Round(2*sim.x) / 2; step >= 3 && c != 0 {
			t.Fatalf("after %d steps x = %g, want the centre cell", step+1, sim.x)
		}
	}
	if _, err := NewPlanner(g, vals.Q[:5]); err == nil {
		t.Error("NewPlanner accepted a short Q table")
	}
}

func abs(k int) int {
	if k < 0 {
		return -k
	}
	return k
}
