//go:build !amd64

package nn

// useFMA is false off amd64: every product goes through gonum or plain Go.
var useFMA = false

func kern4x8(k int, a *float64, ars, acs int, b *float64, ldb int, c *float64, ldc int) {
	panic("nn: kern4x8 without FMA")
}

func tanh4(x []float64) { panic("nn: tanh4 without FMA") }
