package ot

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// w2Squared1D is the closed form of W2² on the line: the integral of the
// squared difference of the quantile functions, computed by merging the CDFs.
func w2Squared1D(x []float64, a, b []float64) float64 {
	a, b = normalized(a), normalized(b)
	var s float64
	i, j := 0, 0
	ra, rb := a[0], b[0]
	for i < len(a) && j < len(b) {
		m := math.Min(ra, rb)
		d := x[i] - x[j]
		s += m * d * d
		ra -= m
		rb -= m
		if ra <= 1e-15 && i < len(a)-1 {
			i++
			ra = a[i]
		} else if ra <= 1e-15 {
			i++
		}
		if rb <= 1e-15 && j < len(b)-1 {
			j++
			rb = b[j]
		} else if rb <= 1e-15 {
			j++
		}
	}
	return s
}

// TestExactCostLine checks ExactCost against the 1-D closed form.
func TestExactCostLine(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 1))
	for _, n := range []int{2, 5, 17, 40} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			x := make([]float64, n)
			for i := range x {
				x[i] = rng.Float64() * 10
			}
			sort.Float64s(x)
			l := Lattice{Axes: []Axis{{Coords: x}}}
			a, b := randVec(rng, n, 0, 1), randVec(rng, n, 0, 1)
			got, plan, err := ExactCost(l.CostMatrix(), n, n, a, b)
			if err != nil {
				t.Fatal(err)
			}
			approx.Equal(t, "W2²", got, w2Squared1D(x, a, b), 1e-10, 1e-10)
			// The plan is a coupling of the normalized measures.
			an, bn := normalized(a), normalized(b)
			for i := 0; i < n; i++ {
				var rs, cs float64
				for j := 0; j < n; j++ {
					rs += plan[i*n+j]
					cs += plan[j*n+i]
				}
				approx.Equal(t, "row sum", rs, an[i], 1e-12, 0)
				approx.Equal(t, "col sum", cs, bn[i], 1e-12, 0)
			}
		})
	}
}

// TestExactBelowEntropic checks W2² ≤ ⟨P_ε, C⟩ and that the entropic cost
// tends to W2² as ε → 0, on a small 2-D lattice.
func TestExactBelowEntropic(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 1))
	l := UniformLattice(1, 5, 4)
	n := l.Len()
	a, b := randVec(rng, n, 0.1, 1), randVec(rng, n, 0.1, 1)
	exact, _, err := ExactCost(l.CostMatrix(), n, n, a, b)
	if err != nil {
		t.Fatal(err)
	}
	prev := math.Inf(1)
	for _, eps := range []float64{2, 0.5, 0.1, 0.02} {
		k, _ := NewLatticeKernel(l, eps)
		r, err := Sinkhorn(k, a, b, SinkhornOptions{Log: true, MaxIter: 100000, Tol: 1e-12})
		if err != nil {
			t.Fatal(err)
		}
		if r.Cost < exact-1e-9 || r.Cost > prev+1e-9 {
			t.Errorf("ε=%g: entropic cost %.9g not in [W2²=%.9g, previous %.9g]", eps, r.Cost, exact, prev)
		}
		prev = r.Cost
	}
	approx.Equal(t, "ε=0.02 entropic vs exact", prev, exact, 1e-3, 0)
}
