package envs

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSpaceSample: Discrete draws cover [0, N) with frequencies near 1/N,
// Box draws stay inside the bounds with the uniform mean, and an unbounded
// box panics instead of returning garbage.
func TestSpaceSample(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 30000
	d := Space{N: 3}
	counts := make([]int, 3)
	x := make([]float64, 1)
	for range n {
		v := d.Sample(x, rng)[0]
		if v != math.Trunc(v) || v < 0 || v >= 3 {
			t.Fatalf("Discrete(3) sample %v", v)
		}
		counts[int(v)]++
	}
	for k, c := range counts {
		if f := float64(c) / n; math.Abs(f-1.0/3) > 0.015 { // > 5 standard errors
			t.Errorf("value %d drawn with frequency %.4f, want 1/3", k, f)
		}
	}
	b := Space{Low: []float64{-2, 0}, High: []float64{2, 10}}
	y := make([]float64, 2)
	var sum [2]float64
	for range n {
		b.Sample(y, rng)
		for j := range y {
			if y[j] < b.Low[j] || y[j] > b.High[j] {
				t.Fatalf("Box sample %v outside [%v, %v]", y, b.Low, b.High)
			}
			sum[j] += y[j]
		}
	}
	if m0, m1 := sum[0]/n, sum[1]/n; math.Abs(m0) > 0.06 || math.Abs(m1-5) > 0.15 { // ≈ 5 standard errors
		t.Errorf("Box sample means %.3f, %.3f, want 0 and 5", m0, m1)
	}
	defer func() {
		if recover() == nil {
			t.Error("sampling an unbounded box did not panic")
		}
	}()
	Space{Low: []float64{math.Inf(-1)}, High: []float64{0}}.Sample(x, rng)
}
