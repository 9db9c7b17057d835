package tasks

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/ot"
)

func controlProbe(t *testing.T, env, preset string) ControlProbe {
	t.Helper()
	e, err := LookupControl(env)
	if err != nil {
		t.Fatal(err)
	}
	g, err := e.Grid(preset, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e.Probe(g)
}

// observation builds the observation an environment returns in state x.
func observation(env string, x []float64) []float64 {
	switch env {
	case "Pendulum-v1":
		return []float64{math.Cos(x[0]), math.Sin(x[0]), x[1]}
	case "Acrobot-v1":
		return []float64{math.Cos(x[0]), math.Sin(x[0]), math.Cos(x[1]), math.Sin(x[1]), x[2], x[3]}
	}
	return append([]float64(nil), x...)
}

// TestRewardAtCellsEqualsMatrixRows checks the reward adapter PPO uses, at
// the observation of each cell's point and each action level, against the
// rows of Φθ the clients learn with, for every environment and preset 64
// features plus a bias.
func TestRewardAtCellsEqualsMatrixRows(t *testing.T) {
	for _, env := range ControlEnvNames() {
		p := controlProbe(t, env, "paper")
		if d := p.RBF.Dim(); d != 65 {
			t.Errorf("%s: %d features, want 64 RBF centres and a bias", env, d)
		}
		g, phi, err := p.Features()
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		theta := make([]float64, p.RBF.Dim())
		for j := range theta {
			theta[j] = rng.NormFloat64()
		}
		r, err := p.RewardFunc(theta)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, g.NumStates()*g.NumActions())
		for i := range want {
			want[i] = floats.Dot(phi.RawRowView(i), theta)
		}
		x := make([]float64, g.StateDim())
		act := make([]float64, g.ActionDim())
		worst := 0.0
		for s := range g.NumCells() {
			obs := observation(env, g.States.Point(x, s))
			for a := range g.NumActions() {
				got := r(obs, g.Action(act, a), nil, false)
				worst = math.Max(worst, math.Abs(got-want[s*g.NumActions()+a]))
			}
		}
		if worst > 1e-12 {
			t.Errorf("%s: reward at cell points differs from Φθ by up to %g", env, worst)
		}
		for a := range g.NumActions() {
			if v := want[g.Terminal()*g.NumActions()+a]; v != 0 {
				t.Errorf("%s: terminal state has reward %v", env, v)
			}
		}
	}
}

// TestLatticePresetSizes checks the presets' sizes: the appendix's paper
// lattices and fine ≈ 10⁵, ultra ≈ 10⁶ state–action pairs.
func TestLatticePresetSizes(t *testing.T) {
	want := map[string]int{"Pendulum-v1": 3360, "CartPole-v1": 1750, "Acrobot-v1": 6075, "LunarLanderContinuous-v3": 5625}
	for _, env := range ControlEnvNames() {
		e, _ := LookupControl(env)
		for _, preset := range LatticePresets {
			g, err := e.Grid(preset, nil)
			if err != nil {
				t.Fatal(err)
			}
			n := 1
			for _, a := range append(g.State, g.Action...) {
				n *= a.N
			}
			switch preset {
			case "paper":
				if n != want[env] {
					t.Errorf("%s paper lattice: %d pairs, want %d", env, n, want[env])
				}
			case "fine":
				if n < 90_000 || n > 120_000 {
					t.Errorf("%s fine lattice: %d pairs, want ≈ 1e5", env, n)
				}
			case "ultra":
				if n < 900_000 || n > 1_100_000 {
					t.Errorf("%s ultra lattice: %d pairs, want ≈ 1e6", env, n)
				}
			}
		}
	}
	e, _ := LookupControl("Pendulum-v1")
	if g, err := e.Grid("paper", map[string]int{"theta": 8}); err != nil || g.State[0].N != 8 {
		t.Fatalf("override theta 8: %v %v", g.State[0], err)
	}
	for bins, msg := range map[string]map[string]int{
		"no lattice axis": {"n_x": 3},
		"n = 0":           {"thdot": 0},
	} {
		if _, err := e.Grid("paper", msg); err == nil || !contains(err.Error(), bins) {
			t.Errorf("override %v: %v, want an error with %q", msg, err, bins)
		}
	}
	if _, err := e.Grid("huge", nil); err == nil {
		t.Error("unknown preset accepted")
	}
}

