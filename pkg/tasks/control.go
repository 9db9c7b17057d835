package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/lattice"
	"github.com/fedirl/fedirl/pkg/sampleirl"
)

// Control is the family of the paper's continuous-control tasks
// ("control"): the probe JSON is a ControlProbe (environment id, lattice
// and RBF features), from which the server builds the fusion support
// X = S × A of the lattice (each open or periodic axis weighted by
// 1/spacing², so ε is measured in squared spacings along every axis;
// categorical axes cost 1 between categories) and Φ restricted to it.
type Control struct{}

func init() { Register(Control{}) }

// Name implements Family.
func (Control) Name() string { return "control" }

// ControlProbe is the family-specific JSON of a control task.
type ControlProbe struct {
	// Env is the Gymnasium id, e.g. "Pendulum-v1".
	Env string `json:"env"`
	// Grid is the state–action lattice the clients learn on.
	Grid discretize.GridSpec `json:"grid"`
	// RBF is the feature map: one axis per state axis, then one per action axis.
	RBF features.RBFSpec `json:"rbf"`
}

// Probe implements Family.
func (Control) Probe(raw json.RawMessage) (fusion.Probe, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p ControlProbe
	if err := dec.Decode(&p); err != nil {
		return fusion.Probe{}, fmt.Errorf("decoding control probe: %w", err)
	}
	return p.Build()
}

// ProbeSize implements ProbeSizer: the grid's state–action pairs and the
// feature count (RBF centres, extra and held-block columns, bias), from the
// JSON alone.
func (Control) ProbeSize(raw json.RawMessage) (points, feats int, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p ControlProbe
	if err := dec.Decode(&p); err != nil {
		return 0, 0, fmt.Errorf("decoding control probe: %w", err)
	}
	points = 1
	for _, a := range append(append([]discretize.AxisSpec(nil), p.Grid.State...), p.Grid.Action...) {
		points = mulSat(points, max(a.N, 0))
	}
	feats = 1
	for _, a := range p.RBF.Axes {
		feats = mulSat(feats, len(a.Centres))
	}
	if p.RBF.NoProduct {
		feats = 0
	}
	if extra := len(p.RBF.Extra); feats < math.MaxInt-extra-1 {
		feats += extra
		if h := p.RBF.HeldLander; h != nil && len(h.Terms) < math.MaxInt-feats-1 {
			feats += len(h.Terms)
		}
	}
	if p.RBF.Bias && feats < math.MaxInt {
		feats++
	}
	return points, feats, nil
}

// Build returns the fusion probe of p: Φ on every non-terminal state–action
// pair (the rows of the clients' Φ without the terminal state) and the
// weighted pair lattice.
func (p ControlProbe) Build() (fusion.Probe, error) {
	if _, err := LookupControl(p.Env); err != nil {
		return fusion.Probe{}, err
	}
	g, err := discretize.New(p.Grid)
	if err != nil {
		return fusion.Probe{}, err
	}
	if err := p.check(g); err != nil {
		return fusion.Probe{}, err
	}
	phi, err := p.RBF.StateActionMatrix(g.States, g.Actions)
	if err != nil {
		return fusion.Probe{}, err
	}
	return fusion.Probe{Phi: phi, Lattice: FusionLattice(g)}, nil
}

func (p ControlProbe) check(g *discretize.Grid) error {
	if err := p.RBF.Validate(); err != nil {
		return err
	}
	if n, want := len(p.RBF.Axes), g.StateDim()+g.ActionDim(); n != want {
		return fmt.Errorf("control probe: the RBF spec has %d axes, the grid %d state and %d action axes", n, g.StateDim(), g.ActionDim())
	}
	return nil
}

// FusionLattice returns g's pair lattice with every non-categorical axis
// weighted by 1/spacing² (spacing = the distance between neighbouring
// points), so that one step along any axis costs 1.
func FusionLattice(g *discretize.Grid) lattice.Lattice {
	l := g.PairLattice()
	for k := range l.Axes {
		a := &l.Axes[k]
		if a.Categorical || a.Len() < 2 {
			continue
		}
		h := a.Coords[1] - a.Coords[0]
		a.Weight = 1 / (h * h)
	}
	return l
}

