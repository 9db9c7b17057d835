package nn

// gemmAcc adds A·B to C, where A is m×k with element (i, l) at
// a[i*ars+l*acs], B is k×n row-major with row stride ldb, and C is m×n
// row-major with row stride ldc. Whole 4×8 blocks of C go to the AVX2/FMA
// micro-kernel when the CPU has one; the edges use plain loops. Every entry of
// C is summed over l in increasing order, so results do not depend on how C
// is split.
func gemmAcc(m, n, k int, a []float64, ars, acs int, b []float64, ldb int, c []float64, ldc int) {
	i := 0
	if useFMA && k > 0 {
		n8, n16 := n&^7, 0
		if useAVX512 {
			n16 = n &^ 15
		}
		for ; i+4 <= m; i += 4 {
			for j := 0; j < n16; j += 16 {
				kern4x16(k, &a[i*ars], ars, acs, &b[j], ldb, &c[i*ldc+j], ldc)
			}
			for j := n16; j < n8; j += 8 {
				kern4x8(k, &a[i*ars], ars, acs, &b[j], ldb, &c[i*ldc+j], ldc)
			}
			if n8 < n {
				gemmRef(4, n-n8, k, a[i*ars:], ars, acs, b[n8:], ldb, c[i*ldc+n8:], ldc)
			}
		}
	}
	if i < m {
		gemmRef(m-i, n, k, a[i*ars:], ars, acs, b, ldb, c[i*ldc:], ldc)
	}
}

// gemmRef is gemmAcc without fused multiply-adds: plain Go, with whole
// groups of 4 columns handed to axpyRows (which rounds identically) when the
// CPU has AVX2.
func gemmRef(m, n, k int, a []float64, ars, acs int, b []float64, ldb int, c []float64, ldc int) {
	n4 := 0
	if useFMA && k > 0 && m > 0 {
		n4 = n &^ 3
		// The assembly does not check bounds: touch the last elements it reads.
		_, _ = a[(m-1)*ars+(k-1)*acs], b[(k-1)*ldb+n-1]
	}
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		if n4 > 0 {
			axpyRows(k, &a[i*ars], acs, &b[0], ldb, &ci[0], n4)
		}
		for l := 0; l < k; l++ {
			av := a[i*ars+l*acs]
			bl := b[l*ldb+n4 : l*ldb+n]
			for j, bv := range bl {
				ci[n4+j] += float64(av * bv) // the conversion forbids fusing: axpyRows rounds twice
			}
		}
	}
}

// gemmNT adds A·Bᵀ to C, where A is m×k (row stride lda), B is n×k (row
// stride ldb) and C is m×n (row stride ldc), with every entry computed as
// gonum's Dgemm(NoTrans, Trans) with alpha = beta = 1 computes it on amd64:
// c += DotUnitary(a_i, b_j). Groups of four entries go to the AVX kernel
// dots4, the rest to dotUnitary; both round exactly as DotUnitary, so the
// results are those of the BLAS call, bit for bit, without its overhead.
func gemmNT(m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k > 0 {
		_, _ = a[(m-1)*lda+k-1], b[(n-1)*ldb+k-1] // dots4 does not check bounds
	}
	var d [4]float64
	var ai, bj [4]int // element offsets of the pending group
	var ci [4]int
	p := 0
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			ai[p], bj[p], ci[p] = i*lda, j*ldb, i*ldc+j
			p++
			if p == 4 {
				if k == 0 {
					d = [4]float64{}
				} else {
					dots4(k, &a[ai[0]], &a[ai[1]], &a[ai[2]], &a[ai[3]], &b[bj[0]], &b[bj[1]], &b[bj[2]], &b[bj[3]], &d)
				}
				for r := range d {
					c[ci[r]] += d[r]
				}
				p = 0
			}
		}
	}
	for r := 0; r < p; r++ {
		c[ci[r]] += dotUnitary(a[ai[r]:ai[r]+k], b[bj[r]:bj[r]+k])
	}
}

// dotUnitary is gonum's f64.DotUnitary for amd64 in plain Go: four partial
// sums (element l to sum l%4), the last len%4 elements added to sum 0, then
// (s0+s2) + (s1+s3). The conversions forbid fused multiply-adds.
func dotUnitary(x, y []float64) float64 {
	var s0, s1, s2, s3 float64
	n4 := len(x) &^ 3
	y = y[:len(x)]
	for l := 0; l < n4; l += 4 {
		s0 += float64(x[l] * y[l])
		s1 += float64(x[l+1] * y[l+1])
		s2 += float64(x[l+2] * y[l+2])
		s3 += float64(x[l+3] * y[l+3])
	}
	for l := n4; l < len(x); l++ {
		s0 += float64(x[l] * y[l])
	}
	return (s0 + s2) + (s1 + s3)
}
