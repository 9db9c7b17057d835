package irl

import (
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// withAbsorbing returns copies of m and phi in which every terminal state of
// m is an ordinary state that loops to itself under every action, and phi
// has one more column, the absorbing indicator: 1 on the rows of those
// states (whose other entries are set to 0) and 0 elsewhere. See
// Config.Absorbing.
func withAbsorbing(m *mdp.MDP, phi *mat.Dense) (*mdp.MDP, *mat.Dense) {
	S, A := m.NumStates, m.NumActions
	out := &mdp.MDP{NumStates: S, NumActions: A, Gamma: m.Gamma, Horizon: m.Horizon,
		Init: m.Init, RowPtr: make([]int, S*A+1)}
	nnz := len(m.Next)
	for s := range S {
		if m.IsTerminal(s) {
			nnz += A
		}
	}
	out.Next = make([]int32, 0, nnz)
	out.Prob = make([]float64, 0, nnz)
	for k := range S * A {
		if s := k / A; m.IsTerminal(s) {
			out.Next = append(out.Next, int32(s))
			out.Prob = append(out.Prob, 1)
		} else {
			out.Next = append(out.Next, m.Next[m.RowPtr[k]:m.RowPtr[k+1]]...)
			out.Prob = append(out.Prob, m.Prob[m.RowPtr[k]:m.RowPtr[k+1]]...)
		}
		out.RowPtr[k+1] = len(out.Next)
	}
	r, d := phi.Dims()
	aug := mat.NewDense(r, d+1, nil)
	for k := range r {
		if m.IsTerminal(k / A) {
			aug.Set(k, d, 1)
			continue
		}
		copy(aug.RawRowView(k)[:d], phi.RawRowView(k))
	}
	return out, aug
}

// absorbingTails returns, per demonstration, the discounted weight
// Σ_{t=L}^{H−1} γ^t (H = the horizon, or ∞) that its absorbing tail adds to
// the absorbing feature when it ends in a terminal state of m after L
// actions, and 0 when it does not (it was truncated, or its final state was
// not recorded).
func absorbingTails(m *mdp.MDP, demos []Trajectory) []float64 {
	out := make([]float64, len(demos))
	g := m.Gamma
	for i, tr := range demos {
		L := len(tr.Actions)
		if len(tr.States) != L+1 || !m.IsTerminal(tr.States[L]) {
			continue
		}
		switch {
		case m.Horizon > 0 && g == 1:
			out[i] = float64(m.Horizon - L)
		case m.Horizon > 0:
			out[i] = math.Pow(g, float64(L)) * (1 - math.Pow(g, float64(m.Horizon-L))) / (1 - g)
		default:
			out[i] = math.Pow(g, float64(L)) / (1 - g)
		}
	}
	return out
}
