package mdp

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBlockKernelsAVXMatchGo: the assembly kernels (kernels_amd64.s) give
// the Go loops' results bit for bit — the product with I − γP_π over whole
// and partial row ranges, the block ILU(0) substitutions, the per-column
// dot products and updates, the single-vector product — on the CartPole-sized banded benchmark matrix
// with entries of every sign, zeros and negative zeros, and a whole
// EvaluateColumns solve (warm and cold) as well.
func TestBlockKernelsAVXMatchGo(t *testing.T) {
	if !useAsm {
		t.Skip("no AVX on this CPU: the Go loops are the only path")
	}
	t.Cleanup(func() { useAsm = true })
	c, _, ws := kernelSystem(t, 3000)
	m := ws.MDP()
	rng := rand.New(rand.NewPCG(7, 8))
	n := c.n
	randBlock := func() []blk {
		x := make([]blk, n)
		for s := range x {
			for jj := range x[s] {
				switch rng.IntN(20) {
				case 0:
					x[s][jj] = 0
				case 1:
					x[s][jj] = math.Copysign(0, -1)
				default:
					x[s][jj] = rng.NormFloat64() * math.Exp(4*rng.NormFloat64())
				}
			}
		}
		return x
	}
	same := func(what string, got, want []blk) {
		t.Helper()
		for s := range want {
			for jj := range want[s] {
				if math.Float64bits(got[s][jj]) != math.Float64bits(want[s][jj]) {
					t.Fatalf("%s: state %d column %d: AVX %v, Go %v", what, s, jj, got[s][jj], want[s][jj])
				}
			}
		}
	}
	both := func(f func() []blk) (avx, plain []blk) {
		useAsm = true
		avx = f()
		useAsm = false
		plain = f()
		useAsm = true
		return avx, plain
	}
	x, w := randBlock(), randBlock()
	for _, r := range [][2]int{{0, n}, {17, 1234}, {n - 1, n}} {
		got, want := both(func() []blk {
			y := make([]blk, n)
			c.mulBlockRange(y, x, r[0], r[1])
			return y
		})
		same("product", got, want)
	}
	got, want := both(func() []blk {
		y := append([]blk(nil), x...)
		c.precondBlock(y)
		return y
	})
	same("substitutions", got, want)
	got, want = both(func() []blk {
		var d blk
		blockDots(&d, x, w)
		return []blk{d}
	})
	same("dots", got, want)
	a := x[5]
	for _, alias := range []bool{false, true} {
		got, want = both(func() []blk {
			y := append([]blk(nil), w...)
			u := w
			if alias {
				u = y
			}
			var d blk
			blockAxpyDots(&d, y, &a, x, u)
			return append(y, d)
		})
		same("update and dots", got, want)
		// the same bits as the update and the dots done apart
		y := append([]blk(nil), w...)
		var d blk
		blockAddScaled(y, &a, x)
		if alias {
			blockDots(&d, y, y)
		} else {
			blockDots(&d, y, w)
		}
		same("update and dots apart", got, append(y, d))
	}
	got, want = both(func() []blk {
		y := append([]blk(nil), w...)
		blockAddScaled(y, &a, x)
		return y
	})
	same("scaled sum", got, want)

	// The single-vector product (the substitutions have one path, ell.go).
	xs := make([]float64, n)
	for s := range xs {
		xs[s] = x[s][s%blockWidth]
	}
	for _, r := range [][2]int{{0, n}, {17, 1234}, {n - 1, n}} {
		got, want := both(func() []blk {
			y := make([]float64, n)
			c.mulRange(y, xs, r[0], r[1])
			return asBlocks(y)
		})
		same("single product", got, want)
	}

	// A whole column solve: 11 columns (one block padded), cold then warm.
	const d = 11
	rewards := make([]float64, m.NumPairs()*d)
	for i := range rewards {
		rewards[i] = rng.NormFloat64()
	}
	pi := NewPolicy(m)
	solve := func() []blk {
		dst := make([]float64, n*d)
		ws.EvaluateColumns(dst, rewards, d, pi, 1e-8, false)
		for i := range dst {
			dst[i] *= 1.01
		}
		ws.EvaluateColumns(dst, rewards, d, pi, 1e-10, true)
		return asBlocks(dst)
	}
	got, want = both(solve)
	same("EvaluateColumns", got, want)
}

// asBlocks packs v into blocks (zero-padded) for comparison.
func asBlocks(v []float64) []blk {
	out := make([]blk, (len(v)+blockWidth-1)/blockWidth)
	for i, x := range v {
		out[i/blockWidth][i%blockWidth] = x
	}
	return out
}

// BenchmarkBlockKernels times the block kernels on one core, assembly (AVX)
// and plain Go, on the banded matrix the size of CartPole's fine lattice:
// per row of the matrix (8 columns at once).
func BenchmarkBlockKernels(b *testing.B) {
	c, _, _ := kernelSystem(b, 43000)
	n := c.n
	x, y, w := make([]blk, n), make([]blk, n), make([]blk, n)
	for s := range x {
		for jj := range x[s] {
			x[s][jj] = float64((s+jj)%7) - 3
			w[s][jj] = float64((s*jj)%5) - 2
		}
	}
	var d blk
	a := blk{1e-9, 2e-9, 3e-9, 4e-9, 5e-9, 6e-9, 7e-9, 8e-9}
	benchKernels(b, c,
		namedKernel{"mul", func() { c.mulBlockRange(y, x, 0, n) }},
		namedKernel{"precond", func() { copy(y, x); c.precondBlock(y) }},
		namedKernel{"dots", func() { blockDots(&d, x, w) }},
		namedKernel{"axpy", func() { blockAddScaled(y, &a, w) }},
		namedKernel{"axpy-dots", func() { blockAxpyDots(&d, y, &a, w, x) }})
}
