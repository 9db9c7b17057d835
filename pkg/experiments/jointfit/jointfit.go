// Package jointfit is the studies' shared account of what a federation can
// learn from all clients' data at once: the pooled oracle (one θ fitted to
// every client's demonstrations, each under its own model: the ceiling of
// every fusion and what a federated joint fit reaches), personalized
// rewards around a fused θ, and the identifiability diagnostics of the
// tabular models (how much curvature the joint likelihood has that no
// single client's has). The grid-world and control studies call it alike;
// the maths is irl's (Pooled, Personalize, ChooseProx) and jointopt's.
package jointfit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/jointopt"
	"github.com/fedirl/fedirl/pkg/mdp"
)

// Column names of the rows this package adds to the studies' tables.
const (
	// ColPooled is the pooled oracle's θ.
	ColPooled = "pooled"
	// ColPersonalized is each client's personalized θ_i^p (in distribution only).
	ColPersonalized = "personalized"
)

// Config is the pooled and personalized fits of a study; the zero value
// turns both off, DefaultConfig is the studies' default.
type Config struct {
	// Pooled adds the pooled oracle's column.
	Pooled bool `yaml:"pooled" json:"pooled"`
	// Personalized adds each client's personalized θ around the pooled θ.
	Personalized bool `yaml:"personalized" json:"personalized"`
	// ProxCandidates are the declared c of the personalization weights
	// μ = c·s (irl.ProxChoice.Scale), chosen on the client's held-out
	// demonstrations; ProxCenter adds the pooled θ itself (μ = ∞).
	ProxCandidates []float64 `yaml:"prox_candidates" json:"prox_candidates"`
	ProxCenter     bool      `yaml:"prox_center" json:"prox_center"`
	// ValidationFraction is the share of a client's demonstrations (the
	// last ones) held out to choose μ; the chosen μ is then refitted on all.
	ValidationFraction float64 `yaml:"validation_fraction" json:"validation_fraction"`
	// GradTol and MaxRounds bound the Newton fits (jointopt.Config).
	GradTol   float64 `yaml:"grad_tol" json:"grad_tol"`
	MaxRounds int     `yaml:"max_rounds" json:"max_rounds"`
}

// DefaultConfig returns the studies' default: both on, c ∈ {0, 0.01, 0.1,
// 1, 10, 100} and the pooled θ itself, a fifth of the demonstrations held out, ‖∇‖ ≤ 1e-8 in at
// most 100 Newton rounds.
func DefaultConfig() Config {
	return Config{Pooled: true, Personalized: true, ProxCandidates: []float64{0, 0.01, 0.1, 1, 10, 100}, ProxCenter: true,
		ValidationFraction: 0.2, GradTol: 1e-8, MaxRounds: 100}
}

// Validate names the first setting out of range.
func (c Config) Validate() error {
	if c.Personalized && !c.Pooled {
		return errors.New("joint.personalized needs joint.pooled (the center of the personalized fits)")
	}
	if !c.Pooled {
		return nil
	}
	if _, err := c.opt().Resolve(); err != nil {
		return fmt.Errorf("joint: %w", err)
	}
	if !c.Personalized {
		return nil
	}
	if len(c.ProxCandidates) == 0 && !c.ProxCenter {
		return errors.New("joint.prox_candidates: empty and joint.prox_center false: no candidate to choose from")
	}
	for i, v := range c.ProxCandidates {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("joint.prox_candidates[%d] = %v, want finite and ≥ 0 (prox_center: true adds μ = ∞)", i, v)
		}
	}
	if !(c.ValidationFraction > 0 && c.ValidationFraction < 1) {
		return fmt.Errorf("joint.validation_fraction = %v, want in (0, 1)", c.ValidationFraction)
	}
	return nil
}

func (c Config) opt() jointopt.Config {
	return jointopt.Config{GradTol: c.GradTol, MaxRounds: c.MaxRounds}
}

// Client is one client's model, features, demonstrations, MaxEnt settings
// (temperature, L2, absorbing, solver) and weight α_i.
type Client struct {
	MDP    *mdp.MDP
	Phi    *mat.Dense
	Demos  []irl.Trajectory
	IRL    irl.Config
	Weight float64
}

// Identifiability is the curvature of the log-likelihoods at the pooled
// θ, without the L2 term: C_i = −∇²L_i − λI (1/τ times the soft policy's
// discounted feature covariance). λ_min(C_i) near 0 means client i's data
// leave a direction of θ unidentified; since λ_min is concave,
// λ_min(Σα_iC_i) ≥ Σα_iλ_min(C_i), and Gain = λ_min(ΣαC)/max_iλ_min(C_i) > 1
// says the federation pins down what no single client does (heterogeneous
// dynamics identify the reward, Rolland et al. 2022).
type Identifiability struct {
	JointMinEig float64   `json:"joint_min_eig"`
	JointMaxEig float64   `json:"joint_max_eig"`
	LocalMinEig []float64 `json:"local_min_eig"`
	LocalMaxEig []float64 `json:"local_max_eig"`
	// Gain is absent where no client's λ_min is positive (every client
	// alone leaves a direction unidentified).
	Gain *float64 `json:"gain,omitempty"`
}

