package ot

import "math"

// The equal-weight geometric mean of the lattice IBP (geoMeanDiv) runs four
// points at a time: geoMean4 in geomean_amd64.s on CPUs with AVX2 and FMA,
// geoMeanPoint (its exact scalar transcription) elsewhere and for the points
// the vector kernel declines. Both compute, for a point with every t_k[i]
// positive and normal, the product's mantissa m ∈ [1, 2) and exponent e
// exactly (renormalizing after each factor), log(m·2^e) with the polynomial
// of package math's log, p = exp(α·log) with the polynomial of package math's
// exp, and t_k[i] = p / t_k[i]: one log and one exp per point instead of K
// logs, vectorized, with the same operations in the same order in the Go and
// the assembly versions, so the two agree bit for bit (TestGeoMean4MatchesGo)
// and a result does not depend on which one ran. They agree with
// exp(α Σ log t_k) to a few ulp (TestGeoMeanMatchesLogSum). A point whose
// factors include a zero, subnormal, infinite or NaN value, or whose mean
// would leave exp's normal range (|α·log| > 700), takes geoMeanDiv's general
// path.

// geoTab holds the kernel's constants, each repeated in four lanes so the
// assembly can use them as memory operands; gt* are their indices.
var geoTab [gtCount][4]float64

const (
	gtOne = iota
	gtMant
	gtMaxExp
	gtSqrt2
	gtHalf
	gtTwo
	gtMagic
	gtL1
	gtL2
	gtL3
	gtL4
	gtL5
	gtL6
	gtL7
	gtLn2Hi
	gtLn2Lo
	gtAbs
	gtRange
	gtLog2e
	gtP1
	gtP2
	gtP3
	gtP4
	gtP5
	gtCount
)

// The polynomial coefficients of package math's log and exp (FreeBSD's
// e_log.c and e_exp.c).
const (
	logL1 = 6.666666666666735130e-01
	logL2 = 3.999999999940941908e-01
	logL3 = 2.857142874366239149e-01
	logL4 = 2.222219843214978396e-01
	logL5 = 1.818357216161805012e-01
	logL6 = 1.531383769920937332e-01
	logL7 = 1.479819860511658591e-01
	expP1 = 1.66666666666666657415e-01
	expP2 = -2.77777777770155933842e-03
	expP3 = 6.61375632143793436117e-05
	expP4 = -1.65339022054652515390e-06
	expP5 = 4.13813679705723846039e-08
	// geoRange bounds |α·log| so that exp's result is a normal number and
	// its scaling by 2^k is an exponent addition.
	geoRange = 700
	// magic is 1.5·2^52: for an integer |x| < 2^51, the bits of magic + x
	// are magic's bits plus x.
	magic = 6755399441055744.0
)

func init() {
	set := func(i int, v float64) { geoTab[i] = [4]float64{v, v, v, v} }
	setBits := func(i int, b uint64) { set(i, math.Float64frombits(b)) }
	set(gtOne, 1)
	setBits(gtMant, 1<<52-1)
	setBits(gtMaxExp, 0x7fe)
	set(gtSqrt2, math.Sqrt2)
	set(gtHalf, 0.5)
	set(gtTwo, 2)
	set(gtMagic, magic)
	for i, v := range []float64{logL1, logL2, logL3, logL4, logL5, logL6, logL7} {
		set(gtL1+i, v)
	}
	set(gtLn2Hi, ln2Hi)
	set(gtLn2Lo, ln2Lo)
	setBits(gtAbs, 1<<63-1)
	set(gtRange, geoRange)
	set(gtLog2e, math.Log2E)
	for i, v := range []float64{expP1, expP2, expP3, expP4, expP5} {
		set(gtP1+i, v)
	}
}

