package control

import (
	"context"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/sampleirl"
	"github.com/fedirl/fedirl/pkg/tasks"
)

type irlSpec struct {
	Kind       string                 `json:"kind"`
	Version    int                    `json:"version"`
	Demos      string                 `json:"demos"`
	Env        string                 `json:"env"`
	Client     int                    `json:"client"`
	Probe      tasks.ControlProbe     `json:"probe"`
	Model      discretize.ModelConfig `json:"model"`
	Rollouts   *RolloutConfig         `json:"rollouts,omitempty"`
	IRL        IRLConfig              `json:"irl"`
	Iterations int                    `json:"iterations"`
	// Horizon is the lattice MDP's horizon (0 = infinite), from IRL.Horizon.
	Horizon int `json:"horizon"`
	// DemoFeatures is "observed" where the features are of the observed
	// step: μ_D sums them along the demonstrations' own steps
	// (demoStepFeatures) rather than Φ's rows at their pairs; absent
	// otherwise, leaving the other units' keys unchanged.
	DemoFeatures string `json:"demo_features,omitempty"`
	// Learner is "sample" for the sample-based learner (env.<id>.local_irl),
	// whose unit then depends on Demos, Env, Client, Probe, FrameSkip and
	// Sample only; absent for the lattice learner, leaving its keys unchanged.
	Learner string `json:"learner,omitempty"`
	// FrameSkip is env.<id>.frame_skip when > 1 (the sample learner's
	// simulator holds every action for that many frames, as its
	// demonstrations do).
	FrameSkip int `json:"frame_skip,omitempty"`
	// Sample is the sample-based learner's resolved configuration.
	Sample *sampleirl.Config `json:"sample,omitempty"`
	// Features is the point probe's feature map (lattice "points"), in
	// place of Probe: a sample-based fit on it depends on the features,
	// not on the probe's points.
	Features *tasks.PointFeatures `json:"features,omitempty"`
}

// IRLFile is the content of a local IRL unit: θ and its convergence diagnostics.
type IRLFile struct {
	Env        string    `json:"env"`
	Lattice    string    `json:"lattice"`
	Client     int       `json:"client"`
	Seed       uint64    `json:"seed"`
	Pairs      int       `json:"pairs"`
	Theta      []float64 `json:"theta"`
	Iterations int       `json:"iterations"`
	// GradNorm is ‖∇‖₂ at the final θ; GradNorm0 at θ = 0.
	GradNorm, GradNorm0 float64
	// FeatureGap is ‖μ_D − μ_π‖ / ‖μ_D‖ at the final θ.
	FeatureGap float64 `json:"feature_gap"`
	// LogLik0 and LogLik are the demonstrations' log-likelihood at θ = 0 and at the final θ.
	LogLik0, LogLik float64
	DemoSteps       int `json:"demo_steps"`
	// Converged reports ‖∇‖₂ ≤ irl.grad_tol; StopReason says why a fit
	// that did not converge stopped.
	Converged  bool   `json:"converged"`
	StopReason string `json:"stop_reason,omitempty"`
	// Evaluations counts the fit's objective and gradient evaluations.
	Evaluations int `json:"evaluations"`
	// ModelStates is the number of states of the lattice model (the
	// absorbing state included); ReachableStates of those reachable from
	// the demonstrations' first states, to which the fit is restricted.
	ModelStates     int `json:"model_states"`
	ReachableStates int `json:"reachable_states"`
	// Horizon is the lattice MDP's horizon (0 = infinite).
	Horizon int `json:"horizon"`
	// BiasGap is μ_D − μ_π on the bias feature at the final θ, BiasGap0 at θ = 0.
	BiasGap  float64 `json:"bias_gap"`
	BiasGap0 float64 `json:"bias_gap_0"`
	// AbsorbingReward is θ_abs with irl.absorbing (already folded into the
	// bias of Theta) and AbsorbingGap its feature's μ_D − μ_π.
	AbsorbingReward float64 `json:"absorbing_reward"`
	AbsorbingGap    float64 `json:"absorbing_gap"`
	// Learner is "sample" for a sample-based fit (absent for a lattice fit,
	// whose file keeps its bytes); Sample holds that fit's diagnostics.
	Learner string         `json:"learner,omitempty"`
	Sample  *SampleFitInfo `json:"sample,omitempty"`
}

// learner returns f's learner, lattice when unset.
func (f IRLFile) learner() string {
	if f.Learner == "" {
		return LocalIRLLattice
	}
	return f.Learner
}

func (s *Study) probe(env, lattice string) (tasks.ControlProbe, error) {
	ce, err := tasks.LookupControl(env)
	if err != nil {
		return tasks.ControlProbe{}, err
	}
	g, err := ce.Grid(lattice, s.cfg.Env[env].Bins)
	if err != nil {
		return tasks.ControlProbe{}, err
	}
	rbf, err := ce.Features(s.cfg.Env[env].Features, s.frameSkip(env))
	if err != nil {
		return tasks.ControlProbe{}, err
	}
	p := ce.Probe(g)
	p.RBF = rbf
	return p, nil
}

