package irl

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// featureRows is a feature matrix given by its rows: n rows of d entries,
// fill writing row k into dst (length d). The fit's matrix is built from it
// once, for the reachable states only (restrictToReachable), so that
// Config.Absorbing's extra column costs no copy of the whole matrix.
type featureRows struct {
	n, d int
	fill func(dst []float64, k int)
	// dense, when not nil, is the matrix itself (fill reads it)
	dense *mat.Dense
}

// denseRows returns phi's rows.
func denseRows(phi *mat.Dense) featureRows {
	r, d := phi.Dims()
	return featureRows{n: r, d: d, dense: phi, fill: func(dst []float64, k int) { copy(dst, phi.RawRowView(k)) }}
}

// restrictToReachable sets o's model, features (from rows) and start
// distribution to their restriction to the states reachable from the
// start distribution (μ_D is already computed on the full model). When
// every state is reachable it keeps the model and start distribution, and
// the features too when rows is a dense matrix.
func (o *Objective) restrictToReachable(rows featureRows) error {
	A := o.m.NumActions
	states := o.m.Reachable(o.init)
	if len(states) == o.m.NumStates {
		if rows.dense != nil {
			o.phi = rows.dense
			return nil
		}
		o.phi = mat.NewDense(rows.n, rows.d, nil)
		for k := range rows.n {
			rows.fill(o.phi.RawRowView(k), k)
		}
		return nil
	}
	sub, err := o.m.Restrict(states, o.init)
	if err != nil {
		return fmt.Errorf("irl: reachable part of the model: %w", err)
	}
	phi := mat.NewDense(len(states)*A, rows.d, nil)
	for i, s := range states {
		for a := range A {
			rows.fill(phi.RawRowView(i*A+a), s*A+a)
		}
	}
	o.m, o.phi, o.init, o.fitStates = sub, phi, sub.Init, len(states)
	return nil
}
