package ot

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The BenchmarkIBPIter_* benchmarks time one plain IBP iteration (scaling
// form, K = 6 measures, ε = 0.5 squared spacings, spacing 1) on the lattices
// of issue 15, the way ../../bench/ot-compare.sh times the C reference and
// numpy: per iteration = (t(N2) − t(N1)) / (N2 − N1), so that input checks,
// normalization and the final error evaluation cancel. They report ms/iter
// and, on Linux, the process's peak resident memory (peak-MB).
//
// With OT_BENCH_DATA set to a folder, the measures are read from
// OT_BENCH_DATA/<shape>.mu (K·n little-endian float64, as written by the
// reference's side.py gen), so that all implementations run on the same
// inputs; otherwise smooth random bumps are used.

func BenchmarkIBPIter_Lattice5x5x7x5x2(b *testing.B) { benchIBPIter(b, 5, 5, 7, 5, 2) }
func BenchmarkIBPIter_Lattice32x21x5(b *testing.B)   { benchIBPIter(b, 32, 21, 5) }
func BenchmarkIBPIter_Lattice9x9x5x5x5(b *testing.B) {
	benchIBPIter(b, 9, 9, 5, 5, 5)
}
func BenchmarkIBPIter_Lattice64x64(b *testing.B)       { benchIBPIter(b, 64, 64) }
func BenchmarkIBPIter_Lattice256x256(b *testing.B)     { benchIBPIter(b, 256, 256) }
func BenchmarkIBPIter_Lattice16x16x16x16(b *testing.B) { benchIBPIter(b, 16, 16, 16, 16) }
func BenchmarkIBPIter_Lattice32x32x32x32(b *testing.B) { benchIBPIter(b, 32, 32, 32, 32) }

// ibpIters returns N1 and N2 for a lattice of n points: about 4·10⁶ point
// iterations between them, or OT_BENCH_ITERS="N1,N2" when set (the
// comparison script passes the counts it gives the other implementations).
func ibpIters(n int) (int, int) {
	if s := os.Getenv("OT_BENCH_ITERS"); s != "" {
		var n1, n2 int
		if _, err := fmt.Sscanf(s, "%d,%d", &n1, &n2); err == nil && n2 > n1 && n1 >= 0 {
			return n1, n2
		}
	}
	d := min(200, max(2, 4_000_000/n))
	return max(1, d/4), max(1, d/4) + d
}

func benchIBPIter(b *testing.B, shape ...int) {
	const K = 6
	l := UniformLattice(1, shape...)
	k, err := NewLatticeKernel(l, 0.5)
	if err != nil {
		b.Fatal(err)
	}
	mus, err := benchMeasures(l, K)
	if err != nil {
		b.Fatal(err)
	}
	w := NewWorkspace(k, K)
	dst := make([]float64, l.Len())
	n1, n2 := ibpIters(l.Len())
	solve := func(it int) {
		if _, err := w.Barycenter(dst, mus, nil, BarycenterOptions{MaxIter: it, Tol: -1}); err != nil {
			b.Fatal(err)
		}
	}
	solve(n1) // warm up, first-use allocations
	b.ReportAllocs()
	b.ResetTimer()
	var per time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		solve(n1)
		t1 := time.Now()
		solve(n2)
		t2 := time.Now()
		per += t2.Sub(t1) - t1.Sub(t0)
	}
	b.StopTimer()
	b.ReportMetric(per.Seconds()*1e3/float64(b.N*(n2-n1)), "ms/iter")
	if mb := peakRSSMB(); mb > 0 {
		b.ReportMetric(mb, "peak-MB")
	}
	if out := os.Getenv("OT_BENCH_OUT"); out != "" {
		if err := writeFloats(filepath.Join(out, shapeName(shape)+".go.bar"), dst); err != nil {
			b.Fatal(err)
		}
	}
}

func shapeName(shape []int) string {
	s := make([]string, len(shape))
	for i, v := range shape {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, "x")
}

// benchMeasures reads K measures from OT_BENCH_DATA/<shape>.mu, or makes
// smooth random bumps when OT_BENCH_DATA is unset.
func benchMeasures(l Lattice, K int) ([][]float64, error) {
	dir := os.Getenv("OT_BENCH_DATA")
	if dir == "" {
		return bumps(rand.New(rand.NewPCG(9, 9)), l, K, 0.05), nil
	}
	name := filepath.Join(dir, shapeName(l.Shape())+".mu")
	raw, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	n := l.Len()
	if len(raw) != 8*K*n {
		return nil, fmt.Errorf("%s: %d bytes, want %d", name, len(raw), 8*K*n)
	}
	mus := make([][]float64, K)
	for k := range mus {
		mus[k] = make([]float64, n)
		for i := range mus[k] {
			mus[k][i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*(k*n+i):]))
		}
	}
	return mus, nil
}

func writeFloats(name string, x []float64) error {
	buf := make([]byte, 8*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(v))
	}
	return os.WriteFile(name, buf, 0o644)
}

// peakRSSMB returns the process's peak resident set (VmHWM) in MB, or 0
// where /proc is not available.
func peakRSSMB() float64 {
	if runtime.GOOS != "linux" {
		return 0
	}
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
