// Package jointopt maximizes a weighted sum of smooth concave objectives
// whose terms are evaluated elsewhere: the damped Newton iteration of
// joint-likelihood federated IRL, written as a pure state machine.
//
// Each term f_i (a client's MaxEnt log-likelihood under its own dynamics)
// is evaluated where its data lives; what reaches the optimizer is, at one
// point θ, the value, gradient and Hessian of each term (an Eval). The
// State says which point to evaluate next (Trial); Observe folds in the
// weighted sum Σ_i w_i Eval_i at that point and moves to the next trial:
// a Newton step p = (−H + μI)⁻¹ g from the last accepted point, then
// Armijo backtracking along p. Every trial point is one round of a
// federation, and a State is plain data (JSON round-trips it exactly), so a
// server that persists it after each round resumes a killed run at the
// same iterate bit for bit. The pooled oracle runs the same machine with
// the terms evaluated in one process (Maximize), so a federated joint fit
// and the central fit of all clients' data take the same steps.
//
// It deliberately knows nothing of IRL, of transports or of storage; gonum's
// optimize package drives its own loop and cannot be suspended between
// evaluations, which is why the iteration is written here.
package jointopt

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Config bounds the iteration; the zero value gives the defaults.
type Config struct {
	// GradTol stops once ‖∇F‖₂ ≤ GradTol at an accepted point (default
	// 1e-10).
	GradTol float64 `json:"grad_tol,omitempty" yaml:"grad_tol,omitempty"`
	// MaxRounds caps the evaluations (trial points, line-search trials
	// included; default 30, at most MaxRoundsLimit).
	MaxRounds int `json:"max_rounds,omitempty" yaml:"max_rounds,omitempty"`
}

// Defaults and bounds of Config.
const (
	DefaultGradTol   = 1e-10
	DefaultMaxRounds = 30
	// MaxRoundsLimit is the largest round cap a task may ask for.
	MaxRoundsLimit = 1000
	// MaxDim is the largest θ dimension (a round carries d + d² numbers).
	MaxDim = 4096
)

// Resolve returns c with its zero fields replaced by the defaults, or an
// error naming the setting out of range.
func (c Config) Resolve() (Config, error) {
	if c.GradTol == 0 {
		c.GradTol = DefaultGradTol
	}
	if c.MaxRounds == 0 {
		c.MaxRounds = DefaultMaxRounds
	}
	switch {
	case !(c.GradTol > 0) || math.IsInf(c.GradTol, 0):
		return c, fmt.Errorf("jointopt: grad_tol %v must be positive and finite", c.GradTol)
	case c.MaxRounds < 1 || c.MaxRounds > MaxRoundsLimit:
		return c, fmt.Errorf("jointopt: max_rounds %d out of range [1, %d]", c.MaxRounds, MaxRoundsLimit)
	}
	return c, nil
}

// Eval is one objective's value, gradient and Hessian (row-major d×d,
// symmetric) at one point.
type Eval struct {
	Value float64   `json:"value"`
	Grad  []float64 `json:"grad"`
	Hess  []float64 `json:"hess"`
}

// ErrEval marks an evaluation that cannot be used: wrong lengths, a
// non-finite entry or an asymmetric Hessian.
var ErrEval = errors.New("jointopt: bad evaluation")

// Check returns an error wrapping ErrEval unless e has dimension d, only
// finite entries and a symmetric Hessian (to 1e-9 of its largest entry).
func (e Eval) Check(d int) error {
	if len(e.Grad) != d {
		return fmt.Errorf("%w: gradient has %d entries, want %d", ErrEval, len(e.Grad), d)
	}
	if len(e.Hess) != d*d {
		return fmt.Errorf("%w: Hessian has %d entries, want %d×%d = %d", ErrEval, len(e.Hess), d, d, d*d)
	}
	if math.IsNaN(e.Value) || math.IsInf(e.Value, 0) {
		return fmt.Errorf("%w: value is %v", ErrEval, e.Value)
	}
	for j, v := range e.Grad {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: gradient entry %d is %v", ErrEval, j, v)
		}
	}
	big := 0.0
	for k, v := range e.Hess {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: Hessian entry (%d, %d) is %v", ErrEval, k/d, k%d, v)
		}
		big = max(big, math.Abs(v))
	}
	for i := range d {
		for j := i + 1; j < d; j++ {
			if math.Abs(e.Hess[i*d+j]-e.Hess[j*d+i]) > 1e-9*big {
				return fmt.Errorf("%w: Hessian is not symmetric at (%d, %d): %v against %v", ErrEval, i, j, e.Hess[i*d+j], e.Hess[j*d+i])
			}
		}
	}
	return nil
}

