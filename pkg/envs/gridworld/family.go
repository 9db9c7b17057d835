package gridworld

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Family describes a distribution over environments that share the state and
// action spaces and the goal but differ in obstacle layout and slip, as the
// paper's clients do. Client, HeldOut and Probe draw members deterministically
// from a seed, each from its own random stream, so client i's environment does
// not depend on how many clients or held-out environments are drawn.
type Family struct {
	// Size is N.
	Size int `json:"size" yaml:"size"`
	// Obstacles is the number of obstacle cells per layout.
	Obstacles int `json:"obstacles" yaml:"obstacles"`
	// SlipMax is the upper end of the slip distribution u ~ U(0, SlipMax).
	SlipMax float64 `json:"slip_max" yaml:"slip_max"`
	// Horizon is the episode step cap.
	Horizon int `json:"horizon" yaml:"horizon"`
	// RandomStart makes episodes start uniformly on the free cells instead of
	// in the top-left corner (cell 0), which layouts then keep free.
	RandomStart bool `json:"random_start" yaml:"random_start"`
}

// DefaultClients returns the paper's number of clients for an N×N grid:
// 3 for 5×5, 10 for 10×10, 20 for 20×20, and N otherwise.
func DefaultClients(size int) int {
	switch size {
	case 5:
		return 3
	case 10:
		return 10
	case 20:
		return 20
	}
	return size
}

// DefaultFamily returns the family used by the experiments for an N×N grid:
// start in the top-left corner, goal in the bottom-right one,
// round(0.12·N²) obstacles (3, 12 and 48 for N = 5, 10, 20), slip
// u ~ U(0, 0.10) as in the paper, and a horizon of 4N steps (twice the
// shortest path between the corners).
func DefaultFamily(size int) Family {
	return Family{
		Size:      size,
		Obstacles: int(math.Round(0.12 * float64(size*size))),
		SlipMax:   0.10,
		Horizon:   4 * size,
	}
}

// Validate reports the first problem with f, or nil.
func (f Family) Validate() error {
	switch {
	case f.Size < 2:
		return fmt.Errorf("gridworld family: size %d, want ≥ 2", f.Size)
	case f.Obstacles < 0 || f.Obstacles > f.Size*f.Size/2:
		return fmt.Errorf("gridworld family: %d obstacles, want between 0 and half the %d cells", f.Obstacles, f.Size*f.Size)
	case !(f.SlipMax >= 0 && f.SlipMax <= 1):
		return fmt.Errorf("gridworld family: slip_max %v outside [0,1]", f.SlipMax)
	case f.Horizon < 1:
		return fmt.Errorf("gridworld family: horizon %d, want ≥ 1", f.Horizon)
	}
	return nil
}

// Goal returns the family's shared goal cell, the bottom-right corner.
func (f Family) Goal() int { return f.Size*f.Size - 1 }

// Random-stream identifiers of the family's members.
const (
	streamClient  = 0x1000_0000
	streamHeldOut = 0x2000_0000
	streamProbe   = 0x3000_0000
)

// Client returns the spec of client i's environment for seed.
func (f Family) Client(seed uint64, i int) (Spec, error) {
	return f.draw(rand.New(rand.NewPCG(seed, streamClient+uint64(i))), true)
}

// HeldOut returns the spec of held-out environment j for seed: a fresh draw
// from the same family, independent of every client's.
func (f Family) HeldOut(seed uint64, j int) (Spec, error) {
	return f.draw(rand.New(rand.NewPCG(seed, streamHeldOut+uint64(j))), true)
}

// Probe returns the server's probe environment for seed: a layout drawn like
// the clients' and slip 0 (deterministic), as in the paper's §Aggregation.
func (f Family) Probe(seed uint64) (Spec, error) {
	return f.draw(rand.New(rand.NewPCG(seed, streamProbe)), false)
}

func (f Family) draw(rng *rand.Rand, slip bool) (Spec, error) {
	if err := f.Validate(); err != nil {
		return Spec{}, err
	}
	keep := []int{f.Goal()}
	if !f.RandomStart {
		keep = append(keep, 0)
	}
	obs, err := RandomLayout(rng, f.Size, keep, f.Obstacles)
	if err != nil {
		return Spec{}, err
	}
	s := Spec{Size: f.Size, Goal: f.Goal(), Obstacles: obs, Horizon: f.Horizon, RandomStart: f.RandomStart}
	if slip {
		s.Slip = rng.Float64() * f.SlipMax
	}
	return s, nil
}

// RandomLayout draws k distinct obstacle cells uniformly among the cells not
// in keep (keep[0] is the goal), redrawing until every free cell can reach
// the goal through free cells, and returns them sorted.
func RandomLayout(rng *rand.Rand, size int, keep []int, k int) ([]int, error) {
	n := size * size
	if len(keep) == 0 {
		return nil, fmt.Errorf("gridworld: RandomLayout needs the goal cell")
	}
	goal := keep[0]
	cells := make([]int, 0, n)
	for s := range n {
		if !slices.Contains(keep, s) {
			cells = append(cells, s)
		}
	}
	if k < 0 || k > len(cells)-1 {
		return nil, fmt.Errorf("gridworld: %d obstacles do not fit a %d×%d grid", k, size, size)
	}
	for range 10000 {
		// Partial Fisher–Yates: the first k entries become a uniform k-subset.
		for i := range k {
			j := i + rng.IntN(len(cells)-i)
			cells[i], cells[j] = cells[j], cells[i]
		}
		obs := slices.Clone(cells[:k])
		slices.Sort(obs)
		if connected(size, goal, obs) {
			return obs, nil
		}
	}
	return nil, fmt.Errorf("gridworld: no connected layout with %d obstacles on %d×%d after 10000 draws", k, size, size)
}

// connected reports whether every non-obstacle cell reaches goal through
// non-obstacle cells (4-neighbourhood).
func connected(size, goal int, obstacles []int) bool {
	n := size * size
	blocked := make([]bool, n)
	for _, o := range obstacles {
		blocked[o] = true
	}
	seen := make([]bool, n)
	queue := []int{goal}
	seen[goal] = true
	count := 1
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		r, c := s/size, s%size
		for a := range NumActions {
			rr, cc := r+dRow[a], c+dCol[a]
			if rr < 0 || rr >= size || cc < 0 || cc >= size {
				continue
			}
			t := rr*size + cc
			if !blocked[t] && !seen[t] {
				seen[t] = true
				count++
				queue = append(queue, t)
			}
		}
	}
	return count == n-len(obstacles)
}
