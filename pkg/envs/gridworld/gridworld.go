// Package gridworld is the paper's stochastic grid-world navigation task
// (§Grid-World Navigation): an N×N grid, four moves, one goal, an obstacle
// layout and a slip probability u per environment; episodes start in a fixed
// start cell (by default the corner opposite the goal) or, optionally,
// uniformly on the free cells. With probability u the
// chosen move is replaced by one drawn uniformly from the four moves (which
// may be the chosen one again). A move off the grid leaves the agent in place.
// An episode terminates when the agent reaches the goal (success) or enters an
// obstacle cell (collision), and is truncated after Horizon steps.
//
// The package exposes the exact tabular dynamics of an environment
// (Transitions, Tabular) for value iteration and IRL, a seeded simulator for
// rollouts (Sample, Rollout, and the envs.Env interface), the exact success
// probability of a policy from the start distribution or from every cell
// (SuccessProbability, SuccessProbabilities), sampled success rates with
// common random numbers across policies (SuccessRateCRN) and the client
// families of the paper (Family). Terminal cells are absorbing in the tabular model, so a
// planner that keeps collecting the terminal cell's reward forever sees the
// goal as good and an obstacle as bad exactly when the reward says so.
//
// It deliberately knows nothing about features, rewards, IRL or fusion: those
// live in pkg/features, pkg/irl and pkg/fusion. The simulator is hand-written
// because it is a few lines and must match the tabular model bit for bit.
package gridworld

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/fedirl/fedirl/pkg/envs"
)

// NumActions is the number of moves: up, right, down, left.
const NumActions = 4

// Action indices.
const (
	Up    = 0 // Up moves to row-1.
	Right = 1 // Right moves to col+1.
	Down  = 2 // Down moves to row+1.
	Left  = 3 // Left moves to col-1.
)

// ActionNames names the actions by index.
var ActionNames = [NumActions]string{"up", "right", "down", "left"}

var dRow = [NumActions]int{-1, 0, 1, 0}
var dCol = [NumActions]int{0, 1, 0, -1}

// Spec fully describes one environment; it is small and JSON-serializable so
// a server or another process can rebuild the same environment.
type Spec struct {
	// Size is N, the grid's side length (N ≥ 2).
	Size int `json:"size" yaml:"size"`
	// Goal is the goal cell's index row*N+col.
	Goal int `json:"goal" yaml:"goal"`
	// Start is the start cell's index, used unless RandomStart is set.
	Start int `json:"start" yaml:"start"`
	// RandomStart makes episodes start uniformly on every free cell except the goal.
	RandomStart bool `json:"random_start,omitempty" yaml:"random_start,omitempty"`
	// Obstacles lists obstacle cell indices in increasing order.
	Obstacles []int `json:"obstacles" yaml:"obstacles"`
	// Slip is the probability u that a move is replaced by a uniformly random one.
	Slip float64 `json:"slip" yaml:"slip"`
	// Horizon is the episode step cap (truncation).
	Horizon int `json:"horizon" yaml:"horizon"`
}

// Validate reports the first problem with s, or nil.
func (s Spec) Validate() error {
	n := s.Size * s.Size
	switch {
	case s.Size < 2:
		return fmt.Errorf("gridworld spec: size %d, want ≥ 2", s.Size)
	case s.Goal < 0 || s.Goal >= n:
		return fmt.Errorf("gridworld spec: goal %d outside [0,%d)", s.Goal, n)
	case s.Slip < 0 || s.Slip > 1 || s.Slip != s.Slip:
		return fmt.Errorf("gridworld spec: slip %v outside [0,1]", s.Slip)
	case s.Horizon < 1:
		return fmt.Errorf("gridworld spec: horizon %d, want ≥ 1", s.Horizon)
	}
	for i, o := range s.Obstacles {
		if o < 0 || o >= n {
			return fmt.Errorf("gridworld spec: obstacle %d = %d outside [0,%d)", i, o, n)
		}
		if o == s.Goal {
			return fmt.Errorf("gridworld spec: obstacle %d is the goal cell %d", i, o)
		}
		if i > 0 && o <= s.Obstacles[i-1] {
			return fmt.Errorf("gridworld spec: obstacles not strictly increasing at %d", i)
		}
	}
	if len(s.Obstacles) >= n-1 {
		return errors.New("gridworld spec: no free cell besides the goal")
	}
	if !s.RandomStart {
		if s.Start < 0 || s.Start >= n || s.Start == s.Goal || slices.Contains(s.Obstacles, s.Start) {
			return fmt.Errorf("gridworld spec: start %d must be a free non-goal cell in [0,%d)", s.Start, n)
		}
	}
	return nil
}

