package ot

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// TestSepEngineMatchesKernel checks the engine's two applications, with the
// assembly kernels and with the portable loops, against LatticeKernel.Apply
// (itself checked against the dense kernel), on lattices whose passes hit
// every column-tail case.
func TestSepEngineMatchesKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := [][]int{{1}, {7}, {50}, {3, 1}, {5, 5, 7, 5, 2}, {32, 21, 5}, {9, 9, 5, 5, 5}, {13, 3},
		{64, 64}, {17, 33}, {6, 7, 8}, {2, 2, 2, 2, 2, 2, 2}, {40, 1, 3}}
	for _, shape := range shapes {
		for _, mixed := range []bool{false, true} {
			l := UniformLattice(1, shape...)
			if mixed {
				l = randomLattice(rng, len(shape), true, 1)
				for k, n := range shape {
					a := l.Axes[k]
					a.Coords = make([]float64, n)
					for i := range a.Coords {
						a.Coords[i] = float64(i) * (0.5 + rng.Float64())
					}
					if a.Period > 0 {
						a.Period = a.Coords[n-1] + 1
					}
					l.Axes[k] = a
				}
			}
			t.Run(fmt.Sprintf("%v/mixed=%v", shape, mixed), func(t *testing.T) {
				lk, err := NewLatticeKernel(l, 0.5*l.CostUnit())
				if err != nil {
					t.Fatal(err)
				}
				n := l.Len()
				e := newSepEngine(lk)
				v := randVec(rng, n, 0.1, 2)
				want := lk.Apply(make([]float64, n), v)
				// X -> Y, then transpose back.
				y := make([]float64, n)
				got := make([]float64, n)
				for _, plain := range []bool{false, true} {
					e.plain = plain
					e.applyXY(y, v)
					transpose(got, y, e.nr, e.nl)
					if err := approx.SlicesErr(got, want, 0, 1e-13); err != nil {
						t.Errorf("applyXY (plain=%v): %v", plain, err)
					}
					// Y -> X.
					transpose(y, v, e.nl, e.nr)
					e.applyYX(got, y)
					if err := approx.SlicesErr(got, want, 0, 1e-13); err != nil {
						t.Errorf("applyYX (plain=%v): %v", plain, err)
					}
				}
			})
		}
	}
}

// TestBandColsAnyTails checks every column count from 1 to 200 and band
// lengths 0 to 9 against the plain loop, including sources that end right
// after the last column read.
func TestBandColsAnyTails(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for w := 1; w <= 200; w++ {
		for nc := 0; nc <= 9; nc++ {
			stride := w + rng.IntN(3)
			src := randVec(rng, max(0, nc-1)*stride+w, -1, 1)
			coef := randVec(rng, nc, 0, 1)
			got := make([]float64, w)
			want := make([]float64, w)
			bandColsAny(got, src[:len(src):len(src)], stride, coef, false)
			bandColsAny(want, src, stride, coef, true)
			if err := approx.SlicesErr(got, want, 1e-15, 1e-14); err != nil {
				t.Fatalf("w=%d nc=%d: %v", w, nc, err)
			}
		}
	}
}

