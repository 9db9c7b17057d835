package nn

import "math"

// The float32 kernels of MLP32 and Adam32. Each function below dispatches to
// its AVX-512 assembly (kernels32_amd64.s) when the CPU has AVX-512, to the
// AVX2/FMA assembly (8 lanes) when it has only those, and otherwise runs the
// plain Go transcription beside it (the *Go functions), which the tests also
// use as the kernels' reference.

// Kernel levels for kern32.
const (
	kernGo = iota
	kernAVX2
	kernAVX512
)

// kern32 is the float32 kernel level of this CPU.
var kern32 = func() int {
	switch {
	case useAVX512:
		return kernAVX512
	case useFMA:
		return kernAVX2
	}
	return kernGo
}()

// masks8[r] is the VMASKMOVPS mask of the first r lanes.
var masks8 = func() (m [9][8]int32) {
	for r := range m {
		for i := 0; i < r; i++ {
			m[r][i] = -1
		}
	}
	return m
}()

// mask8 returns the VMASKMOVPS mask of the first min(r, 8) lanes.
func mask8(r int) *[8]int32 { return &masks8[min(r, 8)] }

// sgemm sets C to A·B (acc false) or adds A·B to C (acc true), where A is
// m×k with element (i, l) at a[i*ars+l*acs], B is k×n row-major with row
// stride ldb and C is m×n row-major with row stride ldc. Every entry is
// summed from zero over l in increasing order, then stored or added to C,
// so that it does not depend on m, on the entry's position or on how C is
// split into blocks.
func sgemm(m, n, k int, a []float32, ars, acs int, b []float32, ldb int, c []float32, ldc int, acc bool) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		if !acc {
			for i := 0; i < m; i++ {
				clear(c[i*ldc : i*ldc+n])
			}
		}
		return
	}
	// Touch the last elements read and written: the assembly does not check bounds.
	_, _, _ = a[(m-1)*ars+(k-1)*acs], b[(k-1)*ldb+n-1], c[(m-1)*ldc+n-1]
	flag := 0
	if acc {
		flag = 1
	}
	switch kern32 {
	case kernGo:
		sgemmGo(m, n, k, a, ars, acs, b, ldb, c, ldc, acc)
		return
	case kernAVX2:
		sgemmAVX2(m, n, k, a, ars, acs, b, ldb, c, ldc, flag)
		return
	}
	// Whole 64-column blocks: 4×64 register blocks, then single rows.
	n64 := n &^ 63
	if n64 > 0 {
		i := 0
		for ; i+4 <= m; i += 4 {
			for j := 0; j < n64; j += 64 {
				sgemm4x64(k, &a[i*ars], ars, acs, &b[j], ldb, &c[i*ldc+j], ldc, flag)
			}
		}
		for ; i < m; i++ {
			for j := 0; j < n64; j += 64 {
				sgemm1x64(k, &a[i*ars], acs, &b[j], ldb, &c[i*ldc+j], flag)
			}
		}
	}
	// The remaining columns (all of them for a narrow output layer), 16 at a
	// time under a mask: 16×16 blocks, then 4×16, then single rows.
	if n64 < n {
		i := 0
		for ; i+16 <= m; i += 16 {
			for j := n64; j < n; j += 16 {
				sgemm16x16(k, &a[i*ars], ars, acs, &b[j], ldb, &c[i*ldc+j], ldc, flag, lanes(n-j))
			}
		}
		for ; i+4 <= m; i += 4 {
			for j := n64; j < n; j += 16 {
				sgemm4x16(k, &a[i*ars], ars, acs, &b[j], ldb, &c[i*ldc+j], ldc, flag, lanes(n-j))
			}
		}
		for ; i < m; i++ {
			for j := n64; j < n; j += 16 {
				sgemm1x16(k, &a[i*ars], acs, &b[j], ldb, &c[i*ldc+j], flag, lanes(n-j))
			}
		}
	}
}

// transpose32 writes the transpose of a (rows × cols, row-major) to dst.
func transpose32(dst, a []float32, rows, cols int) {
	if rows == 0 || cols == 0 {
		return
	}
	_, _ = dst[rows*cols-1], a[rows*cols-1]
	switch kern32 {
	case kernAVX512:
		var idx [16]int32
		for t := range idx {
			idx[t] = int32(t * cols)
		}
		transposeAVX(&dst[0], &a[0], rows, cols, &idx)
		return
	case kernAVX2:
		var idx [8]int32
		for t := range idx {
			idx[t] = int32(t * cols)
		}
		r8 := rows &^ 7
		if r8 > 0 {
			a2transpose(&dst[0], &a[0], rows, cols, &idx)
		}
		for i := r8; i < rows; i++ {
			for j, v := range a[i*cols : (i+1)*cols] {
				dst[j*rows+i] = v
			}
		}
		return
	}
	transposeGo(dst, a, rows, cols)
}

