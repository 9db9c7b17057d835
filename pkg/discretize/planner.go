package discretize

import (
	"fmt"
)

// Planner acts in a continuous simulator with the action values of a lattice
// model: at a state x it takes argmax_a Σ_e w_e Q(s_e, a), where (s_e, w_e)
// is the multilinear interpolation stencil of x on the state lattice
// (Lattice.Interp; clamped to the lattice's box, periodic axes wrapped).
// Interpolating Q rather than snapping x to its nearest cell lets a planner
// on a coarse lattice act smoothly between cells; with one cell per state it
// is the nearest-cell greedy policy. It is the "does the model plan with the
// true reward?" rung of the control study's validation ladder.
//
// A Planner is not safe for concurrent use.
type Planner struct {
	g    *Grid
	q    []float64
	idx  []int
	w    []float64
	qa   []float64
	cell int
}

// NewPlanner returns a planner for grid g and the stationary action values
// q (Values.Q of an infinite-horizon solve on g's model: NumStates·NumActions
// entries, the terminal state's last).
func NewPlanner(g *Grid, q []float64) (*Planner, error) {
	if want := g.NumStates() * g.NumActions(); len(q) != want {
		return nil, fmt.Errorf("discretize: planner: %d action values, want states·actions = %d", len(q), want)
	}
	d := g.StateDim()
	return &Planner{g: g, q: q, idx: make([]int, 1<<d), w: make([]float64, 1<<d), qa: make([]float64, g.NumActions())}, nil
}

// ActionIndex returns the lattice action chosen at state x (ties go to the
// lowest index).
func (p *Planner) ActionIndex(x []float64) int {
	A := p.g.NumActions()
	n := p.g.States.Interp(p.idx, p.w, x)
	clear(p.qa)
	for e := range n {
		row := p.q[p.idx[e]*A : p.idx[e]*A+A]
		for a, v := range row {
			p.qa[a] += p.w[e] * v
		}
	}
	best := 0
	for a := 1; a < A; a++ {
		if p.qa[a] > p.qa[best] {
			best = a
		}
	}
	return best
}

// Act writes the coordinates of the chosen lattice action at state x into
// dst (length ActionDim) and returns it.
func (p *Planner) Act(dst, x []float64) []float64 {
	return p.g.Action(dst, p.ActionIndex(x))
}
