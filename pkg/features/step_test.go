package features

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestStepTermsByHand evaluates every kind of step term at one step and
// compares with the value written out by hand, alive terms on a continuing
// and an ending step, and Reward with θᵀEval.
func TestStepTermsByHand(t *testing.T) {
	obs, act, next := []float64{-0.3, 2}, []float64{0.5, -1.7}, []float64{0.4, -1}
	s := StepSpec{ObsDim: 2, ActDim: 2, Terms: []StepTerm{
		{Kind: StepBias},
		{Kind: StepLinear, Of: StepNext, Index: 1},
		{Kind: StepAbs, Of: StepObs, Index: 0},
		{Kind: StepSquare, Of: StepAction, Index: 1},
		{Kind: StepRBF, Of: StepObs, Index: 1, Centre: 1, Bandwidth: 2},
		{Kind: StepAbsChange, Index: 0},
		{Kind: StepClippedAbsSum},
		{Kind: StepTerminal},
		{Kind: StepLinear, Of: StepNext, Index: 0, Alive: true},
	}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, term := range []bool{false, true} {
		want := []float64{1, -1, 0.3, 1.7 * 1.7, math.Exp(-0.5 * 0.25), 0.4 - 0.3, 0.5 + 1, 0, 0.4}
		if term {
			want[7], want[8] = 1, 0
		}
		got := s.Eval(nil, obs, act, next, term)
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-15 {
				t.Errorf("terminated %v: column %d (%s) = %v, want %v", term, i, s.Names()[i], got[i], want[i])
			}
		}
		theta := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
		r, dot := s.Reward(theta, obs, act, next, term), 0.0
		for i := range got {
			dot += theta[i] * got[i]
		}
		if math.Abs(r-dot) > 1e-12 {
			t.Errorf("terminated %v: Reward %v, θᵀEval %v", term, r, dot)
		}
	}
	if n := s.Names(); n[8] != "alive*linear(next[0])" || n[5] != "abs_change(obs[0])" {
		t.Errorf("names %v", n)
	}
}

// TestStepSpecRefusals checks that each malformed spec is refused with an
// error wrapping ErrRBFSpec that names the term and field.
func TestStepSpecRefusals(t *testing.T) {
	for _, tc := range []struct {
		terms []StepTerm
		want  string
	}{
		{nil, "no terms"},
		{[]StepTerm{{Kind: "cube", Of: StepObs}}, "terms[0]: kind \"cube\""},
		{[]StepTerm{{Kind: StepLinear, Of: "state"}}, "terms[0]: of \"state\""},
		{[]StepTerm{{Kind: StepLinear, Of: StepAction, Index: 1}}, "terms[0]: index 1 out of action's"},
		{[]StepTerm{{Kind: StepBias, Of: StepObs}}, "terms[0]: a bias term reads no coordinate"},
		{[]StepTerm{{Kind: StepAbsChange, Index: 3}}, "terms[0]: index 3"},
		{[]StepTerm{{Kind: StepRBF, Of: StepObs, Bandwidth: 0}}, "terms[0]: rbf centre"},
		{[]StepTerm{{Kind: StepLinear, Of: StepObs, Bandwidth: 1}}, "centre and bandwidth apply to rbf terms only"},
	} {
		s := StepSpec{ObsDim: 2, ActDim: 1, Terms: tc.terms}
		err := s.Validate()
		if err == nil || !errors.Is(err, ErrRBFSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %q", tc.terms, err, tc.want)
		}
	}
}

// TestAdditiveRBF checks the generic set's size (n per coordinate of s′
// and a, and a bias, not n to the dimension), that each Gaussian peaks at
// 1 at its centre with the cell width as bandwidth, and that an infinite
// range is refused naming the coordinate.
func TestAdditiveRBF(t *testing.T) {
	lo, hi := make([]float64, 24), make([]float64, 24)
	for k := range lo {
		lo[k], hi[k] = -1, 1
	}
	s, err := AdditiveRBF(lo, hi, []float64{-1, -1, -1, -1}, []float64{1, 1, 1, 1}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if s.Dim() != 5*28+1 {
		t.Fatalf("%d columns, want %d", s.Dim(), 5*28+1)
	}
	obs, act := make([]float64, 24), make([]float64, 4)
	next := make([]float64, 24)
	next[3] = -1 + 2.5*0.4 // the centre of coordinate 3's third cell
	phi := s.Eval(nil, obs, act, next, false)
	if c := phi[3*5+2]; math.Abs(c-1) > 1e-15 {
		t.Errorf("the Gaussian at its centre is %v, want 1", c)
	}
	if c := phi[3*5+3]; math.Abs(c-math.Exp(-0.5)) > 1e-15 {
		t.Errorf("the neighbouring Gaussian is %v, want exp(−½) (bandwidth = the cell width)", c)
	}
	if phi[len(phi)-1] != 1 {
		t.Error("the last column is not the bias")
	}
	hi[7] = math.Inf(1)
	if _, err := AdditiveRBF(lo, hi, []float64{-1}, []float64{1}, 5); err == nil || !strings.Contains(err.Error(), "next[7]") {
		t.Errorf("an infinite range: error %v, want one naming next[7]", err)
	}
}
