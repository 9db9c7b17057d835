package ppo

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/rl/nn"
)

// obsEps is VecNormalize's epsilon inside sqrt(var + eps).
const obsEps = 1e-8

// Policy is a trained actor-critic: a categorical policy over logits for a
// Discrete action space, or a Gaussian (actions clipped to the Box when
// applied) for a Box space, with a state-independent log standard deviation,
// or with gSDE's state-dependent one (SDE).
type Policy struct {
	// ObsDim is the observation length.
	ObsDim int
	// Action is the action space.
	Action envs.Space
	// Actor maps (normalised) observations to logits or Gaussian means.
	Actor *nn.MLP
	// Critic maps (normalised) observations to a state value.
	Critic *nn.MLP
	// LogStd is the Gaussian's log standard deviation per action coordinate
	// (Box only); with SDE, the latent × action matrix L (row-major) of gSDE,
	// whose standard deviation at latent features z (the actor's last hidden
	// layer) is sqrt(Σ_j z_j² exp(2 L_jk) + 1e-6) for coordinate k.
	LogStd []float64
	// SDE selects gSDE's state-dependent standard deviation.
	SDE bool
	// ObsRMS holds the observation normalisation statistics, or nil when observations are used raw.
	ObsRMS *RunningMeanStd
	// ClipObs bounds normalised observations.
	ClipObs float64

	ws     *nn.Workspace
	cws    *nn.Workspace
	normed []float64
	sdeS   []float64
}

// newPolicy builds an initialised policy for the given spaces and config.
func newPolicy(obs, act envs.Space, cfg Config, rng *rand.Rand) (*Policy, error) {
	if obs.IsDiscrete() {
		return nil, fmt.Errorf("ppo: discrete observation spaces are not supported")
	}
	if cfg.UseSDE && (act.IsDiscrete() || len(cfg.Hidden) == 0) {
		return nil, fmt.Errorf("ppo config: use_sde needs a Box action space and at least one hidden layer")
	}
	if len(obs.Low) == 0 {
		return nil, fmt.Errorf("ppo: observation space has dimension 0")
	}
	hid, err := nn.ParseActivation(cfg.Activation)
	if err != nil {
		return nil, fmt.Errorf("ppo config: %w", err)
	}
	p := &Policy{ObsDim: obs.Dim(), Action: act, ClipObs: cfg.ClipObs}
	out := act.N
	if !act.IsDiscrete() {
		out = len(act.Low)
		if out == 0 || len(act.High) != out {
			return nil, fmt.Errorf("ppo: Box action space with %d lows and %d highs", len(act.Low), len(act.High))
		}
		n := out
		if cfg.UseSDE {
			p.SDE = true
			n = cfg.Hidden[len(cfg.Hidden)-1] * out
		}
		p.LogStd = make([]float64, n)
		for i := range p.LogStd {
			p.LogStd[i] = cfg.LogStdInit
		}
	}
	sizes := append(append([]int{p.ObsDim}, cfg.Hidden...), out)
	p.Actor = nn.NewMLP(sizes, hid, nn.Identity)
	sizes[len(sizes)-1] = 1
	p.Critic = nn.NewMLP(sizes, hid, nn.Identity)
	if cfg.NoOrthoInit {
		for _, m := range []*nn.MLP{p.Actor, p.Critic} {
			for l := 0; l < m.NumLayers(); l++ {
				w, _ := m.Layer(m.Params, l)
				sc := 1 / math.Sqrt(float64(m.Sizes[l]))
				for i := range w {
					w[i] = sc * (2*rng.Float64() - 1)
				}
			}
		}
	} else {
		// stable-baselines3 ActorCriticPolicy: hidden layers gain √2,
		// action_net 0.01, value_net 1.
		p.Actor.InitOrthogonal(rng, math.Sqrt2, 0.01)
		p.Critic.InitOrthogonal(rng, math.Sqrt2, 1)
	}
	if cfg.NormalizeObs {
		p.ObsRMS = NewRunningMeanStd(p.ObsDim)
	}
	return p, nil
}

