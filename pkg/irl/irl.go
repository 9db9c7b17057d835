// Package irl implements maximum-entropy inverse reinforcement learning
// (MaxEnt IRL) with a linear reward R_θ(s,a) = θᵀφ(s,a) on a tabular
// mdp.MDP, as run locally by each client in the paper (§Client-side
// Learning), together with the file formats of its inputs, the EPIC
// distance between two rewards on an MDP (EPIC, EPICTransitions), and its
// sample-based estimate for rewards given as functions of real vectors
// where no model exists (SampleEPIC, SampleCoverage).
//
// # Objective
//
// We use the maximum-causal-entropy dual, which makes the gradient exact.
// With the soft Bellman equations at temperature τ > 0 (package mdp)
//
//	Q_θ(s,a) = θᵀφ(s,a) + γ Σ_s' P(s'|s,a) V_θ(s'),   V_θ(s) = τ log Σ_a exp(Q_θ(s,a)/τ),
//
// (V = 0 at terminal states; time-indexed with V_T = 0 for a finite
// horizon T), the log-likelihood and the objective are
//
//	LogLik(θ)    = θᵀμ_D − E_{s0∼D₀}[V_θ(s0)],
//	Objective(θ) = LogLik(θ) − (λ/2)‖θ‖²,
//
// where μ_D = (1/N) Σ_i Σ_t γ^t φ(s_t^i, a_t^i) are the empirical discounted
// feature expectations of the N demonstrations and D₀ is their empirical
// initial-state distribution (or the MDP's Init with Config.InitFromMDP).
// This is the paper's L_i with log Z(θ) = E V_θ(s0). Its gradient is exactly
//
//	∇Objective = μ_D − μ_π − λθ,
//
// where μ_π = Σ_{s,a} d(s,a) φ(s,a) are the discounted expected feature
// counts of the soft-optimal policy π_θ(a|s) = exp((Q_θ−V_θ)/τ) from D₀
// (d from mdp.Workspace.Visits). The identity holds for every τ > 0
// because ∂V/∂Q(s,a) = π(a|s).
//
// How τ enters: the reward is used unscaled and τ only sets how greedy the
// soft-optimal policy is, so LogLik is in reward units. For deterministic
// transitions, LogLik/τ is the discounted log-probability
// Σ_t γ^t log π_θ(a_t|s_t) of the demonstrations; for stochastic ones it is
// the causal-entropy dual, which differs from that by terms with zero mean
// under the demonstrator. The paper's appendix uses τ = 1e-3 (the default),
// under which π_θ is nearly greedy; τ = 1 is the classical MaxEnt IRL model.
//
// # Optimizers
//
// Gradient ascent θ ← θ + η(μ_D − μ_π − λθ) (the paper's update, η = 5e-3
// by default) or Adam on the same gradient; L-BFGS (gonum); or Newton's
// method with the exact Hessian, the policy's discounted feature
// covariance (hessian.go, newton.go), which converges in a handful of
// steps at τ ≳ 0.1 where L-BFGS's line search can stall on the rounding
// of the objective. The budget is Config.MaxIter
// gradient steps (the paper uses 25–100; the weak-client ablation cuts it),
// stopping early when ‖∇‖₂ ≤ Config.GradTol. Config.Theta0 warm-starts θ,
// as the federation does from round to round. Successive soft value
// iterations are warm-started from the previous values, so a step costs a
// few sweeps once θ moves slowly. Every fit reports whether it converged
// (Result.Converged) and, if not, why it stopped (Result.StopReason).
//
// # Reachable states
//
// The objective involves only the states reachable from the start
// distribution D₀: V_θ at the starts and the visits of π_θ. NewObjective
// therefore computes μ_D on the model given and then restricts the model,
// the features and D₀ to those states (mdp.MDP.Reachable, Restrict), which
// changes no result (TestReachableRestrictionIsExact) and saves the work on
// the rest; Result.ModelStates and ReachableStates report it.
//
// # File formats
//
// An MDP and its features are a JSON "spec" (ReadSpec, WriteSpec):
//
//	{
//	  "states": 3, "actions": 2, "gamma": 0.9,
//	  "horizon": 0,                      // optional, 0 = infinite
//	  "init": [1, 0, 0],                 // optional, default uniform over non-terminal states
//	  "terminal": [2],                   // optional list of terminal (absorbing, zero-value) states
//	  "transitions": [[s, a, s2, p], ...],   // or the CSR form:
//	  "csr": {"row_ptr": [...], "next": [...], "prob": [...]},   // row k = s*actions+a
//	  "features": [[...d numbers...], ...]   // states*actions rows, row k = s*actions+a
//	}
//
// Exactly one of "transitions" and "csr" must be given; unknown keys are
// errors (a typo would otherwise silently change the problem).
//
// Demonstrations are JSON Lines (ReadTrajectories, WriteTrajectories), one
// trajectory per line:
//
//	{"states": [0, 1, 1, 2], "actions": [1, 0, 1]}
//
// with len(states) = len(actions) (one state per action) or len(actions)+1
// (the final state reached included). Blank lines are skipped; other keys
// (e.g. "rewards") are ignored. In Python:
//
//	with open("demos.jsonl", "w") as f:
//	    for s, a in trajs: f.write(json.dumps({"states": s, "actions": a}) + "\n")
//
// NumPy users may instead save integer arrays "states" (N×Ls) and "actions"
// (N×La) padded with -1 in an .npz archive (ReadTrajectoriesNPZ).
//
// Every malformed input gives a *FormatError naming the file, line and field.
//
// The package deliberately does not sample demonstrations from experts,
// define feature maps (package features) or fuse rewards (package fusion).
package irl

