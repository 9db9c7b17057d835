package tasks

import (
	"context"
	"fmt"
	"sync"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
)

// Fuser is the server's federation.Fuser for every registered family: it
// decodes the task's fusion.Options and fuses with fusion.FuseContext (any
// method of fusion's registry) on the family's probe, reporting each client's
// outlier score: the root mean square difference, over the probe's points,
// between its reward Φθ_i and the fused reward Φθ̄ (fusion.Output.Distances). Probes are built once per task and cached.
type Fuser struct {
	// OnFuse, if set, is called after every successful fusion with the task
	// id and the full output (a study reads σ, Z and the barycenter there).
	OnFuse func(taskID string, out fusion.Output)
	// Limits bounds the tasks Validate accepts and the probes Fuse builds
	// (zero fields: federation's defaults).
	Limits federation.Limits

	mu    sync.Mutex
	cache map[string]fusion.Probe
}

// NewFuser returns a Fuser.
func NewFuser() *Fuser { return &Fuser{} }

// Validate implements federation.Fuser: the family must be known, the irl
// and fusion sections valid and within f.Limits, and the probe within
// f.Limits (checked before it is built) and buildable with theta_dim
// features.
func (f *Fuser) Validate(spec federation.TaskSpec) error {
	_, _, err := ProbeWithin(spec, f.Limits)
	return err
}

// Fuse implements federation.Fuser.
func (f *Fuser) Fuse(ctx context.Context, spec federation.TaskSpec, thetas [][]float64, demoCounts []int) (federation.FuseOutput, error) {
	opt, err := fusion.DecodeOptions(spec.Fusion)
	if err != nil {
		return federation.FuseOutput{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	// Every method gets the probe: reward-space methods fuse on it, and every
	// client's outlier score is its reward's distance to the fused reward there.
	probe, err := f.probe(spec)
	if err != nil {
		return federation.FuseOutput{}, err
	}
	raw := opt.ClientWeights(demoCounts)
	alpha, err := fusion.Weights(raw, len(thetas))
	if err != nil {
		return federation.FuseOutput{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	out, err := fusion.FuseContext(ctx, probe, thetas, raw, opt)
	if err != nil {
		return federation.FuseOutput{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	if f.OnFuse != nil {
		f.OnFuse(spec.ID, out)
	}
	fo := federation.FuseOutput{Theta: out.Theta, Method: out.Method, Weights: alpha, OutlierScores: out.Distances}
	if b := out.Barycentric; b != nil {
		fo.MarginalError, fo.Iterations = b.MarginalError, b.Iterations
	}
	return fo, nil
}

func (f *Fuser) probe(spec federation.TaskSpec) (fusion.Probe, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.cache[spec.ID]; ok {
		return p, nil
	}
	p, _, err := ProbeWithin(spec, f.Limits)
	if err != nil {
		return fusion.Probe{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	if f.cache == nil {
		f.cache = map[string]fusion.Probe{}
	}
	f.cache[spec.ID] = p
	return p, nil
}
