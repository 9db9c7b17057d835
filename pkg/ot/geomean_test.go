package ot

import (
	"math"
	"math/rand/v2"
	"testing"
)

// geoMeanInputs returns K factor vectors of length n with values spread over
// many binades, and (if special) some points the vector kernel must decline:
// zeros, subnormals, infinities, NaNs, negative values, and products whose
// mean leaves exp's normal range.
func geoMeanInputs(rng *rand.Rand, K, n int, special bool) [][]float64 {
	t := make([][]float64, K)
	for k := range t {
		t[k] = make([]float64, n)
		for i := range t[k] {
			t[k][i] = math.Exp(rng.NormFloat64() * 30)
		}
	}
	if special {
		bad := []float64{0, 5e-324, 1e-310, math.Inf(1), math.NaN(), -1, 1e300, 1e-300}
		for j := 0; j < n/7; j++ {
			i, k := rng.IntN(n), rng.IntN(K)
			t[k][i] = bad[rng.IntN(len(bad))]
			if t[k][i] == 1e300 || t[k][i] == 1e-300 {
				for kk := range t { // all factors extreme: |α·log| ≈ 690
					t[kk][i] = t[k][i]
				}
			}
		}
	}
	return t
}

func cloneVecs(t [][]float64) [][]float64 {
	c := make([][]float64, len(t))
	for k := range t {
		c[k] = append([]float64(nil), t[k]...)
	}
	return c
}

// TestGeoMean4MatchesGo checks the AVX2 kernel against its scalar
// transcription bit for bit, on ranges that start and end anywhere and on
// inputs with points it must decline.
func TestGeoMean4MatchesGo(t *testing.T) {
	if !hasFMA {
		t.Skip("no AVX2+FMA")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, K := range []int{1, 2, 3, 6, 17} {
		for _, special := range []bool{false, true} {
			n := 203
			in := geoMeanInputs(rng, K, n, special)
			alpha := 1 / float64(K)
			i0, i1 := 3, n-2
			want, got := cloneVecs(in), cloneVecs(in)
			wantBar, gotBar := make([]float64, n), make([]float64, n)
			for i := i0; i < i1; i++ {
				if !geoMeanPoint(wantBar, want, alpha, i) {
					geoMeanGeneral(wantBar, want, alpha, i)
				}
			}
			geoMeanEqual(gotBar, got, alpha, i0, i1)
			same := func(a, b float64) bool {
				return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
			}
			for i := range n {
				if !same(gotBar[i], wantBar[i]) {
					t.Fatalf("K=%d special=%v: bar[%d] = %v, want %v", K, special, i, gotBar[i], wantBar[i])
				}
				for k := range K {
					if !same(got[k][i], want[k][i]) {
						t.Fatalf("K=%d special=%v: t[%d][%d] = %v, want %v", K, special, k, i, got[k][i], want[k][i])
					}
				}
			}
		}
	}
}

// TestGeoMeanMatchesLogSum checks the one-log path (vector or scalar)
// against exp(α Σ log t_k) computed with package math. Both carry a
// rounding error of a few ulp of the log sum, which becomes a relative error
// of the result: the bound is 1e-15·(1 + Σ_k |log t_k|).
func TestGeoMeanMatchesLogSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, K := range []int{1, 2, 6, 17} {
		n := 517
		in := geoMeanInputs(rng, K, n, true)
		alpha := 1 / float64(K)
		got, ref := cloneVecs(in), cloneVecs(in)
		bar, refBar := make([]float64, n), make([]float64, n)
		geoMeanDiv(bar, got, []float64{alpha}, true, 0, n)
		for i := range n {
			geoMeanGeneral(refBar, ref, alpha, i)
		}
		for i := range n {
			S := 1.0
			for k := range K {
				S += math.Abs(math.Log(in[k][i]))
			}
			tol := 1e-15 * S
			if !close(bar[i], refBar[i], tol) {
				t.Fatalf("K=%d: bar[%d] = %v, want %v", K, i, bar[i], refBar[i])
			}
			for k := range K {
				if !close(got[k][i], ref[k][i], tol) {
					t.Fatalf("K=%d: t[%d][%d] = %v, want %v", K, k, i, got[k][i], ref[k][i])
				}
			}
		}
	}
}

func close(a, b, rel float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if a == b {
		return true
	}
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

func BenchmarkGeoMeanDiv(b *testing.B) {
	rng := rand.New(rand.NewPCG(15, 16))
	const K, n = 6, 65536
	in := geoMeanInputs(rng, K, n, false)
	bar := make([]float64, n)
	alpha := []float64{1.0 / K}
	for b.Loop() {
		work := in // values drift toward 1 across calls, staying in range
		geoMeanDiv(bar, work, alpha, true, 0, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/point")
}
