package ot

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
)

// bumps returns K random smooth-ish positive measures on l (Gaussian bumps
// plus a floor), unnormalized.
func bumps(rng *rand.Rand, l Lattice, K int, floor float64) [][]float64 {
	n := l.Len()
	idx := make([]int, len(l.Axes))
	out := make([][]float64, K)
	for k := range out {
		c := make([]float64, len(l.Axes))
		for a := range c {
			c[a] = rng.Float64() * float64(l.Axes[a].Len()-1)
		}
		m := make([]float64, n)
		for i := range m {
			l.Index(idx, i)
			var d2 float64
			for a := range c {
				d := float64(idx[a]) - c[a]
				d2 += d * d
			}
			m[i] = math.Exp(-d2/4) + floor
		}
		out[k] = m
	}
	return out
}

// marginalErrors recomputes, independently of the solver's bookkeeping, how
// far the barycenter's own mass is from 1 and how it differs between methods.
func sum(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s
}

// TestBarycenterMarginals checks that each method reaches the requested
// tolerance and returns a finite probability vector.
func TestBarycenterMarginals(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 1))
	for _, tc := range []struct {
		shape  []int
		method Method
		eps    float64
		tol    float64
	}{
		{[]int{30}, IBP, 0.5, 1e-10},
		{[]int{12, 10}, IBP, 0.5, 1e-9},
		{[]int{6, 5, 4}, IBP, 1, 1e-9},
		{[]int{12, 10}, Stabilized, 0.5, 1e-9},
		{[]int{6, 5, 4}, Stabilized, 0.2, 1e-9},
	} {
		t.Run(fmt.Sprintf("%v/%v/eps%g", tc.method, tc.shape, tc.eps), func(t *testing.T) {
			l := UniformLattice(1, tc.shape...)
			mus := bumps(rng, l, 3, 1e-3)
			r, err := LatticeBarycenter(l, mus, []float64{0.2, 0.3, 0.5}, BarycenterOptions{Eps: tc.eps, Method: tc.method, Tol: tc.tol, MaxIter: 20000})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Converged || !(r.MarginalError < tc.tol) {
				t.Fatalf("not converged: %d iterations, marginal error %.3g", r.Iterations, r.MarginalError)
			}
			approx.Equal(t, "mass", sum(r.Barycenter), 1, 10*tc.tol, 0)
			t.Logf("%d iterations, marginal error %.3g", r.Iterations, r.MarginalError)
		})
	}
}

// TestBarycenterScalingVsLog checks that IBP and its log-domain form agree.
func TestBarycenterScalingVsLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1))
	for _, eps := range []float64{5, 1, 0.5, 0.2} {
		t.Run(fmt.Sprint("eps", eps), func(t *testing.T) {
			l := Lattice{Axes: []Axis{UniformAxis(9, 1), PeriodicAxis(8, 8), CategoricalAxis(3)}}
			mus := bumps(rng, l, 4, 1e-4)
			opt := BarycenterOptions{Eps: eps, Tol: 1e-12, MaxIter: 50000}
			a, err := LatticeBarycenter(l, mus, nil, opt)
			if err != nil {
				t.Fatal(err)
			}
			opt.Method = Stabilized
			b, err := LatticeBarycenter(l, mus, nil, opt)
			if err != nil {
				t.Fatal(err)
			}
			approx.Slices(t, "IBP vs stabilized", a.Barycenter, b.Barycenter, 1e-10, 0)
		})
	}
}

// TestBarycenterMethodsConverge checks Debiased and Paper reach their
// tolerance, and that Paper (a different algorithm with the same fixed point)
// reaches IBP's barycenter.
func TestBarycenterMethodsConverge(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 1))
	l := UniformLattice(0.5, 10, 8)
	mus := bumps(rng, l, 3, 1e-3)
	w := []float64{0.5, 0.3, 0.2}
	ref, err := LatticeBarycenter(l, mus, w, BarycenterOptions{Tol: 1e-12, MaxIter: 100000})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opt  BarycenterOptions
		same bool // expected to equal the IBP barycenter
	}{
		{"paper-default", BarycenterOptions{Method: Paper, Tol: 1e-11, MaxIter: 5000}, true},
		{"paper-momentum-0.3", BarycenterOptions{Method: Paper, Tol: 1e-11, MaxIter: 5000, Momentum: 0.3, StepSize: 0.15}, true},
		{"paper-ibp-equivalent", BarycenterOptions{Method: Paper, Tol: 1e-11, MaxIter: 100000, Momentum: -1, InnerIter: 1, StepSize: 1}, true},
		{"paper-log", BarycenterOptions{Method: Paper, Tol: 1e-11, MaxIter: 5000, LogDomain: true}, true},
		{"debiased", BarycenterOptions{Method: Debiased, Tol: 1e-10, MaxIter: 100000}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := LatticeBarycenter(l, mus, w, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Converged {
				t.Fatalf("not converged: %d iterations, marginal error %.3g", r.Iterations, r.MarginalError)
			}
			t.Logf("%d iterations, marginal error %.3g", r.Iterations, r.MarginalError)
			approx.Equal(t, "mass", sum(r.Barycenter), 1, 1e-8, 0)
			if tc.same {
				approx.Slices(t, "vs IBP", r.Barycenter, ref.Barycenter, 1e-9, 0)
			}
			if tc.opt.Method == Debiased {
				o := tc.opt
				o.LogDomain = true
				rl, err := LatticeBarycenter(l, mus, w, o)
				if err != nil {
					t.Fatal(err)
				}
				approx.Slices(t, "debiased log vs scaling", rl.Barycenter, r.Barycenter, 1e-9, 0)
			}
		})
	}
}

