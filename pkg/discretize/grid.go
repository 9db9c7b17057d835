// Package discretize turns a continuous simulator into a finite lattice MDP
// that MaxEnt IRL (package irl) can solve, and snaps continuous trajectories
// onto that lattice.
//
// A Grid is a product lattice over the simulator's full internal state
// (periodic axes for angles, categorical ones for flags) and a product
// lattice of action levels (a categorical axis of indices for a Discrete
// action space; torque or thrust levels for a Box). States are the lattice
// points plus one absorbing zero-value terminal state, numbered last.
//
// Three model sources produce the same mdp.MDP, each with the true lattice
// reward (the mean simulator reward of the steps behind each row):
//   - SampleModel sets the client's own simulator to K points drawn uniformly
//     in each state cell (the coordinates that snap to the cell's point), steps
//     it once with each action level, and credits the successor's nearest
//     point (or its multilinear interpolation weights) with 1/K; a step that
//     terminates credits the terminal state. Time-limit truncation is not
//     termination (SetState restarts the episode clock). Each (cell, action)
//     draws from its own PCG stream, so the model does not depend on the number
//     of workers.
//   - Counter counts transitions from the client's own rollouts, for
//     simulators whose full state cannot be set; pairs never visited stay in
//     place (a self-loop), which MaxEnt treats as "no information".
//   - ReplayModel, for simulators whose state cannot be set but that are
//     deterministic given their reset seed (a Replayer: LunarLander), clones
//     K of the states the rollouts visited in each cell by replaying their
//     episode's actions and steps each clone once with every action level,
//     crediting the nearest point, the stencil of the state reached, or the
//     stencil of the cell's point moved by the clone's displacement
//     (ReplayConfig.Successor), with never-cloned cells a zero-reward
//     self-loop or a halt (ReplayConfig.HaltReward).
//
// The package knows nothing of features or learning, and no particular
// environment: a Simulator is anything that can set its state and step
// (classic.Stateful is one), a Replayer anything that resets from a seed
// and steps.
package discretize

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/lattice"
)

// ErrGrid is wrapped by every error about an invalid grid spec.
var ErrGrid = errors.New("invalid grid")

// AxisSpec is one axis of a grid: N evenly spaced coordinates from Lo to Hi
// inclusive; on a periodic axis N points Lo + j·(Hi−Lo)/N with period Hi−Lo
// (Hi itself is Lo again); on a categorical axis the N category indices 0…N−1
// (Lo and Hi unused); with Coords, the N given increasing coordinates (Lo
// and Hi unused), for an axis finer where it matters.
type AxisSpec struct {
	// Name labels the coordinate, e.g. "theta" (used in error messages and files).
	Name string `json:"name" yaml:"name"`
	// N is the number of points (≥ 1).
	N int `json:"n" yaml:"n"`
	// Lo and Hi bound the coordinates.
	Lo float64 `json:"lo,omitempty" yaml:"lo,omitempty"`
	Hi float64 `json:"hi,omitempty" yaml:"hi,omitempty"`
	// Periodic wraps the axis with period Hi − Lo (angles).
	Periodic bool `json:"periodic,omitempty" yaml:"periodic,omitempty"`
	// Categorical makes the axis a set of N indices with 0/1 distance.
	Categorical bool `json:"categorical,omitempty" yaml:"categorical,omitempty"`
	// Coords, when set, are the N coordinates of an open axis, strictly
	// increasing (non-uniform bins); a coordinate snaps to the nearest.
	Coords []float64 `json:"coords,omitempty" yaml:"coords,omitempty"`
}

// Axis returns the lattice axis the spec describes; call Validate first.
func (a AxisSpec) Axis() lattice.Axis {
	switch {
	case len(a.Coords) > 0:
		return lattice.Axis{Coords: append([]float64(nil), a.Coords...)}
	case a.Categorical:
		return lattice.CategoricalAxis(a.N)
	case a.Periodic:
		ax := lattice.PeriodicAxis(a.N, a.Hi-a.Lo)
		for i := range ax.Coords {
			ax.Coords[i] += a.Lo
		}
		return ax
	default:
		return lattice.RangeAxis(a.N, a.Lo, a.Hi)
	}
}

