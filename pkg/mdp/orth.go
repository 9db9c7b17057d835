package mdp

import "unsafe"

// Gram–Schmidt kernels of the scalar GMRES (sparse.go).
//
// Modified Gram–Schmidt subtracts the projections on the basis vectors one
// at a time: h_i = w·v_i, then w −= h_i·v_i. Done as separate calls that is
// five vector passes per basis vector (two for the dot, three for the
// update), and the dot waits on its one accumulator. axpyDot fuses each
// update with the next dot, w −= h_i·v_i then h_{i+1} = w·v_{i+1}, in one
// pass, and the last update with ‖w‖²: the same operations as modified
// Gram–Schmidt, four passes per basis vector instead of five, the sums in
// eight independent partial sums: the block kernels of block.go run on
// the vector viewed as blocks of eight (AVX in kernels_amd64.s, Go loops
// of the same bits: TestLaneKernelsAsmMatchGo). gonum's floats has no such
// fused kernel, hence these.

// dotLanes returns Σ x[k]·y[k]: eight partial sums (lane k mod 8 over the
// whole groups of eight) in k order from +0, added as laneSum does, then
// the remaining terms in order. The groups of eight are blocks (block.go):
// the partial sums are blockDots'.
func dotLanes(x, y []float64) float64 {
	y = y[:len(x)]
	nb := len(x) / 8
	var s blk
	if nb > 0 {
		blockDots(&s, viewBlocks(x, nb), viewBlocks(y, nb))
	}
	r := laneSum(&s)
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
	var s blk
	if nb > 0 {
		ab := blk{a, a, a, a, a, a, a, a}
		blockAxpyDots(&s, viewBlocks(w, nb), &ab, viewBlocks(v, nb), viewBlocks(u, nb))
	}
	r := laneSum(&s)
	for k := 8 * nb; k < len(w); k++ {
		w[k] += float64(a * v[k])
		r += float64(w[k] * u[k])
	}
	return r
}

// viewBlocks views x's first 8·nb entries as nb blocks (the same memory).
func viewBlocks(x []float64, nb int) []blk {
	x = x[:8*nb]
	return unsafe.Slice((*blk)(unsafe.Pointer(&x[0])), nb)
}

// laneSum adds eight partial sums as the AVX kernels do.
func laneSum(s *blk) float64 {
	return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]))
}
