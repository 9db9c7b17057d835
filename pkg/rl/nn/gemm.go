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
		n8 := n &^ 7
		for ; i+4 <= m; i += 4 {
			for j := 0; j < n8; j += 8 {
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

// gemmRef is gemmAcc in plain Go.
func gemmRef(m, n, k int, a []float64, ars, acs int, b []float64, ldb int, c []float64, ldc int) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		for l := 0; l < k; l++ {
			av := a[i*ars+l*acs]
			bl := b[l*ldb : l*ldb+n]
			for j, bv := range bl {
				ci[j] += av * bv
			}
		}
	}
}
