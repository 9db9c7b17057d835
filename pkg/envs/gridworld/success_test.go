package gridworld

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randomWorld draws an N×N world with a random connected obstacle layout
// (about frac·N² obstacles), slip u ~ U(lo, hi) and horizon h, start in cell 0.
func randomWorld(t *testing.T, rng *rand.Rand, size int, frac, lo, hi float64, horizon int) *Grid {
	t.Helper()
	goal := size*size - 1
	obs, err := RandomLayout(rng, size, []int{goal, 0}, int(math.Round(frac*float64(size*size))))
	if err != nil {
		t.Fatal(err)
	}
	return mustGrid(t, Spec{Size: size, Goal: goal, Start: 0, Obstacles: obs, Slip: lo + (hi-lo)*rng.Float64(), Horizon: horizon})
}

// randomPolicy draws one action per cell, down or right (towards the goal
// corner) with probability bias, otherwise uniform, so that both successes
// and failures are common.
func randomPolicy(rng *rand.Rand, n int, bias float64) []int {
	p := make([]int, n)
	for s := range p {
		switch {
		case rng.Float64() >= bias:
			p[s] = rng.IntN(NumActions)
		case rng.IntN(2) == 0:
			p[s] = Down
		default:
			p[s] = Right
		}
	}
	return p
}

// towardsGoal returns a policy that moves to a free neighbour closest to the
// goal (breadth-first distances through free cells), except in a random
// fraction noise of the cells, where it picks a uniformly random move.
func towardsGoal(g *Grid, rng *rand.Rand, noise float64) []int {
	n := g.NumStates()
	dist := make([]int, n)
	for s := range dist {
		dist[s] = -1
	}
	dist[g.Goal()] = 0
	queue := []int{g.Goal()}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for a := range NumActions {
			if t := g.Move(s, a); !g.IsObstacle(t) && dist[t] < 0 {
				dist[t] = dist[s] + 1
				queue = append(queue, t)
			}
		}
	}
	pol := make([]int, n)
	for s := range pol {
		best := -1
		for a := range NumActions {
			t := g.Move(s, a)
			if t != s && !g.IsObstacle(t) && dist[t] >= 0 && (best < 0 || dist[t] < dist[g.Move(s, best)]) {
				best = a
			}
		}
		pol[s] = max(best, 0)
		if rng.Float64() < noise {
			pol[s] = rng.IntN(NumActions)
		}
	}
	return pol
}

// freeCells returns the cells that are neither the goal nor an obstacle.
func freeCells(g *Grid) []int {
	var out []int
	for s := range g.NumStates() {
		if !g.IsTerminal(s) {
			out = append(out, s)
		}
	}
	return out
}

// bruteSuccess enumerates every slip outcome of every step from the problem
// statement alone (the chosen move with probability 1−u, each of the four
// moves with probability u/4, moves off the grid stay put, the goal ends in
// success and an obstacle in failure), without Transitions or memoization.
func bruteSuccess(g *Grid, policy []int, s, steps int) float64 {
	if s == g.Goal() {
		return 1
	}
	if g.IsObstacle(s) || steps == 0 {
		return 0
	}
	u := g.Slip()
	p := (1 - u) * bruteSuccess(g, policy, g.Move(s, policy[s]), steps-1)
	if u > 0 {
		for b := range NumActions {
			p += u / NumActions * bruteSuccess(g, policy, g.Move(s, b), steps-1)
		}
	}
	return p
}

// TestSuccessProbabilitiesBruteForce compares the dynamic programme with an
// exhaustive enumeration of every path on small random worlds.
func TestSuccessProbabilitiesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 41))
	for trial := range 12 {
		size := 3 + trial%2
		g := randomWorld(t, rng, size, 0.2, 0, 0.4, 1+trial%6)
		pol := randomPolicy(rng, g.NumStates(), 0.6)
		got := g.SuccessProbabilities(nil, pol)
		mean := 0.0
		for s := range g.NumStates() {
			want := bruteSuccess(g, pol, s, g.Horizon())
			if math.Abs(got[s]-want) > 1e-12 {
				t.Fatalf("trial %d (%d×%d, slip %.3f, horizon %d) cell %d: DP %.15f, enumeration %.15f", trial, size, size, g.Slip(), g.Horizon(), s, got[s], want)
			}
		}
		for _, s := range g.Starts() {
			mean += got[s] / float64(len(g.Starts()))
		}
		if p := g.SuccessProbability(pol); math.Abs(p-mean) > 1e-15 {
			t.Fatalf("trial %d: SuccessProbability %v, mean over starts %v", trial, p, mean)
		}
	}
}

