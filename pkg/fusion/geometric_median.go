package fusion

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// Stopping rule of the geometric median.
const (
	// GeometricMedianTol is the stated tolerance of geometric-median: the
	// iteration stops when the norm of the objective's gradient,
	// ‖Σ α_i (y − θ_i)/‖y − θ_i‖‖ (a sum of weighted unit vectors, at most 1
	// and scale-free), is at most this, or when y sits on a client's θ_j
	// that is optimal (‖Σ_{i: θ_i ≠ y} α_i (y − θ_i)/‖y − θ_i‖‖ ≤ α_j).
	GeometricMedianTol = 1e-10
	// GeometricMedianMaxIter bounds the Weiszfeld iterations; not reaching
	// the tolerance within it is an error.
	GeometricMedianMaxIter = 100000
)

// geometricMedianMethod is MethodGeometricMedian, the weighted geometric
// median argmin_y Σ α_i ‖y − θ_i‖₂ (RFA, Pillutla et al. 2022), computed by
// checking first whether a client's θ_j is optimal (then it is returned
// exactly), else by Weiszfeld's iteration with the Vardi–Zhang step at the
// clients' points, started at the coordinate-wise median, to
// GeometricMedianTol.
//
// What it bounds: its breakdown point is 1/2. Clients of total weight below
// 1/2, whatever they send, move θ̄ by a bounded amount (at most a constant,
// depending on their weight, times the spread of the other clients' θ); it is
// rotation invariant, unlike the coordinate-wise median.
type geometricMedianMethod struct{}

func (geometricMedianMethod) Name() string { return MethodGeometricMedian }
func (geometricMedianMethod) Space() Space { return ThetaSpace }

func (geometricMedianMethod) Fuse(ctx context.Context, in Input) (Output, error) {
	y, _, err := geometricMedian(ctx, in.Thetas, in.Alpha)
	if err != nil {
		return Output{}, err
	}
	return Output{Theta: y}, nil
}

// geometricMedian returns the weighted geometric median of xs and the number
// of Weiszfeld iterations run.
func geometricMedian(ctx context.Context, xs [][]float64, alpha []float64) ([]float64, int, error) {
	d := len(xs[0])
	num := make([]float64, d)
	grad := make([]float64, d)
	// The optimum may be a client's θ_j, which Weiszfeld only approaches
	// sublinearly: test each positive-weight θ_j's optimality condition first.
	for j, xj := range xs {
		if alpha[j] > 0 && atOptimum(xj, xs, alpha, grad) {
			return slices.Clone(xj), 0, nil
		}
	}
	y := coordinatewise(xs, newOrderStats(alpha).median)
	for it := 0; it < GeometricMedianMaxIter; it++ {
		if it%1024 == 0 && ctx.Err() != nil {
			return nil, it, fmt.Errorf("fusion: geometric median: %w", context.Cause(ctx))
		}
		// Weiszfeld: y ← Σ (α_i/‖y−θ_i‖) θ_i / Σ α_i/‖y−θ_i‖ over the θ_i ≠ y;
		// eta is the weight sitting exactly at y.
		clear(num)
		clear(grad)
		den, eta := 0.0, 0.0
		for i, x := range xs {
			if alpha[i] == 0 {
				continue
			}
			dist := 0.0
			for k := range d {
				dist += (y[k] - x[k]) * (y[k] - x[k])
			}
			dist = math.Sqrt(dist)
			if dist == 0 {
				eta += alpha[i]
				continue
			}
			w := alpha[i] / dist
			den += w
			for k := range d {
				num[k] += w * x[k]
				grad[k] += w * (y[k] - x[k])
			}
		}
		g := norm(grad)
		if den == 0 || g <= eta || g <= GeometricMedianTol {
			return y, it, nil // every client at y, y optimal at a client's θ, or the gradient vanishes
		}
		// Vardi–Zhang: T(y) = (1 − η/r) T̃(y) + (η/r) y with r = ‖R̃(y)‖ =
		// ‖Σ w_i (θ_i − y)‖ = g; η = 0 is Weiszfeld's step.
		lambda := eta / g
		for k := range d {
			y[k] = (1-lambda)*(num[k]/den) + lambda*y[k]
		}
	}
	return nil, GeometricMedianMaxIter, fmt.Errorf("fusion: geometric median: gradient norm above %g after %d Weiszfeld iterations", GeometricMedianTol, GeometricMedianMaxIter)
}

// atOptimum reports whether y is a minimizer of Σ α_i‖y − x_i‖: the norm of
// Σ α_i (y − x_i)/‖y − x_i‖ over the x_i ≠ y is at most the weight at y.
func atOptimum(y []float64, xs [][]float64, alpha, grad []float64) bool {
	clear(grad)
	eta := 0.0
	for i, x := range xs {
		if alpha[i] == 0 {
			continue
		}
		dist := 0.0
		for k := range y {
			dist += (y[k] - x[k]) * (y[k] - x[k])
		}
		dist = math.Sqrt(dist)
		if dist == 0 {
			eta += alpha[i]
			continue
		}
		for k := range y {
			grad[k] += alpha[i] * (y[k] - x[k]) / dist
		}
	}
	return norm(grad) <= eta
}

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}
