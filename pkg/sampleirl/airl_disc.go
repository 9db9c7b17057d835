package sampleirl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

// steps is a batch of transitions: the network's input rows, log π at each,
// the discount γ^t of each and the first row of each episode.
type steps struct {
	x, logp, disc []float64
	starts        []int // starts[e] is episode e's first row; len = episodes+1
	obs, act      [][]float64
}

func (b *steps) rows() int { return len(b.logp) }

// episodes returns the number of episodes in b.
func (b *steps) episodes() int { return len(b.starts) - 1 }

// subset returns the batch of b's episodes idx, in that order.
func (b *steps) subset(idx []int) *steps {
	out := &steps{}
	d := len(b.x) / max(1, b.rows())
	for _, e := range idx {
		out.starts = append(out.starts, out.rows())
		lo, hi := b.starts[e], b.starts[e+1]
		out.x = append(out.x, b.x[lo*d:hi*d]...)
		out.logp = append(out.logp, b.logp[lo:hi]...)
		out.disc = append(out.disc, b.disc[lo:hi]...)
		out.obs = append(out.obs, b.obs[lo:hi]...)
		out.act = append(out.act, b.act[lo:hi]...)
	}
	out.starts = append(out.starts, out.rows())
	return out
}

// heldOut returns the demonstrations held out of n for the stopping rule:
// round(frac·n) of them, clamped to [1, n−1], the first of a permutation
// drawn from seed, sorted.
func heldOut(n int, frac float64, seed uint64) []int {
	h := min(max(int(math.Round(frac*float64(n))), 1), n-1)
	perm := rand.New(rand.NewPCG(seed, streamHoldout)).Perm(n)[:h]
	slices.Sort(perm)
	return perm
}

// rewardStep takes RewardSteps optimizer steps on the discriminator's loss
// and returns the loss before them.
func (l *mlpLearner) rewardStep(pi *steps) (float64, error) {
	w := l.net.Net.Params
	d := newDiscriminator(l.net, l.demo, pi)
	var before float64
	for s := 0; s < l.cfg.RewardSteps; s++ {
		loss, g := d.gradient(l.cfg.L2, w)
		if s == 0 {
			before = loss
		}
		for j := range g {
			g[j] = -g[j] // the optimizer ascends
		}
		l.opt.step(w, g)
		for j, v := range w {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("%w: weight %d = %v after a reward step (learning rate %v too large?)", ErrNonFinite, j, v, l.cfg.LearningRate)
			}
		}
	}
	return before, nil
}

// discriminator evaluates AIRL's loss on one iteration's demonstrations and policy steps.
type discriminator struct {
	net        *RewardNet
	demo, pi   *steps
	x, dOut, g []float64
	fD, fP     []float64 // f at the demonstration and policy rows, from the last forward pass
}

func newDiscriminator(net *RewardNet, demo, pi *steps) *discriminator {
	n := demo.rows() + pi.rows()
	d := &discriminator{net: net, demo: demo, pi: pi, x: slices.Concat(demo.x, pi.x), dOut: make([]float64, n), g: make([]float64, net.NumWeights())}
	d.forward()
	return d
}

func (d *discriminator) forward() {
	n := len(d.dOut)
	f := d.net.Values(nil, d.x, n)
	d.fD, d.fP = f[:d.demo.rows()], f[d.demo.rows():]
}

