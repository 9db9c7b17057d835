package tasks_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/federation/fedtest"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/tasks"

	"github.com/fedirl/fedirl/pkg/approx"
)

// The process tests build the fedirl binary once and run real server and
// client processes on 127.0.0.1 only.

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// fedirlBinary builds ./cmd/fedirl once per test binary.
func fedirlBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("process test skipped in -short mode")
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "fedirl-bin-")
		if binErr != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		binPath = filepath.Join(binDir, "fedirl")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/fedirl")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/fedirl: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is a child process whose stderr is captured line by line.
type proc struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	done  chan struct{}
	err   error
}

func start(t *testing.T, ctx context.Context, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.CommandContext(ctx, fedirlBinary(t), args...), done: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("--- %s stderr:\n%s", name, p.output())
		}
	})
	return p
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// waitFor polls cond until it holds or the timeout expires.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *proc) wait(t *testing.T, what string, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("%s: %v\n%s", what, p.err, p.output())
		}
	case <-time.After(timeout):
		t.Fatalf("%s: still running after %v\n%s", what, timeout, p.output())
	}
}

func runCLI(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(fedirlBinary(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fedirl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// startServer starts "fedirl server" on listen and returns it with its
// bound address; security defaults to --insecure.
func startServer(t *testing.T, ctx context.Context, dir, store, listen string, security ...string) (*proc, string) {
	t.Helper()
	addrFile := filepath.Join(dir, "addr")
	os.Remove(addrFile)
	if len(security) == 0 {
		security = []string{"--insecure"}
	}
	p := start(t, ctx, "server", append([]string{"server", "--listen", listen, "--store", store, "--addr-file", addrFile}, security...)...)
	var addr string
	waitFor(t, "server address", 20*time.Second, func() bool {
		b, err := os.ReadFile(addrFile)
		addr = strings.TrimSpace(string(b))
		return err == nil && addr != ""
	})
	return p, addr
}

func readReport(t *testing.T, path string) federation.ClientReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep federation.ClientReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rep
}

// storedSpec reads a task's spec back from a store (server stopped).
func storedSpec(t *testing.T, path, id string) federation.TaskSpec {
	t.Helper()
	s, err := federation.OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	spec, err := s.Task(id)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// exportClient writes grid-world client i of the 5×5 family at seed with
// "fedirl gridworld export" and returns its MDP spec and demonstrations paths.
func exportClient(t *testing.T, dir string, seed uint64, i int) (string, string) {
	t.Helper()
	out := filepath.Join(dir, fmt.Sprintf("export-%d-%d", seed, i))
	if _, err := os.Stat(filepath.Join(out, "demos.jsonl")); err != nil {
		runCLI(t, "gridworld", "export", "--size", "5", "--clients", "4", "--client", fmt.Sprint(i), "--seed", fmt.Sprint(seed), "--out", out)
	}
	return filepath.Join(out, "mdp.json"), filepath.Join(out, "demos.jsonl")
}

var irlFlags = []string{"--irl-iterations", "100", "--irl-learning-rate", "0.05", "--irl-temperature", "1"}

// TestProcessFederationMatchesInProcess runs a 5×5 grid-world federation as a
// server process and three client processes, and checks the fused θ equals
// the in-process run on the same files (same seeds) bit for bit.
func TestProcessFederationMatchesInProcess(t *testing.T) {
	for _, method := range []string{"barycentric", "mean"} {
		t.Run(method, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			dir := t.TempDir()
			store := filepath.Join(dir, "fed.db")
			tokens := filepath.Join(dir, "tokens.json")
			// The mean run also exercises the multi-round option (2 rounds, warm start).
			rounds := map[string]int{"barycentric": 1, "mean": 2}[method]
			create := append([]string{"server", "task", "create", "--store", store, "--id", "grid5", "--gridworld-size", "5",
				"--seed", "7", "--clients", "c0,c1,c2", "--fusion", method, "--weighting", "demos", "--tokens-out", tokens,
				"--rounds", fmt.Sprint(rounds)}, irlFlags...)
			if rounds > 1 {
				create = append(create, "--warm-start")
			}
			runCLI(t, create...)
			// The barycentric run uses the plaintext loopback mode; the mean
			// run uses mutual TLS and an admin token for status.
			serverSec, adminSec := []string{"--insecure"}, []string{"--insecure"}
			clientSec := func(string) []string { return []string{"--insecure"} }
			if method == "mean" {
				ca := fedtest.NewCA(t)
				caFile := ca.WriteCA(t, dir)
				crt, key := fedtest.WritePEM(t, dir, "server", ca.Issue(t, "server", true))
				adminFile := filepath.Join(dir, "admin.token")
				os.WriteFile(adminFile, []byte("s3cret-admin\n"), 0o600)
				serverSec = []string{"--tls-cert", crt, "--tls-key", key, "--client-ca", caFile, "--admin-token-file", adminFile}
				acrt, akey := fedtest.WritePEM(t, dir, "admin", ca.Issue(t, "admin", false))
				adminSec = []string{"--ca", caFile, "--cert", acrt, "--key", akey, "--admin-token-file", adminFile}
				clientSec = func(id string) []string {
					c, k := fedtest.WritePEM(t, dir, id, ca.Issue(t, id, false))
					return []string{"--ca", caFile, "--cert", c, "--key", k}
				}
			}
			srv, addr := startServer(t, ctx, dir, store, "127.0.0.1:0", serverSec...)
			var clients []*proc
			var local []federation.LocalClient
			for i := range 3 {
				mdpPath, demosPath := exportClient(t, dir, 7, i)
				id := fmt.Sprintf("c%d", i)
				clients = append(clients, start(t, ctx, id, append([]string{"client", "--server", addr, "--task", "grid5",
					"--id", id, "--token-file", tokens, "--mdp", mdpPath, "--demos", demosPath,
					"--out", filepath.Join(dir, id+".json")}, clientSec(id)...)...))
				l, err := tasks.LoadMaxEntLearner(mdpPath, demosPath)
				if err != nil {
					t.Fatal(err)
				}
				l.Solver = mdp.Options{Newton: true} // fedirl client's default --solver
				local = append(local, federation.LocalClient{ID: id, Learner: l})
			}
			for i, c := range clients {
				c.wait(t, fmt.Sprintf("client c%d", i), 40*time.Second)
			}
			if method == "barycentric" { // a client with a wrong token is refused with a clear message
				bad := filepath.Join(dir, "bad.token")
				os.WriteFile(bad, []byte("not-the-token\n"), 0o600)
				mdpPath, demosPath := exportClient(t, dir, 7, 0)
				out, err := exec.Command(fedirlBinary(t), "client", "--server", addr, "--insecure", "--task", "grid5", "--id", "c0",
					"--token-file", bad, "--mdp", mdpPath, "--demos", demosPath, "--quiet").CombinedOutput()
				if err == nil || !strings.Contains(string(out), "task grid5: Unauthenticated: missing or unknown bearer token") {
					t.Errorf("client with a wrong token: %v\n%s", err, out)
				}
			}
			status := runCLI(t, append([]string{"server", "status", "--server", addr}, adminSec...)...)
			if method == "mean" { // admin RPC: create a second task on the running server
				remoteTokens := filepath.Join(dir, "remote-tokens.json")
				runCLI(t, append([]string{"server", "task", "create", "--server", addr, "--id", "later", "--gridworld-size", "5",
					"--clients", "d0,d1", "--tokens-out", remoteTokens}, adminSec...)...)
				var toks map[string]string
				if b, err := os.ReadFile(remoteTokens); err != nil || json.Unmarshal(b, &toks) != nil || len(toks) != 2 || len(toks["d1"]) != 64 {
					t.Fatalf("remote task tokens: %v %v", toks, err)
				}
			}
			srv.cmd.Process.Signal(syscall.SIGTERM)
			srv.wait(t, "server shutdown", 10*time.Second)

			var st struct{ Tasks []federation.TaskStatus }
			if err := json.Unmarshal(status, &st); err != nil || len(st.Tasks) != 1 {
				t.Fatalf("status %s: %v", status, err)
			}
			ts := st.Tasks[0]
			if !ts.Done || ts.TotalSubmissions != 3*rounds || len(ts.Fused) != rounds || strings.Join(ts.ClientsSeen, ",") != "c0,c1,c2" {
				t.Fatalf("status: %+v", ts)
			}
			want, _, err := federation.RunInProcess(ctx, storedSpec(t, store, "grid5"), local, federation.InProcessConfig{Fuser: tasks.NewFuser()})
			if err != nil {
				t.Fatal(err)
			}
			if len(want) != rounds {
				t.Fatalf("in-process run fused %d rounds, want %d", len(want), rounds)
			}
			for r := range rounds {
				approx.Slices(t, "server fused theta", ts.Fused[r].Theta, want[r].Theta, 0, 0)
			}
			var demoCounts []float64
			total := 0.0
			for i := range 3 {
				rep := readReport(t, filepath.Join(dir, fmt.Sprintf("c%d.json", i)))
				approx.Slices(t, "client final theta", rep.Final.Theta, want[rounds-1].Theta, 0, 0)
				if len(rep.Rounds) != rounds {
					t.Fatalf("client c%d ran %d rounds, want %d", i, len(rep.Rounds), rounds)
				}
				_, demosPath := exportClient(t, dir, 7, i)
				lines, _ := os.ReadFile(demosPath)
				n := bytes.Count(bytes.TrimSpace(lines), []byte("\n")) + 1
				if rep.Rounds[0].Local.DemoCount != n || rep.Rounds[0].Local.Iterations != 100 {
					t.Errorf("client c%d metadata %+v, want %d demos and 100 iterations", i, rep.Rounds[0].Local, n)
				}
				demoCounts = append(demoCounts, float64(n))
				total += float64(n)
			}
			for i := range demoCounts {
				demoCounts[i] /= total
			}
			approx.Slices(t, "demo-count weights", ts.Fused[0].Weights, demoCounts, 1e-15, 0)
			for r := range rounds {
				t.Logf("%s round %d fused theta %v (marginal error %.3g, %d iterations)", method, r+1, want[r].Theta, want[r].MarginalError, want[r].Iterations)
			}
		})
	}
}

// TestProcessServerKilled kills the server with SIGKILL after two of four
// submissions, restarts it on the same store and port, and checks the
// federation completes at the deadline with the three clients that stayed
// (one disconnects mid-run), with nothing lost or duplicated.
func TestProcessServerKilled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	store := filepath.Join(dir, "fed.db")
	tokens := filepath.Join(dir, "tokens.json")
	runCLI(t, append([]string{"server", "task", "create", "--store", store, "--id", "fault", "--gridworld-size", "5",
		"--seed", "3", "--clients", "c0,c1,c2,c3", "--quorum", "4", "--min-clients", "3", "--deadline", "3s",
		"--fusion", "mean", "--tokens-out", tokens}, irlFlags...)...)
	srv, addr := startServer(t, ctx, dir, store, "127.0.0.1:0")
	client := func(i int, extra ...string) *proc {
		mdpPath, demosPath := exportClient(t, dir, 3, i)
		id := fmt.Sprintf("c%d", i)
		args := append([]string{"client", "--server", addr, "--insecure", "--task", "fault", "--id", id,
			"--token-file", tokens, "--mdp", mdpPath, "--demos", demosPath, "--out", filepath.Join(dir, id+".json")}, extra...)
		return start(t, ctx, id, args...)
	}
	c0, c1 := client(0), client(1)
	c3 := client(3, "--pause-before-submit", "60s")
	waitFor(t, "two submissions", 30*time.Second, func() bool {
		return strings.Contains(c0.output(), "round 1: submitted") && strings.Contains(c1.output(), "round 1: submitted") &&
			strings.Contains(c3.output(), "pausing")
	})
	srv.cmd.Process.Signal(syscall.SIGKILL)
	<-srv.done
	c3.cmd.Process.Signal(syscall.SIGKILL) // disconnects mid-run, never submits
	<-c3.done
	c2 := client(2) // starts while the server is down: retries with back-off
	time.Sleep(300 * time.Millisecond)
	srv2, _ := startServer(t, ctx, dir, store, addr)
	for i, c := range []*proc{c0, c1, c2} {
		c.wait(t, fmt.Sprintf("client c%d", i), 40*time.Second)
	}
	if !strings.Contains(c2.output(), "retrying") {
		t.Errorf("client c2 never retried:\n%s", c2.output())
	}
	srv2.cmd.Process.Signal(syscall.SIGTERM)
	srv2.wait(t, "server shutdown", 10*time.Second)

	s, err := federation.OpenStore(store)
	if err != nil {
		t.Fatal(err)
	}
	subs, err := s.Submissions("fault", 1)
	sts, err2 := s.Statuses()
	s.Close()
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	if len(subs) != 3 || sts[0].TotalSubmissions != 3 {
		t.Fatalf("%d submissions stored (total %d), want exactly 3", len(subs), sts[0].TotalSubmissions)
	}
	fused := sts[0].Fused[0]
	if strings.Join(fused.Clients, ",") != "c0,c1,c2" || fused.Trigger != "deadline" {
		t.Fatalf("fused provenance: clients %v trigger %s", fused.Clients, fused.Trigger)
	}
	var local []federation.LocalClient
	for i, sub := range subs {
		rep := readReport(t, filepath.Join(dir, sub.ClientID+".json"))
		approx.Slices(t, "stored theta = client's theta", sub.Theta, rep.Rounds[0].Local.Theta, 0, 0)
		if l := rep.Rounds[0].Local; l.Converged == (l.StopReason != "") {
			t.Errorf("%s's report: converged %v with stop reason %q (want a reason exactly when not converged)", sub.ClientID, l.Converged, l.StopReason)
		}
		approx.Slices(t, "client's fused theta", rep.Final.Theta, fused.Theta, 0, 0)
		mdpPath, demosPath := exportClient(t, dir, 3, i)
		l, err := tasks.LoadMaxEntLearner(mdpPath, demosPath)
		if err != nil {
			t.Fatal(err)
		}
		l.Solver = mdp.Options{Newton: true} // fedirl client's default --solver
		local = append(local, federation.LocalClient{ID: sub.ClientID, Learner: l})
	}
	spec := storedSpec(t, store, "fault")
	spec.Quorum, spec.DeadlineSeconds = 3, 0
	want, _, err := federation.RunInProcess(ctx, spec, local, federation.InProcessConfig{Fuser: tasks.NewFuser()})
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "fused theta vs in-process", fused.Theta, want[0].Theta, 0, 0)
}
