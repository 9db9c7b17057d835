package main

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/spf13/cobra"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/jointopt"
	"github.com/fedirl/fedirl/pkg/privacy"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// serverOptions holds the flags of "fedirl server".
type serverOptions struct {
	listen, store, addrFile              string
	tlsCert, tlsKey, clientCA, adminFile string
	insecure, init                       bool
	maxMsg, maxConns, maxStreams         int
	maxConnsPerPeer, maxTokenless        int
	readTimeout, shutdownGrace           time.Duration
	conn                                 federation.ConnLimits
	maxWatches, maxCallsPerClient        int
	reservedConns                        int
	watchLifetime                        time.Duration
	metricsListen, metricsTokenFile      string
	metricsTLS                           bool
	pprof                                string
	limits                               federation.Limits
}

// statusOptions holds the flags of "fedirl server status".
type statusOptions struct {
	server, store, out string
	tls                tlsClientFlags
	adminFile          string
	task, client       string
	pageSize           int
}

// taskOptions holds the flags of "fedirl server task create".
type taskOptions struct {
	store, spec, id, clients, tokensOut, fusionMethod, weighting, solver string
	clientsFile, sigmaMode, irlOptimizer                                 string
	trimFraction, demoCap, gradTol, mu                                   float64
	byzantine, maxDemos, maxRounds, localSteps                           int
	update, controlEnv, lattice                                          string
	server, adminFile                                                    string
	tls                                                                  tlsClientFlags
	gridSize, quorum, minClients, rounds, irlIters                       int
	seed                                                                 uint64
	deadline                                                             time.Duration
	warmStart                                                            bool
	maxNorm, maxRewardNorm, lr, l2, temperature                          float64
	dpMaxEps, dpMaxDelta, dpClip                                         float64
	dpClientClip                                                         bool
	centralEps, centralDelta, centralClip                                float64
	centralBound                                                         string
	limits                                                               federation.Limits
	mlp                                                                  mlpTaskFlags
}

type tlsClientFlags struct {
	ca, cert, key string
	insecure      bool
}

func (f *tlsClientFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.ca, "ca", "", "PEM CA bundle that signed the server certificate (TLS)")
	cmd.Flags().StringVar(&f.cert, "cert", "", "client certificate PEM for mutual TLS")
	cmd.Flags().StringVar(&f.key, "key", "", "client private key PEM for mutual TLS")
	cmd.Flags().BoolVar(&f.insecure, "insecure", false, "plaintext gRPC (loopback servers only; for the quick start)")
}

// dialAdmin dials addr with the admin token read from adminFile ("" for
// none).
func (f *tlsClientFlags) dialAdmin(addr, adminFile string) (*federation.GRPCClient, error) {
	token, err := readAdminToken(adminFile)
	if err != nil {
		return nil, err
	}
	return f.dial(addr, token)
}

func (f *tlsClientFlags) dial(addr, token string) (*federation.GRPCClient, error) {
	cfg := federation.DialConfig{Token: token}
	if !f.insecure {
		tc, err := federation.ClientTLSConfig(f.ca, f.cert, f.key)
		if err != nil {
			return nil, err
		}
		cfg.TLS = tc
	}
	return federation.DialGRPC(addr, cfg)
}

