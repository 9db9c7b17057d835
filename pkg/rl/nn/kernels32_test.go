package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

func fill32(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// withKern runs f with the float32 kernels' dispatch forced to level.
func withKern(level int, f func()) {
	saved := kern32
	kern32 = level
	defer func() { kern32 = saved }()
	f()
}

// kernLevels lists the kernel levels this CPU can run, the Go transcription first.
func kernLevels() []int {
	l := []int{kernGo}
	if useFMA {
		l = append(l, kernAVX2)
	}
	if useAVX512 {
		l = append(l, kernAVX512)
	}
	return l
}

// TestSgemmMatchesReference checks sgemm at every kernel level this CPU runs
// (AVX-512, AVX2, the Go transcription) against a float64 triple loop and
// against the Go transcription, for every layout MLP32 uses and ragged
// edges, storing and accumulating.
func TestSgemmMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 11))
	for _, avx := range kernLevels() {
		for _, sh := range [][3]int{{64, 64, 64}, {4, 64, 3}, {3, 64, 64}, {64, 2, 64}, {64, 64, 2}, {1, 64, 64}, {1, 1, 64}, {5, 9, 3}, {17, 80, 7}, {7, 130, 33}, {2, 3, 0}, {48, 2, 64}, {37, 20, 9}, {16, 80, 5}} {
			m, n, k := sh[0], sh[1], sh[2]
			for _, trans := range []bool{false, true} {
				for _, acc := range []bool{false, true} {
					ars, acs := k, 1
					if trans {
						ars, acs = 1, m
					}
					a := fill32(rng, max(1, m*k))
					b := fill32(rng, max(1, k*n))
					c := fill32(rng, m*n)
					want := make([]float64, m*n)
					scale := make([]float64, m*n)
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							if acc {
								want[i*n+j] = float64(c[i*n+j])
							}
							scale[i*n+j] = math.Abs(want[i*n+j])
							for l := 0; l < k; l++ {
								p := float64(a[i*ars+l*acs]) * float64(b[l*n+j])
								want[i*n+j] += p
								scale[i*n+j] += math.Abs(p)
							}
						}
					}
					goC := append([]float32(nil), c...)
					sgemmGo(m, n, k, a, ars, acs, b, n, goC, n, acc)
					withKern(avx, func() { sgemm(m, n, k, a, ars, acs, b, n, c, n, acc) })
					for i, v := range c {
						tol := 1e-6 * (scale[i] + 1e-30) * float64(k+2)
						if d := math.Abs(float64(v) - want[i]); d > tol {
							t.Fatalf("level %d %v trans=%v acc=%v: entry %d = %g, want %g", avx, sh, trans, acc, i, v, want[i])
						}
						// The kernel against its Go transcription (they differ by the fused rounding only).
						if d := math.Abs(float64(v) - float64(goC[i])); d > tol {
							t.Fatalf("level %d %v trans=%v acc=%v: entry %d = %g, Go transcription %g", avx, sh, trans, acc, i, v, goC[i])
						}
					}
				}
			}
		}
	}
}

// TestSgemmRowsIndependent checks that a row of the product has the same
// bits whether it is computed in a 4-row block, alone, or among other
// columns: the property that makes MLP32's outputs independent of batching.
func TestSgemmRowsIndependent(t *testing.T) {
	for _, level := range kernLevels() {
		withKern(level, func() { testSgemmRowsIndependent(t) })
	}
}

func testSgemmRowsIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	const m, n, k = 21, 70, 64
	a, b := fill32(rng, m*k), fill32(rng, k*n)
	all := make([]float32, m*n)
	sgemm(m, n, k, a, k, 1, b, n, all, n, false)
	for i := 0; i < m; i++ {
		one := make([]float32, n)
		sgemm(1, n, k, a[i*k:], k, 1, b, n, one, n, false)
		for j := range one {
			if one[j] != all[i*n+j] {
				t.Fatalf("row %d col %d: %g alone, %g in the block", i, j, one[j], all[i*n+j])
			}
		}
		// The first 16 columns on their own (a masked 16-wide block instead of the 64-wide one).
		narrow := make([]float32, 16)
		sgemm(1, 16, k, a[i*k:], k, 1, b, n, narrow, 16, false)
		for j := range narrow {
			if narrow[j] != all[i*n+j] {
				t.Fatalf("row %d col %d: %g in a 16-wide product, %g in the 64-wide one", i, j, narrow[j], all[i*n+j])
			}
		}
	}
}

