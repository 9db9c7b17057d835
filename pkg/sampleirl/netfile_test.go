package sampleirl

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs"
)

// TestRewardNetFileRoundTrip: a network written by MarshalRewardNet and
// read back by ReadRewardNetFile computes the same reward, bit for bit, at
// random steps, for a Discrete and a Box action space, and its provenance
// comes back as written; the file's documented numpy forward pass (written
// out here from the file's fields alone) gives the same reward.
func TestRewardNetFileRoundTrip(t *testing.T) {
	obs := envs.Space{Low: []float64{-1, -1, -1}, High: []float64{1, 1, 1}}
	for _, act := range []envs.Space{{N: 3}, {Low: []float64{-2, -2}, High: []float64{2, 2}}} {
		r, err := NewRewardNet(StateActionInput(obs, act), NetConfig{Hidden: []int{5, 4}, Activation: "relu", OutputGain: 1}, 7)
		if err != nil {
			t.Fatal(err)
		}
		b, err := MarshalRewardNet(r, "Test-v0", obs, act, map[string]any{"task": "t1"})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "net.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, file, err := ReadRewardNetFile(path, obs, act)
		if err != nil {
			t.Fatal(err)
		}
		var prov map[string]string
		if err := json.Unmarshal(file.Provenance, &prov); err != nil || file.Env != "Test-v0" || prov["task"] != "t1" {
			t.Errorf("env %q, provenance %s", file.Env, file.Provenance)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 20 {
			o := []float64{rng.Float64()*2 - 1, rng.Float64()*2 - 1, rng.Float64()*2 - 1}
			a := []float64{float64(rng.IntN(3))}
			if !act.IsDiscrete() {
				a = []float64{rng.NormFloat64(), rng.NormFloat64()}
			}
			want := r.Reward(o, a, nil, false)
			if v := got.Reward(o, a, nil, false); v != want {
				t.Fatalf("%v: read back %v, written %v", act, v, want)
			}
			if v := layoutForward(file, o, a); math.Abs(v-want) > 1e-12 {
				t.Fatalf("%v: the documented layout gives %v, the network %v", act, v, want)
			}
		}
	}
}

// layoutForward is the file comment's numpy forward pass, from the file's
// fields only.
func layoutForward(f RewardNetFile, o, a []float64) float64 {
	h := append([]float64{}, o...)
	if f.Actions > 0 {
		e := make([]float64, f.Actions)
		e[int(a[0])] = 1
		h = append(h, e...)
	} else {
		h = append(h, a...)
	}
	w, k := f.Weights, 0
	for l := 0; l+1 < len(f.Sizes); l++ {
		in, out := f.Sizes[l], f.Sizes[l+1]
		next := make([]float64, out)
		for i := range out {
			s := w[k+out*in+i] // b_l[i]
			for j := range in {
				s += w[k+i*in+j] * h[j]
			}
			if l < len(f.Sizes)-2 {
				switch f.Activation {
				case "tanh":
					s = math.Tanh(s)
				case "relu":
					s = math.Max(s, 0)
				}
			}
			next[i] = s
		}
		k += out*in + out
		h = next
	}
	return h[0]
}

// TestRewardNetFileRefusals: every malformed or mismatched file is an
// error wrapping ErrInput that names the field.
func TestRewardNetFileRefusals(t *testing.T) {
	obs := envs.Space{Low: []float64{-1, -1}, High: []float64{1, 1}}
	act := envs.Space{N: 2}
	r, err := NewRewardNet(StateActionInput(obs, act), NetConfig{Hidden: []int{3}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	good, err := MarshalRewardNet(r, "", obs, act, nil)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"not JSON", []byte("weights: [1]"), "not a reward network file"},
		{"unknown key", edit(func(m map[string]any) { m["bias"] = 1 }), `unknown field "bias"`},
		{"format", edit(func(m map[string]any) { m["format"] = "other/2" }), `format "other/2"`},
		{"input", edit(func(m map[string]any) { m["input"] = "state" }), `input "state"`},
		{"observation", edit(func(m map[string]any) { m["observation_dim"] = 3 }), "observation_dim = 3, this simulator's observations have 2 values"},
		{"actions", edit(func(m map[string]any) { m["actions"] = 3 }), "actions = 3"},
		{"box action", edit(func(m map[string]any) { delete(m, "actions"); m["action_dim"] = 2 }), "action_dim = 2"},
		{"sizes", edit(func(m map[string]any) { m["sizes"] = []int{4, 3, 2} }), "sizes [4 3 2], want [4, hidden widths…, 1]"},
		{"width", edit(func(m map[string]any) { m["sizes"] = []int{4, 0, 1} }), "sizes[1] = 0"},
		{"activation", edit(func(m map[string]any) { m["activation"] = "sigmoid" }), `net.activation "sigmoid"`},
		{"no activation", edit(func(m map[string]any) { delete(m, "activation") }), "activation: missing"},
		{"weights", edit(func(m map[string]any) { m["weights"] = []float64{1, 2} }), "weights: 2 values, the network [4 3 1] has 19"},
		{"huge weight", []byte(strings.Replace(string(good), `"weights": [`, `"weights": [1e999, `, 1)), "not a reward network file"},
		{"trailing data", append(append([]byte{}, good...), []byte("{}")...), "data after the JSON object"},
	} {
		_, _, err := DecodeRewardNet(tc.b, "net.json", obs, act)
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "net.json") {
			t.Errorf("%s: err = %v, want ErrInput naming net.json and containing %q", tc.name, err, tc.want)
		}
	}
	if _, _, err := ReadRewardNetFile(filepath.Join(t.TempDir(), "none.json"), obs, act); !errors.Is(err, ErrInput) {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzDecodeRewardNet: no input makes DecodeRewardNet panic, and a network
// it accepts is written back to a file that decodes to the same weights.
func FuzzDecodeRewardNet(f *testing.F) {
	obs := envs.Space{Low: []float64{-1}, High: []float64{1}}
	act := envs.Space{N: 2}
	r, _ := NewRewardNet(StateActionInput(obs, act), NetConfig{Hidden: []int{2}}, 1)
	good, _ := MarshalRewardNet(r, "x", obs, act, nil)
	f.Add(good)
	f.Add([]byte(`{"format": "fedirl-reward-net/1", "input": "state_action", "observation_dim": 1, "actions": 2, "sizes": [3, 1], "activation": "tanh", "weights": [1, 2, 3, 4]}`))
	f.Add([]byte(`{"sizes": [3, 100000000, 1]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		net, _, err := DecodeRewardNet(b, "fuzz", obs, act)
		if err != nil {
			if !errors.Is(err, ErrInput) {
				t.Fatalf("error %v does not wrap ErrInput", err)
			}
			return
		}
		again, err := MarshalRewardNet(net, "", obs, act, nil)
		if err != nil {
			t.Fatal(err)
		}
		back, _, err := DecodeRewardNet(again, "again", obs, act)
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range net.Net.Params {
			if back.Net.Params[j] != v {
				t.Fatalf("weight %d: %v, then %v", j, v, back.Net.Params[j])
			}
		}
	})
}
