package fusion_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/jointopt"
)

func TestJointFusesNoTheta(t *testing.T) {
	m, err := fusion.Lookup(fusion.MethodJoint)
	if err != nil || m.Space() != fusion.JointSpace || m.Space().String() != "joint" {
		t.Fatalf("Lookup(joint) = %v, %v", m, err)
	}
	_, err = fusion.Fuse(fusion.Probe{}, [][]float64{{1, 2}, {3, 4}}, nil, fusion.Options{Method: fusion.MethodJoint})
	if !errors.Is(err, fusion.ErrRoundMethod) {
		t.Fatalf("Fuse with joint: %v, want ErrRoundMethod", err)
	}
	if !fusion.IsRoundMethod("joint") || fusion.IsRoundMethod("mean") || fusion.IsRoundMethod("nope") {
		t.Error("IsRoundMethod is wrong")
	}
}

func TestJointOptionsBounded(t *testing.T) {
	for _, c := range []struct {
		opt  fusion.Options
		want string // "" accepted
	}{
		{fusion.Options{Method: "joint"}, ""},
		{fusion.Options{Method: "joint", GradTol: 1e-6, MaxRounds: 12}, ""},
		{fusion.Options{Method: "joint", Weighting: "demos", DemoCap: ptr(1e9)}, ""},
		{fusion.Options{Method: "joint", MaxRounds: jointopt.MaxRoundsLimit + 1}, "max_rounds"},
		{fusion.Options{Method: "joint", MaxRounds: -1}, "max_rounds"},
		{fusion.Options{Method: "joint", GradTol: -1}, "grad_tol"},
		{fusion.Options{Method: "joint", GradTol: math.Inf(1)}, "grad_tol"},
		{fusion.Options{Method: "joint", GradTol: math.NaN()}, "grad_tol"},
		{fusion.Options{Method: "mean", MaxRounds: 3}, "no gradient rounds"},
		{fusion.Options{Method: "barycenter", GradTol: 1e-3}, "no gradient rounds"},
		{fusion.Options{Method: "joint", SigmaMode: "per-client"}, "sigma_mode"},
	} {
		err := c.opt.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v refused: %v", c.opt, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want one naming %q", c.opt, err, c.want)
		}
	}
	cfg, err := fusion.Options{Method: "joint"}.JointConfig()
	if err != nil || cfg.GradTol != jointopt.DefaultGradTol || cfg.MaxRounds != jointopt.DefaultMaxRounds {
		t.Errorf("default JointConfig = %+v, %v", cfg, err)
	}
	if _, err := (fusion.Options{Method: "mean"}).JointConfig(); err == nil {
		t.Error("JointConfig of mean accepted")
	}
	o, err := fusion.DecodeOptions([]byte(`{"method":"joint","grad_tol":1e-9,"max_rounds":15}`))
	if err != nil || o.GradTol != 1e-9 || o.MaxRounds != 15 {
		t.Errorf("DecodeOptions = %+v, %v", o, err)
	}
}

// TestJointStepIsSumAndObserve checks the combining step against its two
// parts called by hand, on a concave quadratic whose maximizer is known:
// F(θ) = Σ_i α_i (−½‖θ − c_i‖²) peaks at Σ α_i c_i, reached by one
// Newton step.
func TestJointStepIsSumAndObserve(t *testing.T) {
	cs := [][]float64{{1, -2}, {3, 0.5}, {-1, 4}}
	eval := func(c, th []float64) jointopt.Eval {
		e := jointopt.Eval{Grad: make([]float64, 2), Hess: []float64{-1, 0, 0, -1}}
		for k := range th {
			e.Value -= 0.5 * (th[k] - c[k]) * (th[k] - c[k])
			e.Grad[k] = c[k] - th[k]
		}
		return e
	}
	opt := fusion.Options{Method: "joint", Weighting: "demos", DemoCap: ptr(10.0)}
	alpha, err := opt.JointWeights([]int{10, 20, 30})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := jointopt.Start([]float64{0, 0}, jointopt.Config{GradTol: 1e-12})
	ref, _ := jointopt.Start([]float64{0, 0}, jointopt.Config{GradTol: 1e-12})
	for !s.Done {
		th := s.Trial()
		evals := []jointopt.Eval{eval(cs[0], th), eval(cs[1], th), eval(cs[2], th)}
		if _, err := fusion.JointStep(s, evals, alpha); err != nil {
			t.Fatal(err)
		}
		sum, _ := jointopt.Sum(evals, alpha, 2)
		if err := ref.Observe(sum); err != nil {
			t.Fatal(err)
		}
	}
	want := []float64{0, 0}
	for i, c := range cs {
		for k := range want {
			want[k] += alpha[i] * c[k]
		}
	}
	for k := range want {
		if math.Abs(s.Theta[k]-want[k]) > 1e-12 || math.Float64bits(s.Theta[k]) != math.Float64bits(ref.Theta[k]) {
			t.Errorf("θ[%d] = %v, want %v (Σ α_i c_i), by hand %v", k, s.Theta[k], want[k], ref.Theta[k])
		}
	}
	bad := []jointopt.Eval{eval(cs[0], s.Theta), {Grad: []float64{1}, Hess: []float64{1}}, eval(cs[2], s.Theta)}
	s2, _ := jointopt.Start([]float64{0, 0}, jointopt.Config{})
	if _, err := fusion.JointStep(s2, bad, alpha); err == nil || !strings.Contains(err.Error(), "evaluation 1") || s2.Rounds != 0 {
		t.Errorf("a wrong-shaped evaluation: %v, rounds %d", err, s2.Rounds)
	}
}
