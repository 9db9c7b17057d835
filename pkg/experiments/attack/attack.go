// Package attack builds what a poisoning client sends in the studies'
// poisoning benchmarks (the grid world's `fedirl sweep poisoning` and the
// control study's `attack` key): the θ that best carries a spike reward and a
// Gaussian θ at a given norm. Both studies decide who attacks and with what
// mass or norm; this package only constructs the vectors, so the two
// benchmarks send the same attack for the same inputs.
package attack

import (
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/fusion"
)

// SpikeTheta returns the θ minimizing ‖Φθ − s‖₂ (fusion.BackProject, the
// fusion's own back-projection) for the spike s that puts mass on the
// actions state–action rows of cell (rows cell·actions …
// cell·actions+actions−1 of phi, mass/actions each) and 0 elsewhere: the
// θ-submission that best carries a reward concentrated on one cell. With
// one-hot features (phi the identity) it is the spike itself. It errors
// when phi is rank deficient.
func SpikeTheta(phi *mat.Dense, cell, actions int, mass float64) ([]float64, error) {
	n, _ := phi.Dims()
	s := make([]float64, n)
	for a := range actions {
		s[cell*actions+a] = mass / float64(actions)
	}
	return fusion.BackProject(phi, s)
}

// GaussianTheta returns a draw of N(0, I_d) from rng scaled to norm (the
// zero vector for norm 0).
func GaussianTheta(rng *rand.Rand, d int, norm float64) []float64 {
	out := make([]float64, d)
	for i := range out {
		out[i] = rng.NormFloat64()
	}
	if nz := floats.Norm(out, 2); nz > 0 {
		floats.Scale(norm/nz, out)
	}
	return out
}