// horizon returns the lattice MDP's horizon for env under irl.horizon: the
// environment's time limit T, or 0 (infinite).
func (s *Study) horizon(env string) (int, error) {
	if s.cfg.IRL.Horizon == "infinite" {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.horizons[env]; ok {
		return h, nil
	}
	h, err := s.timeLimitHorizon(env)
	if err == nil {
		if s.horizons == nil {
			s.horizons = map[string]int{}
		}
		s.horizons[env] = h
	}
	return h, err
}

// timeLimitHorizon applies irl.horizon to env's time limit.
func (s *Study) timeLimitHorizon(env string) (int, error) {
	e, err := heldEnv(env, 0, s.frameSkip(env), 0) // the limit in lattice steps
	if err != nil {
		return 0, err
	}
	lim, ok := e.(interface{ MaxEpisodeSteps() int })
	if !ok || lim.MaxEpisodeSteps() <= 0 {
		return 0, nil
	}
	T := lim.MaxEpisodeSteps()
	if s.cfg.IRL.Horizon == "auto" && math.Pow(s.modelConfig(env, 0, 0).Gamma, float64(T)) < 0.01 {
		return 0, nil
	}
	return T, nil
}

// irlUnit returns the local IRL unit of client: the environment's learner
// (env.<id>.local_irl), the lattice one by default.
func (s *Study) irlUnit(env, lattice string, client int, seed uint64) (unit, irlSpec, error) {
	if s.cfg.Env[env].localIRL() == LocalIRLSample {
		return s.sampleIRLUnit(env, lattice, client, seed)
	}
	return s.latticeIRLUnit(env, lattice, client, seed)
}

// latticeIRLUnit returns client's lattice MaxEnt unit, which the pooled
// and joint fits build their lattice problems from whatever local_irl says.
func (s *Study) latticeIRLUnit(env, lattice string, client int, seed uint64) (unit, irlSpec, error) {
	du, _, _, _, err := s.demosUnit(env, client, seed)
	if err != nil {
		return unit{}, irlSpec{}, err
	}
	p, err := s.probe(env, lattice)
	if err != nil {
		return unit{}, irlSpec{}, err
	}
	h, err := s.horizon(env)
	if err != nil {
		return unit{}, irlSpec{}, err
	}
	sp := irlSpec{Kind: "irl", Version: unitVersion, Demos: du.key, Env: env, Client: client, Probe: p, Model: s.modelConfig(env, client, seed),
		IRL: s.cfg.IRL, Iterations: s.cfg.Env[env].IRLIterations, Horizon: h}
	sp.IRL.Absorbing = s.cfg.Env[env].absorbing(s.cfg.IRL)
	if p.RBF.StepDependent() {
		sp.DemoFeatures = demoFeaturesObserved
	}
	if s.cfg.weak(client) {
		sp.Iterations = s.cfg.WeakClients.IRLIterations
	}
	if sp.Rollouts, _, err = s.rollouts(env, client, seed); err != nil { // the demos unit's key holds the expert's
		return unit{}, irlSpec{}, err
	}
	return unit{"irl", fmt.Sprintf("%s-%s-c%d-s%d", env, lattice, client, seed), key(sp), ".json"}, sp, nil
}

// irlProblem builds what a local IRL unit fits: the client's lattice model
// (with the unit's horizon), the features, the demonstrations snapped to
// the lattice and the MaxEnt settings.
func (s *Study) irlProblem(ctx context.Context, sp irlSpec, lattice string, seed uint64, workers int) (*discretize.Grid, *mdp.MDP, *mat.Dense, []irl.Trajectory, irl.Config, *Demos, error) {
	fail := func(err error) (*discretize.Grid, *mdp.MDP, *mat.Dense, []irl.Trajectory, irl.Config, *Demos, error) {
		return nil, nil, nil, nil, irl.Config{}, nil, err
	}
	du, _, _, _, err := s.demosUnit(sp.Env, sp.Client, seed)
	if err != nil {
		return fail(err)
	}
	d, err := ReadDemos(du.path(s.units))
	if err != nil {
		return fail(err)
	}
	g, phi, err := s.features(sp.Probe)
	if err != nil {
		return fail(err)
	}
	m, _, phi, err := s.latticeModel(ctx, sp.Probe, g, phi, sp.Env, sp.Client, seed, sp.Model, sp.Rollouts, workers) // the ladder's and fidelity's model too
	if err != nil {
		return fail(fmt.Errorf("%s client %d %s lattice model: %w", sp.Env, sp.Client, lattice, err))
	}
	demos, err := d.Trajectories(g)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", du.path(s.units), err))
	}
	m.Horizon = sp.Horizon
	cfg := irl.Config{LearningRate: sp.IRL.LearningRate, Temperature: sp.IRL.Temperature, L2: sp.IRL.L2,
		MaxIter: sp.Iterations, Optimizer: sp.IRL.Optimizer, GradTol: sp.IRL.GradTol, Absorbing: sp.IRL.Absorbing,
		Solver: mdp.Options{Tol: sp.IRL.SolverTol, Anderson: sp.IRL.Anderson, Newton: sp.IRL.Solver == "newton", Workers: workers}}
	if sp.DemoFeatures == demoFeaturesObserved {
		cfg.EmpiricalFeatures = demoStepFeatures(sp.Probe.RBF, d, g.StateDim(), m.Gamma, demos)
	}
	return g, m, phi, demos, cfg, d, nil
}

