package nn

import "golang.org/x/sys/cpu"

// useFMA selects the AVX2/FMA micro-kernel; results then differ in the last
// bits from the portable path (fused multiply-add rounds once), but are the
// same on every run on the same kind of CPU.
var useFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kern4x8 adds the 4×8 block A[0:4, 0:k]·B[0:k, 0:8] to C (see gemmAcc for the layout).
//
//go:noescape
func kern4x8(k int, a *float64, ars, acs int, b *float64, ldb int, c *float64, ldc int)

// tanh4 replaces the first len(x)&^3 entries of x by their hyperbolic tangent
// with AVX2/FMA (absolute error below 1e-15, see TestTanh4).
//
//go:noescape
func tanh4(x []float64)
