package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/sampleirl"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// tinySampleYAML is a --sample-config of a few CPU milliseconds: a small
// PPO, two episodes per estimate, two iterations, and a tolerance no fit
// meets in two iterations, so that every θ moves off zero.
const tinySampleYAML = `episodes: 2
max_iter: 2
tolerance: 0.01
learning_rate: 0.05
ppo:
  n_envs: 1
  n_steps: 64
  batch_size: 32
  n_epochs: 1
  hidden: [8]
`

// lockedBuffer is a bytes.Buffer safe for the goroutines of one command.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// startServer runs "fedirl server" on store (plaintext, loopback, a free
// port) and returns its address and a function that stops it (cancelling
// the command's context) and waits until it has closed the store; the
// test's cleanup stops it if the test has not.
func startServer(t *testing.T, store string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrFile := filepath.Join(t.TempDir(), "addr")
	cmd := newServerCmd()
	cmd.SetArgs([]string{"--store", store, "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--insecure"})
	cmd.SetOut(new(lockedBuffer))
	cmd.SetErr(new(lockedBuffer))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("server: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("server did not stop within 10 s of its context's cancellation")
			}
		})
	}
	t.Cleanup(stop)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("server stopped: %v", err)
		default:
		}
		if b, err := os.ReadFile(addrFile); err == nil {
			return strings.TrimSpace(string(b)), stop
		}
	}
	t.Fatal("server wrote no --addr-file within 10 s")
	return "", stop
}

// sampleClientArgs are the flags of "fedirl client --learner sample" for
// client id with the paper's client physics c.
func sampleClientArgs(addr, task, id, tokens string, c int, demos, config string, seed uint64, out string) []string {
	return []string{"--server", addr, "--insecure", "--task", task, "--id", id, "--token-file", tokens, "--timeout", "1m",
		"--learner", "sample", "--env", "Pendulum-v1", "--client", fmt.Sprint(c), "--demos", demos, "--sample-config", config,
		"--seed", fmt.Sprint(seed), "--out", out}
}