// normalizeObs writes the n normalised rows of obs to dst (or copies when not normalising).
func (p *Policy) normalizeObs(dst, obs []float64, n int) []float64 {
	if p.ObsRMS == nil {
		copy(dst, obs[:n*p.ObsDim])
		return dst
	}
	return p.ObsRMS.Normalize(dst, obs, n, obsEps, p.ClipObs)
}

func (p *Policy) lazyWS() {
	if p.ws == nil {
		p.ws = p.Actor.NewWorkspace(1)
		p.cws = p.Critic.NewWorkspace(1)
		p.normed = make([]float64, p.ObsDim)
	}
}

// Act writes the action for the raw observation obs to dst (length
// Action.Dim()) and returns it: the mode (argmax logit or Gaussian mean) when
// rng is nil, a sample otherwise. Box actions are clipped to the bounds.
// Act is not safe for concurrent use.
func (p *Policy) Act(dst, obs []float64, rng *rand.Rand) []float64 {
	p.lazyWS()
	x := p.normalizeObs(p.normed, obs, 1)
	out := p.Actor.Forward(p.ws, x, 1)
	if p.Action.IsDiscrete() {
		k := 0
		if rng == nil {
			for j, v := range out {
				if v > out[k] {
					k = j
				}
			}
		} else {
			k = sampleCategorical(out, rng)
		}
		dst[0] = float64(k)
		return dst
	}
	logStd := p.LogStd
	if p.SDE && rng != nil {
		if len(p.sdeS) != len(out) {
			p.sdeS = make([]float64, len(out))
		}
		logStd = sdeLogStd(p.sdeS, p.ws.Output(p.Actor, p.Actor.NumLayers()-2), p.LogStd)
	}
	for j, m := range out {
		a := m
		if rng != nil {
			a += math.Exp(logStd[j]) * rng.NormFloat64()
		}
		dst[j] = math.Max(p.Action.Low[j], math.Min(p.Action.High[j], a))
	}
	return dst
}

// Value returns the critic's value of the raw observation obs. Not safe for concurrent use.
func (p *Policy) Value(obs []float64) float64 {
	p.lazyWS()
	x := p.normalizeObs(p.normed, obs, 1)
	return p.Critic.Forward(p.cws, x, 1)[0]
}

// sampleCategorical draws an index with probabilities softmax(logits).
func sampleCategorical(logits []float64, rng *rand.Rand) int {
	lse := logSumExp(logits)
	u := rng.Float64()
	c := 0.0
	for j, v := range logits {
		c += math.Exp(v - lse)
		if u < c {
			return j
		}
	}
	return len(logits) - 1
}

// Evaluate runs episodes episodes of p on env (resetting with seeds seed,
// seed+1, ...) and returns their undiscounted returns; deterministic selects
// the mode action, otherwise actions are sampled from a stream seeded with seed.
// maxSteps > 0 truncates episodes the environment does not end itself.
func Evaluate(p *Policy, env envs.Env, episodes int, seed uint64, deterministic bool, maxSteps int) []float64 {
	var rng *rand.Rand
	if !deterministic {
		rng = rand.New(rand.NewPCG(seed, streamEval))
	}
	act := make([]float64, p.Action.Dim())
	ret := make([]float64, episodes)
	for e := 0; e < episodes; e++ {
		obs := env.Reset(seed + uint64(e))
		for t := 0; maxSteps <= 0 || t < maxSteps; t++ {
			p.Act(act, obs, rng)
			var r float64
			var term, trunc bool
			obs, r, term, trunc = env.Step(act)
			ret[e] += r
			if term || trunc {
				break
			}
		}
	}
	return ret
}

// CheckpointFormat identifies version 1 of the policy checkpoint format.
const CheckpointFormat = "fedirl-ppo-policy/1"

