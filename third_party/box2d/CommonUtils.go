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
	return math.Max(x, y)
}

// minf is math.Min, bit for bit, with the common case inlined.
func minf(x, y float64) float64 {
	if x < y {
		return x
	}
	if y < x {
		return y
	}
	return math.Min(x, y)
}
