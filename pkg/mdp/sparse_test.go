package mdp

import (
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// testCSR builds a csr from a dense matrix, keeping entries where keep is true (and the diagonal).
func testCSR(d *mat.Dense, keep func(i, j int) bool) *csr {
	n, _ := d.Dims()
	var cols []int32
	var vals []float64
	ptr := []int{0}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j || keep(i, j) {
				cols, vals = append(cols, int32(j)), append(vals, d.At(i, j))
			}
		}
		ptr = append(ptr, len(cols))
	}
	c := newCSR(n, len(cols))
	copy(c.ptr, ptr)
	copy(c.col, cols)
	copy(c.val, vals)
	c.findDiag(0, n)
	return c
}

// randomSystem returns I − γP for a random row-stochastic P whose nonzeros lie where keep says.
func randomSystem(rng *rand.Rand, n int, gamma float64, keep func(i, j int) bool) *mat.Dense {
	a := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		sum := 0.0
		row := make([]float64, n)
		for j := 0; j < n; j++ {
			if keep(i, j) {
				row[j] = rng.Float64()
				sum += row[j]
			}
		}
		for j := 0; j < n; j++ {
			v := 0.0
			if sum > 0 {
				v = -gamma * row[j] / sum
			}
			if i == j {
				v++
			}
			a.Set(i, j, v)
		}
	}
	return a
}

func denseSolve(t *testing.T, a *mat.Dense, b []float64) []float64 {
	var x mat.VecDense
	if err := x.SolveVec(a, mat.NewVecDense(len(b), append([]float64(nil), b...))); err != nil {
		t.Fatal(err)
	}
	return x.RawVector().Data
}

func randomVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// TestILU0IsExactWithoutFill: when the pattern holds every fill-in position
// (a dense pattern, or a tridiagonal matrix, whose LU creates no fill),
// ILU(0) is the LU factorization, so the preconditioner solves the system.
func TestILU0IsExactWithoutFill(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for name, keep := range map[string]func(i, j int) bool{
		"dense":       func(i, j int) bool { return true },
		"tridiagonal": func(i, j int) bool { return j == i-1 || j == i+1 },
	} {
		n := 12
		a := randomSystem(rng, n, 0.99, keep)
		c := testCSR(a, keep)
		if !c.ilu0() {
			t.Fatalf("%s: zero pivot", name)
		}
		b := randomVec(rng, n)
		want := denseSolve(t, a, b)
		x := append([]float64(nil), b...)
		c.precond(x)
		if d := floats.Distance(x, want, 2); d > 1e-10*floats.Norm(want, 2) {
			t.Errorf("%s: (LU)⁻¹b differs from A⁻¹b by %g", name, d)
		}
	}
}

// TestGMRESSolvesSparseSystem: on a sparse nonsymmetric I − γP (ILU(0) is
// then inexact), preconditioned and plain GMRES(m) with restarts reach the
// requested relative residual, checked against a dense solve.
func TestGMRESSolvesSparseSystem(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	n := 150
	keep := func(i, j int) bool { return (j-i+n)%n == 1 || (j-i+n)%n == 7 || (i*31+j*17)%23 == 0 }
	a := randomSystem(rng, n, 0.99, keep)
	c := testCSR(a, keep)
	if !c.ilu0() {
		t.Fatal("zero pivot")
	}
	mul := func(y, x []float64) { c.mulRange(y, x, 0, n) }
	b := randomVec(rng, n)
	want := denseSolve(t, a, b)
	for _, tc := range []struct {
		name    string
		prec    func([]float64)
		restart int
	}{{"ilu0", c.precond, 30}, {"ilu0 restart 3", c.precond, 3}, {"none", func([]float64) {}, 30}} {
		kr := newGMRES(tc.restart, n)
		x := make([]float64, n)
		mv, rel := kr.solve(tc.prec, mul, x, b, nil, 1e-10, 5000)
		r := make([]float64, n)
		mul(r, x)
		floats.Sub(r, b)
		if trueRel := floats.Norm(r, 2) / floats.Norm(b, 2); rel > 1e-10 || trueRel > 1e-9 {
			t.Errorf("%s: reported residual %g, true %g after %d products", tc.name, rel, trueRel, mv)
		}
		if d := floats.Distance(x, want, 2); d > 1e-6*floats.Norm(want, 2) {
			t.Errorf("%s: solution off by %g", tc.name, d)
		}
		t.Logf("%s: %d products", tc.name, mv)
		// Given A·x for the start (here x = 0), the solve skips that product
		// and does the same arithmetic otherwise.
		x0 := make([]float64, n)
		mv0, rel0 := kr.solve(tc.prec, mul, x0, b, kr.zero, 1e-10, 5000)
		if mv0 != mv-1 || rel0 != rel || !slices.Equal(x0, x) {
			t.Errorf("%s: with A·x given, %d products (want %d), residual %g (want %g), same x %v", tc.name, mv0, mv-1, rel0, rel, slices.Equal(x0, x))
		}
	}
}

func TestTransposeOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	n := 9
	keep := func(i, j int) bool { return (i+2*j)%4 == 0 }
	a := randomSystem(rng, n, 0.9, keep)
	c := testCSR(a, keep)
	tr := newCSR(n, c.ptr[n])
	tr.transposeOf(c)
	want := testCSR(mat.DenseCopyOf(a.T()), func(i, j int) bool { return keep(j, i) })
	if !slices.Equal(tr.ptr, want.ptr) || !slices.Equal(tr.col, want.col) || !slices.Equal(tr.val, want.val) || !slices.Equal(tr.diag, want.diag) {
		t.Fatalf("transpose differs:\n got %v %v %v\nwant %v %v %v", tr.ptr, tr.col, tr.val, want.ptr, want.col, want.val)
	}
}
