package sampleirl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/rl/nn"
)

// NetConfig is the shape of a reward network; every zero value means the
// default in brackets.
type NetConfig struct {
	// Hidden lists the hidden layers' widths [32].
	Hidden []int `json:"hidden,omitempty" yaml:"hidden,omitempty"`
	// Activation is the hidden layers' activation, "tanh" or "relu" [tanh].
	Activation string `json:"activation,omitempty" yaml:"activation,omitempty"`
	// OutputGain is the gain of the output layer's orthogonal
	// initialisation [0.1: the initial reward is small against PPO's
	// entropy bonus, so the first policy is close to uniform].
	OutputGain float64 `json:"output_gain,omitempty" yaml:"output_gain,omitempty"`
}

const (
	defaultHidden     = 32
	defaultOutputGain = 0.1
	streamNetInit     = 0x6e65_7400 // the reward network's initialisation stream
	maxNetWidth       = 4096
)

// Resolve returns c with its defaults filled in, or an error (wrapping
// ErrInput) naming the bad field.
func (c NetConfig) Resolve() (NetConfig, error) {
	if c.Hidden == nil {
		c.Hidden = []int{defaultHidden}
	}
	c.Hidden = slices.Clone(c.Hidden)
	for i, h := range c.Hidden {
		if h < 1 || h > maxNetWidth {
			return c, fmt.Errorf("%w: net.hidden[%d] = %d, want in [1, %d]", ErrInput, i, h, maxNetWidth)
		}
	}
	if c.Activation == "" {
		c.Activation = "tanh"
	}
	if a, err := nn.ParseActivation(c.Activation); err != nil || a == nn.Identity {
		return c, fmt.Errorf("%w: net.activation %q, want tanh or relu", ErrInput, c.Activation)
	}
	if c.OutputGain == 0 {
		c.OutputGain = defaultOutputGain
	}
	if !(c.OutputGain > 0) || math.IsInf(c.OutputGain, 0) {
		return c, fmt.Errorf("%w: net.output_gain = %v, want > 0", ErrInput, c.OutputGain)
	}
	return c, nil
}

// Sizes returns the layer widths of the network on in inputs: in, the
// hidden widths, 1.
func (c NetConfig) Sizes(in int) []int {
	return slices.Concat([]int{in}, c.Hidden, []int{1})
}

// RewardNet is a neural reward r_w(s, a, s′) = MLP_w(x(s, a, s′)): a small
// multilayer perceptron (package rl/nn) with one linear output, on the
// input map x, the step's (s, a) by default (StateActionInput).
//
// Its weights w are one []float64 vector laid out as nn.MLP.Params: for
// each layer l = 0, 1, … in order, the weight matrix W_l (Sizes[l+1] rows
// by Sizes[l] columns, row-major, torch.nn.Linear.weight's layout) and then
// the bias b_l (Sizes[l+1] entries). Two networks of one NetConfig and
// input dimension have weight vectors of the same length whose entries
// mean the same thing position by position (which is what parameter
// averaging assumes, up to the hidden units' order).
//
// A RewardNet is not safe for concurrent use.
type RewardNet struct {
	// Input is the input map x; its Dim is the network's input width.
	Input FeatureMap
	// Net is the network: Sizes = Config.Sizes(Input.Dim()), hidden
	// activation Config.Activation, identity output.
	Net *nn.MLP
	// Config is the resolved shape.
	Config NetConfig

	ws     *nn.Workspace
	x, one []float64
	grad   []float64
}

