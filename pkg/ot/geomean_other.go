//go:build !amd64

package ot

func geoMean4(bar *float64, t *[]float64, K, i0, n int, alpha float64, tab *float64) int {
	panic("ot: geoMean4 without amd64")
}