import (
	"context"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/mdp"
)

// Trajectory is one demonstration: the visited states and the actions taken.
// len(States) is len(Actions) or len(Actions)+1 (final state included).
type Trajectory struct {
	// States are the visited state indices.
	States []int `json:"states"`
	// Actions are the action indices taken, Actions[t] in States[t].
	Actions []int `json:"actions"`
}

// Optimizer names accepted by Config.Optimizer.
const (
	OptimizerGD   = "gd"
	OptimizerAdam = "adam"
	// OptimizerLBFGS maximizes the (concave) objective with gonum's L-BFGS
	// and its line search; MaxIter counts its major iterations.
	OptimizerLBFGS = "lbfgs"
	// OptimizerNewton maximizes the (concave) objective by Newton's method
	// with exact Hessians, refreshed when progress slows and BFGS-updated
	// in between, and a line search on the directional derivative
	// (newton.go); MaxIter counts its steps.
	OptimizerNewton = "newton"
)

// Optimizers lists the names Config.Optimizer accepts.
var Optimizers = []string{OptimizerGD, OptimizerAdam, OptimizerLBFGS, OptimizerNewton}

// Config holds MaxEnt IRL options; the zero value gives the paper's settings.
type Config struct {
	// LearningRate is the step size η (default 5e-3, as in the paper's appendix).
	LearningRate float64 `json:"learning_rate"`
	// L2 is the regularization weight λ (default 0: no regularization).
	L2 float64 `json:"l2"`
	// Temperature is τ > 0 of the soft Bellman equations (default 1e-3, as in
	// the paper's appendix; use 1 for classical MaxEnt IRL).
	Temperature float64 `json:"temperature"`
	// MaxIter is the budget of gradient steps (default 100).
	MaxIter int `json:"max_iter"`
	// GradTol stops once ‖∇‖₂ ≤ GradTol (default 1e-8; negative never stops early).
	GradTol float64 `json:"grad_tol"`
	// Optimizer is "gd" (default, plain gradient ascent), "adam", "lbfgs" or "newton".
	Optimizer string `json:"optimizer"`
	// Beta1 is Adam's first-moment decay (default 0.9).
	Beta1 float64 `json:"beta1"`
	// Beta2 is Adam's second-moment decay (default 0.999).
	Beta2 float64 `json:"beta2"`
	// Epsilon is Adam's denominator offset (default 1e-8).
	Epsilon float64 `json:"epsilon"`
	// Theta0 is the starting θ (default zeros); it is copied, not modified.
	Theta0 []float64 `json:"theta0,omitempty"`
	// InitFromMDP draws s0 from the MDP's Init instead of the demonstrations' first states.
	InitFromMDP bool `json:"init_from_mdp"`
	// Absorbing learns the value of ending an episode instead of fixing it
	// at 0 (the absorbing-state treatment of Kostrikov et al.'s DAC): every
	// terminal state becomes an absorbing state that loops to itself under
	// every action and earns a reward θ_abs of its own (an extra feature, 1
	// there and 0 elsewhere), and a demonstration that ends in a terminal
	// state adds its discounted absorbing tail Σ_{t≥L} γ^t (up to the
	// horizon) to μ_D. Without it a terminal state's value is pinned at 0,
	// so the learned reward's level decides whether ending is attractive,
	// and MaxEnt sets that level from how often the model terminates, not
	// from what the demonstrator did. Result.AbsorbingReward is θ_abs; the
	// reward with a zero-valued terminal state that ranks every trajectory
	// the same is θᵀφ − θ_abs (fold θ_abs into a constant feature).
	Absorbing bool `json:"absorbing"`
	// EmpiricalFeatures, when set, is μ_D (one entry per column of Φ): the
	// demonstrations' discounted feature sums, averaged over them, in place
	// of the sums of Φ's rows at their (snapped) pairs. For features of the
	// observed step (s, a, s′), whose Φ rows are means over a model's steps
	// from every state of a cell, the demonstrations' own steps give them
	// exactly (and their shaping terms telescope along each episode as the
	// true reward's do). The demonstrations still give the start states and,
	// with Absorbing, the absorbing tails.
	EmpiricalFeatures []float64 `json:"-"`
	// Solver configures the dynamic programming (see mdp.Options); WarmStart is always on in MaxEnt.
	Solver mdp.Options `json:"-"`
	// OnIteration, if set, is called after each evaluation of the objective.
	OnIteration func(Iteration) `json:"-"`
}

