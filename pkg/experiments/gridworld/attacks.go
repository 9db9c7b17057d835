package gridworld

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	gw "github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/experiments/attack"
)

// The poisoning benchmark's attacks (Attack.Kind): what an attacking client
// sends in place of its honestly learned θ.

// attackSend returns what an attacker of a sends in place of its learned θ:
// scale·θ (scale), −scale·meanTheta (flip-mean), the least-squares spike
// of scale times its own reward's mass on cell of the probe with features
// phi (spike), or a draw of rng scaled to scale·‖meanTheta‖ (gaussian). The
// draw is made once, when the attacker sends.
func attackSend(a Attack, meanTheta []float64, phi *mat.Dense, cell int, rng *rand.Rand) func([]float64) []float64 {
	switch a.Kind {
	case AttackScale:
		return func(th []float64) []float64 {
			out := make([]float64, len(th))
			for i, v := range th {
				out[i] = a.Scale * v
			}
			return out
		}
	case AttackFlipMean:
		return func([]float64) []float64 {
			out := make([]float64, len(meanTheta))
			for i, v := range meanTheta {
				out[i] = -a.Scale * v
			}
			return out
		}
	case AttackSpike:
		return func(th []float64) []float64 {
			r := mat.NewVecDense(phi.RawMatrix().Rows, nil)
			r.MulVec(phi, mat.NewVecDense(len(th), slices.Clone(th)))
			mass := 0.0
			for _, v := range r.RawVector().Data {
				mass += math.Abs(v)
			}
			th, err := attack.SpikeTheta(phi, cell, gw.NumActions, a.Scale*mass)
			if err != nil { // attacked checked phi's rank before
				panic(fmt.Sprintf("gridworld: spike attack: %v", err))
			}
			return th
		}
	case AttackGaussian:
		return func([]float64) []float64 {
			return attack.GaussianTheta(rng, len(meanTheta), a.Scale*floats.Norm(meanTheta, 2))
		}
	}
	panic(fmt.Sprintf("gridworld: attack kind %q not validated", a.Kind))
}

// spikeCell returns the cell of the probe farthest from its goal (the
// lowest index among equally far ones): a spike there pulls a greedy
// policy away from the goal in every layout, whose features are distances
// to the layout's own goal and obstacles.
func spikeCell(spec gw.Spec) int {
	best, far := 0, -1.0
	n := spec.Size
	for c := range n * n {
		if d := math.Hypot(float64(c/n-spec.Goal/n), float64(c%n-spec.Goal%n)); d > far {
			best, far = c, d
		}
	}
	return best
}
