package experiments

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/ot"
)

// The study's federation step runs through federation.RunInProcess: the same
// Coordinator (validation, quorum, idempotent submissions, bbolt store) and
// RunClient as `fedirl server` and `fedirl client`, over the InProcess
// transport. One task per fusion method (mean, the configured barycenter,
// debiased) is run on one cell's clients; each client learns its θ_i once
// (studyClient caches it) and submits the same θ_i to every task.

// studyClient is one simulated client of a study cell: it implements
// federation.Learner by running the study's local MaxEnt IRL (Env.LocalIRL)
// on its own environment and demonstrations with its own iteration budget
// (weak clients of the ablation have a smaller one than the task's
// irl.iterations). The result is computed on the first Learn and returned
// by every later one, so a client learns once per cell whatever the number
// of tasks it takes part in.
type studyClient struct {
	env    *Env
	demos  []irl.Trajectory
	cfg    IRLConfig
	budget int
	// demoSteps is reported as the submission's demo_count: the study's
	// "demonstrations" weighting is proportional to demonstration steps.
	demoSteps int

	once sync.Once
	res  federation.LocalResult
	err  error
}

// Learn implements federation.Learner.
func (l *studyClient) Learn(ctx context.Context, spec federation.TaskSpec, warmStart []float64) (federation.LocalResult, error) {
	if warmStart != nil {
		return federation.LocalResult{}, fmt.Errorf("task %s: the grid-world study's clients learn from θ = 0, not from a warm start", spec.ID)
	}
	if _, d := l.env.Phi.Dims(); d != spec.ThetaDim {
		return federation.LocalResult{}, fmt.Errorf("task %s wants theta_dim %d, the client's features have %d", spec.ID, spec.ThetaDim, d)
	}
	l.once.Do(func() {
		res, err := l.env.LocalIRL(ctx, l.demos, l.cfg, l.budget)
		if err != nil {
			l.err = err
			return
		}
		g := 0.0
		if n := len(res.GradNorm); n > 0 {
			g = res.GradNorm[n-1]
		}
		l.res = federation.LocalResult{Theta: res.Theta, DemoCount: l.demoSteps, Iterations: res.Iterations, GradNorm: g}
	})
	if l.err != nil {
		return federation.LocalResult{}, l.err
	}
	r := l.res
	r.Theta = slices.Clone(r.Theta)
	return r, nil
}

// studyFuser is the coordinator's federation.Fuser in the study: fusion.Mean
// for method "mean" and fusion.Probe.Fuse on the study's own probe for
// "barycentric", with the options carried by the task (solver, ε, iteration
// counts, tolerance, σ) plus the configured map-back scale Z, which
// TaskSpec cannot express (federation.StandardFuser has no Z, rebuilds the
// probe from JSON and does not report σ and Z).
//
// Weights: the coordinator hands the fuser the round's unnormalized weights
// (nil for uniform, each client's demonstration steps for "demonstrations",
// which studyClient reports as its DemoCount) and pkg/fusion normalizes them
// once, exactly as fusing the study's weights directly would.
type studyFuser struct {
	probe fusion.Probe
	scale float64 // Z of the map back; 0 = Σ α_i Z_i

	mu   sync.Mutex
	diag map[string]FusionInfo // task id -> barycentric diagnostics
}

// Fuse implements federation.Fuser.
func (f *studyFuser) Fuse(ctx context.Context, spec federation.TaskSpec, thetas [][]float64, weights []float64) (federation.FuseOutput, error) {
	switch spec.Fusion.Method {
	case "mean":
		th, err := fusion.Mean(thetas, weights)
		return federation.FuseOutput{Theta: th}, err
	case "barycentric":
		method, err := ot.ParseMethod(spec.Fusion.Solver)
		if err != nil {
			return federation.FuseOutput{}, fmt.Errorf("task %s: fusion.solver: %w", spec.ID, err)
		}
		opt := fusion.Options{Sigma: spec.Fusion.Sigma, Z: f.scale, Eps: spec.Fusion.Epsilon, Method: method,
			MaxIter: spec.Fusion.MaxIter, InnerIter: spec.Fusion.InnerIter, Tol: spec.Fusion.Tol}
		res, err := f.probe.Fuse(thetas, weights, opt)
		if err != nil {
			return federation.FuseOutput{}, err
		}
		f.mu.Lock()
		f.diag[spec.ID] = FusionInfo{res.Sigma, res.Z, res.MarginalError, res.Iterations}
		f.mu.Unlock()
		return federation.FuseOutput{Theta: res.Theta, MarginalError: res.MarginalError, Iterations: res.Iterations}, nil
	}
	return federation.FuseOutput{}, fmt.Errorf("task %s: unknown fusion method %q", spec.ID, spec.Fusion.Method)
}

