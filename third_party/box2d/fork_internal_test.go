package box2d

import (
	"math"
	"math/rand/v2"
	"testing"
)

// specials are the values where min, max, clamps and trigonometry have
// special cases.
var specials = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
	math.MaxFloat64, -math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN(), math.Float64frombits(0x7ff8_0000_dead_beef),
	math.Pi / 4, math.Pi / 2, math.Pi, 3 * math.Pi / 2, 2 * math.Pi, -math.Pi / 4, 1 << 29, 1e10, 1e300}

func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// TestMinMaxClampMatchMath: the fork's inlined maxf, minf, clampOrdered
// and B2FloatClamp give exactly the bits of upstream's math.Max, math.Min
// and math.Max(low, math.Min(a, high)) on every combination of special
// values and on random ones.
func TestMinMaxClampMatchMath(t *testing.T) {
	vals := append([]float64(nil), specials...)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		vals = append(vals, rng.NormFloat64(), float64(rng.IntN(5)-2))
	}
	for _, x := range vals {
		for _, y := range vals {
			if got, want := maxf(x, y), math.Max(x, y); !sameBits(got, want) {
				t.Fatalf("maxf(%v, %v) = %v, math.Max gives %v", x, y, got, want)
			}
			if got, want := minf(x, y), math.Min(x, y); !sameBits(got, want) {
				t.Fatalf("minf(%v, %v) = %v, math.Min gives %v", x, y, got, want)
			}
			for _, z := range vals {
				want := math.Max(y, math.Min(x, z))
				if got := B2FloatClamp(x, y, z); !sameBits(got, want) {
					t.Fatalf("B2FloatClamp(%v, %v, %v) = %v, upstream gives %v", x, y, z, got, want)
				}
				if got, ok := clampOrdered(x, y, z); ok && !sameBits(got, want) {
					t.Fatalf("clampOrdered(%v, %v, %v) = %v, upstream gives %v", x, y, z, got, want)
				}
			}
		}
	}
}

// TestSinCosMatchesSinAndCos: sinCos gives exactly math.Sin's and
// math.Cos's bits, on the special values and on a million random angles
// over the ranges a simulation meets and beyond (the large-argument
// reduction included).
func TestSinCosMatchesSinAndCos(t *testing.T) {
	check := func(x float64) {
		s, c := sinCos(x)
		if !sameBits(s, math.Sin(x)) || !sameBits(c, math.Cos(x)) {
			t.Fatalf("sinCos(%v) = (%v, %v), math.Sin and math.Cos give (%v, %v)", x, s, c, math.Sin(x), math.Cos(x))
		}
	}
	for _, x := range specials {
		check(x)
		check(-x)
		check(math.Nextafter(x, 0))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 1_000_000 {
		scale := []float64{1, 10, 1e3, 1e9, 1e20}[i%5]
		check(scale * (2*rng.Float64() - 1))
	}
}

// TestRevoluteSolveMatchesMat33: the revolute joint's solve33 and solve22,
// with the determinants cached by cacheMassSolve, give exactly the bits of
// B2Mat33.Solve33 and Solve22 (singular matrices included).
func TestRevoluteSolveMatchesMat33(t *testing.T) {
	if fusesMulAdd() {
		// Solve33 and solve33 are then free to fuse different products.
		t.Skip("this build fuses multiply-adds; bit-identity holds for unfused arithmetic")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	v3 := func() B2Vec3 { return MakeB2Vec3(rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()) }
	for i := range 20000 {
		var j B2RevoluteJoint
		j.M_mass = MakeB2Mat33FromColumns(v3(), v3(), v3())
		if i%7 == 0 { // singular: two equal columns
			j.M_mass.Ey = j.M_mass.Ex
		}
		j.cacheMassSolve()
		for range 4 {
			b := v3()
			got, want := j.solve33(b), j.M_mass.Solve33(b)
			if !sameBits(got.X, want.X) || !sameBits(got.Y, want.Y) || !sameBits(got.Z, want.Z) {
				t.Fatalf("solve33 = %v, Solve33 = %v", got, want)
			}
			b2 := MakeB2Vec2(b.X, b.Y)
			got2, want2 := j.solve22(b2), j.M_mass.Solve22(b2)
			if !sameBits(got2.X, want2.X) || !sameBits(got2.Y, want2.Y) {
				t.Fatalf("solve22 = %v, Solve22 = %v", got2, want2)
			}
		}
	}
}

// FusesMulAdd is fusesMulAdd for the external tests (golden_test.go).
var FusesMulAdd = fusesMulAdd

// fusesMulAdd reports whether this build fuses x*y + z into one rounding
// (Go does on arm64, ppc64le, s390x and riscv64, and on amd64 with
// GOAMD64=v3 or later): then floating-point results legitimately differ in
// the last bits from the unfused amd64 arithmetic the goldens pin.
func fusesMulAdd() bool {
	a, b := 1+0x1p-30, 1-0x1p-30
	return mulAdd(a, b, -1) != 0
}

//go:noinline
func mulAdd(x, y, z float64) float64 { return x*y + z }