// Validate returns an error wrapping ErrGrid naming the axis and the field.
func (a AxisSpec) Validate(where string) error {
	if a.Name != "" {
		where = fmt.Sprintf("%s (%s)", where, a.Name)
	}
	if a.N < 1 {
		return fmt.Errorf("%w: %s: n = %d bins, want ≥ 1", ErrGrid, where, a.N)
	}
	if len(a.Coords) > 0 {
		switch {
		case a.Categorical || a.Periodic:
			return fmt.Errorf("%w: %s: explicit coords are for an open axis, not a categorical or periodic one", ErrGrid, where)
		case a.Lo != 0 || a.Hi != 0:
			return fmt.Errorf("%w: %s: explicit coords replace lo and hi; set one or the other", ErrGrid, where)
		case len(a.Coords) != a.N:
			return fmt.Errorf("%w: %s: %d coords for n = %d", ErrGrid, where, len(a.Coords), a.N)
		}
		for i, c := range a.Coords {
			if math.IsNaN(c) || math.IsInf(c, 0) || (i > 0 && !(c > a.Coords[i-1])) {
				return fmt.Errorf("%w: %s: coords %v: want finite and strictly increasing (coord %d)", ErrGrid, where, a.Coords, i)
			}
		}
		return nil
	}
	if a.Categorical {
		if a.Periodic {
			return fmt.Errorf("%w: %s: an axis cannot be both categorical and periodic", ErrGrid, where)
		}
		return nil
	}
	if math.IsNaN(a.Lo) || math.IsNaN(a.Hi) || math.IsInf(a.Lo, 0) || math.IsInf(a.Hi, 0) || !(a.Lo < a.Hi) {
		return fmt.Errorf("%w: %s: need finite lo < hi, got lo = %v, hi = %v", ErrGrid, where, a.Lo, a.Hi)
	}
	return nil
}

// GridSpec is the serializable description of a Grid.
type GridSpec struct {
	// State lists the state axes, in the simulator's state order.
	State []AxisSpec `json:"state" yaml:"state"`
	// Action lists the action axes: one categorical axis (the action index)
	// for a Discrete action space, the levels of each coordinate for a Box.
	Action []AxisSpec `json:"action" yaml:"action"`
}

// maxGridPairs bounds the number of state–action pairs of a grid (int32
// state indices in the MDP, and a sanity limit far above what fits in memory).
const maxGridPairs = 1 << 31

// Validate returns an error wrapping ErrGrid that names the first bad axis.
func (s GridSpec) Validate() error {
	if len(s.State) == 0 {
		return fmt.Errorf("%w: no state axes", ErrGrid)
	}
	if len(s.Action) == 0 {
		return fmt.Errorf("%w: no action axes", ErrGrid)
	}
	pairs := 1.0
	for k, a := range s.State {
		if err := a.Validate(fmt.Sprintf("state axis %d", k)); err != nil {
			return err
		}
		pairs *= float64(a.N)
	}
	for k, a := range s.Action {
		if err := a.Validate(fmt.Sprintf("action axis %d", k)); err != nil {
			return err
		}
		pairs *= float64(a.N)
	}
	if pairs >= maxGridPairs {
		return fmt.Errorf("%w: %.3g state–action pairs, more than %d", ErrGrid, pairs, maxGridPairs)
	}
	return nil
}

// NumPairs returns the number of (non-terminal) state–action pairs of a
// valid spec, the product of every axis's N.
func (s GridSpec) NumPairs() int {
	n := 1
	for _, a := range s.State {
		n *= a.N
	}
	for _, a := range s.Action {
		n *= a.N
	}
	return n
}

// Grid is a validated GridSpec with its lattices.
type Grid struct {
	// Spec is the grid's description.
	Spec GridSpec
	// States is the lattice of state points (the non-terminal states).
	States lattice.Lattice
	// Actions is the lattice of action levels.
	Actions lattice.Lattice
}

// New validates spec and builds its Grid.
func New(spec GridSpec) (*Grid, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	g := &Grid{Spec: spec}
	for _, a := range spec.State {
		g.States.Axes = append(g.States.Axes, a.Axis())
	}
	for _, a := range spec.Action {
		g.Actions.Axes = append(g.Actions.Axes, a.Axis())
	}
	return g, nil
}

