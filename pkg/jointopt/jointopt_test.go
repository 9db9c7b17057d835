package jointopt

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// logSumExp is a smooth strictly concave term: f(θ) = bᵀθ − log Σ_k exp(a_kᵀθ) − (λ/2)‖θ‖²,
// the shape of a MaxEnt log-likelihood, with its exact gradient and Hessian.
type logSumExp struct {
	a  [][]float64
	b  []float64
	l2 float64
}

func (t logSumExp) eval(theta []float64) (Eval, error) {
	d := len(theta)
	z := make([]float64, len(t.a))
	zmax := math.Inf(-1)
	for k, ak := range t.a {
		for j := range d {
			z[k] += ak[j] * theta[j]
		}
		zmax = max(zmax, z[k])
	}
	sum := 0.0
	for k := range z {
		z[k] = math.Exp(z[k] - zmax)
		sum += z[k]
	}
	e := Eval{Grad: make([]float64, d), Hess: make([]float64, d*d)}
	mean := make([]float64, d)
	for k, ak := range t.a {
		p := z[k] / sum
		for i := range d {
			mean[i] += p * ak[i]
		}
	}
	for k, ak := range t.a {
		p := z[k] / sum
		for i := range d {
			for j := range d {
				e.Hess[i*d+j] -= p * (ak[i] - mean[i]) * (ak[j] - mean[j])
			}
		}
	}
	e.Value = -zmax - math.Log(sum) - 0.5*t.l2*dot(theta, theta)
	for i := range d {
		e.Value += t.b[i] * theta[i]
		e.Grad[i] = t.b[i] - mean[i] - t.l2*theta[i]
		e.Hess[i*d+i] -= t.l2
	}
	return e, nil
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func randomTerms(rng *rand.Rand, k, d int) ([]Objective, []float64, []logSumExp) {
	var objs []Objective
	var raw []logSumExp
	w := make([]float64, k)
	for i := range k {
		t := logSumExp{l2: 0.01}
		for range 6 {
			a := make([]float64, d)
			for j := range a {
				a[j] = rng.NormFloat64()
			}
			t.a = append(t.a, a)
		}
		// b inside the convex hull of the a_k: a feature expectation the term can match.
		t.b = make([]float64, d)
		for _, a := range t.a {
			for j := range d {
				t.b[j] += a[j] / float64(len(t.a)) * (0.5 + rng.Float64())
			}
		}
		raw = append(raw, t)
		objs = append(objs, t.eval)
		w[i] = 0.5 + rng.Float64()
	}
	s := 0.0
	for _, v := range w {
		s += v
	}
	for i := range w {
		w[i] /= s
	}
	return objs, w, raw
}

// TestMaximizeMatchesGonum checks the pooled optimum against gonum's BFGS (to its 1e-9 gradient) on
// the same weighted sum, on random instances.
func TestMaximizeMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 10 {
		d := 2 + trial%5
		objs, w, _ := randomTerms(rng, 3+trial%4, d)
		s, err := Maximize(objs, w, make([]float64, d), Config{GradTol: 1e-11})
		if err != nil {
			t.Fatal(err)
		}
		if !s.Converged() || s.Rounds > 15 {
			t.Fatalf("trial %d: %s after %d rounds, ‖∇‖ %v", trial, s.Reason, s.Rounds, s.GradNorms)
		}
		neg := func(x []float64) float64 {
			v := 0.0
			for i, f := range objs {
				e, _ := f(x)
				v -= w[i] * e.Value
			}
			return v
		}
		grad := func(g, x []float64) {
			clear(g)
			for i, f := range objs {
				e, _ := f(x)
				for j := range g {
					g[j] -= w[i] * e.Grad[j]
				}
			}
		}
		res, err := optimize.Minimize(optimize.Problem{Func: neg, Grad: grad}, make([]float64, d),
			&optimize.Settings{GradientThreshold: 1e-9}, &optimize.BFGS{})
		if err != nil {
			t.Fatal(err)
		}
		for j := range d {
			if math.Abs(s.Theta[j]-res.X[j]) > 1e-6*(1+math.Abs(res.X[j])) {
				t.Fatalf("trial %d: θ[%d] = %v, gonum BFGS %v", trial, j, s.Theta[j], res.X[j])
			}
		}
	}
}

