package tasks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/jointopt"
	"github.com/fedirl/fedirl/pkg/mdp"
	"gonum.org/v1/gonum/mat"
)

// MaxEntLearner is the client's federation.Learner: MaxEnt IRL (pkg/irl) on the
// client's own MDP and private demonstrations, with the task's IRL
// hyperparameters. Only θ and summary numbers ever leave it.
type MaxEntLearner struct {
	MDP      *mdp.MDP
	Features *mat.Dense
	Demos    []irl.Trajectory
	// Solver configures the dynamic programming of every gradient step (a
	// numerical choice of the client, not a task setting: the solvers agree
	// to within their tolerance); the zero value is mdp's defaults.
	Solver mdp.Options
	// SubmitReward makes the learner a client with its own reward model:
	// it learns θ_c on its own Features (any number of columns, not the
	// task's Φ, which is not checked) and submits its reward Φ_c θ_c on the
	// task's probe support instead of θ (federation.LocalResult.Reward). The
	// task's family must be a ProbeModel (the lattice family) and its fusion
	// method one that takes rewards. The fused θ of a previous round is on
	// the task's features, not the client's, so it warm-starts nothing.
	SubmitReward bool

	mu        sync.Mutex
	jointPhi  *mat.Dense // Evaluate's features and configuration, for task jointTask
	jointCfg  irl.Config
	jointTask string
}

// LoadMaxEntLearner reads an MDP with its features (irl.LoadMDP: a JSON spec,
// or an .npz of sparse transitions) and demonstrations (irl.ReadTrajectoriesAny:
// JSON Lines, or an .npz with padded arrays or imitation's trajectory fields).
func LoadMaxEntLearner(mdpFile, demosFile string) (*MaxEntLearner, error) {
	m, phi, err := irl.LoadMDP(mdpFile)
	if err != nil {
		return nil, fmt.Errorf("client MDP: %w", err)
	}
	demos, err := irl.ReadTrajectoriesAny(demosFile, m)
	if err != nil {
		return nil, fmt.Errorf("client demonstrations: %w", err)
	}
	if len(demos) == 0 {
		return nil, fmt.Errorf("client demonstrations %s: no trajectories", demosFile)
	}
	return &MaxEntLearner{MDP: m, Features: phi, Demos: demos}, nil
}

// Learn implements Learner. For a family that is a FeatureChecker (the
// lattice family) the client's model and features are first checked against
// the task's probe, and θ is learned on the task's Φ.
func (l *MaxEntLearner) Learn(ctx context.Context, spec federation.TaskSpec, warmStart []float64) (federation.LocalResult, error) {
	if l.SubmitReward {
		return l.learnReward(ctx, spec)
	}
	phi, cfg, err := l.taskModel(spec)
	if err != nil {
		return federation.LocalResult{}, err
	}
	cfg.Theta0 = slices.Clone(warmStart)
	res, err := irl.MaxEnt(ctx, l.MDP, phi, l.Demos, cfg)
	if err != nil {
		return federation.LocalResult{}, fmt.Errorf("MaxEnt IRL: %w", err)
	}
	return federation.LocalResult{Theta: res.Theta, DemoCount: len(l.Demos), Iterations: res.Iterations, GradNorm: lastGradNorm(res),
		Converged: res.Converged, StopReason: res.StopReason}, nil
}

