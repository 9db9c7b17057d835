package ot

import (
	"errors"
	"fmt"
	"math"
)

// SinkhornOptions configures Sinkhorn between two measures; the zero value
// runs the scaling form for up to 1000 iterations to a marginal error of 1e-9.
type SinkhornOptions struct {
	// Log selects the log-domain form (potentials absorbed into log-sum-exp
	// kernel passes), stable for small ε.
	Log bool
	// MaxIter caps the iterations; 0 means 1000.
	MaxIter int
	// Tol stops once the marginal error is below it; 0 means 1e-9, negative
	// never stops early.
	Tol float64
}

// SinkhornResult is the outcome of Sinkhorn between measures a and b.
type SinkhornResult struct {
	// F and G are the dual potentials in cost units (f = ε log u,
	// g = ε log v); the plan is P_ij = exp((F_i + G_j - C_ij)/ε). Entries are
	// -Inf where the measure has no mass.
	F, G []float64
	// Cost is the transport cost ⟨P, C⟩ of the entropic plan, the quantity
	// POT's sinkhorn2 returns.
	Cost float64
	// Objective is the regularized primal value ⟨P, C⟩ + ε Σ P_ij (log P_ij - 1).
	Objective float64
	// Iterations is the number of Sinkhorn iterations performed.
	Iterations int
	// MarginalError is ‖Pᵀ𝟙 - b‖₁ (the a-marginal is exact after each
	// iteration), with a and b normalized to mass 1.
	MarginalError float64
	// Converged reports whether MarginalError < Tol was reached.
	Converged bool
}

// Sinkhorn solves entropic optimal transport between a (length k.Rows()) and
// b (length k.Cols()), both normalized to mass 1, with kernel k. It allocates
// its result and a few vectors per call, nothing per iteration.
func Sinkhorn(k Kernel, a, b []float64, opt SinkhornOptions) (SinkhornResult, error) {
	if opt.MaxIter == 0 {
		opt.MaxIter = 1000
	}
	if opt.Tol == 0 {
		opt.Tol = 1e-9
	}
	if len(a) != k.Rows() || len(b) != k.Cols() {
		return SinkhornResult{}, fmt.Errorf("ot: Sinkhorn: measures of length %d and %d for a %d×%d kernel", len(a), len(b), k.Rows(), k.Cols())
	}
	if err := CheckMeasure(a); err != nil {
		return SinkhornResult{}, fmt.Errorf("ot: Sinkhorn: first measure: %w", err)
	}
	if err := CheckMeasure(b); err != nil {
		return SinkhornResult{}, fmt.Errorf("ot: Sinkhorn: second measure: %w", err)
	}
	an, bn := normalized(a), normalized(b)
	m, n := k.Rows(), k.Cols()
	u, tm := make([]float64, m), make([]float64, m)
	v, tn := make([]float64, n), make([]float64, n)
	eps := k.Eps()
	var r SinkhornResult
	if !opt.Log {
		fill(u, 1)
		fill(v, 1)
		for it := 0; ; it++ {
			k.ApplyT(tn, u)
			if it > 0 {
				r.MarginalError = l1Err(v, tn, bn, false)
				if r.MarginalError < opt.Tol {
					r.Converged = true
					break
				}
			}
			if it == opt.MaxIter {
				break
			}
			for j := range v {
				v[j] = safeDiv(bn[j], tn[j])
			}
			k.Apply(tm, v)
			for i := range u {
				u[i] = safeDiv(an[i], tm[i])
			}
			r.Iterations = it + 1
		}
		k.ApplyCost(tm, v)
		for i := range u {
			r.Cost += u[i] * tm[i]
		}
		for i := range u {
			u[i] = eps * math.Log(u[i])
		}
		for j := range v {
			v[j] = eps * math.Log(v[j])
		}
	} else {
		fill(u, 0)
		fill(v, 0)
		for it := 0; ; it++ {
			k.LogApplyT(tn, u)
			if it > 0 {
				r.MarginalError = l1Err(v, tn, bn, true)
				if r.MarginalError < opt.Tol {
					r.Converged = true
					break
				}
			}
			if it == opt.MaxIter {
				break
			}
			for j := range v {
				v[j] = logDiv(bn[j], tn[j])
			}
			k.LogApply(tm, v)
			for i := range u {
				u[i] = logDiv(an[i], tm[i])
			}
			r.Iterations = it + 1
		}
		k.LogApplyCost(tm, v)
		for i := range u {
			if !math.IsInf(u[i], -1) {
				r.Cost += math.Exp(u[i] + tm[i])
			}
		}
		for i := range u {
			u[i] *= eps
		}
		for j := range v {
			v[j] *= eps
		}
	}
	// Objective = Σ_i r_i f_i + Σ_j c_j g_j - ε·mass, with r = a (exact) and
	// c = b up to the marginal error.
	var obj, mass float64
	for i, f := range u {
		if an[i] > 0 {
			obj += an[i] * f
			mass += an[i]
		}
	}
	for j, g := range v {
		if bn[j] > 0 {
			obj += bn[j] * g
		}
	}
	r.Objective = obj - eps*mass
	r.F, r.G = u, v
	if math.IsNaN(r.Cost) || math.IsInf(r.Cost, 0) || math.IsNaN(r.MarginalError) {
		return r, fmt.Errorf("ot: Sinkhorn became non-finite after %d iterations (ε = %g; try the log-domain form): %w", r.Iterations, eps, ErrNonFinite)
	}
	return r, nil
}

// ErrNonFinite is wrapped by the error of a scaling-form solve whose scalings
// under- or overflowed (ε too small for the cost's range); the log-domain
// form computes the same quantity without overflow.
var ErrNonFinite = errors.New("non-finite scalings")

// normalized returns a copy of x scaled to mass 1.
func normalized(x []float64) []float64 {
	s := sum64(x)
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = v / s
	}
	return y
}

func sum64(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s
}

// l1Err returns Σ|v ⊙ t - b| (or Σ|exp(v + t) - b| in the log domain).
func l1Err(v, t, b []float64, log bool) float64 {
	var s float64
	for j := range v {
		x := v[j] * t[j]
		if log {
			x = 0
			if !math.IsInf(v[j], -1) {
				x = math.Exp(v[j] + t[j])
			}
		}
		s += math.Abs(x - b[j])
	}
	return s
}

// logDiv returns log(x) - t, -Inf where x = 0.
func logDiv(x, t float64) float64 {
	if x == 0 {
		return math.Inf(-1)
	}
	return math.Log(x) - t
}