// TestIdenticalControlClientsFuseBack: K identical clients fuse back to
// their θ, the mean exactly and the debiased barycenter within tolerance.
func TestIdenticalControlClientsFuseBack(t *testing.T) {
	p := controlProbe(t, "Pendulum-v1", "paper")
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	theta := make([]float64, p.RBF.Dim())
	for j := range theta {
		theta[j] = 0.5 * rng.NormFloat64()
	}
	thetas := [][]float64{theta, theta, theta}
	f := NewFuser()
	for _, tc := range []struct {
		opt fusion.Options
		tol float64
	}{
		{fusion.Options{Method: fusion.MethodMean}, 1e-15},
		{fusion.Options{Method: fusion.MethodBarycentric, Solver: ot.Debiased, Tol: 1e-9, MaxIter: 2000}, 2e-3},
	} {
		spec := federation.TaskSpec{ID: "c-" + tc.opt.MethodName(), EnvFamily: "control", Probe: raw, ThetaDim: len(theta), Quorum: 3, MinClients: 3, Rounds: 1}
		if spec.Fusion, err = EncodeFusion(tc.opt); err != nil {
			t.Fatal(err)
		}
		if err := f.Validate(spec); err != nil {
			t.Fatal(err)
		}
		out, err := f.Fuse(context.Background(), spec, thetas, []int{1, 1, 1})
		if err != nil {
			t.Fatal(err)
		}
		d := make([]float64, len(theta))
		floats.SubTo(d, out.Theta, theta)
		rel := floats.Norm(d, 2) / floats.Norm(theta, 2)
		if rel > tc.tol {
			t.Errorf("%s: identical clients fuse to θ with relative error %.3g, want ≤ %g", tc.opt.MethodName(), rel, tc.tol)
		}
		t.Logf("%s: relative error %.3g", tc.opt.MethodName(), rel)
	}
}

