package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// clientEvalOptions holds the flags of "fedirl client eval".
type clientEvalOptions struct {
	spec, mdp, demos, theta, out, solver string
}

// clientEvalOutput is the JSON written by "fedirl client eval": what
// "fedirl client" sends in one round of a joint task.
type clientEvalOutput struct {
	Task      string    `json:"task"`
	Theta     []float64 `json:"theta"`
	Value     float64   `json:"value"`
	Grad      []float64 `json:"grad"`
	Hess      []float64 `json:"hess,omitempty"`   // row-major d×d; absent in a local-update round
	Update    []float64 `json:"update,omitempty"` // θ after the local steps (update fedavg, fedprox)
	DemoCount int       `json:"demo_count"`
}

// newClientEvalCmd builds "fedirl client eval".
func newClientEvalCmd() *cobra.Command {
	o := &clientEvalOptions{}
	cmd := &cobra.Command{
		Use:   "eval --spec task.json --mdp mdp.json --demos demos.jsonl --theta theta.json [--out eval.json]",
		Short: "Evaluate a client's joint-round answer at θ: objective value, gradient, Hessian (or local update)",
		Long: `eval computes, with no server, what "fedirl client" sends in one round of a
joint task (fusion method joint) at the trial θ: the client's MaxEnt objective
  L(θ) = θᵀμ_D − E_{s0}[V_θ(s0)] − (λ/2)‖θ‖²
on --mdp and --demos (the task's irl section: λ, τ, s0 from the demonstrations
or the MDP's init; the task's Φ for a lattice task), its gradient
μ_D − μ_π(θ) − λθ and its Hessian (row-major, d² numbers), with the same
learner, solver and code as "fedirl client". With the task's update fedavg or
fedprox it instead takes the task's local Newton steps from θ and writes the θ
reached (update) with the value and gradient at θ (no Hessian).

--spec is the task spec JSON (the fields of federation.TaskSpec: id,
env_family, probe, theta_dim, irl, fusion, ...), as "fedirl fuse" and
"fedirl simulate" read it; --theta a JSON array, or a file with a "theta" key.
Python clients answer joint rounds with it (fedirl.client.Client.run_joint).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runClientEval(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.spec, "spec", "", "task spec JSON (fields of federation.TaskSpec; required)")
	f.StringVar(&o.mdp, "mdp", "", "this client's MDP: irl spec JSON or .npz of sparse transitions (required)")
	f.StringVar(&o.demos, "demos", "", "this client's demonstrations: JSONL or .npz (required)")
	f.StringVar(&o.theta, "theta", "", `the round's trial θ: a JSON array, or a file with a "theta" key (required)`)
	f.StringVar(&o.out, "out", "-", `output JSON file ("-" = stdout)`)
	f.StringVar(&o.solver, "solver", "newton", `infinite-horizon solver, as in "fedirl client": "newton" or "fixed-point"`)
	return cmd
}

func runClientEval(cmd *cobra.Command, o *clientEvalOptions) error {
	for name, v := range map[string]string{"--spec": o.spec, "--mdp": o.mdp, "--demos": o.demos, "--theta": o.theta} {
		if v == "" {
			return fmt.Errorf("client eval: %s is required", name)
		}
	}
	if o.solver != "newton" && o.solver != "fixed-point" {
		return fmt.Errorf("client eval: --solver %q: want newton or fixed-point", o.solver)
	}
	data, err := os.ReadFile(o.spec)
	if err != nil {
		return fmt.Errorf("--spec: %w", err)
	}
	var spec federation.TaskSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return fmt.Errorf("--spec %s: %w", o.spec, jsonError(data, err))
	}
	theta, err := readTheta(o.theta)
	if err != nil {
		return fmt.Errorf("--theta: %w", err)
	}
	if len(theta) != spec.ThetaDim {
		return fmt.Errorf("--theta has %d components, task %s has theta_dim %d", len(theta), spec.ID, spec.ThetaDim)
	}
	opt, err := fusion.DecodeOptions(spec.Fusion)
	if err != nil {
		return fmt.Errorf("--spec %s: %w", o.spec, err)
	}
	if opt.MethodName() != fusion.MethodJoint {
		return fmt.Errorf("--spec %s: task %s fuses with %q, not %s: its clients send θ once and answer no gradient rounds", o.spec, spec.ID, opt.MethodName(), fusion.MethodJoint)
	}
	learner, err := tasks.LoadMaxEntLearner(o.mdp, o.demos)
	if err != nil {
		return err
	}
	learner.Solver = mdp.Options{Newton: o.solver == "newton"} // as runClient sets it
	out := clientEvalOutput{Task: spec.ID, Theta: theta}
	if opt.LocalUpdate() != nil {
		u, ev, n, err := learner.LocalUpdate(cmd.Context(), spec, theta)
		if err != nil {
			return fmt.Errorf("client eval: local update: %w", err)
		}
		out.Value, out.Grad, out.Update, out.DemoCount = ev.Value, ev.Grad, u, n
	} else {
		ev, n, err := learner.Evaluate(cmd.Context(), spec, theta)
		if err != nil {
			return fmt.Errorf("client eval: %w", err)
		}
		if err := ev.Check(spec.ThetaDim); err != nil {
			return fmt.Errorf("client eval: %w", err)
		}
		out.Value, out.Grad, out.Hess, out.DemoCount = ev.Value, ev.Grad, ev.Hess, n
	}
	return writeJSON(o.out, out)
}
