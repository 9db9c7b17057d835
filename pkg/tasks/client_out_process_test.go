package tasks_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/federation"
)

// TestClientOutCheckedFirstAndKept (issue 54): `fedirl client --out` into a
// folder that does not exist stops before connecting (the server sees no
// call: its status lists the task without a client seen); a client writes
// its local θ and receipt to --out as soon as it has them, so a client
// killed while waiting for the fusion has lost neither; and its rerun into
// the same --out after the task fused writes that original local θ and
// receipt beside the fused θ.
func TestClientOutCheckedFirstAndKept(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	store, tokens := filepath.Join(dir, "fed.db"), filepath.Join(dir, "tokens.json")
	runCLI(t, append([]string{"server", "task", "create", "--store", store, "--id", "grid5", "--gridworld-size", "5",
		"--seed", "7", "--clients", "alice,bob", "--fusion", "mean", "--tokens-out", tokens}, irlFlags...)...)
	_, addr := startServer(t, ctx, dir, store, "127.0.0.1:0")
	client := func(id, out string) []string {
		mdpPath, demosPath := exportClient(t, dir, 7, map[string]int{"alice": 0, "bob": 1}[id])
		return []string{"client", "--server", addr, "--insecure", "--task", "grid5", "--id", id, "--token-file", tokens,
			"--mdp", mdpPath, "--demos", demosPath, "--out", out, "--quiet"}
	}

	begin := time.Now()
	b, err := exec.Command(fedirlBinary(t), client("alice", "/nonexistent/x.json")...).CombinedOutput()
	if err == nil || !strings.Contains(string(b), "--out /nonexistent/x.json: its folder /nonexistent does not exist") {
		t.Fatalf("client --out /nonexistent/x.json: %v\n%s", err, b)
	}
	t.Logf("refused in %v: %s", time.Since(begin).Round(time.Millisecond), strings.TrimSpace(string(b)))
	var st struct{ Tasks []federation.TaskStatus }
	if err := json.Unmarshal(runCLI(t, "server", "status", "--server", addr, "--insecure"), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Tasks) != 1 || len(st.Tasks[0].ClientsSeen) != 0 || st.Tasks[0].TotalSubmissions != 0 {
		t.Fatalf("the refused client reached the server: %+v", st.Tasks)
	}

	// alice learns and submits, then waits for bob: her --out holds her
	// local θ and receipt already; she is killed while waiting.
	aliceOut := filepath.Join(dir, "alice.json")
	alice := start(t, ctx, "alice", client("alice", aliceOut)...)
	var first federation.ClientReport
	waitFor(t, "alice's receipt in --out", 60*time.Second, func() bool {
		b, err := os.ReadFile(aliceOut)
		return err == nil && json.Unmarshal(b, &first) == nil && len(first.Rounds) == 1 && first.Rounds[0].Submit.Submissions == 1
	})
	alice.cmd.Process.Kill()
	<-alice.done
	r := first.Rounds[0]
	if len(r.Local.Theta) != 2 || r.Local.DemoCount == 0 || r.Local.Iterations == 0 || first.Final.Theta != nil {
		t.Fatalf("alice's --out while waiting for fusion: %+v", first)
	}

	bob := start(t, ctx, "bob", client("bob", filepath.Join(dir, "bob.json"))...)
	bob.wait(t, "bob", 60*time.Second)
	rerun := start(t, ctx, "alice rerun", client("alice", aliceOut)...)
	rerun.wait(t, "alice's rerun", 60*time.Second)
	got := readReport(t, aliceOut)
	if len(got.Rounds) != 1 || !slices.Equal(got.Rounds[0].Local.Theta, r.Local.Theta) || got.Rounds[0].Local.DemoCount != r.Local.DemoCount ||
		got.Rounds[0].Submit != r.Submit || len(got.Final.Theta) != 2 || len(got.Final.Clients) != 2 {
		t.Fatalf("alice's rerun after fusion wrote %+v, want her first run's local θ %v and receipt %+v with the fused θ", got, r.Local.Theta, r.Submit)
	}
	if !strings.Contains(rerun.output(), "keeps the local result and receipt of the run that submitted") {
		t.Errorf("the rerun did not say what it kept:\n%s", rerun.output())
	}
}
