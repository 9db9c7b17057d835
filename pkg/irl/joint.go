package irl

import (
	"context"
	"fmt"

	"github.com/fedirl/fedirl/pkg/jointopt"
)

// JointHessianRtol is the relative residual of the Hessian's column solves
// in a joint-likelihood round: the Hessian only steers the server's Newton
// steps (convergence is judged on the summed gradient, which is exact to
// the value solves' tolerance), so 10⁻⁶ keeps the steps quadratic to the
// 10⁻⁸ relative error the pooled fit is checked against.
const JointHessianRtol = 1e-6

// Evaluate returns the objective's value, gradient and Hessian at theta as
// one term of a joint likelihood (jointopt.Eval). The value is the
// objective (log-likelihood − (λ/2)‖θ‖²); rtol is the Hessian's column
// solves' relative residual (≤ 0: JointHessianRtol).
func (o *Objective) Evaluate(theta []float64, rtol float64) jointopt.Eval {
	if rtol <= 0 {
		rtol = JointHessianRtol
	}
	d := o.d
	e := jointopt.Eval{Grad: make([]float64, d)}
	e.Value, _ = o.Eval(e.Grad, theta)
	h, _ := o.Hessian(nil, rtol)
	e.Hess = make([]float64, d*d)
	for i := range d {
		for j := range d {
			e.Hess[i*d+j] = h.At(i, j)
		}
	}
	return e
}

// SetHessianRtol sets the Hessian's column-solve residual of the
// objective's Term (≤ 0: JointHessianRtol). The Hessian only steers the
// Newton steps, so a study's fits may take 10⁻³ (a step then contracts the
// gradient by about that instead of quadratically) at a fraction of the
// cost of 10⁻⁶ on a large lattice.
func (o *Objective) SetHessianRtol(rtol float64) { o.jointRtol = rtol }

// Term returns o as a jointopt.Objective (Evaluate at the SetHessianRtol
// residual, JointHessianRtol by default), checking ctx before each
// evaluation.
func (o *Objective) Term(ctx context.Context) jointopt.Objective {
	return func(theta []float64) (jointopt.Eval, error) {
		if err := ctx.Err(); err != nil {
			return jointopt.Eval{}, err
		}
		if len(theta) != o.d {
			return jointopt.Eval{}, fmt.Errorf("irl: θ has %d entries, the objective %d", len(theta), o.d)
		}
		return o.Evaluate(theta, o.jointRtol), nil
	}
}

// Pooled fits one θ to several clients' demonstrations, each under its own
// model: the maximizer of Σ_i w_i L_i(θ) (jointopt.Maximize over the
// objectives' Terms), what a federation would learn if it could pool its
// data, and what a federated joint fit must reach.
func Pooled(ctx context.Context, objs []*Objective, w []float64, theta0 []float64, cfg jointopt.Config) (*jointopt.State, error) {
	if len(objs) == 0 {
		return nil, fmt.Errorf("irl: pooled fit of no objectives")
	}
	terms := make([]jointopt.Objective, len(objs))
	for i, o := range objs {
		if o.d != objs[0].d {
			return nil, fmt.Errorf("irl: objective %d has %d features, objective 0 has %d", i, o.d, objs[0].d)
		}
		terms[i] = o.Term(ctx)
	}
	if theta0 == nil {
		theta0 = make([]float64, objs[0].d)
	}
	return jointopt.Maximize(terms, w, theta0, cfg)
}