// Grid is one environment built from a Spec: its exact dynamics and a
// simulator. A Grid is immutable apart from the episode state used by the
// envs.Env methods (Reset/Step), so the pure methods (Transitions, Sample,
// Rollout, SuccessProbability) may be called from several goroutines.
type Grid struct {
	spec     Spec
	obstacle []bool
	starts   []int // free non-goal cells: the initial-state support

	// envs.Env episode state.
	rng   *rand.Rand
	state int
	t     int
	obs   [1]float64
}

// New builds the environment described by spec.
func New(spec Spec) (*Grid, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	n := spec.Size * spec.Size
	g := &Grid{spec: spec, obstacle: make([]bool, n)}
	g.spec.Obstacles = slices.Clone(spec.Obstacles)
	for _, o := range spec.Obstacles {
		g.obstacle[o] = true
	}
	if !spec.RandomStart {
		g.starts = []int{spec.Start}
		return g, nil
	}
	for s := range n {
		if !g.obstacle[s] && s != spec.Goal {
			g.starts = append(g.starts, s)
		}
	}
	return g, nil
}

// Spec returns a copy of the environment's description.
func (g *Grid) Spec() Spec {
	s := g.spec
	s.Obstacles = slices.Clone(g.spec.Obstacles)
	return s
}

// Size returns N.
func (g *Grid) Size() int { return g.spec.Size }

// NumStates returns N².
func (g *Grid) NumStates() int { return g.spec.Size * g.spec.Size }

// Goal returns the goal cell index.
func (g *Grid) Goal() int { return g.spec.Goal }

// Slip returns the slip probability u.
func (g *Grid) Slip() float64 { return g.spec.Slip }

// Horizon returns the episode step cap.
func (g *Grid) Horizon() int { return g.spec.Horizon }

// IsObstacle reports whether cell s is an obstacle.
func (g *Grid) IsObstacle(s int) bool { return g.obstacle[s] }

// IsTerminal reports whether cell s ends an episode (goal or obstacle).
func (g *Grid) IsTerminal(s int) bool { return s == g.spec.Goal || g.obstacle[s] }

// Starts returns the initial-state support: the start cell, or with
// RandomStart every free cell except the goal in increasing order; episodes
// start uniformly on it. The slice is shared.
func (g *Grid) Starts() []int { return g.starts }

// RowCol returns the row and column of cell s.
func (g *Grid) RowCol(s int) (row, col int) { return s / g.spec.Size, s % g.spec.Size }

// Move returns the cell reached from s by a deterministic move a (staying put
// at the border). It does not treat terminal cells specially.
func (g *Grid) Move(s, a int) int {
	n := g.spec.Size
	r, c := s/n+dRow[a], s%n+dCol[a]
	if r < 0 || r >= n || c < 0 || c >= n {
		return s
	}
	return r*n + c
}

// Transition is one successor of a state–action pair and its probability.
type Transition struct {
	Next int
	Prob float64
}

// Transitions appends to dst[:0] the successors of (s, a) under the exact
// dynamics, merged by cell and ordered by cell index, and returns it. Terminal
// cells are absorbing: their only successor is themselves with probability 1.
func (g *Grid) Transitions(dst []Transition, s, a int) []Transition {
	dst = dst[:0]
	if g.IsTerminal(s) {
		return append(dst, Transition{Next: s, Prob: 1})
	}
	u := g.spec.Slip
	var next [NumActions]int
	var prob [NumActions]float64
	m := 0
	for b := range NumActions {
		p := u / NumActions
		if b == a {
			p += 1 - u
		}
		if p == 0 {
			continue
		}
		t := g.Move(s, b)
		k := 0
		for k < m && next[k] != t {
			k++
		}
		if k == m {
			next[m] = t
			m++
		}
		prob[k] += p
	}
	for i := range m {
		dst = append(dst, Transition{Next: next[i], Prob: prob[i]})
	}
	slices.SortFunc(dst, func(x, y Transition) int { return x.Next - y.Next })
	return dst
}

