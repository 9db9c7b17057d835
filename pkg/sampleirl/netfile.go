package sampleirl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/fedirl/fedirl/pkg/envs"
)

// # The reward network file
//
// A reward network on the (s, e_a) input (StateActionInput) is written as
// one JSON object (MarshalRewardNet, ReadRewardNetFile):
//
//	{"format": "fedirl-reward-net/1", "env": "CartPole-v1", "input": "state_action",
//	 "observation_dim": 4, "actions": 2, "sizes": [6, 32, 1], "activation": "tanh",
//	 "weights": [...], "provenance": {...}}
//
// The input x(s, a) is the observation's observation_dim values followed by
// the action: for a Discrete space of "actions" N, the one-hot e_a of
// length N; for a Box space of "action_dim" values, the action itself
// (exactly one of the two is set). sizes are the layer widths (the input
// width, the hidden widths, 1); every hidden layer applies activation
// ("tanh" or "relu"), the output none. weights is nn.MLP.Params' layout:
// for each layer l in order, W_l (sizes[l+1] rows by sizes[l] columns,
// row-major, torch.nn.Linear.weight's layout), then b_l (sizes[l+1]
// entries), so that in numpy
//
//	h = x; k = 0
//	for l in range(len(sizes) - 1):
//	    W = w[k:k + sizes[l+1]*sizes[l]].reshape(sizes[l+1], sizes[l]); k += W.size
//	    b = w[k:k + sizes[l+1]]; k += b.size
//	    h = W @ h + b
//	    if l < len(sizes) - 2: h = np.tanh(h)
//	r = h[0]
//
// env names the simulator whose spaces the input is in (documentation and
// a check for readers that know theirs); provenance is free JSON saying
// where the network came from (a distillation's task, method and fit),
// which readers do not interpret.

// RewardNetFormat is the format tag of a reward network file.
const RewardNetFormat = "fedirl-reward-net/1"

// InputStateAction names the (s, e_a) input map (StateActionInput) in a
// reward network file.
const InputStateAction = "state_action"

// maxRewardNetFileBytes bounds a reward network file read from disk: 2²⁰
// weights (the mlp-weights family's bound) at 24 bytes each, and the rest.
const maxRewardNetFileBytes = 24<<20 + 1<<16

// maxRewardNetWeights bounds the weights of a network read from a file.
const maxRewardNetWeights = 1 << 20

// RewardNetFile is the JSON of a reward network file (see the comment above).
type RewardNetFile struct {
	// Format is RewardNetFormat.
	Format string `json:"format"`
	// Env is the simulator the input is in, when the writer named one.
	Env string `json:"env,omitempty"`
	// Input is InputStateAction.
	Input string `json:"input"`
	// ObservationDim is the observation's length.
	ObservationDim int `json:"observation_dim"`
	// Actions is N of a Discrete action space; ActionDim the length of a
	// Box action. Exactly one is set.
	Actions   int `json:"actions,omitempty"`
	ActionDim int `json:"action_dim,omitempty"`
	// Sizes are the layer widths: input, hidden…, 1.
	Sizes []int `json:"sizes"`
	// Activation is the hidden layers' activation, "tanh" or "relu".
	Activation string `json:"activation"`
	// Weights are the network's weights in nn.MLP.Params' layout.
	Weights []float64 `json:"weights"`
	// Provenance says where the network came from; readers ignore it.
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// MarshalRewardNet returns the file of r, a network on StateActionInput(obs,
// act), for simulator env, with provenance (any JSON value, or nil) as its
// provenance; the result ends in a newline.
func MarshalRewardNet(r *RewardNet, env string, obs, act envs.Space, provenance any) ([]byte, error) {
	f := RewardNetFile{Format: RewardNetFormat, Env: env, Input: InputStateAction, ObservationDim: obs.Dim(),
		Sizes: slices.Clone(r.Net.Sizes), Activation: r.Config.Activation, Weights: r.Weights()}
	if act.IsDiscrete() {
		f.Actions = act.N
	} else {
		f.ActionDim = act.Dim()
	}
	if want := StateActionInput(obs, act).Dim(); r.Net.In() != want {
		return nil, fmt.Errorf("%w: reward network file: the network takes %d inputs, (s, e_a) of these spaces has %d", ErrInput, r.Net.In(), want)
	}
	if provenance != nil {
		b, err := json.Marshal(provenance)
		if err != nil {
			return nil, fmt.Errorf("reward network file: provenance: %w", err)
		}
		f.Provenance = b
	}
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return nil, fmt.Errorf("reward network file: %w", err)
	}
	return append(b, '\n'), nil
}

