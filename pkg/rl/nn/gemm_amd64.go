package nn

import "golang.org/x/sys/cpu"

// useFMA selects the AVX2/FMA micro-kernel; results then differ in the last
// bits from the portable path (fused multiply-add rounds once), but are the
// same on every run on the same kind of CPU.
var useFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// useAVX512 selects kern4x16 for whole 16-column blocks; it sums in the same
// order as kern4x8, so results are identical with or without it.
var useAVX512 = useFMA && cpu.X86.HasAVX512F

// kern4x16 adds the 4×16 block A[0:4, 0:k]·B[0:k, 0:16] to C like kern4x8, with AVX-512.
//
//go:noescape
func kern4x16(k int, a *float64, ars, acs int, b *float64, ldb int, c *float64, ldc int)

// kern4x8 adds the 4×8 block A[0:4, 0:k]·B[0:k, 0:8] to C (see gemmAcc for the layout).
//
//go:noescape
func kern4x8(k int, a *float64, ars, acs int, b *float64, ldb int, c *float64, ldc int)

// tanh4 replaces the first len(x)&^3 entries of x by their hyperbolic tangent
// with AVX2/FMA (absolute error below 1e-15, see TestTanh4).
//
//go:noescape
func tanh4(x []float64)

// axpyRows adds a[l*acs]·b[l*ldb : l*ldb+n] to c[0:n] for l = 0, …, k-1 in
// order, with separately rounded products and sums (no FMA), so that it
// matches the plain Go loop bit for bit; n must be a multiple of 4 and k ≥ 1.
//
//go:noescape
func axpyRows(k int, a *float64, acs int, b *float64, ldb int, c *float64, n int)

// adamStep applies the Adam update of Adam.Step to the first n (a multiple of
// 4) entries, with k = {β1, 1-β1, β2, 1-β2, step, √bc2, ε}, rounding exactly
// as the Go loop does.
//
//go:noescape
func adamStep(n int, p, grad, m, v *float64, k *[7]float64)

// tanhGrad multiplies d[i] by 1 - y[i]² for i < n (a multiple of 4), rounding
// each operation as the Go loop does.
//
//go:noescape
func tanhGrad(n int, d, y *float64)

// tanh16 is tanh4 with AVX-512 for the first len(x)&^15 entries, rounding identically.
//
//go:noescape
func tanh16(x []float64)

// dots4 sets dst[r] to the dot product of the k-vectors a_r and b_r,
// r = 0..3, rounding exactly as gonum's f64.DotUnitary (see gemmNT).
//
//go:noescape
func dots4(k int, a0, a1, a2, a3, b0, b1, b2, b3 *float64, dst *[4]float64)
