package fusion

import (
	"fmt"

	"github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/ot"
	"gonum.org/v1/gonum/mat"
)

// Probe is the server's shared support: the lattice X and the feature matrix
// Φ (one row per lattice point, row-major lattice order) on which client
// rewards are evaluated and fused.
type Probe struct {
	Phi     *mat.Dense
	Lattice ot.Lattice
}

// GridProbe builds the probe of a grid-world task from its (serializable)
// environment spec, e.g. gridworld.Family.Probe(seed): X = S × A with axes
// (row, col) of spacing 1 and the action as a categorical axis (cost 1 between
// different actions, the same as one cell step), n = 4N² points, and Φ the
// grid features of the spec's layout repeated over actions. A server that
// knows the spec rebuilds exactly the probe the clients assume.
func GridProbe(spec gridworld.Spec) (Probe, error) {
	if err := spec.Validate(); err != nil {
		return Probe{}, fmt.Errorf("fusion: probe: %w", err)
	}
	st, err := features.Grid(spec.Size, spec.Goal, spec.Obstacles)
	if err != nil {
		return Probe{}, fmt.Errorf("fusion: probe: %w", err)
	}
	lat := ot.Lattice{Axes: []ot.Axis{
		ot.UniformAxis(spec.Size, 1),
		ot.UniformAxis(spec.Size, 1),
		ot.CategoricalAxis(gridworld.NumActions),
	}}
	return Probe{Phi: features.StateAction(st, gridworld.NumActions), Lattice: lat}, nil
}

// Fuse is Barycentric on the probe.
func (p Probe) Fuse(thetas [][]float64, weights []float64, opt Options) (Result, error) {
	return Barycentric(p.Phi, p.Lattice, thetas, weights, opt)
}
