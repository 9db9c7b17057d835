package discretize

import (
	"fmt"
	"math"
	"slices"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// Counter builds a lattice MDP from observed transitions, for simulators
// whose full state cannot be set: P(s'|s,a) is the fraction of the observed
// steps from (s, a) that reached s' (the terminal state for a step that
// terminated). A pair never observed gets a self-loop P(s|s,a) = 1. It also
// keeps the sum of the observed rewards per pair, so Reward is the lattice's
// true reward wherever the simulator's reward is a function of the observed
// transition. Add the transitions in a fixed order for a reproducible model
// (the counts are order-independent; the reward sums are floating-point sums
// in the order added).
type Counter struct {
	g    *Grid
	rows [][]count
	rsum []float64
	// Visits counts the observed steps per (cell, action) pair.
	Visits []int
}

type count struct {
	next int32
	n    int
}

// NewCounter returns an empty Counter on g.
func NewCounter(g *Grid) *Counter {
	return &Counter{g: g, rows: make([][]count, g.NumPairs()), rsum: make([]float64, g.NumPairs()), Visits: make([]int, g.NumPairs())}
}

// Add records one step from cell s with action level a to cell next, or to
// the terminal state when terminated (next is then ignored), that earned
// reward. Truncated steps are recorded like any other: the next state is
// still the state reached, not an end of the process.
func (c *Counter) Add(s, a, next int, terminated bool, reward float64) error {
	if s < 0 || s >= c.g.NumCells() || a < 0 || a >= c.g.NumActions() {
		return fmt.Errorf("discretize: transition from cell %d with action %d is outside the grid (%d cells, %d actions)", s, a, c.g.NumCells(), c.g.NumActions())
	}
	if terminated {
		next = c.g.Terminal()
	} else if next < 0 || next >= c.g.NumCells() {
		return fmt.Errorf("discretize: transition to cell %d is outside the grid (%d cells)", next, c.g.NumCells())
	}
	if math.IsNaN(reward) || math.IsInf(reward, 0) {
		return fmt.Errorf("discretize: transition from cell %d with action %d: reward %v is not finite", s, a, reward)
	}
	k := s*c.g.NumActions() + a
	c.Visits[k]++
	c.rsum[k] += reward
	row := c.rows[k]
	for i := range row {
		if row[i].next == int32(next) {
			row[i].n++
			return nil
		}
	}
	c.rows[k] = append(row, count{int32(next), 1})
	return nil
}

// AddState records a step between continuous states (snapped to the grid)
// with a continuous action (snapped to the nearest level).
func (c *Counter) AddState(state, action, next []float64, terminated bool, reward float64) error {
	n := 0
	if !terminated {
		n = c.g.SnapState(next)
	}
	return c.Add(c.g.SnapState(state), c.g.SnapAction(action), n, terminated, reward)
}

// Reward returns the counted true reward, row k = s·A + a for every state
// including the terminal one: the mean reward of the steps observed from
// (s, a); 0 on pairs never observed and on the terminal state.
func (c *Counter) Reward() []float64 {
	r := make([]float64, c.g.NumStates()*c.g.NumActions())
	for k, n := range c.Visits {
		if n > 0 {
			r[k] = c.rsum[k] / float64(n)
		}
	}
	return r
}

// Model returns the counted MDP with discount gamma, the last state
// terminal, and a uniform initial distribution over the cells.
func (c *Counter) Model(gamma float64) (*mdp.MDP, error) {
	g := c.g
	S, A := g.NumStates(), g.NumActions()
	m := &mdp.MDP{NumStates: S, NumActions: A, Gamma: gamma, RowPtr: make([]int, S*A+1)}
	for k := range g.NumPairs() {
		row := slices.Clone(c.rows[k])
		if len(row) == 0 {
			row = []count{{int32(k / A), 1}}
		}
		slices.SortFunc(row, func(x, y count) int { return int(x.next - y.next) })
		tot := 0
		for _, e := range row {
			tot += e.n
		}
		for _, e := range row {
			m.Next = append(m.Next, e.next)
			m.Prob = append(m.Prob, float64(e.n)/float64(tot))
		}
		m.RowPtr[k+1] = len(m.Next)
	}
	for k := g.NumPairs(); k < S*A; k++ {
		m.RowPtr[k+1] = len(m.Next)
	}
	m.Terminal = make([]bool, S)
	m.Terminal[g.Terminal()] = true
	m.Init = make([]float64, S)
	for s := range g.NumCells() {
		m.Init[s] = 1 / float64(g.NumCells())
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("discretize: counted model: %w", err)
	}
	return m, nil
}
