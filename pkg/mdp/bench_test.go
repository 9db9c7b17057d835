package mdp

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchRandomMDP returns an S-state, A-action MDP with k successors per pair near the source state.
func benchRandomMDP(S, A, k int, gamma float64) *MDP {
	rng := rand.New(rand.NewPCG(1, 2))
	b := NewBuilder(S, A)
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

// benchGrid returns an n×n grid world: 4 moves that succeed with probability
// 0.9 and otherwise slip to one of the other three directions, walls bounce,
// and the far corner is a terminal goal.
func benchGrid(n int, gamma float64) *MDP {
	S := n * n
	b := NewBuilder(S, 4)
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
	m, err := b.Build()
	if err != nil {
		panic(err)
	}
	return m
}

func benchReward(n int) []float64 {
	rng := rand.New(rand.NewPCG(3, 4))
	r := make([]float64, n)
	for i := range r {
		r[i] = rng.Float64()
	}
	return r
}

var benchCases = []struct {
	name string
	m    func() *MDP
}{
	{"10000x5", func() *MDP { return benchRandomMDP(10000, 5, 10, 0.99) }},
	{"Grid20x20", func() *MDP { return benchGrid(20, 0.99) }},
}

// BenchmarkSoftSweep times one soft Bellman sweep (τ = 1e-3) over all states.
func BenchmarkSoftSweep(b *testing.B) {
	for _, c := range benchCases {
		m := c.m()
		r := benchReward(m.NumPairs())
		for _, workers := range []int{1, 0} {
			b.Run(fmt.Sprintf("%s/workers=%d", c.name, workers), func(b *testing.B) {
				ws := NewWorkspace(m, Options{MaxIter: 1, Workers: workers})
				defer ws.Close()
				v := ws.SoftValueIteration(nil, r, 1e-3)
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := processCPU()
				for b.Loop() {
					v = ws.SoftValueIteration(v, r, 1e-3)
				}
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(len(m.Next))*float64(b.N)/b.Elapsed().Seconds(), "transitions/s")
				b.ReportMetric(float64(ws.Workers()), "goroutines")
			})
		}
	}
}

// BenchmarkVisitsSweep times one forward-propagation step of the visit counts.
func BenchmarkVisitsSweep(b *testing.B) {
	for _, c := range benchCases {
		m := c.m()
		b.Run(c.name, func(b *testing.B) {
			ws := NewWorkspace(m, Options{MaxIter: 1})
			defer ws.Close()
			pi := NewPolicy(m)
			d := ws.Visits(nil, pi, nil)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for b.Loop() {
				d = ws.Visits(d, pi, nil)
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkSoftValueIteration times a cold solve to the default tolerance 1e-10 (γ = 0.99).
func BenchmarkSoftValueIteration(b *testing.B) {
	for _, c := range benchCases {
		m := c.m()
		r := benchReward(m.NumPairs())
		b.Run(c.name, func(b *testing.B) {
			ws := NewWorkspace(m, Options{})
			defer ws.Close()
			v := ws.SoftValueIteration(nil, r, 1e-3) // allocate; every op below is a cold solve
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for b.Loop() {
				v = ws.SoftValueIteration(v, r, 1e-3)
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(v.Iterations), "sweeps")
		})
	}
}