// Tabular is the exact dynamics in compressed-row form: the successors of
// state–action row x = s*NumActions + a are Next[Start[x]:Start[x+1]] with
// probabilities Prob[Start[x]:Start[x+1]].
type Tabular struct {
	NumStates, NumActions int
	Start                 []int
	Next                  []int
	Prob                  []float64
	// Terminal marks absorbing cells (goal and obstacles).
	Terminal []bool
}

// Tabular returns the environment's exact dynamics.
func (g *Grid) Tabular() *Tabular {
	n := g.NumStates()
	tab := &Tabular{NumStates: n, NumActions: NumActions, Start: make([]int, 1, n*NumActions+1), Terminal: make([]bool, n)}
	var buf []Transition
	for s := range n {
		tab.Terminal[s] = g.IsTerminal(s)
		for a := range NumActions {
			buf = g.Transitions(buf, s, a)
			for _, tr := range buf {
				tab.Next = append(tab.Next, tr.Next)
				tab.Prob = append(tab.Prob, tr.Prob)
			}
			tab.Start = append(tab.Start, len(tab.Next))
		}
	}
	return tab
}

// Sample draws the successor of (s, a) with rng: with probability Slip the
// move is replaced by a uniformly random one. Terminal cells are absorbing.
func (g *Grid) Sample(rng *rand.Rand, s, a int) int {
	if g.IsTerminal(s) {
		return s
	}
	if g.spec.Slip > 0 && rng.Float64() < g.spec.Slip {
		a = rng.IntN(NumActions)
	}
	return g.Move(s, a)
}

// SampleStart draws an initial cell uniformly from Starts.
func (g *Grid) SampleStart(rng *rand.Rand) int { return g.starts[rng.IntN(len(g.starts))] }

// Outcome is how an episode ended.
type Outcome int

// Episode outcomes.
const (
	Truncated Outcome = iota // Truncated: the horizon was reached first.
	Reached                  // Reached: the agent entered the goal.
	Collided                 // Collided: the agent entered an obstacle.
)

// Step is one state–action pair of a trajectory.
type Step struct {
	State, Action int
}

// Rollout runs one episode of the deterministic stationary policy (policy[s] is
// the action in cell s) from start, appending the visited state–action pairs
// to dst[:0]; the terminal cell, if reached, is not appended. It returns the
// trajectory, the final cell and the outcome.
func (g *Grid) Rollout(dst []Step, rng *rand.Rand, policy []int, start int) ([]Step, int, Outcome) {
	dst = dst[:0]
	s := start
	for range g.spec.Horizon {
		a := policy[s]
		dst = append(dst, Step{State: s, Action: a})
		s = g.Sample(rng, s, a)
		if s == g.spec.Goal {
			return dst, s, Reached
		}
		if g.obstacle[s] {
			return dst, s, Collided
		}
	}
	return dst, s, Truncated
}

// SuccessRate runs episodes rollouts of policy from uniformly drawn starts
// and returns the fraction that reach the goal without collision within the
// horizon.
func (g *Grid) SuccessRate(rng *rand.Rand, policy []int, episodes int) float64 {
	if episodes <= 0 {
		return 0
	}
	ok := 0
	for range episodes {
		s := g.SampleStart(rng)
		out := Truncated
		for range g.spec.Horizon {
			s = g.Sample(rng, s, policy[s])
			if s == g.spec.Goal {
				out = Reached
				break
			}
			if g.obstacle[s] {
				out = Collided
				break
			}
		}
		if out == Reached {
			ok++
		}
	}
	return float64(ok) / float64(episodes)
}

// SuccessProbability returns the exact probability that an episode of policy
// started uniformly on Starts reaches the goal within the horizon without
// collision (dynamic programming over the horizon; no sampling).
func (g *Grid) SuccessProbability(policy []int) float64 {
	p := g.SuccessProbabilities(nil, policy)
	sum := 0.0
	for _, s := range g.starts {
		sum += p[s]
	}
	return sum / float64(len(g.starts))
}

