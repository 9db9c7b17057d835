package ot

import (
	"fmt"
	"math"
	"slices"
	"sync"
)

// SparsePointKernel is the Gibbs kernel K_ij = exp(−C(x_i, x_j)/ε) of a
// PointCloud truncated to a symmetric k-nearest-neighbour graph: K_ij is
// kept when j is among the k nearest other points of i or i among those of
// j (and always on the diagonal), and dropped otherwise. It is stored in
// CSR form (a column index, the cost and the kernel value per entry: 20
// bytes, at most n(2k+1) entries), so one application costs O(nnz) instead
// of PointKernel's O(n²d), and the memory is O(nk).
//
// Why a sparse kernel: at the ε fusion uses (a fraction of a few median
// nearest-neighbour costs) the heat kernel of a cloud of low intrinsic
// dimension, such as a probe of rollout states, is concentrated on each
// point's near neighbours, and a dropped entry is at most
// exp(−τ_i/ε) with τ_i the cost of i's k-th neighbour (MaxDropped).
// Low-rank approximations (Nyström, positive random features) are accurate
// only when ε is large against the cloud's diameter: their error in a
// kernel entry does not shrink with the entry, so at small ε it swamps the
// small entries that carry the transport. Where the points fill many
// dimensions evenly (a uniform 28-dimensional cube), every point is nearly
// as far as the nearest and no k ≪ n is accurate at such an ε
// (DroppedMassBound says so), and PointKernel is the exact choice.
//
// Construction finds the exact k-nearest-neighbour graph by a brute-force
// scan in tiles (knn.go: O(n²d) once, as one exact kernel application
// without the exp). Applications split rows across the package's workers,
// each row summed in increasing column order by one goroutine, so results
// are bitwise independent of the number of workers; they allocate nothing.
// Like every Kernel it is not safe for concurrent use.
type SparsePointKernel struct {
	pc     *PointCloud
	eps    float64
	k      int
	rowPtr []int     // n+1
	col    []int32   // nnz, increasing within a row
	cost   []float64 // nnz: C_ij
	kv     []float64 // nnz: exp(−C_ij/ε), 0 below the normal range
	tau    []float64 // n: cost of row i's k-th neighbour (+Inf when k = n−1)
	job    sparsePass
	wg     sync.WaitGroup
}

// NewSparsePointKernel returns the Gibbs kernel of pc at regularization
// eps (raw cost unit, as NewPointKernel) truncated to its symmetric
// k-nearest-neighbour graph, 1 ≤ k ≤ pc.Len()−1 (k = Len−1 keeps every
// entry: the exact kernel, stored). It refuses a nil cloud, an ε that is not
// positive and finite, and a k out of range, with an error naming the bound.
// Its O(n²d) neighbour scan also finds every point's nearest-neighbour cost,
// so it sets pc.CostUnit when the graph determines it (each point's k
// neighbours include one at a positive cost, or k = n−1).
func NewSparsePointKernel(pc *PointCloud, eps float64, k int) (*SparsePointKernel, error) {
	if pc == nil {
		return nil, fmt.Errorf("ot: no point cloud: %w", ErrPoints)
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, fmt.Errorf("ot: ε = %g is not a positive finite number", eps)
	}
	n := pc.n
	if k < 1 || k > n-1 {
		return nil, fmt.Errorf("ot: sparse kernel: %d neighbours for %d points, want 1 ≤ k ≤ %d", k, n, n-1)
	}
	idx, cost := knnGraph(pc, k)
	sk := &SparsePointKernel{pc: pc, eps: eps, k: k, tau: make([]float64, n)}
	sk.job.sk = sk
	// The unit and the truncation thresholds; then the costs are dropped.
	rowMin := make([]float64, n)
	seed := true
	for i := range n {
		row := cost[i*k : (i+1)*k]
		sk.tau[i] = row[k-1]
		if k == n-1 {
			sk.tau[i] = math.Inf(1)
		}
		rowMin[i] = math.Inf(1)
		if q := slices.IndexFunc(row, func(c float64) bool { return c > 0 }); q >= 0 {
			rowMin[i] = row[q]
		} else if k < n-1 {
			seed = false // all k neighbours coincide with i: its unit is unknown
		}
	}
	if seed {
		pc.seedCostUnit(rowMin)
	}
	cost = nil
	sk.symmetrize(idx)
	sk.setKernel()
	return sk, nil
}

