package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// clientOptions holds the flags of "fedirl client".
type clientOptions struct {
	server, task, id, tokenFile, mdp, demos, out string
	solver, learner                              string
	tls                                          tlsClientFlags
	timeout, pauseBeforeSubmit                   time.Duration
	quiet, submitReward                          bool
	dp                                           dpFlags
	sample                                       sampleClientFlags
}

// newClientCmd builds "fedirl client".
func newClientCmd() *cobra.Command {
	f := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Join a federation: learn θ_i locally by MaxEnt IRL, submit it, fetch the fused θ",
		Long: `fedirl client fetches a task from a server, learns θ_i on its private
demonstrations with one of two local learners, submits only θ_i with its
demonstration count, iterations and final gradient norm, and waits for the
fused θ; with a multi-round task it warm-starts each round from the previous
fused θ. Transient failures are retried with back-off; submissions are idempotent.
The final result (and per-round provenance) is written as JSON to --out; each
round's "local" says whether the fit converged ("converged", "grad_norm",
"stop_reason"), and a fit that did not is a warning on stderr, --quiet or not.

--learner maxent (the default) runs MaxEnt IRL on the client's own lattice MDP
(--mdp, an irl JSON spec or an .npz of sparse transitions) and demonstrations
on it (--demos: JSONL of lattice indices, or an .npz of padded arrays or
imitation's trajectory fields); for a "lattice" task its features must be the
task's Φ (checked before learning; the first mismatch is named).

--learner sample is for a client with a simulator but no lattice model: it
runs sample-based MaxEnt IRL in its own simulator (--env, a Gymnasium id of
"fedirl env list", with the client's physics from --client and --param as in
"fedirl env rollout"): soft PPO on the reward θᵀφ alternating with reward
steps on μ_D − μ̂_π until the feature gap is within its standard error, on
the task's features evaluated at every simulator step. --demos is then JSON
Lines of episodes in the simulator's own spaces ({"obs": [[…], …], "actions":
[[…], …], "terminated": false}, as "fedirl env episodes --demos-out" writes),
--sample-config a YAML or JSON file of the learner's settings (policy_steps,
episodes, max_iter, learning_rate, ppo_preset, a ppo block, temperature, l2;
every key left out has its default) and --seed seeds PPO and the sampled
episodes (same seed, same θ). It takes "control" tasks on the same simulator
and "points" tasks whose probe has an rbf feature map; θ_i is on the task's
features, so it fuses with lattice clients' θ. It answers no joint task
(--fusion joint): its gradient is a Monte Carlo estimate and it has no
Hessian, so such a task is refused with the reason before anything is sent.
It prints one progress line per outer iteration.

--learner mlp is the same client with a neural reward: it learns a reward
network r_w(s, a) by AIRL (sampleirl.LearnMLP: PPO at temperature 1 on r_w
alternating with steps of the discriminator σ(r_w − log π), until the
discriminator's log-odds gap between held-out demonstrations and fresh
policy episodes is within its standard error), with the same --env,
--client, --param, --demos, --seed and --sample-config (the top-level keys
as for sample, except temperature; the network's settings in its mlp
block: net {hidden, activation, output_gain}, reward_steps, holdout (the
fraction of the demonstrations the discriminator never trains on and the
stopping rule judges on, default 0.2), distill). It takes "points" tasks whose probe points are (s, a) steps of
the simulator (the observation, then the action, a Discrete action as its
index) with a reward fusion method, and submits its reward at the points;
and "mlp-weights" tasks (fedirl server task create --mlp-weights), and
submits its network's weights (FedAvg), from the round's warm start, the
task's shared initialisation, or its own seed's. With --distill-out FILE,
once a points task is fused the fused reward at the probe is distilled
(regression, tasks.DistillReward) into a network of mlp.net's shape and
written to FILE as a reward network file (JSON; layout in package
sampleirl: sizes, activation, weights in torch.nn.Linear's order), which
"fedirl ppo train" cannot read yet: load it with sampleirl.ReadRewardNetFile
as a ppo.RewardFunc, or in numpy from the documented layout. It answers no
joint task.

The flags of one learner are refused with another, by name.

With --dp-epsilon, --dp-delta and --dp-ledger, θ_i is clipped to norm C and
N(0, (σ·2C)² I) noise from crypto/rand is added before it leaves the client,
σ calibrated so that all the task's rounds together are (ε, δ)-DP (see
"fedirl privacy sigma"); the submission declares the mechanism and carries no
demonstration count, iteration count or gradient norm. C is the task's (its
privacy requirement sets it); --dp-clip gives one only for a task that lets
clients choose, and a --dp-clip other than the task's C is refused. Each
round's noised θ is recorded in the --dp-ledger file before it is sent and
re-sent unchanged if the client is restarted, so a round is released once;
"fedirl privacy ledger" shows what the client has spent, and --dp-budget
refuses a task that would exceed a total. A task that requires privacy is
refused before learning when these flags are missing or too weak.

With --submit-reward the client brings its own reward model: the features of
--mdp are its own (any number of columns, not the task's Φ), and it submits
its learned reward Φ_c θ_c on the task's probe points (the lattice's
state–action pairs) instead of θ; the task's fusion method must take rewards
(mean, normalized-mean, barycenter, debiased, reward-median,
reward-trimmed-mean, wasserstein-median), and the fused result carries the fused reward on the
probe points beside its least-squares θ on the task's Φ. The privacy flags
clip and noise the reward vector as they do θ.

A joint task (created with --fusion joint) learns nothing locally: each round
the server sends a trial θ, the client (--learner maxent) returns its MaxEnt objective's value,
gradient and Hessian there (d + d² numbers, on --mdp and --demos), and the
server takes a Newton step on the clients' weighted sum until the task's
gradient tolerance or round cap; --out holds every round and the final θ
(final.theta, final.joint.reason). With the privacy flags each round's
evaluation is clipped, noised and recorded in the ledger before it is sent.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runClient(cmd, f) },
	}
	cf := cmd.Flags()
	cf.StringVar(&f.server, "server", "127.0.0.1:7443", "server address (host:port)")
	cf.StringVar(&f.task, "task", "", "task id (required)")
	cf.StringVar(&f.id, "id", "", "this client's id (required)")
	cf.StringVar(&f.tokenFile, "token-file", "", "file with this client's token, or the tokens JSON of task create (default: $FEDIRL_TOKEN)")
	cf.StringVar(&f.learner, "learner", learnerMaxEnt, `the local learner: "maxent" (MaxEnt IRL on --mdp), "sample" (sample-based MaxEnt IRL of a linear reward in the simulator --env) or "mlp" (a neural reward by AIRL in the simulator --env)`)
	cf.StringVar(&f.mdp, "mdp", "", "this client's MDP: irl spec JSON or .npz of sparse transitions (required with --learner maxent)")
	cf.StringVar(&f.demos, "demos", "", "this client's private demonstrations (required): JSONL or .npz on --mdp's lattice (--learner maxent), JSONL episodes in --env's spaces (--learner sample, mlp)")
	cf.StringVar(&f.out, "out", "-", "output JSON file (- for stdout)")
	cf.StringVar(&f.solver, "solver", "newton", `infinite-horizon solver of the local IRL, as in "fedirl irl": "newton" or "fixed-point" (--learner maxent)`)
	cf.DurationVar(&f.timeout, "timeout", 10*time.Minute, "give up after this long")
	cf.BoolVar(&f.quiet, "quiet", false, "no progress lines on stderr")
	cf.BoolVar(&f.submitReward, "submit-reward", false, "learn on this client's own features and submit its reward on the task's probe points instead of θ (lattice tasks; --learner maxent)")
	f.sample.register(cmd)
	cf.DurationVar(&f.pauseBeforeSubmit, "pause-before-submit", 0, "testing: sleep between learning and submitting")
	cf.MarkHidden("pause-before-submit")
	f.tls.register(cmd)
	f.dp.register(cmd)
	cmd.AddCommand(newClientEvalCmd())
	return cmd
}

func init() {
	rootCmd.AddCommand(newClientCmd())
}

// readToken returns the client's token from a file holding either the bare
// token or the {"client": "token"} JSON of task create, or from $FEDIRL_TOKEN.
func readToken(file, client string) (string, error) {
	if file == "" {
		if t := os.Getenv("FEDIRL_TOKEN"); t != "" {
			return t, nil
		}
		return "", errors.New("need --token-file or $FEDIRL_TOKEN")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("--token-file %s is empty: it should hold this client's token (or the tokens JSON that fedirl server task create --tokens-out wrote)", file)
	}
	if strings.HasPrefix(s, "{") {
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			return "", fmt.Errorf("--token-file %s: %w", file, err)
		}
		t, ok := m[client]
		if !ok {
			return "", fmt.Errorf("--token-file %s: no token for client %q (it holds %s): create a task that admits this client (fedirl server task create --clients ...)", file, client, strings.Join(slices.Sorted(maps.Keys(m)), ", "))
		}
		return t, nil
	}
	return s, nil
}

func runClient(cmd *cobra.Command, f *clientOptions) error {
	if f.timeout <= 0 {
		return fmt.Errorf("--timeout %v: want a positive duration (e.g. 10m)", f.timeout)
	}
	if err := checkLearnerFlags(cmd, f.learner); err != nil {
		return err
	}
	if f.sample.distillOut == "-" {
		return errors.New("--distill-out -: give a file name (stdout carries --out's report)")
	}
	required := map[string]string{"--task": f.task, "--id": f.id, "--demos": f.demos}
	if f.learner == learnerMaxEnt {
		required["--mdp"] = f.mdp
	} else {
		required["--env"] = f.sample.env
	}
	for _, name := range slices.Sorted(maps.Keys(required)) {
		if required[name] == "" {
			return fmt.Errorf("%s is required (with --learner %s)", name, f.learner)
		}
	}
	dp, err := f.dp.clientPrivacy(cmd)
	if err != nil {
		return err
	}
	token, err := readToken(f.tokenFile, f.id)
	if err != nil {
		return err
	}
	logger := log.New(cmd.ErrOrStderr(), "fedirl client "+f.id+": ", log.LstdFlags|log.Lmicroseconds)
	journal := newClientJournal(cmd.ErrOrStderr(), f.out, f.task, f.id)
	var learner federation.Learner
	var mlp *tasks.MLPSampleLearner
	switch f.learner {
	case learnerMaxEnt:
		if f.solver != "newton" && f.solver != "fixed-point" {
			return fmt.Errorf("--solver %q: want newton or fixed-point", f.solver)
		}
		ml, err := tasks.LoadMaxEntLearner(f.mdp, f.demos)
		if err != nil {
			return err
		}
		ml.Solver = mdp.Options{Newton: f.solver == "newton"}
		ml.SubmitReward = f.submitReward
		learner = ml
	case learnerSample:
		sl, err := f.sample.learner(f.demos)
		if err != nil {
			return err
		}
		if !f.quiet {
			sl.Logf = logger.Printf
		}
		learner, journal.fit = sl, sampleFit
	case learnerMLP:
		if mlp, err = f.sample.mlpLearner(f.demos); err != nil {
			return err
		}
		if !f.quiet {
			mlp.Logf = logger.Printf
		}
		learner, journal.fit = mlp, mlpFit
	}
	conn, err := f.tls.dial(f.server, token)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := federation.ClientConfig{TaskID: f.task, ClientID: f.id, Logf: logger.Printf}
	if f.quiet {
		cfg.Logf = nil
	}
	cfg.Privacy = dp // nil without --dp-*; noise from crypto/rand
	if f.pauseBeforeSubmit > 0 {
		cfg.BeforeSubmit = func(ctx context.Context, round int) error {
			logger.Printf("round %d: pausing %v before submitting", round, f.pauseBeforeSubmit)
			select {
			case <-time.After(f.pauseBeforeSubmit):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	rep, err := federation.RunClient(ctx, journal.federation(conn), journal.learner(learner), cfg)
	if err != nil {
		if journal.out != "" && len(journal.cur.Rounds) > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "fedirl client: %s holds what this run learnt and the receipts it got; rerun the same command to wait for the fusion again\n", journal.out)
		}
		return connHint(err)
	}
	if err := writeClientReport(cmd.ErrOrStderr(), journal, rep); err != nil {
		return err
	}
	if mlp != nil && f.sample.distillOut != "" {
		return writeDistilled(cmd.ErrOrStderr(), mlp, journal.spec, rep.Final, f.sample.distillOut)
	}
	return nil
}

// writeDistilled distils a points task's fused reward into a network of
// the client's shape and writes it to path (atomically), with a line on
// stderr saying how close it is, and a warning when the fit stopped short
// of its tolerance.
func writeDistilled(stderr io.Writer, l *tasks.MLPSampleLearner, spec *federation.TaskSpec, fused federation.FusedResult, path string) error {
	if spec == nil {
		return fmt.Errorf("--distill-out %s: the client never read the task, so there is no probe to distil at", path)
	}
	d, err := l.DistillFused(*spec, fused)
	if err != nil {
		return fmt.Errorf("--distill-out %s: %w", path, err)
	}
	b, err := d.File()
	if err != nil {
		return fmt.Errorf("--distill-out %s: %w", path, err)
	}
	if err := report.WriteFile(path, b); err != nil {
		return fmt.Errorf("--distill-out: %w", err)
	}
	p := d.Provenance
	fmt.Fprintf(stderr, "fedirl client: task %s: the fused reward (%s) distilled into a network %v at the %d probe points: RMSE %.3g, %.3g of the fused reward's standard deviation, in %d steps; written to %s\n",
		p.Task, p.Method, d.Net.Net.Sizes, p.Points, p.Fit.RMSE, p.RelativeRMSE, p.Fit.Steps, path)
	if !p.Fit.Converged {
		fmt.Fprintf(stderr, "fedirl client: warning: task %s: the distillation stopped at %d steps above its tolerance (relative RMSE %.3g); raise mlp.distill.max_steps in --sample-config, or widen mlp.net\n", p.Task, p.Fit.Steps, p.RelativeRMSE)
	}
	return nil
}
