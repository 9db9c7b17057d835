package federation

import (
	"context"
	"fmt"
	"slices"

	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
	"gonum.org/v1/gonum/mat"
)

// MaxEntLearner is the client's Learner: MaxEnt IRL (pkg/irl) on the
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

// IRLOptions maps a task's IRL hyperparameters to irl.Config.
func IRLOptions(c IRLConfig, warmStart []float64) irl.Config {
	return irl.Config{MaxIter: c.Iterations, LearningRate: c.LearningRate, L2: c.L2, Temperature: c.Temperature,
		GradTol: c.GradTol, Optimizer: c.Optimizer, Theta0: slices.Clone(warmStart)}
}

// Learn implements Learner.
func (l *MaxEntLearner) Learn(ctx context.Context, spec TaskSpec, warmStart []float64) (LocalResult, error) {
	if _, d := l.Features.Dims(); d != spec.ThetaDim {
		return LocalResult{}, fmt.Errorf("task %s wants theta_dim %d, the client's features have %d", spec.ID, spec.ThetaDim, d)
	}
	res, err := irl.MaxEnt(ctx, l.MDP, l.Features, l.Demos, IRLOptions(spec.IRL, warmStart))
	if err != nil {
		return LocalResult{}, fmt.Errorf("MaxEnt IRL: %w", err)
	}
	g := 0.0
	if n := len(res.GradNorm); n > 0 {
		g = res.GradNorm[n-1]
	}
	return LocalResult{Theta: res.Theta, DemoCount: len(l.Demos), Iterations: res.Iterations, GradNorm: g}, nil
}
