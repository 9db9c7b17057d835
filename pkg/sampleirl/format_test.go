package sampleirl

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs"
)

// pendulumSpaces are Pendulum-v1's spaces: observations (cos θ, sin θ, θ̇), one torque.
var (
	pendObs = envs.Space{Low: []float64{-1, -1, -8}, High: []float64{1, 1, 8}}
	pendAct = envs.Space{Low: []float64{-2}, High: []float64{2}}
)

// TestTrajectoriesRoundTrip: what WriteTrajectories writes reads back bit
// for bit, the terminated flags included.
func TestTrajectoriesRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var demos []Trajectory
	for i := range 4 {
		n := 1 + rng.IntN(6)
		tr := Trajectory{Terminated: i%2 == 1}
		for range n + 1 {
			tr.Obs = append(tr.Obs, []float64{rng.NormFloat64(), rng.NormFloat64() * 1e-300, math.Pi * rng.Float64()})
		}
		for range n {
			tr.Actions = append(tr.Actions, []float64{4*rng.Float64() - 2})
		}
		demos = append(demos, tr)
	}
	var buf bytes.Buffer
	if err := WriteTrajectories(&buf, demos); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"terminated":false`) {
		t.Errorf("terminated false is not written explicitly: %s", buf.String())
	}
	got, err := ReadTrajectories(&buf, "demos.jsonl", pendObs, pendAct)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, demos) {
		t.Errorf("read back %v, wrote %v", got, demos)
	}
}

// TestReadTrajectoriesErrors: every malformed file is an error naming the
// file, the line and the field, never a panic.
func TestReadTrajectoriesErrors(t *testing.T) {
	good := `{"obs": [[1, 0, 0], [1, 0, 0.1]], "actions": [[0.5]]}` + "\n"
	discrete := envs.Space{N: 3}
	for _, tc := range []struct {
		name, text string
		obs, act   envs.Space
		want       string
	}{
		{"obs too short", good + `{"obs": [[1, 0], [1, 0, 0.1]], "actions": [[0.5]]}`, pendObs, pendAct,
			"demos.jsonl line 2: obs[0]: 2 values, want 3 (the environment's observation length)"},
		{"action too long", `{"obs": [[1, 0, 0], [1, 0, 0.1]], "actions": [[0.5, 1]]}`, pendObs, pendAct,
			"demos.jsonl line 1: actions[0]: 2 values, want 1 (the environment's action length)"},
		{"ragged within a line", `{"obs": [[1, 0, 0], [1, 0, 0.1, 4], [1, 0, 0]], "actions": [[0.5], [0.5]]}`, envs.Space{}, envs.Space{},
			"demos.jsonl line 1: obs[1]: 4 values, want 3 (the length of obs[0] on line 1)"},
		{"ragged between lines", good + good + `{"obs": [[1, 0], [1, 0]], "actions": [[0.5]]}`, envs.Space{}, envs.Space{},
			"demos.jsonl line 3: obs[0]: 2 values, want 3 (the length of obs[0] on line 1)"},
		{"NaN", good + `{"obs": [[1, 0, 0], [1, NaN, 0.1]], "actions": [[0.5]]}`, pendObs, pendAct,
			"demos.jsonl line 2: obs: NaN at column 25 is not a JSON number (Python's json.dump writes it by default)"},
		{"-Infinity", `{"obs": [[1, 0, 0], [1, 0, 0.1]], "actions": [[-Infinity]]}`, pendObs, pendAct,
			"demos.jsonl line 1: actions: -Infinity at column"},
		{"obs missing", `{"actions": [[0.5]]}`, pendObs, pendAct, "demos.jsonl line 1: obs: missing"},
		{"actions missing", `{"obs": [[1, 0, 0]], "acts": [[0.5]]}`, pendObs, pendAct, "demos.jsonl line 1: actions: missing"},
		{"no steps", `{"obs": [[1, 0, 0]], "actions": []}`, pendObs, pendAct, "demos.jsonl line 1: actions: no steps"},
		{"observation count", `{"obs": [[1, 0, 0]], "actions": [[0.5]]}`, pendObs, pendAct,
			"demos.jsonl line 1: obs: 1 observations for 1 actions, want actions+1"},
		{"scalar actions", `{"obs": [[1, 0, 0], [1, 0, 0.1]], "actions": [0.5]}`, pendObs, pendAct,
			"demos.jsonl line 1: actions: cannot use JSON number as []float64"},
		{"not an object", `[1, 2]`, pendObs, pendAct, "demos.jsonl line 1: cannot use JSON array here"},
		{"bad JSON", `{"obs": [[1, 0, 0]`, pendObs, pendAct, "demos.jsonl line 1: obs: invalid JSON at column 18"},
		{"discrete index", `{"obs": [[0], [1]], "actions": [[3]]}`, envs.Space{}, discrete,
			"demos.jsonl line 1: actions[0]: 3 is not an action index of Discrete(3)"},
		{"discrete fraction", `{"obs": [[0], [1]], "actions": [[0.5]]}`, envs.Space{}, discrete, "0.5 is not an action index"},
		{"empty", "\n\n", pendObs, pendAct, "demos.jsonl: no episodes"},
	} {
		got, err := ReadTrajectories(strings.NewReader(tc.text), "demos.jsonl", tc.obs, tc.act)
		var fe *FormatError
		switch {
		case err == nil:
			t.Errorf("%s: read %v, want an error", tc.name, got)
		case !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: error %q, want one containing %q", tc.name, err, tc.want)
		case !errors.As(err, &fe) || !errors.Is(err, ErrInput):
			t.Errorf("%s: error %T %v is not a *FormatError wrapping ErrInput", tc.name, err, err)
		}
	}
}

// FuzzReadTrajectories: any input gives trajectories that DemoFeatures
// accepts, or an error; never a panic.
func FuzzReadTrajectories(f *testing.F) {
	f.Add(`{"obs": [[1, 0, 0], [1, 0, 0.1]], "actions": [[0.5]], "terminated": true}`)
	f.Add(`{"obs": [[1, 0], [1, 0, 0.1]], "actions": [[0.5]]}` + "\n" + `{"obs": [[NaN]]}`)
	f.Add(`{"obs": [[0], [1]], "actions": [[2]]}`)
	phi := FeatureFunc{D: 1, F: func(dst, obs, action, next []float64, terminated bool) []float64 { dst[0] = 1; return dst }}
	f.Fuzz(func(t *testing.T, text string) {
		for _, sp := range [][2]envs.Space{{pendObs, pendAct}, {{}, {N: 3}}, {{}, {}}} {
			demos, err := ReadTrajectories(strings.NewReader(text), "fuzz", sp[0], sp[1])
			if err != nil {
				continue
			}
			if _, _, err := DemoFeatures(phi, 0.9, demos, sp[0].Dim(), sp[1].Dim()); err != nil {
				t.Fatalf("read %v, which DemoFeatures refuses: %v", demos, err)
			}
		}
	})
}
