package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// TestClientRerunKeepsReport: a rerun into the same --out after the task
// fused learns nothing, and its report carries the first run's local θ and
// receipt with the fused θ; a report of another task in --out is replaced.
func TestClientRerunKeepsReport(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "report.json")
	learnt := federation.ClientReport{TaskID: "t", ClientID: "c0", Rounds: []federation.RoundReport{{Round: 1,
		Local:  federation.LocalResult{Theta: []float64{1, 2}, DemoCount: 20, Iterations: 7, Converged: true},
		Submit: federation.SubmitResult{Round: 1, Submissions: 1, Quorum: 2, Message: "accepted"}}},
		Final: federation.FusedResult{Theta: []float64{3, 4}, Method: "mean"}}
	rerun := federation.ClientReport{TaskID: "t", ClientID: "c0", Rounds: []federation.RoundReport{{Round: 1, Fused: learnt.Final}}, Final: learnt.Final}
	var stderr bytes.Buffer
	if err := writeClientReport(&stderr, newClientJournal(&stderr, out, "t", "c0"), learnt); err != nil {
		t.Fatal(err)
	}
	if err := writeClientReport(&stderr, newClientJournal(&stderr, out, "t", "c0"), rerun); err != nil {
		t.Fatal(err)
	}
	var got federation.ClientReport
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	r := got.Rounds[0]
	if !slices.Equal(r.Local.Theta, []float64{1, 2}) || r.Local.DemoCount != 20 || r.Submit.Message != "accepted" || !slices.Equal(got.Final.Theta, []float64{3, 4}) {
		t.Errorf("rerun after fusion wrote %s", b)
	}
	if !strings.Contains(stderr.String(), out+" keeps the local result") {
		t.Errorf("stderr %q", stderr.String())
	}
	// Another task's report in --out is not merged in.
	other := federation.ClientReport{TaskID: "u", ClientID: "c0", Rounds: []federation.RoundReport{{Round: 1}}, Final: learnt.Final}
	if err := writeClientReport(&stderr, newClientJournal(&stderr, out, "u", "c0"), other); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(out)
	if err := json.Unmarshal(b, &got); err != nil || got.TaskID != "u" || got.Rounds[0].Local.Theta != nil {
		t.Errorf("another task's report: %s (%v)", b, err)
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
	if err := writeClientReport(&stderr, newClientJournal(&stderr, filepath.Join(dir, "r.json"), "t", "c0"), rep); err != nil {
		t.Fatal(err)
	}
	got := stderr.String()
	if strings.Contains(got, "round 1") || !strings.Contains(got, "task t round 2: the local fit did not converge (‖∇‖ = 0.5 after 25 iterations: iteration budget 25 spent); its result was submitted. To let it converge, raise the task's irl max_iter (fedirl server task create --irl-iterations") {
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
	if err := writeClientReport(&stderr, newClientJournal(&stderr, filepath.Join(dir, "r.json"), "t", "c0"), rep); err != nil {
		t.Fatal(err)
	}
	got := stderr.String()
	if want := "fedirl client: warning: task t round 2: " + warn + "\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}