// Pooled is the pooled oracle's fit.
type Pooled struct {
	Theta     []float64       `json:"theta"`
	Rounds    int             `json:"rounds"`
	Converged bool            `json:"converged"`
	GradNorm  float64         `json:"grad_norm"`
	Ident     Identifiability `json:"identifiability"`
}

// Personal is one client's personalized fit.
type Personal struct {
	Theta     []float64      `json:"theta"`
	Converged bool           `json:"converged"`
	Choice    irl.ProxChoice `json:"choice"`
}

func objective(cl Client, demos []irl.Trajectory) (*irl.Objective, error) {
	cfg := cl.IRL
	cfg.Solver.Tol = min(cfg.Solver.Tol, 1e-10)
	if cfg.Solver.Tol <= 0 {
		cfg.Solver.Tol = 1e-10
	}
	return irl.NewObjective(cl.MDP, cl.Phi, demos, cfg)
}

// FitPooled fits the pooled oracle to the clients and measures the
// identifiability at its θ.
func FitPooled(ctx context.Context, clients []Client, c Config) (Pooled, error) {
	objs := make([]*irl.Objective, len(clients))
	w := make([]float64, len(clients))
	for i, cl := range clients {
		o, err := objective(cl, cl.Demos)
		if err != nil {
			return Pooled{}, fmt.Errorf("client %d: %w", i, err)
		}
		defer o.Close()
		objs[i], w[i] = o, cl.Weight
	}
	s, err := irl.Pooled(ctx, objs, w, nil, c.opt())
	if err != nil {
		return Pooled{}, fmt.Errorf("pooled fit: %w", err)
	}
	p := Pooled{Theta: s.Theta, Rounds: s.Rounds, Converged: s.Converged(), GradNorm: s.GradNorms[len(s.GradNorms)-1]}
	d := len(s.Theta)
	joint := mat.NewSymDense(d, nil)
	for i, o := range objs {
		e := o.Evaluate(s.Theta, 1e-10)
		ci := curvature(e, d, clients[i].IRL.L2)
		lo, hi := eigRange(ci)
		p.Ident.LocalMinEig = append(p.Ident.LocalMinEig, lo)
		p.Ident.LocalMaxEig = append(p.Ident.LocalMaxEig, hi)
		joint.AddSym(joint, scaled(ci, w[i]))
	}
	p.Ident.JointMinEig, p.Ident.JointMaxEig = eigRange(joint)
	if m := slices.Max(p.Ident.LocalMinEig); m > 0 {
		g := p.Ident.JointMinEig / m
		p.Ident.Gain = &g
	}
	return p, nil
}

func curvature(e jointopt.Eval, d int, l2 float64) *mat.SymDense {
	c := mat.NewSymDense(d, nil)
	for i := range d {
		for j := i; j < d; j++ {
			v := -0.5 * (e.Hess[i*d+j] + e.Hess[j*d+i])
			if i == j {
				v -= l2
			}
			c.SetSym(i, j, v)
		}
	}
	return c
}

func scaled(a *mat.SymDense, w float64) *mat.SymDense {
	var s mat.SymDense
	s.ScaleSym(w, a)
	return &s
}

func eigRange(a *mat.SymDense) (lo, hi float64) {
	var es mat.EigenSym
	if !es.Factorize(a, false) {
		return math.NaN(), math.NaN()
	}
	v := es.Values(nil)
	return slices.Min(v), slices.Max(v)
}

// Personalize fits client cl's personalized θ around center: μ chosen on
// its last ValidationFraction of demonstrations (at least one, and one left
// to fit), then refitted on all of them.
func Personalize(ctx context.Context, cl Client, center []float64, c Config) (Personal, error) {
	n := len(cl.Demos)
	nv := int(math.Round(c.ValidationFraction * float64(n)))
	nv = max(1, min(nv, n-1))
	if n < 2 {
		return Personal{}, fmt.Errorf("personalization needs at least 2 demonstrations to hold one out, the client has %d", n)
	}
	fit, err := objective(cl, cl.Demos[:n-nv])
	if err != nil {
		return Personal{}, err
	}
	defer fit.Close()
	val, err := objective(cl, cl.Demos[n-nv:])
	if err != nil {
		return Personal{}, err
	}
	defer val.Close()
	ch, err := irl.ChooseProx(ctx, fit, val, center, c.ProxCandidates, c.ProxCenter, c.opt())
	if err != nil {
		return Personal{}, err
	}
	p := Personal{Choice: ch, Theta: slices.Clone(center), Converged: true}
	if ch.Center {
		return p, nil
	}
	all, err := objective(cl, cl.Demos)
	if err != nil {
		return Personal{}, err
	}
	defer all.Close()
	s, err := irl.Personalize(ctx, all, center, ch.Mu, c.opt())
	if err != nil {
		return Personal{}, err
	}
	p.Theta, p.Converged = s.Theta, s.Converged()
	return p, nil
}
