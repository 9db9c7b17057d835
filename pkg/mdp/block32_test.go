package mdp

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
)

// TestBlock32KernelsAVXMatchGo: the float32 assembly kernels
// (kernels32_amd64.s) give the Go loops' results bit for bit — the
// product over whole and partial row ranges, the ILU(0) substitutions,
// the float64 dot products, the update with and without the fused dots
// (u aliasing w or not), the scaled copies of the next basis vector — on the banded benchmark matrix with entries of
// every sign, zeros and negative zeros, and a whole float32
// EvaluateColumns solve, cold and warm.
func TestBlock32KernelsAVXMatchGo(t *testing.T) {
	if !useAsm {
		t.Skip("no AVX on this CPU: the Go loops are the only path")
	}
	t.Cleanup(func() { useAsm = true })
	c, _, ws := kernelSystem(t, 3000)
	m := ws.MDP()
	var f csr32
	f.round32(c)
	rng := rand.New(rand.NewPCG(9, 10))
	n := c.n
	randBlock := func() []blk32 {
		x := make([]blk32, n)
		for s := range x {
			for jj := range x[s] {
				switch rng.IntN(20) {
				case 0:
					x[s][jj] = 0
				case 1:
					x[s][jj] = float32(math.Copysign(0, -1))
				default:
					x[s][jj] = float32(rng.NormFloat64() * math.Exp(2*rng.NormFloat64()))
				}
			}
		}
		return x
	}
	type out struct {
		x []blk32
		d lanes
	}
	same := func(what string, got, want out) {
		t.Helper()
		for s := range want.x {
			for jj := range want.x[s] {
				if math.Float32bits(got.x[s][jj]) != math.Float32bits(want.x[s][jj]) {
					t.Fatalf("%s: state %d column %d: AVX %v, Go %v", what, s, jj, got.x[s][jj], want.x[s][jj])
				}
			}
		}
		for jj := range want.d {
			if math.Float64bits(got.d[jj]) != math.Float64bits(want.d[jj]) {
				t.Fatalf("%s: dot %d: AVX %v, Go %v", what, jj, got.d[jj], want.d[jj])
			}
		}
	}
	both := func(what string, fn func() out) {
		t.Helper()
		useAsm = true
		got := fn()
		useAsm = false
		want := fn()
		useAsm = true
		same(what, got, want)
	}
	x, w := randBlock(), randBlock()
	for _, r := range [][2]int{{0, n}, {17, 1234}, {n - 1, n}} {
		both("product", func() out {
			y := make([]blk32, n)
			mulBlock32Range(c, f.val, y, x, r[0], r[1])
			return out{x: y}
		})
	}
	both("substitutions", func() out {
		y := append([]blk32(nil), x...)
		precondBlock32(c, &f, y)
		return out{x: y}
	})
	both("dots", func() out {
		var d lanes
		blockDots32(&d, x, w)
		return out{d: d}
	})
	a := x[5]
	for _, alias := range []bool{false, true} {
		both("update and dots", func() out {
			y := append([]blk32(nil), w...)
			u := w
			if alias {
				u = y
			}
			var d lanes
			blockAxpyDots32(&d, y, &a, x, u)
			return out{y, d}
		})
	}
	both("scaled copies", func() out {
		v, u := make([]blk32, n), make([]blk32, n)
		var al lanes
		for jj := range al {
			al[jj] = float64(a[jj]) * 1.0000001
		}
		ops32{}.scaleTwo(v, u, w, &al)
		return out{x: append(v, u...)}
	})
	both("scaled sum", func() out {
		y := append([]blk32(nil), w...)
		blockAddScaled32(y, &a, x)
		return out{x: y}
	})

	// A whole float32 solve: 19 columns (a block, a padded block of 3),
	// cold then warm from a perturbed solution.
	const d = 19
	rewards := make([]float64, m.NumPairs()*d)
	for i := range rewards {
		rewards[i] = rng.NormFloat64()
	}
	pi := NewPolicy(m)
	both("EvaluateColumns", func() out {
		dst := make([]float64, n*d)
		ws.EvaluateColumns(dst, rewards, d, pi, 1e-2, false)
		for i := range dst {
			dst[i] *= 1.01
		}
		ws.EvaluateColumns(dst, rewards, d, pi, 1e-3, true)
		o := out{x: make([]blk32, len(dst)/blockWidth32+1)}
		for i, v := range dst {
			o.x[i/blockWidth32][i%blockWidth32] = float32(v)
			if float64(float32(v)) != v {
				t.Fatalf("EvaluateColumns: entry %d = %v is not a widened float32", i, v)
			}
		}
		return o
	})
}

