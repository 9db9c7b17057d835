package tasks

import (
	"encoding/json"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/federation"
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

// ProbeSize implements ProbeSizer: N² cells × NumActions points and
// features.GridDim features, from the spec's size alone.
func (GridWorld) ProbeSize(raw json.RawMessage) (points, feats int, err error) {
	var spec gridworld.Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return 0, 0, fmt.Errorf("decoding gridworld spec: %w", err)
	}
	if spec.Size < 1 {
		return 0, 0, fmt.Errorf("gridworld spec: size %d, want ≥ 1", spec.Size)
	}
	return mulSat(mulSat(spec.Size, spec.Size), gridworld.NumActions), features.GridDim, nil
}

// GridWorldProbe returns the probe JSON and θ dimension of a grid-world task
// on the N×N family's probe environment for seed, refusing a size whose
// probe exceeds lim before drawing the layout (which takes O(N²) time and
// memory).
func GridWorldProbe(size int, seed uint64, lim federation.Limits) (json.RawMessage, int, error) {
	if size < 2 {
		return nil, 0, fmt.Errorf("gridworld size %d: want ≥ 2", size)
	}
	if err := lim.CheckProbe(mulSat(mulSat(size, size), gridworld.NumActions), features.GridDim); err != nil {
		return nil, 0, fmt.Errorf("gridworld size %d: %w", size, err)
	}
	spec, err := gridworld.DefaultFamily(size).Probe(seed)
	if err != nil {
		return nil, 0, fmt.Errorf("gridworld size %d: %w", size, err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, 0, err
	}
	return b, features.GridDim, nil
}
