package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/privacy"
	"github.com/fedirl/fedirl/pkg/tasks"
)

var jointIRLFlags = []string{"--irl-temperature", "1", "--irl-l2", "0.01"}

// jointReference runs the grid-world joint task "j" of the exported
// clients in process (the same files, fedirl client's default solver): the
// uninterrupted run the process runs must match bit for bit.
func jointReference(t *testing.T, ctx context.Context, dir, store, id string, n int) []federation.FusedResult {
	t.Helper()
	var local []federation.LocalClient
	for i := range n {
		mdpPath, demosPath := exportClient(t, dir, 3, i)
		l, err := tasks.LoadMaxEntLearner(mdpPath, demosPath)
		if err != nil {
			t.Fatal(err)
		}
		l.Solver = mdp.Options{Newton: true} // fedirl client's default --solver
		local = append(local, federation.LocalClient{ID: fmt.Sprintf("c%d", i), Learner: l})
	}
	spec := storedSpec(t, store, id)
	spec.Rounds, spec.Quorum, spec.MinClients = 0, 0, 0 // set again by the joint task's creation
	want, _, err := federation.RunInProcess(ctx, spec, local, federation.InProcessConfig{Fuser: tasks.NewFuser()})
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// TestProcessJointServerKilled is acceptance 2 of issue 50: a real
// "fedirl server" running a joint task of three "fedirl client" processes
// is killed with SIGKILL three times — just after a round's first
// evaluation is acknowledged, between two rounds (a round committed, no
// evaluation of the next yet), and during the final round — and restarted
// on the same store and address each time (and one client is killed and
// restarted in between). No acknowledged evaluation is
// lost (every client's acknowledged rounds are in the store, every round
// holds all three), and every round's trial θ, accepted θ and summed value
// and the final θ equal the uninterrupted run's bit for bit.
func TestProcessJointServerKilled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	dir := t.TempDir()
	store := filepath.Join(dir, "fed.db")
	tokens := filepath.Join(dir, "tokens.json")
	runCLI(t, append([]string{"server", "task", "create", "--store", store, "--id", "j", "--gridworld-size", "5",
		"--seed", "3", "--clients", "c0,c1,c2", "--fusion", "joint", "--weighting", "demos", "--tokens-out", tokens}, jointIRLFlags...)...)
	want := jointReference(t, ctx, dir, store, "j", 3)
	final := len(want)
	if final < 5 || !want[final-1].Joint.Done || want[final-1].Joint.Reason != "converged" {
		t.Fatalf("the uninterrupted run: %d rounds, last %+v; want ≥ 5 rounds, converged", final, want[final-1].Joint)
	}

	srv, addr := startServer(t, ctx, dir, store, "127.0.0.1:0")
	// Staggered pauses before each submission: a round's evaluations reach
	// the server 200, 600 and 1000 ms after it opens, so every kill point
	// below is a window of at least 200 ms (a kill that comes late under
	// load is still a kill, and the log says where it fell).
	var clients []*proc
	for i, pause := range []string{"200ms", "600ms", "1000ms"} {
		mdpPath, demosPath := exportClient(t, dir, 3, i)
		id := fmt.Sprintf("c%d", i)
		clients = append(clients, start(t, ctx, id, "client", "--server", addr, "--insecure", "--task", "j", "--id", id,
			"--token-file", tokens, "--mdp", mdpPath, "--demos", demosPath, "--out", filepath.Join(dir, id+".json"),
			"--pause-before-submit", pause))
	}
	kill := func(what, after, before string) {
		t.Helper()
		waitFor(t, what, 60*time.Second, func() bool { return strings.Contains(srv.output(), after) })
		srv.cmd.Process.Signal(syscall.SIGKILL)
		<-srv.done
		where := "as planned"
		if strings.Contains(srv.output(), before) {
			where = "late: the server had logged " + strconv.Quote(before)
		}
		t.Logf("killed the server %s (%s)", what, where)
		srv, _ = startServer(t, ctx, dir, store, addr)
	}
	kill("after round 2's first evaluation", "task j round 2: accepted evaluation from c0 (1/3)", "task j round 2: accepted evaluation from c1")
	kill("between rounds 3 and 4", "task j round 3: joint round of 3 clients", "task j round 4: accepted")
	// A client killed too, after its round-4 evaluation was acknowledged,
	// and restarted: it resumes at the task's open round.
	waitFor(t, "c2's round 4", 60*time.Second, func() bool { return strings.Contains(clients[2].output(), "round 4: submitted evaluation") })
	clients[2].cmd.Process.Signal(syscall.SIGKILL)
	<-clients[2].done
	mdpPath, demosPath := exportClient(t, dir, 3, 2)
	clients[2] = start(t, ctx, "c2 (restarted)", "client", "--server", addr, "--insecure", "--task", "j", "--id", "c2",
		"--token-file", tokens, "--mdp", mdpPath, "--demos", demosPath, "--out", filepath.Join(dir, "c2.json"),
		"--pause-before-submit", "1000ms")
	kill(fmt.Sprintf("during the final round %d", final), fmt.Sprintf("task j round %d: accepted evaluation from c0 (1/3)", final),
		fmt.Sprintf("task j round %d: joint rounds ended", final))
	for i, c := range clients {
		c.wait(t, fmt.Sprintf("client c%d", i), 60*time.Second)
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	srv.wait(t, "server shutdown", 10*time.Second)

	s, err := federation.OpenStore(store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sts, err := s.Statuses()
	if err != nil {
		t.Fatal(err)
	}
	got := sts[0].Fused
	if !sts[0].Done || len(got) != final || sts[0].TotalSubmissions != 3*final {
		t.Fatalf("store: done %v, %d rounds, %d submissions; want done, %d rounds, %d submissions", sts[0].Done, len(got), sts[0].TotalSubmissions, final, 3*final)
	}
	for r := range final {
		a, b := got[r], want[r]
		if !sameBits(a.Theta, b.Theta) || !sameBits(a.Joint.Trial, b.Joint.Trial) || math.Float64bits(a.Joint.Value) != math.Float64bits(b.Joint.Value) {
			t.Errorf("round %d: θ %v trial %v F %v after the kills, %v %v %v uninterrupted", r+1,
				a.Theta, a.Joint.Trial, a.Joint.Value, b.Theta, b.Joint.Trial, b.Joint.Value)
		}
	}
	for i := range clients {
		id := fmt.Sprintf("c%d", i)
		rep := readReport(t, filepath.Join(dir, id+".json"))
		if !sameBits(rep.Final.Theta, want[final-1].Theta) {
			t.Errorf("%s's final θ %v, uninterrupted %v", id, rep.Final.Theta, want[final-1].Theta)
		}
		for _, rr := range rep.Rounds {
			if rr.Submit.Round == 0 {
				continue // acknowledged by no reply (the server died): the store must still hold it
			}
			subs, err := s.Submissions("j", rr.Round)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, sub := range subs {
				found = found || sub.ClientID == id
			}
			if !found {
				t.Errorf("%s's acknowledged round %d is not in the store", id, rr.Round)
			}
		}
	}
	if n := strings.Count(strings.Join([]string{clients[0].output(), clients[1].output(), clients[2].output()}, "\n"), "retrying"); n == 0 {
		t.Error("no client retried: the server was never down while a client called it")
	}
}

// TestProcessJointPrivacyLedger is acceptance 4 of issue 50 with real
// processes: two "fedirl client" processes with --dp-* run a joint task
// that requires (ε ≤ 2, δ ≤ 1e-5) over its 3 rounds; each round's release
// (value, gradient and Hessian as one clipped and noised vector) is in the
// client's ledger before it was sent and the server stores exactly it; and
// "fedirl privacy ledger --json" reports, per task and in total, the
// accountant's ε over the task's releases: privacy.Epsilon at δ of the
// declared σ composed over 3 releases, which is the declared ε = 1.
func TestProcessJointPrivacyLedger(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	store := filepath.Join(dir, "fed.db")
	tokens := filepath.Join(dir, "tokens.json")
	runCLI(t, append([]string{"server", "task", "create", "--store", store, "--id", "jdp", "--gridworld-size", "5",
		"--seed", "3", "--clients", "c0,c1", "--fusion", "joint", "--max-rounds", "3", "--tokens-out", tokens,
		"--dp-max-epsilon", "2", "--dp-max-delta", "1e-5", "--dp-clip", "5"}, jointIRLFlags...)...)
	srv, addr := startServer(t, ctx, dir, store, "127.0.0.1:0")
	var clients []*proc
	for i := range 2 {
		mdpPath, demosPath := exportClient(t, dir, 3, i)
		id := fmt.Sprintf("c%d", i)
		clients = append(clients, start(t, ctx, id, "client", "--server", addr, "--insecure", "--task", "jdp", "--id", id,
			"--token-file", tokens, "--mdp", mdpPath, "--demos", demosPath, "--out", filepath.Join(dir, id+".json"),
			"--dp-epsilon", "1", "--dp-delta", "1e-5", "--dp-ledger", filepath.Join(dir, id+"-ledger.db")))
	}
	for i, c := range clients {
		c.wait(t, fmt.Sprintf("client c%d", i), 60*time.Second)
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	srv.wait(t, "server shutdown", 10*time.Second)
	s, err := federation.OpenStore(store)
	if err != nil {
		t.Fatal(err)
	}
	sts, err := s.Statuses()
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	rounds := len(sts[0].Fused)
	if rounds != 3 || !sts[0].Done {
		s.Close()
		t.Fatalf("the task ran %d rounds (done %v), want its cap 3 (noised gradients do not reach grad_tol)", rounds, sts[0].Done)
	}
	stored := map[string][][]float64{}
	for r := 1; r <= rounds; r++ {
		subs, err := s.Submissions("jdp", r)
		if err != nil {
			s.Close()
			t.Fatal(err)
		}
		for _, sub := range subs {
			if sub.Privacy == nil || sub.DemoCount != 0 || sub.Eval == nil {
				t.Errorf("round %d %s: privacy %v, demo count %d: want a declaration and no count", r, sub.ClientID, sub.Privacy, sub.DemoCount)
				continue
			}
			stored[sub.ClientID] = append(stored[sub.ClientID], federation.PackEval(*sub.Eval))
		}
	}
	s.Close()
	var totalSigmas []float64
	var totalCounts []int
	for i := range 2 {
		id := fmt.Sprintf("c%d", i)
		file := filepath.Join(dir, id+"-ledger.db")
		l, err := privacy.OpenLedger(file)
		if err != nil {
			t.Fatal(err)
		}
		for r := 1; r <= rounds; r++ {
			rel, err := l.Released("jdp", id, r)
			if err != nil || rel == nil || rel.AckedAt.IsZero() {
				t.Fatalf("%s round %d: release %+v, %v; want one, acknowledged", id, r, rel, err)
			}
			if !sameBits(rel.Joint, stored[id][r-1]) {
				t.Errorf("%s round %d: the server stores another evaluation than the ledger's release", id, r)
			}
		}
		var sum privacy.LedgerSummary
		if err := json.Unmarshal(runCLI(t, "privacy", "ledger", "--ledger", file, "--json"), &sum); err != nil {
			t.Fatal(err)
		}
		if len(sum.Tasks) != 1 || sum.Tasks[0].Releases != rounds || sum.Releases != rounds {
			t.Fatalf("%s: ledger %+v, want %d releases of task jdp", id, sum, rounds)
		}
		d := sum.Tasks[0].Declaration
		want, err := privacy.Epsilon(d.Delta, privacy.ComposedSigma([]float64{d.Sigma}, []int{rounds}))
		if err != nil {
			t.Fatal(err)
		}
		sigma, _, err := privacy.Calibrate(1, 1e-5, rounds, privacy.ConversionAnalytic)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case d.Rounds != rounds || d.Sigma != sigma:
			t.Errorf("%s: declared σ %v over %d rounds, the accountant's σ for (1, 1e-5) over %d rounds is %v", id, d.Sigma, d.Rounds, rounds, sigma)
		case sum.Tasks[0].Epsilon != want || sum.Epsilon != want:
			t.Errorf("%s: fedirl privacy ledger reports ε %v (task) and %v (total), the accountant %v", id, sum.Tasks[0].Epsilon, sum.Epsilon, want)
		case math.Abs(want-1) > 1e-9:
			t.Errorf("%s: the accountant's ε over all %d rounds is %v, want the declared 1", id, rounds, want)
		}
		totalSigmas, totalCounts = append(totalSigmas, d.Sigma), append(totalCounts, rounds)
	}
	t.Logf("σ per release %v over %v releases: ε = 1 at δ = 1e-5 per client", totalSigmas, totalCounts)
}
