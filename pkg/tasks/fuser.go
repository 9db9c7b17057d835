package tasks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/jointopt"
)

// Fuser is the server's federation.Fuser for every registered family: it
// decodes the task's fusion.Options and fuses with fusion.FuseContext (any
// method of fusion's registry) on the family's probe, reporting each client's
// outlier score: the robust z-score of its reward on the probe against the
// median client's (fusion.Output.OutlierScores), with fusion.OutlierThreshold
// as the threshold the fused result warns above. Probes are built once per
// task and cached.
type Fuser struct {
	// OnFuse, if set, is called after every successful fusion with the task
	// id and the full output (a study reads σ, Z and the barycenter there).
	OnFuse func(taskID string, out fusion.Output)
	// Limits bounds the tasks Validate accepts and the probes Fuse builds
	// (zero fields: federation's defaults).
	Limits federation.Limits

	mu     sync.Mutex
	probes []cachedProbe // the last maxCachedProbes probes built, oldest first
}

// cachedProbe is a probe built from the JSON of one family's probe spec.
type cachedProbe struct {
	family string
	spec   string
	probe  fusion.Probe
}

// maxCachedProbes bounds the probes a Fuser keeps. Tasks that share a
// probe spec (every fusion method and seed of a study's environment, a
// server's rounds) share its Φ, whose build (an RBF per point and
// feature) cost more than the fusion on the control lattices; a few
// environments are in play at once.
const maxCachedProbes = 4

// NewFuser returns a Fuser.
func NewFuser() *Fuser { return &Fuser{} }

// Validate implements federation.Fuser: the family must be known, the irl
// and fusion sections valid and within f.Limits, and the probe within
// f.Limits (checked before it is built) and buildable with theta_dim
// features.
func (f *Fuser) Validate(spec federation.TaskSpec) error {
	_, err := f.checkedProbe(spec)
	return err
}

// Fuse implements federation.Fuser.
func (f *Fuser) Fuse(ctx context.Context, spec federation.TaskSpec, thetas [][]float64, demoCounts []int) (federation.FuseOutput, error) {
	return f.FuseRewards(ctx, spec, thetas, nil, demoCounts)
}

// RewardSupport implements federation.RewardFuser: the number of points of
// the task's probe (its lattice's or its scattered points'), when its fusion method takes rewards
// (fusion.AcceptsRewards); an error naming the method and the ones that do
// otherwise.
func (f *Fuser) RewardSupport(spec federation.TaskSpec) (int, error) {
	opt, err := fusion.DecodeOptions(spec.Fusion)
	if err != nil {
		return 0, err
	}
	if ok, err := fusion.AcceptsRewards(opt.Method); err != nil || !ok {
		return 0, fmt.Errorf("fusion method %q combines θ on the task's features and cannot fuse a reward (methods that can: %s)",
			opt.MethodName(), strings.Join(fusion.RewardMethods(), ", "))
	}
	probe, err := f.probe(spec)
	if err != nil {
		return 0, err
	}
	if probe.Phi == nil {
		return 0, fmt.Errorf("family %s fuses model weights and has no probe points to take a reward at", spec.EnvFamily)
	}
	return probe.Len(), nil
}

