package discretize

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// Replayer is a simulator that is deterministic given its reset seed:
// Reset(seed) followed by the same actions reaches the same state, bit for
// bit. A state it visited is then cloned by replaying the actions that
// reached it, even when the state itself cannot be set (Box2D's contacts,
// joints and sleep state in LunarLander). envs.Env has these methods.
type Replayer interface {
	Reset(seed uint64) []float64
	Step(action []float64) (obs []float64, reward float64, terminated, truncated bool)
}

// Episode is a recorded episode of a Replayer: Reset(Seed), then Actions.
type Episode struct {
	Seed    uint64
	Actions [][]float64
	// States are the lattice coordinates of the len(Actions)+1 observations
	// (States[t] is the state Actions[t] was taken in).
	States [][]float64
	// Rewards are the rewards of the steps and Terminated whether the last
	// step terminated; only ReplayConfig.Count reads them.
	Rewards    []float64
	Terminated bool
}

// ReplayConfig configures ReplayModel.
type ReplayConfig struct {
	// Clones is K, the visited states cloned per (cell, action) [8].
	Clones int `json:"clones" yaml:"clones"`
	// Expand is the number of rounds in which the states that clones reach
	// in cells no episode visited are cloned in turn [0: none].
	Expand int `json:"expand" yaml:"expand"`
	// Count also credits every recorded step (its continuous action snapped
	// to the nearest level, its reward and termination) to its row beside
	// the clones, so rare outcomes of the episodes' own actions (the step
	// on which a landing ends) keep their observed rate.
	Count bool `json:"count,omitempty" yaml:"count"`
	// Successor is how a step's successor state is credited:
	// SuccessorNearest ["", the default] credits the lattice point nearest
	// to the state the step reached; SuccessorMultilinear that state's
	// multilinear interpolation stencil; SuccessorDisplacement the stencil
	// of the cell's own point moved by the step's displacement (p + x′ − x
	// on the non-categorical axes, x′ on the categorical ones), so that
	// where in its cell a cloned state lay does not blur the effect of the
	// action, and a move smaller than a cell still shows as a fraction of
	// the mass leaving it.
	Successor string `json:"successor,omitempty" yaml:"successor"`
	// HaltReward, when set, makes every pair of a cell never cloned end the
	// episode with this reward (MOReL's HALT state for the unknown, with
	// its penalty), instead of the default self-loop of reward 0, which a
	// planner whose rewards are mostly negative seeks out.
	HaltReward *float64 `json:"halt_reward,omitempty" yaml:"halt_reward,omitempty"`
	// Seed seeds the choice of the K visits of each cell.
	Seed uint64 `json:"seed" yaml:"seed"`
	// Gamma is the MDP's discount factor [0.99].
	Gamma float64 `json:"gamma" yaml:"gamma"`
}

// WithDefaults returns c with zero fields set to their defaults.
func (c ReplayConfig) WithDefaults() ReplayConfig {
	if c.Clones == 0 {
		c.Clones = 8
	}
	if c.Gamma == 0 {
		c.Gamma = 0.99
	}
	return c
}

// Validate returns an error naming the first bad field (after WithDefaults).
func (c ReplayConfig) Validate() error {
	switch {
	case c.Clones < 1:
		return fmt.Errorf("discretize: replay clones = %d, want ≥ 1", c.Clones)
	case c.Expand < 0:
		return fmt.Errorf("discretize: replay expand = %d, want ≥ 0", c.Expand)
	case !(c.Gamma > 0 && c.Gamma < 1):
		return fmt.Errorf("discretize: replay gamma = %v, want in (0, 1)", c.Gamma)
	case c.HaltReward != nil && (math.IsNaN(*c.HaltReward) || math.IsInf(*c.HaltReward, 0)):
		return fmt.Errorf("discretize: replay halt reward = %v, want a finite number", *c.HaltReward)
	case c.Successor != "" && c.Successor != SuccessorNearest && c.Successor != SuccessorMultilinear && c.Successor != SuccessorDisplacement:
		return fmt.Errorf("discretize: replay successor %q, want %q, %q or %q", c.Successor, SuccessorNearest, SuccessorMultilinear, SuccessorDisplacement)
	}
	return nil
}

// SuccessorDisplacement credits the multilinear stencil of the cell's
// point moved by the step's displacement (ReplayConfig.Successor).
const SuccessorDisplacement = "displacement"