// NumCells returns the number of state lattice points.
func (g *Grid) NumCells() int { return g.States.Len() }

// NumStates returns the number of MDP states: the cells and the terminal state.
func (g *Grid) NumStates() int { return g.States.Len() + 1 }

// Terminal returns the index of the absorbing terminal state (the last one).
func (g *Grid) Terminal() int { return g.States.Len() }

// NumActions returns the number of action levels.
func (g *Grid) NumActions() int { return g.Actions.Len() }

// NumPairs returns the number of non-terminal state–action pairs, the size
// of the fusion support.
func (g *Grid) NumPairs() int { return g.States.Len() * g.Actions.Len() }

// StateDim returns the number of state coordinates.
func (g *Grid) StateDim() int { return len(g.States.Axes) }

// ActionDim returns the number of action coordinates.
func (g *Grid) ActionDim() int { return len(g.Actions.Axes) }

// PairLattice returns the state axes followed by the action axes: the
// support X = S × A on which rewards are fused (point s·A + a is the pair (s, a)).
func (g *Grid) PairLattice() lattice.Lattice {
	axes := make([]lattice.Axis, 0, len(g.States.Axes)+len(g.Actions.Axes))
	return lattice.Lattice{Axes: append(append(axes, g.States.Axes...), g.Actions.Axes...)}
}

// Action writes the coordinates of action level a (the simulator's action
// vector; a Discrete action's index) into dst and returns it.
func (g *Grid) Action(dst []float64, a int) []float64 { return g.Actions.Point(dst, a) }

// SnapState returns the cell nearest to the state x (periodic axes wrap,
// open axes clamp).
func (g *Grid) SnapState(x []float64) int { return g.States.Snap(x) }

// SnapAction returns the action level nearest to the action x.
func (g *Grid) SnapAction(x []float64) int { return g.Actions.Snap(x) }

// SnapTrajectory returns the lattice indices of a continuous trajectory:
// states[t] snapped to cells, actions[t] to action levels, and, when the
// episode terminated (not truncated), the terminal state appended as the
// final state instead of the last observed one. len(states) must be
// len(actions)+1 (the final state included).
func (g *Grid) SnapTrajectory(states, actions [][]float64, terminated bool) (s, a []int, err error) {
	if len(states) != len(actions)+1 {
		return nil, nil, fmt.Errorf("discretize: trajectory has %d states and %d actions, want one more state than actions", len(states), len(actions))
	}
	s = make([]int, len(states))
	a = make([]int, len(actions))
	for t, x := range states {
		if len(x) != g.StateDim() {
			return nil, nil, fmt.Errorf("discretize: trajectory state %d has %d coordinates, the grid %d", t, len(x), g.StateDim())
		}
		if err := finite(x); err != nil {
			return nil, nil, fmt.Errorf("discretize: trajectory state %d: %w", t, err)
		}
		s[t] = g.SnapState(x)
	}
	for t, x := range actions {
		if len(x) != g.ActionDim() {
			return nil, nil, fmt.Errorf("discretize: trajectory action %d has %d coordinates, the grid %d", t, len(x), g.ActionDim())
		}
		if err := finite(x); err != nil {
			return nil, nil, fmt.Errorf("discretize: trajectory action %d: %w", t, err)
		}
		a[t] = g.SnapAction(x)
	}
	if terminated {
		s[len(s)-1] = g.Terminal()
	}
	return s, a, nil
}

// PairFeatures returns the feature matrix Φ of an MDP on g, row s·A + a for
// every state s (the terminal state's rows are zero: it carries no visits
// and no reward) and action level a, with row (s, a) = spec's φ at the
// state point s followed by the action point a. spec must have one axis per
// state axis followed by one per action axis.
func PairFeatures(g *Grid, spec *features.RBFSpec) (*mat.Dense, error) {
	cells, err := spec.StateActionMatrix(g.States, g.Actions)
	if err != nil {
		return nil, err
	}
	n, d := cells.Dims()
	phi := mat.NewDense(n+g.NumActions(), d, nil)
	copy(phi.RawMatrix().Data, cells.RawMatrix().Data)
	return phi, nil
}

func finite(x []float64) error {
	for k, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("coordinate %d is %v", k, v)
		}
	}
	return nil
}
