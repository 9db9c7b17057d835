package control

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/fedirl/fedirl/pkg/experiments/jointfit"

	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/jointopt"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/tasks"
	"gonum.org/v1/gonum/mat"
)

// Method joint (fusion.MethodJoint) in the control study: the training
// clients' summed MaxEnt likelihood maximized by the federation's
// gradient/Hessian rounds (federation.RunInProcess, the coordinator of
// `fedirl server`), each client answering every round from its own
// lattice model and demonstrations (the local IRL unit's problem). It is
// the federated twin of the pooled unit; a fusion unit holds its θ, folded
// like the local fits' with an absorbing feature.

// jointLearner is one training client of a joint task.
type jointLearner struct {
	m     *mdp.MDP
	phi   *mat.Dense
	demos []irl.Trajectory
	cfg   irl.Config
}

// Learn implements federation.Learner: a joint task asks for evaluations only.
func (l *jointLearner) Learn(context.Context, federation.TaskSpec, []float64) (federation.LocalResult, error) {
	return federation.LocalResult{}, fmt.Errorf("control: a joint task's client learns no θ of its own")
}

// Evaluate implements federation.JointLearner: the client's objective
// built anew at θ (a function of θ alone), with its Hessian at the
// federated default residual; the count is the client's episodes.
func (l *jointLearner) Evaluate(ctx context.Context, spec federation.TaskSpec, theta []float64) (jointopt.Eval, int, error) {
	if err := ctx.Err(); err != nil {
		return jointopt.Eval{}, 0, err
	}
	o, err := irl.NewObjective(l.m, l.phi, l.demos, l.cfg)
	if err != nil {
		return jointopt.Eval{}, 0, err
	}
	defer o.Close()
	if len(theta) != o.Dim() {
		return jointopt.Eval{}, 0, fmt.Errorf("task %s: θ has %d entries, the client's objective %d", spec.ID, len(theta), o.Dim())
	}
	return o.Evaluate(theta, 0), len(l.demos), nil
}

// jointClients returns the training clients of (env, lattice, seed) as
// joint learners, their objectives' dimension, the bias column an
// absorbing feature folds into (−1 without one) and the first client's
// MaxEnt settings (the task's irl section).
func (s *Study) jointClients(ctx context.Context, env, lattice string, seed uint64) ([]federation.LocalClient, int, int, irl.Config, error) {
	var out []federation.LocalClient
	var first irl.Config
	dim, bias := 0, -1
	for i, c := range s.cfg.TrainingClients() {
		_, isp, err := s.latticeIRLUnit(env, lattice, c, seed)
		if err != nil {
			return nil, 0, 0, first, err
		}
		_, m, phi, demos, cfg, _, err := s.irlProblem(ctx, isp, lattice, seed, 1)
		if err != nil {
			return nil, 0, 0, first, err
		}
		cfg = jointfit.TightSolver(cfg)
		_, dim = phi.Dims()
		if isp.IRL.Absorbing {
			if !isp.Probe.RBF.Bias {
				return nil, 0, 0, first, fmt.Errorf("%s: irl.absorbing needs a bias feature to fold the absorbing state's value into", env)
			}
			bias, dim = isp.Probe.RBF.Dim()-1, dim+1
		}
		if i == 0 {
			first = cfg
		}
		out = append(out, federation.LocalClient{ID: fmt.Sprintf("client-%06d", i), Learner: &jointLearner{m, phi, demos, cfg}})
	}
	return out, dim, bias, first, nil
}

func (s *Study) runJoint(ctx context.Context, u unit, sp fusionSpec, env, lattice string, seed uint64) error {
	if sp.Privacy != nil || sp.Attack != nil {
		return fmt.Errorf("fusion %s: method joint runs without privacy and attacks in the control study", u.name)
	}
	clients, dim, bias, icfg, err := s.jointClients(ctx, env, lattice, seed)
	if err != nil {
		return err
	}
	probe, err := json.Marshal(sp.Probe)
	if err != nil {
		return err
	}
	spec := federation.TaskSpec{ID: u.name, EnvFamily: tasks.Control{}.Name(), Probe: probe, ThetaDim: dim,
		Quorum: len(clients), MinClients: len(clients)}
	if spec.Fusion, err = tasks.EncodeFusion(sp.Fusion); err != nil {
		return err
	}
	icfg.EmpiricalFeatures, icfg.Theta0 = nil, nil // the clients' own; the section says temperature, L2 and absorbing
	if spec.IRL, err = tasks.EncodeIRL(icfg); err != nil {
		return err
	}
	fused, _, err := federation.RunInProcess(ctx, spec, clients, federation.InProcessConfig{Fuser: s.fuser()})
	if err != nil {
		return fmt.Errorf("federation %s: %w", u.name, err)
	}
	last := fused[len(fused)-1]
	if last.Joint == nil || len(last.Clients) != len(clients) {
		return fmt.Errorf("federation %s: the last of %d rounds is no joint round of every client", u.name, len(fused))
	}
	return report.WriteJSON(u.path(s.units), FusionFile{Env: env, Lattice: lattice, Seed: seed, Method: fusion.MethodJoint,
		Theta: fold(last.Theta, bias), Iterations: len(fused), JointReason: last.Joint.Reason})
}