// FuseRewards implements federation.RewardFuser with
// fusion.FuseContributions: rewards[i], when non-nil, is client i's reward
// on the probe and thetas[i] is then nil; rewards nil is Fuse. The output's
// Reward is the fused reward on the probe (when some client sent one) and
// Theta its least-squares fit on the task's Φ.
func (f *Fuser) FuseRewards(ctx context.Context, spec federation.TaskSpec, thetas, rewards [][]float64, demoCounts []int) (federation.FuseOutput, error) {
	opt, err := fusion.DecodeOptions(spec.Fusion)
	if err != nil {
		return federation.FuseOutput{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	// Every method gets the probe: reward-space methods fuse on it, and every
	// client's outlier score is computed from its reward there.
	probe, err := f.probe(spec)
	if err != nil {
		return federation.FuseOutput{}, err
	}
	raw := opt.ClientWeights(demoCounts)
	alpha, err := fusion.Weights(raw, len(thetas))
	if err != nil {
		return federation.FuseOutput{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	cs := make([]fusion.Contribution, len(thetas))
	for i, th := range thetas {
		cs[i].Theta = th
		if rewards != nil && rewards[i] != nil {
			cs[i] = fusion.Contribution{Reward: rewards[i]}
		}
	}
	out, err := fusion.FuseContributions(ctx, probe, cs, raw, opt)
	if err != nil {
		return federation.FuseOutput{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	if f.OnFuse != nil {
		f.OnFuse(spec.ID, out)
	}
	fo := federation.FuseOutput{Theta: out.Theta, Method: out.Method, Weights: alpha,
		OutlierScores: out.OutlierScores, OutlierThreshold: fusion.OutlierThreshold}
	if b := out.Barycentric; b != nil {
		fo.MarginalError, fo.Iterations = b.MarginalError, b.Iterations
	}
	if rewards != nil && out.Reward != nil {
		fo.Reward = out.Reward.Reward
	}
	return fo, nil
}

// probe is checkedProbe with the task's id in its error.
func (f *Fuser) probe(spec federation.TaskSpec) (fusion.Probe, error) {
	p, err := f.checkedProbe(spec)
	if err != nil {
		return fusion.Probe{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	return p, nil
}

// checkedProbe checks spec as ProbeWithin does and returns its probe, built
// once per family and probe JSON among the last maxCachedProbes.
func (f *Fuser) checkedProbe(spec federation.TaskSpec) (fusion.Probe, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, _, err := probeWithin(spec, f.Limits, func(fam Family) (fusion.Probe, error) {
		for _, c := range f.probes {
			if c.family == spec.EnvFamily && c.spec == string(spec.Probe) {
				return c.probe, nil
			}
		}
		p, err := fam.Probe(spec.Probe)
		if err != nil {
			return p, err
		}
		if len(f.probes) == maxCachedProbes {
			f.probes = slices.Delete(f.probes, 0, 1)
		}
		f.probes = append(f.probes, cachedProbe{spec.EnvFamily, string(spec.Probe), p})
		return p, nil
	})
	return p, err
}

// JointConfig implements federation.JointFuser: a task whose fusion method
// runs in gradient/Hessian rounds (fusion.IsRoundMethod: "joint") has the
// optimizer configuration of its fusion options (grad_tol, max_rounds).
func (f *Fuser) JointConfig(spec federation.TaskSpec) (jointopt.Config, bool, error) {
	opt, err := fusion.DecodeOptions(spec.Fusion)
	if err != nil {
		return jointopt.Config{}, false, err
	}
	if !fusion.IsRoundMethod(opt.Method) {
		return jointopt.Config{}, false, nil
	}
	cfg, err := opt.JointConfig()
	return cfg, true, err
}

// JointUpdates implements federation.JointFuser: a joint task with update
// fedavg or fedprox (fusion.Options.LocalUpdate).
func (f *Fuser) JointUpdates(spec federation.TaskSpec) bool {
	opt, err := fusion.DecodeOptions(spec.Fusion)
	return err == nil && opt.LocalUpdate() != nil
}

// JointStep implements federation.JointFuser with the registry's combining
// step (fusion.JointStep for Newton rounds, fusion.UpdateStep with the
// clients' local updates), weighting the clients as every other method
// does (fusion.Options.JointWeights: uniform, or demos with its cap).
func (f *Fuser) JointStep(_ context.Context, spec federation.TaskSpec, s *jointopt.State, evals []jointopt.Eval, updates [][]float64, demoCounts []int) ([]float64, jointopt.Eval, error) {
	opt, err := fusion.DecodeOptions(spec.Fusion)
	if err != nil {
		return nil, jointopt.Eval{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	alpha, err := opt.JointWeights(demoCounts)
	if err != nil {
		return nil, jointopt.Eval{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	var sum jointopt.Eval
	if updates != nil {
		sum, err = fusion.UpdateStep(s, evals, updates, alpha)
	} else {
		sum, err = fusion.JointStep(s, evals, alpha)
	}
	if err != nil {
		return nil, jointopt.Eval{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	return alpha, sum, nil
}

var _ federation.JointFuser = (*Fuser)(nil)
