package main

import (
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

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/sampleirl"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// tinyMLPYAML is a --sample-config of the neural-reward learner of a few
// CPU milliseconds: a small PPO, four episodes per estimate, two
// iterations, and a tolerance no fit meets, so that every network moves.
const tinyMLPYAML = `episodes: 4
max_iter: 2
tolerance: 0.01
ppo:
  n_envs: 1
  n_steps: 64
  batch_size: 32
  n_epochs: 1
  hidden: [8]
mlp:
  net: {hidden: [16]}
`

// writeEnvDemos writes n random-policy episodes of env with the paper's
// client physics as a demonstrations file.
func writeEnvDemos(t *testing.T, dir, env string, client, n int, seed uint64) string {
	t.Helper()
	file := filepath.Join(dir, fmt.Sprintf("%s-%d.jsonl", env, client))
	if _, err := runFresh(newEnvEpisodesCmd(), "--env", env, "--client", fmt.Sprint(client), "--policy", "random",
		"--episodes", fmt.Sprint(n), "--seed", fmt.Sprint(seed), "--demos-out", file); err != nil {
		t.Fatal(err)
	}
	return file
}

// mlpClientArgs are the flags of "fedirl client --learner mlp" on CartPole-v1.
func mlpClientArgs(addr, task, id, tokens string, physics int, demos, config string, seed uint64, out string, extra ...string) []string {
	return append([]string{"--server", addr, "--insecure", "--task", task, "--id", id, "--token-file", tokens, "--timeout", "1m",
		"--learner", "mlp", "--env", "CartPole-v1", "--client", fmt.Sprint(physics), "--demos", demos, "--sample-config", config,
		"--seed", fmt.Sprint(seed), "--out", out}, extra...)
}

// runClientCmd runs "fedirl client" with args and returns its stderr and error.
func runClientCmd(args []string) (string, error) {
	var stderr lockedBuffer
	cmd := newClientCmd()
	cmd.SetArgs(args)
	cmd.SetOut(new(lockedBuffer))
	cmd.SetErr(&stderr)
	err := cmd.Execute()
	return stderr.String(), err
}

// directMLPLearner is the learner "fedirl client --learner mlp" builds from
// its flags, built here from the same simulator physics, seed, settings
// file and demonstrations without the command.
func directMLPLearner(t *testing.T, physics int, seed uint64, demos, config string) *tasks.MLPSampleLearner {
	t.Helper()
	mk := func(i int) (envs.Env, error) {
		return registry.Make("CartPole-v1", physics, nil, seed*1_000_003+uint64(i))
	}
	e, _ := mk(0)
	trajs, err := sampleirl.ReadTrajectoriesFile(demos, e.ObservationSpace(), e.ActionSpace())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := tasks.ReadSampleConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	l := &tasks.MLPSampleLearner{Env: "CartPole-v1", MakeEnv: mk, Demos: trajs}
	if err := sc.ApplyMLP(l, seed); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestMLPClientsOverGRPC: two "fedirl client --learner mlp" runs on
// CartPole-v1 with the paper's client physics 0 and 4 and their own random
// demonstrations, through a real "fedirl server", on three tasks made by
// "fedirl server task create":
//
//   - a points task (--spec) whose probe is 20 (s, a) steps of a
//     demonstration, fused by mean: the server stores each client's reward
//     at the points as the client reports it, each is what
//     tasks.MLPSampleLearner learns directly with the same flags (bit for
//     bit), the fused reward in the store and in both reports is their
//     mean, and alice's --distill-out file reads back with
//     sampleirl.ReadRewardNetFile into a network whose reward at the probe
//     points is the fused reward within 2 % of its standard deviation
//     (and whose weights are those DistillFused gives directly);
//   - an mlp-weights task with a shared initialization from --seed, two
//     FedAvg rounds with --warm-start: every round's fused weights are the
//     mean of the two submitted, and each submission is the direct
//     learner's from the task's initialization (round 1) or from round 1's
//     fused weights (round 2);
//   - an mlp-weights task without a shared initialization: one round,
//     fused weights the mean of the two submitted.
//
// On the same server, --distill-out with an mlp-weights task and a client
// on another simulator are refused before anything is sent.
func TestMLPClientsOverGRPC(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "fed.db")
	type client struct {
		id             string
		physics        int
		seed           uint64
		demos, stderrs string
	}
	clients := []*client{{id: "alice", physics: 0, seed: 1}, {id: "bob", physics: 4, seed: 2}}
	for _, c := range clients {
		c.demos = writeEnvDemos(t, dir, "CartPole-v1", c.physics, 4, c.seed)
	}
	// The probe: 10 states of alice's first demonstration, each with both actions.
	e, _ := registry.Make("CartPole-v1", 0, nil, 0)
	obsSp, actSp := e.ObservationSpace(), e.ActionSpace()
	demos, err := sampleirl.ReadTrajectoriesFile(clients[0].demos, obsSp, actSp)
	if err != nil {
		t.Fatal(err)
	}
	var points, phi [][]float64
	for _, o := range demos[0].Obs[:10] {
		for a := range 2 {
			points = append(points, append(slices.Clone(o), float64(a)))
			phi = append(phi, []float64{1, float64(a)})
		}
	}
	specJSON, _ := json.Marshal(map[string]any{"id": "cp-points", "env_family": "points", "theta_dim": 2, "fusion": map[string]string{"method": "mean"},
		"probe": map[string]any{"names": []string{"x", "x_dot", "theta", "theta_dot", "a"}, "points": points, "phi": phi}})
	specFile := filepath.Join(dir, "points.json")
	if err := os.WriteFile(specFile, specJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	for id, args := range map[string][]string{
		"cp-points":   {"--spec", specFile},
		"fedavg":      {"--id", "fedavg", "--mlp-weights", "--env", "CartPole-v1", "--net-hidden", "16", "--seed", "7", "--rounds", "2", "--warm-start"},
		"fedavg-ind":  {"--id", "fedavg-ind", "--mlp-weights", "--env", "CartPole-v1", "--net-hidden", "16"},
		"fedavg-lone": {"--id", "fedavg-lone", "--mlp-weights", "--env", "CartPole-v1", "--net-hidden", "16", "--quorum", "1"},
	} {
		tokens[id] = filepath.Join(dir, id+"-tokens.json")
		if err := execTaskCreate(t, "", append(args, "--store", store, "--clients", "alice,bob", "--tokens-out", tokens[id])...); err != nil {
			t.Fatalf("task create %s: %v", id, err)
		}
	}
	config := filepath.Join(dir, "mlp.yaml")
	if err := os.WriteFile(config, []byte(tinyMLPYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	distilled := filepath.Join(dir, "alice-net.json")
	addr, stop := startServer(t, store)
	var wg sync.WaitGroup
	errs := map[string]error{}
	var mu sync.Mutex
	for _, task := range []string{"cp-points", "fedavg", "fedavg-ind"} {
		for _, c := range clients {
			var extra []string
			if task == "cp-points" && c.id == "alice" {
				extra = []string{"--distill-out", distilled}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				stderr, err := runClientCmd(mlpClientArgs(addr, task, c.id, tokens[task], c.physics, c.demos, config, c.seed, filepath.Join(dir, task+"-"+c.id+".json"), extra...))
				mu.Lock()
				defer mu.Unlock()
				errs[task+"/"+c.id] = err
				if task == "cp-points" {
					c.stderrs = stderr
				}
			}()
		}
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Fatalf("client %s: %v", k, err)
		}
	}
	// Refused before anything is sent: a distillation of weights, a client on another simulator.
	_, err = runClientCmd(mlpClientArgs(addr, "fedavg-lone", "alice", tokens["fedavg-lone"], 0, clients[0].demos, config, 1, filepath.Join(dir, "lone.json"), "--distill-out", filepath.Join(dir, "x.json")))
	if err == nil || !strings.Contains(err.Error(), "is an mlp-weights task: its fused result is a network's weights") {
		t.Errorf("--distill-out on an mlp-weights task: %v", err)
	}
	acro := writeEnvDemos(t, dir, "Acrobot-v1", 0, 1, 3)
	args := mlpClientArgs(addr, "fedavg-lone", "bob", tokens["fedavg-lone"], 0, acro, config, 1, filepath.Join(dir, "acro.json"))
	args[slices.Index(args, "CartPole-v1")] = "Acrobot-v1"
	if _, err := runClientCmd(args); err == nil || !strings.Contains(err.Error(), "averages networks on CartPole-v1's (s, e_a) and this client's simulator is Acrobot-v1") {
		t.Errorf("a client on another simulator: %v", err)
	}
	if !strings.Contains(clients[0].stderrs, "neural-reward IRL iteration 2 of at most 2: log-odds gap") ||
		!strings.Contains(clients[0].stderrs, "the fused reward (mean) distilled into a network [6 16 1] at the 20 probe points") {
		t.Errorf("alice's stderr lacks the progress or the distillation line:\n%s", clients[0].stderrs)
	}
	stop()

	ctx := context.Background()
	st, err := federation.OpenStoreWith(store, federation.StoreOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	statuses, err := st.Statuses()
	if err != nil {
		t.Fatal(err)
	}
	fusedOf := func(task string, round int) federation.FusedResult {
		for _, s := range statuses {
			if s.ID == task && len(s.Fused) >= round {
				return s.Fused[round-1]
			}
		}
		t.Fatalf("task %s has no fused round %d", task, round)
		return federation.FusedResult{}
	}
	if s, _ := st.Submissions("fedavg-lone", 1); len(s) != 0 {
		t.Errorf("the refused clients left %d submissions", len(s))
	}
	direct := map[string]*tasks.MLPSampleLearner{}
	for _, c := range clients {
		direct[c.id] = directMLPLearner(t, c.physics, c.seed, c.demos, config)
	}
	report := func(task, id string) federation.ClientReport {
		var rep federation.ClientReport
		b, err := os.ReadFile(filepath.Join(dir, task+"-"+id+".json"))
		if err == nil {
			err = json.Unmarshal(b, &rep)
		}
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}

	// The points task: rewards at the probe, their mean, the distilled network.
	spec, err := st.Task("cp-points")
	if err != nil {
		t.Fatal(err)
	}
	subs, err := st.Submissions("cp-points", 1)
	if err != nil || len(subs) != 2 {
		t.Fatalf("cp-points: %d submissions (%v), want 2", len(subs), err)
	}
	mean := make([]float64, len(points))
	for _, sub := range subs {
		if sub.Theta != nil || len(sub.Reward) != len(points) {
			t.Fatalf("cp-points: %s submitted θ %v and %d reward values, want a reward at each of the %d points", sub.ClientID, sub.Theta, len(sub.Reward), len(points))
		}
		want, err := direct[sub.ClientID].Learn(ctx, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sub.Reward, want.Reward) || !slices.Equal(report("cp-points", sub.ClientID).Rounds[0].Local.Reward, sub.Reward) {
			t.Errorf("cp-points: %s's stored reward differs from its report or from the learner run directly with the same flags", sub.ClientID)
		}
		for i, v := range sub.Reward {
			mean[i] += v / 2
		}
	}
	if slices.Equal(subs[0].Reward, subs[1].Reward) {
		t.Errorf("cp-points: the two clients submitted the same reward")
	}
	fused := fusedOf("cp-points", 1)
	for i := range mean {
		if math.Abs(fused.Reward[i]-mean[i]) > 1e-15*math.Max(1, math.Abs(mean[i])) {
			t.Fatalf("cp-points: fused reward[%d] = %v, the mean of the submitted is %v", i, fused.Reward[i], mean[i])
		}
	}
	for _, c := range clients {
		if !slices.Equal(report("cp-points", c.id).Final.Reward, fused.Reward) {
			t.Errorf("cp-points: %s received another fused reward than the server's", c.id)
		}
	}
	net, file, err := sampleirl.ReadRewardNetFile(distilled, obsSp, actSp)
	if err != nil {
		t.Fatal(err)
	}
	steps, _ := tasks.ProbeSteps(points, obsSp, actSp)
	var sq, mu2, m float64
	for i, s := range steps {
		d := net.Reward(s.Obs, s.Action, nil, false) - fused.Reward[i]
		sq += d * d / float64(len(steps))
		m += fused.Reward[i] / float64(len(steps))
	}
	for _, v := range fused.Reward {
		mu2 += (v - m) * (v - m) / float64(len(steps))
	}
	rel := math.Sqrt(sq / mu2)
	var prov tasks.DistillProvenance
	if err := json.Unmarshal(file.Provenance, &prov); err != nil {
		t.Fatal(err)
	}
	t.Logf("distilled network %v: relative RMSE %.3g at the %d probe points (the file says %.3g, %d steps, converged %v)", file.Sizes, rel, len(steps), prov.RelativeRMSE, prov.Fit.Steps, prov.Fit.Converged)
	if rel > 0.02 || math.Abs(rel-prov.RelativeRMSE) > 1e-9 || prov.Task != "cp-points" || prov.Points != 20 || file.Env != "CartPole-v1" {
		t.Errorf("distilled network: relative RMSE %.3g (file %.3g), provenance %+v", rel, prov.RelativeRMSE, prov)
	}
	want, err := direct["alice"].DistillFused(spec, fused)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(want.Net.Weights(), file.Weights) {
		t.Errorf("the distilled file's weights are not DistillFused's with the client's settings and seed")
	}

	// The mlp-weights tasks: FedAvg rounds.
	for _, task := range []string{"fedavg", "fedavg-ind"} {
		spec, err := st.Task(task)
		if err != nil {
			t.Fatal(err)
		}
		var warm []float64
		for round := 1; round <= max(1, spec.Rounds); round++ {
			subs, err := st.Submissions(task, round)
			if err != nil || len(subs) != 2 {
				t.Fatalf("%s round %d: %d submissions (%v)", task, round, len(subs), err)
			}
			mean := make([]float64, spec.ThetaDim)
			for _, sub := range subs {
				if len(sub.Theta) != spec.ThetaDim {
					t.Fatalf("%s round %d: %s submitted %d weights, the task's network has %d", task, round, sub.ClientID, len(sub.Theta), spec.ThetaDim)
				}
				for j, v := range sub.Theta {
					mean[j] += v / 2
				}
				if task == "fedavg" {
					want, err := direct[sub.ClientID].Learn(ctx, spec, warm)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(want.Theta, sub.Theta) {
						t.Errorf("%s round %d: %s's weights are not the learner's from the round's start run directly", task, round, sub.ClientID)
					}
				}
			}
			got := fusedOf(task, round).Theta
			for j := range mean {
				if math.Abs(got[j]-mean[j]) > 1e-15*math.Max(1, math.Abs(mean[j])) {
					t.Fatalf("%s round %d: fused weight %d = %v, the mean of the submitted is %v", task, round, j, got[j], mean[j])
				}
			}
			warm = got
		}
	}
}

// TestMLPClientRefusals: bad flags and files of "fedirl client --learner
// mlp" and of "fedirl server task create --mlp-weights" are refused before
// any connection or store write, naming the flag, and for the files the
// file, the line and the key or field.
func TestMLPClientRefusals(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("secret\n"), 0o644)
	demos := writeEnvDemos(t, dir, "CartPole-v1", 0, 2, 1)
	pend := writeEnvDemos(t, dir, "Pendulum-v1", 0, 1, 1)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tau := write("tau.yaml", "episodes: 4\ntemperature: 0.5\n")
	badKey := write("key.yaml", "mlp:\n  nett: {hidden: [8]}\n")
	zero := write("zero.yaml", "mlp:\n  reward_steps: 0\n")
	block := write("block.yaml", "mlp:\n  net: {hidden: [8]}\n")
	base := []string{"--server", "127.0.0.1:1", "--insecure", "--task", "t", "--id", "a", "--token-file", tok, "--timeout", "20s"}
	mlp := append(slices.Clone(base), "--learner", "mlp", "--env", "CartPole-v1", "--demos", demos)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"--mdp with mlp", append(slices.Clone(mlp), "--mdp", "m.json"), []string{"--mdp (the client's lattice MDP) belongs to --learner maxent, and this client runs --learner mlp"}},
		{"--submit-reward with mlp", append(slices.Clone(mlp), "--submit-reward"), []string{"--submit-reward", "belongs to --learner maxent"}},
		{"--distill-out with sample", append(slices.Clone(base), "--learner", "sample", "--env", "CartPole-v1", "--demos", demos, "--distill-out", "n.json"), []string{"--distill-out (the fused reward distilled into a network) belongs to --learner mlp, and this client runs --learner sample"}},
		{"--distill-out with maxent", append(slices.Clone(base), "--mdp", "m", "--demos", "d", "--distill-out", "n.json"), []string{"--distill-out", "belongs to --learner mlp"}},
		{"no --env", append(slices.Clone(base), "--learner", "mlp", "--demos", demos), []string{"--env is required (with --learner mlp)"}},
		{"--distill-out to stdout", append(slices.Clone(mlp), "--distill-out", "-"), []string{"--distill-out -: give a file name"}},
		{"demos of another simulator", append(slices.Clone(base), "--learner", "mlp", "--env", "CartPole-v1", "--demos", pend), []string{"--demos (episodes in CartPole-v1's spaces): " + pend + " line 1: obs[0]"}},
		{"temperature", append(slices.Clone(mlp), "--sample-config", tau), []string{"--sample-config " + tau + ": temperature: 0.5; the neural-reward learner trains its policy at τ = 1"}},
		{"unknown mlp key", append(slices.Clone(mlp), "--sample-config", badKey), []string{"--sample-config: sample config " + badKey + ": line 2: mlp.nett: unknown key"}},
		{"explicit zero in the block", append(slices.Clone(mlp), "--sample-config", zero), []string{"line 2: mlp.reward_steps: 0, want ≥ 1"}},
		{"mlp block with sample", append(slices.Clone(base), "--learner", "sample", "--env", "CartPole-v1", "--demos", demos, "--sample-config", block), []string{"--sample-config " + block + ": mlp: the neural-reward learner's block"}},
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

	// task create --mlp-weights.
	other, _ := sampleirl.NewRewardNet(sampleirl.StateActionInput(envs.Space{Low: make([]float64, 4), High: make([]float64, 4)}, envs.Space{N: 2}), sampleirl.NetConfig{Hidden: []int{16}}, 1)
	otherB, err := sampleirl.MarshalRewardNet(other, "CartPole-v1", envs.Space{Low: make([]float64, 4), High: make([]float64, 4)}, envs.Space{N: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	otherFile := write("other-net.json", string(otherB))
	short := write("short.json", "[1, 2, 3]")
	broken := write("broken.json", `{"format": "fedirl-reward-net/1", "weights": [1,`)
	store := filepath.Join(dir, "fed.db")
	create := []string{"--store", store, "--id", "w", "--clients", "a,b", "--tokens-out", filepath.Join(dir, "tokens.json")}
	weights := append(slices.Clone(create), "--mlp-weights", "--env", "CartPole-v1")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"--net-hidden without --mlp-weights", append(slices.Clone(create), "--net-hidden", "8"), "--net-hidden is a setting of an mlp-weights task: give --mlp-weights"},
		{"--net-init without --mlp-weights", append(slices.Clone(create), "--env", "CartPole-v1", "--net-init", short), "--net-init is a setting of an mlp-weights task"},
		{"no --env", append(slices.Clone(create), "--mlp-weights"), "--mlp-weights needs --env"},
		{"unknown env", append(slices.Clone(create), "--mlp-weights", "--env", "Nope-v0"), `--env "Nope-v0": unknown environment`},
		{"with a lattice", append(slices.Clone(weights), "--lattice", "fine"), "--mlp-weights (a task on networks' weights) has no lattice"},
		{"activation", append(slices.Clone(weights), "--net-activation", "sigmoid"), `--net-activation "sigmoid": want tanh or relu`},
		{"width 0", append(slices.Clone(weights), "--net-hidden", "0"), "--net-hidden [0]: sampleirl: bad input: net.hidden[0] = 0"},
		{"init and seed", append(slices.Clone(weights), "--net-init", short, "--seed", "3"), "--net-init (a shared initialisation from a file) and --seed (one drawn from a seed) are exclusive"},
		{"init of another shape", append(slices.Clone(weights), "--net-init", otherFile), "--net-init " + otherFile + ": a network of hidden [16], tanh; the task's is hidden [32], tanh"},
		{"init of another length", append(slices.Clone(weights), "--net-init", short), "--mlp-weights: init: 3 weights, the network [6 32 1] has 257"},
		{"broken init file", append(slices.Clone(weights), "--net-init", broken), "--net-init (a reward network file on CartPole-v1's spaces, or a JSON array of weights): sampleirl: bad input: " + broken},
		{"reward-space fusion", append(slices.Clone(weights), "--fusion", "barycenter"), `fusion.method "barycenter" fuses rewards on a probe's features; family mlp-weights's θ are network weights`},
	} {
		err := execTaskCreate(t, "", tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := os.Stat(store); err == nil {
		if st, err := federation.OpenStoreWith(store, federation.StoreOptions{ReadOnly: true}); err == nil {
			sts, _ := st.Statuses()
			st.Close()
			if len(sts) != 0 {
				t.Errorf("refused task creations stored %d tasks", len(sts))
			}
		}
	}
	// The file of the right shape is accepted, and the task's init is its weights.
	if err := execTaskCreate(t, "", append(slices.Clone(weights), "--net-hidden", "16", "--net-init", otherFile)...); err != nil {
		t.Fatal(err)
	}
	st, err := federation.OpenStoreWith(store, federation.StoreOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	spec, err := st.Task("w")
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := tasks.DecodeMLPWeightsProbe(spec.Probe)
	if err != nil || !slices.Equal(p.Init, other.Weights()) || p.Env != "CartPole-v1" || spec.ThetaDim != other.NumWeights() {
		t.Errorf("task from --net-init: probe %+v (%v), theta_dim %d, want the file's %d weights", p, err, spec.ThetaDim, other.NumWeights())
	}
}
