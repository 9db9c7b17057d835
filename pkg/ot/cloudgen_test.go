package ot

import (
	"math"
	"math/rand/v2"
	"testing"
)

// manifoldCloud returns n points in R^d on a smooth m-dimensional surface
// (x_k = sin(a_k·u + b_k) for a latent u uniform in [0, 1)^m, a_k of scale
// 3) plus Gaussian noise of scale noise, with unit cost weights: a cloud of
// low intrinsic dimension, like a probe of rollout states.
func manifoldCloud(t testing.TB, rng *rand.Rand, n, d, m int, noise float64) *PointCloud {
	a, b := make([]float64, d*m), randVec(rng, d, 0, 2*math.Pi)
	for q := range a {
		a[q] = 3 * rng.NormFloat64()
	}
	u := make([]float64, m)
	pts := make([][]float64, n)
	flat := make([]float64, n*d)
	for i := range pts {
		for q := range u {
			u[q] = rng.Float64()
		}
		p := flat[i*d : (i+1)*d]
		for k := range p {
			s := b[k]
			for q, uq := range u {
				s += a[k*m+q] * uq
			}
			p[k] = math.Sin(s) + noise*rng.NormFloat64()
		}
		pts[i] = p
	}
	pc, err := NewPointCloud(pts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pc
}

// smoothMeasures returns K positive measures exp(amp·sin(a_k·x + b_k)) on
// the points, a_k of scale 2/√d: broad, and within a factor e^{2·amp} of
// each other everywhere, like the reward shapes of clients that roughly
// agree (unnormalized).
func smoothMeasures(rng *rand.Rand, pc *PointCloud, K int, amp float64) [][]float64 {
	d := pc.Dim()
	x := make([]float64, d)
	out := make([][]float64, K)
	for k := range out {
		a, b := make([]float64, d), 2*math.Pi*rng.Float64()
		for q := range a {
			a[q] = 2 * rng.NormFloat64() / math.Sqrt(float64(d))
		}
		m := make([]float64, pc.Len())
		for i := range m {
			pc.Point(x, i)
			s := b
			for q := range x {
				s += a[q] * x[q]
			}
			m[i] = math.Exp(amp * math.Sin(s))
		}
		out[k] = m
	}
	return out
}
