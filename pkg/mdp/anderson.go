package mdp

import "math"

// anderson implements type-II Anderson acceleration of a fixed-point
// iteration x ← G(x) with a short history (Walker & Ni, 2011). Given the
// current iterate x and g = G(x), next replaces x with g − Σ_j c_j ΔG_j,
// where c minimizes ‖f − Σ_j c_j ΔF_j‖₂ over the stored differences of
// residuals f = g − x. All reductions are serial in index order, so the
// result does not depend on the number of goroutines used to compute G.
//
// It is hand-written because gonum has no fixed-point accelerators, and it
// must not allocate per iteration.
type anderson struct {
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

func newAnderson(mem, n int) *anderson {
	ac := &anderson{mem: mem, fPrev: make([]float64, n), gPrev: make([]float64, n), f: make([]float64, n),
		gram: make([]float64, mem*mem), a: make([]float64, mem*mem), rhs: make([]float64, mem), coef: make([]float64, mem)}
	for i := 0; i < mem; i++ {
		ac.dF = append(ac.dF, make([]float64, n))
		ac.dG = append(ac.dG, make([]float64, n))
	}
	return ac
}

// reset forgets the history (used at the start of a solve and when the residual grows).
func (ac *anderson) reset() { ac.hasPrev, ac.count, ac.head = false, 0, 0 }

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// next overwrites x with the accelerated iterate computed from x and g = G(x).
func (ac *anderson) next(x, g []float64) {
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
			v := dot(dF, ac.dF[j])
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
		ac.rhs[j] = dot(ac.dF[j], f)
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

// solveSmall solves the k×k system a·x = b (a row-major, overwritten) by
// Gaussian elimination with partial pivoting; it reports false if a is singular.
func solveSmall(a, b, x []float64, k int) bool {
	copy(x, b)
	for c := 0; c < k; c++ {
		p := c
		for r := c + 1; r < k; r++ {
			if math.Abs(a[r*k+c]) > math.Abs(a[p*k+c]) {
				p = r
			}
		}
		if a[p*k+c] == 0 || math.IsNaN(a[p*k+c]) {
			return false
		}
		if p != c {
			for j := 0; j < k; j++ {
				a[c*k+j], a[p*k+j] = a[p*k+j], a[c*k+j]
			}
			x[c], x[p] = x[p], x[c]
		}
		for r := c + 1; r < k; r++ {
			m := a[r*k+c] / a[c*k+c]
			for j := c; j < k; j++ {
				a[r*k+j] -= m * a[c*k+j]
			}
			x[r] -= m * x[c]
		}
	}
	for c := k - 1; c >= 0; c-- {
		s := x[c]
		for j := c + 1; j < k; j++ {
			s -= a[c*k+j] * x[j]
		}
		x[c] = s / a[c*k+c]
	}
	for _, v := range x[:k] {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
