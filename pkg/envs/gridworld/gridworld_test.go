package gridworld

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

func mustGrid(t *testing.T, s Spec) *Grid {
	t.Helper()
	g, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestTabularMatchesSimulator checks every state–action row of the exact
// model against the empirical successor frequencies of Sample: each frequency
// must lie within 5 binomial standard deviations (plus a small floor) of the
// model's probability, and no successor outside the model may occur.
func TestTabularMatchesSimulator(t *testing.T) {
	f := DefaultFamily(5)
	for _, slip := range []float64{0, 0.07, 0.5} {
		spec, err := f.Client(3, 1)
		if err != nil {
			t.Fatal(err)
		}
		spec.Slip = slip
		g := mustGrid(t, spec)
		tab := g.Tabular()
		rng := rand.New(rand.NewPCG(1, 2))
		const draws = 4000
		counts := make([]int, g.NumStates())
		for s := range g.NumStates() {
			for a := range NumActions {
				clear(counts)
				for range draws {
					counts[g.Sample(rng, s, a)]++
				}
				x := s*NumActions + a
				model := make([]float64, g.NumStates())
				sum := 0.0
				for k := tab.Start[x]; k < tab.Start[x+1]; k++ {
					model[tab.Next[k]] += tab.Prob[k]
					sum += tab.Prob[k]
				}
				approx.Equal(t, "row sum", sum, 1, 1e-12, 0)
				for s2, c := range counts {
					p := model[s2]
					freq := float64(c) / draws
					tol := 5*math.Sqrt(p*(1-p)/draws) + 1e-9
					if math.Abs(freq-p) > tol {
						t.Fatalf("slip %v s=%d a=%d → %d: empirical %.4f, model %.4f (tol %.4f)", slip, s, a, s2, freq, p, tol)
					}
				}
			}
		}
	}
}

// TestTransitionsClosedForm checks a hand-computed row: an interior cell, slip
// u, action right: right gets 1-u+u/4, each other neighbour u/4.
func TestTransitionsClosedForm(t *testing.T) {
	g := mustGrid(t, Spec{Size: 3, Goal: 8, Slip: 0.2, Horizon: 5})
	got := g.Transitions(nil, 4, Right) // centre (1,1)
	want := map[int]float64{1: 0.05, 5: 0.85, 7: 0.05, 3: 0.05}
	if len(got) != 4 {
		t.Fatalf("centre has %d successors, want 4: %v", len(got), got)
	}
	for _, tr := range got {
		approx.Equal(t, "prob", tr.Prob, want[tr.Next], 1e-15, 0)
	}
	// Corner (0,0) moving up: stays with 1-u+u/4 + u/4 (left also bumps).
	got = g.Transitions(nil, 0, Up)
	want = map[int]float64{0: 0.8 + 0.1, 1: 0.05, 3: 0.05}
	for _, tr := range got {
		approx.Equal(t, "corner prob", tr.Prob, want[tr.Next], 1e-15, 0)
	}
	// Terminal cells are absorbing.
	if got := g.Transitions(nil, 8, Left); len(got) != 1 || got[0].Next != 8 || got[0].Prob != 1 {
		t.Fatalf("goal row = %v, want absorbing", got)
	}
}

// TestSuccessRateMatchesExact compares Monte Carlo success rates with the
// exact dynamic-programming probability for random policies.
func TestSuccessRateMatchesExact(t *testing.T) {
	for _, c := range []struct {
		size   int
		random bool
	}{{5, false}, {10, false}, {5, true}, {10, true}} {
		size := c.size
		f := DefaultFamily(size)
		f.RandomStart = c.random
		spec, err := f.Client(11, 0)
		if err != nil {
			t.Fatal(err)
		}
		spec.Slip = 0.1
		g := mustGrid(t, spec)
		rng := rand.New(rand.NewPCG(5, 6))
		policy := make([]int, g.NumStates())
		for s := range policy { // biased towards the goal corner so successes are common
			if rng.IntN(2) == 0 {
				policy[s] = Down
			} else {
				policy[s] = Right
			}
		}
		exact := g.SuccessProbability(policy)
		const episodes = 20000
		mc := g.SuccessRate(rng, policy, episodes)
		tol := 5 * math.Sqrt(exact*(1-exact)/episodes)
		approx.Equal(t, "success rate", mc, exact, tol+1e-9, 0)
	}
}

func TestFamilyDeterministicAndConnected(t *testing.T) {
	for _, size := range []int{5, 10, 20} {
		f := DefaultFamily(size)
		for i := range 5 {
			a, err := f.Client(7, i)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := f.Client(7, i)
			if a.Slip != b.Slip || len(a.Obstacles) != f.Obstacles {
				t.Fatalf("client %d not deterministic or wrong obstacle count: %+v", i, a)
			}
			for k := range a.Obstacles {
				if a.Obstacles[k] != b.Obstacles[k] {
					t.Fatalf("client %d layouts differ", i)
				}
			}
			if a.Slip < 0 || a.Slip >= f.SlipMax {
				t.Fatalf("slip %v outside [0,%v)", a.Slip, f.SlipMax)
			}
			if !connected(size, a.Goal, a.Obstacles) {
				t.Fatalf("layout not connected")
			}
		}
		p, err := f.Probe(7)
		if err != nil {
			t.Fatal(err)
		}
		if p.Slip != 0 {
			t.Fatalf("probe slip %v, want 0", p.Slip)
		}
	}
}

func TestSpecValidate(t *testing.T) {
	bad := []Spec{
		{Size: 1, Goal: 0, Horizon: 1},
		{Size: 3, Goal: 9, Horizon: 1},
		{Size: 3, Goal: 8, Slip: 1.5, Horizon: 1},
		{Size: 3, Goal: 8, Horizon: 0},
		{Size: 3, Goal: 8, Obstacles: []int{8}, Horizon: 3},
		{Size: 3, Goal: 8, Obstacles: []int{2, 1}, Horizon: 3},
	}
	for i, s := range bad {
		if _, err := New(s); err == nil {
			t.Errorf("case %d: New(%+v) accepted an invalid spec", i, s)
		}
	}
}

func TestEnvInterface(t *testing.T) {
	g := mustGrid(t, Spec{Size: 3, Goal: 8, Horizon: 10})
	obs := g.Reset(1)
	s := int(obs[0])
	// Walk right then down deterministically (slip 0): must reach the goal.
	for steps := 0; steps < 10; steps++ {
		a := Right
		if s%3 == 2 {
			a = Down
		}
		o, r, term, trunc := g.Step([]float64{float64(a)})
		s = int(o[0])
		if term {
			if s != 8 || r != 1 {
				t.Fatalf("terminated at %d with reward %v", s, r)
			}
			return
		}
		if trunc {
			t.Fatal("truncated before reaching the goal")
		}
	}
	t.Fatal("never reached the goal")
}

func BenchmarkSuccessRate20x20(b *testing.B) {
	spec, _ := DefaultFamily(20).Client(1, 0)
	g, _ := New(spec)
	policy := make([]int, g.NumStates())
	for s := range policy {
		policy[s] = Right
		if s%20 == 19 {
			policy[s] = Down
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		g.SuccessRate(rng, policy, 100)
	}
	b.ReportMetric(float64(100*b.N)/b.Elapsed().Seconds(), "episodes/s")
}

// TestMDPMatchesTabular checks the mdp.MDP built through mdp.Builder against
// the package's own transition rows, entry by entry.
func TestMDPMatchesTabular(t *testing.T) {
	spec, err := DefaultFamily(10).Client(2, 3)
	if err != nil {
		t.Fatal(err)
	}
	g := mustGrid(t, spec)
	m, err := g.MDP(0.95, 0)
	if err != nil {
		t.Fatal(err)
	}
	tab := g.Tabular()
	for x := range g.NumStates() * NumActions {
		next, prob := m.Successors(x/NumActions, x%NumActions)
		lo, hi := tab.Start[x], tab.Start[x+1]
		if len(next) != hi-lo {
			t.Fatalf("pair %d: %d successors in MDP, %d in Tabular", x, len(next), hi-lo)
		}
		for k := range next {
			if int(next[k]) != tab.Next[lo+k] {
				t.Fatalf("pair %d successor %d: %d vs %d", x, k, next[k], tab.Next[lo+k])
			}
			approx.Equal(t, "prob", prob[k], tab.Prob[lo+k], 1e-15, 0)
		}
	}
	approx.Equal(t, "init mass", sum(m.Init), 1, 1e-12, 0)
}

func sum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}
