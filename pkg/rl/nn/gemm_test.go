package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
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