// newServerCmd builds "fedirl server" and its subcommands.
func newServerCmd() *cobra.Command {
	f := &serverOptions{}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Host federations over gRPC: accept client θ_i, fuse at quorum, serve the fused θ",
		Long: `fedirl server hosts federations ("tasks") over gRPC. Every accepted submission is
stored in an embedded bbolt database (--store) before it is acknowledged, so a
restart or kill -9 loses nothing. A round is fused when its quorum is reached, or
at its deadline with at least min_clients submissions.

Create tasks first with "fedirl server task create" (with the server stopped),
then start the server. Serve with TLS (--tls-cert/--tls-key, and --client-ca for
mutual TLS), or with --insecure for a plaintext loopback-only quick start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServer(cmd, f) },
	}
	sf := cmd.Flags()
	sf.StringVar(&f.listen, "listen", "127.0.0.1:7443", "address to listen on (host:port; port 0 picks a free port)")
	sf.StringVar(&f.store, "store", "fedirl.db", "bbolt store file holding tasks, submissions and fused results")
	sf.StringVar(&f.addrFile, "addr-file", "", "write the bound address to this file once listening")
	sf.StringVar(&f.tlsCert, "tls-cert", "", "server certificate PEM")
	sf.StringVar(&f.tlsKey, "tls-key", "", "server private key PEM")
	sf.StringVar(&f.clientCA, "client-ca", "", "CA bundle PEM for client certificates (enables mutual TLS)")
	sf.StringVar(&f.adminFile, "admin-token-file", "", "file holding the admin token required by status requests")
	sf.BoolVar(&f.insecure, "insecure", false, "serve plaintext gRPC; only allowed on a loopback address (quick start)")
	sf.IntVar(&f.maxConns, "max-connections", federation.DefaultMaxConnections, "connections held at once; when full, a new peer displaces a connection of the peer holding most, others are closed at once")
	sf.IntVar(&f.maxConnsPerPeer, "max-connections-per-peer", federation.DefaultMaxConnectionsPerPeer, "connections one IP address may hold at once (raise it for many clients behind one NAT)")
	sf.IntVar(&f.maxStreams, "max-streams-per-connection", 16, "concurrent calls per connection")
	sf.DurationVar(&f.readTimeout, "request-read-timeout", federation.DefaultRequestReadTimeout, "time a call may take to send its whole request; unfinished calls are cancelled")
	sf.IntVar(&f.maxTokenless, "max-tokenless-calls", federation.DefaultMaxTokenlessCalls, "calls without a known token in flight at once, health Checks excepted (health Watch streams, open status)")
	sf.Float64Var(&f.conn.ConnectRate, "peer-connect-rate", federation.DefaultConnectRate, "new connections per second one peer may open that do not authenticate (after --peer-connect-burst)")
	countVar(sf, &f.conn.ConnectBurst, "peer-connect-burst", federation.DefaultConnectBurst, "connections", "unauthenticated connections one peer may open at once")
	sf.DurationVar(&f.conn.UnauthenticatedTimeout, "unauthenticated-timeout", federation.DefaultUnauthenticatedTimeout, "close a connection that has not made a call with a known token (or, under mutual TLS, completed its handshake) by then")
	sf.Int64Var(&f.conn.UnauthenticatedBytes, "unauthenticated-bytes", federation.DefaultUnauthenticatedBytes, "close a connection that sends more than this before it authenticates")
	countVar(sf, &f.maxWatches, "max-watches-per-peer", federation.DefaultMaxWatchesPerPeer, "streams", "health Watch streams one peer may hold")
	countVar(sf, &f.conn.PerClient, "max-connections-per-client", federation.DefaultMaxConnectionsPerClient, "connections", "authenticated places one client id (a client of a task, or the admin token) may hold; its further connections are served but stay evictable")
	countVar(sf, &f.maxCallsPerClient, "max-calls-per-client", federation.DefaultMaxCallsPerClient, "calls", "calls one client id may have in flight across its connections")
	sf.DurationVar(&f.conn.AuthenticatedIdle, "authenticated-idle", federation.DefaultAuthenticatedIdle, "an authenticated connection without a call for this long becomes evictable again")
	sf.IntVar(&f.reservedConns, "reserved-connections", federation.DefaultReservedConnections, "places beyond --max-connections for the admin token and health Checks when every other place is authenticated (0: none)")
	sf.DurationVar(&f.watchLifetime, "watch-lifetime", federation.DefaultWatchLifetime, "end every health Watch stream after this long")
	sf.DurationVar(&f.shutdownGrace, "shutdown-grace", 5*time.Second, "on SIGTERM/SIGINT, time calls in flight get to finish before every connection is closed")
	sf.StringVar(&f.metricsListen, "metrics-listen", "", "serve Prometheus metrics over HTTP at this address (e.g. 127.0.0.1:9464); empty: none")
	sf.StringVar(&f.metricsTokenFile, "metrics-token-file", "", "file holding a bearer token that metrics requests must carry")
	sf.BoolVar(&f.metricsTLS, "metrics-tls", false, "serve metrics over HTTPS with --tls-cert and --tls-key")
	sf.StringVar(&f.pprof, "pprof", "", "serve Go's runtime profiles (/debug/pprof/) at this loopback address (e.g. 127.0.0.1:6060); empty: none")
	sf.BoolVar(&f.init, "init", false, "create --store if it does not exist (otherwise a missing store is an error)")
	sf.IntVar(&f.maxMsg, "max-message-bytes", federation.DefaultMaxMessageBytes, "largest request accepted")
	registerLimits(cmd, &f.limits)
	cmd.AddCommand(newServerStatusCmd(), newServerTaskCmd(), newServerStoreCmd(), newServerTokenCmd())
	return cmd
}

// registerLimits adds the flags of federation.Limits, the bounds a task
// must respect to be created, to cmd.
func registerLimits(cmd *cobra.Command, l *federation.Limits) {
	d := federation.DefaultLimits()
	fs := cmd.Flags()
	fs.IntVar(&l.MaxDescriptionBytes, "max-description-bytes", d.MaxDescriptionBytes, "task limit: longest description")
	fs.IntVar(&l.MaxProbePoints, "max-probe-points", d.MaxProbePoints, "task limit: most lattice points of a probe (checked before it is built)")
	fs.IntVar(&l.MaxProbeEntries, "max-probe-entries", d.MaxProbeEntries, "task limit: most entries (points × theta_dim) of a probe's feature matrix")
	fs.Float64Var(&l.MinEpsilon, "min-epsilon", d.MinEpsilon, "task limit: smallest fusion.epsilon (squared lattice spacings)")
	fs.Float64Var(&l.MaxEpsilon, "max-epsilon", d.MaxEpsilon, "task limit: largest fusion.epsilon")
	fs.IntVar(&l.MaxFusionIterations, "max-fusion-iterations", d.MaxFusionIterations, "task limit: largest fusion.max_iter")
	fs.IntVar(&l.MaxInnerIterations, "max-inner-iterations", d.MaxInnerIterations, "task limit: largest fusion.inner_iter")
	fs.IntVar(&l.MaxIRLIterations, "max-irl-iterations", d.MaxIRLIterations, "task limit: largest irl.max_iter")
}

// newServerStatusCmd builds "fedirl server status".
func newServerStatusCmd() *cobra.Command {
	f := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print tasks, clients seen, submissions and fused results (JSON)",
		Long: `fedirl server status asks a running server (--server) for its status, or reads a
store file directly (--store, only while no server holds it). Output is JSON.

Over --server the status comes in pages (each under the gRPC message limit,
whole tasks or slices of one task's clients; --page-size clients per page), which
are merged into the same JSON. --task and --client keep only that task and that
client's entries (clients allowed and seen, weights and outlier scores).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServerStatus(cmd, f) },
	}
	stf := cmd.Flags()
	stf.StringVar(&f.server, "server", "", "address of a running server (host:port)")
	stf.StringVar(&f.store, "store", "", "read this store file directly instead (server stopped)")
	stf.StringVar(&f.out, "out", "-", "output JSON file (- for stdout)")
	stf.StringVar(&f.adminFile, "admin-token-file", "", "file holding the server's admin token")
	stf.StringVar(&f.task, "task", "", "only this task")
	stf.StringVar(&f.client, "client", "", "only this client's entries")
	countVar(stf, &f.pageSize, "page-size", federation.DefaultStatusPageSize, "clients", "clients per page asked of the server (--server)")
	f.tls.register(cmd)
	return cmd
}

// newServerTaskCmd builds "fedirl server task" and its subcommands.
func newServerTaskCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "task",
		Short: "Administer tasks in a server's store",
	}
	cmd.AddCommand(newServerTaskCreateCmd(), newServerTaskListCmd(), newServerTaskDeleteCmd())
	return cmd
}