// clientID names client i so that the coordinator, which lists a round's
// submissions in client-id order, fuses them in client index order.
func clientID(i int) string { return fmt.Sprintf("client-%06d", i) }

// fusionTask is the task spec of one fusion method of a cell.
func (c Config) fusionTask(id string, st *setup, fusionCfg federation.FusionConfig) (federation.TaskSpec, error) {
	probe, err := json.Marshal(st.probeSpec)
	if err != nil {
		return federation.TaskSpec{}, fmt.Errorf("encoding the probe spec: %w", err)
	}
	_, dim := st.probe.Phi.Dims()
	K := len(st.clients)
	if c.Barycenter.Weights == "demonstrations" {
		fusionCfg.Weighting = "demos"
	} else {
		fusionCfg.Weighting = "uniform"
	}
	return federation.TaskSpec{
		ID:        id,
		EnvFamily: "gridworld",
		Probe:     probe,
		ThetaDim:  dim,
		IRL: federation.IRLConfig{Iterations: c.IRL.IRLIterations, LearningRate: c.IRL.IRLLearningRate,
			L2: c.IRL.RewardRegularizationL2, Temperature: c.IRL.Temperature, GradTol: -1, Optimizer: c.IRL.Optimizer},
		Fusion:     fusionCfg,
		Quorum:     K,
		MinClients: K,
		Rounds:     1,
	}, nil
}

// barycentricConfig is the task fusion config of the study's barycenter with
// the given solver (Config.fusionOptions, without Z: see studyFuser).
func (c Config) barycentricConfig(method ot.Method) federation.FusionConfig {
	o := c.fusionOptions(method)
	return federation.FusionConfig{Method: "barycentric", Solver: method.String(), Epsilon: o.Eps,
		MaxIter: o.MaxIter, InnerIter: o.InnerIter, Tol: o.Tol, Sigma: o.Sigma}
}

// federate runs the cell's federation through federation.RunInProcess, one
// task per fusion method, and fills f.Local, f.Fused (Mean, Barycenter,
// Debiased and Expert), f.Bary and f.DebiasedInfo. name prefixes the task ids.
func (c Config) federate(ctx context.Context, name string, f *Fit, st *setup, clients []*studyClient) error {
	method, err := c.barycenterMethod()
	if err != nil {
		return err
	}
	fuser := &studyFuser{probe: st.probe, scale: c.Barycenter.Scale, diag: map[string]FusionInfo{}}
	local := make([]federation.LocalClient, len(clients))
	for i, cl := range clients {
		local[i] = federation.LocalClient{ID: clientID(i), Learner: cl}
	}
	tasks := []struct {
		m      Method
		fusion federation.FusionConfig
	}{
		{Mean, federation.FusionConfig{Method: "mean"}},
		{Barycenter, c.barycentricConfig(method)},
		{Debiased, c.barycentricConfig(ot.Debiased)},
	}
	for _, tk := range tasks {
		id := name + "-" + tk.m.String()
		spec, err := c.fusionTask(id, st, tk.fusion)
		if err != nil {
			return err
		}
		fused, reports, err := federation.RunInProcess(ctx, spec, local, federation.InProcessConfig{Fuser: fuser, NoSync: true})
		if err != nil {
			return fmt.Errorf("federation %s: %w", id, err)
		}
		if len(fused) != 1 || len(fused[0].Clients) != len(clients) {
			return fmt.Errorf("federation %s: want one round fused from %d clients, got %d rounds", id, len(clients), len(fused))
		}
		for i, cid := range fused[0].Clients {
			if cid != clientID(i) {
				return fmt.Errorf("federation %s: fused client %d is %s, want %s", id, i, cid, clientID(i))
			}
		}
		if f.Local == nil {
			for _, rep := range reports {
				f.Local = append(f.Local, rep.Rounds[0].Local.Theta)
			}
		}
		f.Fused[tk.m] = fused[0].Theta
		fuser.mu.Lock()
		info := fuser.diag[id] // σ and Z; the rest is the coordinator's provenance
		fuser.mu.Unlock()
		info.MarginalError, info.Iterations = fused[0].MarginalError, fused[0].Iterations
		switch tk.m {
		case Barycenter:
			f.Bary = info
		case Debiased:
			f.DebiasedInfo = info
		}
	}
	f.Fused[Expert] = append([]float64(nil), c.Expert.TrueReward...)
	return nil
}
