package irl

import (
	"fmt"
	"gonum.org/v1/gonum/mat"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

// TestHessianFiniteDifferences checks Objective.Hessian against central
// differences of the exact gradient, and the ψ it is made of against the
// expected features of Eval (μ_π = Σ_s D₀(s)ψ(s)), on infinite and finite
// horizons, with terminal states, the absorbing treatment and L2.
func TestHessianFiniteDifferences(t *testing.T) {
	cases := []struct {
		name           string
		S, A, k, nTerm int
		gamma          float64
		horizon        int
		tau, l2, h     float64
		absorbing      bool
	}{
		{"tau 1", 8, 3, 3, 0, 0.9, 0, 1, 0, 1e-5, false},
		{"tau 0.2 terminal l2", 9, 3, 2, 2, 0.95, 0, 0.2, 0.3, 1e-5, false},
		{"tau 1 absorbing", 9, 2, 3, 2, 0.9, 0, 1, 0.1, 1e-5, true},
		{"tau 0.5 finite horizon", 7, 3, 3, 1, 0.95, 8, 0.5, 0.1, 1e-5, false},
		{"tau 1 finite horizon absorbing", 7, 2, 2, 2, 0.99, 6, 1, 0.1, 1e-5, true},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mdptest.RandomMDP(uint64(400+ci), c.S, c.A, c.k, c.nTerm, c.gamma, c.horizon)
			d := 4
			phi := randomFeatures(uint64(400+ci), m.NumPairs(), d)
			rng := rand.New(rand.NewPCG(uint64(ci), 1))
			theta := make([]float64, d)
			for j := range theta {
				theta[j] = rng.NormFloat64()
			}
			demos, _ := expertDemos(m, phi, theta, 1, 20, 15, uint64(ci))
			o, err := NewObjective(m, phi, demos, Config{Temperature: c.tau, L2: c.l2, Absorbing: c.absorbing,
				Solver: mdp.Options{Tol: 1e-14, MaxIter: 1 << 20}})
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			dd := o.Dim()
			theta = make([]float64, dd)
			for j := range theta {
				theta[j] = 0.5 * rng.NormFloat64()
			}
			grad := make([]float64, dd)
			o.Eval(grad, theta)
			muPi := append([]float64(nil), o.ExpectedFeatures()...)
			h, _ := o.Hessian(nil, 1e-12) // the formula, not the solves' tolerance, is under test
			approx.Slices(t, "Σ D₀ψ against μ_π", o.StartFeatures(), muPi, 1e-8*floats.Norm(muPi, math.Inf(1)), 0)
			gp, gm := make([]float64, dd), make([]float64, dd)
			scale := 0.0
			for i := range dd {
				scale = max(scale, math.Abs(h.At(i, i)))
			}
			for j := range dd {
				tp := append([]float64(nil), theta...)
				tp[j] += c.h
				o.Eval(gp, tp)
				tp[j] -= 2 * c.h
				o.Eval(gm, tp)
				for i := range dd {
					fd := (gp[i] - gm[i]) / (2 * c.h)
					if got := h.At(i, j); math.Abs(got-fd) > 1e-6*scale {
						t.Fatalf("H[%d][%d] = %.10g, finite difference of the gradient %.10g (scale %.3g)", i, j, got, fd, scale)
					}
				}
			}
			// Concave: −H − λI is positive semidefinite.
			for j := range dd {
				if h.At(j, j) > -c.l2+1e-12 {
					t.Fatalf("H[%d][%d] = %g > −λ", j, j, h.At(j, j))
				}
			}
		})
	}
}

// TestFiniteHorizonHessianRowDrop checks the finite horizon's row drop
// (hessianRowDrop): with a threshold large enough to drop most states, ψ
// (computed for dropped states from their merged successor rows) still
// gives μ_π = Σ_s D₀(s)ψ₀(s) to rounding, and the Hessian differs from the
// one with every row by a positive semidefinite matrix (the dropped rows'
// covariance), which grows with the threshold.
func TestFiniteHorizonHessianRowDrop(t *testing.T) {
	m := mdptest.RandomMDP(731, 14, 3, 3, 1, 0.95, 12)
	d := 5
	phi := randomFeatures(731, m.NumPairs(), d)
	rng := rand.New(rand.NewPCG(731, 2))
	theta := make([]float64, d)
	for j := range theta {
		theta[j] = rng.NormFloat64()
	}
	demos, _ := expertDemos(m, phi, theta, 1, 20, 12, 731)
	o, err := NewObjective(m, phi, demos, Config{Temperature: 0.5, L2: 0.1, Solver: mdp.Options{Tol: 1e-14, MaxIter: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	grad := make([]float64, o.Dim())
	o.Eval(grad, theta)
	muPi := append([]float64(nil), o.ExpectedFeatures()...)
	hessianAt := func(drop float64) *mat.SymDense {
		o.rowDrop = drop
		h, _ := o.Hessian(nil, 0)
		approx.Slices(t, fmt.Sprintf("Σ D₀ψ against μ_π (row drop %g)", drop), o.StartFeatures(), muPi, 1e-10*floats.Norm(muPi, math.Inf(1)), 0)
		return mat.NewSymDense(o.Dim(), slices.Clone(h.RawSymmetric().Data))
	}
	full := hessianAt(0)
	scale := mat.Norm(full, 2)
	prevTrace := 0.0
	for _, drop := range []float64{0.05, 0.3, 0.9} {
		var diff mat.SymDense
		diff.AddSym(hessianAt(drop), scaledSym(-1, full))
		var eig mat.EigenSym
		if !eig.Factorize(&diff, false) {
			t.Fatal("eigendecomposition failed")
		}
		if lo := floats.Min(eig.Values(nil)); lo < -1e-12*scale {
			t.Fatalf("row drop %g: H_drop − H has eigenvalue %g < 0 (‖H‖ %g): dropping rows must only remove covariance", drop, lo, scale)
		}
		tr := mat.Trace(&diff)
		if !(tr > prevTrace) {
			t.Fatalf("row drop %g: trace(H_drop − H) = %g, not above %g at the smaller threshold", drop, tr, prevTrace)
		}
		prevTrace = tr
	}
}

// scaledSym returns a·s as a new matrix.
func scaledSym(a float64, s *mat.SymDense) *mat.SymDense {
	var out mat.SymDense
	out.ScaleSym(a, s)
	return &out
}
