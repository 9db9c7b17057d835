package ot

import "math"

// The vector path of PointKernel (pointexp_amd64.s, on CPUs with AVX2 and
// FMA; AVX-512F where present) computes a tile's costs in registers, 16
// columns at a time, and their exponentials with a vector exp:
//
//	k = x·log₂e rounded (one FMA adding 1.5·2^52), r = x − k·ln2Hi − k·ln2Lo,
//	exp(x) = 2^k · p(r), p the degree-13 Taylor polynomial, |r| ≤ ln2/2,
//
// p as 1 + r·(1 + r·Q(r)) with Q in pieces (Estrin's scheme with Horner
// inside) so that its dependency chain is short, every step an FMA, and
// 2^k applied as an exponent addition. Its domain is x ≤ 0: exp(x) is set
// to 0 for x below expUnderflow (−Inf included) and for any result below
// the normal float64 range, and NaN gives 0. On [expUnderflow, 0] it is
// within 2 ulp of math.Exp, 3.4e-16 relative (TestPointExpAccuracy measures
// the maximum over a dense sweep and random arguments). A cost is the same
// operations in the same order as sqDist (no FMA), so it has sqDist's bits
// (when the Go compiler does not fuse sqDist, i.e. below GOAMD64=v3); the
// vector path therefore differs from the scalar one (scaleTile, logTile
// with math.Exp) only by exp's ulps and by the order of the sums: a row's
// sum is kept in 16 partial sums (column j of a tile into partial j mod
// 16), reduced in a fixed order at the end of the row, and its column tiles
// are a multiple of 16 wide (in the log domain the running maximum is
// taken per tile). TestPointKernelVecMatchesGo holds the two to 1e-13
// relative. The AVX2 and AVX-512 kernels do the same operations lane by
// lane, so they agree bit for bit, and the result never depends on the
// number of workers. LogApplyCost (one log per entry) stays on the scalar
// path.

// pointLanes is the number of partial sums per row on the vector path, and
// the column block of the assembly kernels.
const pointLanes = 16

// plainPoints makes PointKernel use the scalar path (tests compare them).
var plainPoints = false

// pointZMM selects the AVX-512 kernels when the CPU has them (tests
// compare them with the AVX2 ones).
var pointZMM = hasAVX512

// pexTab holds the vector exp's constants, each repeated in eight lanes
// (AVX-512 reads 64 bytes, AVX2 the first 32); px* are their indices and
// pointexp_amd64.s's offsets are 64·px*.
var pexTab [pxCount][8]float64

const (
	pxLog2e = iota
	pxLn2Hi
	pxLn2Lo
	pxOne
	pxMagic
	pxUnder
	pxMinNormal
	pxNegInf
	pxC2    // pxC2 + i holds 1/(i+2)!, i < 12
	pxCount = pxC2 + 12
)

func init() {
	set := func(i int, v float64) {
		for l := range pexTab[i] {
			pexTab[i][l] = v
		}
	}
	set(pxLog2e, math.Log2E)
	set(pxLn2Hi, ln2Hi)
	set(pxLn2Lo, ln2Lo)
	set(pxOne, 1)
	set(pxMagic, magic)
	set(pxUnder, expUnderflow)
	set(pxMinNormal, minNormal)
	set(pxNegInf, math.Inf(-1))
	f := 2.0 // (i+2)!, exact
	for i := range 12 {
		set(pxC2+i, 1/f)
		f *= float64(i + 3)
	}
}

// sumLanes returns the sum of a row's 16 partial sums in a fixed order.
func sumLanes(l []float64) float64 {
	l = l[:pointLanes]
	var h [8]float64
	for i := range h {
		h[i] = l[i] + l[i+8]
	}
	a, b := h[0]+h[4], h[1]+h[5]
	c, d := h[2]+h[6], h[3]+h[7]
	return (a + c) + (b + d)
}
