// Package fusion fuses the reward parameters θ_i learned by K clients into
// one global θ, the server step of the paper (§Aggregation, §Parameter
// Recovery). It owns the open set of fusion methods as one registry (Methods,
// Lookup): one file per method implementing Method, registered once under
// its one name, which is what options, task specs, flags, tables and plots
// print. FuseContext dispatches on Options.Method.
//
// θ-space methods combine the θ_i directly: "mean" (FedAvg, θ = Σ α_i θ_i)
// and the robust aggregators "median", "trimmed-mean", "geometric-median",
// "krum" and "multi-krum".
//
// Reward-space methods evaluate each client's reward r̂_i = Φθ_i on the
// server's probe lattice X, shift and normalize it to a probability vector
// p_i = T_σ(r̂_i) = (r̂_i + σ1)/Z_i (Theorem 1; σ shared or per client,
// Options.SigmaMode), combine the p_i into p̄, map it back to a reward
// r̄ = Z p̄ − σ1, and recover θ = argmin ‖Φθ − r̄‖₂ by a Householder QR
// factorization of Φ (gonum), not the normal equations. They differ only in
// the combination: the entropic Wasserstein barycenter ("barycenter",
// "debiased"; "barycentric" is accepted as an alias of "barycenter"), the
// arithmetic mean ("normalized-mean"), the per-point median or trimmed
// mean ("reward-median", "reward-trimmed-mean"), or the geometric median in
// the lattice's transport geometry ("wasserstein-median": Weiszfeld over
// debiased barycenters).
//
// Every output carries each client's outlier score (OutlierScores: robust
// z-scores of its reward's shape and scale against the median client's),
// independent of the method; a score above OutlierThreshold is what the
// federation warns of.
//
// FuseContributions also takes clients that contribute their reward's values
// on the probe instead of θ (any reward model, other features): the mean and
// every reward-space method fuse them beside the θ_i (evaluated as Φθ_i) and
// back-project the fused reward; the other θ-space methods refuse them.
//
// A probe is a lattice or, for problems no lattice can reach, a scattered
// point set (NewPointProbe: Φ at the points, a weighted squared-Euclidean
// cost between them); every reward-space method runs on either, the
// barycenters on the point set's on-the-fly kernel (ot.PointKernel).
//
// Each method's doc comment says what it bounds (the influence of one client,
// its breakdown point). The barycenter itself is computed by package ot on
// the lattice's separable Gibbs kernel. This package deliberately does no
// learning and no communication (see pkg/irl and pkg/federation); it is pure
// functions of the clients' θ, the probe (Φ, lattice) and the options.
package fusion

import (
	"errors"
	"fmt"
	"math"
)

// Weights returns α normalized to sum to one: uniform 1/K when w is nil,
// otherwise w/Σw. It errors if w has the wrong length, a negative or
// non-finite entry, or sums to zero.
func Weights(w []float64, k int) ([]float64, error) {
	if k < 1 {
		return nil, errors.New("fusion: no clients")
	}
	out := make([]float64, k)
	if w == nil {
		for i := range out {
			out[i] = 1 / float64(k)
		}
		return out, nil
	}
	if len(w) != k {
		return nil, fmt.Errorf("fusion: %d weights for %d clients", len(w), k)
	}
	sum := 0.0
	for i, v := range w {
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("fusion: weight %d = %v, want a finite non-negative number", i, v)
		}
		sum += v
	}
	if sum == 0 {
		return nil, errors.New("fusion: weights sum to zero")
	}
	for i, v := range w {
		out[i] = v / sum
	}
	return out, nil
}

func checkThetas(thetas [][]float64) (int, error) {
	if len(thetas) == 0 {
		return 0, errors.New("fusion: no client parameters")
	}
	d := len(thetas[0])
	if d == 0 {
		return 0, errors.New("fusion: client 0 sent an empty θ")
	}
	for i, th := range thetas {
		if len(th) != d {
			return 0, fmt.Errorf("fusion: client %d θ has length %d, client 0 has %d", i, len(th), d)
		}
		for k, v := range th {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("fusion: client %d θ[%d] = %v", i, k, v)
			}
		}
	}
	return d, nil
}

// ShiftNormalize writes T_σ(r) = (r + σ1)/Z into dst and returns it with
// Z = 1ᵀ(r + σ1) (Theorem 1). It errors if some r(x) + σ is not positive.
func ShiftNormalize(dst, r []float64, sigma float64) ([]float64, float64, error) {
	if len(dst) != len(r) {
		dst = make([]float64, len(r))
	}
	z := 0.0
	for i, v := range r {
		if !(v+sigma > 0) {
			return nil, 0, fmt.Errorf("fusion: r[%d] + σ = %v + %v is not positive", i, v, sigma)
		}
		z += v + sigma
	}
	for i, v := range r {
		dst[i] = (v + sigma) / z
	}
	return dst, z, nil
}

// AutoSigma returns the default shift for the rewards rs: the smallest shift
// that makes every entry non-negative plus 10% of the largest per-client
// reward range, so the least-rewarded lattice point keeps some mass and every
// p_i is strictly positive (as Theorem 1 requires). When every reward is
// constant the margin is 1.
func AutoSigma(rs ...[]float64) float64 {
	lo, span := math.Inf(1), 0.0
	for _, r := range rs {
		rlo, rhi := math.Inf(1), math.Inf(-1)
		for _, v := range r {
			rlo = math.Min(rlo, v)
			rhi = math.Max(rhi, v)
		}
		lo = math.Min(lo, rlo)
		span = math.Max(span, rhi-rlo)
	}
	margin := 0.1 * span
	if margin == 0 {
		margin = 1
	}
	return math.Max(0, -lo) + margin
}
