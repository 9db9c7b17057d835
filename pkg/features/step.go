package features

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Kinds of StepTerm.
const (
	// StepBias is the constant 1.
	StepBias = "bias"
	// StepLinear is the coordinate u itself.
	StepLinear = "linear"
	// StepAbs is |u|.
	StepAbs = "abs"
	// StepSquare is u².
	StepSquare = "square"
	// StepRBF is the Gaussian exp(−½((u − Centre)/Bandwidth)²) of one coordinate.
	StepRBF = "rbf"
	// StepAbsChange is |s′_k| − |s_k|: the change of a potential −|u| over the step.
	StepAbsChange = "abs_change"
	// StepClippedAbsSum is Σ_i clip(|a_i|, 0, 1) over the action's coordinates.
	StepClippedAbsSum = "clipped_abs_sum"
	// StepTerminal is 1 on a step that ends the episode (terminated, not
	// truncated), 0 otherwise.
	StepTerminal = "terminal"
)

// stepKinds lists the kinds of StepTerm.
var stepKinds = []string{StepBias, StepLinear, StepAbs, StepSquare, StepRBF, StepAbsChange, StepClippedAbsSum, StepTerminal}

// The vectors of a step a StepTerm reads (StepTerm.Of).
const (
	StepObs    = "obs"
	StepAction = "action"
	StepNext   = "next"
)

// StepTerm is one column of a StepSpec: a function of one coordinate of the
// observation s, the action a or the next observation s′ of a simulator
// step, or of the whole step (bias, abs_change, clipped_abs_sum, terminal).
type StepTerm struct {
	// Kind is one of bias, linear, abs, square, rbf, abs_change,
	// clipped_abs_sum and terminal.
	Kind string `json:"kind"`
	// Of is the vector a coordinate term reads: "obs" (s), "action" (a) or
	// "next" (s′); empty for the step terms.
	Of string `json:"of,omitempty"`
	// Index is the coordinate of Of (abs_change: of s and of s′).
	Index int `json:"index,omitempty"`
	// Centre and Bandwidth (> 0) are an rbf term's.
	Centre    float64 `json:"centre,omitempty"`
	Bandwidth float64 `json:"bandwidth,omitempty"`
	// Alive multiplies the term by 1 − terminal: 0 on the step that ends
	// the episode, whose reward a terminal term then sets alone.
	Alive bool `json:"alive,omitempty"`
	// Name labels the column in tables; empty gives kind(of[index]).
	Name string `json:"name,omitempty"`
}

// StepSpec is a feature map of one step (s, a, s′, terminated) of a
// simulator in its own spaces — the observation and the action as the
// simulator takes them (a Discrete action as its index) — so that it
// exists wherever a policy steps, with no lattice: a sum of terms, one
// column each, in order. A product grid of RBF centres (RBFSpec) grows
// exponentially with the dimension; a StepSpec's columns are additive in
// the coordinates (AdditiveRBF) or written for one environment's reward
// (tasks' walker set). It is plain JSON and, once valid, safe for
// concurrent use.
type StepSpec struct {
	// ObsDim and ActDim are the lengths of s (and s′) and of a.
	ObsDim int `json:"obs_dim"`
	ActDim int `json:"act_dim"`
	// Terms are the columns.
	Terms []StepTerm `json:"terms"`
}

// maxStepTerms bounds the columns of a StepSpec.
const maxStepTerms = 4096