// Iteration describes one evaluation of the objective during MaxEnt.
type Iteration struct {
	// Index counts evaluations from 0 (θ_Index is the θ evaluated).
	Index int
	// LogLik is the log-likelihood at θ_Index.
	LogLik float64
	// Objective is LogLik − (λ/2)‖θ‖² at θ_Index.
	Objective float64
	// GradNorm is ‖∇Objective‖₂ at θ_Index.
	GradNorm float64
}

// Resolve returns c with its zero fields replaced by the defaults, or an
// error naming an invalid setting.
func (c Config) Resolve() (Config, error) { return c.withDefaults() }

func (c Config) withDefaults() (Config, error) {
	if c.LearningRate == 0 {
		c.LearningRate = 5e-3
	}
	if c.Temperature == 0 {
		c.Temperature = 1e-3
	}
	if c.MaxIter == 0 {
		c.MaxIter = 100
	}
	if c.GradTol == 0 {
		c.GradTol = 1e-8
	}
	if c.Optimizer == "" {
		c.Optimizer = OptimizerGD
	}
	if c.Beta1 == 0 {
		c.Beta1 = 0.9
	}
	if c.Beta2 == 0 {
		c.Beta2 = 0.999
	}
	if c.Epsilon == 0 {
		c.Epsilon = 1e-8
	}
	switch {
	case !(c.LearningRate > 0) || math.IsInf(c.LearningRate, 0):
		return c, fmt.Errorf("irl: learning rate %v must be positive", c.LearningRate)
	case !(c.Temperature > 0) || math.IsInf(c.Temperature, 0):
		return c, fmt.Errorf("irl: temperature %v must be positive", c.Temperature)
	case !(c.L2 >= 0):
		return c, fmt.Errorf("irl: L2 weight %v must be non-negative", c.L2)
	case c.MaxIter < 0:
		return c, fmt.Errorf("irl: iteration budget %d is negative", c.MaxIter)
	case !slices.Contains(Optimizers, c.Optimizer):
		return c, fmt.Errorf("irl: unknown optimizer %q (want one of %q)", c.Optimizer, Optimizers)
	case !(c.Beta1 >= 0 && c.Beta1 < 1) || !(c.Beta2 >= 0 && c.Beta2 < 1) || !(c.Epsilon > 0):
		return c, fmt.Errorf("irl: Adam constants beta1=%v beta2=%v epsilon=%v out of range", c.Beta1, c.Beta2, c.Epsilon)
	}
	return c, nil
}

