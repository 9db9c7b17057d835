package ot

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// TestSinkhornForms checks the scaling and log-domain forms against each
// other and the separable kernel against the dense one, plus the marginals of
// the plan rebuilt from the returned potentials.
func TestSinkhornForms(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	for _, tc := range []struct {
		l   Lattice
		eps float64
	}{
		{UniformLattice(1, 15), 0.5},
		{UniformLattice(0.5, 6, 5), 1},
		{Lattice{Axes: []Axis{PeriodicAxis(6, 6), CategoricalAxis(3), UniformAxis(4, 2)}}, 0.3},
	} {
		t.Run(fmt.Sprint(tc.l.Shape(), tc.eps), func(t *testing.T) {
			n := tc.l.Len()
			eps := tc.eps * tc.l.CostUnit()
			a, b := randVec(rng, n, 0.05, 1), randVec(rng, n, 0.05, 1)
			b[0] = 0 // a zero entry must be handled
			lk, _ := NewLatticeKernel(tc.l, eps)
			cost := tc.l.CostMatrix()
			dk, _ := NewDenseKernel(cost, n, n, eps)
			opt := SinkhornOptions{MaxIter: 100000, Tol: 1e-12}
			ref, err := Sinkhorn(lk, a, b, opt)
			if err != nil || !ref.Converged {
				t.Fatalf("scaling: %v, converged %v", err, ref.Converged)
			}
			for name, k := range map[string]Kernel{"lattice": lk, "dense": dk} {
				for _, log := range []bool{false, true} {
					o := opt
					o.Log = log
					r, err := Sinkhorn(k, a, b, o)
					if err != nil {
						t.Fatal(err)
					}
					what := fmt.Sprintf("%s/log=%v", name, log)
					approx.Equal(t, what+" cost", r.Cost, ref.Cost, 1e-12, 1e-10)
					approx.Equal(t, what+" objective", r.Objective, ref.Objective, 1e-12, 1e-10)
					// Rebuild P from the potentials and check both marginals and ⟨P, C⟩.
					an, bn := normalized(a), normalized(b)
					row, col := make([]float64, n), make([]float64, n)
					var pc float64
					for i := 0; i < n; i++ {
						for j := 0; j < n; j++ {
							if math.IsInf(r.F[i], -1) || math.IsInf(r.G[j], -1) {
								continue
							}
							p := math.Exp((r.F[i] + r.G[j] - cost[i*n+j]) / eps)
							row[i] += p
							col[j] += p
							pc += p * cost[i*n+j]
						}
					}
					approx.Slices(t, what+" row marginal", row, an, 1e-11, 0)
					approx.Slices(t, what+" col marginal", col, bn, 1e-11, 0)
					approx.Equal(t, what+" <P,C>", pc, r.Cost, 1e-10, 1e-10)
				}
			}
		})
	}
}

// TestEpsSweep runs every method on a 20×20 lattice for ε from 10 down to
// 1e-3 (squared-spacing units): the log-domain forms must stay finite at every
// ε; the scaling forms may fail at small ε but only with an error, and where
// they succeed IBP must agree with its log-domain form.
func TestEpsSweep(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	l := UniformLattice(1, 20, 20)
	mus := bumps(rng, l, 3, 1e-6)
	for _, eps := range []float64{10, 1, 0.5, 0.1, 0.01, 1e-3} {
		var ibp []float64
		for _, tc := range []struct {
			m   Method
			log bool
		}{{IBP, false}, {Stabilized, false}, {Debiased, false}, {Debiased, true}, {Paper, false}, {Paper, true}} {
			t.Run(fmt.Sprintf("eps=%g/%v/log=%v", eps, tc.m, tc.log), func(t *testing.T) {
				logForm := tc.log || tc.m == Stabilized
				iters := 100
				if tc.m == Paper {
					iters = 50
				}
				r, err := LatticeBarycenter(l, mus, nil, BarycenterOptions{Eps: eps, Method: tc.m, LogDomain: tc.log, MaxIter: iters, Tol: 1e-10})
				if err != nil {
					if !logForm {
						t.Logf("scaling domain failed with an error, as documented: %v", err)
						return
					}
					t.Fatal(err)
				}
				for i, v := range r.Barycenter {
					if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
						t.Fatalf("entry %d = %g", i, v)
					}
				}
				if math.IsNaN(r.MarginalError) || math.IsInf(r.MarginalError, 0) {
					t.Fatalf("marginal error %g", r.MarginalError)
				}
				t.Logf("%d iterations, marginal error %.3g, mass %.12f", r.Iterations, r.MarginalError, sum(r.Barycenter))
				switch tc.m {
				case IBP:
					ibp = r.Barycenter
				case Stabilized:
					if ibp != nil {
						approx.Slices(t, "IBP vs stabilized", r.Barycenter, ibp, 1e-10, 0)
					}
				}
			})
		}
	}
}
