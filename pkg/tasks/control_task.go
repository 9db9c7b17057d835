package tasks

import (
	"encoding/json"
	"fmt"

	"github.com/fedirl/fedirl/pkg/federation"
)

// ControlTaskProbe returns the probe JSON and θ dimension of a "control"
// task on environment env with the lattice preset grid ("paper", "fine",
// "ultra") and the paper's RBF features, as the control study builds it,
// refusing a probe that exceeds lim before building its Φ.
func ControlTaskProbe(env, grid string, lim federation.Limits) (json.RawMessage, int, error) {
	e, err := LookupControl(env)
	if err != nil {
		return nil, 0, err
	}
	g, err := e.Grid(grid, nil)
	if err != nil {
		return nil, 0, err
	}
	raw, err := json.Marshal(e.Probe(g))
	if err != nil {
		return nil, 0, err
	}
	points, feats, err := Control{}.ProbeSize(raw)
	if err != nil {
		return nil, 0, err
	}
	if err := lim.CheckProbe(points, feats); err != nil {
		return nil, 0, fmt.Errorf("%s on the %q lattice: %w", env, grid, err)
	}
	return raw, feats, nil
}
