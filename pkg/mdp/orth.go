package mdp

// Gram–Schmidt kernels of the scalar GMRES (sparse.go).
//
// Modified Gram–Schmidt subtracts the projections on the basis vectors one
// at a time: h_i = w·v_i, then w −= h_i·v_i. Done as separate calls that is
// five vector passes per basis vector (two for the dot, three for the
// update), and the dot waits on its one accumulator. axpyDot fuses each
// update with the next dot, w −= h_i·v_i then h_{i+1} = w·v_{i+1}, in one
// pass, and the last update with ‖w‖²: the same operations as modified
// Gram–Schmidt, four passes per basis vector instead of five, the sums in
// eight independent partial sums. gonum's floats has no such fused kernel,
// hence these (AVX in kernels_amd64.s; the Go loops below give the same
// bits, TestLaneKernelsAsmMatchGo).

// dotLanes returns Σ x[k]·y[k]: eight partial sums (lane k mod 8 over the
// whole groups of eight) in k order from +0, added as laneSum does, then
// the remaining terms in order.
func dotLanes(x, y []float64) float64 {
	y = y[:len(x)]
	nb := len(x) / 8
	var r float64
	if useAsm && nb > 0 {
		r = dotLanesAsm(&x[0], &y[0], nb)
	} else {
		var s [8]float64
		for k := 0; k < 8*nb; k += 8 {
			xs, ys := x[k:k+8:k+8], y[k:k+8:k+8]
			for l := range s {
				s[l] += float64(xs[l] * ys[l])
			}
		}
		r = laneSum(&s)
	}
	for k := 8 * nb; k < len(x); k++ {
		r += float64(x[k] * y[k])
	}
	return r
}

// axpyDot sets w += a·v (a rounded product, then a rounded sum) and
// returns Σ w[k]·u[k] of the new w, summed as dotLanes sums; u may be w.
func axpyDot(w []float64, a float64, v, u []float64) float64 {
	v, u = v[:len(w)], u[:len(w)]
	nb := len(w) / 8
	var r float64
	if useAsm && nb > 0 {
		r = axpyDotLanesAsm(&w[0], &v[0], &u[0], a, nb)
	} else {
		var s [8]float64
		for k := 0; k < 8*nb; k += 8 {
			ws, vs := w[k:k+8:k+8], v[k:k+8:k+8]
			for l := range s {
				ws[l] += float64(a * vs[l])
				s[l] += float64(ws[l] * u[k+l])
			}
		}
		r = laneSum(&s)
	}
	for k := 8 * nb; k < len(w); k++ {
		w[k] += float64(a * v[k])
		r += float64(w[k] * u[k])
	}
	return r
}

// laneSum adds eight partial sums as the AVX kernels do.
func laneSum(s *[8]float64) float64 {
	return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]))
}