// Checkpoint is the JSON form of a Policy, readable without Go:
//
//	format           "fedirl-ppo-policy/1"
//	obs_dim          observation length d
//	action           {"n": N} for Discrete(N), or {"low": [...], "high": [...]} for a Box
//	actor, critic    networks: "sizes" [d, h1, ..., out], "activations" (one per layer:
//	                 "tanh", "relu" or "identity"), "params": a flat array holding, layer
//	                 after layer, W (sizes[l+1] rows × sizes[l] columns, row-major, as
//	                 torch.nn.Linear.weight) then b (sizes[l+1]); y = act(W x + b)
//	log_std          Gaussian log standard deviations (Box only); with "sde", gSDE's
//	                 latent × action matrix L, row-major: the standard deviation of
//	                 coordinate k is sqrt(Σ_j z_j² exp(2 L_jk) + 1e-6), z being the
//	                 actor's last hidden layer
//	sde              true for gSDE (stable-baselines3's use_sde)
//	obs_norm         null, or {"mean", "var", "count", "epsilon", "clip"}: the network
//	                 input is clip((obs-mean)/sqrt(var+epsilon), ±clip)
//	config           the training configuration (informative)
//
// The actor outputs logits (Discrete; the greedy action is the argmax) or the
// Gaussian mean (Box; clip it to [low, high] before stepping the environment).
type Checkpoint struct {
	Format  string          `json:"format"`
	ObsDim  int             `json:"obs_dim"`
	Action  SpaceJSON       `json:"action"`
	Actor   NetJSON         `json:"actor"`
	Critic  NetJSON         `json:"critic"`
	LogStd  []float64       `json:"log_std,omitempty"`
	SDE     bool            `json:"sde,omitempty"`
	ObsNorm *ObsNormJSON    `json:"obs_norm"`
	Config  json.RawMessage `json:"config,omitempty"`
}

// SpaceJSON is the JSON form of an envs.Space.
type SpaceJSON struct {
	N    int       `json:"n,omitempty"`
	Low  []float64 `json:"low,omitempty"`
	High []float64 `json:"high,omitempty"`
}

// NetJSON is the JSON form of an nn.MLP.
type NetJSON struct {
	Sizes       []int     `json:"sizes"`
	Activations []string  `json:"activations"`
	Params      []float64 `json:"params"`
}

// ObsNormJSON is the JSON form of observation normalisation statistics.
type ObsNormJSON struct {
	Mean    []float64 `json:"mean"`
	Var     []float64 `json:"var"`
	Count   float64   `json:"count"`
	Epsilon float64   `json:"epsilon"`
	Clip    float64   `json:"clip"`
}

func netJSON(m *nn.MLP) NetJSON {
	j := NetJSON{Sizes: m.Sizes, Params: m.Params}
	for _, a := range m.Acts {
		j.Activations = append(j.Activations, a.String())
	}
	return j
}

