package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/fedirl/fedirl/pkg/jointopt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/federation"
)

// connHint adds the likely fix, in this command line's flags, to a
// connection failure that retrying cannot fix (federation.ConnError); other
// errors pass through unchanged.
func connHint(err error) error {
	var hint string
	switch {
	case errors.Is(err, federation.ErrPlaintextServer):
		hint = "the server was started with --insecure: give the client --insecure too (loopback only; the Python client: insecure=True), or restart the server with --tls-cert and --tls-key"
	case errors.Is(err, federation.ErrTLSServer):
		hint = "the server serves TLS: drop --insecure and pass the CA that signed its certificate with --ca (and --cert/--key for mutual TLS)"
	case errors.Is(err, federation.ErrUnknownHost):
		hint = "check the host name in --server (host:port); DNS cannot resolve it"
	case errors.Is(err, federation.ErrCertificate):
		hint = "pass the CA that signed the server's certificate with --ca, dial the name the certificate was issued for, and under mutual TLS give --cert and --key signed by the server's --client-ca (see README-federation, \"Certificates for TLS and mutual TLS\")"
	case federation.CodeOf(err) == federation.CodeUnauthenticated && strings.Contains(err.Error(), "invalid token for client"):
		// The server does not tell a caller without the task's token whether
		// the task exists, so a typo in --task reads as a bad token.
		hint = "check --task first (a misspelt task id is refused like a wrong token: the server does not say which tasks exist to a client without their token), then that --token-file holds this client's token for that task"
	default:
		return err
	}
	return fmt.Errorf("%w\n  fix: %s", err, hint)
}

// clientJournal keeps a client's report in --out while the client runs:
// the local θ (or reward) is written as soon as it is learnt and the
// receipt as soon as the server gives it, so a failure later (fusion never
// comes, the process is killed) loses neither. A rerun into the same --out
// after the task fused learns nothing, and the journal carries the earlier
// run's local result and receipt over into the new report.
type clientJournal struct {
	out    string // "" or "-": stdout, written once at the end
	prior  *federation.ClientReport
	cur    federation.ClientReport
	next   int // the round the next Learn call belongs to
	stderr io.Writer
	// fit names the local fit's stopping quantity and the settings that
	// give it more room, for the warning of an unconverged fit (the
	// lattice learner's by default).
	fit fitWords
	// spec is the task as the server gave it (nil before GetTask).
	spec *federation.TaskSpec
}

// fitWords names a learner's stopping quantity (GradNorm of its
// LocalResult) and the settings that let its fit converge.
type fitWords struct {
	gap, hint string
}

// Each learner's words for an unconverged fit.
var (
	maxEntFit = fitWords{"‖∇‖", unconvergedHint}
	sampleFit = fitWords{"‖μ_D − μ̂_π‖", "To let it converge, raise max_iter in --sample-config (and policy_steps, so that each iteration's policy is nearer the soft-optimal one)"}
	mlpFit    = fitWords{"|log-odds gap|", "To let it converge, raise max_iter in --sample-config (and policy_steps, so that each iteration's policy is nearer the one the discriminator's reward teaches)"}
)

// newClientJournal reads the report an earlier run of the same client and
// task left in out, if any. A file that is not such a report is left alone
// until the end (it is replaced only by this run's report).
func newClientJournal(stderr io.Writer, out, task, client string) *clientJournal {
	j := &clientJournal{out: out, stderr: stderr, cur: federation.ClientReport{TaskID: task, ClientID: client}, fit: maxEntFit}
	if out == "" || out == "-" {
		j.out = ""
		return j
	}
	b, err := os.ReadFile(out)
	if err != nil || len(b) == 0 {
		return j
	}
	var prior federation.ClientReport
	if json.Unmarshal(b, &prior) == nil && prior.TaskID == task && prior.ClientID == client {
		j.prior = &prior
	}
	return j
}

