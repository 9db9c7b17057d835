package box2d

import "math"

func MinInt(x, y int) int {
	if x < y {
		return x
	}
	return y
}

func MaxInt(x, y int) int {
	if x > y {
		return x
	}
	return y
}

func AbsInt(v int) int {
	if v < 0 {
		return v * -1
	}

	return v
}

// maxf is math.Max, bit for bit (NaN, ±Inf and ±0 included), with the
// common case inlined (fedirl fork: math.Max is an assembly call on amd64,
// which cost a sixth of a LunarLander step in the joint solvers' clamps).
func maxf(x, y float64) float64 {
	if x > y {
		return x
	}
	if y > x {
		return y
	}
	return mathMax(x, y)
}

// mathMax and mathMin keep math.Max and math.Min's special cases out of
// maxf and minf, so that those are inlined.
//
//go:noinline
func mathMax(x, y float64) float64 { return math.Max(x, y) }

//go:noinline
func mathMin(x, y float64) float64 { return math.Min(x, y) }

// minf is math.Min, bit for bit, with the common case inlined.
func minf(x, y float64) float64 {
	if x < y {
		return x
	}
	if y < x {
		return y
	}
	return mathMin(x, y)
}

// sinCos is (math.Sin(x), math.Cos(x)), bit for bit, from one math.Sincos
// call (fedirl fork: the same argument reduction and polynomials as Sin
// and Cos, done once; TestSinCosMatchesSinAndCos). A NaN goes to Sin and
// Cos, which keep its payload where Sincos does not.
func sinCos(x float64) (float64, float64) {
	if x != x {
		return math.Sin(x), math.Cos(x)
	}
	return math.Sincos(x)
}