// TestControlProbeErrors: a bad probe is refused with a clear error.
func TestControlProbeErrors(t *testing.T) {
	p := controlProbe(t, "CartPole-v1", "paper")
	bad := p
	bad.Env = "Nope-v0"
	raw, _ := json.Marshal(bad)
	if _, err := (Control{}).Probe(raw); err == nil || !contains(err.Error(), "Nope-v0") {
		t.Errorf("unknown env: %v", err)
	}
	bad = p
	bad.RBF.Axes = bad.RBF.Axes[:2]
	raw, _ = json.Marshal(bad)
	if _, err := (Control{}).Probe(raw); err == nil || !contains(err.Error(), "RBF spec has 2 axes") {
		t.Errorf("short RBF: %v", err)
	}
	if _, err := (Control{}).Probe(json.RawMessage(`{"env":"CartPole-v1","grid":{},"rbf":{},"extra":1}`)); err == nil {
		t.Error("unknown key accepted")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestLunarPotentialSpansShaping: LunarLander's "potential" feature set
// holds the shaping potential Φ = −100‖(x, y)‖ − 100‖(ẋ, ẏ)‖ − 100|angle| +
// 10·(leg₁ + leg₂) exactly (θ with those five weights and zeros elsewhere),
// through the reward adapter PPO queries, at random observations and
// actions; and the set has no action dependence.
func TestLunarPotentialSpansShaping(t *testing.T) {
	e, err := LookupControl("LunarLanderContinuous-v3")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := e.Features(FeaturesPotential, 1)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := e.Grid("paper", nil)
	p := ControlProbe{Env: e.Name, Grid: g, RBF: spec}
	theta := make([]float64, spec.Dim())
	n := spec.NumCentres()
	copy(theta[n:], []float64{-100, -100, -100, 10, 10})
	r, err := p.RewardFunc(theta)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		obs := make([]float64, 8)
		for k := range 6 {
			obs[k] = 4*rng.Float64() - 2
		}
		obs[6], obs[7] = float64(rng.IntN(2)), float64(rng.IntN(2))
		phi := -100*math.Hypot(obs[0], obs[1]) - 100*math.Hypot(obs[2], obs[3]) - 100*math.Abs(obs[4]) + 10*obs[6] + 10*obs[7]
		a1 := []float64{2*rng.Float64() - 1, 2*rng.Float64() - 1}
		a2 := []float64{2*rng.Float64() - 1, 2*rng.Float64() - 1}
		if got := r(obs, a1, nil, false); math.Abs(got-phi) > 1e-9*math.Abs(phi) {
			t.Fatalf("obs %v: θᵀφ = %v, Φ = %v", obs, got, phi)
		}
		if r(obs, a1, nil, false) != r(obs, a2, nil, false) {
			t.Fatalf("obs %v: the reward depends on the action (%v at %v, %v at %v)", obs, r(obs, a1, nil, false), a1, r(obs, a2, nil, false), a2)
		}
	}
	if _, err := (&ControlEnv{Name: "x"}).Features(FeaturesPotential, 1); err == nil {
		t.Fatal("a potential set was returned for an environment without one")
	}
}

// TestLunarHeldSet: LunarLander's "held" feature set is a
// features.HeldLander block of the given frames alone (no bias), its
// probe builds on the lander lattice, and its reward adapter queries the
// block at the observation and the action PPO applied.
func TestLunarHeldSet(t *testing.T) {
	e, err := LookupControl("LunarLanderContinuous-v3")
	if err != nil {
		t.Fatal(err)
	}
	held, err := e.Features(FeaturesHeld, 8)
	if err != nil {
		t.Fatal(err)
	}
	if held.HeldLander == nil || held.HeldLander.Frames != 8 || held.Dim() != 8 || held.Bias {
		t.Fatalf("held set %+v of %d features: want a block of 8 for 8 frames, no bias", held.HeldLander, held.Dim())
	}
	g, err := e.Grid("lander", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := ControlProbe{Env: e.Name, Grid: g, RBF: held}
	if _, err := p.Build(); err != nil {
		t.Fatal(err)
	}
	// θ = 1 on the main throttle's column: the reward is the throttle.
	theta := make([]float64, held.Dim())
	theta[3] = 1
	r, err := p.RewardFunc(theta)
	if err != nil {
		t.Fatal(err)
	}
	obs := []float64{0.1, 0.8, 0, -0.3, 0.05, 0, 0, 0}
	for _, c := range []struct{ main, want float64 }{{-0.5, 0}, {0.2, 0.6}, {1, 1}} {
		if got := r(obs, []float64{c.main, 0}, nil, false); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("main %v: reward %v, want the throttle %v", c.main, got, c.want)
		}
	}
	if _, err := (&ControlEnv{Name: "x"}).Features(FeaturesHeld, 8); err == nil {
		t.Fatal("a held set was returned for an environment without one")
	}
	// held_end: held's shaping and fuel columns, then the legs' contact
	// changes, rest and crash; θ = 1 on rest pays a lander standing still
	// on its legs with the engines off, and nothing once an engine fires.
	end, err := e.Features(FeaturesHeldEnd, 8)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"distance", "speed", "angle", "main", "side", "leg1", "leg2", "rest", "crash"}; end.HeldLander == nil || !slices.Equal(end.HeldLander.Terms, want) || end.Bias || end.Dim() != len(want) {
		t.Fatalf("held_end set %+v of %d features, want the terms %v and no bias", end.HeldLander, end.Dim(), want)
	}
	theta = make([]float64, end.Dim())
	theta[7] = 1
	pe := ControlProbe{Env: e.Name, Grid: g, RBF: end}
	if r, err = pe.RewardFunc(theta); err != nil {
		t.Fatal(err)
	}
	landed := []float64{0.05, 0, 0, 0, 0.01, 0, 1, 1}
	if got := r(landed, []float64{-1, 0}, nil, false); got != 1 {
		t.Errorf("landed, engines off: rest %v, want 1", got)
	}
	if got := r(landed, []float64{0.3, 0}, nil, false); got != 0 {
		t.Errorf("landed, main engine on: rest %v, want 0", got)
	}
	if _, err := (&ControlEnv{Name: "x"}).Features(FeaturesHeldEnd, 8); err == nil {
		t.Fatal("a held_end set was returned for an environment without one")
	}
	// held_step: held_end's block of the observed step without the
	// throttles; at a lattice point (the server's probe) it is held_end's
	// nominal prediction, and its reward reads the step's next observation
	// (the legs' contact change).
	step, err := e.Features(FeaturesHeldStep, 8)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"distance", "speed", "angle", "leg1", "leg2", "rest", "crash"}; step.HeldLander == nil || !step.HeldLander.Observed ||
		!slices.Equal(step.HeldLander.Terms, want) || end.HeldLander.Observed || step.Bias {
		t.Fatalf("held_step set %+v: want the terms %v, observed, no bias (held_end's block %+v)", step.HeldLander, want, end.HeldLander)
	}
	x := []float64{0.1, 0.3, 0.05, -0.2, 0.02, 0.01, 0, 0, 0.4, 0.7}
	a, b := step.Eval(nil, x), end.Eval(nil, x)
	if !slices.Equal(a, append(slices.Clone(b[:3]), b[5:]...)) {
		t.Fatalf("held_step at a point %v, held_end %v: want held_end's columns but main and side", a, b)
	}
	theta = make([]float64, step.Dim())
	theta[3] = 10 // leg1
	ps := ControlProbe{Env: e.Name, Grid: g, RBF: step}
	if r, err = ps.RewardFunc(theta); err != nil {
		t.Fatal(err)
	}
	obs = []float64{0.1, 0.01, 0, -0.1, 0, 0, 0, 0}
	touched := []float64{0.1, 0.0, 0, -0.05, 0, 0, 1, 0}
	if got := r(obs, []float64{-1, 0}, touched, false); got != 10 {
		t.Errorf("leg 1 touching down over the step: reward %v, want 10", got)
	}
	if got := r(obs, []float64{-1, 0}, obs, false); got != 0 {
		t.Errorf("no contact change: reward %v, want 0", got)
	}
	bad := step
	bad.HeldLander = &features.HeldLander{Frames: 8, Terms: []string{"touchdown"}, Observed: true}
	if err := bad.Validate(); err == nil {
		t.Error("an observed block with the term touchdown (no observed counterpart) validated")
	}
}