// WithEps returns the kernel of the same neighbour graph at regularization
// eps (raw cost unit), sharing the graph and recomputing only the kernel
// values (O(nnz)): the way to take ε in cost units without a second
// neighbour scan, since construction sets pc.CostUnit.
func (sk *SparsePointKernel) WithEps(eps float64) (*SparsePointKernel, error) {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, fmt.Errorf("ot: ε = %g is not a positive finite number", eps)
	}
	c := &SparsePointKernel{pc: sk.pc, eps: eps, k: sk.k, rowPtr: sk.rowPtr, col: sk.col, cost: sk.cost, tau: sk.tau}
	c.job.sk = c
	c.setKernel()
	return c, nil
}

// setKernel sets kv = exp(−cost/ε), 0 below the normal range.
func (sk *SparsePointKernel) setKernel() {
	sk.kv = make([]float64, len(sk.cost))
	ieps := 1 / sk.eps
	for q, c := range sk.cost {
		if e := -c * ieps; e >= expUnderflow {
			sk.kv[q] = flushSubnormal(math.Exp(e))
		}
	}
}

// symmetrize builds the CSR rows (columns and costs) from the n×k
// neighbour lists idx: row i holds i, its own neighbours and every j that
// has i as a neighbour, in increasing order.
func (sk *SparsePointKernel) symmetrize(idx []int32) {
	n, k := sk.pc.n, sk.k
	// Reverse lists: rev[rp[j]:rp[j+1]] are the i with j among their
	// neighbours, increasing (filled by increasing i).
	rp := make([]int, n+1)
	for _, j := range idx {
		rp[j+1]++
	}
	for j := range n {
		rp[j+1] += rp[j]
	}
	rev := make([]int32, n*k)
	fillAt := slices.Clone(rp[:n])
	for i := range n {
		for _, j := range idx[i*k : (i+1)*k] {
			rev[fillAt[j]] = int32(i)
			fillAt[j]++
		}
	}
	fillAt = nil
	own := make([]int32, k+1)
	merge := func(i int, emit func(j int32)) {
		own = append(own[:0], idx[i*k:(i+1)*k]...)
		own = append(own, int32(i))
		slices.Sort(own)
		a, b := own, rev[rp[i]:rp[i+1]]
		last := int32(-1)
		for len(a) > 0 || len(b) > 0 {
			var j int32
			if len(b) == 0 || (len(a) > 0 && a[0] <= b[0]) {
				j, a = a[0], a[1:]
			} else {
				j, b = b[0], b[1:]
			}
			if j != last {
				emit(j)
				last = j
			}
		}
	}
	sk.rowPtr = make([]int, n+1)
	for i := range n {
		c := 0
		merge(i, func(int32) { c++ })
		sk.rowPtr[i+1] = sk.rowPtr[i] + c
	}
	nnz := sk.rowPtr[n]
	sk.col, sk.cost = make([]int32, nnz), make([]float64, nnz)
	for i := range n {
		q := sk.rowPtr[i]
		merge(i, func(j int32) {
			sk.col[q], sk.cost[q] = j, sk.pc.Cost(i, int(j))
			q++
		})
	}
}

// Cloud returns the kernel's point cloud.
func (sk *SparsePointKernel) Cloud() *PointCloud { return sk.pc }

// Rows is the number of points.
func (sk *SparsePointKernel) Rows() int { return sk.pc.n }

// Cols is the number of points.
func (sk *SparsePointKernel) Cols() int { return sk.pc.n }

// Eps is the regularization in the raw cost unit.
func (sk *SparsePointKernel) Eps() float64 { return sk.eps }

// Neighbors is the k the kernel was built with.
func (sk *SparsePointKernel) Neighbors() int { return sk.k }

// Nonzeros is the number of stored entries (the diagonal included).
func (sk *SparsePointKernel) Nonzeros() int { return len(sk.col) }

// Bytes is the memory the stored kernel holds (its CSR arrays and per-row
// thresholds), not counting the point cloud.
func (sk *SparsePointKernel) Bytes() int {
	return 20*len(sk.col) + 8*len(sk.rowPtr) + 8*len(sk.tau)
}

// MaxDropped bounds every dropped entry: K_ij ≤ exp(−τ_i/ε) ≤ MaxDropped
// for every (i, j) not stored, with τ_i the cost of i's k-th nearest
// neighbour; 0 when nothing is dropped (k = n−1). So for every v,
// |(K − K_sparse)·v|_i ≤ exp(−τ_i/ε)·‖v‖₁ ≤ MaxDropped·‖v‖₁
// (TestSparsePointKernelTruncationBound).
func (sk *SparsePointKernel) MaxDropped() float64 {
	return math.Exp(-slices.Min(sk.tau) / sk.eps)
}

