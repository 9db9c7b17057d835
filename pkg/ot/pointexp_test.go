package ot

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// pointExpRef is the scalar transcription of the vector exp (EXP4 and EXP8
// in pointexp_amd64.s): the same operations in the same order, math.FMA
// where the assembly has a fused multiply-add.
func pointExpRef(x float64) float64 {
	c := func(i int) float64 { return pexTab[pxC2+i-2][0] } // 1/i!
	kb := math.FMA(x, math.Log2E, magic)
	kd := kb - magic
	p := math.FMA(-kd, ln2Hi, x)
	p = math.FMA(-kd, ln2Lo, p)
	p2 := float64(p * p)
	p4 := float64(p2 * p2)
	s0 := math.FMA(p2, math.FMA(p, c(5), c(4)), math.FMA(p, c(3), c(2)))
	s1 := math.FMA(math.FMA(math.FMA(c(9), p, c(8)), p, c(7)), p, c(6))
	s2 := math.FMA(math.FMA(math.FMA(c(13), p, c(12)), p, c(11)), p, c(10))
	q := math.FMA(p4, math.FMA(p4, s2, s1), s0)
	y := math.FMA(p, math.FMA(p, q, 1), 1)
	k := math.Float64bits(kb) - math.Float64bits(magic)
	y = math.Float64frombits(math.Float64bits(y) + k<<52)
	if !(y >= minNormal) || !(x >= expUnderflow) {
		return 0
	}
	return y
}

// ulpDiff returns the distance in units in the last place between two
// non-negative finite floats.
func ulpDiff(a, b float64) float64 {
	return math.Abs(float64(int64(math.Float64bits(a)) - int64(math.Float64bits(b))))
}

// pointExpArgs returns a sweep of [−745, 0] (step 1e-3, offset by a random
// fraction), random arguments over the range and in [−1, 0], and the
// boundary and special values, in a length that is a multiple of 4.
func pointExpArgs(rng *rand.Rand) []float64 {
	var x []float64
	for v := -745 + 1e-3*rng.Float64(); v <= 0; v += 1e-3 {
		x = append(x, v)
	}
	for range 200000 {
		x = append(x, -745*rng.Float64(), -rng.Float64(), -1e-10*rng.Float64())
	}
	u := expUnderflow
	x = append(x, 0, math.Copysign(0, -1), -5e-324, -1e-300, u, math.Nextafter(u, 0), math.Nextafter(u, -1000),
		-708.39, -708.4, -709, -709.78, -744.44, -745.13, -746, -1e4, -1e300, -math.MaxFloat64,
		math.Inf(-1), math.NaN(), -0.34657359027997264, 0.34657359027997264-0.7)
	for len(x)%4 != 0 {
		x = append(x, 0)
	}
	return x
}

// TestPointExpAccuracy checks the vector exp's algorithm (pointExpRef) and,
// with AVX2, the assembly itself (bit for bit against the transcription):
// on [expUnderflow, 0] where math.Exp is normal it is within 2 ulp of
// math.Exp (the measured maximum is logged), and elsewhere in x ≤ 0 it is
// exactly 0, never NaN or garbage.
func TestPointExpAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 51))
	x := pointExpArgs(rng)
	vec := make([]float64, len(x))
	if hasFMA {
		pointExp4(&vec[0], &x[0], len(x), &pexTab[0][0])
	}
	maxUlp, maxRel := 0.0, 0.0
	for i, xi := range x {
		got := pointExpRef(xi)
		if hasFMA && math.Float64bits(vec[i]) != math.Float64bits(got) {
			t.Fatalf("pointExp4(%v) = %v, pointExpRef %v", xi, vec[i], got)
		}
		want := math.Exp(xi)
		if !(xi >= expUnderflow) || want < minNormal {
			if got != 0 || math.Signbit(got) {
				t.Fatalf("exp(%v) = %v, want 0", xi, got)
			}
			continue
		}
		if d := ulpDiff(got, want); d > maxUlp {
			maxUlp = d
		}
		maxRel = math.Max(maxRel, math.Abs(got-want)/want)
	}
	t.Logf("%d arguments: max %v ulp, max relative error %.3g against math.Exp (AVX2 checked: %v)", len(x), maxUlp, maxRel, hasFMA)
	if maxUlp > 2 {
		t.Errorf("max %v ulp from math.Exp, want ≤ 2", maxUlp)
	}
}