// NewRewardNet returns the reward network of shape cfg on input, with
// weights initialised from seed: orthogonal matrices (nn.InitOrthogonal)
// of gain √2 for the hidden layers and cfg.OutputGain for the output, zero
// biases. Errors wrap ErrInput.
func NewRewardNet(input FeatureMap, cfg NetConfig, seed uint64) (*RewardNet, error) {
	if input == nil || input.Dim() < 1 {
		return nil, fmt.Errorf("%w: reward network: no input map, or one of dimension < 1", ErrInput)
	}
	cfg, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	act, _ := nn.ParseActivation(cfg.Activation)
	m := nn.NewMLP(cfg.Sizes(input.Dim()), act, nn.Identity)
	m.InitOrthogonal(rand.New(rand.NewPCG(seed, streamNetInit)), math.Sqrt2, cfg.OutputGain)
	return &RewardNet{Input: input, Net: m, Config: cfg}, nil
}

// NumWeights returns the length of the weight vector.
func (r *RewardNet) NumWeights() int { return len(r.Net.Params) }

// Weights returns a copy of the weight vector w.
func (r *RewardNet) Weights() []float64 { return slices.Clone(r.Net.Params) }

// SetWeights copies w into the network, after checking its length and that
// every entry is finite (errors wrap ErrInput).
func (r *RewardNet) SetWeights(w []float64) error {
	if len(w) != len(r.Net.Params) {
		return fmt.Errorf("%w: %d weights, the network %v has %d", ErrInput, len(w), r.Net.Sizes, len(r.Net.Params))
	}
	for j, v := range w {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: weight %d = %v", ErrInput, j, v)
		}
	}
	copy(r.Net.Params, w)
	return nil
}

// Clone returns a copy of r with its own weights and scratch (sharing the input map).
func (r *RewardNet) Clone() *RewardNet {
	return &RewardNet{Input: r.Input, Net: r.Net.Clone(), Config: r.Config}
}

func (r *RewardNet) lazy() {
	if r.ws == nil {
		r.ws = r.Net.NewWorkspace(1)
		r.x = make([]float64, r.Net.In())
		r.one = []float64{1}
		r.grad = make([]float64, len(r.Net.Params))
	}
}

// Reward returns r_w(obs, action, next, terminated).
func (r *RewardNet) Reward(obs, action, next []float64, terminated bool) float64 {
	r.lazy()
	x := r.Input.Eval(r.x, obs, action, next, terminated)
	return r.Net.Forward(r.ws, x, 1)[0]
}

// Grad writes ∇_w r_w(obs, action, next, terminated) into dst (length
// NumWeights, laid out as the weights) and returns the reward and dst.
func (r *RewardNet) Grad(dst, obs, action, next []float64, terminated bool) (float64, []float64) {
	r.lazy()
	x := r.Input.Eval(r.x, obs, action, next, terminated)
	v := r.Net.Forward(r.ws, x, 1)[0]
	clear(dst)
	r.Net.Backward(r.ws, r.one, dst, nil)
	return v, dst
}

// Values writes r_w at the n input rows X (n × Net.In(), row-major: inputs
// already mapped by Input) into dst and returns it.
func (r *RewardNet) Values(dst, X []float64, n int) []float64 {
	ws := r.Net.NewWorkspace(n)
	return append(dst[:0], r.Net.Forward(ws, X, n)...)
}

// StateActionInput is the input map x(s, a) = (s, e_a) of the environment's
// spaces: the observation followed by the action, one-hot over a Discrete
// space's N actions or the Box action itself. It ignores s′ and termination,
// so a reward on it is a function of (s, a), as a scattered (s, a) probe
// asks.
func StateActionInput(obs, act envs.Space) FeatureMap {
	od, discrete := obs.Dim(), act.IsDiscrete()
	ad := act.Dim()
	if discrete {
		ad = act.N
	}
	return FeatureFunc{D: od + ad, F: func(dst, o, a, _ []float64, _ bool) []float64 {
		dst = append(dst[:0], o...)
		if !discrete {
			return append(dst, a...)
		}
		k := len(dst)
		for range ad {
			dst = append(dst, 0)
		}
		if i := int(a[0]); i >= 0 && i < ad {
			dst[k+i] = 1
		}
		return dst
	}}
}
