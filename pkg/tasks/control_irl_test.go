package tasks

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
)

// TestIRLRecoversOnLatticeModel: on the sampled Pendulum lattice model with
// the control features, demonstrations drawn from the soft-optimal policy of
// a known θ* give a learned θ whose demonstration log-likelihood is above
// that of θ = 0 and closes most of the gap to θ*'s.
func TestIRLRecoversOnLatticeModel(t *testing.T) {
	e, _ := LookupControl("Pendulum-v1")
	grid, err := e.Grid("paper", map[string]int{"theta": 16, "thdot": 11, "action": 3})
	if err != nil {
		t.Fatal(err)
	}
	p := e.Probe(grid)
	g, phi, err := p.Features()
	if err != nil {
		t.Fatal(err)
	}
	m, err := discretize.SampleModel(context.Background(), g, func() (discretize.Simulator, error) {
		return classic.ClientEnv("Pendulum-v1", 2, 1)
	}, discretize.ModelConfig{Samples: 8, Seed: 1, Gamma: 0.9}, 2)
	if err != nil {
		t.Fatal(err)
	}
	const tau = 1.0
	rng := rand.New(rand.NewPCG(5, 6))
	star := make([]float64, p.RBF.Dim())
	for j := range star {
		star[j] = rng.NormFloat64()
	}
	reward := make([]float64, m.NumPairs())
	for i := range reward {
		for j, v := range phi.RawRowView(i) {
			reward[i] += v * star[j]
		}
	}
	ws := mdp.NewWorkspace(m, mdp.Options{})
	defer ws.Close()
	pol := ws.SoftPolicy(nil, ws.SoftValueIteration(nil, reward, tau), tau)
	var demos []irl.Trajectory
	for range 200 {
		s, a := m.Rollout(rng, pol, 40)
		demos = append(demos, irl.Trajectory{States: s, Actions: a})
	}
	cfg := irl.Config{Temperature: tau, MaxIter: 300, LearningRate: 0.05, Optimizer: irl.OptimizerAdam}
	res, err := irl.MaxEnt(context.Background(), m, phi, demos, cfg)
	if err != nil {
		t.Fatal(err)
	}
	o, err := irl.NewObjective(m, phi, demos, irl.Config{Temperature: tau})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	grad := make([]float64, len(star))
	_, llZero := o.Eval(grad, make([]float64, len(star)))
	_, llStar := o.Eval(grad, star)
	_, llLearned := o.Eval(grad, res.Theta)
	t.Logf("demonstration log-likelihood: θ=0 %.4f, learned %.4f, θ* %.4f", llZero, llLearned, llStar)
	if !(llLearned > llZero) {
		t.Fatalf("learned θ has log-likelihood %.4f, not above θ = 0's %.4f", llLearned, llZero)
	}
	if gap := (llStar - llLearned) / (llStar - llZero); gap > 0.1 && llLearned < llStar {
		t.Fatalf("learned θ closes only %.0f%% of the log-likelihood gap from θ = 0 to θ*", 100*(1-gap))
	}
}
