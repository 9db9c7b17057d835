package tasks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shBlocks returns the commands of the ```sh blocks of a Markdown file
// between the heading from and the next heading of the same or a higher
// level, one block per entry, with continuation lines joined.
func shBlocks(t *testing.T, path, from string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n"+from+"\n")
	if i < 0 {
		t.Fatalf("%s: no heading %q", path, from)
	}
	text = text[i+len(from)+2:]
	level := strings.SplitN(from, " ", 2)[0]
	if j := regexp.MustCompile(`\n#{1,` + strconv.Itoa(len(level)) + `} `).FindStringIndex(text); j != nil {
		text = text[:j[0]]
	}
	var blocks [][]string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1) {
		joined := strings.ReplaceAll(m[1], "\\\n", "")
		var cmds []string
		for _, l := range strings.Split(joined, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				cmds = append(cmds, l)
			}
		}
		blocks = append(blocks, cmds)
	}
	return blocks
}

// TestQuickStartAndPythonExampleWordForWord follows README.md's quick start
// and then examples/python/README.md command by command, as written, in a
// fresh folder holding the built binary (the quick start's `go build` line)
// and links to the repository's examples and proto folders. The one
// change: the port 7443 is replaced by a free one. Terminal 1's server runs
// in the background; the two clients of each task run at the same time.
// It checks that every command succeeds, both tasks fuse, and nothing is
// written outside quickstart/ or left in the temporary folder.
func TestQuickStartAndPythonExampleWordForWord(t *testing.T) {
	bin := fedirlBinary(t)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	qs := shBlocks(t, filepath.Join(root, "README.md"), "### Quick start: three terminals on one machine")
	pyPage := shBlocks(t, filepath.Join(root, "examples", "python", "README.md"), "## Right after the README's quick start")
	if len(qs) != 4 || len(pyPage) != 4 {
		t.Fatalf("found %d quick-start and %d Python blocks, want 4 and 4 (terminal 1, alice, bob, status; install, terminal 1, alice, carol)", len(qs), len(pyPage))
	}
	work, tmp := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{bin, "bin/fedirl"}, {filepath.Join(root, "examples"), "examples"}, {filepath.Join(root, "proto"), "proto"}} {
		abs, _ := filepath.Abs(l[0])
		if err := os.Symlink(abs, filepath.Join(work, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	path := filepath.Join(work, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")
	py := pythonWith("grpc", "grpc_tools", "numpy")
	if py != "" {
		path = filepath.Dir(py) + string(os.PathListSeparator) + path
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	shell := func(line string) *exec.Cmd {
		c := exec.CommandContext(ctx, "bash", "-c", strings.ReplaceAll(line, "127.0.0.1:7443", addr))
		c.Dir = work
		c.Env = append(os.Environ(), "PATH="+path, "TMPDIR="+tmp)
		return c
	}
	run := func(line string) string {
		t.Helper()
		out, err := shell(line).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return string(out)
	}
	type bg struct {
		line string
		cmd  *exec.Cmd
		out  *bytes.Buffer
		done chan error
	}
	startBG := func(line string) *bg {
		p := &bg{line: line, cmd: shell("exec " + line), out: &bytes.Buffer{}, done: make(chan error, 1)}
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- p.cmd.Wait() }()
		t.Cleanup(func() { p.cmd.Process.Kill() })
		return p
	}
	wait := func(p *bg) {
		t.Helper()
		select {
		case err := <-p.done:
			if err != nil {
				t.Fatalf("%s: %v\n%s", p.line, err, p.out)
			}
		case <-ctx.Done():
			t.Fatalf("%s: still running\n%s", p.line, p.out)
		}
	}
	serverUp := func() {
		t.Helper()
		waitFor(t, "the server", 20*time.Second, func() bool {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
	// terminal1 runs a terminal-1 block: the server line in the background.
	terminal1 := func(block []string) *bg {
		var server *bg
		for _, line := range block {
			switch {
			case strings.HasPrefix(line, "go build"):
				continue // the binary is built (fedirlBinary) and on PATH
			case strings.HasPrefix(line, "fedirl server --listen"):
				server = startBG(line)
				serverUp()
			default:
				run(line)
			}
		}
		if server == nil {
			t.Fatal("terminal 1 starts no server")
		}
		return server
	}
	stop := func(server *bg) { // Ctrl-C
		server.cmd.Process.Signal(syscall.SIGINT)
		wait(server)
	}

	// README.md's quick start.
	if !strings.HasPrefix(qs[0][0], "go build -o fedirl ./cmd/fedirl") {
		t.Fatalf("terminal 1 starts with %q", qs[0][0])
	}
	server := terminal1(qs[0])
	alice, bob := startBG(qs[1][0]), startBG(qs[2][0])
	wait(alice)
	wait(bob)
	// The quick start's task converges (issue 54): no client prints a warning.
	for _, p := range []*bg{alice, bob} {
		if strings.Contains(p.out.String(), "warning") {
			t.Errorf("%s printed a warning:\n%s", p.line, p.out)
		}
	}
	if status := run(qs[3][0]); !strings.Contains(status, `"grid5"`) {
		t.Errorf("server status does not list grid5:\n%s", status)
	}
	stop(server)

	// examples/python/README.md, right after it.
	if py == "" {
		t.Skip("quick start followed; no python3 with grpc, grpc_tools and numpy for examples/python")
	}
	if !strings.HasPrefix(pyPage[0][0], "sudo apt-get install") {
		t.Fatalf("the Python page's first block is %q, want the install line", pyPage[0][0])
	}
	server = terminal1(pyPage[1])
	alice = startBG(pyPage[2][0])
	for _, line := range pyPage[3] {
		run(line)
	}
	wait(alice)
	stop(server)

	var fused struct {
		Theta   []float64 `json:"theta"`
		Clients []string  `json:"clients"`
	}
	b, err := os.ReadFile(filepath.Join(work, "quickstart", "carol-fused.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &fused); err != nil || len(fused.Theta) != 2 || strings.Join(fused.Clients, ",") != "alice,carol" {
		t.Fatalf("carol's fused result %s (%v)", b, err)
	}
	ents, _ := os.ReadDir(work)
	for _, e := range ents {
		if n := e.Name(); n != "quickstart" && n != "bin" && n != "examples" && n != "proto" {
			t.Errorf("%s written outside quickstart/", n)
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in the temporary folder: %v", ents)
	}
}