// Sum returns Σ_i w_i evals[i], each checked for dimension d, summed in
// the order given (so the same evaluations give the same bits).
func Sum(evals []Eval, w []float64, d int) (Eval, error) {
	if len(evals) != len(w) || len(evals) == 0 {
		return Eval{}, fmt.Errorf("jointopt: %d evaluations for %d weights", len(evals), len(w))
	}
	s := Eval{Grad: make([]float64, d), Hess: make([]float64, d*d)}
	for i, e := range evals {
		if err := e.Check(d); err != nil {
			return Eval{}, fmt.Errorf("evaluation %d: %w", i, err)
		}
		s.Value += w[i] * e.Value
		floats.AddScaled(s.Grad, w[i], e.Grad)
		floats.AddScaled(s.Hess, w[i], e.Hess)
	}
	return s, nil
}

// Stop reasons of a finished State.
const (
	StopConverged  = "converged"
	StopRoundCap   = "round cap"
	StopLineSearch = "line search failed"
)

// State is the optimizer between two rounds: plain data, persisted whole.
type State struct {
	Config Config `json:"config"`
	// Theta is the last accepted point, with its summed evaluation (Have
	// is false before the first evaluation).
	Theta []float64 `json:"theta"`
	Have  bool      `json:"have"`
	Base  Eval      `json:"base"`
	// Dir is the Newton direction from Theta and Alpha the step of the
	// pending trial Theta + Alpha·Dir (0 while the first point is pending).
	Dir   []float64 `json:"dir,omitempty"`
	Alpha float64   `json:"alpha,omitempty"`
	// Shift is μ of the last direction (0 when −H was positive definite).
	Shift float64 `json:"shift,omitempty"`
	// Rounds counts the evaluations observed; Steps the accepted steps.
	Rounds int `json:"rounds"`
	Steps  int `json:"steps"`
	// Done is set when the iteration has ended, for Reason.
	Done   bool   `json:"done"`
	Reason string `json:"reason,omitempty"`
	// GradNorms holds ‖∇F‖₂ at every accepted point.
	GradNorms []float64 `json:"grad_norms"`
}

// Start returns the State whose first trial is theta0 (copied).
func Start(theta0 []float64, cfg Config) (*State, error) {
	cfg, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	if len(theta0) == 0 || len(theta0) > MaxDim {
		return nil, fmt.Errorf("jointopt: θ has %d entries, want 1 to %d", len(theta0), MaxDim)
	}
	for j, v := range theta0 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("jointopt: starting θ entry %d is %v", j, v)
		}
	}
	return &State{Config: cfg, Theta: append([]float64(nil), theta0...)}, nil
}

// Dim returns the dimension of θ.
func (s *State) Dim() int { return len(s.Theta) }

// Trial returns the point the next round evaluates (a new slice): the
// start before the first round, else Theta + Alpha·Dir. After Done it is
// the final Theta.
func (s *State) Trial() []float64 {
	t := append([]float64(nil), s.Theta...)
	if s.Done || !s.Have {
		return t
	}
	floats.AddScaled(t, s.Alpha, s.Dir)
	return t
}

// valueNoise is the relative error of an evaluation's value that the line
// search tolerates; armijo is the sufficient-increase constant and
// backtrack the largest step factor of a backtrack; minAlpha ends a
// search that cannot increase F (the direction is then no ascent
// direction at the precision of the evaluations).
const (
	valueNoise = 1e-8
	armijo     = 1e-4
	backtrack  = 0.5
	minAlpha   = 1e-9
)

// Observe folds in the summed evaluation at Trial() and decides the next
// trial, or ends the iteration. An evaluation that fails Check is refused
// and leaves s unchanged.
func (s *State) Observe(ev Eval) error {
	if s.Done {
		return errors.New("jointopt: the iteration has ended")
	}
	d := s.Dim()
	if err := ev.Check(d); err != nil {
		return err
	}
	s.Rounds++
	accept := !s.Have
	var predicted, gain float64
	if s.Have {
		predicted = s.Alpha * floats.Dot(s.Base.Grad, s.Dir)
		gain = ev.Value - s.Base.Value
		// Values carry the error of the solves behind them (about 1e-9 of
		// 1 + |F| for value iteration to 1e-10): a step whose predicted
		// gain is below that is judged by the gradient, which Newton's
		// steps shrink quadratically near the optimum, and may not lose
		// more than the noise.
		noise := valueNoise * (1 + math.Abs(s.Base.Value))
		if predicted > noise {
			accept = gain >= armijo*predicted
		} else {
			accept = gain >= -noise && floats.Norm(ev.Grad, 2) < floats.Norm(s.Base.Grad, 2)
		}
	}
	if accept {
		if s.Have {
			floats.AddScaled(s.Theta, s.Alpha, s.Dir)
			s.Steps++
		}
		s.Have = true
		s.Base = Eval{Value: ev.Value, Grad: append([]float64(nil), ev.Grad...), Hess: append([]float64(nil), ev.Hess...)}
		gn := floats.Norm(ev.Grad, 2)
		s.GradNorms = append(s.GradNorms, gn)
		if gn <= s.Config.GradTol {
			return s.finish(StopConverged)
		}
		if err := s.direction(); err != nil {
			return s.finish(StopLineSearch)
		}
		s.Alpha = 1
	} else {
		// The maximizer of the quadratic through F(0), its slope and
		// F(Alpha), kept within [0.1, 0.5]·Alpha (a safeguarded
		// interpolation: one round usually lands near the best step where
		// halving would take several).
		next := backtrack * s.Alpha
		if curv := 2 * (gain - predicted); curv < 0 {
			a := -predicted * s.Alpha / curv
			next = min(max(a, 0.1*s.Alpha), backtrack*s.Alpha)
		}
		s.Alpha = next
		if s.Alpha < minAlpha {
			return s.finish(StopLineSearch)
		}
	}
	if s.Rounds >= s.Config.MaxRounds {
		return s.finish(StopRoundCap)
	}
	return nil
}

