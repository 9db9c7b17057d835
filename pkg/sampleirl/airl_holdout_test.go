package sampleirl

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/fedirl/fedirl/pkg/longtest"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

// TestHeldOutDemonstrations: the held-out set is round(holdout·n_D)
// demonstrations clamped to [1, n_D − 1], a function of the seed alone;
// and the discriminator never trains on it: replacing every held-out
// demonstration by another episode leaves the weights, the policy and the
// training-data statistics bit for bit unchanged while the rule's gap
// moves, and replacing one training demonstration changes the weights.
func TestHeldOutDemonstrations(t *testing.T) {
	for _, tc := range []struct {
		n    int
		frac float64
		want int
	}{{200, 0.2, 40}, {4, 0.2, 1}, {2, 0.2, 1}, {3, 0.9, 2}, {10, 0.25, 3}} {
		h := heldOut(tc.n, tc.frac, 7)
		if len(h) != tc.want || !slices.IsSorted(h) || h[0] < 0 || h[len(h)-1] >= tc.n || len(slices.Compact(slices.Clone(h))) != len(h) {
			t.Errorf("heldOut(%d, %v): %v, want %d distinct sorted indices below %d", tc.n, tc.frac, h, tc.want, tc.n)
		}
		if !slices.Equal(h, heldOut(tc.n, tc.frac, 7)) || (tc.n == 200 && slices.Equal(h, heldOut(tc.n, tc.frac, 8))) {
			t.Errorf("heldOut(%d, %v): not a function of the seed alone", tc.n, tc.frac)
		}
	}
	p := newProblem(t, 100)
	cfg := mlpTestConfig(2)
	cfg.MaxIter, cfg.PolicySteps, cfg.Tolerance = 2, 512, 1e-9
	rc, err := cfg.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	held := heldOut(len(p.demos), rc.Holdout, rc.Seed)
	var train int
	for i := range p.demos {
		if !slices.Contains(held, i) {
			train = i
			break
		}
	}
	others := newProblem(t, 200).demos[100:] // other episodes of the same expert
	swapHeld := slices.Clone(p.demos)
	for j, i := range held {
		swapHeld[i] = others[j]
	}
	swapTrain := slices.Clone(p.demos)
	swapTrain[train] = others[len(others)-1]
	run := func(demos []Trajectory) MLPResult {
		res, err := LearnMLP(context.Background(), p.maker(), nil, demos, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	base, h, tr := run(p.demos), run(swapHeld), run(swapTrain)
	if base.HeldOutEpisodes != 20 || base.DemoEpisodes != 100 {
		t.Errorf("%d of %d demonstrations held out, want 20 of 100", base.HeldOutEpisodes, base.DemoEpisodes)
	}
	same := slices.Equal(base.DiscriminatorWeights, h.DiscriminatorWeights) && slices.Equal(base.Policy.Actor.Params, h.Policy.Actor.Params)
	for k := range base.History {
		same = same && base.History[k].TrainGap == h.History[k].TrainGap && base.History[k].Loss == h.History[k].Loss
	}
	if !same {
		t.Error("replacing the held-out demonstrations changed what the discriminator or the policy learned")
	}
	if base.History[1].Gap == h.History[1].Gap {
		t.Error("replacing the held-out demonstrations left the rule's gap unchanged: the rule does not read them")
	}
	if slices.Equal(base.DiscriminatorWeights, tr.DiscriminatorWeights) {
		t.Error("replacing a training demonstration left the discriminator unchanged")
	}
}

// TestLearnMLPHeldOutRuleStopsOnExpertData: on the 4×4 grid with 200
// demonstrations of the soft-optimal (τ = 1) expert, the held-out rule
// stops within the 30-iteration budget, and at the stop the final policy's
// true value, computed exactly in the model, is the expert's within 0.1
// (normalized: 0 the uniform policy, 1 the optimal deterministic one; the
// expert's soft policy is 0.383). For seed 1 the training-data statistic,
// the rule's before, stays beyond 2 SE at every iteration up to the stop.
// Short: seed 1, which must stop; with FEDIRL_LONG_TESTS=1 seeds 1–5, of
// which at least 4 must stop.
//
// Measured, seeds 1–5 (30 iterations of 1024 PPO steps): the held-out rule
// stops 4 of 5 runs, at iterations 15, 14, 17 and 21 (seed 2 ends at the
// cap, 2.0–4.4 SE from iteration 12 on); the training-data rule stopped
// none (its statistic 2.7–7.5 SE at iteration 30, the reward then planning
// at 0.64, 0.996, 0.996, 0.998 and 0.993; in the held-out runs it dips to
// 1.85 SE once, seed 4's iteration 17). At the four stops the policies'
// normalized values are 0.33, 0.31, 0.33 and 0.32, against the expert's
// 0.383. The learned reward's greedy-planning value at the stop is 0.998,
// 0.580, 0.665 and 0.995: from iteration ~11 on it alternates between
// 0.42–0.67 and ≈0.998 from one iteration to the next in every seed,
// stopped or not, so the rule certifies the policy, not a reward that
// plans well greedily.
func TestLearnMLPHeldOutRuleStopsOnExpertData(t *testing.T) {
	p := newProblem(t, 200)
	expert := p.expertValue()
	seeds := longtest.Pick([]uint64{1}, []uint64{1, 2, 3, 4, 5})
	stopped := 0
	for _, seed := range seeds {
		cfg := mlpTestConfig(seed)
		res, err := runMLP(t, context.Background(), p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		policy := p.policyValue(t, res.Policy)
		var trainZ []float64
		for _, h := range res.History {
			trainZ = append(trainZ, h.TrainGap/h.TrainGapSE)
		}
		t.Logf("seed %d: converged %v after %d iterations (%s); policy's normalized value %.3f, the expert's %.3f; training-data statistic per iteration %.2f",
			seed, res.Converged, res.Iterations, res.StopReason, policy, expert, trainZ)
		if !res.Converged {
			continue
		}
		stopped++
		if math.Abs(policy-expert) > 0.1 {
			t.Errorf("seed %d: at the stop the policy's normalized value is %.3f, the expert's %.3f", seed, policy, expert)
		}
		if seed != 1 {
			continue
		}
		for k, z := range trainZ {
			if math.Abs(z) <= cfg.Tolerance {
				t.Errorf("seed 1, iteration %d: the training-data statistic %.2f SE would already have passed: the test shows nothing", k+1, z)
			}
		}
	}
	if want := max(1, len(seeds)-1); stopped < want {
		t.Errorf("the held-out rule stopped %d of %d runs within the budget, want ≥ %d", stopped, len(seeds), want)
	}
}

// expertValue is the normalized true value of the demonstrator's soft
// policy (τ = 1).
func (p *problem) expertValue() float64 {
	ws := mdp.NewWorkspace(p.m, mdp.Options{})
	defer ws.Close()
	rTrue := p.reward(p.theta)
	_, pol := ws.SoftValuesAndPolicy(nil, nil, rTrue, 1)
	return p.normalized(ws, pol)
}

// policyValue is the normalized true value of a PPO policy on the grid's
// one-hot observations, computed exactly from its action probabilities.
func (p *problem) policyValue(t *testing.T, pol *ppo.Policy) float64 {
	t.Helper()
	ws := mdp.NewWorkspace(p.m, mdp.Options{})
	defer ws.Close()
	pi := mdp.NewPolicy(p.m)
	S, A := p.m.NumStates, p.m.NumActions
	o := make([]float64, S)
	for s := range S {
		clear(o)
		o[s] = 1
		for a := range A {
			lp, err := pol.LogProb(o, []float64{float64(a)})
			if err != nil {
				t.Fatal(err)
			}
			for k := range pi.Steps {
				pi.Prob[k*S*A+s*A+a] = math.Exp(lp)
			}
		}
	}
	return p.normalized(ws, pi)
}

// normalized is pol's true value, 0 for the uniform policy and 1 for the optimal one.
func (p *problem) normalized(ws *mdp.Workspace, pol *mdp.Policy) float64 {
	rTrue := p.reward(p.theta)
	opt := ws.Return(ws.SoftPolicy(nil, ws.ValueIteration(nil, rTrue), 0), rTrue)
	unif := ws.Return(mdp.NewPolicy(p.m), rTrue)
	return (ws.Return(pol, rTrue) - unif) / (opt - unif)
}
