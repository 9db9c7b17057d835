package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/ot"
)

// ProbeBuilder rebuilds a task's probe (Φ and lattice) from its serialized
// spec. GridProbe handles env family "gridworld".
type ProbeBuilder func(probe []byte) (fusion.Probe, error)

// GridProbe decodes a gridworld.Spec JSON and builds its probe with fusion.GridProbe.
func GridProbe(probe []byte) (fusion.Probe, error) {
	var spec gridworld.Spec
	if err := json.Unmarshal(probe, &spec); err != nil {
		return fusion.Probe{}, fmt.Errorf("probe: decoding gridworld spec: %w", err)
	}
	return fusion.GridProbe(spec)
}

// StandardFuser is the server's Fuser: fusion.Mean for method "mean" and
// fusion.Barycentric on the task's probe for "barycentric". Probes are built
// once per task and cached.
type StandardFuser struct {
	// Probes maps env family to its probe builder; nil means {"gridworld": GridProbe}.
	Probes map[string]ProbeBuilder

	mu    sync.Mutex
	cache map[string]fusion.Probe
}

// Fuse implements Fuser.
func (f *StandardFuser) Fuse(ctx context.Context, spec TaskSpec, thetas [][]float64, weights []float64) (FuseOutput, error) {
	switch spec.Fusion.Method {
	case "mean", "":
		th, err := fusion.Mean(thetas, weights)
		return FuseOutput{Theta: th}, err
	case "barycentric":
		probe, err := f.probe(spec)
		if err != nil {
			return FuseOutput{}, err
		}
		opt := fusion.Options{Sigma: spec.Fusion.Sigma, Eps: spec.Fusion.Epsilon, MaxIter: spec.Fusion.MaxIter,
			InnerIter: spec.Fusion.InnerIter, Tol: spec.Fusion.Tol}
		if spec.Fusion.Solver != "" {
			if opt.Method, err = ot.ParseMethod(spec.Fusion.Solver); err != nil {
				return FuseOutput{}, fmt.Errorf("task %s: fusion.solver: %w", spec.ID, err)
			}
		}
		res, err := probe.Fuse(thetas, weights, opt)
		if err != nil {
			return FuseOutput{}, err
		}
		return FuseOutput{Theta: res.Theta, MarginalError: res.MarginalError, Iterations: res.Iterations}, nil
	}
	return FuseOutput{}, fmt.Errorf("task %s: unknown fusion method %q", spec.ID, spec.Fusion.Method)
}

func (f *StandardFuser) probe(spec TaskSpec) (fusion.Probe, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.cache[spec.ID]; ok {
		return p, nil
	}
	builders := f.Probes
	if builders == nil {
		builders = map[string]ProbeBuilder{"gridworld": GridProbe}
	}
	b, ok := builders[spec.EnvFamily]
	if !ok {
		return fusion.Probe{}, fmt.Errorf("task %s: no probe builder for env family %q", spec.ID, spec.EnvFamily)
	}
	p, err := b(spec.Probe)
	if err != nil {
		return fusion.Probe{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	if _, c := p.Phi.Dims(); c != spec.ThetaDim {
		return fusion.Probe{}, fmt.Errorf("task %s: probe has %d features, theta_dim is %d", spec.ID, c, spec.ThetaDim)
	}
	if f.cache == nil {
		f.cache = map[string]fusion.Probe{}
	}
	f.cache[spec.ID] = p
	return p, nil
}
