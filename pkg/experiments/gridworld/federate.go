package gridworld

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/jointopt"
	"github.com/fedirl/fedirl/pkg/privacy"
	"github.com/fedirl/fedirl/pkg/tasks"
	"gonum.org/v1/gonum/floats"
)

// The study's federation step runs through federation.RunInProcess: the same
// Coordinator (validation, quorum, idempotent submissions, bbolt store) and
// RunClient as `fedirl server` and `fedirl client`, over the InProcess
// transport. One task per configured fusion method (fusion_methods) is run on
// one cell's clients; each client learns its θ_i once
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
	theta0 []float64 // starting θ of the local IRL; nil means zeros
	noise  []float64 // added to the learned θ before it is sent; nil means none
	// send, when set, replaces the θ sent by send(learned θ): a poisoning
	// client's attack (poisoning.go).
	send func([]float64) []float64
	// demoSteps is reported as the submission's demo_count: the study's
	// "demonstrations" weighting is proportional to demonstration steps.
	demoSteps int

	once sync.Once
	res  federation.LocalResult
	diag LocalDiag
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
		res, err := l.env.LocalIRL(ctx, l.demos, l.cfg, l.budget, l.theta0)
		if err != nil {
			l.err = err
			return
		}
		g := 0.0
		if n := len(res.GradNorm); n > 0 {
			g = res.GradNorm[n-1]
		}
		sent := slices.Clone(res.Theta)
		if l.noise != nil {
			floats.Add(sent, l.noise)
		}
		if l.send != nil {
			sent = l.send(sent)
		}
		l.res = federation.LocalResult{Theta: sent, DemoCount: l.demoSteps, Iterations: res.Iterations, GradNorm: g,
			Converged: res.Converged, StopReason: res.StopReason}
		gap := make([]float64, len(res.EmpiricalFeatures))
		floats.SubTo(gap, res.EmpiricalFeatures, res.ExpectedFeatures)
		l.diag = LocalDiag{Iterations: res.Iterations, GradNorm: g, FeatureGapAbs: floats.Norm(gap, 2), Norm: floats.Norm(sent, 2)}
		if n := floats.Norm(res.EmpiricalFeatures, 2); n > 0 {
			l.diag.FeatureGap = l.diag.FeatureGapAbs / n
		}
	})
	if l.err != nil {
		return federation.LocalResult{}, l.err
	}
	r := l.res
	r.Theta = slices.Clone(r.Theta)
	return r, nil
}

// clientID names client i so that the coordinator, which lists a round's
// submissions in client-id order, fuses them in client index order.
func clientID(i int) string { return fmt.Sprintf("client-%06d", i) }

// fusionTask is the task spec of one fusion method of a cell: the family
// "gridworld" with the cell's probe and the given fusion options (σ, Z, ε,
// solver schedule and weighting, all carried by the task as fusion.Options).
func (c Config) fusionTask(id string, st *setup, opt fusion.Options) (federation.TaskSpec, error) {
	probe, err := json.Marshal(st.probeSpec)
	if err != nil {
		return federation.TaskSpec{}, fmt.Errorf("encoding the probe spec: %w", err)
	}
	_, dim := st.probe.Phi.Dims()
	K := len(st.clients)
	opt = c.weighting(opt)
	spec := federation.TaskSpec{ID: id, EnvFamily: tasks.GridWorld{}.Name(), Probe: probe, ThetaDim: dim,
		Quorum: K, MinClients: K, Rounds: 1}
	if opt.MethodName() == fusion.MethodJoint {
		spec.Rounds = 0 // a joint task's rounds are its max_rounds
	}
	switch {
	case c.Privacy.central() && opt.MethodName() == fusion.MethodMean:
		// The server clips the θ_i it receives in clear and noises the mean.
		spec.CentralPrivacy = c.Privacy.centralParams()
	case c.Privacy.enabled():
		// The server checks every client's declaration against this; the
		// task sets the study's C (pre-declared from pilot fits).
		spec.Privacy = &privacy.Requirement{MaxEpsilon: c.Privacy.Epsilon, MaxDelta: c.Privacy.Delta, Clip: c.Privacy.Clip}
	}
	if spec.Fusion, err = tasks.EncodeFusion(opt); err != nil {
		return federation.TaskSpec{}, err
	}
	if spec.IRL, err = tasks.EncodeIRL(c.IRL.config(c.IRL.IRLIterations)); err != nil {
		return federation.TaskSpec{}, err
	}
	return spec, nil
}

// weighting returns opt with the study's client weighting: uniform, or
// under barycenter.weights: demonstrations proportional to demonstration
// steps (its clients are honest; α_i ∝ steps is what the key says), so it
// lifts the server's default cap (the median count) that bounds a
// self-declared count. The fusion tasks and the pooled fit share it.
func (c Config) weighting(opt fusion.Options) fusion.Options {
	opt.Weighting = fusion.WeightingUniform
	if c.Barycenter.Weights == "demonstrations" {
		capv := studyDemoCap
		opt.Weighting, opt.DemoCap = fusion.WeightingDemos, &capv
	}
	return opt
}