// demoFeaturesObserved is irlSpec.DemoFeatures for features of the observed step.
const demoFeaturesObserved = "observed"

// demoStepFeatures returns μ_D of features of the observed step: over the
// demonstrations d, the mean of each episode's discounted sum (γ per
// lattice step) of spec.EvalStep along its own steps, as many steps as
// its snapped trajectory in trajs keeps (SnapTrajectory may truncate at
// the horizon), the last step of a terminated episode with terminated
// set. ns is the number of state coordinates.
func demoStepFeatures(spec features.RBFSpec, d *Demos, ns int, gamma float64, trajs []irl.Trajectory) []float64 {
	return demoStepFeaturesOf(spec, d, ns, gamma, trajs, 0, len(d.Lengths))
}

// demoStepFeaturesOf is demoStepFeatures over the episodes lo..hi−1 (the
// mean over them; the whole set sums in the same order as before).
func demoStepFeaturesOf(spec features.RBFSpec, d *Demos, ns int, gamma float64, trajs []irl.Trajectory, lo, hi int) []float64 {
	mu := make([]float64, spec.Dim())
	f := make([]float64, spec.Dim())
	s, a := 0, 0
	for ep, n := range d.Lengths {
		if ep >= lo && ep < hi {
			w := 1.0
			for t := range min(n, len(trajs[ep].Actions)) {
				x := append(slices.Clone(d.States[s+t][:ns]), d.Acts[a+t]...)
				spec.EvalStep(f, x, d.States[s+t+1][:ns], d.Terminal[ep] && t == n-1)
				floats.AddScaled(mu, w, f)
				w *= gamma
			}
		}
		s += n + 1
		a += n
	}
	floats.Scale(1/float64(hi-lo), mu)
	return mu
}

func (s *Study) runIRL(ctx context.Context, u unit, sp irlSpec, lattice string, seed uint64, workers int) error {
	if sp.Learner == LocalIRLSample {
		return s.runSampleIRL(ctx, u, sp, lattice, seed, workers)
	}
	g, m, phi, demos, cfg, d, err := s.irlProblem(ctx, sp, lattice, seed, workers)
	if err != nil {
		return err
	}
	bias := sp.Probe.RBF.Dim() - 1
	if !sp.Probe.RBF.Bias {
		bias = -1
	}
	res, err := irl.MaxEnt(ctx, m, phi, demos, cfg)
	if err != nil {
		return fmt.Errorf("%s client %d %s: MaxEnt: %w", sp.Env, sp.Client, lattice, err)
	}
	theta := res.Theta
	if sp.IRL.Absorbing {
		if bias < 0 {
			return fmt.Errorf("%s: irl.absorbing needs a bias feature to fold the absorbing state's value into", sp.Env)
		}
		theta[bias] -= res.AbsorbingReward // the same ranking of trajectories with a zero-valued terminal state
	}
	f := IRLFile{Env: sp.Env, Lattice: lattice, Client: sp.Client, Seed: seed, Pairs: g.NumPairs(), Theta: theta,
		Iterations: res.Iterations, GradNorm: res.GradNorm[len(res.GradNorm)-1], GradNorm0: res.GradNorm[0],
		LogLik0: res.LogLik[0], LogLik: res.LogLik[len(res.LogLik)-1], DemoSteps: len(d.Acts),
		Converged: res.Converged, StopReason: res.StopReason, Evaluations: res.Evaluations,
		ModelStates: res.ModelStates, ReachableStates: res.ReachableStates, Horizon: m.Horizon, AbsorbingReward: res.AbsorbingReward,
		AbsorbingGap: res.AbsorbingEmpirical - res.AbsorbingExpected}
	muD := append(slices.Clone(res.EmpiricalFeatures), res.AbsorbingEmpirical)
	muPi := append(slices.Clone(res.ExpectedFeatures), res.AbsorbingExpected)
	gap := make([]float64, len(muD))
	floats.SubTo(gap, muD, muPi)
	if n := floats.Norm(muD, 2); n > 0 {
		f.FeatureGap = floats.Norm(gap, 2) / n
	}
	if bias >= 0 {
		// Rung (c) at θ = 0 (the IRL starts there): the gap the bias column
		// starts from; with an infinite horizon and truncated demonstrations
		// it can never close.
		f.BiasGap, f.BiasGap0 = gap[bias], res.Gradient0[bias]
	}
	if !f.Converged {
		s.mu.Lock()
		fmt.Fprintf(s.log, "  warning: irl %s did not converge: ‖∇‖ = %.3g > irl.grad_tol %g after %d iterations (%s)\n",
			u.name, f.GradNorm, sp.IRL.GradTol, f.Iterations, f.StopReason)
		s.mu.Unlock()
	}
	return report.WriteJSON(u.path(s.units), f)
}
