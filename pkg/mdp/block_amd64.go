package mdp

import "golang.org/x/sys/cpu"

// useAsm selects the assembly Krylov kernels (on any CPU with AVX) (kernels_amd64.s: AVX for
// blocks, SSE2 for single vectors), which round exactly as the Go loops of
// block.go, sparse.go and ell.go: the same results, bit for bit
// (TestBlockKernelsAVXMatchGo, TestILU0MatchesCSR).
var useAsm = cpu.X86.HasAVX

//go:noescape
func mulBlockAVX(y, x *blk, ptr *int, col *int32, val *float64, n int)

//go:noescape
func precondBlockAVX(x *blk, lu *float64, col *int32, ptr *int, diag *int, inv *float64, n int)

//go:noescape
func blockDotsAVX(dst, x, y *blk, n int)

//go:noescape
func mulRowsAsm(y, x *float64, ptr *int, col *int32, val *float64, n int)

//go:noescape
func precondAsm(x *float64, lu *float64, col *int32, ptr *int, diag *int, inv *float64, n int)

//go:noescape
func blockAddScaledAVX(y, a, x *blk, n int)

//go:noescape
func ellForwardAsm(x *float64, col *int32, val *float64, lo, hi int)

//go:noescape
func ellBackwardAsm(x *float64, col *int32, val *float64, inv *float64, lo, hi int)

//go:noescape
func blockAxpyDotsAVX(dst, w, a, v, u *blk, n int)

//go:noescape
func mulBlock32AVX(y, x *blk32, ptr *int, col *int32, val *float32, n int)

//go:noescape
func precondBlock32AVX(x *blk32, lu *float32, col *int32, ptr *int, diag *int, inv *float32, n int)

//go:noescape
func blockDots32AVX(dst *lanes, x, y *blk32, n int)

//go:noescape
func blockAddScaled32AVX(y, a, x *blk32, n int)

//go:noescape
func blockAxpyDots32AVX(dst *lanes, w, a, v, u *blk32, n int)

//go:noescape
func blockScaleTwo32AVX(v, u, w, a *blk32, n int)