// Result is the outcome of MaxEnt.
type Result struct {
	// Theta is the learned parameter vector θ.
	Theta []float64 `json:"theta"`
	// Iterations is the number of gradient steps taken.
	Iterations int `json:"iterations"`
	// Converged reports whether ‖∇‖₂ ≤ GradTol was reached.
	Converged bool `json:"converged"`
	// StopReason says why an unconverged fit stopped ("" when converged):
	// the iteration budget, a failed line search, a cancelled context.
	StopReason string `json:"stop_reason,omitempty"`
	// Evaluations counts objective and gradient evaluations (line-search
	// trials included).
	Evaluations int `json:"evaluations"`
	// HessianEvaluations counts exact Hessians and HessianMatVecs the
	// products of their column solves (Newton only).
	HessianEvaluations int `json:"hessian_evaluations,omitempty"`
	HessianMatVecs     int `json:"hessian_matvecs,omitempty"`
	// QuasiNewtonSteps counts the accepted steps of Newton's quasi-Newton
	// phase, before it switched to exact Hessians (newton.go).
	QuasiNewtonSteps int `json:"quasi_newton_steps,omitempty"`
	// ModelStates is the number of states of the model (with
	// Config.Absorbing's changes); ReachableStates of those reachable from
	// the start distribution, to which the fit was restricted (exactly).
	ModelStates     int `json:"model_states"`
	ReachableStates int `json:"reachable_states"`
	// LogLik holds the log-likelihood at θ_0..θ_Iterations (length
	// Iterations+1; the last entry is at Theta).
	LogLik []float64 `json:"loglik"`
	// Objective holds LogLik − (λ/2)‖θ‖² at the same points.
	Objective []float64 `json:"objective"`
	// GradNorm holds ‖∇Objective‖₂ at the same points.
	GradNorm []float64 `json:"grad_norm"`
	// ValueSweeps counts the soft Bellman sweeps over all evaluations.
	ValueSweeps int `json:"value_sweeps"`
	// VisitSweeps counts the visit-propagation sweeps over all evaluations.
	VisitSweeps int `json:"visit_sweeps"`
	// EmpiricalFeatures is μ_D.
	EmpiricalFeatures []float64 `json:"empirical_features"`
	// ExpectedFeatures is μ_π at Theta.
	ExpectedFeatures []float64 `json:"expected_features"`
	// AbsorbingReward is θ_abs with Config.Absorbing (else 0). Theta,
	// EmpiricalFeatures and ExpectedFeatures then hold the d ordinary
	// features; the absorbing feature's expectations are AbsorbingEmpirical
	// and AbsorbingExpected.
	AbsorbingReward                       float64 `json:"absorbing_reward,omitempty"`
	AbsorbingEmpirical, AbsorbingExpected float64 `json:"-"`
	// Gradient0 is ∇Objective at the starting θ, before any step (with
	// Config.Absorbing the absorbing feature's entry is last): at θ = 0 it
	// is μ_D − μ_π of the uniform soft policy.
	Gradient0 []float64 `json:"-"`
}