// transposeGo is transpose32 in plain Go.
func transposeGo(dst, a []float32, rows, cols int) {
	for i := 0; i < rows; i++ {
		row := a[i*cols : (i+1)*cols]
		for j, v := range row {
			dst[j*rows+i] = v
		}
	}
}

// sgemmAVX2 is sgemm's AVX2 path: 4×16 blocks, then 8×8 and single-row
// blocks under a mask for the remaining columns and rows.
func sgemmAVX2(m, n, k int, a []float32, ars, acs int, b []float32, ldb int, c []float32, ldc int, flag int) {
	n16 := n &^ 15
	full := mask8(8)
	if n16 > 0 {
		i := 0
		for ; i+4 <= m; i += 4 {
			for j := 0; j < n16; j += 16 {
				a2gemm4x16(k, &a[i*ars], ars, acs, &b[j], ldb, &c[i*ldc+j], ldc, flag)
			}
		}
		for ; i < m; i++ {
			for j := 0; j < n16; j += 8 {
				a2gemm1x8(k, &a[i*ars], acs, &b[j], ldb, &c[i*ldc+j], flag, full)
			}
		}
	}
	if n16 < n {
		i := 0
		for ; i+8 <= m; i += 8 {
			for j := n16; j < n; j += 8 {
				a2gemm8x8(k, &a[i*ars], ars, acs, &b[j], ldb, &c[i*ldc+j], ldc, flag, mask8(n-j))
			}
		}
		for ; i < m; i++ {
			for j := n16; j < n; j += 8 {
				a2gemm1x8(k, &a[i*ars], acs, &b[j], ldb, &c[i*ldc+j], flag, mask8(n-j))
			}
		}
	}
}

// lanes returns the mask of the first min(r, 16) lanes of a 16-lane vector.
func lanes(r int) uint64 {
	if r >= 16 {
		return 0xffff
	}
	return 1<<uint(r) - 1
}

// sgemmGo is sgemm in plain Go, with separately rounded products and sums
// (the assembly fuses them, so the two agree to rounding, not bit for bit).
func sgemmGo(m, n, k int, a []float32, ars, acs int, b []float32, ldb int, c []float32, ldc int, acc bool) {
	var s [64]float32 // the sums of up to 64 entries of a row, formed row of B by row of B
	for i := 0; i < m; i++ {
		for j0 := 0; j0 < n; j0 += len(s) {
			w := min(len(s), n-j0)
			sum := s[:w]
			clear(sum)
			for l := 0; l < k; l++ {
				av := a[i*ars+l*acs]
				for j, bv := range b[l*ldb+j0 : l*ldb+j0+w] {
					sum[j] += float32(av * bv)
				}
			}
			ci := c[i*ldc+j0 : i*ldc+j0+w]
			if acc {
				for j, v := range sum {
					ci[j] += v
				}
			} else {
				copy(ci, sum)
			}
		}
	}
}

// biasTanh32 replaces each entry y[i*out+j] of the n × out matrix y by
// tanh(y[i*out+j] + b[j]).
func biasTanh32(y, b []float32, n, out int) {
	if n == 0 || out == 0 {
		return
	}
	_, _ = y[n*out-1], b[out-1]
	switch kern32 {
	case kernAVX512:
		biasTanhAVX(&y[0], &b[0], n, out)
		return
	case kernAVX2:
		r := out % 8
		if r == 0 {
			r = 8
		}
		a2biasTanh(&y[0], &b[0], n, out, mask8(r))
		return
	}
	for i := 0; i < n; i++ {
		row := y[i*out : (i+1)*out]
		for j := range row {
			row[j] = tanh32Go(row[j] + b[j])
		}
	}
}

// biasAdd32 adds b[j] to every entry y[i*out+j] of the n × out matrix y.
func biasAdd32(y, b []float32, n, out int) {
	for i := 0; i < n; i++ {
		row := y[i*out : (i+1)*out]
		for j := range row {
			row[j] += b[j]
		}
	}
}

