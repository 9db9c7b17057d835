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
	// HessianRtol is the Hessians' column-solve residual in the fits
	// (irl.Objective.SetHessianRtol; convergence is judged on the
	// gradient, which it does not touch).
	HessianRtol float64 `yaml:"hessian_rtol" json:"hessian_rtol"`
}

// DefaultConfig returns the studies' default: both on, c ∈ {0, 1} and the
// pooled θ itself (each candidate costs a Newton fit per client on a large
// lattice), a fifth of the demonstrations held out,
// ‖∇‖ ≤ 1e-8 in at most 100 Newton rounds, Hessians to a residual of 1e-3.
func DefaultConfig() Config {
	return Config{Pooled: true, Personalized: true, ProxCandidates: []float64{0, 1}, ProxCenter: true,
		ValidationFraction: 0.2, GradTol: 1e-8, MaxRounds: 100, HessianRtol: 1e-3}
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
	if !(c.HessianRtol >= 0 && c.HessianRtol < 1) {
		return fmt.Errorf("joint.hessian_rtol = %v, want in [0, 1) (0: irl.JointHessianRtol)", c.HessianRtol)
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
	// DemoFeatures, set where IRL.EmpiricalFeatures is (features of the
	// observed step), returns μ_D of the demonstrations lo..hi−1, so a
	// personalization's held-out split has its own.
	DemoFeatures func(lo, hi int) []float64
}

// Identifiability is the curvature of the log-likelihoods at the pooled
// θ, without the L2 term: C_i = −∇²L_i − λI (1/τ times the soft policy's
// discounted feature covariance). Directions no data can identify (a
// constant added to every reward, where the features span it) are null
// for every C_i; so the joint curvature ΣαC_i is read on its range R (its
// eigenvectors above identTol = 10⁻⁵ of its largest eigenvalue), whose dimension is
// JointRank. There JointMinEig is its smallest eigenvalue and
// LocalMinEig[i] that of client i's C_i restricted to R: near 0 means
// client i alone leaves a direction of R unidentified. λ_min is concave,
// so JointMinEig ≥ Σα_i LocalMinEig[i]; Gain = JointMinEig / max_i
// LocalMinEig[i] > 1 says the federation pins down what no single client
// does (heterogeneous dynamics identify the reward, Rolland et al. 2022).
// LocalRank[i] is C_i's numerical rank at the same tolerance.
type Identifiability struct {
	Dim         int       `json:"dim"`
	JointRank   int       `json:"joint_rank"`
	LocalRank   []int     `json:"local_rank"`
	JointMinEig float64   `json:"joint_min_eig"`
	JointMaxEig float64   `json:"joint_max_eig"`
	LocalMinEig []float64 `json:"local_min_eig"`
	// Gain is absent where no client's restricted λ_min is positive.
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
	// Skipped says why no μ was chosen (a client with one demonstration
	// keeps the fused θ); empty when one was.
	Skipped string `json:"skipped,omitempty"`
}

// JointSolverTol is the value solves' tolerance of every joint-likelihood
// evaluation: the Newton rounds judge convergence on the summed gradient,
// which is only as exact as the solves behind it.
const JointSolverTol = 1e-10

// TightSolver returns cfg with its value solves at most JointSolverTol
// (the pooled fits, personalization and a study's joint clients alike).
func TightSolver(cfg irl.Config) irl.Config {
	if cfg.Solver.Tol <= 0 || cfg.Solver.Tol > JointSolverTol {
		cfg.Solver.Tol = JointSolverTol
	}
	return cfg
}

func objective(cl Client, c Config, lo, hi int) (*irl.Objective, error) {
	cfg := cl.IRL
	if cfg.EmpiricalFeatures != nil && (lo > 0 || hi < len(cl.Demos)) {
		if cl.DemoFeatures == nil {
			return nil, errors.New("jointfit: a split of demonstrations whose μ_D is given (features of the observed step) needs Client.DemoFeatures")
		}
		cfg.EmpiricalFeatures = cl.DemoFeatures(lo, hi)
	}
	demos := cl.Demos[lo:hi]
	cfg = TightSolver(cfg)
	o, err := irl.NewObjective(cl.MDP, cl.Phi, demos, cfg)
	if err != nil {
		return nil, err
	}
	o.SetHessianRtol(c.HessianRtol)
	return o, nil
}

// FitPooled fits the pooled oracle to the clients and measures the
// identifiability at its θ.
func FitPooled(ctx context.Context, clients []Client, c Config) (Pooled, error) {
	objs := make([]*irl.Objective, len(clients))
	w := make([]float64, len(clients))
	for i, cl := range clients {
		o, err := objective(cl, c, 0, len(cl.Demos))
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
	cs := make([]*mat.SymDense, len(objs))
	for i, o := range objs {
		cs[i] = curvature(o.Evaluate(s.Theta, identRtol), d, clients[i].IRL.L2)
		joint.AddSym(joint, scaled(cs[i], w[i]))
	}
	p.Ident = identifiability(joint, cs)
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

// identRtol is the Hessians' column-solve residual of the identifiability
// diagnostics, and identTol the relative eigenvalue (of the joint
// curvature's largest) below which a direction counts as unidentified: a
// relative error ε in C_i moves its eigenvalues by at most about ε‖C_i‖,
// so directions are counted only ten times above the solves' residual.
const (
	identRtol = 1e-6
	identTol  = 1e-5
)

func identifiability(joint *mat.SymDense, cs []*mat.SymDense) Identifiability {
	d := joint.SymmetricDim()
	id := Identifiability{Dim: d, JointMinEig: math.NaN(), JointMaxEig: math.NaN()}
	var es mat.EigenSym
	if !es.Factorize(joint, true) {
		return id
	}
	vals := es.Values(nil)
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	top := slices.Max(vals)
	id.JointMaxEig = top
	var keep []int
	for j, v := range vals {
		if v > identTol*top {
			keep = append(keep, j)
		}
	}
	id.JointRank = len(keep)
	if len(keep) == 0 {
		return id
	}
	u := mat.NewDense(d, len(keep), nil)
	for c, j := range keep {
		for i := range d {
			u.Set(i, c, vecs.At(i, j))
		}
	}
	restricted := func(a *mat.SymDense) float64 {
		var m mat.Dense
		m.Product(u.T(), a, u)
		r := len(keep)
		sym := mat.NewSymDense(r, nil)
		for i := range r {
			for j := i; j < r; j++ {
				sym.SetSym(i, j, 0.5*(m.At(i, j)+m.At(j, i)))
			}
		}
		var e mat.EigenSym
		if !e.Factorize(sym, false) {
			return math.NaN()
		}
		return slices.Min(e.Values(nil))
	}
	id.JointMinEig = restricted(joint)
	best := math.Inf(-1)
	for _, c := range cs {
		lo := restricted(c)
		id.LocalMinEig = append(id.LocalMinEig, lo)
		best = max(best, lo)
		var e mat.EigenSym
		rank := 0
		if e.Factorize(c, false) {
			for _, v := range e.Values(nil) {
				if v > identTol*top {
					rank++
				}
			}
		}
		id.LocalRank = append(id.LocalRank, rank)
	}
	if best > 0 {
		g := id.JointMinEig / best
		id.Gain = &g
	}
	return id
}

// Personalize fits client cl's personalized θ around center: μ chosen on
// its last ValidationFraction of demonstrations (at least one, and one left
// to fit), then refitted on all of them. A client with a single
// demonstration has none to hold out: it keeps center, and Skipped says so.
func Personalize(ctx context.Context, cl Client, center []float64, c Config) (Personal, error) {
	n := len(cl.Demos)
	if n < 2 {
		// No demonstration to hold out: μ cannot be chosen, and the
		// client keeps the fused θ (said in the result, never silently).
		return Personal{Theta: slices.Clone(center), Converged: true,
			Choice:  irl.ProxChoice{Center: true, Chosen: -1},
			Skipped: fmt.Sprintf("%d demonstration: none to hold out to choose μ; the pooled θ", n)}, nil
	}
	nv := int(math.Round(c.ValidationFraction * float64(n)))
	nv = max(1, min(nv, n-1))
	fit, err := objective(cl, c, 0, n-nv)
	if err != nil {
		return Personal{}, err
	}
	defer fit.Close()
	val, err := objective(cl, c, n-nv, n)
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
	all, err := objective(cl, c, 0, n)
	if err != nil {
		return Personal{}, err
	}
	defer all.Close()
	s, err := irl.PersonalizeFrom(ctx, all, center, ch.Mu, ch.Fit, c.opt())
	if err != nil {
		return Personal{}, err
	}
	p.Theta, p.Converged = s.Theta, s.Converged()
	return p, nil
}
