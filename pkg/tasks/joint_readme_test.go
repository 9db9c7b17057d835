package tasks_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestJointReadmeExampleWordForWord runs README.md's "Joint-likelihood
// rounds" commands as written (after the quick start's two exports), in a
// fresh folder holding the built binary, the port 7444 replaced by a free
// one: the task is created, the server starts, both clients run at once
// and each writes a report whose final round converged.
func TestJointReadmeExampleWordForWord(t *testing.T) {
	bin := fedirlBinary(t)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	blocks := shBlocks(t, filepath.Join(root, "README.md"), "### Joint-likelihood rounds")
	if len(blocks) != 2 || len(blocks[0]) != 2 || len(blocks[1]) != 2 {
		t.Fatalf("found blocks %q, want two of two commands (create and server; alice and bob)", blocks)
	}
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
		c := exec.CommandContext(ctx, "bash", "-c", "exec "+strings.ReplaceAll(line, "127.0.0.1:7444", addr))
		c.Dir = work
		c.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		return c
	}
	for _, line := range []string{
		"fedirl gridworld export --size 5 --client 0 --seed 1 --out quickstart/alice",
		"fedirl gridworld export --size 5 --client 1 --seed 1 --out quickstart/bob",
		blocks[0][0],
	} {
		if out, err := shell(line).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	srv := shell(blocks[0][1])
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
	for i, line := range blocks[1] {
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
	for _, who := range []string{"alice", "bob"} {
		rep := readReport(t, filepath.Join(work, "quickstart", who, "joint.json"))
		if rep.Final.Joint == nil || rep.Final.Joint.Reason != "converged" || len(rep.Rounds) != rep.Final.Round {
			t.Errorf("%s: final %+v after %d rounds", who, rep.Final.Joint, len(rep.Rounds))
		}
	}
}
