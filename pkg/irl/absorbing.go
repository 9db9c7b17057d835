package irl

import (
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// absorbingModel returns a copy of m in which every terminal state is an
// ordinary state that loops to itself under every action. See
// Config.Absorbing.
func absorbingModel(m *mdp.MDP) *mdp.MDP {
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
	return out
}

// absorbingRows returns the rows of phi with one more column, the
// absorbing indicator: 1 on the rows of m's terminal states (whose other
// entries are 0) and 0 elsewhere. See Config.Absorbing.
func absorbingRows(m *mdp.MDP, phi *mat.Dense) featureRows {
	r, d := phi.Dims()
	A := m.NumActions
	return featureRows{n: r, d: d + 1, fill: func(dst []float64, k int) {
		if m.IsTerminal(k / A) {
			clear(dst[:d])
			dst[d] = 1
			return
		}
		copy(dst, phi.RawRowView(k))
		dst[d] = 0
	}}
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