// ControlEnv says how the control study discretises one environment: its
// lattice presets, its default RBF features, and how an observation maps to
// the lattice's state coordinates (the simulator's full state).
type ControlEnv struct {
	// Name is the Gymnasium id.
	Name string
	// Grids are the lattice presets: "paper" (the appendix's flags), "fine"
	// (≈10⁵ state–action pairs) and "ultra" (≈10⁶).
	Grids map[string]discretize.GridSpec
	// RBF returns the paper's features: 64 Gaussian centres on a product
	// grid over the state and action coordinates, plus a bias (the feature
	// set "paper").
	RBF func() features.RBFSpec
	// Quadratic, when set, returns the feature set "quadratic": features in
	// whose span the environment's reward lies (see the environment's Note).
	Quadratic func() features.RBFSpec
	// Potential, when set, returns the feature set "potential": features
	// that span the environment's shaping potential (see its Note).
	Potential func() features.RBFSpec
	// Held, when set, returns the feature set "held" for lattice steps of
	// frames frames (env.<id>.frame_skip): features of the state and the
	// action held through the step (see its Note).
	Held func(frames int) features.RBFSpec
	// HeldEnd, when set, returns the feature set "held_end": the held
	// step's features with the episode's end and the legs' contacts in
	// place of its end-of-episode proxies (see its Note).
	HeldEnd func(frames int) features.RBFSpec
	// StateOf writes the state coordinates of an observation into dst
	// (angles recovered with atan2 from their cosine and sine).
	StateOf func(dst, obs []float64) []float64
	// Note documents deviations from the paper for this environment.
	Note string
	// Counted marks a simulator whose full state cannot be set: its lattice
	// model is built from the client's own rollouts (discretize.ReplayModel
	// or discretize.Counter), and the lattice's state is StateOf(observation).
	Counted bool
}

// LatticePresets lists the lattice preset names every environment has, in
// order of size (an environment may have more: LunarLander's lander).
var LatticePresets = []string{"paper", "fine", "ultra"}

var controlEnvs = map[string]*ControlEnv{}

func registerControl(e *ControlEnv) { controlEnvs[e.Name] = e }