func netFromJSON(j NetJSON, what string) (*nn.MLP, error) {
	// Count the parameters before allocating anything, so that absurd sizes are an error, not an out-of-memory crash.
	need := 0
	for l := 0; l+1 < len(j.Sizes); l++ {
		in, out := j.Sizes[l], j.Sizes[l+1]
		if in < 1 || out < 1 || in > 1<<16 || out > 1<<16 {
			return nil, fmt.Errorf("%s.sizes[%d:%d] = %d, %d: want widths in [1, 65536]", what, l, l+2, in, out)
		}
		need += out*in + out
		if need > len(j.Params) {
			return nil, fmt.Errorf("%s.params has %d values, fewer than sizes %v need", what, len(j.Params), j.Sizes)
		}
	}
	acts := make([]nn.Activation, len(j.Activations))
	for i, s := range j.Activations {
		a, err := nn.ParseActivation(s)
		if err != nil {
			return nil, fmt.Errorf("%s.activations[%d]: %w", what, i, err)
		}
		acts[i] = a
	}
	m, err := nn.NewMLPActs(j.Sizes, acts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(j.Params) != len(m.Params) {
		return nil, fmt.Errorf("%s.params has %d values, sizes %v need %d", what, len(j.Params), j.Sizes, len(m.Params))
	}
	copy(m.Params, j.Params)
	return m, nil
}

// Checkpoint returns the JSON form of p; cfg (may be nil) is recorded as informative.
func (p *Policy) Checkpoint(cfg *Config) (*Checkpoint, error) {
	c := &Checkpoint{Format: CheckpointFormat, ObsDim: p.ObsDim,
		Action: SpaceJSON{N: p.Action.N, Low: p.Action.Low, High: p.Action.High},
		Actor:  netJSON(p.Actor), Critic: netJSON(p.Critic), LogStd: p.LogStd, SDE: p.SDE}
	if p.ObsRMS != nil {
		c.ObsNorm = &ObsNormJSON{Mean: p.ObsRMS.Mean, Var: p.ObsRMS.Var, Count: p.ObsRMS.Count, Epsilon: obsEps, Clip: p.ClipObs}
	}
	if cfg != nil {
		b, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		c.Config = b
	}
	return c, nil
}

// Save writes p as a JSON Checkpoint to path.
func (p *Policy) Save(path string, cfg *Config) error {
	c, err := p.Checkpoint(cfg)
	if err != nil {
		return fmt.Errorf("saving policy %s: %w", path, err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("saving policy %s: %w", path, err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("saving policy: %w", err)
	}
	return nil
}

// Load reads a policy written by Save.
func Load(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading policy: %w", err)
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("loading policy %s: %w", path, err)
	}
	return p, nil
}

// Parse decodes and validates a JSON Checkpoint.
func Parse(b []byte) (*Policy, error) {
	var c Checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return FromCheckpoint(&c)
}

// FromCheckpoint validates c and builds the policy it describes.
func FromCheckpoint(c *Checkpoint) (*Policy, error) {
	if c.Format != CheckpointFormat {
		return nil, fmt.Errorf("format %q, want %q", c.Format, CheckpointFormat)
	}
	if c.ObsDim < 1 {
		return nil, fmt.Errorf("obs_dim = %d, want ≥ 1", c.ObsDim)
	}
	p := &Policy{ObsDim: c.ObsDim, Action: envs.Space{N: c.Action.N, Low: c.Action.Low, High: c.Action.High}}
	var err error
	if p.Actor, err = netFromJSON(c.Actor, "actor"); err != nil {
		return nil, err
	}
	if p.Critic, err = netFromJSON(c.Critic, "critic"); err != nil {
		return nil, err
	}
	out := c.Action.N
	if out == 0 {
		out = len(c.Action.Low)
		if out == 0 || len(c.Action.High) != out {
			return nil, fmt.Errorf("action: need n > 0 or equal-length low and high")
		}
		want := out
		if c.SDE {
			if p.Actor.NumLayers() < 2 {
				return nil, fmt.Errorf("sde: the actor has no hidden layer")
			}
			want *= p.Actor.Sizes[len(p.Actor.Sizes)-2]
		}
		if len(c.LogStd) != want {
			return nil, fmt.Errorf("log_std has %d values, want %d (sde %v, action dimension %d)", len(c.LogStd), want, c.SDE, out)
		}
		p.LogStd = append([]float64(nil), c.LogStd...)
		p.SDE = c.SDE
	} else if c.SDE {
		return nil, fmt.Errorf("sde: only for a Box action space")
	}
	if p.Actor.In() != c.ObsDim || p.Critic.In() != c.ObsDim {
		return nil, fmt.Errorf("network inputs %d and %d, obs_dim %d", p.Actor.In(), p.Critic.In(), c.ObsDim)
	}
	if p.Actor.Out() != out || p.Critic.Out() != 1 {
		return nil, fmt.Errorf("actor outputs %d (want %d), critic outputs %d (want 1)", p.Actor.Out(), out, p.Critic.Out())
	}
	if n := c.ObsNorm; n != nil {
		if len(n.Mean) != c.ObsDim || len(n.Var) != c.ObsDim {
			return nil, fmt.Errorf("obs_norm: mean and var need %d values, have %d and %d", c.ObsDim, len(n.Mean), len(n.Var))
		}
		for i, v := range n.Var {
			if !(v >= 0) {
				return nil, fmt.Errorf("obs_norm.var[%d] = %g, want ≥ 0", i, v)
			}
		}
		p.ObsRMS = NewRunningMeanStd(c.ObsDim)
		copy(p.ObsRMS.Mean, n.Mean)
		copy(p.ObsRMS.Var, n.Var)
		p.ObsRMS.Count = n.Count
		p.ClipObs = n.Clip
		if p.ClipObs <= 0 {
			p.ClipObs = math.Inf(1)
		}
	}
	return p, nil
}
