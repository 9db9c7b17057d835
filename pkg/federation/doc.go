// Package federation runs a fedirl federation as real processes: a server
// hosts tasks, persists every accepted submission in an embedded bbolt store,
// fuses client reward parameters θ_i when a quorum is reached (or at a
// deadline with at least the minimum), and serves the fused θ with its
// provenance; clients fetch a task, learn θ_i locally on private
// demonstrations, submit only θ_i, and wait for the fused θ. A client with
// its own reward model may submit its reward's values on the task's probe
// points instead of θ (Submission.Reward), fused in reward space by a
// RewardFuser (FusedResult.Reward).
//
// The logic is transport independent. Coordinator is the server core (task
// state machine, authentication, validation, quorum, fusion, idempotent
// submissions) and RunClient is the client core (learn, submit with retries,
// wait, warm-start the next round). Both talk through the Federation
// interface, which has two implementations: InProcess (direct calls, used by
// the in-process experiment runner RunInProcess) and the gRPC adapter
// (NewGRPCServer, DialGRPC). Only the transport differs between them.
//
// The gRPC server is hardened against peers that try to exhaust it
// (README-federation.md, "Attack model and limits"): connections are
// accounted per peer address with fair eviction (ConnLimiter), calls are
// screened at their headers before any request is buffered and must deliver
// their request within a read timeout, refusals go to a rate-limited audit
// log (AuditLog), shutdown is bounded (Shutdown), and tasks are checked
// against operator-set resource bounds before anything is built (Limits).
//
// The package deliberately does not implement IRL or fusion mathematics: the
// local learner and the fuser are interfaces (Learner, Fuser) wired to pkg/irl
// and pkg/fusion by the caller. It does not encrypt θ beyond TLS and does not
// offer secure aggregation; it offers client-level differential privacy of
// θ_i in two modes (README-federation.md, "Privacy"). Local: a client with
// ClientConfig.Privacy clips θ_i to the task's C and noises it (pkg/privacy)
// before it leaves, recording each release in its ledger first so that a
// restarted client re-sends it, and a task with TaskSpec.Privacy refuses
// submissions that do not declare at least the required (ε, δ) with its C.
// Central: a task with TaskSpec.CentralPrivacy has the server clip every
// θ_i and noise the weighted mean (central.go).
package federation