// Coefficients of the float32 tanh: Eigen's rational approximation
// (generic_fast_tanh_float, Eigen/src/Core/MathFunctionsImpl.h), an odd
// degree-13 numerator over an even degree-6 denominator on x clamped to
// ±7.905… (beyond which tanh rounds to ±1 in float32).
const (
	tanhClamp = 7.90531110763549805
	tanhA1    = 4.89352455891786e-03
	tanhA3    = 6.37261928875436e-04
	tanhA5    = 1.48572235717979e-05
	tanhA7    = 5.12229709037114e-08
	tanhA9    = -8.60467152213735e-11
	tanhA11   = 2.00018790482477e-13
	tanhA13   = -2.76076847742355e-16
	tanhB0    = 4.89352518554385e-03
	tanhB2    = 2.26843463243900e-03
	tanhB4    = 1.18534705686654e-04
	tanhB6    = 1.19825839466702e-06
)

// tanh32Go is the float32 hyperbolic tangent as the assembly computes it;
// the assembly fuses the polynomial steps and divides by a reciprocal with
// one Newton step, so the two agree within a few units in the last place
// (TestTanh32 checks both against math.Tanh).
func tanh32Go(x float32) float32 {
	x = max(-tanhClamp, min(tanhClamp, x))
	x2 := x * x
	p := float32(tanhA13)
	p = p*x2 + tanhA11
	p = p*x2 + tanhA9
	p = p*x2 + tanhA7
	p = p*x2 + tanhA5
	p = p*x2 + tanhA3
	p = p*x2 + tanhA1
	p *= x
	q := float32(tanhB6)
	q = q*x2 + tanhB4
	q = q*x2 + tanhB2
	q = q*x2 + tanhB0
	return p / q
}

// tanhGrad32 multiplies d[i] by 1 − y[i]² for i < len(d).
func tanhGrad32(d, y []float32) {
	y = y[:len(d)]
	i0 := 0
	if kern32 == kernAVX512 && len(d) >= 16 {
		i0 = len(d) &^ 15
		tanhGradAVX(i0, &d[0], &y[0])
	} else if kern32 == kernAVX2 && len(d) >= 8 {
		i0 = len(d) &^ 7
		a2tanhGrad(i0, &d[0], &y[0])
	}
	tanhGradGo(d[i0:], y[i0:])
}

// tanhGradGo is tanhGrad32 in plain Go, rounding as the assembly does.
func tanhGradGo(d, y []float32) {
	y = y[:len(d)]
	for i, v := range y {
		d[i] *= float32(1 - float32(v*v))
	}
}

// adam32 applies one Adam update with k = {β1, 1−β1, β2, 1−β2, step,
// 1/√bc2, ε, scale}: g = scale·grad; m = β1 m + (1−β1) g;
// v = β2 v + ((1−β2) g) g; p −= (step·m) / (√v·(1/√bc2) + ε) (torch divides
// by √bc2; the product saves a division and differs by rounding). The
// assembly rounds exactly as adamGo.
func adam32(p, grad, m, v []float32, k *[8]float32) {
	n := len(p)
	grad, m, v = grad[:n], m[:n], v[:n]
	i0 := 0
	if kern32 == kernAVX512 && n >= 16 {
		i0 = n &^ 15
		adamAVX(i0, &p[0], &grad[0], &m[0], &v[0], k)
	} else if kern32 == kernAVX2 && n >= 8 {
		i0 = n &^ 7
		a2adam(i0, &p[0], &grad[0], &m[0], &v[0], k)
	}
	adamGo(p[i0:], grad[i0:], m[i0:], v[i0:], k)
}

// adamGo is adam32 in plain Go; the conversions forbid fused multiply-adds.
func adamGo(p, grad, m, v []float32, k *[8]float32) {
	for i := range p {
		g := grad[i] * k[7]
		m[i] = float32(k[0]*m[i]) + float32(k[1]*g)
		v[i] = float32(k[2]*v[i]) + float32(float32(k[3]*g)*g)
		sq := float32(math.Sqrt(float64(v[i])))
		p[i] -= float32(k[4]*m[i]) / float32(float32(sq*k[5])+k[6])
	}
}

// sumSq32 adds g[i]² (in float64) to partial sum p[i%32] for i < len(g), a
// multiple of 32, in increasing i.
func sumSq32(g []float32, p *[32]float64) {
	if len(g) == 0 {
		return
	}
	switch kern32 {
	case kernAVX512:
		sumSqAVX(len(g), &g[0], p)
		return
	case kernAVX2:
		a2sumSq(len(g), &g[0], p)
		return
	}
	sumSqGo(g, p)
}

// sumSqGo is sumSq32 in plain Go.
func sumSqGo(g []float32, p *[32]float64) {
	for i, v := range g {
		x := float64(v)
		p[i%32] += float64(x * x)
	}
}
