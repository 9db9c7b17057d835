package irl

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// restrictToReachable replaces o's model, features and start distribution
// by their restriction to the states reachable from the start
// distribution (μ_D is already computed on the full model). It keeps them
// when every state is reachable.
func (o *Objective) restrictToReachable() error {
	states := o.m.Reachable(o.init)
	if len(states) == o.m.NumStates {
		return nil
	}
	sub, err := o.m.Restrict(states, o.init)
	if err != nil {
		return fmt.Errorf("irl: reachable part of the model: %w", err)
	}
	A := o.m.NumActions
	_, d := o.phi.Dims()
	rows := mat.NewDense(len(states)*A, d, nil)
	for i, s := range states {
		for a := range A {
			rows.SetRow(i*A+a, o.phi.RawRowView(s*A+a))
		}
	}
	o.m, o.phi, o.init, o.fitStates = sub, rows, sub.Init, len(states)
	return nil
}
