//go:build !amd64

package nn

// Off amd64 useAVX512 is false and these are never called.

func sgemm4x64(k int, a *float32, ars, acs int, b *float32, ldb int, c *float32, ldc int, acc int) {
	panic("nn: sgemm4x64 without AVX-512")
}

func sgemm4x16(k int, a *float32, ars, acs int, b *float32, ldb int, c *float32, ldc int, acc int, mask uint64) {
	panic("nn: sgemm4x16 without AVX-512")
}

func sgemm1x64(k int, a *float32, acs int, b *float32, ldb int, c *float32, acc int) {
	panic("nn: sgemm1x64 without AVX-512")
}

func sgemm1x16(k int, a *float32, acs int, b *float32, ldb int, c *float32, acc int, mask uint64) {
	panic("nn: sgemm1x16 without AVX-512")
}

func biasTanhAVX(y, b *float32, n, out int) { panic("nn: biasTanhAVX without AVX-512") }

func tanhGradAVX(n int, d, y *float32) { panic("nn: tanhGradAVX without AVX-512") }

func adamAVX(n int, p, grad, m, v *float32, k *[8]float32) { panic("nn: adamAVX without AVX-512") }

func sumSqAVX(n int, x *float32, p *[32]float64) { panic("nn: sumSqAVX without AVX-512") }

func transposeAVX(dst, src *float32, rows, cols int, idx *[16]int32) {
	panic("nn: transposeAVX without AVX-512")
}

func sgemm16x16(k int, a *float32, ars, acs int, b *float32, ldb int, c *float32, ldc int, acc int, mask uint64) {
	panic("nn: sgemm16x16 without AVX-512")
}

func a2gemm4x16(k int, a *float32, ars, acs int, b *float32, ldb int, c *float32, ldc int, acc int) {
	panic("nn: a2gemm4x16 without AVX2")
}

func a2gemm8x8(k int, a *float32, ars, acs int, b *float32, ldb int, c *float32, ldc int, acc int, mask *[8]int32) {
	panic("nn: a2gemm8x8 without AVX2")
}

func a2gemm1x8(k int, a *float32, acs int, b *float32, ldb int, c *float32, acc int, mask *[8]int32) {
	panic("nn: a2gemm1x8 without AVX2")
}

func a2biasTanh(y, b *float32, n, out int, mask *[8]int32) { panic("nn: a2biasTanh without AVX2") }

func a2tanhGrad(n int, d, y *float32) { panic("nn: a2tanhGrad without AVX2") }

func a2adam(n int, p, grad, m, v *float32, k *[8]float32) { panic("nn: a2adam without AVX2") }

func a2sumSq(n int, x *float32, p *[32]float64) { panic("nn: a2sumSq without AVX2") }

func a2transpose(dst, src *float32, rows, cols int, idx *[8]int32) {
	panic("nn: a2transpose without AVX2")
}
