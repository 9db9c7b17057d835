package ot

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// denseAnchor is the time per kernel entry of the stored dense kernel's
// matvec (DenseKernel.Apply at n = 2000, 32 MB, on the same workers), the
// application a PointKernel replaces; measured once per process so that
// every point-kernel benchmark states its speed as a ratio to it.
var denseAnchor = sync.OnceValue(func() float64 {
	const n = 2000
	rng := rand.New(rand.NewPCG(7, 7))
	pc := randCloud(nil, rng, n, 4, 3) // cannot fail
	dk, err := NewDenseKernel(pc.CostMatrix(), n, n, 1)
	if err != nil {
		panic(err)
	}
	v, dst := randVec(rng, n, 0, 1), make([]float64, n)
	dk.Apply(dst, v)
	// testing.Benchmark cannot run inside a benchmark: time ≥ 0.5 s by hand.
	start := time.Now()
	reps := 0
	for ; reps < 5 || time.Since(start) < 500*time.Millisecond; reps++ {
		dk.Apply(dst, v)
	}
	return float64(time.Since(start).Nanoseconds()) / float64(reps) / (n * n)
})

// BenchmarkPointKernelApply times one on-the-fly kernel application (the
// scaling form Apply and the log-domain LogApply) of n random points in
// dimension d at ε = 1 (a quarter of the entries below the underflow
// bound at d = 4, none at d = 24), and reports ns per kernel entry and its
// ratio to the dense kernel's matvec (x-dense: how many times slower than
// reading a stored K, which at n = 20 000 would need 3.2 GB). allocs/op is
// the application's own (0).
func BenchmarkPointKernelApply(b *testing.B) {
	for _, n := range []int{2000, 20000} {
		for _, d := range []int{4, 24} {
			for _, log := range []bool{false, true} {
				name := fmt.Sprintf("N=%d/D=%d/scaling", n, d)
				if log {
					name = fmt.Sprintf("N=%d/D=%d/log", n, d)
				}
				b.Run(name, func(b *testing.B) {
					rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
					pc := randCloud(b, rng, n, d, 3)
					pk, err := NewPointKernel(pc, 1)
					if err != nil {
						b.Fatal(err)
					}
					v, dst := randVec(rng, n, 0, 1), make([]float64, n)
					anchor := denseAnchor()
					apply := pk.Apply
					if log {
						apply = pk.LogApply
					}
					apply(dst, v)
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						apply(dst, v)
					}
					b.StopTimer()
					ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(n*n)
					b.ReportMetric(ns, "ns/entry")
					b.ReportMetric(anchor, "dense-ns/entry")
					b.ReportMetric(ns/anchor, "x-dense")
				})
			}
		}
	}
}

// BenchmarkPointTile times one row against one column tile of a
// PointKernel (1024 random points, ε = 1) on each path this CPU has, on one
// goroutine: the scaling form (mul: costs, exp, multiply-add) and the log
// domain's two passes (loge: costs and exponents; logsum: the exps), in ns
// per kernel entry.
func BenchmarkPointTile(b *testing.B) {
	for _, d := range []int{4, 24} {
		rng := rand.New(rand.NewPCG(1, 2))
		pc := randCloud(b, rng, 1024, d, 3)
		pk, err := NewPointKernel(pc, 1)
		if err != nil {
			b.Fatal(err)
		}
		ct := pointColTile(d)
		v := randVec(rng, ct, 0, 1)
		report := func(b *testing.B, cols int) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*cols), "ns/entry")
		}
		b.Run(fmt.Sprintf("D=%d/go/mul", d), func(b *testing.B) {
			for b.Loop() {
				scaleTile(pc.x[:d], pc.x[:ct*d], v, pc.w, 1, false)
			}
			report(b, ct)
		})
		if !hasFMA {
			continue
		}
		lanes, buf, tab := make([]float64, pointLanes), make([]float64, pk.vcol), &pexTab[0][0]
		paths := []string{"avx2"}
		if hasAVX512 {
			paths = append(paths, "avx512")
		}
		for _, path := range paths {
			mul, logE, logSum := pointMul4, pointLogE4, pointLogSum4
			if path == "avx512" {
				mul, logE, logSum = pointMul8, pointLogE8, pointLogSum8
			}
			b.Run(fmt.Sprintf("D=%d/%s/mul", d, path), func(b *testing.B) {
				for b.Loop() {
					mul(&lanes[0], &pk.xt[0], pk.vcol, d, &pc.x[0], &pc.w[0], &v[0], -1, false, tab)
				}
				report(b, pk.vcol)
			})
			b.Run(fmt.Sprintf("D=%d/%s/loge", d, path), func(b *testing.B) {
				for b.Loop() {
					logE(&buf[0], &pk.xt[0], pk.vcol, d, &pc.x[0], &pc.w[0], &v[0], -1, tab)
				}
				report(b, pk.vcol)
			})
			b.Run(fmt.Sprintf("D=%d/%s/logsum", d, path), func(b *testing.B) {
				for b.Loop() {
					logSum(&lanes[0], &buf[0], pk.vcol, 1, tab) // exponents ≤ 1: arguments ≤ 0
				}
				report(b, pk.vcol)
			})
		}
	}
}
