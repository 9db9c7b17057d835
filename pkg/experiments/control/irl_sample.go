package control

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/floats"

	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/sampleirl"
)

// The sample-based local IRL unit (env.<id>.local_irl: sample): the
// client's θ_i by sampleirl.Learn in its own simulator — the simulator the
// study builds for its expert and evaluations (clientMaker: the client's
// physics and observation noise), each action held for frame_skip frames as
// in its demonstrations — on its demonstrations in the simulator's own
// spaces, with the probe's features (tasks.ControlProbe.FeatureMap, so
// θᵀφ is the reward RewardFunc(θ) the evaluation trains on). θ has the
// probe's dimension, so the fusions, the fidelity scores and the
// evaluations read it like a lattice fit's. No lattice model is built.

// SampleFitInfo is a sample-based fit's diagnostics (IRLFile.Sample).
type SampleFitInfo struct {
	// Gap is ‖μ_D − μ̂_π‖₂ at the returned θ and GapSE the standard error
	// of μ̂_π; the fit converged when Gap ≤ tolerance·GapSE.
	Gap   float64 `json:"gap"`
	GapSE float64 `json:"gap_se"`
	// FeatureGapSE is GapSE/‖μ_D‖, the scale of IRLFile.FeatureGap's sampling error.
	FeatureGapSE float64 `json:"feature_gap_se"`
	// DemoSE is the standard error of μ_D over the demonstrations.
	DemoSE float64 `json:"demo_se"`
	// Tolerance is z of the stopping rule.
	Tolerance float64 `json:"tolerance"`
	// EnvSteps counts the PPO training steps, EvalSteps the steps of the
	// episodes that estimated μ̂_π.
	EnvSteps  int `json:"env_steps"`
	EvalSteps int `json:"eval_steps"`
	// GapHistory and GapSEHistory are every iteration's Gap and GapSE.
	GapHistory   []float64 `json:"gap_history"`
	GapSEHistory []float64 `json:"gap_se_history"`
}

// sampleConfig resolves env's sample_irl block for client and seed into
// the learner's configuration: the PPO preset made soft at temperature τ
// (linear schedules and reward normalisation off), the seed derived from
// the study's, a weak client's iteration cap.
func (s *Study) sampleConfig(env string, client int, seed uint64) (sampleirl.Config, error) {
	ec := s.cfg.Env[env]
	var sc SampleIRLConfig
	if ec.SampleIRL != nil {
		sc = *ec.SampleIRL
	}
	name := ec.EvaluationPreset
	if sc.PPOPreset != "" {
		name = sc.PPOPreset
	}
	pc, err := preset(env, name)
	if err != nil {
		return sampleirl.Config{}, fmt.Errorf("env.%s.sample_irl.ppo_preset: %w", env, err)
	}
	pc.LinearLR, pc.LinearClip, pc.NormalizeReward = false, false, false
	tau := sc.Temperature
	if tau == 0 {
		tau = s.cfg.IRL.Temperature
	}
	c := sampleirl.Config{PPO: sampleirl.SoftPPO(pc, tau), Seed: seedOf(seed, "sample-irl", client),
		PolicySteps: sc.PolicySteps, Episodes: sc.Episodes, ConfirmEpisodes: sc.ConfirmEpisodes, MaxIter: sc.MaxIter, Tolerance: sc.Tolerance,
		Optimizer: sc.Optimizer, LearningRate: sc.LearningRate, L2: sc.L2}
	if s.cfg.weak(client) {
		c.MaxIter = s.cfg.WeakClients.IRLIterations
	}
	c, err = c.Resolve()
	if err != nil {
		return sampleirl.Config{}, fmt.Errorf("env.%s.sample_irl: %w", env, err)
	}
	c.Workers = 0 // not part of the key: it never changes a result
	return c, nil
}

