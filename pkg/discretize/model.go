package discretize

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// Simulator is what SampleModel needs of an environment: set the full
// internal state, step once, read the state back. classic.Stateful
// implements it.
type Simulator interface {
	// SetState sets the full state and starts a new episode from it.
	SetState(state []float64) error
	// Step applies an action and advances one time step.
	Step(action []float64) (obs []float64, reward float64, terminated, truncated bool)
	// State copies the full state into dst and returns it.
	State(dst []float64) []float64
}

// Successor names how a sampled successor state is credited.
const (
	// SuccessorNearest credits the nearest lattice point.
	SuccessorNearest = "nearest"
	// SuccessorMultilinear credits the multilinear interpolation stencil
	// (up to 2^d points), which reproduces affine functions of the successor.
	SuccessorMultilinear = "multilinear"
)

// ModelConfig configures SampleModel.
type ModelConfig struct {
	// Samples is K, the points sampled per (cell, action) [8].
	Samples int `json:"samples" yaml:"samples"`
	// Successor is SuccessorNearest [default] or SuccessorMultilinear.
	Successor string `json:"successor" yaml:"successor"`
	// Seed seeds the in-cell sampling (one PCG stream per (cell, action)).
	Seed uint64 `json:"seed" yaml:"seed"`
	// Gamma is the MDP's discount factor [0.99].
	Gamma float64 `json:"gamma" yaml:"gamma"`
}

// WithDefaults returns c with zero fields set to their defaults.
func (c ModelConfig) WithDefaults() ModelConfig {
	if c.Samples == 0 {
		c.Samples = 8
	}
	if c.Successor == "" {
		c.Successor = SuccessorNearest
	}
	if c.Gamma == 0 {
		c.Gamma = 0.99
	}
	return c
}

// Validate returns an error naming the first bad field (after WithDefaults).
func (c ModelConfig) Validate() error {
	switch {
	case c.Samples < 1:
		return fmt.Errorf("discretize: model samples = %d, want ≥ 1", c.Samples)
	case c.Successor != SuccessorNearest && c.Successor != SuccessorMultilinear:
		return fmt.Errorf("discretize: model successor %q, want %q or %q", c.Successor, SuccessorNearest, SuccessorMultilinear)
	case !(c.Gamma > 0 && c.Gamma < 1):
		return fmt.Errorf("discretize: model gamma = %v, want in (0, 1)", c.Gamma)
	}
	return nil
}

// rowBound is the most successors one (cell, action) row can have.
func (c ModelConfig) rowBound(g *Grid) int {
	per := 1
	if c.Successor == SuccessorMultilinear {
		for _, a := range g.States.Axes {
			if !a.Categorical && a.Len() > 1 {
				per *= 2
			}
		}
	}
	n := c.Samples * per
	if s := g.NumStates(); n > s {
		n = s
	}
	return n
}

// EstimateModelBytes returns an upper bound on the memory SampleModel's
// MDP uses (row pointers, successor indices and probabilities at the
// largest possible row length), so a caller can refuse a lattice before
// building it.
func EstimateModelBytes(g *Grid, c ModelConfig) int64 {
	c = c.WithDefaults()
	pairs := int64(g.NumStates()) * int64(g.NumActions())
	return pairs*8 + pairs*int64(c.rowBound(g))*(4+8) + int64(g.NumStates())*9
}

// ErrTooLarge is wrapped by errors refusing a model that would not fit the memory limit.
var ErrTooLarge = errors.New("lattice model too large")

// CheckSize returns an error wrapping ErrTooLarge, with the estimate, when
// EstimateModelBytes(g, c) exceeds limit bytes.
func CheckSize(g *Grid, c ModelConfig, limit int64) error {
	if est := EstimateModelBytes(g, c); est > limit {
		return fmt.Errorf("%w: %d states × %d actions with up to %d successors per row needs about %.2f GB, above the limit of %.2f GB",
			ErrTooLarge, g.NumStates(), g.NumActions(), c.WithDefaults().rowBound(g), float64(est)/1e9, float64(limit)/1e9)
	}
	return nil
}

// SampleModel builds the lattice MDP of a simulator as described in the
// package comment: newSim returns an independent simulator per worker (the
// client's own physics); workers ≤ 0 means GOMAXPROCS. The result has
// g.NumStates() states (the last one terminal), g.NumActions() actions,
// cfg.Gamma, an infinite horizon and a uniform initial distribution over
// the cells (callers usually replace Init). The same grid, config and
// simulator give the same MDP whatever the number of workers.
func SampleModel(ctx context.Context, g *Grid, newSim func() (Simulator, error), cfg ModelConfig, workers int) (*mdp.MDP, error) {
	m, _, err := SampleModelReward(ctx, g, newSim, cfg, workers)
	return m, err
}