// TestIBPLatticeMatchesPlain compares the lattice fast path with the plain
// IBP loop (any kernel), and checks that it gives bit-identical results with
// one worker and with the package's worker count.
func TestIBPLatticeMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		shape   []int
		K       int
		weights bool
		iters   int
		tol     float64
	}{
		{[]int{5, 5, 7, 5, 2}, 6, false, 30, -1},
		{[]int{9, 9, 5}, 3, true, 20, -1},
		{[]int{20}, 2, false, 50, -1},
		{[]int{16, 12}, 5, true, 1000, 1e-9},
		{[]int{32, 21, 5}, 1, false, 10, -1},
		{[]int{4, 4, 4}, 6, false, 0, -1},
	} {
		t.Run(fmt.Sprintf("%v/K%d", tc.shape, tc.K), func(t *testing.T) {
			l := UniformLattice(1, tc.shape...)
			mus := bumps(rng, l, tc.K, 1e-2)
			var weights []float64
			if tc.weights {
				weights = randVec(rng, tc.K, 0.2, 1)
			}
			lk, err := NewLatticeKernel(l, 0.5)
			if err != nil {
				t.Fatal(err)
			}
			opt := BarycenterOptions{MaxIter: tc.iters, Tol: tc.tol}
			solve := func(plain bool, nw int) BarycenterResult {
				plainIBP, ibpWorkers = plain, nw
				defer func() { plainIBP, ibpWorkers = false, 0 }()
				r, err := NewWorkspace(lk, tc.K).Barycenter(nil, mus, weights, opt)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			want := solve(true, 0)
			got := solve(false, 0)
			one := solve(false, 1)
			approx.Slices(t, "fast vs plain", got.Barycenter, want.Barycenter, 1e-14, 1e-11)
			approx.Equal(t, "marginal error", got.MarginalError, want.MarginalError, 1e-14, 1e-6)
			if got.Iterations != want.Iterations || got.Converged != want.Converged {
				t.Errorf("iterations %d (converged %v), plain %d (%v)", got.Iterations, got.Converged, want.Iterations, want.Converged)
			}
			for i := range one.Barycenter {
				if math.Float64bits(one.Barycenter[i]) != math.Float64bits(got.Barycenter[i]) {
					t.Fatalf("1 worker differs from %d at %d: %v vs %v", workers(), i, one.Barycenter[i], got.Barycenter[i])
				}
			}
			if one.MarginalError != got.MarginalError || one.Iterations != got.Iterations {
				t.Errorf("1 worker: error %v after %d, %d workers: %v after %d", one.MarginalError, one.Iterations, workers(), got.MarginalError, got.Iterations)
			}
		})
	}
}

// TestIBPLatticeNoAllocs checks that a warm Barycenter call on a
// LatticeKernel allocates nothing.
func TestIBPLatticeNoAllocs(t *testing.T) {
	l := UniformLattice(1, 9, 9, 5)
	lk, err := NewLatticeKernel(l, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	mus := bumps(rand.New(rand.NewPCG(1, 1)), l, 6, 1e-2)
	w := NewWorkspace(lk, 6)
	dst := make([]float64, l.Len())
	opt := BarycenterOptions{MaxIter: 5, Tol: -1}
	if _, err := w.Barycenter(dst, mus, nil, opt); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(5, func() { w.Barycenter(dst, mus, nil, opt) }); a != 0 {
		t.Errorf("%v allocations per solve", a)
	}
}

// TestFMABand64MatchesBand32 checks the AVX-512 kernel against the AVX2 one
// bit for bit (each column is the same chain of FMAs), where both can run.
func TestFMABand64MatchesBand32(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, nb := range []int{1, 2, 5} {
		for nc := 1; nc <= 40; nc += 3 {
			stride := 64*nb + rng.IntN(5)
			src := randVec(rng, (nc-1)*stride+64*nb, -1, 1)
			coef := randVec(rng, nc, 0, 1)
			got := make([]float64, 64*nb)
			want := make([]float64, 64*nb)
			fmaBand64(&got[0], &src[0], stride, &coef[0], nc, nb)
			fmaBand32(&want[0], &src[0], stride, &coef[0], nc, 2*nb)
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("nb=%d nc=%d column %d: %v, AVX2 %v", nb, nc, i, got[i], want[i])
				}
			}
		}
	}
}

// TestSepEngineFused runs the engine and lattice IBP tests with every
// lattice on the fused path (fusedPasses, transposed writes) and blocks of a
// few columns, so that several blocks, a partial last block and in-place
// groups are exercised: the results must match the kernel and the plain
// loop as the unfused path does, and 1 and 2 workers bit for bit.
func TestSepEngineFused(t *testing.T) {
	defer func(m, b int) { fuseMinPoints, fuseBlockBytes = m, b }(fuseMinPoints, fuseBlockBytes)
	fuseMinPoints, fuseBlockBytes = 0, 256
	TestSepEngineMatchesKernel(t)
	TestIBPLatticeMatchesPlain(t)
	fuseBlockBytes = 4096
	TestSepEngineMatchesKernel(t)
	TestIBPLatticeMatchesPlain(t)
}
