package ot

import (
	"fmt"
	"math"
	"sync"
)

// The scattered-support kernel is written by hand because no Go library
// applies a Gibbs kernel without storing it: gonum's dense products need the
// n×n matrix (8n² bytes: 3.2 GB at n = 20 000). Each entry costs d
// subtractions and multiply-adds for the cost and one exp. On CPUs with
// AVX2 and FMA the tiles run in pointexp_amd64.s (costs in registers, a
// vector exp; AVX-512 where present; see pointexp.go for what they compute
// and how closely they match); elsewhere, for LogApplyCost and when
// plainPoints is set, scaleTile and logTile (pure Go, math.Exp) do.

// Tile sizes of a PointKernel application: a work item is pointRowTile
// consecutive rows; each row's sum runs over the columns in order, a tile of
// pointColTile(d) columns at a time, so that the tile's coordinates stay in
// the first-level cache while every row of the item reads them.
const pointRowTile = 16

// pointColTile returns the number of columns per tile for points of
// dimension d: about 32 KB of coordinates, between 64 and 1024 columns.
func pointColTile(d int) int {
	return max(64, min(1024, 4096/d))
}

// PointKernel is the Gibbs kernel K_ij = exp(−C(x_i, x_j)/ε) of a
// PointCloud, applied on the fly: no n×n matrix is stored (O(n + workers·
// tile) memory) and one application costs O(n²d) time. The log-domain
// applications are a per-row log-sum-exp, stabilized tile by tile (running
// maximum and rescaled sum), so they stay finite at an ε small enough to
// make every off-diagonal entry underflow. Rows are split across the
// package's workers; each row is reduced by one goroutine in a fixed order
// (column tiles in order, columns in order within a tile), so results are
// bitwise independent of the number of workers. Applications allocate
// nothing. Like every Kernel it is not safe for concurrent use.
type PointKernel struct {
	pc      *PointCloud
	eps     float64
	colTile int
	job     pointPass
	scratch []float64 // per worker: colTile + 2·pointRowTile
	wg      sync.WaitGroup

	// The vector path's tiles: vcol columns (a multiple of pointLanes), the
	// tile at column j0 stored from xt[j0·d] as d rows of its column count
	// rounded up to pointLanes (zero-padded); vpad holds the input in the
	// same tiling (padded with 0, or −Inf in the log domain), vscratch per
	// worker a tile's exponents and the rows' partial sums and maxima.
	vcol     int
	xt       []float64
	vpad     []float64
	vscratch []float64
}

// vecScratch is the length of one worker's part of vscratch.
func (pk *PointKernel) vecScratch() int {
	return pk.vcol + pointRowTile*(pointLanes+1)
}

// NewPointKernel returns the Gibbs kernel of pc at regularization eps in the
// raw cost unit (multiply by pc.CostUnit() to convert from cloud units).
func NewPointKernel(pc *PointCloud, eps float64) (*PointKernel, error) {
	if pc == nil {
		return nil, fmt.Errorf("ot: no point cloud: %w", ErrPoints)
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, fmt.Errorf("ot: ε = %g is not a positive finite number", eps)
	}
	ct := pointColTile(pc.d)
	pk := &PointKernel{pc: pc, eps: eps, colTile: ct}
	pk.scratch = make([]float64, workers()*(ct+2*pointRowTile))
	pk.job.pk = pk
	if hasFMA {
		pk.initVec()
	}
	return pk, nil
}

// initVec lays out the cloud's coordinates for the vector path.
func (pk *PointKernel) initVec() {
	n, d := pk.pc.n, pk.pc.d
	pk.vcol = pointColTile(d) &^ (pointLanes - 1)
	nt := (n + pk.vcol - 1) / pk.vcol
	pk.xt = make([]float64, nt*pk.vcol*d)
	pk.vpad = make([]float64, nt*pk.vcol)
	pk.vscratch = make([]float64, workers()*pk.vecScratch())
	for j0 := 0; j0 < n; j0 += pk.vcol {
		m := min(pk.vcol, n-j0)
		m16 := (m + pointLanes - 1) &^ (pointLanes - 1)
		for k := range d {
			row := pk.xt[j0*d+k*m16 : j0*d+(k+1)*m16]
			for j := range m {
				row[j] = pk.pc.x[(j0+j)*d+k]
			}
		}
	}
}

// Cloud returns the kernel's point cloud.
func (pk *PointKernel) Cloud() *PointCloud { return pk.pc }

// Rows is the number of points.
func (pk *PointKernel) Rows() int { return pk.pc.n }

// Cols is the number of points.
func (pk *PointKernel) Cols() int { return pk.pc.n }

