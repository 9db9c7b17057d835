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
}

// LoadMaxEntLearner reads an MDP spec (irl.LoadSpec JSON) and a JSONL
// demonstrations file (irl.ReadTrajectoriesFile).
func LoadMaxEntLearner(mdpFile, demosFile string) (*MaxEntLearner, error) {
	m, phi, err := irl.LoadSpec(mdpFile)
	if err != nil {
		return nil, fmt.Errorf("client MDP: %w", err)
	}
	demos, err := irl.ReadTrajectoriesFile(demosFile, m)
	if err != nil {
		return nil, fmt.Errorf("client demonstrations: %w", err)
	}
	if len(demos) == 0 {
		return nil, fmt.Errorf("client demonstrations %s: no trajectories", demosFile)
	}
	return &MaxEntLearner{MDP: m, Features: phi, Demos: demos}, nil
}

// Learn implements Learner.
func (l *MaxEntLearner) Learn(ctx context.Context, spec federation.TaskSpec, warmStart []float64) (federation.LocalResult, error) {
	if _, d := l.Features.Dims(); d != spec.ThetaDim {
		return federation.LocalResult{}, fmt.Errorf("task %s wants theta_dim %d, the client's features have %d", spec.ID, spec.ThetaDim, d)
	}
	cfg, err := DecodeIRL(spec.IRL)
	if err != nil {
		return federation.LocalResult{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	cfg.Theta0 = slices.Clone(warmStart)
	res, err := irl.MaxEnt(ctx, l.MDP, l.Features, l.Demos, cfg)
	if err != nil {
		return federation.LocalResult{}, fmt.Errorf("MaxEnt IRL: %w", err)
	}
	g := 0.0
	if n := len(res.GradNorm); n > 0 {
		g = res.GradNorm[n-1]
	}
	return federation.LocalResult{Theta: res.Theta, DemoCount: len(l.Demos), Iterations: res.Iterations, GradNorm: g}, nil
}