// Objective evaluates the MaxEnt IRL objective and its gradient for one MDP,
// feature matrix and demonstration set, reusing its buffers across calls.
type Objective struct {
	m      *mdp.MDP
	phi    *mat.Dense
	d      int
	tau    float64
	l2     float64
	muD    []float64
	init   []float64
	ws     *mdp.Workspace
	vals   *mdp.Values
	pol    *mdp.Policy
	visits []float64
	reward []float64
	muPi   []float64
	// absorbing marks the extra last feature of Config.Absorbing.
	absorbing bool
	// modelStates and fitStates are the states of the model given (with
	// Config.Absorbing's) and of the part reachable from the start
	// distribution that the objective is computed on.
	modelStates, fitStates int

	// Hessian buffers (hessian.go), allocated on its first call: Φ's rows
	// contiguous, ψ (and ψ_{t+1} for a finite horizon), gathered rows, one
	// state's F, the accumulated covariance and the state visits x_t; for a
	// finite horizon, one state's merged successor row under π_t (merge).
	phiRows, psi, psiNext []float64
	psiWarm               bool
	lastTheta             []float64 // θ of the last Eval
	hrows, frow, hacc, xt []float64
	merge                 mergedRow
	rowDrop               float64 // hessianRowDrop, 0 in tests that need every row
	// the policy and visits saved by keep
	keptPol, keptVisits []float64
	// visitTol, when positive, is the visit solve's tolerance in place of
	// the workspace's (maxEntNewton's inexact solves)
	visitTol float64
	// jointRtol is Term's Hessian residual (SetHessianRtol; ≤ 0: JointHessianRtol)
	jointRtol float64
}

// NewObjective checks the inputs and precomputes μ_D and the initial
// distribution. Only Temperature, L2, InitFromMDP and Solver of cfg are used.
func NewObjective(m *mdp.MDP, phi *mat.Dense, demos []Trajectory, cfg Config) (*Objective, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if r, _ := phi.Dims(); r != m.NumPairs() {
		return nil, fmt.Errorf("irl: feature matrix has %d rows, want states*actions = %d", r, m.NumPairs())
	}
	var tails []float64
	rows := denseRows(phi)
	if cfg.Absorbing {
		if err := CheckTrajectories(m, demos); err != nil {
			return nil, err
		}
		tails = absorbingTails(m, demos)
		rows = absorbingRows(m, phi)
		m = absorbingModel(m)
	}
	d := rows.d
	if err := CheckTrajectories(m, demos); err != nil {
		return nil, err
	}
	muD := empiricalFeatures(make([]float64, d), m, rows, demos)
	if cfg.EmpiricalFeatures != nil {
		nd := d
		if cfg.Absorbing {
			nd-- // the absorbing indicator's entry stays the demonstrations' (0; tails below)
		}
		if len(cfg.EmpiricalFeatures) != nd {
			return nil, fmt.Errorf("irl: %d empirical feature expectations for %d features", len(cfg.EmpiricalFeatures), nd)
		}
		for j, v := range cfg.EmpiricalFeatures {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("irl: empirical feature expectation %d is %v", j, v)
			}
		}
		copy(muD, cfg.EmpiricalFeatures)
	}
	for _, t := range tails {
		muD[d-1] += t / float64(len(demos))
	}
	o := &Objective{m: m, d: d, tau: cfg.Temperature, l2: cfg.L2, muD: muD, absorbing: cfg.Absorbing, rowDrop: hessianRowDrop}
	if cfg.InitFromMDP {
		o.init = m.Init
	} else {
		o.init = EmpiricalInit(nil, m, demos)
	}
	o.modelStates, o.fitStates = m.NumStates, m.NumStates
	if err := o.restrictToReachable(rows); err != nil {
		return nil, err
	}
	m = o.m
	o.ws = mdp.NewWorkspace(m, cfg.Solver)
	o.reward = make([]float64, m.NumPairs())
	o.visits = make([]float64, m.NumPairs())
	o.muPi = make([]float64, d)
	return o, nil
}

// Dim returns d, the number of features (one more than phi's columns with
// Config.Absorbing: the absorbing indicator is the last).
func (o *Objective) Dim() int { return o.d }

// Close releases the objective's worker goroutines.
func (o *Objective) Close() { o.ws.Close() }

// EmpiricalFeatures returns μ_D (do not modify).
func (o *Objective) EmpiricalFeatures() []float64 { return o.muD }

// ExpectedFeatures returns μ_π at the θ of the last Eval (do not modify).
func (o *Objective) ExpectedFeatures() []float64 { return o.muPi }

