package mdp

import (
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/cpuclock"
)

// kernelSystem returns the workspace's I − γP_π, with its ILU(0) factors,
// for the uniform policy on a banded MDP of S states (43,000, the size of
// CartPole's fine lattice, in the benchmarks; 2 actions, 4 successors
// each: rows of about 9 entries), a right-hand side, and the workspace.
func kernelSystem(tb testing.TB, S int) (*csr, []float64, *Workspace) {
	m := bandedForBench(S, 2, 4, 0.98)
	ws := NewWorkspace(m, Options{Workers: 1})
	tb.Cleanup(ws.Close)
	nt := ws.newton()
	ws.pi = NewPolicy(m)
	ws.build(ws.nt.a)
	ws.pi = nil
	if !nt.a.ilu0() {
		tb.Fatal("ILU(0) failed")
	}
	x := make([]float64, m.NumStates)
	for i := range x {
		x[i] = float64(i%7) - 3
	}
	return nt.a, x, ws
}

// BenchmarkSparseKernels times the serial kernels of the Newton solver's
// Krylov iterations on one core: the product with I − γP_π and the ILU(0)
// substitutions, per row of the matrix.
func BenchmarkSparseKernels(b *testing.B) {
	c, x, _ := kernelSystem(b, 43000)
	y := make([]float64, c.n)
	benchKernels(b, c,
		namedKernel{"mul", func() { c.mulRange(y, x, 0, c.n) }},
		namedKernel{"precond", func() { copy(y, x); c.precond(y) }})
}

// namedKernel is one kernel call of benchKernels.
type namedKernel struct {
	name string
	f    func()
}

// benchKernels times each kernel on each path, plain Go ("go") and
// assembly ("asm", where the CPU runs it), as sub-benchmarks path/name,
// in CPU nanoseconds per row of c.
func benchKernels(b *testing.B, c *csr, kernels ...namedKernel) {
	asm := useAsm
	defer func() { useAsm = asm }()
	for _, path := range []struct {
		name string
		on   bool
	}{{"go", false}, {"asm", true}} {
		if path.on && !asm {
			continue
		}
		useAsm = path.on
		for _, k := range kernels {
			b.Run(path.name+"/"+k.name, func(b *testing.B) {
				cpu0 := cpuclock.ProcessCPU()
				for b.Loop() {
					k.f()
				}
				b.ReportMetric(float64(cpuclock.ProcessCPU()-cpu0)/float64(b.N)/float64(c.n), "cpu-ns/row")
				b.ReportMetric(float64(c.ptr[c.n])/float64(c.n), "entries/row")
			})
		}
	}
}

// bandedForBench is mdptest.BandedMDP (which this package's internal tests
// cannot import): k successors of probability 1/k per pair, within ±100
// states.
func bandedForBench(S, A, k int, gamma float64) *MDP {
	rng := rand.New(rand.NewPCG(1, 2))
	b := NewBuilder(S, A)
	b.Gamma = gamma
	for s := range S {
		for a := range A {
			for range k {
				b.AddTransition(s, a, (s+rng.IntN(200)-100+S)%S, 1/float64(k))
			}
		}
	}
	m, err := b.Build()
	if err != nil {
		panic(err)
	}
	return m
}