// taskModel returns the client's features on the task's Φ (checked
// against the task's probe for a FeatureChecker family) and the task's IRL
// configuration with the client's solver.
func (l *MaxEntLearner) taskModel(spec federation.TaskSpec) (*mat.Dense, irl.Config, error) {
	phi := l.Features
	if fam, err := Lookup(spec.EnvFamily); err == nil {
		if fc, ok := fam.(FeatureChecker); ok {
			if phi, err = fc.ClientFeatures(spec.Probe, l.MDP, l.Features); err != nil {
				return nil, irl.Config{}, fmt.Errorf("task %s: %w", spec.ID, err)
			}
		}
	}
	if _, d := phi.Dims(); d != spec.ThetaDim {
		return nil, irl.Config{}, fmt.Errorf("task %s wants theta_dim %d, the client's features have %d", spec.ID, spec.ThetaDim, d)
	}
	cfg, err := DecodeIRL(spec.IRL)
	if err != nil {
		return nil, irl.Config{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	cfg.Solver = l.Solver
	return phi, cfg, nil
}

// Evaluate implements federation.JointLearner: the client's MaxEnt
// objective (log-likelihood of its demonstrations under its own MDP minus
// the task's (λ/2)‖θ‖², irl.Objective) with its gradient and Hessian at
// theta, and its demonstration count. The features and configuration are
// resolved once per task; each evaluation starts its solves cold on a new
// objective, so it is a function of theta alone: a restarted client
// re-sends the same bits for a round it had answered (a duplicate), and the
// order in which θ are evaluated does not matter.
func (l *MaxEntLearner) Evaluate(ctx context.Context, spec federation.TaskSpec, theta []float64) (jointopt.Eval, int, error) {
	if err := ctx.Err(); err != nil {
		return jointopt.Eval{}, 0, err
	}
	if l.SubmitReward {
		return jointopt.Eval{}, 0, fmt.Errorf("task %s runs gradient rounds on the task's Φ; a client with its own reward model (--submit-reward) cannot evaluate them", spec.ID)
	}
	if len(theta) != spec.ThetaDim {
		return jointopt.Eval{}, 0, fmt.Errorf("task %s: θ has %d components, theta_dim %d", spec.ID, len(theta), spec.ThetaDim)
	}
	l.mu.Lock()
	if l.jointPhi == nil || l.jointTask != spec.ID {
		phi, cfg, err := l.taskModel(spec)
		if err != nil {
			l.mu.Unlock()
			return jointopt.Eval{}, 0, err
		}
		l.jointPhi, l.jointCfg, l.jointTask = phi, cfg, spec.ID
	}
	phi, cfg := l.jointPhi, l.jointCfg
	l.mu.Unlock()
	o, err := irl.NewObjective(l.MDP, phi, l.Demos, cfg)
	if err != nil {
		return jointopt.Eval{}, 0, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	defer o.Close()
	return o.Evaluate(theta, 0), len(l.Demos), nil
}

// LocalUpdate implements federation.JointUpdater for a joint task with
// update fedavg or fedprox: the task's local steps (fusion.LocalUpdate:
// E damped Newton steps on the client's objective, with the proximal
// term for FedProx) from theta, ending early at the task's grad_tol; it
// returns the θ reached, the objective's value and gradient at theta, and
// the demonstration count.
func (l *MaxEntLearner) LocalUpdate(ctx context.Context, spec federation.TaskSpec, theta []float64) ([]float64, jointopt.Eval, int, error) {
	opt, err := fusion.DecodeOptions(spec.Fusion)
	if err != nil {
		return nil, jointopt.Eval{}, 0, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	lu := opt.LocalUpdate()
	if lu == nil {
		return nil, jointopt.Eval{}, 0, fmt.Errorf("task %s: fusion %q with update %q takes no local steps", spec.ID, opt.MethodName(), opt.Update)
	}
	cfg, err := opt.JointConfig()
	if err != nil {
		return nil, jointopt.Eval{}, 0, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	term := func(th []float64) (jointopt.Eval, error) {
		e, _, err := l.Evaluate(ctx, spec, th)
		return e, err
	}
	u, first, err := lu.Solve(term, theta, cfg.GradTol)
	if err != nil {
		return nil, jointopt.Eval{}, 0, err
	}
	first.Hess = nil
	return u, first, len(l.Demos), nil
}

var (
	_ federation.JointLearner = (*MaxEntLearner)(nil)
	_ federation.JointUpdater = (*MaxEntLearner)(nil)
)

func lastGradNorm(res irl.Result) float64 {
	if n := len(res.GradNorm); n > 0 {
		return res.GradNorm[n-1]
	}
	return 0
}

// learnReward is Learn for SubmitReward: MaxEnt IRL on the client's own
// features, its reward evaluated on the probe's pairs.
func (l *MaxEntLearner) learnReward(ctx context.Context, spec federation.TaskSpec) (federation.LocalResult, error) {
	fam, err := Lookup(spec.EnvFamily)
	if err != nil {
		return federation.LocalResult{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	pm, ok := fam.(ProbeModel)
	if !ok {
		return federation.LocalResult{}, fmt.Errorf("task %s: family %s does not say where a client's own reward model meets its probe; submitting a reward needs a %s task", spec.ID, spec.EnvFamily, LatticeFamilyName)
	}
	pairs, err := pm.ProbePairs(spec.Probe, l.MDP)
	if err != nil {
		return federation.LocalResult{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	// The server would refuse the reward of a θ-only method: say so before learning.
	if opt, err := fusion.DecodeOptions(spec.Fusion); err != nil {
		return federation.LocalResult{}, fmt.Errorf("task %s: %w", spec.ID, err)
	} else if ok, _ := fusion.AcceptsRewards(opt.Method); !ok {
		return federation.LocalResult{}, fmt.Errorf("task %s fuses by %q, which combines θ on the task's features and takes no reward; submit θ on the task's Φ (without --submit-reward), or use a task whose method takes rewards (%s)",
			spec.ID, opt.MethodName(), strings.Join(fusion.RewardMethods(), ", "))
	}
	if r, _ := l.Features.Dims(); r != l.MDP.NumStates*l.MDP.NumActions {
		return federation.LocalResult{}, fmt.Errorf("client features: %d rows for %d×%d state–action pairs", r, l.MDP.NumStates, l.MDP.NumActions)
	}
	cfg, err := DecodeIRL(spec.IRL)
	if err != nil {
		return federation.LocalResult{}, fmt.Errorf("task %s: %w", spec.ID, err)
	}
	cfg.Solver = l.Solver
	res, err := irl.MaxEnt(ctx, l.MDP, l.Features, l.Demos, cfg)
	if err != nil {
		return federation.LocalResult{}, fmt.Errorf("MaxEnt IRL: %w", err)
	}
	r := features.Reward(nil, l.Features, res.Theta)[:pairs]
	return federation.LocalResult{Reward: r, DemoCount: len(l.Demos), Iterations: res.Iterations, GradNorm: lastGradNorm(res),
		Converged: res.Converged, StopReason: res.StopReason}, nil
}
