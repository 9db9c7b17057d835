package ppo

import (
	"fmt"
	"math"

	"github.com/fedirl/fedirl/pkg/rl/nn"
)

// Precision selects the floating-point type of the networks during training.
type Precision string

const (
	// Float32 trains single-precision copies of the actor and critic (nn.MLP32:
	// weights, activations, gradients and Adam moments in float32, twice the
	// lanes per vector instruction); returns, advantages, losses, the
	// Gaussian log standard deviations and the normalisation statistics stay
	// float64. The Policy's float64 networks receive the float32 parameters
	// (exactly) after every update. It is the default. It needs AVX2 and FMA
	// (or AVX-512) to be fast; without them nn.MLP32 runs plain Go, slower
	// than Float64.
	Float32 Precision = "float32"
	// Float64 trains the Policy's float64 networks directly.
	Float64 Precision = "float64"
)

// ParsePrecision returns the Precision named s; "" means Float32.
func ParsePrecision(s string) (Precision, error) {
	switch Precision(s) {
	case "", Float32:
		return Float32, nil
	case Float64:
		return Float64, nil
	}
	return "", fmt.Errorf("precision %q: want float32 or float64", s)
}

// nets32 holds the float32 training copies of the policy's networks and
// their workspaces, gradients and optimisers.
type nets32 struct {
	actor, critic      *nn.MLP32
	rollA, rollC, valC *nn.Workspace32
	termC              *nn.Workspace32
	aws, cws           *nn.Workspace32
	gActor, gCritic    []float32
	adamA, adamC       *nn.Adam32
}

// valBatch is the number of rollout rows whose values are computed in one
// float32 forward pass (rows do not influence each other's bits, see nn.MLP32).
const valBatch = 64

func newNets32(p *Policy, cfg Config, n, B int) *nets32 {
	s := &nets32{actor: nn.FromMLP(p.Actor), critic: nn.FromMLP(p.Critic)}
	// The policy holds the rounded parameters from the start.
	s.actor.CopyTo(p.Actor)
	s.critic.CopyTo(p.Critic)
	s.rollA = s.actor.NewWorkspace(n)
	s.rollC = s.critic.NewWorkspace(n)
	s.valC = s.critic.NewWorkspace(valBatch)
	s.termC = s.critic.NewWorkspace(1)
	s.aws = s.actor.NewWorkspace(B)
	s.cws = s.critic.NewWorkspace(B)
	s.gActor = make([]float32, len(s.actor.Params))
	s.gCritic = make([]float32, len(s.critic.Params))
	s.adamA = nn.NewAdam32(len(s.gActor), cfg.LearningRate, cfg.AdamEps)
	s.adamC = nn.NewAdam32(len(s.gCritic), cfg.LearningRate, cfg.AdamEps)
	return s
}

// reload copies the policy's (float64) parameters into the float32 networks.
func (s *nets32) reload(p *Policy) {
	copy(s.actor.Params, nn.FromMLP(p.Actor).Params)
	copy(s.critic.Params, nn.FromMLP(p.Critic).Params)
}

// sync copies the float32 parameters into the policy's float64 networks.
func (s *nets32) sync(p *Policy) {
	s.actor.CopyTo(p.Actor)
	s.critic.CopyTo(p.Critic)
}

// rolloutValues32 is rolloutValues for the float32 critic: the values of
// rollout steps [lo, hi) in batches of valBatch rows.
func (t *Trainer) rolloutValues32(lo, hi int) {
	n, d := t.cfg.NEnvs, t.obsDim
	s := t.n32
	for r := lo * n; r < hi*n; r += valBatch {
		m := min(valBatch, hi*n-r)
		copy(t.bufVal[r:r+m], s.critic.Forward(s.valC, t.bufObs[r*d:(r+m)*d], m))
	}
	for row := lo * n; row < hi*n; row++ {
		if t.bufBoot[row] {
			t.bufRew[row] += t.cfg.Gamma * s.critic.Forward(s.termC, t.bufTerm[row*d:(row+1)*d], 1)[0]
		}
	}
}

// gradNorm32 returns the global gradient norm over the float32 actor, the
// log standard deviations and the float32 critic.
func (t *Trainer) gradNorm32() float64 {
	s := nn.SumSquares32(t.n32.gActor)
	for _, v := range t.gLogStd {
		s += v * v
	}
	s += nn.SumSquares32(t.n32.gCritic)
	return math.Sqrt(s)
}
