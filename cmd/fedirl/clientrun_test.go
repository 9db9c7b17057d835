package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/federation"
)

// reported with the flag that fixes it; other errors pass through unchanged.
func TestConnHintNamesTheFlag(t *testing.T) {
	for kind, want := range map[error]string{
		federation.ErrPlaintextServer: "give the client --insecure",
		federation.ErrTLSServer:       "drop --insecure",
		federation.ErrUnknownHost:     "--server",
		federation.ErrCertificate:     "--ca",
	} {
		err := connHint(fmt.Errorf("task t: %w", &federation.ConnError{Kind: kind, Msg: "transport says"}))
		if !errors.Is(err, kind) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "transport says") {
			t.Errorf("%v: %q, want the kind, the transport's message and %q", kind, err, want)
		}
	}
	plain := errors.New("Unavailable: connection refused")
	if connHint(plain) != plain {
		t.Errorf("a transient error was rewritten: %v", connHint(plain))
	}
}

// that learnt does, and a first run writes even with nothing learnt.
func TestClientRerunKeepsReport(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "report.json")
	learnt := federation.ClientReport{TaskID: "t", ClientID: "c0", Rounds: []federation.RoundReport{{Round: 1, Local: federation.LocalResult{Theta: []float64{1, 2}}}},
		Final: federation.FusedResult{Theta: []float64{3, 4}, Method: "mean"}}
	rerun := federation.ClientReport{TaskID: "t", ClientID: "c0", Rounds: []federation.RoundReport{{Round: 1}}, Final: learnt.Final}
	var stderr bytes.Buffer
	if err := writeClientReport(&stderr, out, learnt); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(out)
	if err := writeClientReport(&stderr, out, rerun); err != nil {
		t.Fatal(err)
	}
	if kept, _ := os.ReadFile(out); !bytes.Equal(kept, first) || !strings.Contains(stderr.String(), "kept "+out) {
		t.Errorf("rerun after fusion: file changed %v, stderr %q", !bytes.Equal(kept, first), stderr.String())
	}
	fresh := filepath.Join(dir, "fresh.json")
	if err := writeClientReport(&stderr, fresh, rerun); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(fresh); err != nil || !strings.Contains(string(b), `"mean"`) {
		t.Errorf("first run with nothing learnt: %s, %v", b, err)
	}
}

// TestClientReportWarnsUnconverged: a round whose local fit did not converge
// is a warning on stderr naming the round and why; a converged one is not.
func TestClientReportWarnsUnconverged(t *testing.T) {
	dir := t.TempDir()
	rep := federation.ClientReport{TaskID: "t", ClientID: "c0", Rounds: []federation.RoundReport{
		{Round: 1, Local: federation.LocalResult{Theta: []float64{1}, Iterations: 9, GradNorm: 1e-6, Converged: true}},
		{Round: 2, Local: federation.LocalResult{Theta: []float64{1}, Iterations: 25, GradNorm: 0.5, StopReason: "iteration budget 25 spent"}}}}
	var stderr bytes.Buffer
	if err := writeClientReport(&stderr, filepath.Join(dir, "r.json"), rep); err != nil {
		t.Fatal(err)
	}
	got := stderr.String()
	if strings.Contains(got, "round 1") || !strings.Contains(got, "task t round 2: the local fit did not converge (‖∇‖ = 0.5 after 25 iterations: iteration budget 25 spent)") {
		t.Errorf("stderr %q", got)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	if !strings.Contains(string(b), `"converged": true`) || !strings.Contains(string(b), `"stop_reason": "iteration budget 25 spent"`) {
		t.Errorf("report lacks the verdicts: %s", b)
	}
}

// TestClientReportPrintsFusedWarning: a fused result that carries the
// server's outlier warning is printed on stderr with the task and round; a
// round without one prints nothing.
func TestClientReportPrintsFusedWarning(t *testing.T) {
	dir := t.TempDir()
	warn := "outlier score above 3.5 for client m0 (19.4): the fused result may be dominated by this client"
	rep := federation.ClientReport{TaskID: "t", ClientID: "c0", Rounds: []federation.RoundReport{
		{Round: 1, Local: federation.LocalResult{Theta: []float64{1}, Converged: true}},
		{Round: 2, Local: federation.LocalResult{Theta: []float64{1}, Converged: true}, Fused: federation.FusedResult{Warning: warn}}}}
	var stderr bytes.Buffer
	if err := writeClientReport(&stderr, filepath.Join(dir, "r.json"), rep); err != nil {
		t.Fatal(err)
	}
	got := stderr.String()
	if want := "fedirl client: warning: task t round 2: " + warn + "\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}
