//go:build !amd64

package ot

// hasFMA is false off amd64: the portable passes are used.
var hasFMA = false

// hasAVX512 is false off amd64.
var hasAVX512 = false

func fmaBand64(out *float64, src *float64, stride int, coef *float64, ncoef int, nblk int) {
	panic("ot: fmaBand64 without amd64")
}

func fmaBand32(out *float64, src *float64, stride int, coef *float64, ncoef int, nblk int) {
	panic("ot: fmaBand32 without amd64")
}

func fmaBand16(out *float64, src *float64, stride int, coef *float64, ncoef int) {
	panic("ot: fmaBand16 without amd64")
}

func fmaBand4(out *float64, src *float64, stride int, coef *float64, ncoef int, nvec int) {
	panic("ot: fmaBand4 without amd64")
}
