package tasks

import (
	"encoding/json"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/lattice"
)

// GridWorld is the family of the paper's grid-world tasks ("gridworld"):
// the probe JSON is a gridworld.Spec (e.g. gridworld.Family.Probe(seed)).
type GridWorld struct{}

func init() { Register(GridWorld{}) }

// Name implements Family.
func (GridWorld) Name() string { return "gridworld" }

// Probe implements Family: it decodes a gridworld.Spec and builds GridProbe.
func (GridWorld) Probe(raw json.RawMessage) (fusion.Probe, error) {
	var spec gridworld.Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fusion.Probe{}, fmt.Errorf("decoding gridworld spec: %w", err)
	}
	return GridProbe(spec)
}

// GridFeatures returns the grid world's feature matrix Φ on S×A (row
// s·NumActions + a): the state features of features.Grid (distance to the
// goal and to the nearest obstacle) repeated over actions. Clients learn on
// it and the server fuses on it, so it is built here only.
func GridFeatures(spec gridworld.Spec) (*mat.Dense, error) {
	st, err := features.Grid(spec.Size, spec.Goal, spec.Obstacles)
	if err != nil {
		return nil, err
	}
	return features.StateAction(st, gridworld.NumActions), nil
}

// GridProbe builds the probe of a grid-world task from its environment spec:
// X = S × A with axes (row, col) of spacing 1 and the action as a
// categorical axis (cost 1 between different actions, the same as one cell
// step), n = 4N² points, and Φ = GridFeatures(spec). A server that knows the
// spec rebuilds exactly the probe the clients assume.
func GridProbe(spec gridworld.Spec) (fusion.Probe, error) {
	if err := spec.Validate(); err != nil {
		return fusion.Probe{}, err
	}
	phi, err := GridFeatures(spec)
	if err != nil {
		return fusion.Probe{}, err
	}
	lat := lattice.Lattice{Axes: []lattice.Axis{
		lattice.UniformAxis(spec.Size, 1),
		lattice.UniformAxis(spec.Size, 1),
		lattice.CategoricalAxis(gridworld.NumActions),
	}}
	return fusion.Probe{Phi: phi, Lattice: lat}, nil
}