// SuccessProbabilities sets dst[s] (length N², allocated if nil) to the exact
// probability that an episode of the deterministic policy started in cell s
// reaches the goal within Horizon steps without entering an obstacle, and
// returns it: the success probability from every start cell at once (1 at
// the goal, 0 in an obstacle). It is computed by Horizon steps of dynamic
// programming on the absorbing model (Transitions), with no sampling.
func (g *Grid) SuccessProbabilities(dst []float64, policy []int) []float64 {
	n := g.NumStates()
	if len(policy) != n {
		panic(fmt.Sprintf("gridworld: policy has %d entries, want %d", len(policy), n))
	}
	if dst == nil {
		dst = make([]float64, n)
	}
	if len(dst) != n {
		panic(fmt.Sprintf("gridworld: SuccessProbabilities dst has %d entries, want %d", len(dst), n))
	}
	cur := dst // P(success within t steps | state)
	clear(cur)
	cur[g.spec.Goal] = 1
	nxt := make([]float64, n)
	var buf []Transition
	for range g.spec.Horizon {
		for s := range n {
			if g.IsTerminal(s) {
				nxt[s] = cur[s]
				continue
			}
			v := 0.0
			buf = g.Transitions(buf, s, policy[s])
			for _, tr := range buf {
				v += tr.Prob * cur[tr.Next]
			}
			nxt[s] = v
		}
		cur, nxt = nxt, cur
	}
	if g.spec.Horizon%2 == 1 { // the result is in the scratch buffer
		copy(dst, cur)
	}
	return dst
}

// EpisodeRand returns the random source of episode e of the common-random-
// numbers stream key (a PCG seeded with (key, e)). SuccessRateCRN draws
// episode e's start cell and every slip from it.
func EpisodeRand(key uint64, e int) *rand.Rand {
	return rand.New(rand.NewPCG(key, uint64(e)))
}

// SuccessRateCRN runs episodes rollouts of policy and returns the fraction
// that reach the goal without collision within the horizon, like
// SuccessRate, but with common random numbers: episode e draws its start
// cell and its slips from its own source EpisodeRand(key, e), so any two
// policies evaluated with the same key see the same start and the same slip
// draws at every step of every episode. Their outcomes then differ only in
// episodes whose paths reach a cell where the policies differ, and a
// difference of two success rates carries no noise from unrelated draws.
func (g *Grid) SuccessRateCRN(key uint64, policy []int, episodes int) float64 {
	if episodes <= 0 {
		return 0
	}
	src := rand.NewPCG(0, 0)
	rng := rand.New(src)
	ok := 0
	var buf []Step
	for e := range episodes {
		src.Seed(key, uint64(e)) // the same draws as EpisodeRand(key, e)
		var out Outcome
		buf, _, out = g.Rollout(buf, rng, policy, g.SampleStart(rng))
		if out == Reached {
			ok++
		}
	}
	return float64(ok) / float64(episodes)
}

// Compile-time check that *Grid is an envs.Env.
var _ envs.Env = (*Grid)(nil)

// Reset starts an episode in a start cell drawn with a source seeded by seed;
// the observation is the one-element cell index.
func (g *Grid) Reset(seed uint64) []float64 {
	g.rng = rand.New(rand.NewPCG(seed, 0x67726964))
	g.state = g.SampleStart(g.rng)
	g.t = 0
	g.obs[0] = float64(g.state)
	return g.obs[:]
}

// Step moves with the action held in action[0]; the reward is +1 on reaching
// the goal, -1 on collision and 0 otherwise (the task's success signal, not
// the IRL reward).
func (g *Grid) Step(action []float64) ([]float64, float64, bool, bool) {
	if g.rng == nil {
		panic("gridworld: Step before Reset")
	}
	a := int(action[0])
	if a < 0 || a >= NumActions {
		panic(fmt.Sprintf("gridworld: action %v outside [0,%d)", action[0], NumActions))
	}
	g.state = g.Sample(g.rng, g.state, a)
	g.t++
	g.obs[0] = float64(g.state)
	switch {
	case g.state == g.spec.Goal:
		return g.obs[:], 1, true, false
	case g.obstacle[g.state]:
		return g.obs[:], -1, true, false
	}
	return g.obs[:], 0, false, g.t >= g.spec.Horizon
}

// ObservationSpace is Discrete(N²): the cell index.
func (g *Grid) ObservationSpace() envs.Space { return envs.Space{N: g.NumStates()} }

// ActionSpace is Discrete(4).
func (g *Grid) ActionSpace() envs.Space { return envs.Space{N: NumActions} }
