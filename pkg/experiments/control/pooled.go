package control

import (
	"context"
	"fmt"
	"slices"

	"github.com/fedirl/fedirl/pkg/experiments/jointfit"
	"github.com/fedirl/fedirl/pkg/experiments/report"
)

// The pooled oracle and the personalized rewards (jointfit): one unit per
// environment, lattice and seed fits the pooled θ to every training
// client's demonstrations, each under the client's own lattice model and
// MaxEnt settings (the local IRL units' problems, uniform weights as the
// fusions'), and each training client's personalized θ around it; the
// pooled θ is then evaluated like a fused one (every client, held-out
// ones included) and a personalized θ like the client's local one.

// Methods of the joint block.
const (
	MethodPooled       = jointfit.ColPooled
	MethodPersonalized = jointfit.ColPersonalized
)

// perClientMethod reports whether method m has one reward per training
// client (evaluated and scored on that client only).
func perClientMethod(m string) bool { return m == MethodLocal || m == MethodPersonalized }

// pooledVersion is part of a pooled unit's key: bump it when jointfit's
// computation of what the unit holds changes.
const pooledVersion = 1

type pooledSpec struct {
	Kind    string          `json:"kind"`
	Version int             `json:"version"`
	Pooled  int             `json:"pooled_version"`
	Local   []string        `json:"local"`
	Joint   jointfit.Config `json:"joint"`
}

// PooledFile is the content of a pooled unit.
type PooledFile struct {
	Env     string `json:"env"`
	Lattice string `json:"lattice"`
	Seed    uint64 `json:"seed"`
	// Theta is the pooled θ on the task's features (with irl.absorbing the
	// absorbing state's value folded into the bias, as the local units do).
	Theta  []float64       `json:"theta"`
	Pooled jointfit.Pooled `json:"pooled"`
	// Clients are the training clients, Personal their personalized fits
	// (θ folded likewise), in the same order.
	Clients  []int               `json:"clients"`
	Personal []jointfit.Personal `json:"personalized"`
}

func (s *Study) pooledUnit(env, lattice string, seed uint64) (unit, pooledSpec, []irlSpec, error) {
	sp := pooledSpec{Kind: "pooled", Version: unitVersion, Pooled: pooledVersion, Joint: s.cfg.Joint}
	var isps []irlSpec
	for _, c := range s.cfg.TrainingClients() {
		u, isp, err := s.latticeIRLUnit(env, lattice, c, seed)
		if err != nil {
			return unit{}, pooledSpec{}, nil, err
		}
		sp.Local = append(sp.Local, u.key)
		isps = append(isps, isp)
	}
	return unit{"pooled", fmt.Sprintf("%s-%s-s%d", env, lattice, seed), key(sp), ".json"}, sp, isps, nil
}

func (s *Study) runPooled(ctx context.Context, u unit, sp pooledSpec, isps []irlSpec, env, lattice string, seed uint64, workers int) error {
	var clients []jointfit.Client
	bias := -1
	for _, isp := range isps {
		g, m, phi, demos, cfg, d, err := s.irlProblem(ctx, isp, lattice, seed, workers)
		if err != nil {
			return err
		}
		cl := jointfit.Client{MDP: m, Phi: phi, Demos: demos, IRL: cfg, Weight: 1 / float64(len(isps))}
		if cfg.EmpiricalFeatures != nil {
			rbf, ns := isp.Probe.RBF, g.StateDim()
			cl.DemoFeatures = func(lo, hi int) []float64 { return demoStepFeaturesOf(rbf, d, ns, m.Gamma, demos, lo, hi) }
		}
		clients = append(clients, cl)
		if isp.IRL.Absorbing {
			if !isp.Probe.RBF.Bias {
				return fmt.Errorf("%s: irl.absorbing needs a bias feature to fold the absorbing state's value into", env)
			}
			bias = isp.Probe.RBF.Dim() - 1
		}
	}
	p, err := jointfit.FitPooled(ctx, clients, sp.Joint)
	if err != nil {
		return fmt.Errorf("%s %s seed %d: %w", env, lattice, seed, err)
	}
	f := PooledFile{Env: env, Lattice: lattice, Seed: seed, Theta: fold(p.Theta, bias), Pooled: p, Clients: s.cfg.TrainingClients()}
	if sp.Joint.Personalized {
		for i, cl := range clients {
			pc, err := jointfit.Personalize(ctx, cl, p.Theta, sp.Joint)
			if err != nil {
				return fmt.Errorf("%s %s seed %d client %d: %w", env, lattice, seed, f.Clients[i], err)
			}
			pc.Theta = fold(pc.Theta, bias)
			f.Personal = append(f.Personal, pc)
		}
	}
	return report.WriteJSON(u.path(s.units), f)
}

// fold returns θ on the task's features: with an absorbing feature (bias ≥
// 0) its value, the last entry, is subtracted from the bias and dropped
// (the same ranking of trajectories with a zero-valued terminal state, as
// runIRL folds a local fit's).
func fold(theta []float64, bias int) []float64 {
	if bias < 0 {
		return slices.Clone(theta)
	}
	out := slices.Clone(theta[:len(theta)-1])
	out[bias] -= theta[len(theta)-1]
	return out
}

// readTheta returns the θ that method m gives client (from the unit u
// that rewardUnit names): a personalized θ is the client's entry of its
// pooled unit, every other method's the unit's theta.
func (s *Study) readTheta(u unit, m string, client int) ([]float64, error) {
	if m != MethodPersonalized {
		var th struct {
			Theta []float64 `json:"theta"`
		}
		if err := readJSON(u.path(s.units), &th); err != nil {
			return nil, err
		}
		return th.Theta, nil
	}
	var f PooledFile
	if err := readJSON(u.path(s.units), &f); err != nil {
		return nil, err
	}
	i := slices.Index(f.Clients, client)
	if i < 0 || i >= len(f.Personal) {
		return nil, fmt.Errorf("%s: no personalized θ of client %d (clients %v)", u.path(s.units), client, f.Clients)
	}
	return f.Personal[i].Theta, nil
}
