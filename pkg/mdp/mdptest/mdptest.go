// Package mdptest builds MDPs for the tests and benchmarks of mdp, irl and the
// packages above them: random sparse MDPs and a slippery grid world. (The
// process CPU clock benchmarks use is pkg/cpuclock.)
//
// It is test support only: nothing in it is used by fedirl's commands.
package mdptest

import (
	"math/rand/v2"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// RandomMDP returns an S×A MDP with k random successors per pair (duplicates
// merged by the builder), the last nTerm states terminal, discount gamma,
// horizon (0 = infinite) and a random initial distribution over the
// non-terminal states, all drawn from a PCG stream seeded with seed.
func RandomMDP(seed uint64, S, A, k, nTerm int, gamma float64, horizon int) *mdp.MDP {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := mdp.NewBuilder(S, A)
	b.Gamma, b.Horizon = gamma, horizon
	for t := 0; t < nTerm; t++ {
		b.SetTerminal(S - 1 - t)
	}
	w := make([]float64, k)
	for s := 0; s < S; s++ {
		for a := 0; a < A; a++ {
			sum := 0.0
			for i := range w {
				w[i] = rng.Float64() + 0.05
				sum += w[i]
			}
			for i := range w {
				b.AddTransition(s, a, rng.IntN(S), w[i]/sum)
			}
		}
	}
	b.Init = make([]float64, S)
	sum := 0.0
	for s := 0; s < S-nTerm; s++ {
		b.Init[s] = rng.Float64()
		sum += b.Init[s]
	}
	for s := range b.Init {
		b.Init[s] /= sum
	}
	m, err := b.Build()
	if err != nil {
		panic(err) // the construction above always yields a valid MDP
	}
	return m
}

// BandedMDP returns an S-state, A-action MDP (discount gamma) with k
// equally likely successors per pair within ±100 states of the source
// (wrapping around), drawn from a fixed PCG stream: the benchmark shape of
// a large sparse MDP.
func BandedMDP(S, A, k int, gamma float64) *mdp.MDP {
	rng := rand.New(rand.NewPCG(1, 2))
	b := mdp.NewBuilder(S, A)
	b.Gamma = gamma
	for s := 0; s < S; s++ {
		for a := 0; a < A; a++ {
			for i := 0; i < k; i++ {
				b.AddTransition(s, a, (s+rng.IntN(200)-100+S)%S, 1/float64(k))
			}
		}
	}
	m, err := b.Build()
	if err != nil {
		panic(err) // each row is k entries of 1/k: always valid
	}
	return m
}

// SlipperyGrid returns an n×n grid world (discount gamma): 4 moves that
// succeed with probability 0.9 and otherwise slip to one of the other three
// directions, walls bounce, and the far corner is a terminal goal.
func SlipperyGrid(n int, gamma float64) *mdp.MDP {
	S := n * n
	b := mdp.NewBuilder(S, 4)
	b.Gamma = gamma
	b.SetTerminal(S - 1)
	dx := [4]int{1, -1, 0, 0}
	dy := [4]int{0, 0, 1, -1}
	for s := 0; s < S; s++ {
		x, y := s%n, s/n
		for a := 0; a < 4; a++ {
			for d := 0; d < 4; d++ {
				p := 0.1 / 3
				if d == a {
					p = 0.9
				}
				nx, ny := x+dx[d], y+dy[d]
				if nx < 0 || nx >= n || ny < 0 || ny >= n {
					nx, ny = x, y
				}
				b.AddTransition(s, a, ny*n+nx, p)
			}
		}
	}
	m, err := b.Build()
	if err != nil {
		panic(err) // the four slip probabilities sum to 1
	}
	return m
}
