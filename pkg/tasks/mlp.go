package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/sampleirl"
)

// MLPWeightsFamily is the family of tasks that fuse neural rewards by
// parameter averaging ("mlp-weights"), the baseline reward-space fusion is
// compared with: θ is the flattened weight vector of a reward network of the
// shape the task names (sampleirl.RewardNet's layout), and a θ-space method
// (mean: FedAvg) combines the clients' vectors position by position. Its
// probe JSON (an MLPWeightsProbe) carries the network's input width and
// shape and, for FedAvg from a shared initialization, the initial weights
// the server sends every client; without them each client starts from its
// own seed's (independent initializations). With warm_start, round k > 1
// starts every client from the fused weights of round k − 1 (FedAvg's
// rounds).
//
// There is no feature map: averaging weights is not averaging the rewards
// they compute (hidden units have no fixed order, TestWeightAveragingPermutation),
// so reward-space methods and reward submissions are refused, and outlier
// scores are computed on θ itself.
type MLPWeightsFamily struct{}

func init() { Register(MLPWeightsFamily{}) }

// MLPWeightsFamilyName is the env_family of the weight-averaging family.
const MLPWeightsFamilyName = "mlp-weights"

// MLPWeightsProbe is the probe JSON of an mlp-weights task.
type MLPWeightsProbe struct {
	// Env, when set, names the simulator whose (s, e_a) the network reads
	// (sampleirl.StateActionInput of its spaces); a client on another
	// simulator is refused.
	Env string `json:"env,omitempty"`
	// Input is the network's input width (for the (s, a) input of a
	// Discrete space: the observation's length plus the number of actions).
	Input int `json:"input"`
	// Net is the network's shape (sampleirl's defaults for zero fields).
	Net sampleirl.NetConfig `json:"net"`
	// Init, when set, is the shared initialization every client starts
	// round 1 from: one weight vector of the network's length.
	Init []float64 `json:"init,omitempty"`
}

// Name implements Family.
func (MLPWeightsFamily) Name() string { return MLPWeightsFamilyName }

// Probe implements Family: a weights task has no support to fuse rewards
// on; it returns the empty probe after checking the probe JSON.
func (MLPWeightsFamily) Probe(raw json.RawMessage) (fusion.Probe, error) {
	if _, _, err := DecodeMLPWeightsProbe(raw); err != nil {
		return fusion.Probe{}, err
	}
	return fusion.Probe{}, nil
}

// WeightDim implements WeightFamily: the network's number of weights.
func (MLPWeightsFamily) WeightDim(raw json.RawMessage) (int, error) {
	_, sizes, err := DecodeMLPWeightsProbe(raw)
	if err != nil {
		return 0, err
	}
	return numWeights(sizes), nil
}

// WeightFamily is implemented by a family whose θ is a model's parameter
// vector rather than weights of a feature map: its probe has no Φ,
// theta_dim must be WeightDim, and only θ-space fusion methods apply.
type WeightFamily interface {
	WeightDim(raw json.RawMessage) (int, error)
}

// numWeights is the parameter count of an MLP with these widths.
func numWeights(sizes []int) int {
	n := 0
	for l := 0; l+1 < len(sizes); l++ {
		n += sizes[l]*sizes[l+1] + sizes[l+1]
	}
	return n
}

// maxNetWeights bounds a weights task's network (its θ), as MaxPhiEntries bounds Φ.
const maxNetWeights = 1 << 20

// DecodeMLPWeightsProbe reads an mlp-weights probe, refusing unknown keys,
// and returns it with its net resolved and the network's widths; it checks
// the input width, the shape and the initial weights (length, finiteness),
// naming the field.
func DecodeMLPWeightsProbe(raw []byte) (MLPWeightsProbe, []int, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p MLPWeightsProbe
	if err := dec.Decode(&p); err != nil {
		if path, tok, ok := federation.NonFiniteJSON(raw); ok {
			return p, nil, fmt.Errorf("%s = %s: JSON has no NaN or infinity; want finite numbers", path, tok)
		}
		return p, nil, fmt.Errorf("decoding mlp-weights probe: %w", err)
	}
	if p.Input < 1 || p.Input > fusion.MaxProbeDim {
		return p, nil, fmt.Errorf("input = %d, want in [1, %d]", p.Input, fusion.MaxProbeDim)
	}
	var err error
	if p.Net, err = p.Net.Resolve(); err != nil {
		return p, nil, err
	}
	sizes := p.Net.Sizes(p.Input)
	n := 0
	for l := 0; l+1 < len(sizes); l++ {
		n += mulSat(sizes[l], sizes[l+1]) + sizes[l+1]
		if n > maxNetWeights {
			return p, nil, fmt.Errorf("net: more than %d weights", maxNetWeights)
		}
	}
	if p.Init != nil {
		if len(p.Init) != n {
			return p, nil, fmt.Errorf("init: %d weights, the network %v has %d", len(p.Init), sizes, n)
		}
		for j, v := range p.Init {
			if !finite(v) {
				return p, nil, fmt.Errorf("init[%d] = %v, want a finite weight", j, v)
			}
		}
	}
	return p, sizes, nil
}

// MLPWeightsTaskProbe returns the probe JSON of an mlp-weights task for
// networks of shape net on the (s, e_a) input of simulator env with spaces
// obs and act, and its theta_dim (the network's number of weights). The
// shared initialization is init when given (its length checked), else,
// with initSeed, sampleirl.NewRewardNet's from that seed; with neither,
// every client starts from its own seed's.
func MLPWeightsTaskProbe(env string, obs, act envs.Space, net sampleirl.NetConfig, init []float64, initSeed *uint64) (json.RawMessage, int, error) {
	input := sampleirl.StateActionInput(obs, act)
	if init != nil && initSeed != nil {
		return nil, 0, fmt.Errorf("a shared initialization from weights and from a seed: give one")
	}
	if initSeed != nil {
		r, err := sampleirl.NewRewardNet(input, net, *initSeed)
		if err != nil {
			return nil, 0, err
		}
		init = r.Weights()
	}
	b, err := json.Marshal(MLPWeightsProbe{Env: env, Input: input.Dim(), Net: net, Init: init})
	if err != nil {
		return nil, 0, err
	}
	_, sizes, err := DecodeMLPWeightsProbe(b)
	if err != nil {
		return nil, 0, err
	}
	return b, numWeights(sizes), nil
}