// Eps is the regularization in the raw cost unit.
func (pk *PointKernel) Eps() float64 { return pk.eps }

// Apply sets dst = K·v and returns dst; entries of K below the normal
// float64 range are dropped, as in DenseKernel. dst must not alias v.
func (pk *PointKernel) Apply(dst, v []float64) []float64 { return pk.run(dst, v, opMul) }

// ApplyT equals Apply (the kernel is symmetric).
func (pk *PointKernel) ApplyT(dst, u []float64) []float64 { return pk.run(dst, u, opMul) }

// ApplyCost sets dst = (K⊙C)·v and returns dst.
func (pk *PointKernel) ApplyCost(dst, v []float64) []float64 { return pk.run(dst, v, opCost) }

// LogApply sets dst_i = log Σ_j exp(−C_ij/ε + x_j) and returns dst.
func (pk *PointKernel) LogApply(dst, x []float64) []float64 { return pk.run(dst, x, opLog) }

// LogApplyT equals LogApply (the kernel is symmetric).
func (pk *PointKernel) LogApplyT(dst, x []float64) []float64 { return pk.run(dst, x, opLog) }

// LogApplyCost sets dst_i = log Σ_j C_ij·exp(−C_ij/ε + x_j) and returns dst.
func (pk *PointKernel) LogApplyCost(dst, x []float64) []float64 {
	return pk.run(dst, x, opLogCost)
}

// checkPointApply panics, naming the kernel, unless dst and v both have
// the n entries of a point kernel's application and dst does not alias v.
func checkPointApply(kernel string, n int, dst, v []float64) {
	if len(dst) != n || len(v) != n {
		panic(fmt.Sprintf("ot: %s: lengths %d, %d; want %d", kernel, len(dst), len(v), n))
	}
	if sameSlice(dst, v) {
		panic("ot: " + kernel + ": dst must not alias the input")
	}
}

func (pk *PointKernel) run(dst, v []float64, op int) []float64 {
	n := pk.pc.n
	checkPointApply("PointKernel", n, dst, v)
	j := &pk.job
	j.dst, j.v, j.op = dst, v, op
	j.vec = hasFMA && !plainPoints && op != opLogCost
	if j.vec {
		pad := 0.0
		if op == opLog {
			pad = math.Inf(-1)
		}
		for j0 := 0; j0 < n; j0 += pk.vcol {
			m := min(pk.vcol, n-j0)
			m16 := (m + pointLanes - 1) &^ (pointLanes - 1)
			copy(pk.vpad[j0:j0+m], v[j0:j0+m])
			for q := j0 + m; q < j0+m16; q++ {
				pk.vpad[q] = pad
			}
		}
	}
	parallel((n+pointRowTile-1)/pointRowTile, 1, j, &pk.wg)
	j.dst, j.v = nil, nil
	return dst
}

// pointPass computes the rows of one PointKernel application; an item is a
// tile of pointRowTile rows.
type pointPass struct {
	pk     *PointKernel
	dst, v []float64
	op     int
	vec    bool // the assembly kernels (runVec)
}

// expUnderflow bounds the exponents worth evaluating: exp(t) for
// t < expUnderflow is below the normal float64 range (flushSubnormal's 0).
const expUnderflow = -708.3964185322641 // log(minNormal)

func (p *pointPass) runRange(c, lo, hi int) {
	if p.vec {
		p.runVec(c, lo, hi)
		return
	}
	pk := p.pk
	pc := pk.pc
	n, d, ct := pc.n, pc.d, pk.colTile
	sc := pk.scratch[c*(ct+2*pointRowTile) : (c+1)*(ct+2*pointRowTile)]
	buf, acc, mx := sc[:ct], sc[ct:ct+pointRowTile], sc[ct+pointRowTile:]
	ieps := 1 / pk.eps
	w := pc.w
	log := p.op == opLog || p.op == opLogCost
	for t := lo; t < hi; t++ {
		r0, r1 := t*pointRowTile, min((t+1)*pointRowTile, n)
		for r := range acc {
			acc[r], mx[r] = 0, math.Inf(-1)
		}
		for j0 := 0; j0 < n; j0 += ct {
			j1 := min(j0+ct, n)
			xs := pc.x[j0*d : j1*d]
			vs := p.v[j0:j1]
			for i := r0; i < r1; i++ {
				xi := pc.x[i*d : (i+1)*d]
				r := i - r0
				if !log {
					acc[r] += scaleTile(xi, xs, vs, w, ieps, p.op == opCost)
					continue
				}
				acc[r], mx[r] = logTile(buf[:j1-j0], xi, xs, vs, w, ieps, p.op == opLogCost, acc[r], mx[r])
			}
		}
		out := p.dst[r0:r1]
		for r := range out {
			if !log {
				out[r] = acc[r]
				continue
			}
			if math.IsInf(mx[r], -1) {
				out[r] = mx[r]
			} else {
				out[r] = mx[r] + math.Log(acc[r])
			}
		}
	}
}

