//go:build !amd64

package nn

// useFMA is false off amd64: every product goes through gonum or plain Go.
var useFMA = false

// useAVX512 is false off amd64.
var useAVX512 = false

func kern4x16(k int, a *float64, ars, acs int, b *float64, ldb int, c *float64, ldc int) {
	panic("nn: kern4x16 without AVX-512")
}

func kern4x8(k int, a *float64, ars, acs int, b *float64, ldb int, c *float64, ldc int) {
	panic("nn: kern4x8 without FMA")
}

func tanh4(x []float64) { panic("nn: tanh4 without FMA") }

func axpyRows(k int, a *float64, acs int, b *float64, ldb int, c *float64, n int) {
	panic("nn: axpyRows without AVX")
}

func adamStep(n int, p, grad, m, v *float64, k *[7]float64) { panic("nn: adamStep without AVX") }

func tanhGrad(n int, d, y *float64) { panic("nn: tanhGrad without AVX") }

func tanh16(x []float64) { panic("nn: tanh16 without AVX-512") }

func dots4(k int, a0, a1, a2, a3, b0, b1, b2, b3 *float64, dst *[4]float64) {
	panic("nn: dots4 without AVX")
}
