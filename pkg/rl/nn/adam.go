package nn

import "math"

// Adam is the Adam optimiser (Kingma & Ba 2015) over one flat parameter
// vector, with the bias correction of torch.optim.Adam.
type Adam struct {
	// LR is the step size (zero makes Step a no-op on params).
	LR float64
	// Beta1 and Beta2 are the moment decay rates; zero means 0.9 and 0.999.
	Beta1, Beta2 float64
	// Eps is added to the root second moment; zero means 1e-8
	// (stable-baselines3 sets 1e-5 for PPO).
	Eps float64

	m, v []float64
	t    int
}

// NewAdam returns an Adam optimiser for n parameters with step size lr (zero means 3e-4)
// and epsilon eps (zero means 1e-8).
func NewAdam(n int, lr, eps float64) *Adam {
	if lr == 0 {
		lr = 3e-4
	}
	return &Adam{LR: lr, Eps: eps, m: make([]float64, n), v: make([]float64, n)}
}

// Steps returns the number of updates applied so far.
func (a *Adam) Steps() int { return a.t }

// Moments returns the first and second moment estimates (views, not copies).
func (a *Adam) Moments() (m, v []float64) { return a.m, a.v }

// SetState restores moments and step count, e.g. from a checkpoint.
func (a *Adam) SetState(m, v []float64, t int) {
	copy(a.m, m)
	copy(a.v, v)
	a.t = t
}

// Step updates params in place by one Adam step along grad.
func (a *Adam) Step(params, grad []float64) {
	if len(params) != len(a.m) || len(grad) != len(a.m) {
		panic("nn: Adam.Step: length mismatch")
	}
	a.t++
	b1, b2, eps, step, sq := adamCoefficients(a.LR, a.Beta1, a.Beta2, a.Eps, a.t)
	m, v := a.m, a.v
	i0 := 0
	if useFMA {
		i0 = len(grad) &^ 3
		if i0 > 0 {
			k := [7]float64{b1, 1 - b1, b2, 1 - b2, step, sq, eps}
			adamStep(i0, &params[0], &grad[0], &m[0], &v[0], &k)
		}
	}
	for i := i0; i < len(grad); i++ {
		g := grad[i]
		// The conversions forbid fused multiply-adds, so that this loop and
		// adamStep round identically.
		m[i] = float64(b1*m[i]) + float64((1-b1)*g)
		v[i] = float64(b2*v[i]) + float64((1-b2)*g*g)
		params[i] -= step * m[i] / (math.Sqrt(v[i])/sq + eps)
	}
}

// adamCoefficients returns β1, β2 and ε (zero meaning 0.9, 0.999 and 1e-8)
// and, for update number t ≥ 1, torch's step size lr/(1−β1^t) and the root
// √(1−β2^t) of the second moment's bias correction.
func adamCoefficients(lr, beta1, beta2, eps float64, t int) (b1, b2, e, step, sq float64) {
	b1, b2, e = beta1, beta2, eps
	if b1 == 0 {
		b1 = 0.9
	}
	if b2 == 0 {
		b2 = 0.999
	}
	if e == 0 {
		e = 1e-8
	}
	bc1 := 1 - math.Pow(b1, float64(t))
	bc2 := 1 - math.Pow(b2, float64(t))
	return b1, b2, e, lr / bc1, math.Sqrt(bc2)
}

// ClipGradNorm scales the concatenation of grads so that its Euclidean norm is
// at most maxNorm, as torch.nn.utils.clip_grad_norm_ does (scale
// maxNorm/(norm+1e-6) when below 1), and returns the norm before clipping.
// maxNorm ≤ 0 leaves grads unchanged.
func ClipGradNorm(maxNorm float64, grads ...[]float64) float64 {
	s := 0.0
	for _, g := range grads {
		for _, v := range g {
			s += v * v
		}
	}
	norm := math.Sqrt(s)
	if maxNorm > 0 {
		c := maxNorm / (norm + 1e-6)
		if c < 1 {
			for _, g := range grads {
				for i := range g {
					g[i] *= c
				}
			}
		}
	}
	return norm
}