// round returns the report of round r in j.cur, adding it if needed.
func (j *clientJournal) round(r int) *federation.RoundReport {
	for i := range j.cur.Rounds {
		if j.cur.Rounds[i].Round == r {
			return &j.cur.Rounds[i]
		}
	}
	j.cur.Rounds = append(j.cur.Rounds, federation.RoundReport{Round: r})
	return &j.cur.Rounds[len(j.cur.Rounds)-1]
}

// save writes what the run holds so far (merged with the prior report) to
// out; a failure is a warning, since the final write reports it.
func (j *clientJournal) save() {
	if j.out == "" {
		return
	}
	if err := writeJSONAtomic(j.out, j.merged(j.cur)); err != nil {
		fmt.Fprintf(j.stderr, "fedirl client: warning: could not save the run so far: %v\n", err)
	}
}

// merged returns rep with the prior run's local result, submission and
// sent values in every round where this run has none of its own.
func (j *clientJournal) merged(rep federation.ClientReport) federation.ClientReport {
	if j.prior == nil {
		return rep
	}
	out := rep
	out.Rounds = slices.Clone(rep.Rounds)
	for _, p := range j.prior.Rounds {
		k := slices.IndexFunc(out.Rounds, func(r federation.RoundReport) bool { return r.Round == p.Round })
		if k < 0 {
			out.Rounds = append(out.Rounds, p)
			continue
		}
		r := &out.Rounds[k]
		if r.Local.Theta == nil && r.Local.Reward == nil && !r.Resent {
			r.Local = p.Local
			if r.Sent == nil && r.SentReward == nil {
				r.Sent, r.SentReward = p.Sent, p.SentReward
			}
		}
		if r.Submit == (federation.SubmitResult{}) {
			r.Submit = p.Submit
		}
		if r.Fused.Theta == nil {
			r.Fused = p.Fused
		}
	}
	slices.SortFunc(out.Rounds, func(a, b federation.RoundReport) int { return a.Round - b.Round })
	if out.Final.Theta == nil {
		out.Final = j.prior.Final
	}
	return out
}

// learner wraps l so that each local result is saved as soon as it exists;
// a learner that answers joint tasks (federation.JointLearner, and
// JointUpdater) keeps answering them through the wrapper, and one that
// refuses them with a reason (federation.JointRefuser) keeps its reason.
func (j *clientJournal) learner(l federation.Learner) federation.Learner {
	switch l := l.(type) {
	case federation.JointUpdater:
		return journalUpdater{journalLearner{l, j}, l}
	case federation.JointLearner:
		return journalJoint{journalLearner{l, j}, l}
	case federation.JointRefuser:
		return journalRefuser{journalLearner{l, j}, l}
	}
	return journalLearner{l, j}
}

// journalRefuser is a journalLearner of a federation.JointRefuser.
type journalRefuser struct {
	journalLearner
	jr federation.JointRefuser
}

// RefuseJoint implements federation.JointRefuser.
func (l journalRefuser) RefuseJoint(spec federation.TaskSpec) error { return l.jr.RefuseJoint(spec) }

// journalJoint is a journalLearner of a federation.JointLearner.
type journalJoint struct {
	journalLearner
	jl federation.JointLearner
}

// Evaluate implements federation.JointLearner.
func (l journalJoint) Evaluate(ctx context.Context, spec federation.TaskSpec, theta []float64) (jointopt.Eval, int, error) {
	return l.jl.Evaluate(ctx, spec, theta)
}

// journalUpdater is a journalLearner of a federation.JointUpdater.
type journalUpdater struct {
	journalLearner
	ju federation.JointUpdater
}

// Evaluate implements federation.JointLearner.
func (l journalUpdater) Evaluate(ctx context.Context, spec federation.TaskSpec, theta []float64) (jointopt.Eval, int, error) {
	return l.ju.Evaluate(ctx, spec, theta)
}

// LocalUpdate implements federation.JointUpdater.
func (l journalUpdater) LocalUpdate(ctx context.Context, spec federation.TaskSpec, theta []float64) ([]float64, jointopt.Eval, int, error) {
	return l.ju.LocalUpdate(ctx, spec, theta)
}

type journalLearner struct {
	federation.Learner
	j *clientJournal
}