// SampleModelReward is SampleModel that also returns the lattice's true
// reward: for each (cell, action) the mean of the simulator's reward over
// the same K sampled steps that estimate its successors (row k = s·A + a;
// the terminal state's rows are 0). It is the reward a planner on the
// lattice model optimizes when it is given the task's own reward.
func SampleModelReward(ctx context.Context, g *Grid, newSim func() (Simulator, error), cfg ModelConfig, workers int) (*mdp.MDP, []float64, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	cells, A, S := g.NumCells(), g.NumActions(), g.NumStates()
	if workers > cells {
		workers = cells
	}
	bound := cfg.rowBound(g)
	// Rows are written at fixed offsets k*bound, then compacted in order.
	next := make([]int32, cells*A*bound)
	prob := make([]float64, cells*A*bound)
	count := make([]int32, cells*A)
	reward := make([]float64, S*A)

	const chunk = 64
	var cursor atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		sim, err := newSim()
		if err != nil {
			return nil, nil, fmt.Errorf("discretize: creating simulator %d: %w", w, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sm := newSampler(g, sim, cfg, bound)
			for {
				lo := int(cursor.Add(chunk)) - chunk
				if lo >= cells || ctx.Err() != nil {
					return
				}
				hi := min(lo+chunk, cells)
				for c := lo; c < hi; c++ {
					for a := range A {
						k := c*A + a
						n, r, err := sm.row(next[k*bound:(k+1)*bound], prob[k*bound:(k+1)*bound], c, a)
						if err != nil {
							errs[w] = err
							cursor.Store(int64(cells))
							return
						}
						count[k], reward[k] = int32(n), r
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	m := &mdp.MDP{NumStates: S, NumActions: A, Gamma: cfg.Gamma, RowPtr: make([]int, S*A+1)}
	nnz := 0
	for k := range cells * A {
		src := k * bound
		n := int(count[k])
		copy(next[nnz:nnz+n], next[src:src+n])
		copy(prob[nnz:nnz+n], prob[src:src+n])
		nnz += n
		m.RowPtr[k+1] = nnz
	}
	for k := cells * A; k < S*A; k++ {
		m.RowPtr[k+1] = nnz // the terminal state's rows are empty
	}
	m.Next = append([]int32(nil), next[:nnz]...)
	m.Prob = append([]float64(nil), prob[:nnz]...)
	m.Terminal = make([]bool, S)
	m.Terminal[g.Terminal()] = true
	m.Init = make([]float64, S)
	for s := range cells {
		m.Init[s] = 1 / float64(cells)
	}
	if err := m.Validate(); err != nil {
		return nil, nil, fmt.Errorf("discretize: sampled model: %w", err)
	}
	return m, reward, nil
}

// sampler holds one worker's simulator and scratch buffers.
type sampler struct {
	g          *Grid
	sim        Simulator
	cfg        ModelConfig
	pcg        *rand.PCG
	rng        *rand.Rand
	idx        []int
	lo, hi, x  []float64
	act, state []float64
	sidx       []int
	sw         []float64
	buf        []succ
}

type succ struct {
	next int32
	p    float64
}

func newSampler(g *Grid, sim Simulator, cfg ModelConfig, bound int) *sampler {
	d := g.StateDim()
	pcg := rand.NewPCG(0, 0)
	return &sampler{g: g, sim: sim, cfg: cfg, pcg: pcg, rng: rand.New(pcg),
		idx: make([]int, d), lo: make([]float64, d), hi: make([]float64, d), x: make([]float64, d),
		act: make([]float64, g.ActionDim()), sidx: make([]int, 1<<d), sw: make([]float64, 1<<d),
		buf: make([]succ, 0, cfg.Samples*(1<<d))}
}

// CellSampleStream returns the PCG seeds of the in-cell sampling stream of
// (cell, action): SampleModel draws the K points of that row, axis by axis,
// as lo + U·(hi − lo) from rand.New(rand.NewPCG(seed1, seed2)).
func CellSampleStream(seed uint64, cell, action, numActions int) (seed1, seed2 uint64) {
	return seed, uint64(cell*numActions + action)
}

// CellBounds writes the coordinate intervals of cell c (the coordinates
// that snap to its point, per Axis.Cell) into lo and hi.
func (g *Grid) CellBounds(lo, hi []float64, c int) {
	for k := len(g.States.Axes) - 1; k >= 0; k-- {
		ax := g.States.Axes[k]
		n := ax.Len()
		lo[k], hi[k] = ax.Cell(c % n)
		c /= n
	}
}

// row fills the successors of (cell c, action a) into next and prob and
// returns their number and the mean reward of the sampled steps.
func (sm *sampler) row(next []int32, prob []float64, c, a int) (int, float64, error) {
	g := sm.g
	sm.pcg.Seed(CellSampleStream(sm.cfg.Seed, c, a, g.NumActions()))
	g.CellBounds(sm.lo, sm.hi, c)
	g.Action(sm.act, a)
	K := sm.cfg.Samples
	w := 1 / float64(K)
	sm.buf = sm.buf[:0]
	rsum := 0.0
	for range K {
		for k := range sm.x {
			sm.x[k] = sm.lo[k] + sm.rng.Float64()*(sm.hi[k]-sm.lo[k])
		}
		if err := sm.sim.SetState(sm.x); err != nil {
			return 0, 0, fmt.Errorf("discretize: cell %d: %w", c, err)
		}
		_, r, term, _ := sm.sim.Step(sm.act)
		rsum += r
		if term {
			sm.buf = append(sm.buf, succ{int32(g.Terminal()), w})
			continue
		}
		sm.state = sm.sim.State(sm.state)
		if sm.cfg.Successor == SuccessorMultilinear {
			n := g.States.Interp(sm.sidx, sm.sw, sm.state)
			for e := range n {
				sm.buf = append(sm.buf, succ{int32(sm.sidx[e]), w * sm.sw[e]})
			}
		} else {
			sm.buf = append(sm.buf, succ{int32(g.States.Snap(sm.state)), w})
		}
	}
	slices.SortFunc(sm.buf, func(x, y succ) int { return cmp.Compare(x.next, y.next) })
	n := 0
	for i, e := range sm.buf {
		if i > 0 && e.next == next[n-1] {
			prob[n-1] += e.p
			continue
		}
		next[n], prob[n] = e.next, e.p
		n++
	}
	return n, rsum * w, nil
}