// States returns the number of states of the model given (after
// Config.Absorbing's changes) and of its part reachable from the start
// distribution, on which the objective is computed (exactly: the values
// at the starts and the visits involve no other state).
func (o *Objective) States() (model, reachable int) { return o.modelStates, o.fitStates }

// Policy returns the soft-optimal policy at the θ of the last Eval, on the
// reachable states (see States; do not modify).
func (o *Objective) Policy() *mdp.Policy { return o.pol }

// Reward returns Φθ at the θ of the last Eval, on the pairs of the
// reachable states (see States; do not modify).
func (o *Objective) Reward() []float64 { return o.reward }

// Sweeps returns the soft Bellman and visit-propagation sweeps of the last Eval.
func (o *Objective) Sweeps() (value, visit int) {
	if o.vals == nil {
		return 0, 0
	}
	return o.vals.Iterations, o.ws.VisitIterations()
}

// Eval computes the objective, the log-likelihood and, into grad (length
// d), the gradient μ_D − μ_π − λθ at theta.
func (o *Objective) Eval(grad, theta []float64) (objective, logLik float64) {
	if len(theta) != o.d || len(grad) != o.d {
		panic(fmt.Sprintf("irl: theta and grad have lengths %d and %d, want %d", len(theta), len(grad), o.d))
	}
	features.Reward(o.reward, o.phi, theta)
	o.predictValues(theta)
	o.vals, o.pol = o.ws.SoftValuesAndPolicy(o.vals, o.pol, o.reward, o.tau)
	o.lastTheta = append(o.lastTheta[:0], theta...)
	v0 := floats.Dot(o.init, o.vals.Start())
	logLik = floats.Dot(theta, o.muD) - v0
	objective = logLik - 0.5*o.l2*floats.Dot(theta, theta)
	tol := o.ws.Options().Tol
	if o.visitTol > 0 {
		o.ws.SetTol(o.visitTol)
	}
	o.visits = o.ws.Visits(o.visits, o.pol, o.init)
	o.ws.SetTol(tol)
	FeatureCounts(o.muPi, o.phi, o.visits)
	for j := range grad {
		grad[j] = o.muD[j] - o.muPi[j] - o.l2*theta[j]
	}
	return objective, logLik
}

// FeatureCounts sets dst (length d) to Φᵀw for a weight vector w over pairs
// (for example visit counts) and returns it.
func FeatureCounts(dst []float64, phi *mat.Dense, w []float64) []float64 {
	raw := phi.RawMatrix()
	if len(dst) != raw.Cols || len(w) != raw.Rows {
		panic("irl: FeatureCounts dimension mismatch")
	}
	clear(dst)
	for k, wk := range w {
		if wk != 0 {
			floats.AddScaled(dst, wk, raw.Data[k*raw.Stride:k*raw.Stride+raw.Cols])
		}
	}
	return dst
}

// CheckTrajectories reports the first demonstration that does not fit m:
// empty, ragged, out-of-range indices, an action taken in a terminal state,
// or more actions than a finite horizon allows.
func CheckTrajectories(m *mdp.MDP, demos []Trajectory) error {
	if len(demos) == 0 {
		return fmt.Errorf("irl: no demonstrations")
	}
	for i, tr := range demos {
		if err := checkTrajectory(m.NumStates, m.NumActions, m, tr); err != nil {
			return fmt.Errorf("irl: demonstration %d: %w", i, err)
		}
	}
	return nil
}

