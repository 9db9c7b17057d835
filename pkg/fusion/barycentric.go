package fusion

import (
	"context"
	"errors"
	"fmt"

	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/lattice"
	"github.com/fedirl/fedirl/pkg/ot"
	"gonum.org/v1/gonum/mat"
)

// Result is the outcome of a barycentric fusion.
type Result struct {
	// Theta is the fused parameter vector argmin ‖Φθ − r̄‖₂.
	Theta []float64
	// Barycenter is p̄ on the probe lattice.
	Barycenter []float64
	// Reward is the mapped-back reward r̄ = Z p̄ − σ1 (before projection).
	Reward []float64
	// Sigma and Z are the shift and the map-back scale actually used.
	Sigma, Z float64
	// ClientZ holds Z(r̂_i) = 1ᵀ(r̂_i + σ1) per client.
	ClientZ []float64
	// MarginalError is ot's marginal violation at the returned iterate.
	MarginalError float64
	// Iterations is the number of barycenter iterations run.
	Iterations int
}

// Barycentric fuses the clients' parameters thetas by the paper's barycentric
// rule on the probe: rewards r̂_i = Φθ_i on lattice (Φ has one row per lattice
// point, in the lattice's row-major order), p_i = T_σ(r̂_i), p̄ = entropic W2
// barycenter with weights α (nil means uniform), r̄ = Z p̄ − σ1, θ = least
// squares by QR. It errors on mismatched shapes, non-finite parameters, or a
// σ that leaves some r̂_i(x) + σ ≤ 0.
func Barycentric(phi *mat.Dense, lat lattice.Lattice, thetas [][]float64, weights []float64, opt Options) (Result, error) {
	return BarycentricContext(context.Background(), phi, lat, thetas, weights, opt)
}

// BarycentricContext is Barycentric that a cancelled ctx stops between
// barycenter iterations, returning an error wrapping ctx's error.
func BarycentricContext(ctx context.Context, phi *mat.Dense, lat lattice.Lattice, thetas [][]float64, weights []float64, opt Options) (Result, error) {
	d, err := checkThetas(thetas)
	if err != nil {
		return Result{}, err
	}
	n, pd := phi.Dims()
	if pd != d {
		return Result{}, fmt.Errorf("fusion: θ has length %d, probe Φ has %d columns", d, pd)
	}
	if lat.Len() != n {
		return Result{}, fmt.Errorf("fusion: probe lattice has %d points, Φ has %d rows", lat.Len(), n)
	}
	alpha, err := Weights(weights, len(thetas))
	if err != nil {
		return Result{}, err
	}
	rs := make([][]float64, len(thetas))
	for i, th := range thetas {
		rs[i] = features.Reward(nil, phi, th)
	}
	res := Result{Sigma: opt.Sigma, ClientZ: make([]float64, len(thetas))}
	if res.Sigma == 0 {
		res.Sigma = AutoSigma(rs...)
	}
	ps := make([][]float64, len(thetas))
	for i, r := range rs {
		ps[i], res.ClientZ[i], err = ShiftNormalize(nil, r, res.Sigma)
		if err != nil {
			return Result{}, fmt.Errorf("fusion: client %d: %w", i, err)
		}
	}
	res.Z = opt.Z
	if res.Z == 0 {
		for i, z := range res.ClientZ {
			res.Z += alpha[i] * z
		}
	}
	br, err := ot.LatticeBarycenter(lat, ps, alpha, ot.BarycenterOptions{
		Eps: opt.Eps, Method: opt.Solver, MaxIter: opt.MaxIter, InnerIter: opt.InnerIter, Tol: opt.Tol,
		Stop: ctx.Done(),
	})
	if errors.Is(err, ot.ErrStopped) {
		return Result{}, fmt.Errorf("fusion: barycenter: %w (%w)", context.Cause(ctx), err)
	}
	if err != nil {
		return Result{}, fmt.Errorf("fusion: barycenter: %w", err)
	}
	res.Barycenter, res.MarginalError, res.Iterations = br.Barycenter, br.MarginalError, br.Iterations
	res.Reward = make([]float64, n)
	for x, p := range br.Barycenter {
		res.Reward[x] = res.Z*p - res.Sigma
	}
	res.Theta, err = BackProject(phi, res.Reward)
	if err != nil {
		return Result{}, err
	}
	return res, nil
}
