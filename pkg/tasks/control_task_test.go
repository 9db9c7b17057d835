package tasks

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/federation"
)

// TestControlTaskProbe: the probe is the control study's (the environment's
// preset lattice and paper features), its θ dimension is the number of
// columns of the Φ the family builds from it, and an unknown environment,
// an unknown preset and a probe above the server's bounds are refused.
func TestControlTaskProbe(t *testing.T) {
	for _, env := range []string{"Pendulum-v1", "CartPole-v1"} {
		raw, dim, err := ControlTaskProbe(env, "paper", federation.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(controlProbe(t, env, "paper"))
		if string(raw) != string(want) {
			t.Errorf("%s: probe %s, want the study's %s", env, raw, want)
		}
		pr, err := Control{}.Probe(raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, c := pr.Phi.Dims(); c != dim {
			t.Errorf("%s: theta_dim %d, Φ has %d columns", env, dim, c)
		}
	}
	for _, tc := range []struct {
		env, grid string
		lim       federation.Limits
		want      string
	}{
		{"Nope-v0", "paper", federation.Limits{}, `"Nope-v0" has no control-study discretisation`},
		{"Pendulum-v1", "coarse", federation.Limits{}, `lattice preset "coarse": unknown for Pendulum-v1`},
		{"Pendulum-v1", "paper", federation.Limits{MaxProbePoints: 10}, `Pendulum-v1 on the "paper" lattice: probe:`},
	} {
		if _, _, err := ControlTaskProbe(tc.env, tc.grid, tc.lim); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: error %v, want one containing %q", tc.env, tc.grid, err, tc.want)
		}
	}
}