// TestControlProbeSize: the size read from a probe's JSON alone is the
// built probe's: its pairs and its feature count, for LunarLander's paper,
// potential, held and held_end sets (product columns, extra columns, the held
// block without a product grid).
func TestControlProbeSize(t *testing.T) {
	e, err := LookupControl("LunarLanderContinuous-v3")
	if err != nil {
		t.Fatal(err)
	}
	g, err := e.Grid("paper", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []string{FeaturesPaper, FeaturesPotential, FeaturesHeld, FeaturesHeldEnd} {
		spec, err := e.Features(set, 8)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(ControlProbe{Env: e.Name, Grid: g, RBF: spec})
		if err != nil {
			t.Fatal(err)
		}
		points, feats, err := (Control{}).ProbeSize(raw)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := (Control{}).Probe(raw)
		if err != nil {
			t.Fatal(err)
		}
		n, d := pr.Phi.Dims()
		if points != n || feats != d {
			t.Errorf("%s: ProbeSize %d points × %d features, the probe %d × %d", set, points, feats, n, d)
		}
	}
}

// TestFeatureMapMatchesRewardFunc: the sample-based learner's features of a
// probe give, dotted with θ, the reward adapter PPO evaluates, at every
// cell's observation and action level of every environment's paper lattice.
func TestFeatureMapMatchesRewardFunc(t *testing.T) {
	for _, env := range ControlEnvNames() {
		p := controlProbe(t, env, "paper")
		g, _, err := p.Features()
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		theta := make([]float64, p.RBF.Dim())
		for j := range theta {
			theta[j] = rng.NormFloat64()
		}
		r, err := p.RewardFunc(theta)
		if err != nil {
			t.Fatal(err)
		}
		fm, err := p.FeatureMap()
		if err != nil {
			t.Fatal(err)
		}
		if fm.Dim() != len(theta) {
			t.Fatalf("%s: FeatureMap has %d features, θ %d", env, fm.Dim(), len(theta))
		}
		x := make([]float64, g.StateDim())
		act := make([]float64, g.ActionDim())
		f := make([]float64, fm.Dim())
		worst := 0.0
		for s := range g.NumCells() {
			obs := observation(env, g.States.Point(x, s))
			for a := range g.NumActions() {
				g.Action(act, a)
				want := r(obs, act, obs, false)
				got := floats.Dot(fm.Eval(f, obs, act, obs, false), theta)
				worst = math.Max(worst, math.Abs(got-want)/math.Max(1, math.Abs(want)))
			}
		}
		if worst > 1e-12 {
			t.Errorf("%s: θᵀφ differs from RewardFunc by up to %g (relative)", env, worst)
		}
	}
	if _, err := (ControlProbe{Env: "NoSuchEnv-v0"}).FeatureMap(); err == nil {
		t.Error("an unknown environment gave a feature map")
	}
}