// DroppedMassBound returns max_i (n − deg_i)·exp(−τ_i/ε) / Σ_j K_sparse,ij,
// with deg_i the stored entries of row i: every dropped entry at its bound,
// relative to the row's kept mass. For v > 0 it bounds the relative error
// |(K − K_sparse)·v|_i / (K_sparse·v)_i by DroppedMassBound·max v / min v.
// It costs O(nnz) and is pessimistic: near 0 the truncation is harmless;
// near or above 1 it says nothing, and more neighbours or the exact
// PointKernel are needed.
func (sk *SparsePointKernel) DroppedMassBound() float64 {
	n, m := sk.pc.n, 0.0
	for i := range n {
		deg := sk.rowPtr[i+1] - sk.rowPtr[i]
		kept := 0.0
		for _, v := range sk.kv[sk.rowPtr[i]:sk.rowPtr[i+1]] {
			kept += v
		}
		m = max(m, float64(n-deg)*math.Exp(-sk.tau[i]/sk.eps)/kept)
	}
	return m
}

// Apply sets dst = K·v and returns dst. dst must not alias v.
func (sk *SparsePointKernel) Apply(dst, v []float64) []float64 { return sk.run(dst, v, opMul) }

// ApplyT equals Apply (the kernel is symmetric).
func (sk *SparsePointKernel) ApplyT(dst, u []float64) []float64 { return sk.run(dst, u, opMul) }

// ApplyCost sets dst = (K⊙C)·v and returns dst.
func (sk *SparsePointKernel) ApplyCost(dst, v []float64) []float64 {
	return sk.run(dst, v, opCost)
}

// LogApply sets dst_i = log Σ_j exp(−C_ij/ε + x_j) over the stored entries
// and returns dst.
func (sk *SparsePointKernel) LogApply(dst, x []float64) []float64 { return sk.run(dst, x, opLog) }

// LogApplyT equals LogApply (the kernel is symmetric).
func (sk *SparsePointKernel) LogApplyT(dst, x []float64) []float64 {
	return sk.run(dst, x, opLog)
}

// LogApplyCost sets dst_i = log Σ_j C_ij·exp(−C_ij/ε + x_j) over the stored
// entries and returns dst.
func (sk *SparsePointKernel) LogApplyCost(dst, x []float64) []float64 {
	return sk.run(dst, x, opLogCost)
}

// sparseRowChunk is the fewest rows a worker takes per application.
const sparseRowChunk = 256

func (sk *SparsePointKernel) run(dst, v []float64, op int) []float64 {
	n := sk.pc.n
	checkPointApply("SparsePointKernel", n, dst, v)
	j := &sk.job
	j.dst, j.v, j.op = dst, v, op
	parallel(n, sparseRowChunk, j, &sk.wg)
	j.dst, j.v = nil, nil
	return dst
}

// sparsePass computes rows [lo, hi) of one SparsePointKernel application.
type sparsePass struct {
	sk     *SparsePointKernel
	dst, v []float64
	op     int
}

func (p *sparsePass) runRange(_, lo, hi int) {
	sk := p.sk
	v := p.v
	ieps := 1 / sk.eps
	for i := lo; i < hi; i++ {
		a, b := sk.rowPtr[i], sk.rowPtr[i+1]
		col, kv, cost := sk.col[a:b], sk.kv[a:b], sk.cost[a:b]
		switch p.op {
		case opMul:
			var s float64
			for q, j := range col {
				s += kv[q] * v[j]
			}
			p.dst[i] = s
		case opCost:
			var s float64
			for q, j := range col {
				s += flushSubnormal(kv[q]*cost[q]) * v[j]
			}
			p.dst[i] = s
		default:
			p.dst[i] = logRow(col, cost, v, ieps, p.op == opLogCost)
		}
	}
}

// logRow returns log Σ_q exp(−cost_q/ε + x[col_q]) (times cost_q with
// withCost), stabilized by the row's maximum exponent; −Inf for an empty sum.
func logRow(col []int32, cost, x []float64, ieps float64, withCost bool) float64 {
	term := func(q int) float64 {
		e := -cost[q]*ieps + x[col[q]]
		if withCost {
			e += math.Log(cost[q]) // −Inf at cost 0
		}
		return e
	}
	m := math.Inf(-1)
	for q := range col {
		m = max(m, term(q))
	}
	if math.IsInf(m, -1) || math.IsNaN(m) {
		return m
	}
	var s float64
	lo := m + expUnderflow
	for q := range col {
		if e := term(q); e >= lo {
			s += math.Exp(e - m)
		}
	}
	return m + math.Log(s)
}
