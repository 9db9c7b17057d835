package tasks_test

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/privacy"
)

// TestProcessPrivateClientKilledResends is acceptance 1 of issue 37 with
// real processes: a private "fedirl client" is killed with SIGKILL after it
// has drawn and recorded its noised θ and before it submitted; restarted
// with the same --dp-ledger it re-sends the byte-identical θ without
// learning; the server's store holds one submission from it, equal to the
// ledger's release, and "fedirl privacy ledger" shows one release,
// acknowledged.
func TestProcessPrivateClientKilledResends(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	store := filepath.Join(dir, "fed.db")
	tokens := filepath.Join(dir, "tokens.json")
	runCLI(t, append([]string{"server", "task", "create", "--store", store, "--id", "dp", "--gridworld-size", "5",
		"--seed", "3", "--clients", "c0,c1", "--fusion", "mean", "--tokens-out", tokens,
		"--dp-max-epsilon", "2", "--dp-max-delta", "1e-5", "--dp-clip", "0.05"}, irlFlags...)...)
	srv, addr := startServer(t, ctx, dir, store, "127.0.0.1:0")
	client := func(i int, extra ...string) *proc {
		mdpPath, demosPath := exportClient(t, dir, 3, i)
		id := []string{"c0", "c1"}[i]
		args := append([]string{"client", "--server", addr, "--insecure", "--task", "dp", "--id", id,
			"--token-file", tokens, "--mdp", mdpPath, "--demos", demosPath, "--out", filepath.Join(dir, id+".json"),
			"--dp-epsilon", "1", "--dp-delta", "1e-5", "--dp-ledger", filepath.Join(dir, id+"-ledger.db")}, extra...)
		return start(t, ctx, id, args...)
	}
	c0 := client(0, "--pause-before-submit", "60s")
	waitFor(t, "c0 to pause with its release recorded", 40*time.Second, func() bool { return strings.Contains(c0.output(), "pausing") })
	c0.cmd.Process.Signal(syscall.SIGKILL)
	<-c0.done
	ledger, err := privacy.OpenLedger(filepath.Join(dir, "c0-ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	released, err := ledger.Released("dp", "c0", 1)
	if err != nil || released == nil {
		t.Fatalf("the killed client's ledger holds no release of round 1: %v", err)
	}
	if released.Declaration.Clip != 0.05 || !released.AckedAt.IsZero() {
		t.Fatalf("release %+v: want C = 0.05 (the task's) and no acknowledgement", released)
	}

	c0 = client(0)
	c1 := client(1)
	c0.wait(t, "restarted client c0", 40*time.Second)
	c1.wait(t, "client c1", 40*time.Second)
	if !strings.Contains(c0.output(), "re-sending") || strings.Contains(c0.output(), "learned theta") {
		t.Errorf("the restarted client did not re-send without learning:\n%s", c0.output())
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	srv.wait(t, "server shutdown", 10*time.Second)

	s, err := federation.OpenStore(store)
	if err != nil {
		t.Fatal(err)
	}
	subs, err := s.Submissions("dp", 1)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	var mine []federation.Submission
	for _, sub := range subs {
		if sub.ClientID == "c0" {
			mine = append(mine, sub)
		}
	}
	if len(subs) != 2 || len(mine) != 1 {
		t.Fatalf("store holds %d submissions, %d of c0; want 2 and 1", len(subs), len(mine))
	}
	for k, v := range mine[0].Theta {
		if math.Float64bits(v) != math.Float64bits(released.Theta[k]) {
			t.Fatalf("stored θ %v, the ledger's release %v: not byte-identical", mine[0].Theta, released.Theta)
		}
	}
	rep := readReport(t, filepath.Join(dir, "c0.json"))
	if len(rep.Rounds) != 1 || !rep.Rounds[0].Resent {
		t.Errorf("report of the restarted client: %+v", rep.Rounds)
	}
	out := string(runCLI(t, "privacy", "ledger", "--ledger", filepath.Join(dir, "c0-ledger.db")))
	if !strings.Contains(out, "1 releases") || !strings.Contains(out, "1 of 1") {
		t.Errorf("privacy ledger:\n%s", out)
	}
	sum, err := ledger.Summary(0)
	if err != nil || sum.Releases != 1 || sum.Tasks[0].Acknowledged != 1 {
		t.Errorf("ledger summary %+v (%v): want one acknowledged release", sum, err)
	}
}