// scaleTile returns Σ_j K(x_i, x_j)·v_j over the tile's columns (xs holds
// their coordinates, row-major), or Σ_j flush(K·C)·v_j with cost; the sum
// runs over j in order.
func scaleTile(xi, xs, vs, w []float64, ieps float64, cost bool) float64 {
	d := len(w)
	xi = xi[:d]
	var s float64
	for j, vj := range vs {
		c := sqDist(xi, xs[j*d:(j+1)*d], w)
		e := -c * ieps
		if e < expUnderflow {
			continue
		}
		k := flushSubnormal(math.Exp(e))
		if cost {
			k = flushSubnormal(k * c)
		}
		s += k * vj
	}
	return s
}

// logTile folds one tile of row i into its running log-sum-exp: m is the
// running maximum of the exponents t_j = −C_ij/ε + x_j (+ log C_ij with
// cost) and s the sum of exp(t_j − m) so far; it returns the updated (s, m).
// buf holds the tile's exponents.
func logTile(buf, xi, xs, vs, w []float64, ieps float64, cost bool, s, m float64) (float64, float64) {
	d := len(w)
	xi = xi[:d]
	buf = buf[:len(vs)]
	tm := math.Inf(-1)
	for j, xj := range vs {
		c := sqDist(xi, xs[j*d:(j+1)*d], w)
		e := -c*ieps + xj
		if cost {
			e += math.Log(c) // −Inf at c = 0
		}
		buf[j] = e
		if e > tm {
			tm = e
		}
	}
	if math.IsInf(tm, -1) || math.IsNaN(tm) {
		return s, m
	}
	if tm > m {
		s *= math.Exp(m - tm) // 0 when m = −Inf
		m = tm
	}
	lo := m + expUnderflow
	for _, e := range buf {
		if e >= lo {
			s += math.Exp(e - m)
		}
	}
	return s, m
}

// runVec is runRange on the vector path: the same tiles of rows, the
// vector path's tiles of columns, each row's sum in pointLanes partial sums.
func (p *pointPass) runVec(c, lo, hi int) {
	pk := p.pk
	pc := pk.pc
	n, d, ct := pc.n, pc.d, pk.vcol
	sz := pk.vecScratch()
	sc := pk.vscratch[c*sz : (c+1)*sz]
	buf, lanes, mx := sc[:ct], sc[ct:ct+pointRowTile*pointLanes], sc[ct+pointRowTile*pointLanes:]
	nieps := -(1 / pk.eps)
	w, tab := pc.w, &pexTab[0][0]
	log, cost := p.op == opLog, p.op == opCost
	mul, logE, logSum := pointMul4, pointLogE4, pointLogSum4
	if pointZMM {
		mul, logE, logSum = pointMul8, pointLogE8, pointLogSum8
	}
	for t := lo; t < hi; t++ {
		r0, r1 := t*pointRowTile, min((t+1)*pointRowTile, n)
		for q := range lanes {
			lanes[q] = 0
		}
		for r := range mx {
			mx[r] = math.Inf(-1)
		}
		for j0 := 0; j0 < n; j0 += ct {
			m16 := (min(ct, n-j0) + pointLanes - 1) &^ (pointLanes - 1)
			xt, vs := &pk.xt[j0*d], &pk.vpad[j0]
			for i := r0; i < r1; i++ {
				r := i - r0
				ln := lanes[r*pointLanes : (r+1)*pointLanes]
				xi := &pc.x[i*d]
				if !log {
					mul(&ln[0], xt, m16, d, xi, &w[0], vs, nieps, cost, tab)
					continue
				}
				tm := logE(&buf[0], xt, m16, d, xi, &w[0], vs, nieps, tab)
				if math.IsInf(tm, -1) {
					continue
				}
				if tm > mx[r] {
					f := math.Exp(mx[r] - tm) // 0 when mx[r] = −Inf
					for q := range ln {
						ln[q] *= f
					}
					mx[r] = tm
				}
				logSum(&ln[0], &buf[0], m16, mx[r], tab)
			}
		}
		out := p.dst[r0:r1]
		for r := range out {
			s := sumLanes(lanes[r*pointLanes:])
			switch {
			case !log:
				out[r] = s
			case math.IsInf(mx[r], -1):
				out[r] = mx[r]
			default:
				out[r] = mx[r] + math.Log(s)
			}
		}
	}
}
