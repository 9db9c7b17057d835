package mdp_test

import (
	"math"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

// TestNewtonMatchesReferences: the Newton solver's values agree with plain
// fixed-point iteration, and its visits with the dense solve of
// (I − γP_πᵀ)x = init, to within the fixed-point error bound, on MDPs with
// and without terminal states, at temperatures from nearly hard to smooth.
func TestNewtonMatchesReferences(t *testing.T) {
	cases := []struct {
		S, A, k, nTerm int
		gamma, tau     float64
	}{
		{300, 4, 5, 0, 0.99, 1e-3},
		{300, 4, 5, 6, 0.99, 1e-3},
		{200, 3, 2, 0, 0.999, 0.05},
		{200, 5, 3, 5, 0.95, 1},
	}
	const tol = 1e-11
	for ci, c := range cases {
		m := mdptest.RandomMDP(uint64(70+ci), c.S, c.A, c.k, c.nTerm, c.gamma, 0)
		r := randomReward(uint64(70+ci), m.NumPairs())
		plain := mdp.NewWorkspace(m, mdp.Options{Anderson: -1, Tol: tol, MaxIter: 1 << 22})
		nw := mdp.NewWorkspace(m, mdp.Options{Newton: true, Tol: tol})
		vp := plain.SoftValueIteration(nil, r, c.tau)
		vn := nw.SoftValueIteration(nil, r, c.tau)
		if !vp.Converged || !vn.Converged || vn.Residual > tol {
			t.Fatalf("case %d: converged plain %v, Newton %v (residual %g after %d sweeps)", ci, vp.Converged, vn.Converged, vn.Residual, vn.Iterations)
		}
		bound := 2 * tol * c.gamma / (1 - c.gamma)
		approx.Slices(t, "Newton V", vn.V, vp.V, bound, 0)
		approx.Slices(t, "Newton Q", vn.Q, vp.Q, bound, 0)
		pi := nw.SoftPolicy(nil, vn, c.tau)
		want := denseVisits(m, pi.Prob)
		got := nw.Visits(nil, pi, nil)
		approx.Slices(t, "Newton visits", got, want, 2*tol/(1-c.gamma), 1e-9)
		t.Logf("case %d: value sweeps plain %d, Newton %d; visit sweeps Newton %d", ci, vp.Iterations, vn.Iterations, nw.VisitIterations())
		if vn.Iterations >= vp.Iterations/5 {
			t.Errorf("case %d: Newton took %d exact sweeps, plain iteration %d", ci, vn.Iterations, vp.Iterations)
		}
	}
}

// TestNewtonWarmStart: after a small reward change a warm start agrees with
// a cold one to within the error bound and needs no more sweeps.
func TestNewtonWarmStart(t *testing.T) {
	m := mdptest.RandomMDP(81, 400, 4, 4, 3, 0.99, 0)
	r := randomReward(81, m.NumPairs())
	const tol = 1e-10
	cold := mdp.NewWorkspace(m, mdp.Options{Tol: tol, Newton: true})
	warm := mdp.NewWorkspace(m, mdp.Options{Tol: tol, Newton: true, WarmStart: true})
	vw := warm.SoftValueIteration(nil, r, 1e-3)
	pw := warm.SoftPolicy(nil, vw, 1e-3)
	dw := warm.Visits(nil, pw, nil)
	for i := range r {
		r[i] += 0.01 * math.Sin(float64(i))
	}
	vc := cold.SoftValueIteration(nil, r, 1e-3)
	vw = warm.SoftValueIteration(vw, r, 1e-3)
	if vw.Iterations > vc.Iterations {
		t.Errorf("warm start took %d sweeps, cold %d", vw.Iterations, vc.Iterations)
	}
	bound := 2 * tol * m.Gamma / (1 - m.Gamma)
	approx.Slices(t, "warm vs cold V", vw.V, vc.V, bound, 0)
	pc := cold.SoftPolicy(nil, vc, 1e-3)
	dc := cold.Visits(nil, pc, nil)
	dw = warm.Visits(dw, pc, nil)
	approx.Slices(t, "warm vs cold visits", dw, dc, 2*tol/(1-m.Gamma), 0)
}