// sampleIRLUnit returns client's sample-based local IRL unit.
func (s *Study) sampleIRLUnit(env, lattice string, client int, seed uint64) (unit, irlSpec, error) {
	du, _, _, _, err := s.demosUnit(env, client, seed)
	if err != nil {
		return unit{}, irlSpec{}, err
	}
	c, err := s.sampleConfig(env, client, seed)
	if err != nil {
		return unit{}, irlSpec{}, err
	}
	sp := irlSpec{Kind: "irl", Version: unitVersion, Demos: du.key, Env: env, Client: client,
		Learner: LocalIRLSample, Sample: &c}
	if lattice == LatticePoints {
		pf, err := s.pointFeatures(env)
		if err != nil {
			return unit{}, irlSpec{}, err
		}
		sp.Features = &pf
	} else if sp.Probe, err = s.probe(env, lattice); err != nil {
		return unit{}, irlSpec{}, err
	}
	if k := s.frameSkip(env); k > 1 {
		sp.FrameSkip = k
	}
	return unit{"irl", fmt.Sprintf("%s-%s-c%d-s%d", env, lattice, client, seed), key(sp), ".json"}, sp, nil
}

// sampleTrajectories returns the demonstrations in the simulator's own
// spaces: each episode's observations and actions as recorded.
func (d *Demos) sampleTrajectories() []sampleirl.Trajectory {
	out := make([]sampleirl.Trajectory, 0, len(d.Lengths))
	o, a := 0, 0
	for ep, n := range d.Lengths {
		out = append(out, sampleirl.Trajectory{Obs: d.Obs[o : o+n+1], Actions: d.Acts[a : a+n], Terminated: d.Terminal[ep]})
		o += n + 1
		a += n
	}
	return out
}

func (s *Study) runSampleIRL(ctx context.Context, u unit, sp irlSpec, lattice string, seed uint64, workers int) error {
	du, _, _, _, err := s.demosUnit(sp.Env, sp.Client, seed)
	if err != nil {
		return err
	}
	d, err := ReadDemos(du.path(s.units))
	if err != nil {
		return err
	}
	var phi sampleirl.FeatureMap
	if sp.Features != nil {
		phi, err = sp.Features.FeatureMap()
	} else {
		phi, err = sp.Probe.FeatureMap()
	}
	if err != nil {
		return fmt.Errorf("%s %s features: %w", sp.Env, lattice, err)
	}
	mk := clientMaker(sp.Env, sp.Client, seed)
	if sp.FrameSkip > 1 {
		mk = heldMaker(mk, sp.FrameSkip)
	}
	cfg := *sp.Sample
	cfg.Workers = workers
	res, err := sampleirl.Learn(ctx, mk, phi, d.sampleTrajectories(), cfg)
	if err != nil {
		return fmt.Errorf("%s client %d %s: sample-based IRL: %w", sp.Env, sp.Client, lattice, err)
	}
	info := &SampleFitInfo{Gap: res.Gap, GapSE: res.GapSE, DemoSE: res.DemoSE, Tolerance: cfg.Tolerance,
		EnvSteps: res.EnvSteps, EvalSteps: res.EvalSteps}
	for _, it := range res.History {
		info.GapHistory = append(info.GapHistory, it.Gap)
		info.GapSEHistory = append(info.GapSEHistory, it.GapSE)
	}
	pairs := 0 // a point probe's fit has no pairs
	if sp.Features == nil {
		pairs = sp.Probe.Grid.NumPairs()
	}
	f := IRLFile{Env: sp.Env, Lattice: lattice, Client: sp.Client, Seed: seed, Pairs: pairs, Theta: res.Theta,
		Iterations: res.Iterations, DemoSteps: len(d.Acts), Converged: res.Converged, StopReason: res.StopReason,
		Learner: LocalIRLSample, Sample: info}
	if n := floats.Norm(res.DemoFeatures, 2); n > 0 {
		f.FeatureGap, info.FeatureGapSE = res.Gap/n, res.GapSE/n
	}
	if !f.Converged {
		s.mu.Lock()
		fmt.Fprintf(s.log, "  warning: irl %s (sample) did not converge: %s\n", u.name, f.StopReason)
		s.mu.Unlock()
	}
	return report.WriteJSON(u.path(s.units), f)
}