// checkTrajectory validates one trajectory; m may be nil (then only S, A are checked; S or A = 0 skips ranges).
func checkTrajectory(S, A int, m *mdp.MDP, tr Trajectory) error {
	if len(tr.Actions) == 0 {
		return &FormatError{Field: "actions", Msg: "empty"}
	}
	if n := len(tr.States); n != len(tr.Actions) && n != len(tr.Actions)+1 {
		return &FormatError{Field: "states", Msg: fmt.Sprintf("has %d entries but actions has %d (want equal or one more)", n, len(tr.Actions))}
	}
	for t, s := range tr.States {
		if s < 0 || (S > 0 && s >= S) {
			return &FormatError{Field: fmt.Sprintf("states[%d]", t), Msg: fmt.Sprintf("state %d out of range [0,%d)", s, S)}
		}
	}
	for t, a := range tr.Actions {
		if a < 0 || (A > 0 && a >= A) {
			return &FormatError{Field: fmt.Sprintf("actions[%d]", t), Msg: fmt.Sprintf("action %d out of range [0,%d)", a, A)}
		}
		if m != nil && m.IsTerminal(tr.States[t]) {
			return &FormatError{Field: fmt.Sprintf("actions[%d]", t), Msg: fmt.Sprintf("action taken in terminal state %d", tr.States[t])}
		}
	}
	if m != nil && m.Horizon > 0 && len(tr.Actions) > m.Horizon {
		return &FormatError{Field: "actions", Msg: fmt.Sprintf("%d actions exceed the horizon %d", len(tr.Actions), m.Horizon)}
	}
	return nil
}

// EmpiricalFeatureExpectations returns in dst (length d, allocated if nil)
// μ_D = (1/N) Σ_i Σ_t γ^t φ(s_t^i, a_t^i) after checking the demonstrations
// with CheckTrajectories.
func EmpiricalFeatureExpectations(dst []float64, m *mdp.MDP, phi *mat.Dense, demos []Trajectory) ([]float64, error) {
	if err := CheckTrajectories(m, demos); err != nil {
		return nil, err
	}
	raw := phi.RawMatrix()
	if raw.Rows != m.NumPairs() {
		return nil, fmt.Errorf("irl: feature matrix has %d rows, want states*actions = %d", raw.Rows, m.NumPairs())
	}
	if dst == nil {
		dst = make([]float64, raw.Cols)
	}
	if len(dst) != raw.Cols {
		panic("irl: EmpiricalFeatureExpectations dst length mismatch")
	}
	return empiricalFeatures(dst, m, denseRows(phi), demos), nil
}

// empiricalFeatures is EmpiricalFeatureExpectations on checked inputs,
// the features given by rows (dst of length rows.d).
func empiricalFeatures(dst []float64, m *mdp.MDP, rows featureRows, demos []Trajectory) []float64 {
	clear(dst)
	A := m.NumActions
	row := make([]float64, rows.d)
	for _, tr := range demos {
		g := 1.0
		for t, a := range tr.Actions {
			rows.fill(row, tr.States[t]*A+a)
			floats.AddScaled(dst, g, row)
			g *= m.Gamma
		}
	}
	floats.Scale(1/float64(len(demos)), dst)
	return dst
}

// EmpiricalInit returns in dst (length S, allocated if nil) the empirical
// distribution of the demonstrations' first states; demos must be non-empty and checked.
func EmpiricalInit(dst []float64, m *mdp.MDP, demos []Trajectory) []float64 {
	if dst == nil {
		dst = make([]float64, m.NumStates)
	}
	clear(dst)
	for _, tr := range demos {
		dst[tr.States[0]] += 1 / float64(len(demos))
	}
	return dst
}

