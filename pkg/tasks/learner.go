package tasks

import (
	"context"
	"fmt"
	"slices"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
	"gonum.org/v1/gonum/mat"
)

// MaxEntLearner is the client's federation.Learner: MaxEnt IRL (pkg/irl) on the
// client's own MDP and private demonstrations, with the task's IRL
// hyperparameters. Only θ and summary numbers ever leave it.
type MaxEntLearner struct {
	MDP      *mdp.MDP
	Features *mat.Dense
	Demos    []irl.Trajectory
	// Solver configures the dynamic programming of every gradient step (a
	// numerical choice of the client, not a task setting: the solvers agree
	// to within their tolerance); the zero value is mdp's defaults.
	Solver mdp.Options
}

// LoadMaxEntLearner reads an MDP with its features (irl.LoadMDP: a JSON spec,
// or an .npz of sparse transitions) and demonstrations (irl.ReadTrajectoriesAny:
// JSON Lines, or an .npz with padded arrays or imitation's trajectory fields).
func LoadMaxEntLearner(mdpFile, demosFile string) (*MaxEntLearner, error) {
	m, phi, err := irl.LoadMDP(mdpFile)
	if err != nil {
		return nil, fmt.Errorf("client MDP: %w", err)
	}
	demos, err := irl.ReadTrajectoriesAny(demosFile, m)
	if err != nil {
		return nil, fmt.Errorf("client demonstrations: %w", err)
	}
	if len(demos) == 0 {
		return nil, fmt.Errorf("client demonstrations %s: no trajectories", demosFile)
	}
	return &MaxEntLearner{MDP: m, Features: phi, Demos: demos}, nil
}

// Learn implements Learner. For a family that is a FeatureChecker (the
// lattice family) the client's model and features are first checked against
// the task's probe, and θ is learned on the task's Φ.
func (l *MaxEntLearner) Learn(ctx context.Context, spec federation.TaskSpec, warmStart []float64) (federation.LocalResult, error) {
	phi := l.Features
	if fam, err := Lookup(spec.EnvFamily); err == nil {
		if fc, ok := fam.(FeatureChecker); ok {
			if phi, err = fc.ClientFeatures(spec.Probe, l.MDP, l.Features); err != nil {
				return federation.LocalResult{}, fmt.Errorf("task %s: %w", spec.ID, err)
			}
		}
	}
	if _, d := phi.Dims(); d != spec.ThetaDim {
		return federation.LocalResult{}, fmt.Errorf("task %s wants theta_dim %d, the client's features have %d", spec.ID, spec.ThetaDim, d)
	}
	cfg, err := DecodeIRL(spec.IRL)
	if err != nil {
		return federation.LocalResult{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	cfg.Theta0 = slices.Clone(warmStart)
	cfg.Solver = l.Solver
	res, err := irl.MaxEnt(ctx, l.MDP, phi, l.Demos, cfg)
	if err != nil {
		return federation.LocalResult{}, fmt.Errorf("MaxEnt IRL: %w", err)
	}
	g := 0.0
	if n := len(res.GradNorm); n > 0 {
		g = res.GradNorm[n-1]
	}
	return federation.LocalResult{Theta: res.Theta, DemoCount: len(l.Demos), Iterations: res.Iterations, GradNorm: g,
		Converged: res.Converged, StopReason: res.StopReason}, nil
}
