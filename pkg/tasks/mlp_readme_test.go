package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/sampleirl"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// TestMLPClientReadmeWordForWord runs the neural-reward clients' commands
// of README.md's "A client with a simulator but no lattice" (its second
// block) as written, in a fresh folder holding the built binary, the port
// 7446 replaced by a free one: the demonstrations, the points task, the
// mlp-weights task and the settings file are made, the server starts, the
// two clients of each task run at once. On the points task both reports
// carry the mean of the two local rewards at the six points as the fused
// reward, and carol's --distill-out file reads back with
// sampleirl.ReadRewardNetFile into a network whose reward at the task's
// points is the fused reward within 2 % of its standard deviation. On the
// FedAvg task each of the two rounds' fused weights is the mean of the
// clients' weights of that round, round 2 starting from round 1's. Each
// client prints one progress line per iteration.
func TestMLPClientReadmeWordForWord(t *testing.T) {
	bin := fedirlBinary(t)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	blocks := shBlocks(t, filepath.Join(root, "README.md"), "### A client with a simulator but no lattice")
	if len(blocks) != 2 || len(blocks[1]) != 11 {
		t.Fatalf("found blocks %q, want a second of eleven commands (two demos, points spec, two tasks, settings, server, two clients per task)", blocks)
	}
	cmds := blocks[1]
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
		c := exec.CommandContext(ctx, "bash", "-c", "exec "+strings.ReplaceAll(line, "127.0.0.1:7446", addr))
		c.Dir = work
		c.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		return c
	}
	for _, line := range cmds[:6] {
		if out, err := shell(line).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	for _, i := range []int{6, 7, 9} {
		if !strings.HasSuffix(cmds[i], "&") {
			t.Fatalf("command %d should run in the background: %q", i+1, cmds[i])
		}
	}
	srv := shell(cmds[6])
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
	outs := map[string][]byte{}
	for _, pair := range [][2]int{{7, 8}, {9, 10}} {
		errs := make(chan error, 2)
		res := make([][]byte, 2)
		for j, i := range pair {
			go func() {
				var err error
				res[j], err = shell(cmds[i]).CombinedOutput()
				errs <- err
			}()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatalf("a client: %v\n%s\n%s", err, res[0], res[1])
			}
		}
		outs[fmt.Sprint(pair[0])], outs[fmt.Sprint(pair[1])] = res[0], res[1]
	}
	for k, out := range outs {
		if !strings.Contains(string(out), "neural-reward IRL iteration 1 of at most 2: log-odds gap") {
			t.Errorf("client of command %s printed no progress line:\n%s", k, out)
		}
	}

	// The points task.
	carol, dave := readReport(t, filepath.Join(work, "carol.json")), readReport(t, filepath.Join(work, "dave.json"))
	a, b := carol.Rounds[0].Local.Reward, dave.Rounds[0].Local.Reward
	if len(a) != 6 || len(b) != 6 || slices.Equal(a, b) {
		t.Fatalf("local rewards %v and %v: want two different rewards at the six points", a, b)
	}
	fused := carol.Final.Reward
	for i := range a {
		if want := (a[i] + b[i]) / 2; math.Abs(fused[i]-want) > 1e-15*math.Max(1, math.Abs(want)) || dave.Final.Reward[i] != fused[i] {
			t.Errorf("fused reward[%d] = %v (dave's %v), the mean of the local rewards is %v", i, fused[i], dave.Final.Reward[i], want)
		}
	}
	specJSON, err := os.ReadFile(filepath.Join(work, "cart-points.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec federation.TaskSpec
	if err := json.Unmarshal(specJSON, &spec); err != nil {
		t.Fatal(err)
	}
	probe, err := tasks.DecodePointProbe(spec.Probe)
	if err != nil {
		t.Fatal(err)
	}
	env, err := classic.MakeWithParams("CartPole-v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := tasks.ProbeSteps(probe.Points, env.ObservationSpace(), env.ActionSpace())
	if err != nil {
		t.Fatal(err)
	}
	dn, _, err := sampleirl.ReadRewardNetFile(filepath.Join(work, "carol-net.json"), env.ObservationSpace(), env.ActionSpace())
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float64, len(steps))
	for i, s := range steps {
		got[i] = dn.Reward(s.Obs, s.Action, nil, false)
	}
	if rel := rms(sub(got, fused)) / stddev(fused); rel > 0.02 {
		t.Errorf("the distilled network misses the fused reward by %.3g of its standard deviation, want ≤ 0.02", rel)
	}
	if !strings.Contains(string(outs["7"]), "distilled into a network [6 16 1] at the 6 probe points") {
		t.Errorf("carol's client did not report the distillation:\n%s", outs["7"])
	}

	// The FedAvg task: two rounds.
	carol, dave = readReport(t, filepath.Join(work, "carol-fedavg.json")), readReport(t, filepath.Join(work, "dave-fedavg.json"))
	if len(carol.Rounds) != 2 || len(dave.Rounds) != 2 {
		t.Fatalf("FedAvg reports of %d and %d rounds, want 2", len(carol.Rounds), len(dave.Rounds))
	}
	for r := range 2 {
		ca, da := carol.Rounds[r].Local.Theta, dave.Rounds[r].Local.Theta
		f := carol.Rounds[r].Fused.Theta
		if len(ca) != 6*16+16+16+1 || len(da) != len(ca) || slices.Equal(ca, da) || !slices.Equal(dave.Rounds[r].Fused.Theta, f) {
			t.Fatalf("round %d: weights of %d and %d values, want two different vectors of %d and one fused result", r+1, len(ca), len(da), 6*16+16+16+1)
		}
		for j := range ca {
			if want := (ca[j] + da[j]) / 2; math.Abs(f[j]-want) > 1e-15*math.Max(1, math.Abs(want)) {
				t.Fatalf("round %d: fused weight %d = %v, the mean of the clients' is %v", r+1, j, f[j], want)
			}
		}
	}
	if !slices.Equal(carol.Final.Theta, carol.Rounds[1].Fused.Theta) {
		t.Errorf("the final weights are not round 2's average")
	}
}
