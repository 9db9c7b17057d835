// Package box2d32 is third_party/box2d (the project's fork of ByteArena's
// Go port of Box2D 2.3) computing in float32, as Box2D's C++ core and so
// pybox2d compute: generated from ../box2d by gen.sh (float64 → float32,
// math calls through the float32 helpers of this file, and Box2D 2.3's
// b2_epsilon (FLT_EPSILON), b2_maxPolygonVertices (16), b2Sweep::Advance
// and AABB skin radius where ByteArena's port of 2017's master differs;
// see ../box2d/README.md), so that a Gymnasium Box2D environment can be
// reproduced to the last bit where the float64 port drifts by float32
// rounding from the first step: BipedalWalker replays Gymnasium's 16
// reference episodes bit for bit. Only this file and gen.sh are written by
// hand.
package box2d32

import "math"

// The float32 versions of the math functions the port calls. Box2D C++
// calls sinf, cosf, atan2f, sqrtf, floorf, expf. sqrtf and floorf are
// exact here; sinf and cosf are glibc's (sinf32 and cosf32 below: 2.5 %
// of float32 inputs in [−2, 2] differ from float32(math.Sin(x)), and the
// position solver calls them at every iteration); atan2f and expf, which
// the walker never reaches, are float64 results rounded once.

func math32Abs(x float32) float32 { return float32(math.Abs(float64(x))) }

func math32Sqrt(x float32) float32 { return float32(math.Sqrt(float64(x))) }

func math32Sin(x float32) float32 { return sinf32(x) }

func math32Cos(x float32) float32 { return cosf32(x) }

func math32Atan2(y, x float32) float32 { return float32(math.Atan2(float64(y), float64(x))) }

func math32Floor(x float32) float32 { return float32(math.Floor(float64(x))) }

func math32Exp(x float32) float32 { return float32(math.Exp(float64(x))) }

func math32Max(x, y float32) float32 { return float32(math.Max(float64(x), float64(y))) }

func math32Min(x, y float32) float32 { return float32(math.Min(float64(x), float64(y))) }

func math32IsNaN(x float32) bool { return x != x }

func math32IsInf(x float32, sign int) bool { return math.IsInf(float64(x), sign) }

func math32Sincos(x float32) (sin, cos float32) { return sinf32(x), cosf32(x) }

// sinf32 and cosf32 are glibc's sinf and cosf on x86-64 (the algorithm of
// ARM's Optimized Routines, which glibc ships as sysdeps/ieee754/flt-32
// s_sinf.c and s_cosf.c, TOINT_INTRINSICS 0) in their FMA ifunc variants,
// selected on CPUs with AVX2 and FMA, where GCC fuses every a + b·c of the
// argument reduction and the polynomials: the double-precision polynomial
// coefficients below are theirs. Arguments of magnitude 120 or more take
// float64 math instead of glibc's large reduction (Box2D's angles stay far
// below). TestSinCosMatchGlibc checks them against glibc.
var sincosTable = [2]struct{ c0, c1, c2, c3, c4, s1, s2, s3 float64 }{
	{0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
	{-0x1p0, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10, -0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
}

const (
	sincosHpiInv = 0x1.45F306DC9C883p+23 // 2/π·2²⁴
	sincosHpi    = 0x1.921FB54442D18p0   // π/2
)

var sincosSign = [4]float64{1, -1, -1, 1}

func abstop12(x float32) uint32 { return (math.Float32bits(x) >> 20) & 0x7ff }

var (
	top12Pio4  = abstop12(0x1.921FB6p-1)
	top12Tiny  = abstop12(0x1p-12)
	top12Large = abstop12(120)
)

// sincosPoly is sinf_poly: the sine (n even) or cosine polynomial of the
// reduced argument x with x2 = x².
func sincosPoly(x, x2 float64, t int, n int) float32 {
	p := &sincosTable[t]
	if n&1 == 0 {
		x3 := x * x2
		s1 := math.FMA(x2, p.s3, p.s2)
		x7 := x3 * x2
		s := math.FMA(x3, p.s1, x)
		return float32(math.FMA(x7, s1, s))
	}
	x4 := x2 * x2
	c2 := math.FMA(x2, p.c4, p.c3)
	c1 := math.FMA(x2, p.c1, p.c0)
	x6 := x4 * x2
	c := math.FMA(x4, p.c2, c1)
	return float32(math.FMA(x6, c2, c))
}

// reduceFast is reduce_fast without rounding instructions: x − n·π/2 and the quadrant n.
func reduceFast(x float64) (float64, int) {
	r := x * sincosHpiInv
	n := (int(int32(r)) + 0x800000) >> 24
	return math.FMA(-float64(n), sincosHpi, x), n
}

func sinf32(y float32) float32 {
	x := float64(y)
	top := abstop12(y)
	switch {
	case top < top12Pio4:
		if top < top12Tiny {
			return y
		}
		return sincosPoly(x, x*x, 0, 0)
	case top < top12Large:
		r, n := reduceFast(x)
		s := sincosSign[n&3]
		t := 0
		if n&2 != 0 {
			t = 1
		}
		return sincosPoly(r*s, r*r, t, n)
	}
	return float32(math.Sin(x))
}

func cosf32(y float32) float32 {
	x := float64(y)
	top := abstop12(y)
	switch {
	case top < top12Pio4:
		if top < top12Tiny {
			return 1
		}
		return sincosPoly(x, x*x, 0, 1)
	case top < top12Large:
		r, n := reduceFast(x)
		s := sincosSign[n&3]
		t := 0
		if n&2 != 0 {
			t = 1
		}
		return sincosPoly(r*s, r*r, t, n^1)
	}
	return float32(math.Cos(x))
}

// div32 divides in float32 at run time, as C++ evaluates b2Settings.h's
// (2.0f / 180.0f * b2_pi): Go would fold a constant expression exactly.
func div32(a, b float32) float32 { return a / b }