// storeStatuses opens a store read-only (checking it) and returns the status
// of every task.
func storeStatuses(path string) ([]federation.TaskStatus, error) {
	s, err := federation.OpenStoreWith(path, federation.StoreOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Statuses()
}

// newServerStoreCmd builds "fedirl server store" with its "check" verb.
func newServerStoreCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "store", Short: "Inspect a server's store file"}
	var store string
	check := &cobra.Command{
		Use:   "check",
		Short: "Check a store file read-only (bbolt consistency, truncation, every record's checksum) and report its tasks",
		Long: `fedirl server store check opens a store read-only and checks its pages
(bbolt's consistency check, truncation), then reads every record (task
definitions, round states, submissions, fused results), verifying its checksum
and decoding it. Every record that fails is named on stderr ("record
subs/TASK/ROUND/CLIENT: ..."); the command then fails. A server never fuses or
serves such a record.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := federation.OpenStoreWith(store, federation.StoreOptions{ReadOnly: true})
			if err != nil {
				return err
			}
			defer s.Close()
			sts, err := s.Statuses()
			if err != nil {
				return err
			}
			rep, err := s.CheckRecords()
			if err != nil {
				return err
			}
			bad := 0
			for _, st := range sts {
				if st.Error != "" {
					bad++
					fmt.Fprintf(cmd.ErrOrStderr(), "task %s: %s\n", st.ID, st.Error)
				}
			}
			for _, p := range rep.Problems {
				fmt.Fprintf(cmd.ErrOrStderr(), "record %s: %v\n", p.Record, p.Err)
			}
			if rep.Truncated {
				fmt.Fprintf(cmd.ErrOrStderr(), "(more damaged records than the %d listed)\n", federation.MaxCheckProblems)
			}
			if rep.Legacy {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s was written before record checksums: %d of its %d records carry none (they are read as they are); the next server start, or any offline write, adds them\n", store, rep.Unsealed, rep.Records)
			}
			if bad > 0 || len(rep.Problems) > 0 {
				return fmt.Errorf("%s: %d tasks have unreadable records, %d of %d records fail their checksum or cannot be decoded", store, bad, len(rep.Problems), rep.Records)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: consistent store, %d tasks, %d records checked\n", store, len(sts), rep.Records)
			return nil
		},
	}
	check.Flags().StringVar(&store, "store", "fedirl.db", "store file, opened read-only (a running server locks it: stop it, or use \"server status --server\")")
	cmd.AddCommand(check)
	return cmd
}

// newServerTaskListCmd builds "fedirl server task list": the tasks of a store,
// read-only.
func newServerTaskListCmd() *cobra.Command {
	var store, out string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tasks of a store file as JSON (id, round, state, clients, submissions); opens it read-only, with the server stopped",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sts, err := storeStatuses(store)
			if err != nil {
				return err
			}
			type row struct {
				ID          string `json:"id"`
				Round       int    `json:"round"`
				Rounds      int    `json:"rounds"`
				Done        bool   `json:"done"`
				Clients     int    `json:"clients"`
				Submissions int    `json:"submissions"`
				Error       string `json:"error,omitempty"`
			}
			rows := []row{}
			for _, st := range sts {
				rows = append(rows, row{st.ID, st.Round, st.Rounds, st.Done, len(st.ClientsAllowed), st.Submissions, st.Error})
			}
			return writeJSON(out, rows)
		},
	}
	cmd.Flags().StringVar(&store, "store", "fedirl.db", "store file, opened read-only (a running server locks it: stop it, or use \"server status --server\")")
	cmd.Flags().StringVar(&out, "out", "-", "output JSON file (- for stdout)")
	return cmd
}

// newServerTaskDeleteCmd builds "fedirl server task delete".
func newServerTaskDeleteCmd() *cobra.Command {
	var store, id string
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Delete a task with its submissions and fused results from a store (server stopped)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id == "" {
				return errors.New("--id is required")
			}
			s, err := federation.OpenStoreWith(store, federation.StoreOptions{})
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.DeleteTask(id); err != nil {
				return fmt.Errorf("--id %s: %w", id, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "task %s deleted from %s\n", id, store)
			return nil
		},
	}
	cmd.Flags().StringVar(&store, "store", "fedirl.db", "store file (the server must not be running on it)")
	cmd.Flags().StringVar(&id, "id", "", "task id (required)")
	return cmd
}

// newServerTaskCreateCmd builds "fedirl server task create".
func newServerTaskCreateCmd() *cobra.Command {
	f := &taskOptions{}
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Define a federation task in a store and issue one token per client",
		Long: `fedirl server task create writes a task into a store (the server must not be
running on it) and prints one bearer token per client as JSON ({"client": "token"});
only SHA-256 hashes of the tokens are stored. Give each client its token privately.

With --server (and --admin-token-file) the task is created on a running
server instead, over the admin RPC.

The task comes from --spec (a JSON task spec; for a "lattice" task a phi_file
is read relative to the spec file and stored inline, see the README's "Federate
your own problem"), or is built from flags: with
--gridworld-size N the probe is the grid-world family's probe environment for
--seed, and theta_dim is that of its grid features; with --env ENV (and
--lattice) it is a "control" task on ENV's lattice with the paper's RBF
features (theta_dim 65), the probe the control study fuses on, which lattice
clients and "fedirl client --learner sample" clients in their own simulators
join; with --mlp-weights --env ENV it is an "mlp-weights" task, FedAvg of
reward networks' weights ("fedirl client --learner mlp"): networks of
--net-hidden and --net-activation on ENV's (s, e_a) input (theta_dim their
number of weights), all clients starting round 1 from a shared
initialisation drawn from --seed or read from --net-init, or each from its
own seed's when neither is given (independent initialisations, for the
comparison), fused by a θ-space method (mean: FedAvg; --rounds with
--warm-start: FedAvg's rounds). Flags override the spec file.

A "points" task (env_family "points") has a scattered probe instead of a
lattice: "probe": {"points": [[s, a, s'], ...]} (or "points_npy", or
"points_file": an .npy of shape (points, d) read relative to the spec file and
stored inline), optional "cost_weights" (one > 0 per coordinate, default 1) and
Φ at the points ("phi", "phi_npy", "phi_file" or an "rbf" with one axis per
coordinate). At most fusion.MaxProbePoints = 131072 points of at most
fusion.MaxProbeDim = 256 coordinates, every value finite (and the probe within
256 KiB); a bad point is refused naming it, e.g. probe: points[12][3] = NaN.
Clients submit rewards at the points (or θ on Φ); every reward-space fusion
method runs on it. "fedirl client --learner mlp" clients (neural rewards)
submit their reward at points that are (s, a) steps of their simulator: the
observation's coordinates, then the action (a Discrete action as its index),
obs_dim + act_dim coordinates; "fedirl client --distill-out" then distils the
fused reward into a network.

--fusion joint makes the task's rounds gradient/Hessian rounds of the joint
likelihood (every client evaluates every round; --grad-tol and --max-rounds
stop them, --weighting demos weighs each demonstration alike); such a task
takes no --rounds, --deadline, --warm-start or --central-dp-*. --update fedavg
or fedprox (with --local-steps E, --mu μ) has each client answer with its θ
after E local Newton steps from the round's θ instead, averaged by the server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTaskCreate(cmd, f) },
	}
	tf := cmd.Flags()
	tf.StringVar(&f.store, "store", "fedirl.db", "store file to write the task into (server stopped)")
	tf.StringVar(&f.server, "server", "", "create the task on this running server instead (needs --admin-token-file)")
	tf.StringVar(&f.adminFile, "admin-token-file", "", "file holding the server's admin token (with --server)")
	f.tls.register(cmd)
	tf.StringVar(&f.spec, "spec", "", "JSON task spec file (fields of federation.TaskSpec)")
	tf.StringVar(&f.id, "id", "", "task id")
	tf.StringVar(&f.clients, "clients", "", "comma-separated client ids admitted to the task (this or --clients-file is required)")
	tf.StringVar(&f.clientsFile, "clients-file", "", "file with the admitted client ids, one per line (- for stdin; blank lines ignored), for lists too long for --clients")
	tf.StringVar(&f.tokensOut, "tokens-out", "-", "where to write the client tokens JSON (- for stdout)")
	tf.IntVar(&f.gridSize, "gridworld-size", 0, "build a grid-world task on the N×N family's probe")
	tf.StringVar(&f.controlEnv, "env", "", "build a control task on this environment's lattice (--lattice) and the paper's RBF features, as the control study does: "+strings.Join(tasks.ControlEnvNames(), ", "))
	tf.StringVar(&f.lattice, "lattice", "paper", "with --env: the lattice preset, "+strings.Join(tasks.LatticePresets, ", "))
	tf.Uint64Var(&f.seed, "seed", 1, "family seed for the grid-world probe; with --mlp-weights, the seed of the shared initialisation every client starts round 1 from (left out: each client starts from its own seed's)")
	f.mlp.register(cmd)
	tf.StringVar(&f.fusionMethod, "fusion", "", "fusion method, one of "+strings.Join(fusion.Methods(), ", ")+
		" (default mean; \""+fusion.MethodBarycentric+"\" is accepted for \""+fusion.MethodBarycenter+"\")")
	tf.StringVar(&f.sigmaMode, "sigma-mode", "", "shift of the reward-space methods: "+fusion.SigmaShared+" (default) or "+fusion.SigmaPerClient)
	tf.Float64Var(&f.trimFraction, "trim-fraction", 0, fmt.Sprintf("β of trimmed-mean and reward-trimmed-mean, 0 ≤ β < 0.5 (default %g)", fusion.DefaultTrimFraction))
	tf.IntVar(&f.byzantine, "byzantine", 0, "declared Byzantine clients f: krum and multi-krum (K > 2f+2; default ⌊(K−3)/2⌋), and the trimmed means' β (the f heaviest clients' weight; default trim_fraction)")
	tf.Float64Var(&f.demoCap, "demo-cap", 0, fmt.Sprintf("with --weighting demos: cap a client's count at this multiple (≥ 1) of the lower median count (default %g)", fusion.DefaultDemoCap))
	tf.StringVar(&f.weighting, "weighting", "", "fusion weights: uniform or demos (default uniform)")
	tf.Float64Var(&f.gradTol, "grad-tol", 0, fmt.Sprintf("with --fusion %s: stop the gradient/Hessian rounds once the summed gradient's norm is at most this (default %g)", fusion.MethodJoint, jointopt.DefaultGradTol))
	tf.StringVar(&f.update, "update", "", fmt.Sprintf("with --fusion %s: how clients answer a round: %s (value, gradient, Hessian; the server's Newton step; default), %s (E local Newton steps, averaged) or %s (the same with a proximal term, --mu)", fusion.MethodJoint, fusion.UpdateNewton, fusion.UpdateFedAvg, fusion.UpdateFedProx))
	countVar(tf, &f.localSteps, "local-steps", 0, "steps", fmt.Sprintf("with --update %s or %s: E, the local Newton steps per round, 1 to %d (default %d)", fusion.UpdateFedAvg, fusion.UpdateFedProx, fusion.MaxLocalSteps, fusion.DefaultLocalSteps))
	tf.Float64Var(&f.mu, "mu", 0, fmt.Sprintf("with --update %s: the proximal weight μ > 0 of L_i(θ) − (μ/2)‖θ − θ_r‖²", fusion.UpdateFedProx))
	countVar(tf, &f.maxRounds, "max-rounds", 0, "rounds", fmt.Sprintf("with --fusion %s: the most gradient/Hessian rounds (trial points), 1 to %d (default %d); the task's rounds", fusion.MethodJoint, jointopt.MaxRoundsLimit, jointopt.DefaultMaxRounds))
	tf.StringVar(&f.solver, "solver", "", "barycenter solver: ibp, stabilized, debiased or paper (default ibp)")
	tf.IntVar(&f.quorum, "quorum", 0, "submissions that trigger fusion (default: number of clients)")
	tf.IntVar(&f.minClients, "min-clients", 0, "submissions needed to fuse at the deadline (default: quorum)")
	tf.DurationVar(&f.deadline, "deadline", 0, "deadline, counted from a round's first submission, after which min-clients suffice (0: none)")
	tf.IntVar(&f.rounds, "rounds", 0, "number of rounds (default 1, the paper's one-shot fusion)")
	tf.BoolVar(&f.warmStart, "warm-start", false, "clients start each round from the previous fused θ")
	tf.Float64Var(&f.maxNorm, "max-theta-norm", 0, "reject θ with a larger Euclidean norm (default 1e6)")
	tf.Float64Var(&f.maxRewardNorm, "max-reward-norm", 0, fmt.Sprintf("reject a reward submission (values on the probe points) with a larger Euclidean norm (default %g)", federation.DefaultMaxRewardNorm))
	countVar(tf, &f.maxDemos, "max-demo-count", 0, "demonstrations", "reject submissions declaring more demonstrations (default: no bound; with --weighting demos a client's weight is its demo count)")
	tf.IntVar(&f.irlIters, "irl-iterations", 0, "MaxEnt IRL gradient steps (default: irl's, 100)")
	tf.Float64Var(&f.lr, "irl-learning-rate", 0, "MaxEnt IRL learning rate (default: irl's, 5e-3)")
	tf.Float64Var(&f.l2, "irl-l2", 0, "MaxEnt IRL L2 weight λ (default 0)")
	tf.Float64Var(&f.temperature, "irl-temperature", 0, "soft Bellman temperature (default: irl's, 1e-3)")
	tf.StringVar(&f.irlOptimizer, "irl-optimizer", "", `MaxEnt IRL optimizer: "gd", "adam", "lbfgs" or "newton" (exact Hessians: converges in a few steps; default: irl's, gd)`)
	tf.Float64Var(&f.dpMaxEps, "dp-max-epsilon", 0, "require every client to send θ with (ε, δ)-differential privacy over the task's rounds, ε at most this (with --dp-max-delta)")
	tf.Float64Var(&f.dpMaxDelta, "dp-max-delta", 0, "the largest δ a client may declare (with --dp-max-epsilon)")
	tf.Float64Var(&f.dpClip, "dp-clip", 0, "the clipping norm C every private client uses (with --dp-max-epsilon; choose it from public or pilot data, not from the clients' fits)")
	tf.Float64Var(&f.centralEps, "central-dp-epsilon", 0, "central differential privacy for a trusted server: every fused θ is (ε, δ)-DP over the task's rounds towards whoever sees it (mean fusion only; with --central-dp-delta and --central-dp-clip)")
	tf.Float64Var(&f.centralDelta, "central-dp-delta", 0, "δ of the central differential privacy, in (0, 1)")
	tf.Float64Var(&f.centralClip, "central-dp-clip", 0, "the norm C the server clips each θ_i to before the mean; noise N(0, (σ·2C·max α_i)² I) is added to the mean")
	tf.StringVar(&f.centralBound, "central-dp-bound", privacy.BoundMean, `how the fused θ's sensitivity is bounded: "mean" (the fusion must be a weighted mean: Δ = 2C·max α_i) or "output" (any fusion; the server clips the fused θ to C: Δ = 2C, no √K gain)`)
	tf.BoolVar(&f.dpClientClip, "dp-client-clip", false, "let each private client choose its C instead of --dp-clip (C is sent in clear: one chosen from a client's own θ leaks it)")
	registerLimits(cmd, &f.limits)
	return cmd
}

func init() {
	rootCmd.AddCommand(newServerCmd())
}

func runServer(cmd *cobra.Command, f *serverOptions) error {
	logger := log.New(os.Stderr, "fedirl server: ", log.LstdFlags|log.Lmicroseconds)
	var gcfg federation.GRPCServerConfig
	gcfg.MaxMessageBytes = f.maxMsg
	// Security events (refused requests, failed TLS handshakes) as structured
	// records on stderr, beside the human-readable progress lines.
	gcfg.Audit = federation.NewAuditLog(slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "fedirl server audit"), 0, 0)
	gcfg.RequestReadTimeout, gcfg.MaxTokenlessCalls = f.readTimeout, f.maxTokenless
	admin, err := readAdminToken(f.adminFile)
	if err != nil {
		return err
	}
	loopback := federation.IsLoopback(f.listen)
	if admin == "" && !(f.insecure && loopback) {
		// Status and CreateTask would then be token-less calls that any
		// peer may make (and that share the token-less budget).
		return errors.New("--admin-token-file is required (it guards status and remote task creation); only a plaintext quick start (--insecure on a loopback address) may run without one")
	}
	if admin != "" && !loopback && len(admin) < federation.MinAdminTokenLength {
		return fmt.Errorf("--admin-token-file: the admin token has %d characters; a server listening beyond loopback needs at least %d (128 bits as hex), e.g. from \"openssl rand -hex 32\"", len(admin), federation.MinAdminTokenLength)
	}
	switch {
	case f.insecure && f.tlsCert != "":
		return errors.New("--insecure and --tls-cert are exclusive")
	case f.insecure:
		if !federation.IsLoopback(f.listen) {
			return fmt.Errorf("--insecure is only allowed on a loopback address, not %q", f.listen)
		}
		logger.Printf("WARNING: serving plaintext gRPC (--insecure); tokens travel unencrypted on loopback")
	case f.tlsCert == "" || f.tlsKey == "":
		return errors.New("need --tls-cert and --tls-key (or --insecure on a loopback address)")
	default:
		tc, err := federation.ServerTLSConfig(f.tlsCert, f.tlsKey, f.clientCA)
		if err != nil {
			return err
		}
		gcfg.TLS = tc
	}
	for name, v := range map[string]int{"--max-connections": f.maxConns, "--max-connections-per-peer": f.maxConnsPerPeer,
		"--max-streams-per-connection": f.maxStreams, "--max-tokenless-calls": f.maxTokenless, "--max-message-bytes": f.maxMsg,
		"--peer-connect-burst": f.conn.ConnectBurst, "--max-watches-per-peer": f.maxWatches} {
		if v < 1 {
			return fmt.Errorf("%s %d: want ≥ 1", name, v)
		}
	}
	if !(f.conn.ConnectRate > 0) || math.IsInf(f.conn.ConnectRate, 0) {
		return fmt.Errorf("--peer-connect-rate %v: want a finite value > 0", f.conn.ConnectRate)
	}
	if f.conn.UnauthenticatedBytes < 1 {
		return fmt.Errorf("--unauthenticated-bytes %d: want ≥ 1", f.conn.UnauthenticatedBytes)
	}
	if f.conn.UnauthenticatedTimeout <= 0 || f.watchLifetime <= 0 || f.conn.AuthenticatedIdle <= 0 {
		return fmt.Errorf("--unauthenticated-timeout %v, --authenticated-idle %v and --watch-lifetime %v must be > 0", f.conn.UnauthenticatedTimeout, f.conn.AuthenticatedIdle, f.watchLifetime)
	}
	switch {
	case f.reservedConns < 0:
		return fmt.Errorf("--reserved-connections %d: want ≥ 0", f.reservedConns)
	case f.reservedConns == 0:
		f.conn.Reserved = -1 // none
	default:
		f.conn.Reserved = f.reservedConns
	}
	gcfg.MaxCallsPerClient = f.maxCallsPerClient
	gcfg.MaxWatchesPerPeer, gcfg.WatchLifetime = f.maxWatches, f.watchLifetime
	if err := f.limits.Validate(); err != nil {
		return err
	}
	if f.readTimeout <= 0 || f.shutdownGrace < 0 {
		return fmt.Errorf("--request-read-timeout %v must be > 0 and --shutdown-grace %v ≥ 0", f.readTimeout, f.shutdownGrace)
	}
	store, err := federation.OpenStoreWith(f.store, federation.StoreOptions{Create: f.init})
	if err != nil {
		return err
	}
	defer store.Close()
	if n := store.Migrated(); n > 0 {
		logger.Printf("store %s was written before record checksums: added a checksum to its %d records", f.store, n)
	}
	metrics := federation.NewMetrics()
	coord, err := federation.NewCoordinator(store, federation.CoordinatorConfig{
		Fuser: &tasks.Fuser{Limits: f.limits}, Limits: f.limits, AdminToken: admin, OpenStatus: f.insecure && loopback && admin == "", Logf: logger.Printf,
		Metrics: metrics, MaxMessageBytes: f.maxMsg})
	if err != nil {
		return err
	}
	defer coord.Close()
	lis, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	if f.maxMsg < 1 {
		return fmt.Errorf("--max-message-bytes %d: want ≥ 1 (leave the flag out for %d)", f.maxMsg, federation.DefaultMaxMessageBytes)
	}
	if f.maxConns < 1 || f.maxStreams < 1 {
		return fmt.Errorf("--max-connections %d and --max-streams-per-connection %d must be ≥ 1", f.maxConns, f.maxStreams)
	}
	gcfg.MaxConcurrentStreams = uint32(f.maxStreams)
	f.conn.Max, f.conn.PerPeer = f.maxConns, f.maxConnsPerPeer
	gcfg.Conns = federation.NewConnLimiter(lis, f.conn, gcfg.Audit)
	lis = metrics.CountConnections(gcfg.Conns)
	if f.metricsListen != "" {
		msrv, err := serveMetrics(f, metrics, logger)
		if err != nil {
			return err
		}
		defer msrv.Close()
	}
	if f.pprof != "" {
		if _, err := servePprof(f.pprof, logger); err != nil {
			return err
		}
	}
	addr := lis.Addr().String()
	if f.addrFile != "" {
		tmp := f.addrFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o644); err != nil {
			return fmt.Errorf("--addr-file: %w", err)
		}
		if err := os.Rename(tmp, f.addrFile); err != nil {
			return fmt.Errorf("--addr-file: %w", err)
		}
	}
	srv := federation.NewGRPCServer(coord, gcfg)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var why any = "cancelled"
		select {
		case s := <-sig:
			why = s
		case <-ctx.Done(): // the command's context (tests, an embedding program)
		}
		logger.Printf("%v: shutting down (calls in flight get %v)", why, f.shutdownGrace)
		start := time.Now()
		coord.Close()
		if federation.Shutdown(srv, f.shutdownGrace) {
			logger.Printf("closed the connections still open after %v", f.shutdownGrace)
		}
		logger.Printf("stopped in %v", time.Since(start).Round(time.Millisecond))
	}()
	logger.Printf("listening on %s, store %s", addr, f.store)
	if err := srv.Serve(lis); err != nil {
		return fmt.Errorf("serving: %w", err)
	}
	<-stopped
	return nil
}

