package ot_test

import (
	"fmt"

	"github.com/fedirl/fedirl/pkg/ot"
)

// The barycenter of two bumps on a 1-D lattice sits halfway between them.
func ExampleLatticeBarycenter() {
	l := ot.UniformLattice(1, 21)
	a, b := make([]float64, 21), make([]float64, 21)
	a[4], b[16] = 1, 1
	r, err := ot.LatticeBarycenter(l, [][]float64{a, b}, nil, ot.BarycenterOptions{Eps: 0.5, Method: ot.Stabilized, Tol: 1e-10, MaxIter: 100000})
	if err != nil {
		panic(err)
	}
	best := 0
	for i, v := range r.Barycenter {
		if v > r.Barycenter[best] {
			best = i
		}
	}
	fmt.Println("mode at", best, "converged", r.Converged)
	// Output: mode at 10 converged true
}

// A Workspace reuses its memory across solves; iterations allocate nothing.
func ExampleWorkspace() {
	l := ot.UniformLattice(1, 8, 8)
	k, err := ot.NewLatticeKernel(l, 0.5*l.CostUnit())
	if err != nil {
		panic(err)
	}
	w := ot.NewWorkspace(k, 2)
	a, b := make([]float64, 64), make([]float64, 64)
	for i := range a {
		a[i], b[i] = float64(i+1), float64(64-i)
	}
	dst := make([]float64, 64)
	r, err := w.Barycenter(dst, [][]float64{a, b}, []float64{0.5, 0.5}, ot.BarycenterOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("converged %v, marginal error below 1e-9: %v\n", r.Converged, r.MarginalError < 1e-9)
	// Output: converged true, marginal error below 1e-9: true
}