// TestTanh32 checks the fused bias+tanh against math.Tanh (relative error
// below 4e-7, absolute below 4e-7 near ±1 where the approximation is worst:
// 3.2e-7, about 5 float32 units in the last place), and the assembly
// against its Go transcription, over a dense grid and special values.
func TestTanh32(t *testing.T) {
	var xs []float32
	for x := -12.0; x <= 12; x += 0.000913 {
		xs = append(xs, float32(x))
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), 1e-30, -1e-20, 0.6249999, 0.625, -0.625, 0.6250001, 7.9, 7.90531110763549805, 7.91, 50, -50, 1e30)
	b := make([]float32, len(xs))
	for i := range b {
		b[i] = float32(i%7) * 0.25
	}
	y := make([]float32, len(xs))
	for i := range y {
		y[i] = xs[i] - b[i]
	}
	check := func(name string, got []float32) {
		for i, v := range got {
			x := float64(y[i]) + float64(b[i])
			x32 := float64(float32(y[i] + b[i]))
			want := math.Tanh(x32)
			if math.Abs(float64(v)-want) > 4e-7*math.Max(1e-3, math.Abs(want)) && math.Abs(float64(v)-want) > 1e-9 {
				t.Fatalf("%s: tanh(%g) = %.9g, math.Tanh %.9g", name, x, v, want)
			}
		}
	}
	gogot := append([]float32(nil), y...)
	withKern(kernGo, func() { biasTanh32(gogot, b, 1, len(b)) })
	check("Go", gogot)
	for _, level := range kernLevels()[1:] {
		withKern(level, func() {
			got := append([]float32(nil), y...)
			biasTanh32(got, b, 1, len(b))
			check("assembly", got)
			for i := range got {
				if d := math.Abs(float64(got[i]) - float64(gogot[i])); d > 8*ulp32(gogot[i]) {
					t.Fatalf("level %d: tanh(%g): assembly %.9g, Go %.9g", level, y[i]+b[i], got[i], gogot[i])
				}
			}
			// Several rows with a ragged width give the same bits as one long row.
			for _, cols := range []int{23, 16, 5} {
				const rows = 5
				many := append([]float32(nil), y[:rows*cols]...)
				biasTanh32(many, b[:cols], rows, cols)
				for i := 0; i < rows; i++ {
					row := append([]float32(nil), y[i*cols:(i+1)*cols]...)
					biasTanh32(row, b[:cols], 1, cols)
					for j := range row {
						if row[j] != many[i*cols+j] {
							t.Fatalf("level %d: row %d col %d differs between batched and single-row bias+tanh", level, i, j)
						}
					}
				}
			}
		})
	}
}

func ulp32(x float32) float64 {
	a := float32(math.Abs(float64(x)))
	return float64(math.Nextafter32(a, float32(math.Inf(1))) - a)
}

// TestKernels32BitExact checks that the assembly tanh derivative, Adam step
// and sum of squares reproduce their Go transcriptions bit for bit, for
// lengths with and without a ragged tail.
func TestKernels32BitExact(t *testing.T) {
	for _, level := range kernLevels()[1:] {
		withKern(level, func() { testKernels32BitExact(t) })
	}
}

func testKernels32BitExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, n := range []int{16, 64, 4419, 4610} {
		d, y := fill32(rng, n), fill32(rng, n)
		d2 := append([]float32(nil), d...)
		tanhGrad32(d, y)
		tanhGradGo(d2, y)
		for i := range d {
			if d[i] != d2[i] {
				t.Fatalf("tanhGrad n=%d: entry %d %g, Go %g", n, i, d[i], d2[i])
			}
		}
		p, g, m := fill32(rng, n), fill32(rng, n), fill32(rng, n)
		v := fill32(rng, n)
		for i := range v {
			v[i] *= v[i]
		}
		k := [8]float32{0.9, 0.1, 0.999, 0.001, 3e-4 / 0.19, float32(1 / math.Sqrt(1-0.999*0.999)), 1e-5, 0.73}
		p2, m2, v2 := append([]float32(nil), p...), append([]float32(nil), m...), append([]float32(nil), v...)
		adam32(p, g, m, v, &k)
		adamGo(p2, g, m2, v2, &k)
		for i := range p {
			if p[i] != p2[i] || m[i] != m2[i] || v[i] != v2[i] {
				t.Fatalf("adam n=%d: entry %d (%g %g %g), Go (%g %g %g)", n, i, p[i], m[i], v[i], p2[i], m2[i], v2[i])
			}
		}
		var s1, s2 [32]float64
		sumSq32(g[:n&^31], &s1)
		sumSqGo(g[:n&^31], &s2)
		if s1 != s2 {
			t.Fatalf("sumSq n=%d: %v, Go %v", n, s1, s2)
		}
	}
}

// TestTranspose32 checks the gather transpose against the plain loop on
// PPO's shapes and ragged ones.
func TestTranspose32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 8))
	for _, sh := range [][2]int{{64, 64}, {64, 2}, {64, 1}, {3, 64}, {17, 5}, {1, 1}, {33, 70}, {8, 3}} {
		for _, level := range kernLevels() {
			a := fill32(rng, sh[0]*sh[1])
			got := make([]float32, len(a))
			withKern(level, func() { transpose32(got, a, sh[0], sh[1]) })
			for i := 0; i < sh[0]; i++ {
				for j := 0; j < sh[1]; j++ {
					if got[j*sh[0]+i] != a[i*sh[1]+j] {
						t.Fatalf("level %d %v: entry (%d, %d) = %g, want %g", level, sh, j, i, got[j*sh[0]+i], a[i*sh[1]+j])
					}
				}
			}
		}
	}
}