// TestSampleClientsOverGRPC: a control task on Pendulum-v1 (fusion mean,
// quorum 2) made by "fedirl server task create --env", a real "fedirl
// server" and two "fedirl client --learner sample" runs with the paper's
// client physics 0 and 4 and their own demonstrations from "fedirl env
// episodes --demos-out". The server's stored submissions are the θ each
// client reports, each is what tasks.SampleLearner learns directly with
// the same simulator physics, seed, settings file and demonstrations
// (bit for bit: the flags reach the learner), the two differ, and the
// fused θ in the server's store and in both reports is their mean. Each
// client prints one progress line per outer iteration and the sample
// learner's unconverged-fit warning. A joint task on the same server is
// refused by the sample client with the learner's reason.
func TestSampleClientsOverGRPC(t *testing.T) {
	dir := t.TempDir()
	store, tokens := filepath.Join(dir, "fed.db"), filepath.Join(dir, "tokens.json")
	if err := execTaskCreate(t, "", "--store", store, "--id", "pend", "--env", "Pendulum-v1", "--fusion", "mean", "--quorum", "2",
		"--clients", "alice,bob", "--irl-temperature", "1", "--tokens-out", tokens); err != nil {
		t.Fatal(err)
	}
	jointTokens := filepath.Join(dir, "joint-tokens.json")
	if err := execTaskCreate(t, "", "--store", store, "--id", "pend-joint", "--env", "Pendulum-v1", "--fusion", "joint",
		"--clients", "alice", "--tokens-out", jointTokens); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "sample.yaml")
	if err := os.WriteFile(config, []byte(tinySampleYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	type client struct {
		id      string
		physics int
		seed    uint64
		demos   string
		out     string
		stderr  *lockedBuffer
		err     error
	}
	clients := []*client{{id: "alice", physics: 0, seed: 1}, {id: "bob", physics: 4, seed: 2}}
	for _, c := range clients {
		c.demos, _ = writeDemos(t, dir, c.physics, "random", 3, c.seed)
		c.out, c.stderr = filepath.Join(dir, c.id+".json"), new(lockedBuffer)
	}
	addr, stop := startServer(t, store)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := newClientCmd()
			cmd.SetArgs(sampleClientArgs(addr, "pend", c.id, tokens, c.physics, c.demos, config, c.seed, c.out))
			cmd.SetOut(new(lockedBuffer))
			cmd.SetErr(c.stderr)
			c.err = cmd.Execute()
		}()
	}
	wg.Wait()
	reports := map[string]federation.ClientReport{}
	for _, c := range clients {
		if c.err != nil {
			t.Fatalf("client %s: %v\n%s", c.id, c.err, c.stderr)
		}
		b, err := os.ReadFile(c.out)
		if err != nil {
			t.Fatal(err)
		}
		var rep federation.ClientReport
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		reports[c.id] = rep
		log := c.stderr.String()
		for i := 1; i <= rep.Rounds[0].Local.Iterations; i++ {
			if want := fmt.Sprintf("task pend: sample IRL iteration %d of at most 2: feature gap", i); strings.Count(log, want) != 1 {
				t.Errorf("client %s: stderr has not one line %q:\n%s", c.id, want, log)
			}
		}
		if strings.Contains(log, "iteration 3 of") {
			t.Errorf("client %s: more progress lines than iterations:\n%s", c.id, log)
		}
		if !rep.Rounds[0].Local.Converged && !strings.Contains(log, "the local fit did not converge (‖μ_D − μ̂_π‖ = ") {
			t.Errorf("client %s: an unconverged fit without the sample learner's warning:\n%s", c.id, log)
		}
	}
	// A joint task: refused with the learner's reason, before anything is sent.
	var stderr lockedBuffer
	cmd := newClientCmd()
	cmd.SetArgs(sampleClientArgs(addr, "pend-joint", "alice", jointTokens, 0, clients[0].demos, config, 1, filepath.Join(dir, "joint.json")))
	cmd.SetOut(new(lockedBuffer))
	cmd.SetErr(&stderr)
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "task pend-joint: task pend-joint runs joint rounds") || !strings.Contains(err.Error(), "Monte Carlo estimate") {
		t.Errorf("joint task: error %v, want the sample learner's refusal", err)
	}

	// What the server stored and fused: its store, read once it has stopped.
	stop()
	spec, subs, fused := readStoredRound(t, store, "pend")
	if st, err := federation.OpenStoreWith(store, federation.StoreOptions{ReadOnly: true}); err != nil {
		t.Fatal(err)
	} else {
		js, err := st.Submissions("pend-joint", 1)
		st.Close()
		if err != nil || len(js) != 0 {
			t.Errorf("the refused joint task has %d stored answers (%v), want none", len(js), err)
		}
	}
	if len(subs) != 2 {
		t.Fatalf("the server stored %d submissions, want 2", len(subs))
	}
	byClient := map[string][]float64{}
	for _, s := range subs {
		byClient[s.ClientID] = s.Theta
	}
	for _, c := range clients {
		local := reports[c.id].Rounds[0].Local
		if !slices.Equal(byClient[c.id], local.Theta) {
			t.Errorf("client %s: the server stored θ %v, the client reports %v", c.id, byClient[c.id], local.Theta)
		}
		// The same learner built directly from the same physics, seed, settings and demonstrations.
		mk := func(i int) (envs.Env, error) {
			return registry.Make("Pendulum-v1", c.physics, nil, c.seed*1_000_003+uint64(i))
		}
		e, _ := mk(0)
		demos, err := sampleirl.ReadTrajectoriesFile(c.demos, e.ObservationSpace(), e.ActionSpace())
		if err != nil {
			t.Fatal(err)
		}
		sc, err := tasks.ReadSampleConfig(config)
		if err != nil {
			t.Fatal(err)
		}
		l := &tasks.SampleLearner{Env: "Pendulum-v1", MakeEnv: mk, Demos: demos}
		if err := sc.Apply(l, c.seed); err != nil {
			t.Fatal(err)
		}
		want, err := l.Learn(context.Background(), spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(local.Theta, want.Theta) || local.Iterations != want.Iterations || local.DemoCount != 3 {
			t.Errorf("client %s: θ %v after %d iterations (%d demos); tasks.SampleLearner with the same flags: %v after %d", c.id, local.Theta, local.Iterations, local.DemoCount, want.Theta, want.Iterations)
		}
	}
	a, b := byClient["alice"], byClient["bob"]
	if len(a) != spec.ThetaDim || len(b) != spec.ThetaDim || slices.Equal(a, b) || slices.Equal(a, make([]float64, len(a))) {
		t.Fatalf("stored θ %v and %v: want two different, non-zero θ of %d components", a, b, spec.ThetaDim)
	}
	if fused.Method != "mean" || len(fused.Theta) != len(a) {
		t.Fatalf("fused %+v", fused)
	}
	for j := range a {
		if want := (a[j] + b[j]) / 2; math.Abs(fused.Theta[j]-want) > 1e-15*math.Max(1, math.Abs(want)) {
			t.Errorf("fused θ[%d] = %v, the mean of the submitted %v and %v is %v", j, fused.Theta[j], a[j], b[j], want)
		}
	}
	for id, rep := range reports {
		if !slices.Equal(rep.Final.Theta, fused.Theta) {
			t.Errorf("client %s received %v, the server fused %v", id, rep.Final.Theta, fused.Theta)
		}
	}
}

// readStoredRound returns task's spec, its round-1 submissions and its
// fused result as the server's store holds them.
func readStoredRound(t *testing.T, store, task string) (federation.TaskSpec, []federation.Submission, federation.FusedResult) {
	t.Helper()
	st, err := federation.OpenStoreWith(store, federation.StoreOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	spec, err := st.Task(task)
	if err != nil {
		t.Fatal(err)
	}
	subs, err := st.Submissions(task, 1)
	if err != nil {
		t.Fatal(err)
	}
	sts, err := st.Statuses()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.ID == task {
			if !s.Done || len(s.Fused) != 1 {
				t.Fatalf("status of %s: done %v, %d fused results, want done with 1", task, s.Done, len(s.Fused))
			}
			return spec, subs, s.Fused[0]
		}
	}
	t.Fatalf("the store holds no task %s", task)
	return spec, nil, federation.FusedResult{}
}