// TestQuadraticOneStep: on a concave quadratic the first Newton step lands on
// the closed-form optimum θ* = A⁻¹b, so the second evaluation converges.
func TestQuadraticOneStep(t *testing.T) {
	a := mat.NewSymDense(3, []float64{4, 1, 0, 1, 3, 0.5, 0, 0.5, 2})
	b := []float64{1, -2, 0.5}
	f := func(x []float64) (Eval, error) {
		xv := mat.NewVecDense(3, append([]float64(nil), x...))
		var ax mat.VecDense
		ax.MulVec(a, xv)
		e := Eval{Value: dot(b, x) - 0.5*dot(x, ax.RawVector().Data), Grad: make([]float64, 3), Hess: make([]float64, 9)}
		for i := range 3 {
			e.Grad[i] = b[i] - ax.AtVec(i)
			for j := range 3 {
				e.Hess[i*3+j] = -a.At(i, j)
			}
		}
		return e, nil
	}
	s, err := Maximize([]Objective{f}, []float64{1}, []float64{3, 3, 3}, Config{GradTol: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	var want mat.VecDense
	if err := want.SolveVec(a, mat.NewVecDense(3, b)); err != nil {
		t.Fatal(err)
	}
	if s.Rounds != 2 || !s.Converged() {
		t.Fatalf("%d rounds, %s; want 2, converged", s.Rounds, s.Reason)
	}
	for j := range 3 {
		if math.Abs(s.Theta[j]-want.AtVec(j)) > 1e-14 {
			t.Fatalf("θ[%d] = %v, want %v", j, s.Theta[j], want.AtVec(j))
		}
	}
}

// TestResumeFromJSON: a state persisted as JSON after any round and
// restored continues to the same θ bit for bit (what a killed server does).
func TestResumeFromJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	objs, w, _ := randomTerms(rng, 4, 5)
	ref, err := Maximize(objs, w, make([]float64, 5), Config{})
	if err != nil {
		t.Fatal(err)
	}
	for cut := 1; cut < ref.Rounds; cut++ {
		s, _ := Start(make([]float64, 5), Config{})
		evals := make([]Eval, len(objs))
		for r := 0; !s.Done; r++ {
			if r == cut {
				b, err := json.Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				s = new(State)
				if err := json.Unmarshal(b, s); err != nil {
					t.Fatal(err)
				}
			}
			th := s.Trial()
			for i, f := range objs {
				evals[i], _ = f(th)
			}
			sum, err := Sum(evals, w, 5)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Observe(sum); err != nil {
				t.Fatal(err)
			}
		}
		for j := range ref.Theta {
			if math.Float64bits(s.Theta[j]) != math.Float64bits(ref.Theta[j]) {
				t.Fatalf("cut %d: θ[%d] = %v, uninterrupted %v", cut, j, s.Theta[j], ref.Theta[j])
			}
		}
	}
}

// TestBacktracking: from a far start the full Newton step of a log-sum-exp
// overshoots; the line search must still increase F at every accepted step.
func TestBacktracking(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	objs, w, _ := randomTerms(rng, 2, 3)
	s, _ := Start([]float64{40, -40, 25}, Config{MaxRounds: 200})
	last := math.Inf(-1)
	evals := make([]Eval, 2)
	for !s.Done {
		th := s.Trial()
		for i, f := range objs {
			evals[i], _ = f(th)
		}
		sum, _ := Sum(evals, w, 3)
		prevSteps := s.Steps
		if err := s.Observe(sum); err != nil {
			t.Fatal(err)
		}
		if s.Steps > prevSteps || s.Rounds == 1 {
			if s.Base.Value < last {
				t.Fatalf("accepted step decreased F: %v < %v", s.Base.Value, last)
			}
			last = s.Base.Value
		}
	}
	if !s.Converged() {
		t.Fatalf("%s after %d rounds", s.Reason, s.Rounds)
	}
}

// TestObserveRefusesBadEvaluations: NaN, wrong shapes and an asymmetric
// Hessian are refused with ErrEval and leave the state as it was.
func TestObserveRefusesBadEvaluations(t *testing.T) {
	s, _ := Start([]float64{0, 0}, Config{})
	good := Eval{Value: 1, Grad: []float64{1, 0}, Hess: []float64{-1, 0, 0, -1}}
	for name, e := range map[string]Eval{
		"nan value":  {Value: math.NaN(), Grad: good.Grad, Hess: good.Hess},
		"short grad": {Value: 1, Grad: []float64{1}, Hess: good.Hess},
		"inf hess":   {Value: 1, Grad: good.Grad, Hess: []float64{-1, 0, 0, math.Inf(-1)}},
		"asymmetric": {Value: 1, Grad: good.Grad, Hess: []float64{-1, 0.5, 0, -1}},
		"long hess":  {Value: 1, Grad: good.Grad, Hess: make([]float64, 5)},
	} {
		if err := s.Observe(e); !errors.Is(err, ErrEval) {
			t.Errorf("%s: got %v, want ErrEval", name, err)
		}
		if s.Rounds != 0 || s.Have {
			t.Fatalf("%s changed the state", name)
		}
	}
	if err := s.Observe(good); err != nil {
		t.Fatal(err)
	}
}

// TestConfigBounds: out-of-range settings are refused, zeros take defaults.
func TestConfigBounds(t *testing.T) {
	for _, c := range []Config{{GradTol: -1}, {GradTol: math.Inf(1)}, {MaxRounds: -1}, {MaxRounds: MaxRoundsLimit + 1}} {
		if _, err := c.Resolve(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	c, err := Config{}.Resolve()
	if err != nil || c.GradTol != DefaultGradTol || c.MaxRounds != DefaultMaxRounds {
		t.Fatalf("defaults: %+v %v", c, err)
	}
}

// TestIndefiniteHessianShift: where a term is locally convex (an
// indefinite Hessian), the shifted direction is still an ascent direction.
func TestIndefiniteHessianShift(t *testing.T) {
	s, _ := Start([]float64{0, 0}, Config{})
	if err := s.Observe(Eval{Value: 0, Grad: []float64{1, 1}, Hess: []float64{1, 0, 0, -2}}); err != nil {
		t.Fatal(err)
	}
	if s.Shift <= 1 || dot(s.Dir, []float64{1, 1}) <= 0 {
		t.Fatalf("shift %v, direction %v", s.Shift, s.Dir)
	}
}
