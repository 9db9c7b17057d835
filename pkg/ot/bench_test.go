package ot

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// benchBarycenter times one solve of exactly iters iterations per op with
// K = 6 measures on kernel k and reports s/iter and points/s (lattice points ×
// iterations per second). An op also includes input checking and the final
// marginal-error evaluation (K more kernel applications), so s/iter is an
// upper bound. heap-bytes is the live heap after setup (kernel, workspace,
// measures; for the dense kernel also the n×n cost and kernel matrices).
func benchBarycenter(b *testing.B, k Kernel, shape []int, iters int, method Method) {
	rng := rand.New(rand.NewPCG(9, 9))
	l := UniformLattice(1, shape...)
	mus := bumps(rng, l, 6, 1e-3)
	w := NewWorkspace(k, 6)
	dst := make([]float64, l.Len())
	opt := BarycenterOptions{Method: method, MaxIter: iters, Tol: -1}
	if _, err := w.Barycenter(dst, mus, nil, opt); err != nil { // warm up, first-use allocations
		b.Fatal(err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := w.Barycenter(dst, mus, nil, opt); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	sec := b.Elapsed().Seconds() / float64(b.N*iters)
	b.ReportMetric(sec, "s/iter")
	b.ReportMetric(float64(l.Len())/sec, "points/s")
	b.ReportMetric(float64(ms.HeapAlloc), "heap-bytes")
}

// BenchmarkBarycenter_Lattice9x9x5x5x5 is IBP on the
// paper's Acrobot support (n = 10125), K = 6, ε = 0.5, separable kernel.
func BenchmarkBarycenter_Lattice9x9x5x5x5(b *testing.B) {
	l := UniformLattice(1, 9, 9, 5, 5, 5)
	k, err := NewLatticeKernel(l, 0.5)
	if err != nil {
		b.Fatal(err)
	}
	benchBarycenter(b, k, l.Shape(), 2, IBP)
}

// BenchmarkBarycenter_Dense9x9x5x5x5 is the same algorithm with the dense
// n×n kernel (what the paper does).
func BenchmarkBarycenter_Dense9x9x5x5x5(b *testing.B) {
	l := UniformLattice(1, 9, 9, 5, 5, 5)
	k, err := NewDenseKernel(l.CostMatrix(), l.Len(), l.Len(), 0.5)
	if err != nil {
		b.Fatal(err)
	}
	benchBarycenter(b, k, l.Shape(), 2, IBP)
}

// BenchmarkBarycenter_Lattice32x32x32x32 is IBP on n = 1,048,576 points, K = 6.
func BenchmarkBarycenter_Lattice32x32x32x32(b *testing.B) {
	l := UniformLattice(1, 32, 32, 32, 32)
	k, err := NewLatticeKernel(l, 0.5)
	if err != nil {
		b.Fatal(err)
	}
	benchBarycenter(b, k, l.Shape(), 3, IBP)
}

// BenchmarkKernelApply_Lattice32x32x32x32 is one separable kernel application.
func BenchmarkKernelApply_Lattice32x32x32x32(b *testing.B) {
	benchApply(b)
}

// BenchmarkKernelApply_Lattice32x32x32x32_NoPack is the rotating pass
// without packing input slabs.
func BenchmarkKernelApply_Lattice32x32x32x32_NoPack(b *testing.B) {
	packSlabs = false
	defer func() { packSlabs = true }()
	benchApply(b)
}

func benchApply(b *testing.B) {
	l := UniformLattice(1, 32, 32, 32, 32)
	k, err := NewLatticeKernel(l, 0.5)
	if err != nil {
		b.Fatal(err)
	}
	v := randVec(rand.New(rand.NewPCG(1, 2)), l.Len(), 0.5, 1.5)
	dst := make([]float64, l.Len())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k.Apply(dst, v)
	}
	b.ReportMetric(float64(l.Len())*float64(b.N)/b.Elapsed().Seconds(), "points/s")
}

// BenchmarkKernelApply_Lattice32x32x32x32_Gonum is the same with the
// non-rotating passes built on gonum's floats.AddScaled/floats.Dot.
func BenchmarkKernelApply_Lattice32x32x32x32_Gonum(b *testing.B) {
	useGonumPasses = true
	defer func() { useGonumPasses = false }()
	benchApply(b)
}
