package tasks_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestSampleClientReadmeWordForWord runs README.md's "A client with a
// simulator but no lattice" first block of commands as written, in a fresh folder holding
// the built binary, the port 7445 replaced by a free one: the control task
// is created, both demonstrations files and the settings file are written,
// the server starts, both sample-based clients run at once, each prints one
// progress line per outer iteration, and both reports carry the mean of
// the two local θ as the fused θ.
func TestSampleClientReadmeWordForWord(t *testing.T) {
	bin := fedirlBinary(t)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	blocks := shBlocks(t, filepath.Join(root, "README.md"), "### A client with a simulator but no lattice")
	if len(blocks) != 2 || len(blocks[0]) != 7 {
		t.Fatalf("found blocks %q, want the sample-based clients' seven commands (task, two demos, settings, server, alice, bob) and the neural-reward clients' (TestMLPClientReadmeWordForWord)", blocks)
	}
	cmds := blocks[0]
	work := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shell := func(line string) *exec.Cmd {
		line = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line), "&"))
		c := exec.CommandContext(ctx, "bash", "-c", "exec "+strings.ReplaceAll(line, "127.0.0.1:7445", addr))
		c.Dir = work
		c.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		return c
	}
	for _, line := range cmds[:4] {
		if out, err := shell(line).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	if !strings.HasSuffix(cmds[4], "&") || !strings.HasSuffix(cmds[5], "&") {
		t.Fatalf("the server and alice's client should run in the background: %q, %q", cmds[4], cmds[5])
	}
	srv := shell(cmds[4])
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	waitFor(t, "the server to listen", 20*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	errs := make(chan error, 2)
	outs := make([][]byte, 2)
	for i, line := range cmds[5:] {
		go func() {
			var err error
			outs[i], err = shell(line).CombinedOutput()
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a client: %v\n%s\n%s", err, outs[0], outs[1])
		}
	}
	var local [2][]float64
	var fused [2][]float64
	for i, who := range []string{"alice", "bob"} {
		rep := readReport(t, filepath.Join(work, who+".json"))
		if len(rep.Rounds) != 1 || len(rep.Rounds[0].Local.Theta) != 65 {
			t.Fatalf("%s: report %+v, want one round with a θ of 65 components", who, rep)
		}
		local[i], fused[i] = rep.Rounds[0].Local.Theta, rep.Final.Theta
		n := rep.Rounds[0].Local.Iterations
		for k := 1; k <= n; k++ {
			if want := fmt.Sprintf("sample IRL iteration %d of at most 2: feature gap", k); strings.Count(string(outs[i]), want) != 1 {
				t.Errorf("%s: not one progress line %q in\n%s", who, want, outs[i])
			}
		}
	}
	for j := range local[0] {
		want := (local[0][j] + local[1][j]) / 2
		for i, who := range []string{"alice", "bob"} {
			if math.Abs(fused[i][j]-want) > 1e-15*math.Max(1, math.Abs(want)) {
				t.Errorf("%s: fused θ[%d] = %v, the mean of the two local θ is %v", who, j, fused[i][j], want)
			}
		}
	}
}
