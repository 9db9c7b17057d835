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

// quadTerm is f(θ) = −(a/2)‖θ − c‖².
func quadTerm(a float64, c []float64) jointopt.Objective {
	return func(th []float64) (jointopt.Eval, error) {
		d := len(th)
		e := jointopt.Eval{Grad: make([]float64, d), Hess: make([]float64, d*d)}
		for k := range th {
			e.Value -= 0.5 * a * (th[k] - c[k]) * (th[k] - c[k])
			e.Grad[k] = a * (c[k] - th[k])
			e.Hess[k*d+k] = -a
		}
		return e, nil
	}
}

func TestLocalUpdateOptionsBounded(t *testing.T) {
	for _, c := range []struct {
		opt  fusion.Options
		want string
	}{
		{fusion.Options{Method: "joint", Update: "fedavg"}, ""},
		{fusion.Options{Method: "joint", Update: "fedavg", LocalSteps: 3}, ""},
		{fusion.Options{Method: "joint", Update: "fedprox", Mu: 0.5}, ""},
		{fusion.Options{Method: "joint", Update: "newton"}, ""},
		{fusion.Options{Method: "joint", Update: "fedprox"}, "fusion.mu"},
		{fusion.Options{Method: "joint", Update: "fedprox", Mu: math.Inf(1)}, "fusion.mu"},
		{fusion.Options{Method: "joint", Update: "fedavg", Mu: 1}, "no proximal term"},
		{fusion.Options{Method: "joint", Update: "fedavg", LocalSteps: fusion.MaxLocalSteps + 1}, "local_steps"},
		{fusion.Options{Method: "joint", Update: "fedavg", LocalSteps: -1}, "local_steps"},
		{fusion.Options{Method: "joint", LocalSteps: 2}, "takes no local steps"},
		{fusion.Options{Method: "joint", Update: "sgd"}, "fusion.update"},
		{fusion.Options{Method: "mean", Update: "fedavg"}, "fuses once"},
	} {
		err := c.opt.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v refused: %v", c.opt, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want one naming %q", c.opt, err, c.want)
		}
	}
	if lu := (fusion.Options{Method: "joint", Update: "fedavg"}).LocalUpdate(); lu == nil || lu.Steps != fusion.DefaultLocalSteps || lu.Mu != 0 {
		t.Errorf("fedavg's local update %+v", lu)
	}
	if lu := (fusion.Options{Method: "joint"}).LocalUpdate(); lu != nil {
		t.Errorf("newton has a local update %+v", lu)
	}
}

// TestFedAvgAndFedProxClosedForms: on isotropic quadratics
// f_i = −(a_i/2)‖θ − c_i‖² one local Newton step is exact, so FedAvg's
// first round averages the c_i, FedProx's gives Σ α_i (a_i c_i + μθ_r)/(a_i + μ),
// and (the known client drift) FedAvg's next point is the same average
// although the joint optimum Σ α_i a_i c_i / Σ α_i a_i differs from it;
// with equal a_i FedProx's rounds converge to the joint optimum.
func TestFedAvgAndFedProxClosedForms(t *testing.T) {
	cs := [][]float64{{1, -2}, {3, 0.5}, {-1, 4}}
	as := []float64{1, 2, 4}
	alpha := []float64{0.2, 0.3, 0.5}
	round := func(s *jointopt.State, lu fusion.LocalUpdate, as []float64) []float64 {
		t.Helper()
		th := s.Trial()
		evals := make([]jointopt.Eval, len(cs))
		ups := make([][]float64, len(cs))
		for i := range cs {
			var err error
			if ups[i], evals[i], err = lu.Solve(quadTerm(as[i], cs[i]), th, 1e-14); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := fusion.UpdateStep(s, evals, ups, alpha); err != nil {
			t.Fatal(err)
		}
		return s.Theta
	}
	s, _ := jointopt.Start([]float64{0, 0}, jointopt.Config{MaxRounds: 5})
	got := round(s, fusion.LocalUpdate{Steps: 3}, as)
	for k := range got {
		want := alpha[0]*cs[0][k] + alpha[1]*cs[1][k] + alpha[2]*cs[2][k]
		if math.Abs(got[k]-want) > 1e-12 {
			t.Errorf("FedAvg round 1 θ[%d] = %v, Σ α_i c_i = %v", k, got[k], want)
		}
	}
	again := round(s, fusion.LocalUpdate{Steps: 3}, as)
	for k := range again {
		if math.Abs(again[k]-got[k]) > 1e-12 {
			t.Errorf("FedAvg round 2 moved from the average: %v → %v", got, again)
		}
	}
	if s.GradNorms[1] < 0.1 {
		t.Errorf("the drifted FedAvg point has ‖∇F‖ %v; the joint optimum differs from it", s.GradNorms[1])
	}
	const mu = 0.7
	p, _ := jointopt.Start([]float64{0.5, -0.25}, jointopt.Config{MaxRounds: 5})
	th0 := p.Trial()
	gotP := round(p, fusion.LocalUpdate{Steps: 1, Mu: mu}, as)
	for k := range gotP {
		want := 0.0
		for i := range cs {
			want += alpha[i] * (as[i]*cs[i][k] + mu*th0[k]) / (as[i] + mu)
		}
		if math.Abs(gotP[k]-want) > 1e-12 {
			t.Errorf("FedProx round 1 θ[%d] = %v, closed form %v", k, gotP[k], want)
		}
	}
	eq := []float64{2, 2, 2}
	q, _ := jointopt.Start([]float64{0, 0}, jointopt.Config{MaxRounds: 200, GradTol: 1e-11})
	for !q.Done {
		round(q, fusion.LocalUpdate{Steps: 2, Mu: mu}, eq)
	}
	for k := range q.Theta {
		want := alpha[0]*cs[0][k] + alpha[1]*cs[1][k] + alpha[2]*cs[2][k]
		if !q.Converged() || math.Abs(q.Theta[k]-want) > 1e-10 {
			t.Errorf("FedProx with equal curvatures: θ %v (%s after %d rounds), joint optimum %v", q.Theta, q.Reason, q.Rounds, want)
		}
	}
	bad := fusion.UpdateStep
	if _, err := bad(q, nil, nil, alpha); err == nil {
		t.Error("a step after the end accepted")
	}
}
