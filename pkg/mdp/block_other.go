//go:build !amd64

package mdp

// useAsm is false off amd64: the Krylov kernels run as plain Go.
var useAsm = false

func mulBlockAVX(y, x *blk, ptr *int, col *int32, val *float64, n int) {
	panic("mdp: mulBlockAVX without AVX")
}

func precondBlockAVX(x *blk, lu *float64, col *int32, ptr *int, diag *int, inv *float64, n int) {
	panic("mdp: precondBlockAVX without AVX")
}

func blockDotsAVX(dst, x, y *blk, n int) { panic("mdp: blockDotsAVX without AVX") }

func mulRowsAsm(y, x *float64, ptr *int, col *int32, val *float64, n int) {
	panic("mdp: mulRowsAsm off amd64")
}

func precondAsm(x *float64, lu *float64, col *int32, ptr *int, diag *int, inv *float64, n int) {
	panic("mdp: precondAsm off amd64")
}

func blockAddScaledAVX(y, a, x *blk, n int) { panic("mdp: blockAddScaledAVX without AVX") }

func ellForwardAsm(x *float64, col *int32, val *float64, lo, hi int) {
	panic("mdp: ellForwardAsm off amd64")
}

func ellBackwardAsm(x *float64, col *int32, val *float64, inv *float64, lo, hi int) {
	panic("mdp: ellBackwardAsm off amd64")
}

func blockAxpyDotsAVX(dst, w, a, v, u *blk, n int) { panic("mdp: blockAxpyDotsAVX without AVX") }

func mulBlock32AVX(y, x *blk32, ptr *int, col *int32, val *float32, n int) {
	panic("mdp: mulBlock32AVX without AVX")
}

func precondBlock32AVX(x *blk32, lu *float32, col *int32, ptr *int, diag *int, inv *float32, n int) {
	panic("mdp: precondBlock32AVX without AVX")
}

func blockDots32AVX(dst *lanes, x, y *blk32, n int) { panic("mdp: blockDots32AVX without AVX") }

func blockAddScaled32AVX(y, a, x *blk32, n int) { panic("mdp: blockAddScaled32AVX without AVX") }

func blockAxpyDots32AVX(dst *lanes, w, a, v, u *blk32, n int) {
	panic("mdp: blockAxpyDots32AVX without AVX")
}

func blockScaleTwo32AVX(v, u, w, a *blk32, n int) { panic("mdp: blockScaleTwo32AVX without AVX") }
