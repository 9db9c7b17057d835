package irl

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// benchRandomMDP returns an S-state, A-action MDP with k successors per pair near the source state.
func benchRandomMDP(S, A, k int, gamma float64) *mdp.MDP {
	rng := rand.New(rand.NewPCG(1, 2))
	b := mdp.NewBuilder(S, A)
	b.Gamma = gamma
	for s := 0; s < S; s++ {
		for a := 0; a < A; a++ {
			for i := 0; i < k; i++ {
				b.AddTransition(s, a, (s+rng.IntN(200)-100+S)%S, 1/float64(k))
			}
		}
	}
	m, err := b.Build()
	if err != nil {
		panic(err)
	}
	return m
}

// benchGrid returns an n×n slippery grid world (success 0.9, walls bounce)
// whose far corner is a terminal goal, starting in the opposite corner.
func benchGrid(n int, gamma float64) *mdp.MDP {
	S := n * n
	b := mdp.NewBuilder(S, 4)
	b.Gamma = gamma
	b.SetTerminal(S - 1)
	dx := [4]int{1, -1, 0, 0}
	dy := [4]int{0, 0, 1, -1}
	for s := 0; s < S; s++ {
		x, y := s%n, s/n
		for a := 0; a < 4; a++ {
			for d := 0; d < 4; d++ {
				p := 0.1 / 3
				if d == a {
					p = 0.9
				}
				nx, ny := x+dx[d], y+dy[d]
				if nx < 0 || nx >= n || ny < 0 || ny >= n {
					nx, ny = x, y
				}
				b.AddTransition(s, a, ny*n+nx, p)
			}
		}
	}
	b.Init = make([]float64, S)
	b.Init[0] = 1
	m, err := b.Build()
	if err != nil {
		panic(err)
	}
	return m
}

// benchProblem returns features and demonstrations for m: d random features and
// nDemo uniform-random-policy episodes of at most 50 steps.
func benchProblem(m *mdp.MDP, d, nDemo int) (*mat.Dense, []Trajectory) {
	phi := randomFeatures(7, m.NumPairs(), d)
	rng := rand.New(rand.NewPCG(8, 9))
	pi := mdp.NewPolicy(m)
	var demos []Trajectory
	for len(demos) < nDemo {
		s, a := m.Rollout(rng, pi, 50)
		if len(a) > 0 {
			demos = append(demos, Trajectory{States: s, Actions: a})
		}
	}
	return phi, demos
}

var benchCases = []struct {
	name string
	m    func() *mdp.MDP
	d    int
}{
	{"10000x5", func() *mdp.MDP { return benchRandomMDP(10000, 5, 10, 0.99) }, 64},
	{"Grid20x20", func() *mdp.MDP { return benchGrid(20, 0.99) }, 16},
}

// BenchmarkGradientStep times one MaxEnt IRL step as MaxEnt runs it: reward
// Φθ, warm-started soft value iteration (τ = 1e-3, tol 1e-10), soft policy,
// visit propagation, μ_π and the update θ += 5e-3·∇. The first (cold) solve
// is excluded; value-sweeps/step and visit-sweeps/step count the iterations.
func BenchmarkGradientStep(b *testing.B) {
	for _, c := range benchCases {
		m := c.m()
		phi, demos := benchProblem(m, c.d, 50)
		b.Run(c.name, func(b *testing.B) {
			o, err := NewObjective(m, phi, demos, Config{Solver: mdp.Options{WarmStart: true}})
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			theta := make([]float64, c.d)
			grad := make([]float64, c.d)
			o.Eval(grad, theta)
			floats.AddScaled(theta, 5e-3, grad)
			b.ReportAllocs()
			sweeps, visitSweeps := 0, 0
			b.ResetTimer()
			cpu0 := processCPU()
			for b.Loop() {
				o.Eval(grad, theta)
				floats.AddScaled(theta, 5e-3, grad)
				sweeps += o.vals.Iterations
				visitSweeps += o.ws.VisitIterations()
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(sweeps)/float64(b.N), "value-sweeps/step")
			b.ReportMetric(float64(visitSweeps)/float64(b.N), "visit-sweeps/step")
		})
	}
}

// BenchmarkGradientStepCold times one objective and gradient evaluation from a cold start.
func BenchmarkGradientStepCold(b *testing.B) {
	for _, c := range benchCases {
		m := c.m()
		phi, demos := benchProblem(m, c.d, 50)
		b.Run(c.name, func(b *testing.B) {
			o, err := NewObjective(m, phi, demos, Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			theta := make([]float64, c.d)
			for j := range theta {
				theta[j] = 0.1 * float64(j%3-1)
			}
			grad := make([]float64, c.d)
			o.Eval(grad, theta) // allocate the buffers; warm start is off, so every op is a cold solve
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for b.Loop() {
				o.Eval(grad, theta)
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(o.vals.Iterations), "value-sweeps")
			b.ReportMetric(float64(o.ws.VisitIterations()), "visit-sweeps")
		})
	}
}