func (s *State) finish(reason string) error {
	s.Done, s.Reason, s.Dir, s.Alpha = true, reason, nil, 0
	return nil
}

// Converged reports whether the iteration ended at the gradient tolerance.
func (s *State) Converged() bool { return s.Done && s.Reason == StopConverged }

// direction sets Dir = (−H + μI)⁻¹ g at the base point, with μ = 0 when −H
// is positive definite and otherwise the smallest of 10⁻¹²·‖H‖·10^k that
// makes it so (a Levenberg shift: the step then bends toward the gradient).
func (s *State) direction() error {
	d := s.Dim()
	neg := mat.NewSymDense(d, nil)
	scale := 0.0
	for i := range d {
		for j := i; j < d; j++ {
			v := -0.5 * (s.Base.Hess[i*d+j] + s.Base.Hess[j*d+i])
			neg.SetSym(i, j, v)
			scale = max(scale, math.Abs(v))
		}
	}
	if scale == 0 {
		scale = 1
	}
	g := mat.NewVecDense(d, append([]float64(nil), s.Base.Grad...))
	var chol mat.Cholesky
	mu := 0.0
	for k := 0; k < 40; k++ {
		shifted := neg
		if mu > 0 {
			shifted = mat.NewSymDense(d, nil)
			shifted.CopySym(neg)
			for i := range d {
				shifted.SetSym(i, i, neg.At(i, i)+mu)
			}
		}
		if chol.Factorize(shifted) {
			var p mat.VecDense
			if err := chol.SolveVecTo(&p, g); err == nil && floats.Dot(p.RawVector().Data, s.Base.Grad) > 0 {
				s.Dir = append(s.Dir[:0], p.RawVector().Data...)
				s.Shift = mu
				return nil
			}
		}
		if mu == 0 {
			mu = 1e-12 * scale
		} else {
			mu *= 10
		}
	}
	return errors.New("jointopt: no ascent direction")
}

// Objective evaluates one term at θ.
type Objective func(theta []float64) (Eval, error)

// Maximize runs the iteration from theta0 with the terms evaluated in
// this process, in order, weighted by w: the central (pooled) fit.
func Maximize(terms []Objective, w []float64, theta0 []float64, cfg Config) (*State, error) {
	if len(terms) != len(w) || len(terms) == 0 {
		return nil, fmt.Errorf("jointopt: %d terms for %d weights", len(terms), len(w))
	}
	s, err := Start(theta0, cfg)
	if err != nil {
		return nil, err
	}
	evals := make([]Eval, len(terms))
	for !s.Done {
		th := s.Trial()
		for i, f := range terms {
			if evals[i], err = f(th); err != nil {
				return s, fmt.Errorf("term %d at round %d: %w", i, s.Rounds+1, err)
			}
		}
		sum, err := Sum(evals, w, s.Dim())
		if err != nil {
			return s, err
		}
		if err := s.Observe(sum); err != nil {
			return s, err
		}
	}
	return s, nil
}

// Prox returns the term −(μ/2)‖θ − center‖² (a proximal pull toward
// center, Ditto's and pFedMe's personalization penalty), exact.
func Prox(center []float64, mu float64) Objective {
	c := append([]float64(nil), center...)
	return func(theta []float64) (Eval, error) {
		d := len(c)
		if len(theta) != d {
			return Eval{}, fmt.Errorf("jointopt: θ has %d entries, the proximal center %d", len(theta), d)
		}
		e := Eval{Grad: make([]float64, d), Hess: make([]float64, d*d)}
		for j := range d {
			diff := theta[j] - c[j]
			e.Value -= 0.5 * mu * diff * diff
			e.Grad[j] = -mu * diff
			e.Hess[j*d+j] = -mu
		}
		return e, nil
	}
}
