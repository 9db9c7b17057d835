package irl_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
)

// ExampleMaxEnt builds a 1×5 corridor whose right end is a terminal goal,
// samples demonstrations from an expert that walks right, and learns θ for
// two features: "moves right" and "moves left".
func ExampleMaxEnt() {
	const S, A = 5, 2 // actions: 0 = left, 1 = right
	b := mdp.NewBuilder(S, A)
	b.Gamma = 0.9
	b.SetTerminal(S - 1)
	b.Init = []float64{1, 0, 0, 0, 0}
	for s := 0; s < S-1; s++ {
		b.AddTransition(s, 0, max(s-1, 0), 1)
		b.AddTransition(s, 1, s+1, 1)
	}
	m, err := b.Build()
	if err != nil {
		panic(err)
	}
	phi := mat.NewDense(S*A, 2, nil)
	for s := 0; s < S; s++ {
		phi.Set(s*A+1, 0, 1) // right
		phi.Set(s*A+0, 1, 1) // left
	}
	// The expert goes right with probability 0.9.
	expert := mdp.NewPolicy(m)
	for s := 0; s < S; s++ {
		copy(expert.At(0, s), []float64{0.1, 0.9})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var demos []irl.Trajectory
	for range 200 {
		states, actions := m.Rollout(rng, expert, 100)
		demos = append(demos, irl.Trajectory{States: states, Actions: actions})
	}
	res, err := irl.MaxEnt(context.Background(), m, phi, demos, irl.Config{
		Temperature: 1, LearningRate: 0.1, Optimizer: irl.OptimizerAdam, MaxIter: 2000, GradTol: 1e-6})
	if err != nil {
		panic(err)
	}
	fmt.Printf("converged: %v\n", res.Converged)
	fmt.Printf("right is preferred: %v\n", res.Theta[0] > res.Theta[1])
	// Output:
	// converged: true
	// right is preferred: true
}
