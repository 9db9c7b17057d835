package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// maxSpecFileBytes bounds a task spec file, checked before it is read: its
// probe is bounded by federation.MaxProbeBytes (256 KiB) and its
// description by --max-description-bytes, so a valid spec is far smaller;
// the bound is generous enough that a raised description limit still has
// its own, field-naming refusal.
const maxSpecFileBytes = 32 << 20

// readTaskSpecFile reads a task spec JSON (the format of `fedirl server task
// create --spec`), unknown fields refused, its phi_file inlined.
func readTaskSpecFile(path string) (federation.TaskSpec, error) {
	var spec federation.TaskSpec
	if st, err := os.Stat(path); err == nil && st.Size() > maxSpecFileBytes {
		// Checked before reading: a spec this large cannot pass the probe bound.
		return spec, fmt.Errorf("--spec %s is %d bytes; a task spec's probe is at most %d bytes (federation.MaxProbeBytes), and no spec above %d bytes is read: give a large Φ as an RBF spec or in phi_file (.npy)",
			path, st.Size(), federation.MaxProbeBytes, maxSpecFileBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return spec, fmt.Errorf("--spec: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return spec, fmt.Errorf("--spec %s: %w", path, jsonError(b, err))
	}
	if err := tasks.ResolveProbeFiles(&spec, filepath.Dir(path)); err != nil {
		return spec, fmt.Errorf("--spec %s: %w", path, err)
	}
	return spec, nil
}

// fuseOutput is what `fedirl fuse` writes.
type fuseOutput struct {
	Theta         []float64 `json:"theta"`
	Method        string    `json:"method"`
	Weights       []float64 `json:"weights"`
	MarginalError float64   `json:"marginal_error"`
	Iterations    int       `json:"iterations"`
	OutlierScores []float64 `json:"outlier_scores"`
	Seconds       float64   `json:"seconds"`
}

// newFuseCmd builds "fedirl fuse".
func newFuseCmd() *cobra.Command {
	var spec, method, out, demoCounts string
	cmd := &cobra.Command{
		Use:   "fuse --spec task.json [--method M] THETA_FILE...",
		Short: "Fuse clients' θ by any registry method on a task's probe, without a server",
		Long: `fuse runs the server's fusion step on θ files: the task spec (the JSON of
"fedirl server task create --spec": family, theta_dim, probe, fusion) gives
the probe and the fusion options, --method overrides the spec's method
(any name of the fusion registry: ` + strings.Join(fusion.Methods(), ", ") + `).
Each THETA_FILE is a JSON array, an object with a "theta" array (the output
of "fedirl irl"), or a .npy vector, in client order.

Output JSON: {"theta", "method", "weights", "marginal_error", "iterations",
"outlier_scores", "seconds"} to --out (default stdout).

  fedirl fuse --spec task.json --method barycenter a.json b.json c.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if spec == "" {
				return fmt.Errorf("--spec is required (a task spec JSON, as fedirl server task create --spec takes)")
			}
			ts, err := readTaskSpecFile(spec)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("method") {
				opt, err := fusion.DecodeOptions(ts.Fusion)
				if err != nil {
					return fmt.Errorf("--spec %s: %w", spec, err)
				}
				opt.Method = method
				if ts.Fusion, err = tasks.EncodeFusion(opt); err != nil {
					return fmt.Errorf("--method: %w", err)
				}
			}
			if ts.ID == "" {
				ts.ID = "fuse"
			}
			ts.Quorum = max(ts.Quorum, len(args))
			ts.Normalize()
			if err := ts.Validate(); err != nil {
				return fmt.Errorf("--spec %s: %w", spec, err)
			}
			fuser := tasks.NewFuser()
			if err := fuser.Validate(ts); err != nil {
				return fmt.Errorf("--spec %s: %w", spec, err)
			}
			thetas := make([][]float64, len(args))
			for i, a := range args {
				if thetas[i], err = readThetaArg(a, ts.ThetaDim); err != nil {
					return err
				}
				if len(thetas[i]) != ts.ThetaDim {
					return fmt.Errorf("%s: θ has %d entries, the task's theta_dim is %d", a, len(thetas[i]), ts.ThetaDim)
				}
			}
			counts := make([]int, len(args))
			if demoCounts != "" {
				v, err := otParseInts(demoCounts)
				if err != nil || len(v) != len(args) {
					return fmt.Errorf("--demo-counts %q: want %d whole numbers, one per θ file", demoCounts, len(args))
				}
				counts = v
			}
			start := time.Now()
			fo, err := fuser.Fuse(cmd.Context(), ts, thetas, counts)
			if err != nil {
				return err
			}
			return writeJSON(out, fuseOutput{Theta: fo.Theta, Method: fo.Method, Weights: fo.Weights, MarginalError: fo.MarginalError,
				Iterations: fo.Iterations, OutlierScores: fo.OutlierScores, Seconds: time.Since(start).Seconds()})
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec, "spec", "", "task spec JSON (family, theta_dim, probe, fusion; required)")
	f.StringVar(&method, "method", "", "fusion method, overriding the spec's: "+strings.Join(fusion.Methods(), ", "))
	f.StringVar(&demoCounts, "demo-counts", "", `comma-separated demonstration counts, one per θ file (for "weighting": "demos")`)
	f.StringVarP(&out, "out", "o", "-", "output JSON file (- for stdout)")
	return cmd
}

// readThetaArg reads θ from a JSON file (array or {"theta": [...]}) or a
// .npy vector.
func readThetaArg(path string, d int) ([]float64, error) {
	if strings.HasSuffix(path, ".npy") {
		v, _, err := readNPYFloat64(path, 0, 0, d)
		return v, err
	}
	return readTheta(path)
}

// simClient is one --client of "fedirl simulate": id=mdp,demos.
type simClient struct{ id, mdp, demos string }

// simulateOutput is what `fedirl simulate` writes.
type simulateOutput struct {
	Task    string                    `json:"task"`
	Fused   []federation.FusedResult  `json:"fused"`
	Clients []federation.ClientReport `json:"clients"`
	Spec    federation.TaskSpec       `json:"spec"`
	Seconds float64                   `json:"seconds"`
}

// newSimulateCmd builds "fedirl simulate".
func newSimulateCmd() *cobra.Command {
	var (
		spec, out, solver string
		clients           []string
		quiet             bool
	)
	cmd := &cobra.Command{
		Use:   "simulate --spec task.json --client ID=MDP,DEMOS ...",
		Short: "Run a whole federation of K clients in one process (Flower's run_simulation for fedirl)",
		Long: `simulate runs the federation's coordinator and K clients in this process,
through the same round state machine, client loop, learner and fuser as
"fedirl server" and "fedirl client" (the in-process transport, an in-memory
store): each client learns θ_i with MaxEnt IRL on its own MDP and
demonstrations (the formats of "fedirl client --mdp/--demos"), every round is
fused by the task's method, and the output holds every round's fused result
and every client's report.

The task spec is the JSON of "fedirl server task create --spec"; a missing id
is "simulation", a missing quorum the number of clients.

  fedirl simulate --spec task.json --client a=a/mdp.json,a/demos.jsonl --client b=b/mdp.npz,b/demos.npz --out sim.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if spec == "" {
				return fmt.Errorf("--spec is required (a task spec JSON, as fedirl server task create --spec takes)")
			}
			if len(clients) == 0 {
				return fmt.Errorf("--client ID=MDP,DEMOS: give at least one client")
			}
			if solver != "newton" && solver != "fixed-point" {
				return fmt.Errorf("--solver %q: want newton or fixed-point", solver)
			}
			var cs []simClient
			seen := map[string]bool{}
			for _, c := range clients {
				id, files, ok := strings.Cut(c, "=")
				m, d, ok2 := strings.Cut(files, ",")
				if !ok || !ok2 || id == "" || m == "" || d == "" {
					return fmt.Errorf("--client %q: want ID=MDP,DEMOS (e.g. alice=alice/mdp.json,alice/demos.jsonl)", c)
				}
				if seen[id] {
					return fmt.Errorf("--client %s given twice", id)
				}
				seen[id] = true
				cs = append(cs, simClient{id, m, d})
			}
			ts, err := readTaskSpecFile(spec)
			if err != nil {
				return err
			}
			if ts.ID == "" {
				ts.ID = "simulation"
			}
			if ts.Quorum == 0 {
				ts.Quorum = len(cs)
			}
			local := make([]federation.LocalClient, len(cs))
			for i, c := range cs {
				l, err := tasks.LoadMaxEntLearner(c.mdp, c.demos)
				if err != nil {
					return fmt.Errorf("client %s: %w", c.id, err)
				}
				l.Solver = mdp.Options{Newton: solver == "newton"}
				local[i] = federation.LocalClient{ID: c.id, Learner: l}
			}
			ctx, stop := interruptContext(cmd.Context())
			defer stop()
			cc := federation.ClientConfig{}
			if !quiet {
				cc.Logf = func(format string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), "fedirl simulate: "+format+"\n", a...) }
			}
			start := time.Now()
			fused, reports, err := federation.RunInProcess(ctx, ts, local, federation.InProcessConfig{Fuser: tasks.NewFuser(), Client: cc})
			if err != nil {
				if ctx.Err() != nil {
					return errInterrupted
				}
				return err
			}
			for _, rep := range reports {
				for _, r := range rep.Rounds {
					if !r.Local.Converged {
						fmt.Fprintf(cmd.ErrOrStderr(), "fedirl simulate: warning: client %s round %d: the local fit did not converge (‖∇‖ = %.3g after %d iterations: %s). %s\n",
							rep.ClientID, r.Round, r.Local.GradNorm, r.Local.Iterations, r.Local.StopReason, unconvergedHint)
					}
				}
			}
			ts.Normalize()
			return writeJSON(out, simulateOutput{Task: ts.ID, Fused: fused, Clients: reports, Spec: ts, Seconds: time.Since(start).Seconds()})
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec, "spec", "", "task spec JSON (required)")
	f.StringArrayVar(&clients, "client", nil, "a client as ID=MDP,DEMOS (repeat for each client)")
	f.StringVar(&solver, "solver", "newton", "soft Bellman solver of the local IRL: newton or fixed-point")
	f.BoolVar(&quiet, "quiet", false, "no progress lines on stderr")
	f.StringVarP(&out, "out", "o", "-", "output JSON file (- for stdout)")
	return cmd
}

// interruptContext is ctx cancelled by Ctrl-C (SIGINT) or SIGTERM.
func interruptContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

func init() {
	rootCmd.AddCommand(newFuseCmd(), newSimulateCmd())
}
