package ot

// geoMean4 is implemented in geomean_amd64.s (AVX2). For groups g in [0, n)
// it computes points i0+4g … i0+4g+3 as geoMeanPoint does (bar relative to
// i0, the t_k absolute: t is the first of K slice headers) and returns the
// number of groups done: n, or the index of the first group with a point
// geoMeanPoint would decline (that group is left unwritten).
//
//go:noescape
func geoMean4(bar *float64, t *[]float64, K, i0, n int, alpha float64, tab *float64) int
