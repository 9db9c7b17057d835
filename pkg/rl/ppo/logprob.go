package ppo

import (
	"fmt"
	"math"
	"slices"
)

// LogProb returns log π(a|s), the policy's log-probability (a log density
// for a Box action space) of action at the raw observation obs: log
// softmax(logits)[a] for a Discrete space, whose action is its index; the
// diagonal Gaussian's log density at the action for a Box space (with gSDE,
// at the state's standard deviation). Act clips a Box sample to the bounds,
// so at a clipped action this is the density of the unclipped Gaussian
// there, not the probability mass the clipping puts on the bound. It
// returns an error for an action of the wrong length or a Discrete index
// out of range. LogProb is not safe for concurrent use.
func (p *Policy) LogProb(obs, action []float64) (float64, error) {
	if len(obs) != p.ObsDim {
		return 0, fmt.Errorf("ppo: LogProb: observation of length %d, the policy's have %d", len(obs), p.ObsDim)
	}
	p.lazyWS()
	x := p.normalizeObs(p.normed, obs, 1)
	out := p.Actor.Forward(p.ws, x, 1)
	if p.Action.IsDiscrete() {
		if len(action) != 1 {
			return 0, fmt.Errorf("ppo: LogProb: a Discrete action has one entry (its index), got %d", len(action))
		}
		k := int(action[0])
		if float64(k) != action[0] || k < 0 || k >= len(out) {
			return 0, fmt.Errorf("ppo: LogProb: action %v is not an index in [0, %d)", action[0], len(out))
		}
		return out[k] - logSumExp(out), nil
	}
	if len(action) != len(out) {
		return 0, fmt.Errorf("ppo: LogProb: action of length %d, the space has %d", len(action), len(out))
	}
	logStd := p.LogStd
	if p.SDE {
		if len(p.sdeS) != len(out) {
			p.sdeS = make([]float64, len(out))
		}
		logStd = sdeLogStd(p.sdeS, p.ws.Output(p.Actor, p.Actor.NumLayers()-2), p.LogStd)
	}
	lp := gaussLogProb(out, logStd, action)
	if math.IsNaN(lp) {
		return 0, fmt.Errorf("ppo: LogProb: NaN at action %v", action)
	}
	return lp, nil
}

// Clone returns a deep copy of p (networks, log standard deviations and
// observation statistics), sharing nothing with it.
func (p *Policy) Clone() *Policy {
	c := &Policy{ObsDim: p.ObsDim, Action: p.Action, Actor: p.Actor.Clone(), Critic: p.Critic.Clone(),
		LogStd: slices.Clone(p.LogStd), SDE: p.SDE, ClipObs: p.ClipObs}
	c.Action.Low, c.Action.High = slices.Clone(p.Action.Low), slices.Clone(p.Action.High)
	if p.ObsRMS != nil {
		c.ObsRMS = NewRunningMeanStd(p.ObsDim)
		copy(c.ObsRMS.Mean, p.ObsRMS.Mean)
		copy(c.ObsRMS.Var, p.ObsRMS.Var)
		c.ObsRMS.Count = p.ObsRMS.Count
	}
	return c
}

// startFrom replaces p's parameters and statistics by a copy of init's,
// after checking that init has p's shape: the same observation length,
// action space, network sizes and activations, log-std length, gSDE and
// observation normalisation. It is Options.Init's check.
func (p *Policy) startFrom(init *Policy) error {
	switch {
	case init.ObsDim != p.ObsDim:
		return fmt.Errorf("ppo options: init policy has observations of length %d, the environment %d", init.ObsDim, p.ObsDim)
	case init.Action.N != p.Action.N || !slices.Equal(init.Action.Low, p.Action.Low) || !slices.Equal(init.Action.High, p.Action.High):
		return fmt.Errorf("ppo options: init policy's action space differs from the environment's")
	case !slices.Equal(init.Actor.Sizes, p.Actor.Sizes) || !slices.Equal(init.Actor.Acts, p.Actor.Acts):
		return fmt.Errorf("ppo options: init policy's actor has sizes %v, the config's %v (or other activations)", init.Actor.Sizes, p.Actor.Sizes)
	case !slices.Equal(init.Critic.Sizes, p.Critic.Sizes) || !slices.Equal(init.Critic.Acts, p.Critic.Acts):
		return fmt.Errorf("ppo options: init policy's critic has sizes %v, the config's %v (or other activations)", init.Critic.Sizes, p.Critic.Sizes)
	case len(init.LogStd) != len(p.LogStd) || init.SDE != p.SDE:
		return fmt.Errorf("ppo options: init policy has %d log-stds (sde %v), the config %d (sde %v)", len(init.LogStd), init.SDE, len(p.LogStd), p.SDE)
	case (init.ObsRMS == nil) != (p.ObsRMS == nil):
		return fmt.Errorf("ppo options: init policy normalises observations: %v, the config: %v", init.ObsRMS != nil, p.ObsRMS != nil)
	}
	c := init.Clone()
	p.Actor, p.Critic, p.LogStd, p.ObsRMS = c.Actor, c.Critic, c.LogStd, c.ObsRMS
	if c.ObsRMS != nil {
		p.ClipObs = c.ClipObs
	}
	p.ws, p.cws = nil, nil
	return nil
}
