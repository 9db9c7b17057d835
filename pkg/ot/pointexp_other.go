//go:build !amd64

package ot

func pointExp4(dst, x *float64, n int, tab *float64) {
	panic("ot: pointExp4 without amd64")
}

func pointMul4(lanes, xt *float64, m16, d int, xi, w, v *float64, nieps float64, cost bool, tab *float64) {
	panic("ot: pointMul4 without amd64")
}

func pointMul8(lanes, xt *float64, m16, d int, xi, w, v *float64, nieps float64, cost bool, tab *float64) {
	panic("ot: pointMul8 without amd64")
}

func pointLogE4(buf, xt *float64, m16, d int, xi, w, x *float64, nieps float64, tab *float64) float64 {
	panic("ot: pointLogE4 without amd64")
}

func pointLogE8(buf, xt *float64, m16, d int, xi, w, x *float64, nieps float64, tab *float64) float64 {
	panic("ot: pointLogE8 without amd64")
}

func pointLogSum4(lanes, buf *float64, m16 int, m float64, tab *float64) {
	panic("ot: pointLogSum4 without amd64")
}

func pointLogSum8(lanes, buf *float64, m16 int, m float64, tab *float64) {
	panic("ot: pointLogSum8 without amd64")
}