// ControlEnvNames returns the environments of the control family, sorted.
func ControlEnvNames() []string {
	out := make([]string, 0, len(controlEnvs))
	for n := range controlEnvs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// LookupControl returns the control environment named name, or an error
// listing the known ones.
func LookupControl(name string) (*ControlEnv, error) {
	e, ok := controlEnvs[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q has no control-study discretisation (known: %s)", classic.ErrUnknownEnv, name, strings.Join(ControlEnvNames(), ", "))
	}
	return e, nil
}

// Grid returns the named lattice preset with per-axis overrides: bins maps
// an axis name (e.g. "theta", "action") to its number of points.
func (e *ControlEnv) Grid(preset string, bins map[string]int) (discretize.GridSpec, error) {
	g, ok := e.Grids[preset]
	if !ok {
		known := slices.Sorted(maps.Keys(e.Grids))
		return discretize.GridSpec{}, fmt.Errorf("lattice preset %q: unknown for %s (known: %s)", preset, e.Name, strings.Join(known, ", "))
	}
	g.State = append([]discretize.AxisSpec(nil), g.State...)
	g.Action = append([]discretize.AxisSpec(nil), g.Action...)
	for name, n := range bins {
		found := false
		for _, axes := range [][]discretize.AxisSpec{g.State, g.Action} {
			for k := range axes {
				if axes[k].Name == name {
					if axes[k].Categorical && axes[k].N != n {
						return discretize.GridSpec{}, fmt.Errorf("--n-%s %d: %s's action space is Discrete(%d); its number of levels cannot change", name, n, e.Name, axes[k].N)
					}
					if len(axes[k].Coords) > 0 && axes[k].N != n {
						return discretize.GridSpec{}, fmt.Errorf("--n-%s %d: lattice %q gives axis %s its %d points explicitly (%v); their number cannot change", name, n, preset, name, axes[k].N, axes[k].Coords)
					}
					axes[k].N, found = n, true
				}
			}
		}
		if !found {
			return discretize.GridSpec{}, fmt.Errorf("--n-%s: %s has no lattice axis %q (its axes: %s)", name, e.Name, name, strings.Join(e.AxisNames(), ", "))
		}
	}
	return g, g.Validate()
}

// AxisNames returns the names of the lattice axes, state axes first.
func (e *ControlEnv) AxisNames() []string {
	g := e.Grids["paper"]
	var out []string
	for _, a := range append(append([]discretize.AxisSpec(nil), g.State...), g.Action...) {
		out = append(out, a.Name)
	}
	return out
}

// Feature set names accepted by ControlEnv.Features.
const (
	// FeaturesPaper is the paper's 64 RBF centres and a bias.
	FeaturesPaper = "paper"
	// FeaturesQuadratic is a set that spans the environment's reward
	// (ControlEnv.Quadratic), for environments that have one.
	FeaturesQuadratic = "quadratic"
	// FeaturesPotential is a set that spans the environment's shaping
	// potential (ControlEnv.Potential), for environments that have one.
	FeaturesPotential = "potential"
	// FeaturesHeld is a set of features of the state and of the action held
	// through a lattice step of several frames (ControlEnv.Held), for
	// environments that have one.
	FeaturesHeld = "held"
	// FeaturesHeldEnd is the held set with the events that end an episode
	// and the legs' contacts predicted over the held step
	// (ControlEnv.HeldEnd), for environments that have one.
	FeaturesHeldEnd = "held_end"
	// FeaturesHeldStep is held_end's columns of the state's change —
	// the shaping potential's terms, the legs' contacts, rest and crash,
	// not the throttles — computed from the observed held step (s, a, s′)
	// wherever one is known (features.HeldLander's Observed): the client's
	// replay model averages them over each pair's replayed steps, the
	// demonstrations' μ_D sums them along their own steps, a policy
	// optimizer's reward takes them from the step it took, and the
	// server's probe has held_end's nominal prediction. A reward of the
	// state's change alone (cf. AIRL's state-only rewards): with the
	// throttle columns MaxEnt explained the expert's engine use by an
	// engine bonus (θ_main +60, θ_side +50 on client 0, seed 1), which PPO
	// then chased (true return −280; 252 without them; README-control).
	FeaturesHeldStep = "held_step"
)

// Features returns the named feature set of this environment for lattice
// steps of frames simulator steps (env.<id>.frame_skip; only the "held"
// set depends on it).
func (e *ControlEnv) Features(set string, frames int) (features.RBFSpec, error) {
	switch set {
	case FeaturesPaper:
		return e.RBF(), nil
	case FeaturesQuadratic:
		if e.Quadratic == nil {
			return features.RBFSpec{}, fmt.Errorf("feature set %q: %s has none (use %q)", set, e.Name, FeaturesPaper)
		}
		return e.Quadratic(), nil
	case FeaturesPotential:
		if e.Potential == nil {
			return features.RBFSpec{}, fmt.Errorf("feature set %q: %s has none (use %q)", set, e.Name, FeaturesPaper)
		}
		return e.Potential(), nil
	case FeaturesHeld:
		if e.Held == nil {
			return features.RBFSpec{}, fmt.Errorf("feature set %q: %s has none (use %q)", set, e.Name, FeaturesPaper)
		}
		return e.Held(max(frames, 1)), nil
	case FeaturesHeldEnd:
		if e.HeldEnd == nil {
			return features.RBFSpec{}, fmt.Errorf("feature set %q: %s has none (use %q)", set, e.Name, FeaturesPaper)
		}
		return e.HeldEnd(max(frames, 1)), nil
	case FeaturesHeldStep:
		if e.HeldEnd == nil {
			return features.RBFSpec{}, fmt.Errorf("feature set %q: %s has none (use %q)", set, e.Name, FeaturesPaper)
		}
		spec := e.HeldEnd(max(frames, 1))
		block := features.HeldLander{Frames: spec.HeldLander.Frames, Observed: true}
		for _, t := range spec.HeldLander.Terms {
			if t != "main" && t != "side" {
				block.Terms = append(block.Terms, t)
			}
		}
		spec.HeldLander = &block
		return spec, nil
	}
	return features.RBFSpec{}, fmt.Errorf("feature set %q: unknown (known: %s, %s, %s, %s, %s, %s)", set, FeaturesPaper, FeaturesQuadratic, FeaturesPotential, FeaturesHeld, FeaturesHeldEnd, FeaturesHeldStep)
}

// Probe returns the probe of a task on this environment with the given grid and the paper's features.
func (e *ControlEnv) Probe(grid discretize.GridSpec) ControlProbe {
	return ControlProbe{Env: e.Name, Grid: grid, RBF: e.RBF()}
}

// Features returns Φ of a client's lattice MDP for probe p: row s·A + a for
// every state s including the terminal one (zero rows), the same rows as
// the probe's Φ on the non-terminal pairs.
func (p ControlProbe) Features() (*discretize.Grid, *mat.Dense, error) {
	g, err := discretize.New(p.Grid)
	if err != nil {
		return nil, nil, err
	}
	if err := p.check(g); err != nil {
		return nil, nil, err
	}
	phi, err := discretize.PairFeatures(g, &p.RBF)
	return g, phi, err
}

// RewardFunc returns the learned reward r(obs, a) = θᵀφ(state(obs), a) of
// probe p for a policy optimizer (ppo.RewardFunc's shape): obs is a raw
// observation, action the action applied (a Discrete action as its index),
// next the observation the step returned and terminated whether it ended
// the episode. Features of the observed step (features.RBFSpec.StepDependent)
// are taken from (state(obs), a) to state(next); the others ignore next
// and terminated. The returned function allocates nothing and is not safe
// for concurrent use.
func (p ControlProbe) RewardFunc(theta []float64) (func(obs, action, next []float64, terminated bool) float64, error) {
	e, err := LookupControl(p.Env)
	if err != nil {
		return nil, err
	}
	if err := p.RBF.Validate(); err != nil {
		return nil, err
	}
	if len(theta) != p.RBF.Dim() {
		return nil, fmt.Errorf("reward: θ has %d entries, the features %d", len(theta), p.RBF.Dim())
	}
	ns, na := len(p.Grid.State), len(p.Grid.Action)
	if len(p.RBF.Axes) != ns+na {
		return nil, fmt.Errorf("reward: the RBF spec has %d axes, the grid %d", len(p.RBF.Axes), ns+na)
	}
	theta = append([]float64(nil), theta...)
	x, y := make([]float64, ns+na), make([]float64, ns)
	step := p.RBF.StepDependent()
	return func(obs, action, next []float64, terminated bool) float64 {
		e.StateOf(x[:ns], obs)
		copy(x[ns:], action)
		if step {
			return p.RBF.RewardStep(theta, x, e.StateOf(y, next), terminated)
		}
		return p.RBF.Reward(theta, x)
	}, nil
}

// FeatureMap returns the features of probe p as the sample-based learner
// takes them (sampleirl.FeatureMap): φ(state(obs), a), and for features of
// the observed step (features.RBFSpec.StepDependent) φ from (state(obs), a)
// to state(next), so that θᵀ of them is RewardFunc(θ). The map is not safe
// for concurrent use.
func (p ControlProbe) FeatureMap() (sampleirl.FeatureMap, error) {
	e, err := LookupControl(p.Env)
	if err != nil {
		return nil, err
	}
	if err := p.RBF.Validate(); err != nil {
		return nil, err
	}
	ns, na := len(p.Grid.State), len(p.Grid.Action)
	if len(p.RBF.Axes) != ns+na {
		return nil, fmt.Errorf("features: the RBF spec has %d axes, the grid %d", len(p.RBF.Axes), ns+na)
	}
	x, y := make([]float64, ns+na), make([]float64, ns)
	spec := p.RBF
	step := spec.StepDependent()
	return sampleirl.FeatureFunc{D: spec.Dim(), F: func(dst, obs, action, next []float64, terminated bool) []float64 {
		e.StateOf(x[:ns], obs)
		copy(x[ns:], action)
		if step {
			return spec.EvalStep(dst, x, e.StateOf(y, next), terminated)
		}
		return spec.Eval(dst, x)
	}}, nil
}

func angleAxis(name string, n int) discretize.AxisSpec {
	return discretize.AxisSpec{Name: name, N: n, Lo: -math.Pi, Hi: math.Pi, Periodic: true}
}

func openAxis(name string, n int, lo, hi float64) discretize.AxisSpec {
	return discretize.AxisSpec{Name: name, N: n, Lo: lo, Hi: hi}
}

func actionIndexAxis(n int) discretize.AxisSpec {
	return discretize.AxisSpec{Name: "action", N: n, Categorical: true}
}

func init() {
	pend := func(nTheta, nDot, nAct int) discretize.GridSpec {
		return discretize.GridSpec{
			State:  []discretize.AxisSpec{angleAxis("theta", nTheta), openAxis("thdot", nDot, -8, 8)},
			Action: []discretize.AxisSpec{openAxis("action", nAct, -2, 2)},
		}
	}
	registerControl(&ControlEnv{
		Name:  "Pendulum-v1",
		Grids: map[string]discretize.GridSpec{"paper": pend(32, 21, 5), "fine": pend(160, 125, 5), "ultra": pend(500, 400, 5)},
		RBF: func() features.RBFSpec {
			return features.RBFSpec{Axes: []features.RBFAxis{
				features.UniformRBFAxis("theta", 4, -math.Pi, math.Pi, 2*math.Pi),
				features.UniformRBFAxis("thdot", 4, -8, 8, 0),
				features.UniformRBFAxis("action", 4, -2, 2, 0),
			}, Bias: true}
		},
		// Pendulum's reward −(θ² + 0.1θ̇² + 0.001u²) is, but for the
		// torque term (0.4 % of its range), a combination of square(θ) (θ
		// wrapped into [−π, π)) and square(θ̇/8). The set is state-only: 16
		// Gaussians on (θ, θ̇), those two squares, cos θ and a bias. An
		// action-dependent reward lets MaxEnt explain the demonstrator's
		// saturated swing-up torques by a torque bonus (the soft-optimal
		// policy spreads over the torque levels, so matching E[u²] needs one),
		// which PPO then chases; a state-only reward cannot (cf. AIRL's
		// state-only rewards, Fu et al. 2018).
		Quadratic: func() features.RBFSpec {
			return features.RBFSpec{Axes: []features.RBFAxis{
				features.UniformRBFAxis("theta", 4, -math.Pi, math.Pi, 2*math.Pi),
				features.UniformRBFAxis("thdot", 4, -8, 8, 0),
				{Name: "action", Centres: []float64{0}, Categorical: true}, // constant: a state-only reward
			}, Extra: []features.ExtraFeature{
				{Kind: features.ExtraSquare, Axis: 0, Period: 2 * math.Pi},
				{Kind: features.ExtraSquare, Axis: 1, Scale: 1.0 / 8},
				{Kind: features.ExtraCos, Axis: 0},
			}, Bias: true}
		},
		StateOf: func(dst, obs []float64) []float64 {
			dst[0], dst[1] = math.Atan2(obs[1], obs[0]), obs[2]
			return dst
		},
		Note: "state (θ, θ̇) with θ periodic on [−π, π); the torque levels are evenly spaced in [−2, 2] (client torque scales act inside the simulator)",
	})

	cart := func(nx, nxd, nth, nthd int) discretize.GridSpec {
		return discretize.GridSpec{
			State: []discretize.AxisSpec{openAxis("x", nx, -2.4, 2.4), openAxis("xdot", nxd, -3, 3),
				openAxis("theta", nth, -0.2095, 0.2095), openAxis("thetadot", nthd, -3.5, 3.5)},
			Action: []discretize.AxisSpec{actionIndexAxis(2)},
		}
	}
	registerControl(&ControlEnv{
		Name:  "CartPole-v1",
		Grids: map[string]discretize.GridSpec{"paper": cart(5, 5, 7, 5), "fine": cart(12, 12, 25, 14), "ultra": cart(20, 20, 50, 25)},
		RBF: func() features.RBFSpec {
			return features.RBFSpec{Axes: []features.RBFAxis{
				features.UniformRBFAxis("x", 2, -2.4, 2.4, 0),
				features.UniformRBFAxis("xdot", 2, -3, 3, 0),
				features.UniformRBFAxis("theta", 4, -0.2095, 0.2095, 0),
				features.UniformRBFAxis("thetadot", 2, -3.5, 3.5, 0),
				{Name: "action", Centres: []float64{0, 1}, Categorical: true},
			}, Bias: true}
		},
		StateOf: func(dst, obs []float64) []float64 { copy(dst, obs[:4]); return dst },
		Note:    "θ spans the failure thresholds ±12° (±0.2095 rad); states beyond the lattice snap to its edge cells",
	})

	// The paper lattice spans Acrobot's velocity limits (±4π, ±9π). The fine
	// and ultra lattices span ±4 and ±8 rad/s, where the swing-up spends
	// 99 % of its steps (faster states snap to the edge cells): with the
	// limits' span, a 21·21·9·9 lattice's true-reward planner fails the
	// swing-up (−440 to −500), with this one it succeeds (−138 to −168).
	acro := func(n1, n2, nd1, nd2 int, v1, v2 float64) discretize.GridSpec {
		return discretize.GridSpec{
			State: []discretize.AxisSpec{angleAxis("theta1", n1), angleAxis("theta2", n2),
				openAxis("thdot1", nd1, -v1, v1), openAxis("thdot2", nd2, -v2, v2)},
			Action: []discretize.AxisSpec{actionIndexAxis(3)},
		}
	}
	registerControl(&ControlEnv{
		Name: "Acrobot-v1",
		Grids: map[string]discretize.GridSpec{"paper": acro(9, 9, 5, 5, 4*math.Pi, 9*math.Pi),
			"fine": acro(21, 21, 9, 9, 4, 8), "ultra": acro(36, 36, 16, 16, 4, 8)},
		RBF: func() features.RBFSpec {
			return features.RBFSpec{Axes: []features.RBFAxis{
				features.UniformRBFAxis("theta1", 4, -math.Pi, math.Pi, 2*math.Pi),
				features.UniformRBFAxis("theta2", 2, -math.Pi, math.Pi, 2*math.Pi),
				features.UniformRBFAxis("thdot1", 2, -4*math.Pi, 4*math.Pi, 0),
				features.UniformRBFAxis("thdot2", 2, -9*math.Pi, 9*math.Pi, 0),
				// The action index 0, 1, 2 is the torque −1, 0, +1: two centres at the ends.
				{Name: "action", Centres: []float64{0, 2}, Bandwidth: 1},
			}, Bias: true}
		},
		StateOf: func(dst, obs []float64) []float64 {
			dst[0], dst[1] = math.Atan2(obs[1], obs[0]), math.Atan2(obs[3], obs[2])
			dst[2], dst[3] = obs[4], obs[5]
			return dst
		},
		Note: "Acrobot-v1 has 3 actions (torque −1, 0, +1), not the 5 of the appendix table, so the paper lattice has 9·9·5·5·3 = 6075 pairs, not 10125",
	})

	ll := func(nx, ny, nvx, nvy, nang, nangv, nleg int) discretize.GridSpec {
		leg := func(name string) discretize.AxisSpec {
			if nleg == 1 {
				return discretize.AxisSpec{Name: name, N: 1, Categorical: true}
			}
			return discretize.AxisSpec{Name: name, N: 2, Categorical: true}
		}
		return discretize.GridSpec{
			State: []discretize.AxisSpec{openAxis("ll-x", nx, -1, 1), openAxis("ll-y", ny, -0.1, 1.5),
				openAxis("ll-vx", nvx, -1, 1), openAxis("ll-vy", nvy, -1.5, 0.5),
				openAxis("ll-angle", nang, -0.5, 0.5), openAxis("ll-angvel", nangv, -1, 1), leg("ll-leg1"), leg("ll-leg2")},
			Action: []discretize.AxisSpec{openAxis("main", 3, -1, 1), openAxis("lateral", 3, -1, 1)},
		}
	}
	// landerGround moves a lattice's lowest y point from −0.1 to 0, where a
	// level lander's feet touch the pad (its hull does at −0.04).
	landerGround := func(g discretize.GridSpec) discretize.GridSpec {
		g.State[1].Lo = 0
		return g
	}
	registerControl(&ControlEnv{
		Name: "LunarLanderContinuous-v3",
		// lander is the paper lattice with 5 points on angle and angular
		// velocity: the attitude every action of a landing depends on,
		// which the paper's single point hides from the planner
		// (README-control, LunarLander). lander2 adds both leg flags and
		// lander2g moves y's lowest point to the pad as well: measured,
		// and worse for the planner (README-control, "The episode's end as
		// features, and both leg flags").
		Grids: map[string]discretize.GridSpec{"paper": ll(5, 5, 5, 5, 1, 1, 1),
			"fine": ll(8, 8, 8, 8, 3, 1, 1), "ultra": ll(12, 12, 12, 12, 5, 1, 1), "lander": ll(5, 5, 5, 5, 5, 5, 1),
			"lander2": ll(5, 5, 5, 5, 5, 5, 2), "lander2g": landerGround(ll(5, 5, 5, 5, 5, 5, 2))},
		RBF: func() features.RBFSpec {
			one := func(name string) features.RBFAxis {
				return features.RBFAxis{Name: name, Centres: []float64{0}, Bandwidth: 1}
			}
			return features.RBFSpec{Axes: []features.RBFAxis{
				features.UniformRBFAxis("ll-x", 2, -1, 1, 0),
				features.UniformRBFAxis("ll-y", 2, -0.1, 1.5, 0),
				features.UniformRBFAxis("ll-vx", 2, -1, 1, 0),
				features.UniformRBFAxis("ll-vy", 2, -1.5, 0.5, 0),
				// One centre for angle, angular velocity and legs: the paper's
				// lattice has a single point on those axes, where more
				// centres would give proportional (rank-deficient) columns.
				one("ll-angle"), one("ll-angvel"), one("ll-leg1"), one("ll-leg2"),
				features.UniformRBFAxis("main", 2, -1, 1, 0),
				features.UniformRBFAxis("lateral", 2, -1, 1, 0),
			}, Bias: true}
		},
		// The reward is Φ(s′) − Φ(s) − 0.30·main − 0.03·side, ±100 on
		// termination, with Φ = −100‖(x, y)‖ − 100‖(ẋ, ẏ)‖ − 100|angle| +
		// 10·(leg₁ + leg₂): the set has Φ's five terms, 16 Gaussians on (x,
		// y, ẋ, ẏ) and a bias, and no action dependence (as Pendulum's
		// quadratic set).
		Potential: lunarPotential,
		// The 8-frame reward of a held action is mostly the change of the
		// shaping potential between the state and where the action takes
		// it, which no function of the state alone can follow: the set is
		// features.HeldLander's block alone (each term's predicted change
		// over the held step, and the engines' throttles), with no bias and
		// no RBF columns, whose near-constant sum acts as one: the true
		// reward of a held step has no constant term, and a positive one
		// pays PPO to hover until the time limit (README-control).
		Held: func(frames int) features.RBFSpec {
			return lunarHeld(frames, "distance", "speed", "angle", "main", "side", "touchdown", "touchdown_speed", "off_screen")
		},
		// held_end: the shaping and fuel columns of held, and in place of
		// its end-of-episode proxies the events the true reward pays for
		// (features.LanderEnd): each leg's predicted contact change (the
		// potential's +10 per leg), rest (+100) and crash (−100). The
		// shaping columns are held's (no floor under the feet: with one,
		// PPO on them with the true weights returned −85 instead of +21,
		// README-control).
		HeldEnd: func(frames int) features.RBFSpec {
			return lunarHeld(frames, "distance", "speed", "angle", "main", "side", "leg1", "leg2", "rest", "crash")
		},
		StateOf: func(dst, obs []float64) []float64 { copy(dst, obs[:8]); return dst },
		Note: "the state is the observation (x, y, ẋ, ẏ, angle, angular velocity, two leg contacts); the paper's 5⁴·1³ state grid with 1 point for angle, angular velocity and each leg flag; " +
			"actions 3 main × 3 lateral levels (the appendix's \"3\" read per coordinate, so the paper lattice has 625·9 = 5625 pairs, not 1875); the model is built from the client's own ε-greedy expert rollouts (replay clones of their states, or their counted transitions)",
		Counted: true,
	})
}

// lunarHeld returns a LunarLander feature set of the HeldLander block of
// the given terms alone: no RBF columns and no bias.
func lunarHeld(frames int, terms ...string) features.RBFSpec {
	p := lunarPotential()
	p.NoProduct, p.Extra, p.Bias = true, nil, false
	p.HeldLander = &features.HeldLander{Frames: frames, Terms: terms}
	return p
}

// lunarPotential returns LunarLander's feature set "potential".
func lunarPotential() features.RBFSpec {
	one := func(name string) features.RBFAxis { // a constant factor
		return features.RBFAxis{Name: name, Centres: []float64{0}, Categorical: true}
	}
	return features.RBFSpec{Axes: []features.RBFAxis{
		features.UniformRBFAxis("ll-x", 2, -1, 1, 0),
		features.UniformRBFAxis("ll-y", 2, -0.1, 1.5, 0),
		features.UniformRBFAxis("ll-vx", 2, -1, 1, 0),
		features.UniformRBFAxis("ll-vy", 2, -1.5, 0.5, 0),
		one("ll-angle"), one("ll-angvel"), one("ll-leg1"), one("ll-leg2"),
		one("main"), one("lateral"), // no action dependence
	}, Extra: []features.ExtraFeature{
		{Kind: features.ExtraNorm, Axis: 0, With: 1},
		{Kind: features.ExtraNorm, Axis: 2, With: 3},
		{Kind: features.ExtraAbs, Axis: 4},
		{Kind: features.ExtraLinear, Axis: 6},
		{Kind: features.ExtraLinear, Axis: 7},
	}, Bias: true}
}