// Validate returns an error wrapping ErrRBFSpec that names the first bad
// term and field, or nil.
func (s *StepSpec) Validate() error {
	switch {
	case s.ObsDim < 1 || s.ActDim < 1:
		return fmt.Errorf("%w: step features: obs_dim %d and act_dim %d, want ≥ 1", ErrRBFSpec, s.ObsDim, s.ActDim)
	case len(s.Terms) == 0:
		return fmt.Errorf("%w: step features: no terms", ErrRBFSpec)
	case len(s.Terms) > maxStepTerms:
		return fmt.Errorf("%w: step features: %d terms, at most %d", ErrRBFSpec, len(s.Terms), maxStepTerms)
	}
	for i, t := range s.Terms {
		where := fmt.Sprintf("step features: terms[%d]", i)
		if !slices.Contains(stepKinds, t.Kind) {
			return fmt.Errorf("%w: %s: kind %q, want one of %s", ErrRBFSpec, where, t.Kind, strings.Join(stepKinds, ", "))
		}
		switch t.Kind {
		case StepBias, StepClippedAbsSum, StepTerminal:
			if t.Of != "" || t.Index != 0 {
				return fmt.Errorf("%w: %s: a %s term reads no coordinate (of %q, index %d)", ErrRBFSpec, where, t.Kind, t.Of, t.Index)
			}
		case StepAbsChange:
			if t.Of != "" {
				return fmt.Errorf("%w: %s: abs_change reads obs and next; of %q is not used", ErrRBFSpec, where, t.Of)
			}
			if t.Index < 0 || t.Index >= s.ObsDim {
				return fmt.Errorf("%w: %s: index %d out of the observation's [0, %d)", ErrRBFSpec, where, t.Index, s.ObsDim)
			}
		default:
			n := s.ObsDim
			switch t.Of {
			case StepObs, StepNext:
			case StepAction:
				n = s.ActDim
			default:
				return fmt.Errorf("%w: %s: of %q, want %s, %s or %s", ErrRBFSpec, where, t.Of, StepObs, StepAction, StepNext)
			}
			if t.Index < 0 || t.Index >= n {
				return fmt.Errorf("%w: %s: index %d out of %s's [0, %d)", ErrRBFSpec, where, t.Index, t.Of, n)
			}
		}
		if t.Kind == StepRBF {
			if !(t.Bandwidth > 0) || math.IsInf(t.Bandwidth, 0) || math.IsNaN(t.Centre) || math.IsInf(t.Centre, 0) {
				return fmt.Errorf("%w: %s: rbf centre %v and bandwidth %v, want finite and bandwidth > 0", ErrRBFSpec, where, t.Centre, t.Bandwidth)
			}
		} else if t.Centre != 0 || t.Bandwidth != 0 {
			return fmt.Errorf("%w: %s: centre and bandwidth apply to rbf terms only", ErrRBFSpec, where)
		}
	}
	return nil
}

// Dim returns the number of features (one per term).
func (s *StepSpec) Dim() int { return len(s.Terms) }

// Names returns one label per feature.
func (s *StepSpec) Names() []string {
	out := make([]string, len(s.Terms))
	for i, t := range s.Terms {
		switch {
		case t.Name != "":
			out[i] = t.Name
		case t.Kind == StepBias, t.Kind == StepClippedAbsSum, t.Kind == StepTerminal:
			out[i] = t.Kind
		case t.Kind == StepAbsChange:
			out[i] = fmt.Sprintf("abs_change(obs[%d])", t.Index)
		case t.Kind == StepRBF:
			out[i] = fmt.Sprintf("rbf(%s[%d]; %g, %g)", t.Of, t.Index, t.Centre, t.Bandwidth)
		default:
			out[i] = fmt.Sprintf("%s(%s[%d])", t.Kind, t.Of, t.Index)
		}
		if t.Alive && t.Name == "" {
			out[i] = "alive*" + out[i]
		}
	}
	return out
}

// check panics on vectors of the wrong lengths (a programmer error: the
// spec's dimensions are the simulator's).
func (s *StepSpec) check(obs, act, next []float64) {
	if len(obs) != s.ObsDim || len(next) != s.ObsDim || len(act) != s.ActDim {
		panic(fmt.Sprintf("features: step of lengths obs %d, action %d, next %d; the spec has %d, %d, %d", len(obs), len(act), len(next), s.ObsDim, s.ActDim, s.ObsDim))
	}
}