// pointPaths runs f on every path of PointKernel this CPU has: the scalar
// one (plainPoints), AVX2, and AVX-512.
func pointPaths(t *testing.T, f func(t *testing.T, path string)) {
	defer func(p, z bool) { plainPoints, pointZMM = p, z }(plainPoints, pointZMM)
	plainPoints = true
	t.Run("go", func(t *testing.T) { f(t, "go") })
	plainPoints = false
	if !hasFMA {
		return
	}
	pointZMM = false
	t.Run("avx2", func(t *testing.T) { f(t, "avx2") })
	if hasAVX512 {
		pointZMM = true
		t.Run("avx512", func(t *testing.T) { f(t, "avx512") })
	}
}

// TestPointKernelVecMatchesGo compares the vector paths with the scalar
// one on random clouds (D = 1, 4, 24; odd N, one and several column tiles,
// ε at which many entries underflow), for Apply, ApplyCost, LogApply and
// LogApplyCost: to 1e-13 relative (each entry's exp within 2 ulp, the sums
// in another order), and AVX-512 equal to AVX2 bit for bit.
func TestPointKernelVecMatchesGo(t *testing.T) {
	if !hasFMA {
		t.Skip("no AVX2+FMA")
	}
	defer func(p, z bool) { plainPoints, pointZMM = p, z }(plainPoints, pointZMM)
	rng := rand.New(rand.NewPCG(51, 8))
	for _, tc := range []struct {
		n, d int
		eps  float64
	}{
		{1, 1, 1}, {17, 1, 0.5}, {333, 1, 0.01}, {1111, 4, 1}, {251, 4, 0.05}, {99, 24, 3}, {401, 24, 0.3},
	} {
		pc := randCloud(t, rng, tc.n, tc.d, 3)
		pk, err := NewPointKernel(pc, tc.eps)
		if err != nil {
			t.Fatal(err)
		}
		v := randVec(rng, tc.n, 0.1, 2)
		x := randVec(rng, tc.n, -20, 5)
		x[tc.n/2] = math.Inf(-1)
		for _, op := range []struct {
			name string
			f    func(dst, v []float64) []float64
			in   []float64
		}{
			{"Apply", pk.Apply, v}, {"ApplyCost", pk.ApplyCost, v}, {"LogApply", pk.LogApply, x}, {"LogApplyCost", pk.LogApplyCost, x},
		} {
			plainPoints = true
			want := op.f(make([]float64, tc.n), op.in)
			plainPoints, pointZMM = false, false
			avx2 := op.f(make([]float64, tc.n), op.in)
			name := fmt.Sprintf("n=%d d=%d ε=%g %s", tc.n, tc.d, tc.eps, op.name)
			for i := range want {
				if math.IsInf(want[i], -1) && math.IsInf(avx2[i], -1) {
					continue
				}
				if !approx.Close(avx2[i], want[i], 1e-300, 1e-13) {
					t.Fatalf("%s[%d]: AVX2 %v, Go %v", name, i, avx2[i], want[i])
				}
			}
			if !hasAVX512 {
				continue
			}
			pointZMM = true
			avx512 := op.f(make([]float64, tc.n), op.in)
			for i := range avx2 {
				if math.Float64bits(avx512[i]) != math.Float64bits(avx2[i]) {
					t.Fatalf("%s[%d]: AVX-512 %v, AVX2 %v", name, i, avx512[i], avx2[i])
				}
			}
		}
	}
}

// TestPointKernelPaths runs the point-kernel tests on every path: against
// the dense kernel and barycenter, against the lattice barycenter, bit for
// bit across workers (the barycenters and the kernel applications
// themselves), and without allocations.
func TestPointKernelPaths(t *testing.T) {
	pointPaths(t, func(t *testing.T, path string) {
		TestPointKernelMatchesDense(t)
		TestPointKernelSmallEpsFinite(t)
		TestPointBarycenterMatchesDense(t)
		TestPointBarycenterMatchesLattice(t)
		TestPointBarycenterDeterministicAcrossWorkers(t)
		TestPointBarycenterNoAllocs(t)
		rng := rand.New(rand.NewPCG(51, 9))
		for _, d := range []int{1, 4, 24} {
			pc := randCloud(t, rng, 1203, d, 3)
			v := randVec(rng, pc.Len(), 0.1, 2)
			x := randVec(rng, pc.Len(), -20, 5)
			sameWithOneWorker(t, func() [][]float64 {
				pk, err := NewPointKernel(pc, 0.5)
				if err != nil {
					t.Fatal(err)
				}
				return [][]float64{pk.Apply(make([]float64, len(v)), v), pk.ApplyCost(make([]float64, len(v)), v), pk.LogApply(make([]float64, len(x)), x)}
			})
		}
	})
}