// softplus is log(1 + eˣ), computed without overflow.
func softplus(x float64) float64 { return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

// sigmoid is 1/(1 + e⁻ˣ).
func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// loss returns L(w) at the last forward pass, and the accuracies.
func (d *discriminator) loss(l2 float64, w []float64) (loss, accD, accP float64) {
	nD, nP := float64(d.demo.rows()), float64(d.pi.rows())
	for i, f := range d.fD {
		z := f - d.demo.logp[i]
		loss += softplus(-z) / nD
		if z > 0 {
			accD++
		}
	}
	for i, f := range d.fP {
		z := f - d.pi.logp[i]
		loss += softplus(z) / nP
		if z < 0 {
			accP++
		}
	}
	ss := 0.0
	for _, v := range w {
		ss += v * v
	}
	return loss + 0.5*l2*ss, accD / nD, accP / nP
}

// gradient evaluates the loss and its gradient ∇_w L at w (the network's weights).
func (d *discriminator) gradient(l2 float64, w []float64) (float64, []float64) {
	m := d.net.Net
	n := len(d.dOut)
	ws := m.NewWorkspace(n)
	f := m.Forward(ws, d.x, n)
	nd := d.demo.rows()
	d.fD, d.fP = slices.Clone(f[:nd]), slices.Clone(f[nd:])
	loss, _, _ := d.loss(l2, w)
	for i := range d.fD {
		d.dOut[i] = -sigmoid(-(d.fD[i] - d.demo.logp[i])) / float64(nd)
	}
	for i := range d.fP {
		d.dOut[nd+i] = sigmoid(d.fP[i]-d.pi.logp[i]) / float64(d.pi.rows())
	}
	clear(d.g)
	m.Backward(ws, d.dOut, d.g, nil)
	for j, v := range w {
		d.g[j] += l2 * v
	}
	return loss, d.g
}

// logOdds returns the per-episode mean of Σ_t γ^t z_t over b's episodes
// (f the network's values at b's rows) and the standard error of that mean.
func (d *discriminator) logOdds(b *steps, f []float64) (mean, se float64) {
	acc := newMoments(1)
	sum := []float64{0}
	for e := 0; e+1 < len(b.starts); e++ {
		sum[0] = 0
		for i := b.starts[e]; i < b.starts[e+1]; i++ {
			sum[0] += b.disc[i] * (f[i] - b.logp[i])
		}
		acc.add(sum)
	}
	return acc.mu[0], acc.se()
}

// demoSteps maps the (checked) demonstrations to their network inputs and
// discounts, refusing a Discrete action that is not an index of the space.
func demoSteps(input FeatureMap, gamma float64, demos []Trajectory, act envs.Space) (*steps, error) {
	b := &steps{}
	x := make([]float64, input.Dim())
	for i, tr := range demos {
		b.starts = append(b.starts, b.rows())
		g := 1.0
		for t, a := range tr.Actions {
			if act.IsDiscrete() {
				if k := int(a[0]); float64(k) != a[0] || k < 0 || k >= act.N {
					return nil, fmt.Errorf("%w: demonstration %d action %d: %v is not an index of Discrete(%d)", ErrInput, i, t, a[0], act.N)
				}
			}
			term := tr.Terminated && t == len(tr.Actions)-1
			v, err := evalChecked(input, x, tr.Obs[t], a, tr.Obs[t+1], term)
			if err != nil {
				return nil, fmt.Errorf("%w: demonstration %d step %d: %w", ErrInput, i, t, err)
			}
			b.x = append(b.x, v...)
			b.logp = append(b.logp, 0)
			b.disc = append(b.disc, g)
			b.obs, b.act = append(b.obs, tr.Obs[t]), append(b.act, a)
			g *= gamma
		}
	}
	b.starts = append(b.starts, b.rows())
	return b, nil
}

// setLogProbs writes log π(a|s) of every row.
func (b *steps) setLogProbs(pol *ppo.Policy) error {
	for i := range b.logp {
		lp, err := pol.LogProb(b.obs[i], b.act[i])
		if err != nil {
			return err
		}
		if math.IsInf(lp, 0) || math.IsNaN(lp) {
			return fmt.Errorf("%w: log π = %v at demonstration row %d", ErrNonFinite, lp, i)
		}
		b.logp[i] = lp
	}
	return nil
}

// samplePolicy runs n episodes of pol (sampled actions) from the PCG stream
// base+iter and returns their steps, with log π at each, and the number of
// steps taken.
func samplePolicy(env envs.Env, pol *ppo.Policy, input FeatureMap, cfg Config, iter, n int, base uint64) (*steps, int, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, base+uint64(iter)))
	b := &steps{}
	limit := cfg.MaxEpisodeSteps
	if limit == 0 {
		limit = hardEpisodeCap
	}
	act := make([]float64, env.ActionSpace().Dim())
	x := make([]float64, input.Dim())
	for ep := 0; ep < n; ep++ {
		b.starts = append(b.starts, b.rows())
		obs := slices.Clone(env.Reset(rng.Uint64()))
		g := 1.0
		for t := 0; ; t++ {
			if t == limit {
				if cfg.MaxEpisodeSteps == 0 {
					return nil, 0, fmt.Errorf("episode %d did not end within %d steps; set max_episode_steps", ep, hardEpisodeCap)
				}
				break
			}
			pol.Act(act, obs, rng)
			lp, err := pol.LogProb(obs, act)
			if err != nil {
				return nil, 0, fmt.Errorf("episode %d step %d: %w", ep, t, err)
			}
			next, _, term, trunc := env.Step(act)
			v, err := evalChecked(input, x, obs, act, next, term)
			if err != nil {
				return nil, 0, fmt.Errorf("episode %d step %d: %w", ep, t, err)
			}
			b.x = append(b.x, v...)
			b.logp = append(b.logp, lp)
			b.disc = append(b.disc, g)
			g *= cfg.Gamma
			copy(obs, next)
			if term || trunc {
				break
			}
		}
	}
	b.starts = append(b.starts, b.rows())
	return b, b.rows(), nil
}
