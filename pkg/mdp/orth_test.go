package mdp

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLaneKernelsAsmMatchGo: dotLanes and axpyDot give the same bits with
// the assembly kernels as with the Go loops, on lengths with and without
// a tail of fewer than eight, entries of every sign and zeros of both
// signs, u distinct from w and u = w (the norm after the last update);
// and they are the dot product and the update they claim, against a
// plain loop (the update exactly, the sums within rounding).
func TestLaneKernelsAsmMatchGo(t *testing.T) {
	hasAsm := useAsm
	t.Cleanup(func() { useAsm = hasAsm })
	rng := rand.New(rand.NewPCG(11, 12))
	vec := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			switch rng.IntN(20) {
			case 0:
				x[i] = 0
			case 1:
				x[i] = math.Copysign(0, -1)
			default:
				x[i] = rng.NormFloat64() * math.Exp(3*rng.NormFloat64())
			}
		}
		return x
	}
	paths := []bool{false}
	if hasAsm {
		paths = append(paths, true)
	}
	for _, n := range []int{0, 1, 7, 8, 9, 64, 1003} {
		x, y, v, u := vec(n), vec(n), vec(n), vec(n)
		a := rng.NormFloat64()
		var dots, upd [2]float64
		var ws [2][]float64
		for p, asm := range paths {
			useAsm = asm
			dots[p] = dotLanes(x, y)
			w := append([]float64(nil), x...)
			upd[p] = axpyDot(w, a, v, u)
			w2 := append([]float64(nil), x...)
			norm := axpyDot(w2, a, v, w2)
			ws[p] = w
			// the plain loop's numbers
			var dot, abs, dotU, absU, nn float64
			for k := range n {
				dot += x[k] * y[k]
				abs += math.Abs(x[k] * y[k])
				wk := x[k] + float64(a*v[k])
				if math.Float64bits(w[k]) != math.Float64bits(wk) || math.Float64bits(w2[k]) != math.Float64bits(wk) {
					t.Fatalf("n=%d asm=%v: w[%d] = %v, want %v", n, asm, k, w[k], wk)
				}
				dotU += wk * u[k]
				absU += math.Abs(wk * u[k])
				nn += wk * wk
			}
			tol := func(scale float64) float64 { return 1e-14*scale + 1e-300 }
			if math.Abs(dots[p]-dot) > tol(abs) || math.Abs(upd[p]-dotU) > tol(absU) || math.Abs(norm-nn) > tol(nn) {
				t.Fatalf("n=%d asm=%v: dot %v (loop %v), update's dot %v (loop %v), norm² %v (loop %v)", n, asm, dots[p], dot, upd[p], dotU, norm, nn)
			}
		}
		if len(paths) == 2 {
			if math.Float64bits(dots[0]) != math.Float64bits(dots[1]) || math.Float64bits(upd[0]) != math.Float64bits(upd[1]) {
				t.Fatalf("n=%d: Go and assembly sums differ: %v %v, %v %v", n, dots[0], dots[1], upd[0], upd[1])
			}
		}
	}
}