// TestSumSquares32 checks SumSquares32 against a float64 sum.
func TestSumSquares32(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	for _, n := range []int{0, 5, 32, 100, 4419} {
		g := fill32(rng, n)
		want := 0.0
		for _, v := range g {
			want += float64(v) * float64(v)
		}
		approx.Equal(t, "sum of squares", SumSquares32(g), want, 0, 1e-13)
	}
}

// TestAdam32MatchesAdam checks Adam32 against the float64 Adam over several
// steps with gradient scaling: they agree to float32 rounding.
func TestAdam32MatchesAdam(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 2))
	const n = 37
	a64 := NewAdam(n, 1e-3, 1e-5)
	a32 := NewAdam32(n, 1e-3, 1e-5)
	p64 := make([]float64, n)
	p32 := make([]float32, n)
	for i := range p64 {
		p64[i] = rng.NormFloat64()
		p32[i] = float32(p64[i])
		p64[i] = float64(p32[i])
	}
	for step := 0; step < 20; step++ {
		g64 := make([]float64, n)
		g32 := make([]float32, n)
		for i := range g64 {
			g32[i] = float32(rng.NormFloat64())
			g64[i] = float64(g32[i]) * 0.5
		}
		a64.Step(p64, g64)
		a32.Step(p32, g32, 0.5)
	}
	for i := range p64 {
		approx.Equal(t, "parameter", float64(p32[i]), p64[i], 1e-6, 1e-5)
	}
	if a32.Steps() != 20 {
		t.Fatalf("Steps() = %d, want 20", a32.Steps())
	}
}

// TestMLP32MatchesMLP checks MLP32's forward and backward passes against
// the float64 MLP (itself checked by finite differences) on PPO's shapes,
// with both kernel paths, and the float32→float64 parameter round trip.
func TestMLP32MatchesMLP(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, avx := range kernLevels() {
		for _, sh := range [][]int{{4, 64, 64, 2}, {3, 64, 64, 1}, {8, 64, 64, 2}, {6, 64, 64, 3}, {5, 7, 3}, {4, 32, 32, 2}} {
			for _, n := range []int{1, 3, 64, 70} {
				hidden := Tanh
				if sh[1] == 32 { // a ReLU network too (Config.Activation "relu")
					hidden = ReLU
				}
				m := NewMLP(sh, hidden, Identity)
				m.InitOrthogonal(rng, math.Sqrt2, 0.5)
				for i := range m.Params {
					m.Params[i] += 0.1 * rng.NormFloat64() // nonzero biases
				}
				m32 := FromMLP(m)
				m32.CopyTo(m) // m now holds the float32-rounded parameters
				x := make([]float64, n*m.In())
				for i := range x {
					x[i] = rng.NormFloat64()
				}
				dOut := make([]float64, n*m.Out())
				for i := range dOut {
					dOut[i] = rng.NormFloat64()
				}
				ws := m.NewWorkspace(n)
				want := append([]float64(nil), m.Forward(ws, x, n)...)
				g := make([]float64, len(m.Params))
				m.Backward(ws, dOut, g, nil)
				ws32 := m32.NewWorkspace(n)
				g32 := make([]float32, len(m32.Params))
				var got []float64
				withKern(avx, func() {
					got = m32.Forward(ws32, x, n)
					m32.Backward(ws32, dOut, g32)
				})
				approx.Slices(t, "forward", got, want, 1e-5, 1e-5)
				gm := m.Clone()
				clear(gm.Params)
				back := &MLP32{Sizes: m32.Sizes, Acts: m32.Acts, Params: g32, offsets: m32.offsets}
				back.CopyTo(gm)
				approx.Slices(t, "gradient", gm.Params, g, 1e-4*float64(n), 1e-4)
			}
		}
	}
}

// TestNarrowOutputGradientSameBits checks that Backward's narrow-output
// route (dW = dᵀ·x, added transposed) gives the bits of the direct product
// dWᵀ = xᵀ·d, at every kernel level.
func TestNarrowOutputGradientSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1))
	for _, level := range kernLevels() {
		withKern(level, func() {
			for _, out := range []int{1, 2, 3} {
				m := NewMLP([]int{4, 64, 64, out}, Tanh, Identity)
				m.InitOrthogonal(rng, math.Sqrt2, 1)
				m32 := FromMLP(m)
				const n = 64
				x := make([]float64, n*4)
				for i := range x {
					x[i] = rng.NormFloat64()
				}
				dOut := make([]float64, n*out)
				for i := range dOut {
					dOut[i] = rng.NormFloat64()
				}
				ws := m32.NewWorkspace(n)
				m32.Forward(ws, x, n)
				g := make([]float32, len(m32.Params))
				m32.Backward(ws, dOut, g)
				d := make([]float32, n*out)
				for i, v := range dOut {
					d[i] = float32(v)
				}
				want := make([]float32, 64*out)
				sgemm(64, out, n, ws.acts[1], 1, 64, d, out, want, out, true)
				got, _ := m32.Layer(g, 2)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("level %d out %d: dWᵀ[%d] = %g, direct product %g", level, out, i, got[i], want[i])
					}
				}
			}
		})
	}
}