// TestSuccessProbabilitiesMatchRollouts: on random worlds with slip and
// obstacles, the exact success probability from a random start cell equals
// the mean of 100k simulated episodes from that cell within 4 standard
// errors.
func TestSuccessProbabilitiesMatchRollouts(t *testing.T) {
	const episodes = 100_000
	rng := rand.New(rand.NewPCG(7, 8))
	for w, size := range []int{5, 7, 8} {
		g := randomWorld(t, rng, size, 0.15, 0.05, 0.3, 2*size+rng.IntN(2*size))
		pol := towardsGoal(g, rng, 0.3)
		exact := g.SuccessProbabilities(nil, pol)
		free := freeCells(g)
		for range 2 {
			s := free[rng.IntN(len(free))]
			sim := rand.New(rand.NewPCG(uint64(w), uint64(s)))
			ok := 0
			var buf []Step
			for range episodes {
				var out Outcome
				buf, _, out = g.Rollout(buf, sim, pol, s)
				if out == Reached {
					ok++
				}
			}
			mc := float64(ok) / episodes
			t.Logf("world %d (%d×%d, slip %.3f, horizon %d) start %d: exact %.5f, sampled %.5f", w, size, size, g.Slip(), g.Horizon(), s, exact[s], mc)
			se := math.Sqrt(exact[s] * (1 - exact[s]) / episodes)
			if math.Abs(mc-exact[s]) > 4*se+1e-12 {
				t.Errorf("world %d (%d×%d, slip %.3f, horizon %d) start %d: exact %.5f, sampled %.5f, 4 SE = %.5f",
					w, size, size, g.Slip(), g.Horizon(), s, exact[s], mc, 4*se)
			}
		}
	}
}

// TestSuccessRateCRNCouples checks the common-random-numbers property: two
// policies that differ only on a set D of cells have the same outcome in
// every episode whose path (under the first policy) never acts in D, so
// their sampled success rates differ by at most the fraction of episodes
// that reach D. SuccessRateCRN must also be the success fraction of the
// episodes drawn from EpisodeRand.
func TestSuccessRateCRNCouples(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	g := randomWorld(t, rng, 8, 0.12, 0.2, 0.3, 32)
	a := towardsGoal(g, rng, 0)
	b := append([]int(nil), a...)
	free := freeCells(g)
	inD := make([]bool, g.NumStates())
	for range 3 {
		s := free[rng.IntN(len(free))]
		inD[s] = true
		b[s] = (a[s] + 1 + rng.IntN(NumActions-1)) % NumActions
	}
	const key, episodes = 0xfeed, 3000
	var okA, okB, touched int
	var bufA, bufB []Step
	for e := range episodes {
		ra, rb := EpisodeRand(key, e), EpisodeRand(key, e)
		var endA, endB int
		var outA, outB Outcome
		bufA, endA, outA = g.Rollout(bufA, ra, a, g.SampleStart(ra))
		bufB, endB, outB = g.Rollout(bufB, rb, b, g.SampleStart(rb))
		if outA == Reached {
			okA++
		}
		if outB == Reached {
			okB++
		}
		visits := false
		for _, st := range bufA {
			visits = visits || inD[st.State]
		}
		if visits {
			touched++
		} else if outA != outB || endA != endB || len(bufA) != len(bufB) {
			t.Fatalf("episode %d avoids D but the policies' episodes differ: %v/%d vs %v/%d", e, outA, endA, outB, endB)
		}
	}
	rA, rB := g.SuccessRateCRN(key, a, episodes), g.SuccessRateCRN(key, b, episodes)
	if rA != float64(okA)/episodes || rB != float64(okB)/episodes {
		t.Fatalf("SuccessRateCRN %v, %v; episodes from EpisodeRand give %v, %v", rA, rB, float64(okA)/episodes, float64(okB)/episodes)
	}
	if touched == 0 || touched == episodes {
		t.Fatalf("%d of %d episodes reach D: the test does not exercise the coupling", touched, episodes)
	}
	if d := math.Abs(rA - rB); d > float64(touched)/episodes {
		t.Fatalf("|%v − %v| = %v exceeds the fraction %v of episodes reaching D", rA, rB, d, float64(touched)/episodes)
	}
	t.Logf("success %.4f vs %.4f; %d of %d episodes reach D", rA, rB, touched, episodes)
}
