package mdp_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/cpuclock"

	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

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
	m    func() *mdp.MDP
}{
	{"10000x5", func() *mdp.MDP { return mdptest.BandedMDP(10000, 5, 10, 0.99) }},
	{"Grid20x20", func() *mdp.MDP { return mdptest.SlipperyGrid(20, 0.99) }},
}

// BenchmarkSoftSweep times one soft Bellman sweep (τ = 1e-3) over all states.
func BenchmarkSoftSweep(b *testing.B) {
	for _, c := range benchCases {
		m := c.m()
		r := benchReward(m.NumPairs())
		for _, workers := range []int{1, 0} {
			b.Run(fmt.Sprintf("%s/workers=%d", c.name, workers), func(b *testing.B) {
				ws := mdp.NewWorkspace(m, mdp.Options{MaxIter: 1, Workers: workers})
				defer ws.Close()
				v := ws.SoftValueIteration(nil, r, 1e-3)
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuclock.ProcessCPU()
				for b.Loop() {
					v = ws.SoftValueIteration(v, r, 1e-3)
				}
				b.ReportMetric(float64(cpuclock.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
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
			ws := mdp.NewWorkspace(m, mdp.Options{MaxIter: 1})
			defer ws.Close()
			pi := mdp.NewPolicy(m)
			d := ws.Visits(nil, pi, nil)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuclock.ProcessCPU()
			for b.Loop() {
				d = ws.Visits(d, pi, nil)
			}
			b.ReportMetric(float64(cpuclock.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkSoftValueIteration times a cold solve to the default tolerance 1e-10 (γ = 0.99).
func BenchmarkSoftValueIteration(b *testing.B) {
	for _, c := range benchCases {
		m := c.m()
		r := benchReward(m.NumPairs())
		b.Run(c.name, func(b *testing.B) {
			ws := mdp.NewWorkspace(m, mdp.Options{})
			defer ws.Close()
			v := ws.SoftValueIteration(nil, r, 1e-3) // allocate; every op below is a cold solve
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuclock.ProcessCPU()
			for b.Loop() {
				v = ws.SoftValueIteration(v, r, 1e-3)
			}
			b.ReportMetric(float64(cpuclock.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(v.Iterations), "sweeps")
		})
	}
}
