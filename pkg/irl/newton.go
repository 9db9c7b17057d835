package irl

import (
	"context"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// maxEntNewton maximizes the objective from theta (updated in place) by
// quasi-Newton steps while far from the optimum and Newton's method with
// exact Hessians (hessian.go), refreshed lazily, near it, with a line
// search that needs no objective values.
//
// Far from the optimum the Hessian changes along each step more than an
// exact one can foresee: at θ = 0 (the uniform policy) it is the largest
// the objective has, and on CartPole's fine lattice the Newton step from
// there raises the objective from −35 to 93 where the plain gradient step
// reaches 611. So the fit starts with L-BFGS (gonum's two-loop recursion,
// 15 pairs, the initial matrix scaled by the latest pair; the first step is
// ∇ itself) and switches to Newton for good once ‖∇‖ ≤ 10⁻²‖∇(θ₀)‖, once
// ‖∇‖ has not halved over three steps, once a step's curvature sᵀy is not
// negative (the quasi-Newton model broke), or once a quasi-Newton step does
// not raise the objective at t = 1 (then the step is replaced by Newton's,
// the Hessian computed from θ's policy and visits, kept for that). On the
// benchmark's lattices (BenchmarkLocalFit in package control): CartPole
// fine switches after 5 steps at ‖∇‖ 0.38 (11 evaluations and 1 exact
// Hessian instead of 17 and 2); on Acrobot fine and Pendulum paper the
// gradient step overshoots, so they switch at the first step, the
// overshooting trial costing one evaluation.
//
// In the Newton phase the Hessian model H is exact at the switch and
// whenever the gradient norm has not halved over the last three steps (and
// three steps have passed since the last exact one); between those it
// takes the BFGS update for each accepted step s and gradient change y,
// which keeps −H positive definite because sᵀy < 0 on a concave objective.
// An exact Hessian costs one policy evaluation per feature, about as much
// as 2–4 objective evaluations on the control lattices.
//
// The step p solves (−H + μI)p = ∇ with μ = 0 unless −H is numerically
// singular (λ = 0 and a feature the policy cannot vary), then the
// smallest μ = 10^k·10⁻¹²·tr(−H)/d whose Cholesky factorization succeeds.
// Along p the directional derivative φ'(t) = ∇(θ + tp)·p is decreasing
// (the objective is concave) and positive at 0, so every t ≤ t* (the
// maximum on the line) increases the objective. The search tries t = 1 and
// accepts t once φ'(t) ≥ 0 (t ≤ t*) or the Armijo condition
// f(θ+tp) ≥ f(θ) + 10⁻⁴·t·φ'(0) holds; otherwise the next t is the zero of
// φ' interpolated linearly between 0 and t, kept within [0.1t, 0.5t]. It
// cannot stall on rounding in the objective: φ'(t) ≥ 0 holds for all small
// enough t, and the gradient is computed to the solver's tolerance.
// MaxIter counts steps; the stop is ‖∇‖₂ ≤ GradTol.
func maxEntNewton(ctx context.Context, o *Objective, theta []float64, cfg Config, res *Result, record func(int, float64, float64, float64)) error {
	d := len(theta)
	grad := make([]float64, d)
	trial, tgrad := make([]float64, d), make([]float64, d)
	p := make([]float64, d)
	floor := o.ws.Options().Tol
	solveTol := floor // the tolerance of the last evaluation's solves (θ₀'s is reported: Result.Gradient0)
	defer func() { o.visitTol = 0 }()
	eval := func(g, x []float64) (float64, float64, error) {
		o.ws.SetTol(solveTol)
		o.visitTol = max(floor, visitTolFactor*solveTol)
		obj, ll := o.Eval(g, x)
		res.Evaluations++
		res.ValueSweeps += o.vals.Iterations
		res.VisitSweeps += o.ws.VisitIterations()
		if math.IsNaN(obj) || floats.HasNaN(g) {
			return obj, ll, fmt.Errorf("irl: objective became NaN")
		}
		return obj, ll, nil
	}
	obj, ll, err := eval(grad, theta)
	if err != nil {
		return err
	}
	res.Gradient0 = slices.Clone(grad)
	var (
		h    *mat.SymDense
		negH = mat.NewSymDense(d, nil)
		chol mat.Cholesky
		pv   = mat.NewVecDense(d, p)
		gv   = mat.NewVecDense(d, grad)
		// the last accepted step and gradient change, for the BFGS update
		sstep, ydiff, hs = make([]float64, d), make([]float64, d), make([]float64, d)
		lastExact        int
		// the quasi-Newton phase: gonum's L-BFGS on −f gives the directions
		quasi = true
		lb    = optimize.LBFGS{Store: lbfgsStore}
		loc   = optimize.Location{X: theta, Gradient: make([]float64, d)}
	)
	// exact sets H to the exact Hessian at θ (the last Eval's).
	exact := func(it int, gn float64) {
		var st HessianStats
		h, st = o.Hessian(h, newtonRtol(gn))
		res.HessianMatVecs += st.MatVecs
		res.HessianEvaluations++
		lastExact = it
	}
	for it := 0; ; it++ {
		gn := floats.Norm(grad, 2)
		if gn <= cfg.GradTol && solveTol > floor {
			// Judge convergence on a gradient solved to the configured tolerance.
			solveTol = floor
			if obj, ll, err = eval(grad, theta); err != nil {
				return err
			}
			gn = floats.Norm(grad, 2)
		}
		record(it, obj, ll, gn)
		if gn <= cfg.GradTol {
			res.Converged = true
			return nil
		}
		if it == cfg.MaxIter {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		solveTol = inexactTol(floor, gn)
		stalled := it >= 3 && gn > 0.5*res.GradNorm[len(res.GradNorm)-4]
		if quasi && it > 0 && (gn <= quasiSwitch*res.GradNorm[0] || stalled || !(floats.Dot(sstep, ydiff) < 0)) {
			quasi = false
			exact(it, gn)
		} else if !quasi {
			if it-lastExact >= 3 && stalled {
				exact(it, gn)
			} else if it > lastExact {
				bfgsUpdate(h, hs, sstep, ydiff)
			}
		}
		if quasi {
			for j, g := range grad {
				loc.Gradient[j] = -g
			}
			if it == 0 {
				lb.InitDirection(&loc, p) // p = ∇: the first step is the gradient itself
			} else {
				lb.NextDirection(&loc, p)
			}
			o.keep() // the Hessian's inputs at θ, should the step fail
		} else if err := newtonStep(&chol, negH, h, pv, gv); err != nil {
			res.StopReason = err.Error()
			return nil
		}
		slope := floats.Dot(grad, p)
		accepted := false
		for t, ls := 1.0, 0; ls < maxLineSearch; ls++ {
			floats.AddScaledTo(trial, theta, t, p)
			tobj, tll, err := eval(tgrad, trial)
			if err != nil {
				return err
			}
			dphi := floats.Dot(tgrad, p)
			if dphi >= 0 || tobj >= obj+1e-4*t*slope {
				floats.SubTo(sstep, trial, theta)
				floats.SubTo(ydiff, tgrad, grad)
				copy(theta, trial)
				copy(grad, tgrad)
				obj, ll = tobj, tll
				accepted = true
				if quasi {
					res.QuasiNewtonSteps++
				}
				break
			}
			if quasi {
				// The quasi-Newton model failed: Newton from θ instead.
				quasi = false
				o.restore()
				exact(it, gn)
				if err := newtonStep(&chol, negH, h, pv, gv); err != nil {
					res.StopReason = err.Error()
					return nil
				}
				slope, t = floats.Dot(grad, p), 1
				continue
			}
			t *= min(0.5, max(0.1, slope/(slope-dphi)))
		}
		if !accepted {
			res.StopReason = fmt.Sprintf("line search found no ascent along the step after %d trials", maxLineSearch)
			// theta and grad still hold the last accepted iterate; record it as
			// the final one.
			o.Eval(tgrad, theta)
			return nil
		}
	}
}

// lbfgsStore is the quasi-Newton phase's number of stored pairs (gonum's
// default) and quasiSwitch the fraction of the starting gradient norm at
// which the fit switches to Newton.
const (
	lbfgsStore  = 15
	quasiSwitch = 1e-2
)

// inexactTol is the tolerance of the value solves of the evaluations that
// follow an iterate with gradient norm gn: 10⁻⁴·gn within [floor, 10⁻³],
// floor being the configured solver tolerance; the visit solves take
// visitTolFactor times it (not below floor). A value solve's error moves
// the gradient by about its tolerance times the discounted horizon and
// the features' scale, so far from the optimum a loose solve steers as
// well as a tight one (inexact Newton), and once 10⁻⁴·‖∇‖ falls below
// floor the solves are as tight as configured; convergence is only
// declared on a gradient solved at floor. On CartPole's fine lattice this
// saves about a fifth of the fit's time at the same iterates (10⁻⁵·gn and
// 10⁻³·gn were no faster).
func inexactTol(floor, gn float64) float64 { return max(floor, min(1e-3, 1e-4*gn)) }

// visitTolFactor scales inexactTol for the visit solves. Their tolerance
// bounds each state's residual, and the gradient sums the visits' errors
// over the states: on Acrobot's fine lattice (24,000 states, γ = 0.99)
// the value tolerance 10⁻³ gave one default-run fit (seed 2, client 2) a
// gradient of norm 25 where a tight solve gives 36, and its line search
// found no ascent along the Newton step it steered. A factor of
// S·(1 − γ)·τ ≈ 100–400 on the control lattices would equalize the two
// solves' effect on the gradient.
const visitTolFactor = 1e-2

// newtonRtol is the relative residual of the Hessian's column solves at a
// gradient norm gn: 10⁻³·gn within [10⁻², 10⁻¹]. Far from the optimum a
// rough Hessian steers as well as an exact one (the line search guards
// the step); near it a relative error ε makes a step contract the
// gradient by about ε, but the BFGS updates and the inexact gradients
// bound the contraction at 0.1–0.2 per step anyway: on CartPole's fine
// lattice 10⁻² solves the Hessian at the switch with 570 products instead
// of 967 at the same 11 evaluations (3·10⁻²: 448 products, 12 evaluations).
func newtonRtol(gn float64) float64 { return min(1e-1, max(1e-2, 1e-3*gn)) }

// bfgsUpdate applies to the negative definite Hessian model h the BFGS
// update for the step s and gradient change y = ∇⁺ − ∇,
// H ← H − (Hs)(Hs)ᵀ/(sᵀHs) + yyᵀ/(sᵀy), using hs (length d) as scratch. It
// skips an update that would not keep H negative definite (sᵀy ≥ 0 from
// rounding when the step is tiny).
func bfgsUpdate(h *mat.SymDense, hs, s, y []float64) {
	d := len(s)
	sy := floats.Dot(s, y)
	for i := range d {
		acc := 0.0
		for j := range d {
			acc += h.At(i, j) * s[j]
		}
		hs[i] = acc
	}
	shs := floats.Dot(s, hs)
	if !(sy < 0) || !(shs < 0) {
		return
	}
	for i := range d {
		for j := i; j < d; j++ {
			h.SetSym(i, j, h.At(i, j)-hs[i]*hs[j]/shs+y[i]*y[j]/sy)
		}
	}
}

// maxLineSearch caps the trials of one Newton step's line search.
const maxLineSearch = 40

// newtonStep sets p to the solution of (−H + μI)p = g, with μ ≥ 0 the
// least regularization that makes −H + μI numerically positive definite.
func newtonStep(chol *mat.Cholesky, negH, h *mat.SymDense, p, g *mat.VecDense) error {
	d := h.SymmetricDim()
	tr := 0.0
	for i := range d {
		tr -= h.At(i, i)
	}
	if !(tr > 0) || math.IsInf(tr, 0) {
		return fmt.Errorf("Hessian has trace %v (want negative and finite)", -tr)
	}
	mu := 0.0
	for range 14 {
		negH.ScaleSym(-1, h)
		for i := range d {
			negH.SetSym(i, i, negH.At(i, i)+mu)
		}
		if chol.Factorize(negH) {
			if err := chol.SolveVecTo(p, g); err == nil {
				return nil
			}
		}
		if mu == 0 {
			mu = 1e-12 * tr / float64(d)
		} else {
			mu *= 10
		}
	}
	return fmt.Errorf("Hessian not negative definite even with a shift of %.3g", mu)
}
