package nn

import "math"

// The float32 kernels of MLP32 and Adam32. Each function below dispatches to
// its AVX-512 assembly (kernels32_amd64.s) when the CPU has AVX-512, and
// otherwise runs the plain Go transcription beside it (the *Go functions),
// which the tests also use as the kernels' reference.

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
	if !useAVX512 {
		sgemmGo(m, n, k, a, ars, acs, b, ldb, c, ldc, acc)
		return
	}
	flag := 0
	if acc {
		flag = 1
	}
	n64 := n &^ 63
	i := 0
	for ; i+4 <= m; i += 4 {
		for j := 0; j < n64; j += 64 {
			sgemm4x64(k, &a[i*ars], ars, acs, &b[j], ldb, &c[i*ldc+j], ldc, flag)
		}
		for j := n64; j < n; j += 16 {
			sgemm4x16(k, &a[i*ars], ars, acs, &b[j], ldb, &c[i*ldc+j], ldc, flag, lanes(n-j))
		}
	}
	for ; i < m; i++ {
		for j := 0; j < n64; j += 64 {
			sgemm1x64(k, &a[i*ars], acs, &b[j], ldb, &c[i*ldc+j], flag)
		}
		for j := n64; j < n; j += 16 {
			sgemm1x16(k, &a[i*ars], acs, &b[j], ldb, &c[i*ldc+j], flag, lanes(n-j))
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
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		for j := range ci {
			var s float32
			for l := 0; l < k; l++ {
				s += float32(a[i*ars+l*acs] * b[l*ldb+j])
			}
			if acc {
				ci[j] += s
			} else {
				ci[j] = s
			}
		}
	}
}

// biasTanh32 replaces each entry y[i*out+j] of the n × out matrix y by
// tanh(y[i*out+j] + b[j]).
func biasTanh32(y, b []float32, n, out int) {
	_, _ = y[n*out-1], b[out-1]
	if useAVX512 {
		for i := 0; i < n; i++ {
			biasTanhRow(&y[i*out], &b[0], out)
		}
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

// Constants of tanh32Go and of the assembly tanh: Cephes' tanhf polynomial
// for |x| < 0.625 and its expf (range reduction by ln 2 split in two,
// degree-5 polynomial) for 1 − 2/(e^{2|x|}+1) above, |x| clamped at 9
// (tanh(9) rounds to 1 in float32).
const (
	tanhSmall   = 0.625
	tanhClamp   = 9
	tanhP0      = -5.70498872745e-3
	tanhP1      = 2.06390887954e-2
	tanhP2      = -5.37397155531e-2
	tanhP3      = 1.33314422036e-1
	tanhP4      = -3.33332819422e-1
	expLog2e    = 1.44269504088896341
	expC1       = 0.693359375
	expC2       = -2.12194440e-4
	expP0       = 1.9875691500e-4
	expP1       = 1.3981999507e-3
	expP2       = 8.3334519073e-3
	expP3       = 4.1665795894e-2
	expP4       = 1.6666665459e-1
	expP5       = 5.0000001201e-1
	float32Bias = 127
)

// tanh32Go is the hyperbolic tangent in float32 as the assembly computes it
// (the assembly fuses the polynomial steps; the two agree within 2 units in
// the last place, and both within 3e-7 of math.Tanh, see TestTanh32).
func tanh32Go(x float32) float32 {
	ax := float32(math.Abs(float64(x)))
	if ax < tanhSmall {
		z := x * x
		p := float32(tanhP0)
		p = p*z + tanhP1
		p = p*z + tanhP2
		p = p*z + tanhP3
		p = p*z + tanhP4
		return x + x*z*p
	}
	y := 2 * min(ax, tanhClamp)
	nf := float32(math.RoundToEven(float64(y * expLog2e)))
	r := y - nf*expC1
	r = r - nf*expC2
	p := float32(expP0)
	p = p*r + expP1
	p = p*r + expP2
	p = p*r + expP3
	p = p*r + expP4
	p = p*r + expP5
	e := p*(r*r) + r + 1
	e = e * math.Float32frombits(uint32(int32(nf)+float32Bias)<<23)
	t := 1 - 2/(e+1)
	if x < 0 {
		return -t
	}
	return t
}

// tanhGrad32 multiplies d[i] by 1 − y[i]² for i < len(d).
func tanhGrad32(d, y []float32) {
	y = y[:len(d)]
	i0 := 0
	if useAVX512 && len(d) >= 16 {
		i0 = len(d) &^ 15
		tanhGradAVX(i0, &d[0], &y[0])
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

// adam32 applies one Adam update with k = {β1, 1−β1, β2, 1−β2, step, √bc2,
// ε, scale}: g = scale·grad; m = β1 m + (1−β1) g; v = β2 v + ((1−β2) g) g;
// p −= (step·m) / (√v/√bc2 + ε). The assembly rounds exactly as adamGo.
func adam32(p, grad, m, v []float32, k *[8]float32) {
	n := len(p)
	grad, m, v = grad[:n], m[:n], v[:n]
	i0 := 0
	if useAVX512 && n >= 16 {
		i0 = n &^ 15
		adamAVX(i0, &p[0], &grad[0], &m[0], &v[0], k)
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
		p[i] -= float32(k[4]*m[i]) / float32(sq/k[5]+k[6])
	}
}

// sumSq32 adds g[i]² (in float64) to partial sum p[i%32] for i < len(g), a
// multiple of 32, in increasing i.
func sumSq32(g []float32, p *[32]float64) {
	if len(g) == 0 {
		return
	}
	if useAVX512 {
		sumSqAVX(len(g), &g[0], p)
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
