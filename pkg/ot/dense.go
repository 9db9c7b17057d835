package ot

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/floats"
)

// DenseKernel is the Gibbs kernel of an explicit rows×cols cost matrix, for
// arbitrary point clouds, small problems and as a reference for tests. It
// stores K (8·rows·cols bytes) and keeps a reference to the cost matrix.
type DenseKernel struct {
	rows, cols int
	eps        float64
	c          []float64 // cost, row-major, not copied
	k          []float64 // exp(-c/ε)
	sym        bool
	job        densePass
	wg         sync.WaitGroup
}

// NewDenseKernel returns the Gibbs kernel of the row-major rows×cols cost
// matrix cost at regularization eps (raw cost unit). cost is kept, not
// copied, and must not change afterwards. Costs must be finite and ≥ 0.
func NewDenseKernel(cost []float64, rows, cols int, eps float64) (*DenseKernel, error) {
	if rows < 1 || cols < 1 || len(cost) != rows*cols {
		return nil, fmt.Errorf("ot: cost matrix has %d entries, want %d×%d", len(cost), rows, cols)
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, fmt.Errorf("ot: ε = %g is not a positive finite number", eps)
	}
	for i, c := range cost {
		if !(c >= 0) || math.IsInf(c, 0) {
			return nil, fmt.Errorf("ot: cost entry (%d, %d) = %g is not a non-negative finite number", i/cols, i%cols, c)
		}
	}
	dk := &DenseKernel{rows: rows, cols: cols, eps: eps, c: cost, k: make([]float64, len(cost))}
	for i, c := range cost {
		dk.k[i] = flushSubnormal(math.Exp(-c / eps))
	}
	dk.sym = rows == cols
	for i := 0; i < rows && dk.sym; i++ {
		for j := i + 1; j < cols; j++ {
			if cost[i*cols+j] != cost[j*cols+i] {
				dk.sym = false
				break
			}
		}
	}
	return dk, nil
}

// Rows is the number of source points.
func (dk *DenseKernel) Rows() int { return dk.rows }

// Cols is the number of target points.
func (dk *DenseKernel) Cols() int { return dk.cols }

// Eps is the regularization in the raw cost unit.
func (dk *DenseKernel) Eps() float64 { return dk.eps }

// Apply sets dst = K·v and returns dst.
func (dk *DenseKernel) Apply(dst, v []float64) []float64 {
	return dk.run(dst, v, false, opMul)
}

// ApplyT sets dst = Kᵀ·u and returns dst.
func (dk *DenseKernel) ApplyT(dst, u []float64) []float64 {
	return dk.run(dst, u, true, opMul)
}

// ApplyCost sets dst = (K⊙C)·v and returns dst.
func (dk *DenseKernel) ApplyCost(dst, v []float64) []float64 {
	return dk.run(dst, v, false, opCost)
}

// LogApply sets dst_i = log Σ_j exp(-C_ij/ε + x_j).
func (dk *DenseKernel) LogApply(dst, x []float64) []float64 {
	return dk.run(dst, x, false, opLog)
}

// LogApplyT sets dst_j = log Σ_i exp(-C_ij/ε + x_i).
func (dk *DenseKernel) LogApplyT(dst, x []float64) []float64 {
	return dk.run(dst, x, true, opLog)
}

// LogApplyCost sets dst_i = log Σ_j C_ij·exp(-C_ij/ε + x_j).
func (dk *DenseKernel) LogApplyCost(dst, x []float64) []float64 {
	return dk.run(dst, x, false, opLogCost)
}

const (
	opMul = iota
	opCost
	opLog
	opLogCost
)

func (dk *DenseKernel) run(dst, v []float64, trans bool, op int) []float64 {
	out, in := dk.rows, dk.cols
	if trans {
		out, in = in, out
	}
	if len(dst) != out || len(v) != in {
		panic(fmt.Sprintf("ot: DenseKernel: lengths %d, %d; want %d, %d", len(dst), len(v), out, in))
	}
	if sameSlice(dst, v) {
		panic("ot: DenseKernel: dst must not alias the input")
	}
	if trans && dk.sym {
		trans = false
	}
	dk.job = densePass{dk: dk, dst: dst, v: v, trans: trans, op: op}
	parallel(out, 16, &dk.job, &dk.wg)
	return dst
}

// densePass computes output entries [lo, hi) of a dense kernel product.
type densePass struct {
	dk     *DenseKernel
	dst, v []float64
	trans  bool
	op     int
}

func (p *densePass) runRange(_, lo, hi int) {
	dk := p.dk
	eps := dk.eps
	for i := lo; i < hi; i++ {
		if !p.trans && p.op == opMul {
			p.dst[i] = floats.Dot(dk.k[i*dk.cols:(i+1)*dk.cols], p.v)
			continue
		}
		// Entry (i, j) of the operator; for trans, element (j, i) of C.
		at := func(j int) int { return i*dk.cols + j }
		if p.trans {
			at = func(j int) int { return j*dk.cols + i }
		}
		switch p.op {
		case opMul:
			var s float64
			for j, x := range p.v {
				s += dk.k[at(j)] * x
			}
			p.dst[i] = s
		case opCost:
			var s float64
			for j, x := range p.v {
				s += flushSubnormal(dk.k[at(j)]*dk.c[at(j)]) * x
			}
			p.dst[i] = s
		case opLog, opLogCost:
			m := math.Inf(-1)
			for j, x := range p.v {
				t := -dk.c[at(j)]/eps + x
				if p.op == opLogCost {
					t += math.Log(dk.c[at(j)])
				}
				if t > m {
					m = t
				}
			}
			if math.IsInf(m, -1) {
				p.dst[i] = m
				continue
			}
			var s float64
			for j, x := range p.v {
				t := -dk.c[at(j)]/eps + x
				if p.op == opLogCost {
					t += math.Log(dk.c[at(j)])
				}
				s += math.Exp(t - m)
			}
			p.dst[i] = m + math.Log(s)
		}
	}
}
