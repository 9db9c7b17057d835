package ot

import "math"

// ewBlock is the number of entries per elementwise work item; reductions sum
// per block and then over blocks in order, so results do not depend on the
// number of workers.
const ewBlock = 4096

// Elementwise operations of the barycenter solvers (k is the measure index).
const (
	ewMarginalErr    = iota // Σ|a_k ⊙ tmp - μ_k|
	ewDivMu                 // a_k = μ_k / tmp
	ewGeoAcc                // p += α_k log(b_k ⊙ tmp); b_k = tmp
	ewExpP                  // p = exp(p)
	ewDivB                  // b_k = p / b_k
	ewLogMarginalErr        // Σ|exp(a_k + tmp) - μ_k|
	ewLogDivMu              // a_k = log μ_k - tmp
	ewLogGeoAcc             // p += α_k (b_k + tmp); b_k = tmp
	ewLogDivB               // b_k = p - b_k
	ewExpPTo                // tmp = exp(p)
	ewLogAccB               // p += α_k log tmp; b_k = tmp
	ewExpPc                 // p = c ⊙ exp(p)
	ewDebias                // Σ|c ⊙ tmp - p|; c = sqrt(c ⊙ p / tmp)
	ewErrMuB                // Σ|b_k ⊙ tmp - μ_k|
	ewDivBar                // a_k = bar / tmp
	ewDivMuB                // b_k = μ_k / tmp
	ewVelScale              // vel *= mom
	ewVelAccKv              // vel += α_k (p - log tmp)
	ewLogStep               // p -= step·vel; max(p)
	ewExpBar                // bar = exp(p - shift); Σ bar
	ewNormalize             // bar *= scale; p -= shift
	ewLogAccT               // p += α_k tmp; b_k = tmp
	ewAddC                  // p += c
	ewLogDebias             // Σ|exp(c + tmp) - exp(p)|; c = (c + p - tmp)/2
	ewLogErrMuB             // Σ|exp(b_k + tmp) - μ_k|
	ewLogDivMuB             // b_k = log μ_k - tmp
	ewLogDivBar             // a_k = p - tmp
	ewVelAccF               // vel += α_k a_k
)

// reduction ops and whether they take a maximum instead of a sum.
func isReduction(op int) (bool, bool) {
	switch op {
	case ewMarginalErr, ewLogMarginalErr, ewDebias, ewErrMuB, ewExpBar, ewLogDebias, ewLogErrMuB:
		return true, false
	case ewLogStep:
		return true, true
	}
	return false, false
}

// ewJob runs one elementwise operation over blocks of ewBlock entries.
type ewJob struct {
	w                       *Workspace
	op, k                   int
	partial                 []float64
	step, mom, shift, scale float64
}

// elementwise runs op on measure k across the workers and returns the
// reduction for error ops (0 otherwise).
func (w *Workspace) elementwise(op, k int) float64 {
	blocks := (w.n + ewBlock - 1) / ewBlock
	if len(w.ew.partial) < blocks {
		w.ew.partial = make([]float64, blocks) // first use only
	}
	w.ew.op, w.ew.k = op, k
	parallel(blocks, 4, &w.ew, &w.wg)
	red, isMax := isReduction(op)
	if !red {
		return 0
	}
	if isMax {
		m := math.Inf(-1)
		for _, v := range w.ew.partial[:blocks] {
			m = math.Max(m, v)
		}
		return m
	}
	var s float64
	for _, v := range w.ew.partial[:blocks] {
		s += v
	}
	return s
}

