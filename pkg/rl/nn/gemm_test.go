package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// TestGemmAccMatchesReference checks the (possibly FMA) product against a
// triple loop for every layout the MLP uses and for ragged edges.
func TestGemmAccMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, sh := range [][3]int{{64, 64, 64}, {4, 8, 1}, {5, 9, 3}, {17, 64, 4}, {64, 2, 64}, {2, 64, 64}, {8, 16, 0}, {33, 40, 7}} {
		m, n, k := sh[0], sh[1], sh[2]
		for _, trans := range []bool{false, true} {
			ars, acs := k, 1
			if trans {
				ars, acs = 1, m
			}
			a := make([]float64, max(1, m*k))
			b := make([]float64, max(1, k*n))
			c := make([]float64, m*n)
			for i := range a {
				a[i] = rng.NormFloat64()
			}
			for i := range b {
				b[i] = rng.NormFloat64()
			}
			for i := range c {
				c[i] = rng.NormFloat64()
			}
			want := append([]float64(nil), c...)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					for l := 0; l < k; l++ {
						want[i*n+j] += a[i*ars+l*acs] * b[l*n+j]
					}
				}
			}
			gemmAcc(m, n, k, a, ars, acs, b, n, c, n)
			approx.Slices(t, "gemmAcc", c, want, 1e-12, 1e-12)
		}
	}
}

// TestNoFMAKernelsBitExact checks that the AVX kernels without fused
// multiply-adds (gemmRef's axpyRows and Adam's adamStep) reproduce plain
// scalar loops bit for bit, for lengths with and without a ragged tail.
func TestNoFMAKernelsBitExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	fill := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		return x
	}
	for _, sh := range [][3]int{{3, 64, 64}, {4, 7, 5}, {1, 36, 1}, {2, 100, 3}, {4, 4, 64}} {
		m, n, k := sh[0], sh[1], sh[2]
		a, b, c := fill(m*k), fill(k*n), fill(m*n)
		want := append([]float64(nil), c...)
		for i := 0; i < m; i++ {
			for l := 0; l < k; l++ {
				for j := 0; j < n; j++ {
					want[i*n+j] += float64(a[l*m+i] * b[l*n+j])
				}
			}
		}
		gemmRef(m, n, k, a, 1, m, b, n, c, n)
		for i := range c {
			if c[i] != want[i] {
				t.Fatalf("gemmRef %v: c[%d] = %v, scalar loop %v", sh, i, c[i], want[i])
			}
		}
	}
	for _, n := range []int{1, 4, 4481, 4482} {
		p, g := fill(n), fill(n)
		ad := NewAdam(n, 3e-4, 1e-5)
		pw, mw, vw := append([]float64(nil), p...), make([]float64, n), make([]float64, n)
		for step := 1; step <= 3; step++ {
			ad.Step(p, g)
			b1, b2 := 0.9, 0.999
			s := 3e-4 / (1 - math.Pow(b1, float64(step)))
			sq := math.Sqrt(1 - math.Pow(b2, float64(step)))
			for i, gi := range g {
				mw[i] = float64(b1*mw[i]) + float64((1-b1)*gi)
				vw[i] = float64(b2*vw[i]) + float64((1-b2)*gi*gi)
				pw[i] -= s * mw[i] / (math.Sqrt(vw[i])/sq + 1e-5)
			}
			for i := range p {
				if p[i] != pw[i] {
					t.Fatalf("Adam n=%d step %d: p[%d] = %v, scalar loop %v", n, step, i, p[i], pw[i])
				}
			}
			for i := range g {
				g[i] = rng.NormFloat64()
			}
		}
	}
}

// TestTransposeAndTanhGrad checks the blocked transpose against the
// definition and the MLP's tanh derivative against the scalar loop, bit for bit.
func TestTransposeAndTanhGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 1))
	for _, sh := range [][2]int{{64, 64}, {64, 3}, {3, 64}, {7, 5}, {1, 9}} {
		r, c := sh[0], sh[1]
		w := make([]float64, r*c)
		for i := range w {
			w[i] = rng.NormFloat64()
		}
		got := transpose(make([]float64, r*c), w, r, c)
		for i := 0; i < r; i++ {
			for k := 0; k < c; k++ {
				if got[k*r+i] != w[i*c+k] {
					t.Fatalf("transpose %v: (%d, %d) = %v, want %v", sh, k, i, got[k*r+i], w[i*c+k])
				}
			}
		}
	}
	if !useFMA {
		t.Skip("no AVX2")
	}
	for _, n := range []int{4, 64, 4096} {
		d, y := make([]float64, n), make([]float64, n)
		for i := range d {
			d[i], y[i] = rng.NormFloat64(), math.Tanh(rng.NormFloat64())
		}
		want := append([]float64(nil), d...)
		for i, v := range y {
			want[i] *= 1 - float64(v*v)
		}
		tanhGrad(n, &d[0], &y[0])
		for i := range d {
			if d[i] != want[i] {
				t.Fatalf("tanhGrad n=%d: d[%d] = %v, want %v", n, i, d[i], want[i])
			}
		}
	}
}

// TestGemmAccAVX512SameBits checks that the AVX-512 kernel, used for whole
// 16-column blocks, gives exactly the AVX2 kernel's results.
func TestGemmAccAVX512SameBits(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512")
	}
	rng := rand.New(rand.NewPCG(11, 2))
	for _, sh := range [][3]int{{64, 64, 64}, {64, 64, 3}, {3, 64, 64}, {8, 40, 17}, {12, 33, 1}} {
		m, n, k := sh[0], sh[1], sh[2]
		a, b, c := make([]float64, m*k), make([]float64, k*n), make([]float64, m*n)
		for _, x := range [][]float64{a, b, c} {
			for i := range x {
				x[i] = rng.NormFloat64()
			}
		}
		c2 := append([]float64(nil), c...)
		gemmAcc(m, n, k, a, k, 1, b, n, c, n)
		useAVX512 = false
		gemmAcc(m, n, k, a, k, 1, b, n, c2, n)
		useAVX512 = true
		for i := range c {
			if c[i] != c2[i] {
				t.Fatalf("%v: c[%d] = %v with AVX-512, %v without", sh, i, c[i], c2[i])
			}
		}
	}
}

// TestGemmNTMatchesGonumBits checks gemmNT against the gonum Dgemm call it
// replaces, bit for bit, for several shapes including ragged k and m·n.
func TestGemmNTMatchesGonumBits(t *testing.T) {
	if !useFMA {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(13, 4))
	for _, sh := range [][3]int{{64, 1, 64}, {1, 64, 64}, {1, 64, 3}, {5, 3, 7}, {2, 2, 1}, {3, 5, 0}, {7, 9, 66}} {
		m, n, k := sh[0], sh[1], sh[2]
		a, b, c := make([]float64, max(1, m*k)), make([]float64, max(1, n*k)), make([]float64, m*n)
		for _, x := range [][]float64{a, b, c} {
			for i := range x {
				x[i] = rng.NormFloat64()
			}
		}
		want := append([]float64(nil), c...)
		if k > 0 {
			blas64.Implementation().Dgemm(blas.NoTrans, blas.Trans, m, n, k, 1, a, k, b, k, 1, want, n)
		}
		gemmNT(m, n, k, a, k, b, k, c, n)
		for i := range c {
			if c[i] != want[i] {
				t.Fatalf("%v: c[%d] = %v, gonum %v", sh, i, c[i], want[i])
			}
		}
	}
}