// interpolates reports whether successor rule mode credits a stencil
// (multilinear or displacement) rather than the nearest point.
func interpolates(mode string) bool { return mode != "" && mode != SuccessorNearest }

// successorPoint writes into dst the point whose stencil a step from x0 in
// cell c to x1 credits under mode (SuccessorMultilinear or
// SuccessorDisplacement) and returns it (a periodic axis wraps in the
// stencil, so its displacement may be taken either way round).
func successorPoint(g *Grid, mode string, dst []float64, c int, x0, x1 []float64) []float64 {
	if mode == SuccessorMultilinear {
		return append(dst[:0], x1...)
	}
	if cap(dst) < g.StateDim() {
		dst = make([]float64, g.StateDim())
	}
	dst = g.States.Point(dst[:g.StateDim()], c)
	for k, ax := range g.States.Axes {
		if ax.Categorical {
			dst[k] = x1[k]
			continue
		}
		dst[k] += x1[k] - x0[k]
	}
	return dst
}

// ReplayStats describes a replay model.
type ReplayStats struct {
	// Cells is the number of cells whose rows were cloned (visited by an
	// episode, or reached by a clone and expanded).
	Cells int `json:"cells"`
	// Expanded is how many of them no episode visited.
	Expanded int `json:"expanded"`
	// Unexpanded is the number of cells that clones reached but that were
	// not cloned (their rows are self-loops with reward 0).
	Unexpanded int `json:"unexpanded"`
	// Steps is the number of simulator steps taken, replays included.
	Steps int64 `json:"steps"`
}

// visit is a clonable state: Reset(episode's seed), its first t actions,
// then tail (the actions of the clones that led here).
type visit struct {
	ep, t int32
	tail  []int32 // action levels
}

// cloneOut is one clone's step: its successor cell (or the terminal state),
// the point whose stencil it credits (nil: next alone), its reward, and
// whether its state may be cloned in turn.
type cloneOut struct {
	next      int32
	y         []float64
	r         float64
	clonable  bool
	cell      int32
	from, act int32
}

// ReplayModel builds a lattice MDP with the true lattice reward from
// recorded episodes of a Replayer: for every cell the episodes visit, K of
// the visits (all of them if fewer; chosen by a PCG stream seeded with
// (cfg.Seed, cell)) are cloned by replay, once per action level, and
// stepped with that action; P(s'|s,a) is the fraction of the clones that
// reached s' (the terminal state when the step terminated; with
// cfg.Successor multilinear or displacement, each clone's 1/K is spread
// over an interpolation stencil instead) and the reward of (s, a) their
// mean reward. It is SampleModelReward's model with the
// in-cell points drawn from the states the episodes visited instead of
// uniformly, for simulators whose state cannot be set. With cfg.Expand > 0
// the states that clones reach in unvisited cells are cloned in turn, for
// that many rounds; with cfg.Count the episodes' own steps are counted in
// their rows beside the clones. Cells never cloned keep a self-loop with
// reward 0 under every action, or with cfg.HaltReward end the episode with
// that reward. The result has g.NumStates() states (the
// last terminal), cfg.Gamma, an infinite horizon and a uniform initial
// distribution over the cells. stateOf maps an observation to the lattice's state coordinates
// (nil: the observation is the state). The same episodes and config give
// the same model whatever the number of workers (≤ 0: GOMAXPROCS).
func ReplayModel(ctx context.Context, g *Grid, newSim func() (Replayer, error), stateOf func(dst, obs []float64) []float64,
	episodes []Episode, cfg ReplayConfig, workers int) (*mdp.MDP, []float64, ReplayStats, error) {
	m, r, _, st, err := ReplayModelSteps(ctx, g, newSim, stateOf, episodes, cfg, workers, StepFeatures{})
	return m, r, st, err
}

// StepFeatures is a vector function of one observed step: the state x it
// was taken in (lattice coordinates), the action applied, the state next
// it reached and whether it terminated the episode, written into dst (Dim
// entries).
type StepFeatures struct {
	Dim  int
	Eval func(dst, x, action, next []float64, terminated bool)
}