// TestBarycenterNoAllocs checks that a solve with a caller-provided dst
// allocates nothing, on lattices large enough to use the worker pool.
func TestBarycenterNoAllocs(t *testing.T) {
	for _, tc := range []struct {
		shape []int
		m     Method
	}{
		{[]int{32, 32, 32}, IBP}, {[]int{32, 32, 32}, Debiased}, {[]int{32, 32, 32}, Paper},
		{[]int{24, 24, 24}, Stabilized},
	} {
		l := UniformLattice(1, tc.shape...)
		k, err := NewLatticeKernel(l, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		mus := bumps(rand.New(rand.NewPCG(10, 1)), l, 3, 1e-3)
		w := NewWorkspace(k, 3)
		dst := make([]float64, l.Len())
		opt := BarycenterOptions{Method: tc.m, MaxIter: 2, Tol: -1, InnerIter: 2}
		if _, err := w.Barycenter(dst, mus, nil, opt); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(2, func() {
			if _, err := w.Barycenter(dst, mus, nil, opt); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 0 {
			t.Errorf("%v: %.1f allocations per solve", tc.m, allocs)
		}
	}
}

// TestBarycenterDeterministicAcrossWorkers checks that results are bitwise
// identical whether the passes run on one worker or all of them.
func TestBarycenterDeterministicAcrossWorkers(t *testing.T) {
	l := UniformLattice(1, 16, 16, 24)
	mus := bumps(rand.New(rand.NewPCG(12, 1)), l, 3, 1e-3)
	run := func() [][]float64 {
		var out [][]float64
		for _, m := range []Method{IBP, Stabilized, Debiased, Paper} {
			r, err := LatticeBarycenter(l, mus, []float64{0.2, 0.3, 0.5}, BarycenterOptions{Method: m, MaxIter: 5, Tol: -1})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, append(r.Barycenter, r.MarginalError))
		}
		return out
	}
	sameWithOneWorker(t, run)
}

func TestWorkspaceRefusesForeignEps(t *testing.T) {
	l := UniformLattice(1, 4, 3)
	k, err := NewLatticeKernel(l, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWorkspace(k, 2)
	mu := [][]float64{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}}
	for _, tc := range []struct {
		opt BarycenterOptions
		ok  bool
	}{
		{BarycenterOptions{}, true},
		{BarycenterOptions{Eps: 0.5, AbsoluteEps: true}, true},
		{BarycenterOptions{Eps: 0.1, AbsoluteEps: true}, false},
		{BarycenterOptions{Eps: 0.5}, false},
	} {
		_, err := w.Barycenter(nil, mu, nil, tc.opt)
		if (err == nil) != tc.ok {
			t.Errorf("opt %+v: err = %v, want ok=%v", tc.opt, err, tc.ok)
		}
	}
}

func TestMethodText(t *testing.T) {
	for m := IBP; m <= Paper; m++ {
		b, _ := m.MarshalText()
		var got Method
		if err := got.UnmarshalText(b); err != nil || got != m {
			t.Fatalf("%v round-trips to %v, %v", m, got, err)
		}
	}
	var m Method
	if err := m.UnmarshalText([]byte("sinkhorn")); err == nil {
		t.Fatal("unknown method name accepted")
	}
}

// sameWithOneWorker checks that run gives the same bits with every worker
// and with one (per method, the barycenter and its marginal error).
func sameWithOneWorker(t *testing.T, run func() [][]float64) {
	t.Helper()
	w := workers()
	all := run()
	nWorkers = 1
	one := run()
	nWorkers = w
	for i := range all {
		for j := range all[i] {
			if all[i][j] != one[i][j] {
				t.Fatalf("method %d entry %d: %v with %d workers, %v with 1", i, j, all[i][j], w, one[i][j])
			}
		}
	}
}
