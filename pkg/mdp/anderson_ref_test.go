package mdp

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
)

// refAnderson is the straightforward transcription of the acceleration (one
// serial pass per dot product and per update) that anderson must reproduce
// bit for bit; see TestAndersonMatchesReference.
type refAnderson struct {
	mem          int
	dF, dG       [][]float64 // mem slots of length n
	fPrev, gPrev []float64
	f            []float64
	hasPrev      bool
	count, head  int
	gram         []float64 // mem×mem, gram[i*mem+j] = <dF_i, dF_j>
	a            []float64 // scratch copy of the system
	rhs, coef    []float64
}

func newRefAnderson(mem, n int) *refAnderson {
	ac := &refAnderson{mem: mem, fPrev: make([]float64, n), gPrev: make([]float64, n), f: make([]float64, n),
		gram: make([]float64, mem*mem), a: make([]float64, mem*mem), rhs: make([]float64, mem), coef: make([]float64, mem)}
	for i := 0; i < mem; i++ {
		ac.dF = append(ac.dF, make([]float64, n))
		ac.dG = append(ac.dG, make([]float64, n))
	}
	return ac
}

// reset forgets the history (used at the start of a solve and when the residual grows).
func (ac *refAnderson) reset() { ac.hasPrev, ac.count, ac.head = false, 0, 0 }

func refDot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// next overwrites x with the accelerated iterate computed from x and g = G(x).
func (ac *refAnderson) next(x, g []float64) {
	f := ac.f
	for i := range f {
		f[i] = g[i] - x[i]
	}
	if ac.hasPrev {
		h := ac.head
		dF, dG := ac.dF[h], ac.dG[h]
		for i := range f {
			dF[i] = f[i] - ac.fPrev[i]
			dG[i] = g[i] - ac.gPrev[i]
		}
		ac.head = (h + 1) % ac.mem
		ac.count = min(ac.count+1, ac.mem)
		for j := 0; j < ac.count; j++ {
			v := refDot(dF, ac.dF[j])
			ac.gram[h*ac.mem+j], ac.gram[j*ac.mem+h] = v, v
		}
	}
	copy(ac.fPrev, f)
	copy(ac.gPrev, g)
	ac.hasPrev = true
	copy(x, g)
	k := ac.count
	if k == 0 {
		return
	}
	trace := 0.0
	for j := 0; j < k; j++ {
		ac.rhs[j] = refDot(ac.dF[j], f)
		trace += ac.gram[j*ac.mem+j]
	}
	if !(trace > 0) || math.IsInf(trace, 0) {
		ac.reset()
		return
	}
	reg := 1e-10 * trace / float64(k)
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			ac.a[i*k+j] = ac.gram[i*ac.mem+j]
		}
		ac.a[i*k+i] += reg
	}
	if !solveSmall(ac.a[:k*k], ac.rhs[:k], ac.coef[:k], k) {
		ac.reset()
		return
	}
	for j := 0; j < k; j++ {
		c, dG := ac.coef[j], ac.dG[j]
		if c == 0 {
			continue
		}
		for i := range x {
			x[i] -= c * dG[i]
		}
	}
}

// TestAndersonMatchesReference runs the parallel acceleration and the serial
// transcription side by side on a contracting affine map (history lengths
// below and above the number of steps, so slots wrap around, and a reset
// half way) and requires the same iterates bit for bit for 1, 2 and 3
// goroutines.
func TestAndersonMatchesReference(t *testing.T) {
	const n = 1001
	rng := rand.New(rand.NewPCG(7, 8))
	// G(x)_i = 0.9·(x_{i−1} + x_{i+1})/2·w_i + b_i: a contraction with a slow mode.
	w, b := make([]float64, n), make([]float64, n)
	for i := range w {
		w[i], b[i] = 0.5+0.5*rng.Float64(), rng.NormFloat64()
	}
	G := func(dst, x []float64) {
		for i := range x {
			l, r := x[(i+n-1)%n], x[(i+1)%n]
			dst[i] = 0.9*0.5*(l+r)*w[i] + b[i]
		}
	}
	for _, mem := range []int{1, 3, 20} {
		for _, workers := range []int{1, 2, 3} {
			bounds := make([]int, workers+1)
			for i := range bounds {
				bounds[i] = i * n / workers
			}
			p := newPool(workers)
			fast, ref := newAnderson(mem, n, p, bounds), newRefAnderson(mem, n)
			xf, xr := make([]float64, n), make([]float64, n)
			gf, gr := make([]float64, n), make([]float64, n)
			for it := 0; it < 60; it++ {
				if it == 30 {
					fast.reset()
					ref.reset()
				}
				G(gf, xf)
				G(gr, xr)
				fast.next(xf, gf)
				ref.next(xr, gr)
				for i := range xf {
					if math.Float64bits(xf[i]) != math.Float64bits(xr[i]) {
						t.Fatalf("mem %d, %d workers, step %d: x[%d] = %v, reference %v", mem, workers, it, i, xf[i], xr[i])
					}
				}
			}
			p.close()
			// The iteration must actually have converged to the fixed point.
			G(gf, xf)
			if d := floats.Distance(gf, xf, math.Inf(1)); d > 1e-6 {
				t.Errorf("mem %d, %d workers: residual %g after 60 steps", mem, workers, d)
			}
		}
	}
}