// TestEvaluateColumns32MeetsTolerance: at the tolerances solved in
// float32 (rtol ≥ column32Rtol) every column's true relative residual
// ‖b − (I − γP_π)v‖₂/‖b‖₂, computed in float64 from the model, is within
// rtol (plus the 10⁻⁵ that float32 rounding of the matrix and the
// solution can add), cold and warm, for full, padded and scalar columns,
// and at most the residual EvaluateColumns reports plus that margin.
func TestEvaluateColumns32MeetsTolerance(t *testing.T) {
	m := bandedForBench(4000, 2, 6, 0.99)
	ws := NewWorkspace(m, Options{Workers: 1})
	t.Cleanup(ws.Close)
	rng := rand.New(rand.NewPCG(11, 12))
	S, A := m.NumStates, m.NumActions
	q := make([]float64, S*A)
	for i := range q {
		q[i] = rng.NormFloat64()
	}
	pi := NewPolicy(m)
	for s := range S {
		p := pi.Prob[s*A : (s+1)*A]
		for a := range p {
			p[a] = math.Exp(q[s*A+a])
		}
		floats.Scale(1/floats.Sum(p), p)
	}
	// d = 34: two blocks of 16 and two scalar columns; d = 37: two blocks
	// and a padded block of 5.
	for _, d := range []int{34, 37} {
		columns32Residuals(t, m, ws, pi, d, rng)
	}
}

func columns32Residuals(t *testing.T, m *MDP, ws *Workspace, pi *Policy, d int, rng *rand.Rand) {
	S, A := m.NumStates, m.NumActions
	rewards := make([]float64, S*A*d)
	for i := range rewards {
		rewards[i] = rng.NormFloat64() + 1
	}
	residuals := func(v []float64) []float64 {
		rel := make([]float64, d)
		for j := range d {
			var rr, bb float64
			for s := range S {
				b, av := 0.0, v[s*d+j]
				if !m.IsTerminal(s) {
					for a, pa := range pi.Prob[s*A : (s+1)*A] {
						k := s*A + a
						b += pa * rewards[k*d+j]
						for i := m.RowPtr[k]; i < m.RowPtr[k+1]; i++ {
							av -= m.Gamma * pa * m.Prob[i] * v[int(m.Next[i])*d+j]
						}
					}
				}
				rr += (b - av) * (b - av)
				bb += b * b
			}
			rel[j] = math.Sqrt(rr / bb)
		}
		return rel
	}
	const margin = 1e-5
	v := make([]float64, S*d)
	for _, c := range []struct {
		rtol float64
		warm bool
	}{{1e-1, false}, {1e-2, true}, {1e-3, true}, {1e-2, false}} {
		st := ws.EvaluateColumns(v, rewards, d, pi, c.rtol, c.warm)
		if st.MatVecs == 0 {
			t.Fatalf("rtol %g: no products", c.rtol)
		}
		for j, r := range residuals(v) {
			if r > c.rtol+margin || r > st.Residual+margin {
				t.Fatalf("d=%d rtol %g warm %v column %d: true residual %.3g, reported %.3g", d, c.rtol, c.warm, j, r, st.Residual)
			}
		}
	}
}

// BenchmarkBlock32Kernels times the float32 block kernels as
// BenchmarkBlockKernels does the float64 ones: per row of the matrix,
// 16 columns at once.
func BenchmarkBlock32Kernels(b *testing.B) {
	c, _, _ := kernelSystem(b, 43000)
	var f csr32
	f.round32(c)
	n := c.n
	x, y, w := make([]blk32, n), make([]blk32, n), make([]blk32, n)
	for s := range x {
		for jj := range x[s] {
			x[s][jj] = float32((s+jj)%7) - 3
			w[s][jj] = float32((s*jj)%5) - 2
		}
	}
	var d lanes
	var a blk32
	for jj := range a {
		a[jj] = float32(jj+1) * 1e-9
	}
	benchKernels(b, c,
		namedKernel{"mul", func() { mulBlock32Range(c, f.val, y, x, 0, n) }},
		namedKernel{"precond", func() { copy(y, x); precondBlock32(c, &f, y) }},
		namedKernel{"dots", func() { blockDots32(&d, x, w) }},
		namedKernel{"axpy", func() { blockAddScaled32(y, &a, w) }},
		namedKernel{"axpy-dots", func() { blockAxpyDots32(&d, y, &a, w, x) }})
}