func (j *ewJob) runRange(_, lo, hi int) {
	w := j.w
	k := j.k
	for blk := lo; blk < hi; blk++ {
		i0, i1 := blk*ewBlock, min((blk+1)*ewBlock, w.n)
		tmp := w.tmp[i0:i1]
		p := w.p[i0:i1]
		var mu, a, b []float64
		var alpha float64
		if k < w.kk {
			mu, a, b = w.mu[k][i0:i1], w.a[k][i0:i1], w.b[k][i0:i1]
			alpha = w.alpha[k]
		}
		switch j.op {
		case ewMarginalErr:
			var s float64
			for i, t := range tmp {
				s += math.Abs(a[i]*t - mu[i])
			}
			j.partial[blk] = s
		case ewDivMu:
			for i, t := range tmp {
				a[i] = safeDiv(mu[i], t)
			}
		case ewGeoAcc:
			for i, t := range tmp {
				p[i] += alpha * math.Log(b[i]*t)
				b[i] = t
			}
		case ewExpP:
			for i, v := range p {
				p[i] = math.Exp(v)
			}
		case ewDivB:
			for i, v := range b {
				b[i] = safeDiv(p[i], v)
			}
		case ewLogMarginalErr:
			var s float64
			for i, t := range tmp {
				s += math.Abs(math.Exp(a[i]+t) - mu[i])
			}
			j.partial[blk] = s
		case ewLogDivMu:
			for i, t := range tmp {
				if mu[i] == 0 {
					a[i] = math.Inf(-1)
				} else {
					a[i] = math.Log(mu[i]) - t
				}
			}
		case ewLogGeoAcc:
			for i, t := range tmp {
				p[i] += alpha * (b[i] + t)
				b[i] = t
			}
		case ewLogDivB:
			for i, v := range b {
				if math.IsInf(p[i], -1) {
					b[i] = p[i]
				} else {
					b[i] = p[i] - v
				}
			}
		case ewExpPTo:
			for i, v := range p {
				tmp[i] = math.Exp(v)
			}
		case ewLogAccB:
			for i, t := range tmp {
				p[i] += alpha * math.Log(t)
				b[i] = t
			}
		case ewExpPc:
			c := w.c[i0:i1]
			for i, v := range p {
				p[i] = c[i] * math.Exp(v)
			}
		case ewDebias:
			c := w.c[i0:i1]
			var s float64
			for i, t := range tmp {
				s += math.Abs(c[i]*t - p[i])
				c[i] = math.Sqrt(safeDiv(c[i]*p[i], t))
			}
			j.partial[blk] = s
		case ewErrMuB:
			var s float64
			for i, t := range tmp {
				s += math.Abs(b[i]*t - mu[i])
			}
			j.partial[blk] = s
		case ewDivBar:
			bar := w.bar[i0:i1]
			for i, t := range tmp {
				a[i] = safeDiv(bar[i], t)
			}
		case ewDivMuB:
			for i, t := range tmp {
				b[i] = safeDiv(mu[i], t)
			}
		case ewVelScale:
			vel := w.vel[i0:i1]
			for i := range vel {
				vel[i] *= j.mom
			}
		case ewVelAccKv:
			vel := w.vel[i0:i1]
			for i, t := range tmp {
				vel[i] += alpha * (p[i] - math.Log(t))
			}
		case ewLogStep:
			vel := w.vel[i0:i1]
			m := math.Inf(-1)
			for i := range p {
				p[i] -= j.step * vel[i]
				m = math.Max(m, p[i])
			}
			j.partial[blk] = m
		case ewExpBar:
			bar := w.bar[i0:i1]
			var s float64
			for i, v := range p {
				bar[i] = math.Exp(v - j.shift)
				s += bar[i]
			}
			j.partial[blk] = s
		case ewLogAccT:
			for i, t := range tmp {
				p[i] += alpha * t
				b[i] = t
			}
		case ewAddC:
			c := w.c[i0:i1]
			for i := range p {
				p[i] += c[i]
			}
		case ewLogDebias:
			c := w.c[i0:i1]
			var s float64
			for i, t := range tmp {
				s += math.Abs(math.Exp(c[i]+t) - math.Exp(p[i]))
				if math.IsInf(p[i], -1) {
					c[i] = p[i]
				} else {
					c[i] = 0.5 * (c[i] + p[i] - t)
				}
			}
			j.partial[blk] = s
		case ewLogErrMuB:
			var s float64
			for i, t := range tmp {
				s += math.Abs(math.Exp(b[i]+t) - mu[i])
			}
			j.partial[blk] = s
		case ewLogDivMuB:
			for i, t := range tmp {
				b[i] = logDiv(mu[i], t)
			}
		case ewLogDivBar:
			for i, t := range tmp {
				a[i] = p[i] - t
			}
		case ewVelAccF:
			vel := w.vel[i0:i1]
			for i, v := range a {
				vel[i] += alpha * v
			}
		case ewNormalize:
			bar := w.bar[i0:i1]
			for i := range bar {
				bar[i] *= j.scale
				p[i] -= j.shift
			}
		}
	}
}

// safeDiv returns x/y, with 0/0 = 0 (no mass where there is none to scale).
func safeDiv(x, y float64) float64 {
	if x == 0 {
		return 0
	}
	return x / y
}
