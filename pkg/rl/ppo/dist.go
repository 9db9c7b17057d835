package ppo

import "math"

// logSqrt2Pi is log(sqrt(2π)).
var logSqrt2Pi = 0.5 * math.Log(2*math.Pi)

// gaussLogProb returns log N(a; mean, diag(exp(logStd))²).
func gaussLogProb(mean, logStd, a []float64) float64 {
	s := 0.0
	for j, m := range mean {
		z := (a[j] - m) * math.Exp(-logStd[j])
		s += -0.5*z*z - logStd[j] - logSqrt2Pi
	}
	return s
}

// gaussLogProbGrad adds c·∂logp/∂mean to dMean and c·∂logp/∂logStd to dLogStd, and returns logp.
func gaussLogProbGrad(mean, logStd, a []float64, c float64, dMean, dLogStd []float64) float64 {
	s := 0.0
	for j, m := range mean {
		inv := math.Exp(-logStd[j])
		z := (a[j] - m) * inv
		s += -0.5*z*z - logStd[j] - logSqrt2Pi
		dMean[j] += c * z * inv
		dLogStd[j] += c * (z*z - 1)
	}
	return s
}

// gaussEntropy returns the entropy of a diagonal Gaussian with the given log standard deviations.
func gaussEntropy(logStd []float64) float64 {
	s := 0.0
	for _, l := range logStd {
		s += 0.5 + logSqrt2Pi + l
	}
	return s
}

// logSumExp returns log Σ exp(x_i), stably.
func logSumExp(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// catLogProbEntropyGrad computes, for logits x and action k, log p_k and the
// entropy H, and adds cLogp·∂log p_k/∂x + cEnt·∂H/∂x to dx.
func catLogProbEntropyGrad(x []float64, k int, cLogp, cEnt float64, dx []float64) (logp, ent float64) {
	p := make([]float64, len(x))
	lse, logp, ent := catProbs(x, k, p)
	catGrad(x, k, lse, ent, p, cLogp, cEnt, dx)
	return logp, ent
}

// catProbs sets p[j] to the probability of each logit and returns
// lse = log Σ exp(x_j), log p_k and the entropy. It takes one exponential
// per logit: p_j = exp(x_j − m)/Σ_i exp(x_i − m) with m = max x reuses the
// terms of the sum.
func catProbs(x []float64, k int, p []float64) (lse, logp, ent float64) {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	s := 0.0
	for j, v := range x {
		e := math.Exp(v - m)
		p[j] = e
		s += e
	}
	lse = m + math.Log(s)
	inv := 1 / s
	for j, v := range x {
		pj := p[j] * inv
		p[j] = pj
		ent -= pj * (v - lse)
	}
	return lse, x[k] - lse, ent
}

// catGrad adds cLogp·∂log p_k/∂x + cEnt·∂H/∂x to dx, from catProbs' lse,
// entropy and probabilities (no exponential is recomputed).
func catGrad(x []float64, k int, lse, ent float64, p []float64, cLogp, cEnt float64, dx []float64) {
	for j, v := range x {
		lp := v - lse
		g := -cLogp * p[j]
		if j == k {
			g += cLogp
		}
		// ∂H/∂x_j = -p_j (log p_j + H)
		g -= cEnt * p[j] * (lp + ent)
		dx[j] += g
	}
}

// catLogProbEntropy returns log p_k and the entropy of the categorical
// distribution with logits x, as catProbs computes them.
func catLogProbEntropy(x []float64, k int) (logp, ent float64) {
	var buf [8]float64
	var p []float64
	if len(x) <= len(buf) {
		p = buf[:len(x)]
	} else {
		p = make([]float64, len(x))
	}
	_, logp, ent = catProbs(x, k, p)
	return logp, ent
}

// sdeEps is stable-baselines3's epsilon inside gSDE's sqrt(variance + eps).
const sdeEps = 1e-6

// sdeLogStd writes gSDE's per-coordinate log standard deviation at latent
// features z to dst: s_k = ½ log(Σ_j z_j² exp(2 L_jk) + sdeEps), L being the
// len(z) × len(dst) matrix of log standard deviations (row-major).
func sdeLogStd(dst, z, L []float64) []float64 {
	na := len(dst)
	for k := range dst {
		v := sdeEps
		for j, zj := range z {
			sd := math.Exp(L[j*na+k])
			v += zj * zj * sd * sd
		}
		dst[k] = 0.5 * math.Log(v)
	}
	return dst
}

// sdeLogStdGrad adds to dL the gradient through s = sdeLogStd(z, L) of a
// function whose gradient with respect to s is dS: ∂s_k/∂L_jk = z_j² exp(2 L_jk) / exp(2 s_k).
func sdeLogStdGrad(dL, z, L, s, dS []float64) {
	na := len(s)
	for k := range s {
		c := dS[k] * math.Exp(-2*s[k])
		if c == 0 {
			continue
		}
		for j, zj := range z {
			sd := math.Exp(L[j*na+k])
			dL[j*na+k] += c * zj * zj * sd * sd
		}
	}
}