// geoMeanPoint is the scalar transcription of geoMean4 for point i: it sets
// bar[i] and t_k[i] and returns true, or returns false without writing when
// the point needs the general path. Every product is converted explicitly so
// that no compiler fuses it into a multiply-add, and the operations are
// those of the assembly in the same order.
func geoMeanPoint(bar []float64, t [][]float64, alpha float64, i int) bool {
	const mant = 1<<52 - 1
	m := 1.0
	var e int64
	for k := range t {
		bits := math.Float64bits(t[k][i])
		ex := int64(bits >> 52)
		if ex == 0 || ex > 0x7fe {
			return false
		}
		e += ex
		m = float64(m * math.Float64frombits(bits&mant|1023<<52))
		mb := math.Float64bits(m)
		e += int64(mb >> 52)
		m = math.Float64frombits(mb&mant | 1023<<52)
	}
	e -= 2 * 1023 * int64(len(t))
	// log(m·2^e), m ∈ [1, 2), as package math's log reduces it.
	f := m - 1
	if m >= math.Sqrt2 {
		f = float64(0.5*m) - 1
		e++
	}
	ed := float64(e)
	s := f / (2 + f)
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	t1 := float64(s2 * (logL1 + float64(s4*(logL3+float64(s4*(logL5+float64(s4*logL7)))))))
	t2 := float64(s4 * (logL2 + float64(s4*(logL4+float64(s4*logL6)))))
	r := t1 + t2
	hfsq := float64(float64(0.5*f) * f)
	l := float64(ed*ln2Hi) - ((hfsq - (float64(s*(hfsq+r)) + float64(ed*ln2Lo))) - f)
	x := float64(alpha * l)
	if !(math.Abs(x) <= geoRange) {
		return false
	}
	// exp(x), as package math's exp computes it (k rounded half to even).
	kd := math.RoundToEven(float64(x * math.Log2E))
	hi := x - float64(kd*ln2Hi)
	lo := float64(kd * ln2Lo)
	rr := hi - lo
	tt := float64(rr * rr)
	c := rr - float64(tt*(expP1+float64(tt*(expP2+float64(tt*(expP3+float64(tt*(expP4+float64(tt*expP5)))))))))
	y := 1 - ((lo - float64(rr*c)/(2-c)) - hi)
	p := math.Float64frombits(math.Float64bits(y) + uint64(int64(kd))<<52)
	bar[i] = p
	for k := range t {
		t[k][i] = p / t[k][i]
	}
	return true
}

// geoMeanEqual runs the equal-weight geometric mean on [i0, i1): groups of
// four points through geoMean4 where the CPU has it, every other point
// through geoMeanPoint, and the points those decline through the general
// path of geoMeanDiv.
func geoMeanEqual(bar []float64, t [][]float64, alpha float64, i0, i1 int) {
	i := i0
	if hasFMA && len(t) > 0 {
		for i+4 <= i1 {
			n := (i1 - i) / 4
			done := geoMean4(&bar[i], &t[0], len(t), i, n, alpha, &geoTab[0][0])
			i += 4 * done
			if done == n {
				break
			}
			// The group at i has a point for the scalar paths.
			for j := i; j < i+4; j++ {
				if !geoMeanPoint(bar, t, alpha, j) {
					geoMeanGeneral(bar, t, alpha, j)
				}
			}
			i += 4
		}
	}
	for ; i < i1; i++ {
		if !geoMeanPoint(bar, t, alpha, i) {
			geoMeanGeneral(bar, t, alpha, i)
		}
	}
}

// geoMeanGeneral is geoMeanDiv's general path for point i with equal
// weights α: bar_i = exp(α Σ_k log t_k[i]), t_k[i] = bar_i / t_k[i] (0 where
// bar_i = 0).
func geoMeanGeneral(bar []float64, t [][]float64, alpha float64, i int) {
	var lp float64
	for k := range t {
		lp += alpha * math.Log(t[k][i])
	}
	p := math.Exp(lp)
	bar[i] = p
	for k := range t {
		t[k][i] = safeDiv(p, t[k][i])
	}
}