// ReplayModelSteps is ReplayModel that also returns, with feat.Eval set,
// the mean of feat over each pair's steps (a NumPairs × feat.Dim matrix,
// the pair's row averaging the same clones and counted steps as its
// reward; a zero row where no step was taken: the placeholders of cells
// never cloned and the terminal state), as the true lattice reward is the
// mean of the steps' rewards. A reward linear in such features of the
// observed step is then linear in these rows on the lattice.
func ReplayModelSteps(ctx context.Context, g *Grid, newSim func() (Replayer, error), stateOf func(dst, obs []float64) []float64,
	episodes []Episode, cfg ReplayConfig, workers int, feat StepFeatures) (*mdp.MDP, []float64, *mat.Dense, ReplayStats, error) {
	var st ReplayStats
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, nil, nil, st, err
	}
	d := 0
	if feat.Eval != nil {
		if feat.Dim < 1 {
			return nil, nil, nil, st, fmt.Errorf("discretize: replay step features of dimension %d, want ≥ 1", feat.Dim)
		}
		d = feat.Dim
	}
	// fsum holds each pair's sum of step features (d columns; nil without).
	var fsum, fbuf []float64
	if d > 0 {
		fsum, fbuf = make([]float64, g.NumStates()*g.NumActions()*d), make([]float64, d)
	}
	cells, A := g.NumCells(), g.NumActions()
	visits := make([][]visit, cells)
	var recorded [][]cloneOut
	if cfg.Count {
		recorded = make([][]cloneOut, cells*A)
	}
	for e, ep := range episodes {
		if len(ep.States) != len(ep.Actions)+1 {
			return nil, nil, nil, st, fmt.Errorf("discretize: replay episode %d has %d states for %d actions, want actions + 1", e, len(ep.States), len(ep.Actions))
		}
		if cfg.Count && len(ep.Rewards) != len(ep.Actions) {
			return nil, nil, nil, st, fmt.Errorf("discretize: replay episode %d has %d rewards for %d actions; counting the recorded steps needs one per action", e, len(ep.Rewards), len(ep.Actions))
		}
		for t := range ep.Actions { // the state after the last action cannot be stepped
			if len(ep.States[t]) != g.StateDim() || len(ep.Actions[t]) != g.ActionDim() {
				return nil, nil, nil, st, fmt.Errorf("discretize: replay episode %d step %d: state of %d and action of %d coordinates, the grid has %d and %d",
					e, t, len(ep.States[t]), len(ep.Actions[t]), g.StateDim(), g.ActionDim())
			}
			c := g.SnapState(ep.States[t])
			visits[c] = append(visits[c], visit{ep: int32(e), t: int32(t)})
			if cfg.Count {
				r := ep.Rewards[t]
				if math.IsNaN(r) || math.IsInf(r, 0) {
					return nil, nil, nil, st, fmt.Errorf("discretize: replay episode %d step %d: reward %v is not finite", e, t, r)
				}
				next := int32(g.Terminal())
				if t < len(ep.Actions)-1 || !ep.Terminated {
					next = int32(g.SnapState(ep.States[t+1]))
				}
				k := c*A + g.SnapAction(ep.Actions[t])
				o := cloneOut{next: next, r: r}
				if int(next) != g.Terminal() && interpolates(cfg.Successor) {
					o.y = successorPoint(g, cfg.Successor, nil, c, ep.States[t], ep.States[t+1])
				}
				recorded[k] = append(recorded[k], o)
				if d > 0 {
					feat.Eval(fbuf, ep.States[t], ep.Actions[t], ep.States[t+1], next == int32(g.Terminal()))
					floats.Add(fsum[k*d:(k+1)*d], fbuf)
				}
			}
		}
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	sims := make([]Replayer, workers)
	for w := range sims {
		var err error
		if sims[w], err = newSim(); err != nil {
			return nil, nil, nil, st, fmt.Errorf("discretize: creating simulator %d: %w", w, err)
		}
	}
	done := make([]bool, cells)
	rows := make([][]cloneOut, cells*A)
	var steps atomic.Int64
	round := []int{}
	for c := range cells {
		if len(visits[c]) > 0 {
			round = append(round, c)
		}
	}
	for r := 0; len(round) > 0; r++ {
		chosen := make([][]visit, len(round))
		for i, c := range round {
			chosen[i] = pickVisits(visits[c], cfg.Clones, cfg.Seed, c)
		}
		var cursor atomic.Int64
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl := &cloner{g: g, sim: sims[w], eps: episodes, stateOf: stateOf, state: make([]float64, g.StateDim()),
					origin: make([]float64, g.StateDim()), act: make([]float64, g.ActionDim()), tailAct: make([]float64, g.ActionDim()),
					successor: cfg.Successor, feat: feat, f: make([]float64, d)}
				for {
					i := int(cursor.Add(1)) - 1
					if i >= len(round) || ctx.Err() != nil {
						return
					}
					c := round[i]
					for a := range A {
						out := make([]cloneOut, 0, len(chosen[i]))
						for vi, v := range chosen[i] {
							o, err := cl.clone(v, c, a)
							if err != nil {
								errs[w] = fmt.Errorf("discretize: cell %d action %d: %w", c, a, err)
								cursor.Store(int64(len(round)))
								return
							}
							o.cell, o.from, o.act = int32(c), int32(vi), int32(a)
							out = append(out, o)
							if d > 0 {
								floats.Add(fsum[(c*A+a)*d:(c*A+a+1)*d], cl.f)
							}
						}
						rows[c*A+a] = out
					}
					steps.Add(cl.steps)
					cl.steps = 0
				}
			}()
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, st, err
		}
		if err := errors.Join(errs...); err != nil {
			return nil, nil, nil, st, err
		}
		for _, c := range round {
			done[c] = true
			st.Cells++
			if r > 0 {
				st.Expanded++
			}
		}
		// The next round: the clones' states in cells not cloned yet.
		var next []int
		if r < cfg.Expand {
			for i, c := range round {
				for a := range A {
					for _, o := range rows[c*A+a] {
						if !o.clonable || done[o.next] {
							continue
						}
						v := chosen[i][o.from]
						if len(visits[o.next]) == 0 {
							next = append(next, int(o.next))
						}
						visits[o.next] = append(visits[o.next], visit{ep: v.ep, t: v.t, tail: append(slices.Clone(v.tail), int32(a))})
					}
				}
			}
		}
		round = next
	}
	st.Steps = steps.Load()

	S := g.NumStates()
	m := &mdp.MDP{NumStates: S, NumActions: A, Gamma: cfg.Gamma, RowPtr: make([]int, S*A+1)}
	reward := make([]float64, S*A)
	reached := make([]bool, cells)
	sidx, sw := make([]int, 1<<g.StateDim()), make([]float64, 1<<g.StateDim())
	var entries []succ
	for k := range cells * A {
		out := rows[k]
		if cfg.Count {
			out = append(slices.Clip(out), recorded[k]...)
		}
		if len(out) == 0 {
			if cfg.HaltReward != nil && !done[k/A] {
				m.Next = append(m.Next, int32(g.Terminal()))
				reward[k] = *cfg.HaltReward
			} else {
				m.Next = append(m.Next, int32(k/A))
			}
			m.Prob = append(m.Prob, 1)
			m.RowPtr[k+1] = len(m.Next)
			continue
		}
		entries = entries[:0]
		rsum := 0.0
		w := 1 / float64(len(out))
		for _, o := range out {
			rsum += o.r
			if o.y == nil {
				entries = append(entries, succ{o.next, w})
				continue
			}
			n := g.States.Interp(sidx, sw, o.y)
			for e := range n {
				entries = append(entries, succ{int32(sidx[e]), w * sw[e]})
			}
		}
		reward[k] = rsum / float64(len(out))
		if d > 0 {
			floats.Scale(w, fsum[k*d:(k+1)*d])
		}
		slices.SortStableFunc(entries, func(x, y succ) int { return cmp.Compare(x.next, y.next) })
		for i, e := range entries {
			if int(e.next) < cells {
				reached[e.next] = true
			}
			if i > 0 && e.next == entries[i-1].next {
				m.Prob[len(m.Prob)-1] += e.p
				continue
			}
			m.Next = append(m.Next, e.next)
			m.Prob = append(m.Prob, e.p)
		}
		m.RowPtr[k+1] = len(m.Next)
	}
	for k := cells * A; k < S*A; k++ {
		m.RowPtr[k+1] = len(m.Next)
	}
	for c := range cells {
		if reached[c] && !done[c] {
			st.Unexpanded++
		}
	}
	m.Terminal = make([]bool, S)
	m.Terminal[g.Terminal()] = true
	m.Init = make([]float64, S)
	for s := range cells {
		m.Init[s] = 1 / float64(cells)
	}
	if err := m.Validate(); err != nil {
		return nil, nil, nil, st, fmt.Errorf("discretize: replay model: %w", err)
	}
	var fm *mat.Dense
	if d > 0 {
		fm = mat.NewDense(S*A, d, fsum)
	}
	return m, reward, fm, st, nil
}