// Learn runs the wrapped learner and saves its result.
func (l journalLearner) Learn(ctx context.Context, spec federation.TaskSpec, warm []float64) (federation.LocalResult, error) {
	res, err := l.Learner.Learn(ctx, spec, warm)
	if err == nil {
		l.j.round(l.j.next).Local = res
		l.j.save()
	}
	return res, err
}

// federation wraps fed so that the task's round and each receipt are
// recorded (and the receipt saved) as the client goes.
func (j *clientJournal) federation(fed federation.Federation) federation.Federation {
	return journalFed{fed, j}
}

type journalFed struct {
	federation.Federation
	j *clientJournal
}

// GetTask records the round the client starts in.
func (f journalFed) GetTask(ctx context.Context, task, client string) (federation.TaskInfo, error) {
	info, err := f.Federation.GetTask(ctx, task, client)
	if err == nil {
		f.j.next = info.CurrentRound
		spec := info.Spec
		f.j.spec = &spec
	}
	return info, err
}

// Submit saves the receipt (and, under privacy, what was sent).
func (f journalFed) Submit(ctx context.Context, sub federation.Submission) (federation.SubmitResult, error) {
	res, err := f.Federation.Submit(ctx, sub)
	if err == nil {
		r := f.j.round(sub.Round)
		r.Submit = res
		if sub.Privacy != nil {
			r.Sent, r.SentReward = slices.Clone(sub.Theta), slices.Clone(sub.Reward)
		}
		f.j.next = sub.Round + 1
		f.j.save()
	}
	return res, err
}

// writeJSONAtomic writes v as indented JSON to path atomically
// (report.WriteFile: a temporary file renamed over path).
func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("writing JSON to %q: %w", path, err)
	}
	return report.WriteFile(path, append(b, '\n'))
}

// writeClientReport writes a client's final report to out (the journal's
// file, or stdout), with the earlier run's local result and receipt in the
// rounds this run learnt nothing in (a rerun after the task fused). A local
// fit that did not converge is a warning on stderr (with --quiet too),
// naming the setting to raise.
func writeClientReport(stderr io.Writer, j *clientJournal, rep federation.ClientReport) error {
	learnt := false
	for _, r := range rep.Rounds {
		learnt = learnt || r.Local.Theta != nil || r.Local.Reward != nil || (r.Fused.Joint != nil && r.Submit.Round > 0)
		if (r.Local.Theta != nil || r.Local.Reward != nil) && !r.Local.Converged {
			reason := r.Local.StopReason
			if reason == "" {
				reason = "no reason given"
			}
			fmt.Fprintf(stderr, "fedirl client: warning: task %s round %d: the local fit did not converge (%s = %.3g after %d iterations: %s); its result was submitted. %s\n",
				rep.TaskID, r.Round, j.fit.gap, r.Local.GradNorm, r.Local.Iterations, reason, j.fit.hint)
		}
		if r.Fused.Warning != "" {
			fmt.Fprintf(stderr, "fedirl client: warning: task %s round %d: %s\n", rep.TaskID, r.Round, r.Fused.Warning)
		}
	}
	if !learnt && j.prior != nil {
		fmt.Fprintf(stderr, "fedirl client: task %s was fused before this run, which learnt and submitted nothing: %s keeps the local result and receipt of the run that submitted; fused θ by %s: %v\n",
			rep.TaskID, j.out, rep.Final.Method, rep.Final.Theta)
	}
	if !learnt && j.prior == nil {
		fmt.Fprintf(stderr, "fedirl client: task %s was fused before this run, which learnt and submitted nothing: the local result and receipt are in the --out of the run that submitted (rerun with that --out to keep them in one file)\n", rep.TaskID)
	}
	rep = j.merged(rep)
	if j.out == "" {
		return writeJSON("-", rep)
	}
	return writeJSONAtomic(j.out, rep)
}

// unconvergedHint names the settings that give a local fit more room.
const unconvergedHint = "To let it converge, raise the task's irl max_iter (fedirl server task create --irl-iterations, or \"irl\": {\"max_iter\": …} in --spec), or loosen its grad_tol"
