package mdp

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestStaleFactorsSolveTheNewMatrix: a value step that keeps the last
// ILU(0) factors solves the system of its own policy, whose matrix goes
// to nt.b while nt.a keeps the factored matrix. Checked on the Newton
// solver's own run (soft value iteration of a random model at two
// temperatures): steps that kept the factors occur, the solve still meets
// its tolerance against plain fixed-point iteration; and on one such
// step, rebuilt by hand: b is I − γP_π for the new policy entry by entry
// (from the model's transitions, not the templates), a and its factors
// are untouched, and GMRES with a's factors and b's products reaches a δ
// whose residual, computed from the model directly, is at the requested
// tolerance.
func TestStaleFactorsSolveTheNewMatrix(t *testing.T) {
	const S, A = 400, 3
	m := localMDP(S, A, 0.97)
	rng := rand.New(rand.NewPCG(9, 10))
	reward := make([]float64, S*A)
	for k := range reward {
		reward[k] = rng.NormFloat64()
	}
	for _, tau := range []float64{1, 0.05} {
		ws := NewWorkspace(m, Options{Tol: 1e-10, Newton: true, Workers: 1})
		got := ws.SoftValueIteration(nil, reward, tau)
		if ws.nt.staleSteps == 0 {
			t.Fatalf("τ=%g: no value step kept the factors", tau)
		}
		ref := NewWorkspace(m, Options{Tol: 1e-12, MaxIter: 1 << 20, Workers: 1})
		want := ref.SoftValueIteration(nil, reward, tau)
		for s := range S {
			if d := math.Abs(got.V[s] - want.V[s]); d > 1e-10/(1-m.Gamma)*10 {
				t.Fatalf("τ=%g: V[%d] = %v, fixed point %v", tau, s, got.V[s], want.V[s])
			}
		}

		// One step by hand: factors for the policy of a perturbed reward,
		// the matrix of the solution's policy.
		nt := ws.nt
		r2 := slices.Clone(reward)
		for k := range r2 {
			r2[k] += 0.3 * rng.NormFloat64()
		}
		old := ws.SoftPolicy(nil, ref.SoftValueIteration(nil, r2, tau), tau)
		ws.pi = old
		ws.build(nt.a)
		if !nt.a.ilu0() {
			t.Fatal("ILU(0) failed")
		}
		nt.factored = true
		aVal, aLU := slices.Clone(nt.a.val[:nt.a.ptr[S]]), slices.Clone(nt.a.lu)
		pi := ws.SoftPolicy(nil, got, tau)
		ws.pi = pi
		ws.build(nt.b)
		ws.pi = nil
		if !nt.factored || !slices.Equal(aVal, nt.a.val[:nt.a.ptr[S]]) || !slices.Equal(aLU, nt.a.lu) {
			t.Fatal("building b touched a or its factors")
		}
		// b entry by entry against the model's transitions
		dense := make([]float64, S)
		for s := range S {
			clear(dense)
			dense[s] = 1
			if !m.IsTerminal(s) {
				for a := range A {
					if pa := pi.Prob[s*A+a]; pa >= dropPolicy {
						for i := m.RowPtr[s*A+a]; i < m.RowPtr[s*A+a+1]; i++ {
							dense[m.Next[i]] -= m.Gamma * pa * m.Prob[i]
						}
					}
				}
			}
			row := make([]float64, S)
			for q := nt.b.ptr[s]; q < nt.b.ptr[s+1]; q++ {
				row[nt.b.col[q]] += nt.b.val[q]
			}
			for j := range S {
				if math.Abs(row[j]-dense[j]) > 1e-15 {
					t.Fatalf("τ=%g: b(%d,%d) = %v, model %v", tau, s, j, row[j], dense[j])
				}
			}
		}
		rhs := make([]float64, S)
		for s := range rhs {
			rhs[s] = rng.NormFloat64()
		}
		delta := make([]float64, S)
		const rtol = 1e-9
		nt.kr.solve(nt.precA, nt.mulB, delta, rhs, nt.kr.zero, rtol, newtonMaxMatVec)
		// the residual from the model: (I − γP_π)δ − rhs
		res, norm := 0.0, 0.0
		for s := range S {
			y := delta[s]
			if !m.IsTerminal(s) {
				for a := range A {
					if pa := pi.Prob[s*A+a]; pa >= dropPolicy {
						for i := m.RowPtr[s*A+a]; i < m.RowPtr[s*A+a+1]; i++ {
							y -= m.Gamma * pa * m.Prob[i] * delta[m.Next[i]]
						}
					}
				}
			}
			res += (y - rhs[s]) * (y - rhs[s])
			norm += rhs[s] * rhs[s]
		}
		if math.Sqrt(res) > 10*rtol*math.Sqrt(norm) {
			t.Fatalf("τ=%g: residual %g of ‖rhs‖ %g with a's factors and b's products", tau, math.Sqrt(res), math.Sqrt(norm))
		}
		ws.Close()
		ref.Close()
	}
}