// MaxEnt learns θ from demonstrations on m with features phi ((S*A)×d, row
// k = s*A+a) by gradient ascent, Adam, L-BFGS or Newton on the objective in the
// package comment. It stops after cfg.MaxIter steps, when ‖∇‖₂ ≤
// cfg.GradTol, or when ctx is cancelled (returning the result so far and
// ctx's error).
func MaxEnt(ctx context.Context, m *mdp.MDP, phi *mat.Dense, demos []Trajectory, cfg Config) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	cfg.Solver.WarmStart = true
	o, err := NewObjective(m, phi, demos, cfg)
	if err != nil {
		return Result{}, err
	}
	defer o.Close()
	d := o.Dim()
	theta := make([]float64, d)
	if cfg.Theta0 != nil {
		_, want := phi.Dims()
		if len(cfg.Theta0) != want {
			return Result{}, fmt.Errorf("irl: theta0 has %d entries, want %d features", len(cfg.Theta0), want)
		}
		copy(theta, cfg.Theta0)
	}
	res := Result{}
	res.ModelStates, res.ReachableStates = o.States()
	record := func(it int, obj, ll, gn float64) {
		res.LogLik = append(res.LogLik, ll)
		res.Objective = append(res.Objective, obj)
		res.GradNorm = append(res.GradNorm, gn)
		res.Iterations = it
		if cfg.OnIteration != nil {
			cfg.OnIteration(Iteration{Index: it, LogLik: ll, Objective: obj, GradNorm: gn})
		}
	}
	switch cfg.Optimizer {
	case OptimizerLBFGS:
		err = maxEntLBFGS(ctx, o, theta, cfg, &res, record)
	case OptimizerNewton:
		err = maxEntNewton(ctx, o, theta, cfg, &res, record)
	default:
		err = maxEntFirstOrder(ctx, o, theta, cfg, &res, record)
	}
	switch {
	case res.Converged:
		res.StopReason = ""
	case err != nil:
		res.StopReason = err.Error()
	case res.StopReason == "" && res.Iterations >= cfg.MaxIter:
		res.StopReason = fmt.Sprintf("iteration budget %d spent", cfg.MaxIter)
	case res.StopReason == "":
		res.StopReason = "stopped before the gradient tolerance"
	}
	res.Theta = theta
	o.split(&res)
	return res, err
}

// split stores μ_D and μ_π in res and moves the absorbing feature's entries
// out of Theta and the feature vectors.
func (o *Objective) split(res *Result) {
	res.EmpiricalFeatures = append([]float64(nil), o.muD...)
	res.ExpectedFeatures = append([]float64(nil), o.muPi...)
	if !o.absorbing {
		return
	}
	d := o.d - 1
	res.AbsorbingReward, res.Theta = res.Theta[d], res.Theta[:d]
	res.AbsorbingEmpirical, res.EmpiricalFeatures = res.EmpiricalFeatures[d], res.EmpiricalFeatures[:d]
	res.AbsorbingExpected, res.ExpectedFeatures = res.ExpectedFeatures[d], res.ExpectedFeatures[:d]
}

// maxEntFirstOrder runs gradient ascent or Adam from theta (updated in place).
func maxEntFirstOrder(ctx context.Context, o *Objective, theta []float64, cfg Config, res *Result, record func(int, float64, float64, float64)) error {
	d := len(theta)
	grad := make([]float64, d)
	var m1, m2 []float64
	if cfg.Optimizer == OptimizerAdam {
		m1, m2 = make([]float64, d), make([]float64, d)
	}
	for it := 0; ; it++ {
		obj, ll := o.Eval(grad, theta)
		res.Evaluations++
		res.ValueSweeps += o.vals.Iterations
		res.VisitSweeps += o.ws.VisitIterations()
		if it == 0 {
			res.Gradient0 = slices.Clone(grad)
		}
		gn := floats.Norm(grad, 2)
		record(it, obj, ll, gn)
		if math.IsNaN(obj) || math.IsNaN(gn) {
			return fmt.Errorf("irl: objective became NaN at iteration %d (learning rate %v too large?)", it, cfg.LearningRate)
		}
		if gn <= cfg.GradTol {
			res.Converged = true
			return nil
		}
		if it == cfg.MaxIter {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		switch cfg.Optimizer {
		case OptimizerGD:
			floats.AddScaled(theta, cfg.LearningRate, grad)
		case OptimizerAdam:
			t := float64(it + 1)
			c1 := 1 - math.Pow(cfg.Beta1, t)
			c2 := 1 - math.Pow(cfg.Beta2, t)
			for j, g := range grad {
				m1[j] = cfg.Beta1*m1[j] + (1-cfg.Beta1)*g
				m2[j] = cfg.Beta2*m2[j] + (1-cfg.Beta2)*g*g
				theta[j] += cfg.LearningRate * (m1[j] / c1) / (math.Sqrt(m2[j]/c2) + cfg.Epsilon)
			}
		}
	}
}
