package main

import (
	"errors"
	"fmt"
	"io"
	"os"

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
	default:
		return err
	}
	return fmt.Errorf("%w\n  fix: %s", err, hint)
}

// writeClientReport writes a client's report to out, except when this run
// learnt and submitted nothing (the task was fused before it started) and
// out already holds a report: that file keeps the local θ and the receipt
// of the run that did submit, so it is kept, and stderr says so.
// A local fit that did not converge is a warning on stderr (with --quiet
// too), and so is a fused result that carries a warning (an outlier score
// above the server's threshold).
func writeClientReport(stderr io.Writer, out string, rep federation.ClientReport) error {
	learnt := false
	for _, r := range rep.Rounds {
		learnt = learnt || r.Local.Theta != nil || r.Local.Reward != nil || (r.Fused.Joint != nil && r.Submit.Round > 0)
		if (r.Local.Theta != nil || r.Local.Reward != nil) && !r.Local.Converged {
			reason := r.Local.StopReason
			if reason == "" {
				reason = "no reason given"
			}
			fmt.Fprintf(stderr, "fedirl client: warning: task %s round %d: the local fit did not converge (‖∇‖ = %.3g after %d iterations: %s); its result was submitted\n",
				rep.TaskID, r.Round, r.Local.GradNorm, r.Local.Iterations, reason)
		}
		if r.Fused.Warning != "" {
			fmt.Fprintf(stderr, "fedirl client: warning: task %s round %d: %s\n", rep.TaskID, r.Round, r.Fused.Warning)
		}
	}
	if !learnt && out != "" && out != "-" {
		if st, err := os.Stat(out); err == nil && st.Size() > 0 {
			fmt.Fprintf(stderr, "fedirl client: task %s was fused before this run, which learnt and submitted nothing: kept %s (the report of the run that submitted); fused θ by %s: %v\n",
				rep.TaskID, out, rep.Final.Method, rep.Final.Theta)
			return nil
		}
	}
	return writeJSON(out, rep)
}
