package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/progress"
)

// irlOptions holds the flags of "fedirl irl".
type irlOptions struct {
	spec, demos, out, theta0 string
	cfg                      irl.Config
	tol                      float64
	solver                   string
	workers                  int
}

// irlOutput is the JSON written by "fedirl irl".
type irlOutput struct {
	Spec      string     `json:"spec"`
	Demos     string     `json:"demos"`
	Config    irl.Config `json:"config"`
	SolverTol float64    `json:"solver_tol"`
	Solver    string     `json:"solver"`
	irl.Result
}

// newIRLCmd builds "fedirl irl".
func newIRLCmd() *cobra.Command {
	o := &irlOptions{}
	cmd := &cobra.Command{
		Use:   "irl --spec mdp.json --demos demos.jsonl [--out result.json]",
		Short: "Learn linear reward parameters θ with MaxEnt IRL",
		Long: `irl learns θ of a linear reward R(s,a) = θᵀφ(s,a) from demonstrations with
maximum-(causal-)entropy IRL: gradient ascent (or Adam) on
  θᵀμ_D − E_{s0}[V_θ(s0)] − (λ/2)‖θ‖²,
whose gradient is μ_D − μ_π − λθ (empirical minus expected discounted feature
counts of the soft-optimal policy at temperature τ). Defaults follow the
paper's appendix: learning rate 5e-3, τ = 1e-3, 100 iterations.

--spec is a JSON file describing the MDP and its features:
  {
    "states": 3, "actions": 2, "gamma": 0.9,
    "horizon": 0,                       (optional; 0 = infinite)
    "init": [1, 0, 0],                  (optional; default uniform over non-terminal states)
    "terminal": [2],                    (optional; absorbing, zero-value states)
    "transitions": [[s, a, s2, p], ...],
      or "csr": {"row_ptr": [...], "next": [...], "prob": [...]}  (row k = s*actions+a)
    "features": [[φ_1, ..., φ_d], ...]  (states*actions rows, row k = s*actions+a)
  }
Probabilities of each non-terminal (s,a) must sum to 1; unknown keys are errors.

--demos is JSON Lines, one trajectory per line:
  {"states": [0, 1, 1, 2], "actions": [1, 0, 1]}
with one state per action, optionally followed by the final state. No action
may be taken in a terminal state; other keys on a line are ignored.
A file ending in .npz is read as NumPy arrays instead: integer "states"
(N×Ls) and "actions" (N×La), one trajectory per row, padded with -1:
  np.savez("demos.npz", states=S, actions=A)
or imitation's trajectory fields with integer state indices as obs
("obs", "acts", "indices"; see irl.ReadTrajectoriesNPZ).

A --spec ending in .npz is the MDP as NumPy arrays (sparse transitions):
  np.savez("mdp.npz", num_states=S, num_actions=A, gamma=0.99, row_ptr=...,
           next=..., prob=..., features=phi, terminal=[...], init=..., horizon=0)

The output JSON holds theta, iterations, converged, the learning curves
loglik / objective / grad_norm (one entry per evaluated θ, the last at the
returned θ), the empirical and expected feature counts and the resolved config.
loglik is θᵀμ_D − E[V_θ(s0)] in reward units, i.e. τ × nats: for deterministic
transitions loglik/τ is the discounted log-probability of the demonstrations
(≤ 0); with stochastic transitions it is the causal-entropy dual, which may be
positive.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runIRL(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.spec, "spec", "", "MDP and feature spec (JSON, or .npz of sparse transitions; required)")
	f.StringVar(&o.demos, "demos", "", "demonstrations (JSON Lines, or .npz: padded states/actions or imitation's obs/acts/indices; required)")
	f.StringVarP(&o.out, "out", "o", "-", `output JSON file ("-" = stdout)`)
	f.StringVar(&o.theta0, "theta0", "", `warm-start θ: a JSON array, or a previous output file with a "theta" key`)
	f.Float64Var(&o.cfg.LearningRate, "lr", 5e-3, "learning rate η")
	f.Float64Var(&o.cfg.L2, "l2", 0, "L2 regularization weight λ")
	f.Float64Var(&o.cfg.Temperature, "temperature", 1e-3, "soft Bellman temperature τ > 0 (1 = classical MaxEnt IRL)")
	countVar(f, &o.cfg.MaxIter, "iters", 100, "gradient steps", "budget of gradient steps")
	f.Float64Var(&o.cfg.GradTol, "grad-tol", 1e-8, "stop when the gradient 2-norm is at most this (negative: never)")
	f.StringVar(&o.cfg.Optimizer, "optimizer", irl.OptimizerGD, `"gd" (gradient ascent), "adam", "lbfgs" or "newton" (Newton's method with the exact Hessian: converges in a few steps at τ ≳ 0.1)`)
	f.BoolVar(&o.cfg.InitFromMDP, "init-from-mdp", false, "draw s0 from the spec's init instead of the demonstrations' first states")
	f.Float64Var(&o.tol, "tol", 1e-10, "sup-norm tolerance of soft value iteration and visit propagation")
	f.StringVar(&o.solver, "solver", "newton", `infinite-horizon solver: "newton" (Newton's method and a Krylov solve; fast near a hard max) or "fixed-point" (sweeps with Anderson acceleration)`)
	addJobsFlag(cmd, &o.workers, 0, "goroutines per sweep")
	return cmd
}

func init() { rootCmd.AddCommand(newIRLCmd()) }

func runIRL(cmd *cobra.Command, o *irlOptions) error {
	if o.spec == "" || o.demos == "" {
		return fmt.Errorf("irl: --spec and --demos are required")
	}
	if err := refuseExplicitZero(cmd, map[string]string{
		"iters":       "want ≥ 1 gradient step",
		"lr":          "a learning rate of 0 never moves θ; want > 0",
		"temperature": "τ = 0 (a hard max) is not supported; want τ > 0, e.g. 1e-6",
		"grad-tol":    "a gradient norm of exactly 0 is never reached; give a negative --grad-tol to run all --iters steps",
		"tol":         "want a positive solver tolerance",
	}); err != nil {
		return err
	}
	if !(o.tol > 0) {
		return fmt.Errorf("irl: --tol %g: want a positive solver tolerance", o.tol)
	}
	if err := checkJobs("jobs", o.workers); err != nil {
		return err
	}
	if o.solver != "newton" && o.solver != "fixed-point" {
		return fmt.Errorf("irl: --solver %q: want newton or fixed-point", o.solver)
	}
	m, phi, err := irl.LoadMDP(o.spec)
	if err != nil {
		return fmt.Errorf("--spec: %w (%s)", err, specFormats)
	}
	demos, err := irl.ReadTrajectoriesAny(o.demos, m)
	if err != nil {
		return fmt.Errorf("--demos: %w (%s)", err, demosFormats)
	}
	cfg := o.cfg
	cfg.Solver = mdp.Options{Tol: o.tol, Workers: o.workers, Newton: o.solver == "newton"}
	if o.theta0 != "" {
		if cfg.Theta0, err = readTheta(o.theta0); err != nil {
			return err
		}
	}
	if cfg, err = cfg.Resolve(); err != nil {
		return err
	}
	bar := progress.New(cfg.MaxIter+1, "irl")
	cfg.OnIteration = func(irl.Iteration) { bar.Add(1) }
	res, err := irl.MaxEnt(cmd.Context(), m, phi, demos, cfg)
	bar.Finish()
	if err != nil {
		return err
	}
	gn := res.GradNorm[len(res.GradNorm)-1]
	if res.Converged {
		fmt.Fprintf(cmd.ErrOrStderr(), "irl: converged after %d iterations: ‖∇‖ = %.3g ≤ --grad-tol %g\n", res.Iterations, gn, cfg.GradTol)
	} else {
		fmt.Fprintf(cmd.ErrOrStderr(), "irl: warning: not converged: ‖∇‖ = %.3g > --grad-tol %g (%s)\n", gn, cfg.GradTol, res.StopReason)
	}
	return writeJSON(o.out, irlOutput{Spec: o.spec, Demos: o.demos, Config: cfg, SolverTol: o.tol, Solver: o.solver, Result: res})
}

// The input formats of "fedirl irl", named in its errors.
const (
	specFormats  = `--spec wants the JSON MDP spec of "fedirl irl --help", or a .npz of sparse transitions`
	demosFormats = `--demos wants JSON Lines {"states": [...], "actions": [...]}, one trajectory per line, or a .npz of padded "states"/"actions" or imitation's "obs"/"acts"/"indices"`
)

// readTheta reads θ from a JSON array or an object with a "theta" key.
func readTheta(path string) ([]float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading θ: %w", err)
	}
	var arr []float64
	if err := json.Unmarshal(data, &arr); err == nil {
		return arr, nil
	}
	var obj struct {
		Theta []float64 `json:"theta"`
	}
	if err := json.Unmarshal(data, &obj); err != nil || obj.Theta == nil {
		if _, _, nan := federation.FirstNonFinite(data); nan && err != nil {
			return nil, fmt.Errorf("%s: %w", path, jsonError(data, err))
		}
		return nil, fmt.Errorf("%s: want a JSON array of numbers or an object with a \"theta\" array", path)
	}
	return obj.Theta, nil
}
