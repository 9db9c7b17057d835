package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/cpuclock"
)

// BenchmarkForwardBackward_4x64x64x2_Batch64 times one PPO minibatch pass of
// stable-baselines3's default actor (forward and backward over 64 rows), with
// and without the FMA kernel.
func BenchmarkForwardBackward_4x64x64x2_Batch64(b *testing.B) {
	for _, fma := range []bool{true, false} {
		name := map[bool]string{true: "fma", false: "portable"}[fma]
		b.Run(name, func(b *testing.B) {
			if fma && !useFMA {
				b.Skip("no AVX2/FMA")
			}
			saved := useFMA
			useFMA = fma
			defer func() { useFMA = saved }()
			m, x, d, n := benchActor()
			ws := m.NewWorkspace(n)
			g := make([]float64, len(m.Params))
			b.ReportAllocs()
			c0 := cpuclock.ProcessCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.Forward(ws, x, n)
				m.Backward(ws, d, g, nil)
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64((cpuclock.ProcessCPU()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkForwardBackward32_4x64x64x2_Batch64 is the float32 counterpart
// (MLP32) of BenchmarkForwardBackward_4x64x64x2_Batch64, per kernel level
// this CPU can run, plus the Adam32 step over the same parameters.
func BenchmarkForwardBackward32_4x64x64x2_Batch64(b *testing.B) {
	for _, level := range kernLevels() {
		name := map[int]string{kernGo: "go", kernAVX2: "avx2", kernAVX512: "avx512"}[level]
		b.Run(name, func(b *testing.B) {
			withKern(level, func() {
				m, x, d, n := benchActor()
				m32 := FromMLP(m)
				ws := m32.NewWorkspace(n)
				g := make([]float32, len(m32.Params))
				opt := NewAdam32(len(g), 1e-9, 1e-5)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					m32.Forward(ws, x, n)
					m32.Backward(ws, d, g)
					opt.Step(m32.Params, g, 1)
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
			})
		})
	}
}

// benchActor returns stable-baselines3's default CartPole actor (4-64-64-2,
// orthogonal initialisation), a batch of n = 64 random inputs and output
// derivatives.
func benchActor() (m *MLP, x, d []float64, n int) {
	rng := rand.New(rand.NewPCG(1, 1))
	m = NewMLP([]int{4, 64, 64, 2}, Tanh, Identity)
	m.InitOrthogonal(rng, math.Sqrt2, 0.01)
	n = 64
	x = make([]float64, n*4)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	d = make([]float64, n*2)
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	return m, x, d, n
}