// serveMetrics serves the Prometheus metrics on --metrics-listen (with
// --metrics-token-file and --metrics-tls), warning when they are reachable
// beyond loopback without a token or in plaintext.
func serveMetrics(f *serverOptions, metrics *federation.Metrics, logger *log.Logger) (*http.Server, error) {
	if f.metricsTLS && (f.tlsCert == "" || f.tlsKey == "") {
		return nil, errors.New("--metrics-tls needs --tls-cert and --tls-key")
	}
	token := ""
	if f.metricsTokenFile != "" {
		b, err := os.ReadFile(f.metricsTokenFile)
		if err != nil {
			return nil, fmt.Errorf("--metrics-token-file: %w", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return nil, fmt.Errorf("--metrics-token-file %s is empty", f.metricsTokenFile)
		}
	}
	if w := metricsWarning(f.metricsListen, token != "", f.metricsTLS); w != "" {
		logger.Print(w)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := metrics.Register(reg); err != nil {
		return nil, err
	}
	mlis, err := net.Listen("tcp", f.metricsListen)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s: %w", f.metricsListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", federation.MetricsHandler(reg, token))
	msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	scheme := "http"
	if f.metricsTLS {
		scheme = "https"
		go msrv.ServeTLS(mlis, f.tlsCert, f.tlsKey)
	} else {
		go msrv.Serve(mlis)
	}
	logger.Printf("metrics on %s://%s/metrics", scheme, mlis.Addr())
	return msrv, nil
}

// metricsWarning returns the warning due for metrics served on addr, or "".
func metricsWarning(addr string, token, tls bool) string {
	switch {
	case federation.IsLoopback(addr):
		return ""
	case !token:
		return fmt.Sprintf("WARNING: metrics on the non-loopback address %s are served to anyone who can reach it (task ids, submission counts, process details); set --metrics-token-file (and --metrics-tls), or listen on loopback", addr)
	case !tls:
		return fmt.Sprintf("WARNING: metrics on the non-loopback address %s are served over plaintext HTTP: the --metrics-token-file token travels unencrypted; add --metrics-tls", addr)
	}
	return ""
}

func runServerStatus(cmd *cobra.Command, f *statusOptions) error {
	var sts []federation.TaskStatus
	switch {
	case (f.server == "") == (f.store == ""):
		return errors.New("give exactly one of --server or --store")
	case f.store != "":
		var err error
		if sts, err = storeStatuses(f.store); err != nil {
			return err
		}
	default:
		c, err := f.tls.dialAdmin(f.server, f.adminFile)
		if err != nil {
			return err
		}
		defer c.Close()
		var pages [][]federation.TaskStatus
		q := federation.StatusQuery{Task: f.task, Client: f.client, PageSize: f.pageSize}
		for {
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			page, next, err := c.StatusPage(ctx, q)
			cancel()
			if err != nil {
				return connHint(fmt.Errorf("status from %s (page %d): %w", f.server, len(pages)+1, err))
			}
			pages = append(pages, page)
			if next == "" {
				break
			}
			q.PageToken = next
		}
		sts = federation.MergeStatusPages(pages)
	}
	if f.store != "" && (f.task != "" || f.client != "") {
		sts = filterStatuses(sts, f.task, f.client)
	}
	if sts == nil {
		sts = []federation.TaskStatus{}
	}
	return writeJSON(f.out, map[string]any{"tasks": sts})
}

// filterStatuses keeps the task named task ("" = all) and only client's
// entries ("" = all), as the server's filter does.
func filterStatuses(sts []federation.TaskStatus, task, client string) []federation.TaskStatus {
	var out []federation.TaskStatus
	for _, st := range sts {
		if task != "" && st.ID != task {
			continue
		}
		if client != "" {
			keep := func(ids []string) []string {
				if slices.Contains(ids, client) {
					return []string{client}
				}
				return nil
			}
			st.ClientsAllowed, st.ClientsSeen = keep(st.ClientsAllowed), keep(st.ClientsSeen)
			for i := range st.Fused {
				fr := &st.Fused[i]
				j := slices.Index(fr.Clients, client)
				fr.Clients, fr.RewardClients = keep(fr.Clients), keep(fr.RewardClients)
				if j < 0 {
					fr.Weights, fr.OutlierScores, fr.Privacy = nil, nil, nil
					continue
				}
				fr.Weights = fr.Weights[j : j+1]
				if fr.OutlierScores != nil {
					fr.OutlierScores = fr.OutlierScores[j : j+1]
				}
				if fr.Privacy != nil {
					fr.Privacy = fr.Privacy[j : j+1]
				}
			}
		}
		out = append(out, st)
	}
	return out
}

func runTaskCreate(cmd *cobra.Command, f *taskOptions) error {
	var spec federation.TaskSpec
	if f.spec != "" {
		var err error
		if spec, err = readTaskSpecFile(f.spec); err != nil {
			return err
		}
	}
	if err := f.limits.Validate(); err != nil {
		return err
	}
	if cmd.Flags().Changed("gridworld-size") {
		var err error
		if spec.Probe, spec.ThetaDim, err = tasks.GridWorldProbe(f.gridSize, f.seed, f.limits); err != nil {
			return fmt.Errorf("--gridworld-size: %w", err)
		}
		spec.EnvFamily = "gridworld"
	}
	if err := f.mlp.apply(cmd, f.controlEnv, f.seed, &spec); err != nil {
		return err
	}
	switch fl := cmd.Flags(); {
	case f.mlp.weights: // an mlp-weights task on --env's input, made above
	case fl.Changed("env") && fl.Changed("gridworld-size"):
		return errors.New("--env (a control task) and --gridworld-size (a grid-world task) are exclusive: give one")
	case fl.Changed("env"):
		var err error
		if spec.Probe, spec.ThetaDim, err = tasks.ControlTaskProbe(f.controlEnv, f.lattice, f.limits); err != nil {
			return fmt.Errorf("--env %s: %w", f.controlEnv, err)
		}
		spec.EnvFamily = tasks.Control{}.Name()
	case fl.Changed("lattice"):
		return errors.New("--lattice is the lattice of a control task: give --env with it")
	}
	if err := refuseExplicitZero(cmd, map[string]string{
		"irl-iterations":    "want ≥ 1 gradient step (leave the flag out for irl's default, 100)",
		"irl-learning-rate": "a learning rate of 0 never moves θ; want > 0",
		"irl-temperature":   "τ = 0 (a hard max) is not supported; want τ > 0",
		"quorum":            "want ≥ 1 submission (leave the flag out for the number of clients)",
		"min-clients":       "want ≥ 1 submission (leave the flag out for the quorum)",
		"rounds":            "want ≥ 1 round",
		"grad-tol":          "a gradient norm of exactly 0 is never reached; want > 0 (leave the flag out for the default)",
		"mu":                "a proximal weight of 0 is --update fedavg; want μ > 0",
		"max-theta-norm":    "a bound of 0 would refuse every θ; want > 0 (leave the flag out for 1e6)",
		"max-reward-norm":   "a bound of 0 would refuse every reward; want > 0 (leave the flag out for 1e9)",
	}); err != nil {
		return err
	}
	set := func(name string, apply func()) {
		if cmd.Flags().Changed(name) {
			apply()
		}
	}
	fopt, err := fusion.DecodeOptions(spec.Fusion)
	if err != nil {
		return fmt.Errorf("--spec %s: %w", f.spec, err)
	}
	icfg, err := tasks.DecodeIRL(spec.IRL)
	if err != nil {
		return fmt.Errorf("--spec %s: %w", f.spec, err)
	}
	var solverErr error
	set("id", func() { spec.ID = f.id })
	set("fusion", func() { fopt.Method = f.fusionMethod })
	set("sigma-mode", func() { fopt.SigmaMode = f.sigmaMode })
	set("trim-fraction", func() { fopt.TrimFraction = &f.trimFraction })
	set("byzantine", func() { fopt.Byzantine = &f.byzantine })
	set("demo-cap", func() { fopt.DemoCap = &f.demoCap })
	set("weighting", func() { fopt.Weighting = f.weighting })
	set("grad-tol", func() { fopt.GradTol = f.gradTol })
	set("max-rounds", func() { fopt.MaxRounds = f.maxRounds })
	set("update", func() { fopt.Update = f.update })
	set("local-steps", func() { fopt.LocalSteps = f.localSteps })
	set("mu", func() { fopt.Mu = f.mu })
	set("solver", func() { solverErr = fopt.Solver.UnmarshalText([]byte(f.solver)) })
	if solverErr != nil {
		return fmt.Errorf("--solver: %w", solverErr)
	}
	set("quorum", func() { spec.Quorum = f.quorum })
	set("min-clients", func() { spec.MinClients = f.minClients })
	set("deadline", func() { spec.DeadlineSeconds = f.deadline.Seconds() })
	set("rounds", func() { spec.Rounds = f.rounds })
	set("warm-start", func() { spec.WarmStart = f.warmStart })
	set("max-theta-norm", func() { spec.MaxThetaNorm = f.maxNorm })
	set("max-reward-norm", func() { spec.MaxRewardNorm = f.maxRewardNorm })
	set("max-demo-count", func() { spec.MaxDemoCount = f.maxDemos })
	set("irl-iterations", func() { icfg.MaxIter = f.irlIters })
	set("irl-learning-rate", func() { icfg.LearningRate = f.lr })
	set("irl-l2", func() { icfg.L2 = f.l2 })
	set("irl-temperature", func() { icfg.Temperature = f.temperature })
	set("irl-optimizer", func() { icfg.Optimizer = f.irlOptimizer })
	if _, err := icfg.Resolve(); err != nil {
		return fmt.Errorf("irl settings: %w", err)
	}
	if fl := cmd.Flags(); fl.Changed("dp-max-epsilon") || fl.Changed("dp-max-delta") || fl.Changed("dp-clip") || fl.Changed("dp-client-clip") {
		if !fl.Changed("dp-max-epsilon") || !fl.Changed("dp-max-delta") {
			return errors.New("--dp-max-epsilon and --dp-max-delta go together (and --dp-clip or --dp-client-clip need them)")
		}
		if fl.Changed("dp-clip") == f.dpClientClip {
			return errors.New("--dp-max-epsilon needs exactly one of --dp-clip C (the clipping norm every client uses, chosen from public or pilot data) and --dp-client-clip (each client chooses C; it travels in clear, so a C chosen from a client's own θ leaks it)")
		}
		spec.Privacy = &privacy.Requirement{MaxEpsilon: f.dpMaxEps, MaxDelta: f.dpMaxDelta, Clip: f.dpClip, ClientClip: f.dpClientClip}
		if fl.Changed("dp-clip") && !(f.dpClip > 0) {
			return fmt.Errorf("--dp-clip %v: want a finite value > 0", f.dpClip)
		}
		if err := spec.Privacy.Validate(); err != nil {
			return flagError(err, map[string]string{"max_epsilon": "dp-max-epsilon", "max_delta": "dp-max-delta", "clip": "dp-clip"})
		}
	}
	if fl := cmd.Flags(); fl.Changed("central-dp-epsilon") || fl.Changed("central-dp-delta") || fl.Changed("central-dp-clip") || fl.Changed("central-dp-bound") {
		if !fl.Changed("central-dp-epsilon") || !fl.Changed("central-dp-delta") || !fl.Changed("central-dp-clip") {
			return errors.New("--central-dp-epsilon, --central-dp-delta and --central-dp-clip go together (and --central-dp-bound needs them)")
		}
		spec.CentralPrivacy = &privacy.Central{Epsilon: f.centralEps, Delta: f.centralDelta, Clip: f.centralClip, Bound: f.centralBound}
		if err := spec.CentralPrivacy.Validate(); err != nil {
			return flagError(err, map[string]string{"epsilon": "central-dp-epsilon", "delta": "central-dp-delta", "clip": "central-dp-clip", "bound": "central-dp-bound"})
		}
	}
	if spec.Fusion, err = tasks.EncodeFusion(fopt); err != nil {
		return err
	}
	if spec.IRL, err = tasks.EncodeIRL(icfg); err != nil {
		return err
	}
	var clients []string
	switch {
	case f.clients != "" && f.clientsFile != "":
		return errors.New("--clients and --clients-file are exclusive")
	case f.clientsFile != "":
		if clients, err = readClientsFile(f.clientsFile, cmd.InOrStdin()); err != nil {
			return err
		}
	default:
		for _, c := range strings.Split(f.clients, ",") {
			if c = strings.TrimSpace(c); c != "" {
				clients = append(clients, c)
			}
		}
	}
	if len(clients) == 0 {
		return errors.New("--clients or --clients-file: list at least one client id")
	}
	if spec.Quorum == 0 {
		spec.Quorum = len(clients)
	}
	var tokens map[string]string
	if f.server != "" {
		c, err := f.tls.dialAdmin(f.server, f.adminFile)
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
		defer cancel()
		if tokens, err = c.CreateTask(ctx, spec, clients); err != nil {
			return connHint(fmt.Errorf("creating task on %s: %w", f.server, err))
		}
		f.store = f.server
	} else {
		// Offline: the same checks as a server's CreateTask (a joint task's
		// shape, spec fields, then the task family's Validate) before
		// anything is stored.
		fuser := &tasks.Fuser{Limits: f.limits}
		if err := federation.PrepareJointTask(fuser, &spec, len(clients)); err != nil {
			return err
		}
		spec.Normalize()
		if err := spec.Validate(); err != nil {
			return err
		}
		if err := f.limits.CheckSpec(&spec); err != nil {
			return err
		}
		if err := fuser.Validate(spec); err != nil {
			return fmt.Errorf("task spec %s: %w", spec.ID, err)
		}
		if spec.CentralPrivacy != nil {
			if err := federation.CheckCentralFusion(cmd.Context(), fuser, spec); err != nil {
				return fmt.Errorf("task spec %s: %w", spec.ID, err)
			}
		}
		store, err := federation.OpenStore(f.store)
		if err != nil {
			return err
		}
		defer store.Close()
		if tokens, err = store.CreateTask(spec, clients, time.Now()); err != nil {
			return err
		}
	}
	if f.tokensOut != "" && f.tokensOut != "-" {
		b, _ := json.MarshalIndent(tokens, "", "  ")
		if err := os.WriteFile(f.tokensOut, append(b, '\n'), 0o600); err != nil {
			return fmt.Errorf("--tokens-out: %w", err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "task %s created in %s; %d client tokens written to %s\n", spec.ID, f.store, len(tokens), f.tokensOut)
		return nil
	}
	return writeJSON("-", tokens)
}

// readClientsFile reads client ids, one per line, from file ("-": stdin),
// naming the line of an invalid id.
func readClientsFile(file string, stdin io.Reader) ([]string, error) {
	r := stdin
	if file != "-" {
		fh, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("--clients-file: %w", err)
		}
		defer fh.Close()
		r = fh
	}
	var out []string
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		id := strings.TrimSpace(sc.Text())
		if id == "" {
			continue
		}
		if !federation.ValidID(id) {
			return nil, fmt.Errorf("--clients-file %s line %d: client id %q: want 1-%d characters from [A-Za-z0-9._-]", file, line, truncateID(id), federation.MaxIDLength)
		}
		out = append(out, id)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--clients-file %s: %w", file, err)
	}
	return out, nil
}

// truncateID shortens an id for an error message.
func truncateID(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// readAdminToken reads an admin token file ("" means no token).
func readAdminToken(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--admin-token-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("--admin-token-file %s is empty", file)
	}
	return tok, nil
}
