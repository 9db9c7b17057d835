package ot

// The vector kernels of PointKernel, implemented in pointexp_amd64.s (see
// pointexp.go): the 4 suffix needs AVX2 and FMA (hasFMA), the 8 suffix
// AVX-512F (hasAVX512). tab is &pexTab[0][0].

//go:noescape
func pointExp4(dst, x *float64, n int, tab *float64)

//go:noescape
func pointMul4(lanes, xt *float64, m16, d int, xi, w, v *float64, nieps float64, cost bool, tab *float64)

//go:noescape
func pointMul8(lanes, xt *float64, m16, d int, xi, w, v *float64, nieps float64, cost bool, tab *float64)

//go:noescape
func pointLogE4(buf, xt *float64, m16, d int, xi, w, x *float64, nieps float64, tab *float64) float64

//go:noescape
func pointLogE8(buf, xt *float64, m16, d int, xi, w, x *float64, nieps float64, tab *float64) float64

//go:noescape
func pointLogSum4(lanes, buf *float64, m16 int, m float64, tab *float64)

//go:noescape
func pointLogSum8(lanes, buf *float64, m16 int, m float64, tab *float64)