// DecodeRewardNet reads a reward network file's bytes (name is used in
// errors) and returns the network, on StateActionInput(obs, act), with
// the file. Unknown keys are refused; the format, the input, the spaces
// (against obs and act), the widths, the activation and every weight
// (count and finiteness) are checked, each error naming the field.
// Errors wrap ErrInput.
func DecodeRewardNet(b []byte, name string, obs, act envs.Space) (*RewardNet, RewardNetFile, error) {
	var f RewardNetFile
	bad := func(format string, args ...any) (*RewardNet, RewardNetFile, error) {
		return nil, f, fmt.Errorf("%w: %s: %s", ErrInput, name, fmt.Sprintf(format, args...))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return bad("not a reward network file (%v)", err)
	}
	if dec.More() {
		return bad("data after the JSON object")
	}
	if f.Format != RewardNetFormat {
		return bad("format %q, want %q", f.Format, RewardNetFormat)
	}
	if f.Input != InputStateAction {
		return bad("input %q, want %q (the observation, then the one-hot or Box action)", f.Input, InputStateAction)
	}
	if f.ObservationDim != obs.Dim() {
		return bad("observation_dim = %d, this simulator's observations have %d values", f.ObservationDim, obs.Dim())
	}
	switch {
	case act.IsDiscrete() && (f.Actions != act.N || f.ActionDim != 0):
		return bad("actions = %d, action_dim = %d; this simulator's actions are Discrete(%d)", f.Actions, f.ActionDim, act.N)
	case !act.IsDiscrete() && (f.ActionDim != act.Dim() || f.Actions != 0):
		return bad("actions = %d, action_dim = %d; this simulator's actions are a Box of %d values", f.Actions, f.ActionDim, act.Dim())
	}
	input := StateActionInput(obs, act)
	if len(f.Sizes) < 2 || f.Sizes[0] != input.Dim() || f.Sizes[len(f.Sizes)-1] != 1 {
		return bad("sizes %v, want [%d, hidden widths…, 1]", f.Sizes, input.Dim())
	}
	cfg := NetConfig{Hidden: slices.Clone(f.Sizes[1 : len(f.Sizes)-1]), Activation: f.Activation}
	if cfg.Activation == "" {
		return bad("activation: missing, want tanh or relu")
	}
	n := 0
	for l := 0; l+1 < len(f.Sizes); l++ {
		if f.Sizes[l] < 1 || f.Sizes[l] > maxNetWidth {
			return bad("sizes[%d] = %d, want in [1, %d]", l, f.Sizes[l], maxNetWidth)
		}
		n += f.Sizes[l]*f.Sizes[l+1] + f.Sizes[l+1]
		if n > maxRewardNetWeights {
			return bad("sizes %v: more than %d weights", f.Sizes, maxRewardNetWeights)
		}
	}
	r, err := NewRewardNet(input, cfg, 0)
	if err != nil {
		return nil, f, fmt.Errorf("%s: %w", name, err)
	}
	if len(f.Weights) != r.NumWeights() {
		return bad("weights: %d values, the network %v has %d", len(f.Weights), f.Sizes, r.NumWeights())
	}
	for j, v := range f.Weights {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return bad("weights[%d] = %v, want a finite weight", j, v)
		}
	}
	copy(r.Net.Params, f.Weights)
	return r, f, nil
}

// ReadRewardNetFile reads the reward network file at path (DecodeRewardNet),
// refusing a file larger than any network the project writes.
func ReadRewardNetFile(path string, obs, act envs.Space) (*RewardNet, RewardNetFile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, RewardNetFile{}, fmt.Errorf("%w: reward network file: %w", ErrInput, err)
	}
	if st.Size() > maxRewardNetFileBytes {
		return nil, RewardNetFile{}, fmt.Errorf("%w: %s: %d bytes, more than a network of %d weights takes", ErrInput, path, st.Size(), maxRewardNetWeights)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, RewardNetFile{}, fmt.Errorf("%w: reward network file: %w", ErrInput, err)
	}
	return DecodeRewardNet(b, path, obs, act)
}
