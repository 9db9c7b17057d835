package ppo

import "math"

// RunningMeanStd tracks the mean and (population) variance of a stream of
// vectors with Chan et al.'s parallel update, as stable-baselines3's
// RunningMeanStd does (initial count 1e-4, mean 0, variance 1).
type RunningMeanStd struct {
	// Mean and Var are the running per-coordinate mean and variance.
	Mean, Var []float64
	// Count is the (fractional) number of vectors seen.
	Count float64

	bm, bv []float64
}

// NewRunningMeanStd returns statistics for vectors of length dim.
func NewRunningMeanStd(dim int) *RunningMeanStd {
	r := &RunningMeanStd{Mean: make([]float64, dim), Var: make([]float64, dim), Count: 1e-4,
		bm: make([]float64, dim), bv: make([]float64, dim)}
	for i := range r.Var {
		r.Var[i] = 1
	}
	return r
}

// Update folds the n rows of x (n × dim, row-major) into the statistics.
func (r *RunningMeanStd) Update(x []float64, n int) {
	d := len(r.Mean)
	if len(x) < n*d {
		panic("ppo: RunningMeanStd.Update: input too short")
	}
	if n == 0 {
		return
	}
	bm, bv := r.bm, r.bv
	for j := range bm {
		bm[j], bv[j] = 0, 0
	}
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			bm[j] += x[i*d+j]
		}
	}
	for j := range bm {
		bm[j] /= float64(n)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			e := x[i*d+j] - bm[j]
			bv[j] += e * e
		}
	}
	bc := float64(n)
	tot := r.Count + bc
	for j := 0; j < d; j++ {
		bv[j] /= bc
		delta := bm[j] - r.Mean[j]
		r.Mean[j] += delta * bc / tot
		m2 := r.Var[j]*r.Count + bv[j]*bc + delta*delta*r.Count*bc/tot
		r.Var[j] = m2 / tot
	}
	r.Count = tot
}

// Normalize writes clip((x-mean)/sqrt(var+eps), ±clip) of the n rows of x to dst and returns dst.
func (r *RunningMeanStd) Normalize(dst, x []float64, n int, eps, clip float64) []float64 {
	d := len(r.Mean)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			v := (x[i*d+j] - r.Mean[j]) / math.Sqrt(r.Var[j]+eps)
			dst[i*d+j] = math.Max(-clip, math.Min(clip, v))
		}
	}
	return dst
}