// studyDemoCap is the demo_cap of the study's "demonstrations" weighting: no
// cap on the honest clients' step counts.
const studyDemoCap = 1e9

// federate runs the cell's federation through federation.RunInProcess, one
// task per configured fusion method (Config.FusionMethods), and fills
// f.Local, f.Sent (with privacy), f.Fused (every method and ColExpert),
// f.Info (reward-space methods) and f.Directions. name prefixes the task ids.
// With privacy, client i's noise comes from the stream (f.Seed, f.GridSize,
// noisePurpose, i), restarted for every task, so every fusion receives the
// same noisy θ_i (one release, and a paired comparison).
func (c Config) federate(ctx context.Context, name string, f *Fit, st *setup, clients []*studyClient, noisePurpose int) error {
	var mu sync.Mutex
	diag := map[string]FusionInfo{}   // task id -> σ and Z of its reward-space fusion
	measure := map[string][]float64{} // task id -> the combined measure p̄
	fuser := tasks.NewFuser()
	fuser.OnFuse = func(id string, out fusion.Output) {
		if r := out.Reward; r != nil {
			mu.Lock()
			diag[id] = FusionInfo{r.Sigma, r.Z, r.MarginalError, r.Iterations}
			measure[id] = r.Barycenter
			mu.Unlock()
		}
	}
	local := make([]federation.LocalClient, len(clients))
	for i, cl := range clients {
		local[i] = federation.LocalClient{ID: clientID(i), Learner: cl}
	}
	f.Fused, f.Info, f.OutlierScores = map[string][]float64{}, map[string]FusionInfo{}, map[string][]float64{}
	for _, col := range c.methods() {
		opt, err := c.columnOptions(col)
		if err != nil {
			return err
		}
		id := name + "-" + strings.ReplaceAll(col, "/", "-")
		spec, err := c.fusionTask(id, st, opt)
		if err != nil {
			return err
		}
		run := federation.InProcessConfig{Fuser: fuser}
		localDP := c.Privacy.enabled() && spec.CentralPrivacy == nil
		if localDP {
			params := c.Privacy.params()
			if opt.MethodName() == fusion.MethodJoint {
				// one release per round, composed over the task's round cap
				params.Rounds = opt.MaxRounds
				if params.Rounds == 0 {
					params.Rounds = jointopt.DefaultMaxRounds
				}
			}
			run.Privacy = func(i int) *federation.ClientPrivacy {
				return &federation.ClientPrivacy{Params: params, Noise: stream(f.Seed, f.GridSize, noisePurpose, i)}
			}
		} else if spec.CentralPrivacy != nil {
			// The server's stream: index K, after the clients' 0..K-1.
			run.CentralNoise = stream(f.Seed, f.GridSize, noisePurpose, len(clients))
		}
		fused, reports, err := federation.RunInProcess(ctx, spec, local, run)
		if err != nil {
			return fmt.Errorf("federation %s: %w", id, err)
		}
		if opt.MethodName() == fusion.MethodJoint {
			if err := c.jointResult(f, col, id, fused, clients); err != nil {
				return err
			}
			continue
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
		if localDP && f.Sent == nil {
			for _, rep := range reports {
				f.Sent = append(f.Sent, rep.Rounds[0].Sent)
			}
		} else if localDP {
			for i, rep := range reports {
				if !slices.Equal(rep.Rounds[0].Sent, f.Sent[i]) {
					return fmt.Errorf("federation %s: client %d sent %v, to the first task %v: the noise must be the same release", id, i, rep.Rounds[0].Sent, f.Sent[i])
				}
			}
		}
		f.Fused[col] = fused[0].Theta
		f.OutlierScores[col] = fused[0].OutlierScores
		mu.Lock()
		info, ok := diag[id] // σ and Z; the rest is the coordinator's provenance
		p := measure[id]
		mu.Unlock()
		if ok {
			info.MarginalError, info.Iterations = fused[0].MarginalError, fused[0].Iterations
			f.Info[col] = info
		}
		if col == fusion.MethodBarycenter {
			f.baryMeasure = p
		}
	}
	f.Fused[ColExpert] = append([]float64(nil), c.Expert.TrueReward...)
	f.LocalIRL = make([]LocalDiag, len(clients))
	for i, cl := range clients {
		f.LocalIRL[i] = cl.diag
		f.LocalIRL[i].AngleToTrue = angle(f.Local[i], c.Expert.TrueReward)
	}
	f.Directions = map[string]Direction{}
	for _, m := range c.methods() {
		f.Directions[m] = Direction{Norm: floats.Norm(f.Fused[m], 2),
			AngleToTrue: angle(f.Fused[m], c.Expert.TrueReward), AngleToMean: angle(f.Fused[m], f.Fused[fusion.MethodMean])}
	}
	return nil
}