// pickVisits returns up to k of vs, in their order, chosen without
// replacement by the PCG stream (seed, cell).
func pickVisits(vs []visit, k int, seed uint64, cell int) []visit {
	if len(vs) <= k {
		return vs
	}
	rng := rand.New(rand.NewPCG(seed, uint64(cell)))
	idx := rng.Perm(len(vs))[:k]
	slices.Sort(idx)
	out := make([]visit, k)
	for i, j := range idx {
		out[i] = vs[j]
	}
	return out
}

// cloner replays visits on one simulator.
type cloner struct {
	g                           *Grid
	sim                         Replayer
	eps                         []Episode
	stateOf                     func(dst, obs []float64) []float64
	state, origin, act, tailAct []float64
	successor                   string
	steps                       int64
	feat                        StepFeatures
	f                           []float64 // the last clone's step features
}

// clone replays visit v (a state in cell c) and steps it with action level a.
func (cl *cloner) clone(v visit, c, a int) (cloneOut, error) {
	ep := cl.eps[v.ep]
	obs0 := cl.sim.Reset(ep.Seed)
	step := func(act []float64) (obs []float64, r float64, term, trunc bool) {
		cl.steps++
		return cl.sim.Step(act)
	}
	for t := range int(v.t) {
		o, _, term, trunc := step(ep.Actions[t])
		if term || trunc {
			return cloneOut{}, fmt.Errorf("replaying episode %d (seed %d) ended at step %d, before its recorded step %d: the simulator is not deterministic given its seed", v.ep, ep.Seed, t, v.t)
		}
		obs0 = o
	}
	for i, b := range v.tail {
		o, _, term, trunc := step(cl.g.Action(cl.tailAct, int(b)))
		if term || trunc {
			return cloneOut{}, fmt.Errorf("replaying a clone of episode %d step %d ended at its step %d: the simulator is not deterministic given its seed", v.ep, v.t, i)
		}
		obs0 = o
	}
	interp := interpolates(cl.successor)
	if interp || cl.feat.Eval != nil { // the cloned state, before the step overwrites the observation
		if cl.stateOf != nil {
			cl.stateOf(cl.origin, obs0)
		} else {
			copy(cl.origin, obs0)
		}
	}
	obs, r, term, trunc := step(cl.g.Action(cl.act, a))
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return cloneOut{}, fmt.Errorf("reward %v is not finite", r)
	}
	x := obs
	if cl.stateOf != nil {
		x = cl.stateOf(cl.state, obs)
	}
	if cl.feat.Eval != nil {
		cl.feat.Eval(cl.f, cl.origin, cl.act, x, term)
	}
	if term {
		return cloneOut{next: int32(cl.g.Terminal()), r: r}, nil
	}
	o := cloneOut{next: int32(cl.g.SnapState(x)), r: r, clonable: !trunc}
	if interp {
		o.y = successorPoint(cl.g, cl.successor, nil, c, cl.origin, x)
	}
	return o, nil
}

