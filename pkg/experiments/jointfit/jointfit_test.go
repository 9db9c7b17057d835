package jointfit

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

// clients builds K clients with their own random dynamics and demonstrations
// of one true reward (soft-optimal rollouts).
func clients(t *testing.T, k int) []Client {
	t.Helper()
	const S, A, d = 10, 3, 3
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]float64, S*A*d)
	for i := range data {
		data[i] = rng.Float64()
	}
	phi := mat.NewDense(S*A, d, data)
	truth := []float64{1, -0.5, 0.8}
	var out []Client
	for i := range k {
		m := mdptest.RandomMDP(uint64(30+i), S, A, 3, 1, 0.9, 0)
		ws := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-13})
		pi := ws.SoftPolicy(nil, ws.SoftValueIteration(nil, features.Reward(make([]float64, S*A), phi, truth), 1), 1)
		ws.Close()
		r := rand.New(rand.NewPCG(uint64(i), 7))
		var demos []irl.Trajectory
		for len(demos) < 12 {
			s, a := m.Rollout(r, pi, 20)
			if len(a) > 0 {
				demos = append(demos, irl.Trajectory{States: s, Actions: a})
			}
		}
		out = append(out, Client{MDP: m, Phi: phi, Demos: demos, IRL: irl.Config{Temperature: 1, L2: 0.01}, Weight: 1 / float64(k)})
	}
	return out
}

// TestIdentifiabilityConcavity: λ_min is concave on symmetric matrices, so
// on the joint range the joint curvature's λ_min is at least the weighted
// mean of the clients' restricted ones, and no client has a rank above the
// joint's (properties of the reported numbers that a wrong weight, a wrong
// sign or a wrong restriction breaks).
func TestIdentifiabilityConcavity(t *testing.T) {
	cls := clients(t, 4)
	p, err := FitPooled(context.Background(), cls, DefaultConfig())
	if err != nil || !p.Converged {
		t.Fatalf("pooled: %v, converged %v", err, p.Converged)
	}
	lo := 0.0
	for i, c := range cls {
		lo += c.Weight * p.Ident.LocalMinEig[i]
		if p.Ident.LocalRank[i] > p.Ident.JointRank {
			t.Fatalf("client %d has rank %d above the joint rank %d", i, p.Ident.LocalRank[i], p.Ident.JointRank)
		}
	}
	if p.Ident.JointMinEig < lo-1e-12 || !(p.Ident.JointMinEig > 0) || p.Ident.JointMinEig > p.Ident.JointMaxEig {
		t.Fatalf("joint λ ∈ [%v, %v], want λ_min ≥ Σαλ_min,i = %v > 0", p.Ident.JointMinEig, p.Ident.JointMaxEig, lo)
	}
}

// TestPersonalizeChoosesOnHeldOut: the chosen candidate has the best
// held-out log-likelihood of all candidates, the center candidate returns
// the pooled θ, and μ = 0 alone gives the client's own MaxEnt optimum.
func TestPersonalizeChoosesOnHeldOut(t *testing.T) {
	cls := clients(t, 3)
	cfg := DefaultConfig()
	p, err := FitPooled(context.Background(), cls, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, cl := range cls {
		pc, err := Personalize(context.Background(), cl, p.Theta, cfg)
		if err != nil || !pc.Converged {
			t.Fatalf("client %d: %v", i, err)
		}
		ch := pc.Choice
		for k, ll := range ch.ValLogLik {
			if ll > ch.ValLogLik[ch.Chosen] {
				t.Fatalf("client %d: candidate %d scores %v above the chosen %d's %v", i, k, ll, ch.Chosen, ch.ValLogLik[ch.Chosen])
			}
		}
		if len(ch.ValLogLik) != len(cfg.ProxCandidates)+1 {
			t.Fatalf("client %d: %d scores for %d candidates and the center", i, len(ch.ValLogLik), len(cfg.ProxCandidates))
		}
	}
	own := cfg
	own.ProxCandidates, own.ProxCenter = []float64{0}, false
	pc, err := Personalize(context.Background(), cls[0], p.Theta, own)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := irl.MaxEnt(context.Background(), cls[0].MDP, cls[0].Phi, cls[0].Demos, irl.Config{Temperature: 1, L2: 0.01, Optimizer: irl.OptimizerNewton, GradTol: 1e-10, MaxIter: 100})
	if err != nil || !ref.Converged {
		t.Fatalf("MaxEnt: %v", err)
	}
	for j := range ref.Theta {
		if math.Abs(pc.Theta[j]-ref.Theta[j]) > 1e-7*(1+math.Abs(ref.Theta[j])) {
			t.Fatalf("μ = 0: θ[%d] = %v, the client's own MaxEnt %v", j, pc.Theta[j], ref.Theta[j])
		}
	}
}

// TestConfigRefusals names the setting out of range.
func TestConfigRefusals(t *testing.T) {
	for name, c := range map[string]Config{
		"personalized without pooled": {Personalized: true},
		"negative candidate":          {Pooled: true, Personalized: true, ProxCandidates: []float64{-1}, ValidationFraction: 0.2},
		"infinite candidate":          {Pooled: true, Personalized: true, ProxCandidates: []float64{math.Inf(1)}, ValidationFraction: 0.2},
		"no candidate":                {Pooled: true, Personalized: true, ValidationFraction: 0.2},
		"validation 1":                {Pooled: true, Personalized: true, ProxCandidates: []float64{0}, ValidationFraction: 1},
		"max rounds":                  {Pooled: true, MaxRounds: -1},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestPersonalizeOneDemonstration: with one demonstration there is none to
// hold out, so the client keeps the pooled θ and the result says why.
func TestPersonalizeOneDemonstration(t *testing.T) {
	cls := clients(t, 2)
	one := cls[0]
	one.Demos = one.Demos[:1]
	center := []float64{0.1, 0.2, 0.3}
	pc, err := Personalize(context.Background(), one, center, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if pc.Skipped == "" || !pc.Choice.Center || pc.Theta[0] != 0.1 || pc.Theta[2] != 0.3 {
		t.Fatalf("one demonstration: %+v", pc)
	}
}
