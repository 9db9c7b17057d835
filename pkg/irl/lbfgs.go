package irl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/optimize"
)

// maxEntLBFGS maximizes the objective from theta (updated in place) with
// gonum's L-BFGS on its negation. The objective is concave (the MaxEnt dual
// is convex in θ), so L-BFGS's line search with the strong Wolfe conditions
// converges where plain gradient ascent with a fixed step oscillates or
// crawls. Every major iteration is recorded; the gradient-norm stop uses
// the Euclidean norm, as the first-order optimizers do.
func maxEntLBFGS(ctx context.Context, o *Objective, theta []float64, cfg Config, res *Result, record func(int, float64, float64, float64)) error {
	d := len(theta)
	var (
		lastX           []float64
		lastObj, lastLL float64
		lastGrad        = make([]float64, d)
		evalErr         error
	)
	eval := func(x []float64) {
		if lastX != nil && slices.Equal(x, lastX) {
			return
		}
		lastObj, lastLL = o.Eval(lastGrad, x)
		res.Evaluations++
		res.ValueSweeps += o.vals.Iterations
		res.VisitSweeps += o.ws.VisitIterations()
		lastX = append(lastX[:0], x...)
		if math.IsNaN(lastObj) && evalErr == nil {
			evalErr = fmt.Errorf("irl: objective became NaN")
		}
	}
	p := optimize.Problem{
		Func: func(x []float64) float64 { eval(x); return -lastObj },
		Grad: func(grad, x []float64) {
			eval(x)
			for j, g := range lastGrad {
				grad[j] = -g
			}
		},
	}
	// The starting point is recorded here: gonum's InitIteration reports a
	// zero location, not initX.
	eval(theta)
	res.Gradient0 = slices.Clone(lastGrad)
	gn0 := floats.Norm(lastGrad, 2)
	record(0, lastObj, lastLL, gn0)
	switch {
	case evalErr != nil:
		return evalErr
	case gn0 <= cfg.GradTol:
		res.Converged = true
		return nil
	case cfg.MaxIter == 0:
		return nil
	}
	it := 1
	rec := recorder(func(loc *optimize.Location, op optimize.Operation) error {
		if op != optimize.MajorIteration {
			return nil
		}
		eval(loc.X)
		gn := floats.Norm(lastGrad, 2)
		record(it, lastObj, lastLL, gn)
		copy(theta, loc.X)
		it++
		if evalErr != nil {
			return evalErr
		}
		if gn <= cfg.GradTol {
			res.Converged = true
			return errConverged
		}
		return ctx.Err()
	})
	settings := &optimize.Settings{MajorIterations: cfg.MaxIter, GradientThreshold: math.SmallestNonzeroFloat64, Recorder: rec}
	_, err := optimize.Minimize(p, slices.Clone(theta), settings, &optimize.LBFGS{})
	switch {
	case evalErr != nil:
		return evalErr
	case ctx.Err() != nil:
		return ctx.Err()
	}
	// Otherwise L-BFGS stopped at the iteration budget, at GradTol
	// (errConverged), or because its line search could not improve the
	// objective in float64 any more; theta holds the last accepted iterate.
	eval(theta) // the expected features reported are theta's, not a line-search trial's
	if !res.Converged && err != nil && res.Iterations < cfg.MaxIter {
		res.StopReason = "L-BFGS stopped: " + err.Error()
	}
	return nil
}

var errConverged = errors.New("irl: converged")

// recorder adapts a function to gonum's optimize.Recorder.
type recorder func(*optimize.Location, optimize.Operation) error

func (r recorder) Init() error { return nil }
func (r recorder) Record(loc *optimize.Location, op optimize.Operation, _ *optimize.Stats) error {
	return r(loc, op)
}