// TestSampleClientRefusals: bad flags and bad files of "fedirl client
// --learner sample" are refused before any connection, naming the flag,
// and for the files the file, the line and the field or key.
func TestSampleClientRefusals(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("secret\n"), 0o644)
	demos, _ := writeDemos(t, dir, 2, "random", 2, 0)
	b, _ := os.ReadFile(demos)
	first, second, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	twoObs := write("two-obs.jsonl", first+"\n"+`{"obs": [[1, 0], [1, 0]], "actions": [[0]]}`+"\n")
	nan := write("nan.jsonl", second+"\n\n"+strings.Replace(first, `"actions":[[`, `"actions":[[NaN,`, 1)+"\n")
	empty := write("empty.jsonl", "\n")
	badConfig := write("bad.yaml", "episodes: 8\nepisode: 3\n")
	zeroConfig := write("zero.yaml", "max_iter: 0\n")
	base := []string{"--server", "127.0.0.1:1", "--insecure", "--task", "t", "--id", "a", "--token-file", tok}
	sample := append(slices.Clone(base), "--learner", "sample", "--env", "Pendulum-v1", "--demos", demos)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown learner", append(slices.Clone(base), "--learner", "ppo", "--mdp", "m", "--demos", "d"), []string{`--learner "ppo": want "maxent"`, `"sample"`, `or "mlp"`}},
		{"--mdp with sample", append(slices.Clone(sample), "--mdp", "m.json"), []string{"--mdp (the client's lattice MDP) belongs to --learner maxent, and this client runs --learner sample"}},
		{"--solver with sample", append(slices.Clone(sample), "--solver", "newton"), []string{"--solver", "belongs to --learner maxent"}},
		{"--submit-reward with sample", append(slices.Clone(sample), "--submit-reward"), []string{"--submit-reward", "belongs to --learner maxent"}},
		{"--env with maxent", append(slices.Clone(base), "--mdp", "m", "--demos", "d", "--env", "Pendulum-v1"), []string{"--env (the client's simulator) belongs to --learner sample or mlp, and this client runs --learner maxent"}},
		{"--seed with maxent", append(slices.Clone(base), "--mdp", "m", "--demos", "d", "--seed", "3"), []string{"--seed", "belongs to --learner sample or mlp"}},
		{"--client with default learner", append(slices.Clone(base), "--mdp", "m", "--demos", "d", "--client", "2"), []string{"--client", "belongs to --learner sample or mlp"}},
		{"no --env", append(slices.Clone(base), "--learner", "sample", "--demos", demos), []string{"--env is required (with --learner sample)"}},
		{"no --mdp", append(slices.Clone(base), "--demos", "d"), []string{"--mdp is required (with --learner maxent)"}},
		{"unknown env", append(slices.Clone(base), "--learner", "sample", "--env", "Pendulum-v9", "--demos", demos), []string{`--env "Pendulum-v9": unknown environment`}},
		{"client out of range", append(slices.Clone(sample), "--client", "99"), []string{"--client 99"}},
		{"unknown param", append(slices.Clone(sample), "--param", "gravity=3"), []string{"--param", "gravity"}},
		{"missing demos", append(slices.Clone(base), "--learner", "sample", "--env", "Pendulum-v1", "--demos", filepath.Join(dir, "none.jsonl")), []string{"--demos (episodes in Pendulum-v1's spaces): opening demonstrations:", "none.jsonl"}},
		{"demos of another simulator", append(slices.Clone(base), "--learner", "sample", "--env", "Pendulum-v1", "--demos", twoObs), []string{"--demos (episodes in Pendulum-v1's spaces): " + twoObs + " line 2: obs[0]"}},
		{"NaN action", append(slices.Clone(base), "--learner", "sample", "--env", "Pendulum-v1", "--demos", nan), []string{nan + " line 3", "NaN"}},
		{"no episodes", append(slices.Clone(base), "--learner", "sample", "--env", "Pendulum-v1", "--demos", empty), []string{"--demos (episodes in Pendulum-v1's spaces): " + empty + ": no episodes"}},
		{"unknown settings key", append(slices.Clone(sample), "--sample-config", badConfig), []string{"--sample-config: sample config " + badConfig + ": line 2: episode: unknown key"}},
		{"explicit zero setting", append(slices.Clone(sample), "--sample-config", zeroConfig), []string{"line 1: max_iter: 0, want ≥ 1"}},
		{"missing settings", append(slices.Clone(sample), "--sample-config", filepath.Join(dir, "none.yaml")), []string{"--sample-config: sample config:", "none.yaml"}},
	} {
		_, err := runFresh(newClientCmd(), tc.args...)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q, want one containing %q", tc.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "Unavailable") {
			t.Errorf("%s: refused only at the connection: %v", tc.name, err)
		}
	}
}