// value returns term t at the step.
func (t *StepTerm) value(obs, act, next []float64, terminated bool) float64 {
	if t.Alive && terminated {
		return 0
	}
	var u float64
	switch t.Of {
	case StepObs:
		u = obs[t.Index]
	case StepAction:
		u = act[t.Index]
	case StepNext:
		u = next[t.Index]
	}
	switch t.Kind {
	case StepBias:
		return 1
	case StepLinear:
		return u
	case StepAbs:
		return math.Abs(u)
	case StepSquare:
		return u * u
	case StepRBF:
		z := (u - t.Centre) / t.Bandwidth
		return math.Exp(-0.5 * z * z)
	case StepAbsChange:
		return math.Abs(next[t.Index]) - math.Abs(obs[t.Index])
	case StepClippedAbsSum:
		v := 0.0
		for _, a := range act {
			v += math.Min(1, math.Abs(a))
		}
		return v
	default: // StepTerminal
		if terminated {
			return 1
		}
		return 0
	}
}

// Eval writes φ(s, a, s′, terminated) (length Dim) into dst, allocating it
// when nil or of the wrong length, and returns it. The spec must be valid.
func (s *StepSpec) Eval(dst, obs, act, next []float64, terminated bool) []float64 {
	s.check(obs, act, next)
	if len(dst) != len(s.Terms) {
		dst = make([]float64, len(s.Terms))
	}
	for i := range s.Terms {
		dst[i] = s.Terms[i].value(obs, act, next, terminated)
	}
	return dst
}

// Reward returns θᵀφ(s, a, s′, terminated) without allocating.
func (s *StepSpec) Reward(theta, obs, act, next []float64, terminated bool) float64 {
	s.check(obs, act, next)
	if len(theta) != len(s.Terms) {
		panic(fmt.Sprintf("features: step θ has length %d, want %d", len(theta), len(s.Terms)))
	}
	r := 0.0
	for i := range s.Terms {
		r += theta[i] * s.Terms[i].value(obs, act, next, terminated)
	}
	return r
}

// AdditiveRBF returns the generic step features of a Box environment
// whose observation lies in [obsLow, obsHigh] and action in [actLow,
// actHigh]: for every coordinate of s′ and of a, n Gaussians of that
// coordinate alone at the midpoints of n equal cells of its range, each of
// the cell's width, and a bias — n·(d_s + d_a) + 1 columns where a product
// grid would have n^(d_s + d_a). A reward additive in the coordinates is
// in its span up to the Gaussians' resolution; interactions between
// coordinates are not. It refuses a range that is not finite and
// increasing, naming the coordinate.
func AdditiveRBF(obsLow, obsHigh, actLow, actHigh []float64, n int) (StepSpec, error) {
	if n < 1 {
		return StepSpec{}, fmt.Errorf("%w: additive RBF: %d centres per coordinate, want ≥ 1", ErrRBFSpec, n)
	}
	if len(obsLow) != len(obsHigh) || len(actLow) != len(actHigh) {
		return StepSpec{}, fmt.Errorf("%w: additive RBF: bounds of different lengths", ErrRBFSpec)
	}
	s := StepSpec{ObsDim: len(obsLow), ActDim: len(actLow)}
	for _, part := range []struct {
		of     string
		lo, hi []float64
	}{{StepNext, obsLow, obsHigh}, {StepAction, actLow, actHigh}} {
		for k := range part.lo {
			lo, hi := part.lo[k], part.hi[k]
			if math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi) || !(lo < hi) {
				return StepSpec{}, fmt.Errorf("%w: additive RBF: %s[%d] has range [%v, %v], want a finite, increasing one", ErrRBFSpec, part.of, k, lo, hi)
			}
			h := (hi - lo) / float64(n)
			for i := range n {
				s.Terms = append(s.Terms, StepTerm{Kind: StepRBF, Of: part.of, Index: k, Centre: lo + (float64(i)+0.5)*h, Bandwidth: h})
			}
		}
	}
	s.Terms = append(s.Terms, StepTerm{Kind: StepBias})
	return s, s.Validate()
}
