package fusion

import (
	"context"
	"errors"
	"fmt"

	"github.com/fedirl/fedirl/pkg/lattice"
	"github.com/fedirl/fedirl/pkg/ot"
	"gonum.org/v1/gonum/mat"
)

// barycenter is MethodBarycenter: p̄ is the entropic W2 barycenter of the
// p_i with weights α on the probe's support (Options.Solver; the lattice's
// separable kernel, or a scattered probe's tiled on-the-fly kernel with ε
// in units of its smallest positive point-to-point cost), mapped back with
// Z = Σ α_i Z_i (and σ = Σ α_i σ_i under SigmaPerClient).
//
// What it bounds: under SigmaShared one client's reward range enters σ, so a
// client with a huge range flattens every other measure and its own shape
// dominates after the map back, and its Z_i enters Z linearly: no bounded
// influence (breakdown point 0 in the fused scale). Under SigmaPerClient
// every measure is scale-free, so one client of weight α_j moves every unit
// of mass at most a fraction α_j of the way toward its own measure (the
// shape's influence is bounded by α_j), while σ and Z of the map back are
// still weighted means (unbounded scale).
var barycenter = rewardMethod{name: MethodBarycenter, combine: barycenterCombine(false), scalar: weightedMeanScalar, barycentric: true}

// debiased is MethodDebiased: the barycenter with the ot.Debiased solver
// (Janati et al. 2020), which removes the entropic blur, so K identical
// clients fuse back to their own θ. It bounds what the barycenter bounds.
var debiased = rewardMethod{name: MethodDebiased, combine: barycenterCombine(true), scalar: weightedMeanScalar, barycentric: true}

// barycenterCombine returns the combine step of the barycenter methods;
// forceDebiased overrides Options.Solver with ot.Debiased.
func barycenterCombine(forceDebiased bool) func(context.Context, Input, [][]float64) (combined, error) {
	return func(ctx context.Context, in Input, ps [][]float64) (combined, error) {
		opt := in.Options
		solver := opt.Solver
		if forceDebiased {
			solver = ot.Debiased
		}
		bo := ot.BarycenterOptions{
			Eps: opt.Eps, Method: solver, MaxIter: opt.MaxIter, InnerIter: opt.InnerIter, Tol: opt.Tol,
			Stop: ctx.Done(),
		}
		var br ot.BarycenterResult
		var err error
		if in.Probe.Points != nil {
			br, err = ot.PointBarycenter(in.Probe.Points, ps, in.Alpha, bo)
		} else {
			br, err = ot.LatticeBarycenter(in.Probe.Lattice, ps, in.Alpha, bo)
		}
		if errors.Is(err, ot.ErrStopped) {
			return combined{}, fmt.Errorf("fusion: barycenter: %w (%w)", context.Cause(ctx), err)
		}
		if err != nil {
			return combined{}, fmt.Errorf("fusion: barycenter: %w", err)
		}
		return combined{br.Barycenter, br.MarginalError, br.Iterations}, nil
	}
}

// Barycentric fuses the clients' parameters thetas by the paper's barycentric
// rule on the probe: rewards r̂_i = Φθ_i on lattice (Φ has one row per lattice
// point, in the lattice's row-major order), p_i = T_σ(r̂_i), p̄ = entropic W2
// barycenter with weights α (nil means uniform) by opt.Solver, r̄ = Z p̄ − σ1,
// θ = least squares by QR. It errors on mismatched shapes, non-finite
// parameters, or a σ that leaves some r̂_i(x) + σ ≤ 0. It is the registry's
// "barycenter" method called directly.
func Barycentric(phi *mat.Dense, lat lattice.Lattice, thetas [][]float64, weights []float64, opt Options) (Result, error) {
	return BarycentricContext(context.Background(), phi, lat, thetas, weights, opt)
}

// BarycentricContext is Barycentric that a cancelled ctx stops between
// barycenter iterations, returning an error wrapping ctx's error.
func BarycentricContext(ctx context.Context, phi *mat.Dense, lat lattice.Lattice, thetas [][]float64, weights []float64, opt Options) (Result, error) {
	return barycentricOn(ctx, Probe{Phi: phi, Lattice: lat}, thetas, weights, opt)
}

// barycentricOn is BarycentricContext on a probe, lattice or scattered.
func barycentricOn(ctx context.Context, p Probe, thetas [][]float64, weights []float64, opt Options) (Result, error) {
	if p.Phi == nil {
		return Result{}, fmt.Errorf("fusion: probe has no feature matrix")
	}
	phi := p.Phi
	d, err := checkThetas(thetas)
	if err != nil {
		return Result{}, err
	}
	if _, pd := phi.Dims(); pd != d {
		return Result{}, fmt.Errorf("fusion: θ has length %d, probe Φ has %d columns", d, pd)
	}
	alpha, err := Weights(weights, len(thetas))
	if err != nil {
		return Result{}, err
	}
	return fuseRewards(ctx, Input{Probe: p, Thetas: thetas, Alpha: alpha, Options: opt}, nil, barycenter)
}
