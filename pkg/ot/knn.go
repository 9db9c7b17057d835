package ot

import (
	"math"
	"sync"
)

// The k-nearest-neighbour graph of a PointCloud, for SparsePointKernel.
// It is exact and found by brute force: every pair's cost is computed once,
// in tiles (pointRowTile rows against a column tile of about 32 KB of
// coordinates, as PointKernel's tiles), and each row keeps its k best
// candidates in a bounded max-heap. That is O(n²d) time, as one exact
// kernel application without the exp (measured: BenchmarkKNNGraph), and
// O(nk) memory. A k-d tree or ball tree would be exact too but degenerates
// to the same scan in 28 dimensions unless the points have a low intrinsic
// dimension, and a random-projection forest is approximate; the brute-force
// scan is exact whatever the geometry, deterministic and simple.
//
// Order: row i's neighbours are the k other points j ≠ i with the smallest
// (C_ij, j), ties in cost broken by the smaller index. Each row is scanned by
// one goroutine in increasing j, so the graph does not depend on the number
// of workers. Costs are summed in coordinate order, as PointCloud.Cost, so
// they equal it bitwise.

// knnPass finds the neighbours of tiles of pointRowTile rows.
type knnPass struct {
	pc      *PointCloud
	k       int
	idx     []int32   // n×k: row i's heap, then its sorted neighbours
	cost    []float64 // n×k: their costs
	colTile int
}

// knnGraph returns row i's k nearest other points idx[i·k : (i+1)·k] and
// their costs, sorted by (cost, index); 1 ≤ k ≤ n−1.
func knnGraph(pc *PointCloud, k int) (idx []int32, cost []float64) {
	n := pc.n
	p := &knnPass{pc: pc, k: k, idx: make([]int32, n*k), cost: make([]float64, n*k), colTile: pointColTile(pc.d)}
	for q := range p.cost {
		p.cost[q], p.idx[q] = math.Inf(1), -1
	}
	var wg sync.WaitGroup
	parallel((n+pointRowTile-1)/pointRowTile, 1, p, &wg)
	return p.idx, p.cost
}

func (p *knnPass) runRange(_, lo, hi int) {
	pc, k := p.pc, p.k
	n, d, ct := pc.n, pc.d, p.colTile
	for t := lo; t < hi; t++ {
		r0, r1 := t*pointRowTile, min((t+1)*pointRowTile, n)
		for j0 := 0; j0 < n; j0 += ct {
			j1 := min(j0+ct, n)
			for i := r0; i < r1; i++ {
				hi, hc := p.idx[i*k:(i+1)*k], p.cost[i*k:(i+1)*k]
				knnTile(hi, hc, i, j0, j1, pc.x, pc.w, d)
			}
		}
		for i := r0; i < r1; i++ {
			heapSort(p.idx[i*k:(i+1)*k], p.cost[i*k:(i+1)*k])
		}
	}
}

// knnTile offers columns [j0, j1) (except i itself) to row i's heap (hi,
// hc): a max-heap by (cost, index) whose top is the worst kept candidate.
// Columns arrive in increasing index, so a candidate beats the top only by
// a strictly smaller cost. Four columns are summed at a time (independent
// chains, each in coordinate order).
func knnTile(hi []int32, hc []float64, i, j0, j1 int, x, w []float64, d int) {
	xi := x[i*d : (i+1)*d]
	w = w[:d]
	j := j0
	for ; j+4 <= j1; j += 4 {
		a, b, c, e := x[j*d:(j+1)*d], x[(j+1)*d:(j+2)*d], x[(j+2)*d:(j+3)*d], x[(j+3)*d:(j+4)*d]
		var s0, s1, s2, s3 float64
		for q, wq := range w {
			v := xi[q]
			t0, t1, t2, t3 := v-a[q], v-b[q], v-c[q], v-e[q]
			s0 += wq * t0 * t0
			s1 += wq * t1 * t1
			s2 += wq * t2 * t2
			s3 += wq * t3 * t3
		}
		for m, s := range [4]float64{s0, s1, s2, s3} {
			if s < hc[0] && j+m != i {
				heapReplace(hi, hc, int32(j+m), s)
			}
		}
	}
	for ; j < j1; j++ {
		if s := sqDist(xi, x[j*d:(j+1)*d], w); s < hc[0] && j != i {
			heapReplace(hi, hc, int32(j), s)
		}
	}
}

// heapWorse reports whether entry a ranks after entry b: a larger cost,
// or the same cost and a larger index (an unfilled slot, cost +Inf, ranks
// after every candidate).
func heapWorse(hi []int32, hc []float64, a, b int) bool {
	return hc[a] > hc[b] || (hc[a] == hc[b] && hi[a] > hi[b])
}

// heapReplace replaces the heap's top with (j, c) and restores the heap.
func heapReplace(hi []int32, hc []float64, j int32, c float64) {
	hi[0], hc[0] = j, c
	siftDown(hi, hc, 0, len(hi))
}

// siftDown moves entry r of the max-heap hi[:m], hc[:m] down to its place.
func siftDown(hi []int32, hc []float64, r, m int) {
	for {
		c := 2*r + 1
		if c >= m {
			return
		}
		if c+1 < m && heapWorse(hi, hc, c+1, c) {
			c++
		}
		if !heapWorse(hi, hc, c, r) {
			return
		}
		hi[r], hi[c] = hi[c], hi[r]
		hc[r], hc[c] = hc[c], hc[r]
		r = c
	}
}

// heapSort sorts the max-heap (hi, hc) in increasing (cost, index).
func heapSort(hi []int32, hc []float64) {
	for m := len(hi) - 1; m > 0; m-- {
		hi[0], hi[m] = hi[m], hi[0]
		hc[0], hc[m] = hc[m], hc[0]
		siftDown(hi, hc, 0, m)
	}
}
