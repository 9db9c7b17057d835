package mdp

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refILU0 is ILU(0) as the plain csr loop computes it (row-wise IKJ
// elimination restricted to the pattern, an update skipped when the
// column is outside row i's pattern): the reference for ilu0.
func refILU0(c *csr) (lu, inv []float64) {
	nnz := c.ptr[c.n]
	lu, inv = append([]float64(nil), c.val[:nnz]...), make([]float64, c.n)
	mark := make([]int, c.n)
	for i := range mark {
		mark[i] = -1
	}
	for i := 0; i < c.n; i++ {
		for p := c.ptr[i]; p < c.ptr[i+1]; p++ {
			mark[c.col[p]] = p
		}
		for p := c.ptr[i]; p < c.diag[i]; p++ {
			k := int(c.col[p])
			l := lu[p] / lu[c.diag[k]]
			lu[p] = l
			if l == 0 {
				continue
			}
			for q := c.diag[k] + 1; q < c.ptr[k+1]; q++ {
				if m := mark[c.col[q]]; m >= 0 {
					lu[m] -= float64(l * lu[q])
				}
			}
		}
		for p := c.ptr[i]; p < c.ptr[i+1]; p++ {
			mark[c.col[p]] = -1
		}
		inv[i] = 1 / lu[c.diag[i]]
	}
	return lu, inv
}

// refPrecond is (LU)⁻¹x by the plain csr loops over the factors lu, inv.
func refPrecond(c *csr, lu, inv, x []float64) {
	for i := 0; i < c.n; i++ {
		acc := x[i]
		for p := c.ptr[i]; p < c.diag[i]; p++ {
			acc -= float64(lu[p] * x[c.col[p]])
		}
		x[i] = acc
	}
	for i := c.n - 1; i >= 0; i-- {
		acc := x[i]
		for p := c.diag[i] + 1; p < c.ptr[i+1]; p++ {
			acc -= float64(lu[p] * x[c.col[p]])
		}
		x[i] = acc * inv[i]
	}
}

// variedSystem returns I − γP_π for a random policy on an MDP of 3 actions
// whose pairs have 1 to maxSucc successors within ±40 states, with ILU(0)
// computed: with maxSucc 9 rows hold up to 30 entries and most of their
// parts below and above the diagonal run past ellWidth; with maxSucc 4
// a few do.
func variedSystem(t *testing.T, S, maxSucc int) *csr {
	rng := rand.New(rand.NewPCG(11, 12))
	b := NewBuilder(S, 3)
	b.Gamma = 0.97
	for s := range S {
		for a := range 3 {
			k := 1 + rng.IntN(maxSucc)
			for range k {
				b.AddTransition(s, a, (s+rng.IntN(81)-40+S)%S, 1/float64(k))
			}
		}
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ws := NewWorkspace(m, Options{Workers: 1})
	t.Cleanup(ws.Close)
	nt := ws.newton()
	pi := NewPolicy(m)
	for s := range S {
		w := [3]float64{rng.Float64(), rng.Float64(), rng.Float64()}
		if rng.IntN(4) == 0 {
			w[rng.IntN(3)] = 0 // an action dropped from the row
		}
		sum := w[0] + w[1] + w[2]
		for a := range 3 {
			pi.Prob[s*3+a] = w[a] / sum
		}
	}
	ws.pi = pi
	ws.build(ws.nt.a)
	ws.pi = nil
	if !nt.a.ilu0() {
		t.Fatal("ILU(0) failed")
	}
	return nt.a
}

// TestILU0MatchesCSR: ilu0, which sends updates outside the pattern to a
// spare entry and, when it lays the factors out in fixed-width rows, reads
// earlier rows from that layout, gives the plain loop's factors bit for
// bit, and the substitutions give the plain loops' result bit for bit on
// inputs of every sign and scale, zeros of both signs included. Both
// layouts are checked — rows with few long parts (fixed-width, the long
// ones finished from the csr) and with mostly long ones (csr) — and the
// substitutions on both paths, plain Go and (where the CPU runs it)
// assembly.
func TestILU0MatchesCSR(t *testing.T) {
	hasAsm := useAsm
	t.Cleanup(func() { useAsm = hasAsm })
	for _, k := range []int{4, 9} {
		c := variedSystem(t, 2000, k)
		long, short := 0, 0
		for i := range c.n {
			for _, n := range []int{c.diag[i] - c.ptr[i], c.ptr[i+1] - c.diag[i] - 1} {
				if n > ellWidth {
					long++
				} else if n < ellWidth {
					short++
				}
			}
		}
		if long == 0 || short == 0 || c.ell != (k == 4) {
			t.Fatalf("successors ≤ %d: row parts %d longer than %d and %d shorter, fixed-width layout %v; want both kinds, the layout for 4 only", k, long, ellWidth, short, c.ell)
		}
		checkILU0(t, c, hasAsm)
	}
}

func checkILU0(t *testing.T, c *csr, hasAsm bool) {
	t.Helper()
	lu, inv := refILU0(c)
	for p := range lu {
		if math.Float64bits(c.lu[p]) != math.Float64bits(lu[p]) {
			t.Fatalf("entry %d: ilu0 %v, reference %v", p, c.lu[p], lu[p])
		}
	}
	for i := range inv {
		if math.Float64bits(c.inv[i]) != math.Float64bits(inv[i]) {
			t.Fatalf("1/U(%d,%d): ilu0 %v, reference %v", i, i, c.inv[i], inv[i])
		}
	}
	rng := rand.New(rand.NewPCG(13, 14))
	for trial := range 5 {
		x := make([]float64, c.n)
		for i := range x {
			switch rng.IntN(6) {
			case 0:
				x[i] = 0
			case 1:
				x[i] = math.Copysign(0, -1)
			default:
				x[i] = rng.NormFloat64() * math.Exp(4*rng.NormFloat64())
			}
		}
		if trial == 0 {
			clear(x) // all +0
		}
		want := append([]float64(nil), x...)
		refPrecond(c, lu, inv, want)
		for _, asm := range []bool{false, true} {
			if asm && !hasAsm {
				continue
			}
			useAsm = asm
			got := append([]float64(nil), x...)
			c.precond(got)
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("trial %d, row %d (assembly %v): substitutions %v, reference %v", trial, i, asm, got[i], want[i])
				}
			}
		}
		useAsm = hasAsm
	}
}
