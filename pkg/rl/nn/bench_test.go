package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkForwardBackward_4x64x64x2_Batch64 times one PPO minibatch pass of
// stable-baselines3's default actor: forward and backward over 64 rows.
func BenchmarkForwardBackward_4x64x64x2_Batch64(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	m := NewMLP([]int{4, 64, 64, 2}, Tanh, Identity)
	m.InitOrthogonal(rng, math.Sqrt2, 0.01)
	const n = 64
	x := make([]float64, n*4)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	d := make([]float64, n*2)
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	ws := m.NewWorkspace(n)
	g := make([]float64, len(m.Params))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Forward(ws, x, n)
		m.Backward(ws, d, g, nil)
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
}