// ObservedPairs reports, for every pair of a model built by ReplayModel
// without Count (m and its reward r) with halt reward halt (nil when
// unset), whether the pair's row was observed: a cell whose rows were
// cloned, rather than one of the placeholders ReplayModel gives a cell no
// clone stepped from (every action a zero-reward self-loop, or with a halt
// reward every action ending the episode with it). A cloned cell matches
// the placeholder only if every one of its actions' clones stayed in it
// with reward exactly 0, or ended the episode with a mean reward exactly
// the halt's; the terminal state's pairs are not observed.
func ObservedPairs(m *mdp.MDP, r []float64, halt *float64) []bool {
	A := m.NumActions
	out := make([]bool, m.NumPairs())
	for s := range m.NumStates {
		if m.IsTerminal(s) {
			continue
		}
		placeholder := true
		for a := range A {
			k := s*A + a
			lo, hi := m.RowPtr[k], m.RowPtr[k+1]
			if hi-lo != 1 || m.Prob[lo] != 1 {
				placeholder = false
				break
			}
			next := int(m.Next[lo])
			selfLoop := next == s && r[k] == 0
			halted := halt != nil && m.IsTerminal(next) && r[k] == *halt
			if !selfLoop && !halted {
				placeholder = false
				break
			}
		}
		for a := range A {
			out[s*A+a] = !placeholder
		}
	}
	return out
}
