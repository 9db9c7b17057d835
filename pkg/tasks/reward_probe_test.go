package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/envs/gridworld"
	gridstudy "github.com/fedirl/fedirl/pkg/experiments/gridworld"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/lattice"
	"github.com/fedirl/fedirl/pkg/npy"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// rewardProbeServer serves a coordinator with the real fuser over gRPC on
// loopback, for the length of the test.
func rewardProbeServer(t *testing.T) (*federation.Coordinator, *federation.Store, string) {
	t.Helper()
	store, err := federation.OpenStore(filepath.Join(t.TempDir(), "fed.db"))
	if err != nil {
		t.Fatal(err)
	}
	coord, err := federation.NewCoordinator(store, federation.CoordinatorConfig{Fuser: tasks.NewFuser()})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := federation.NewGRPCServer(coord, federation.GRPCServerConfig{})
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Stop(); coord.Close(); store.Close() })
	return coord, store, lis.Addr().String()
}

// ownRBF is a grid-world client's own feature map: n × n Gaussians of
// bandwidth bw over (row, col) of the 5×5 grid, the same for every action,
// plus a bias.
func ownRBF(t *testing.T, n int, bw float64) *mat.Dense {
	t.Helper()
	centres := make([]float64, n)
	for i := range centres {
		centres[i] = 4 * (float64(i) + 0.5) / float64(n)
	}
	spec := features.RBFSpec{Axes: []features.RBFAxis{{Centres: centres, Bandwidth: bw}, {Centres: centres, Bandwidth: bw},
		{Centres: []float64{0}, Categorical: true}}, Bias: true}
	states := lattice.Lattice{Axes: []lattice.Axis{lattice.UniformAxis(5, 1), lattice.UniformAxis(5, 1)}}
	actions := lattice.Lattice{Axes: []lattice.Axis{lattice.CategoricalAxis(gridworld.NumActions)}}
	phi, err := spec.StateActionMatrix(states, actions)
	if err != nil {
		t.Fatal(err)
	}
	return phi
}

// TestRewardOnProbeFederation is acceptance 3 of issue 33, end to end over
// gRPC: a lattice task (the 5×5 grid world's lattice, the task's Φ its two
// grid features) fused from clients with different reward models — two Go
// clients running MaxEnt IRL on their own RBF maps (5×5 narrow, 2×2 wide;
// not the task's Φ) and submitting their rewards on the probe, a Go client
// submitting θ on the task's Φ and, where python3 with numpy and grpc is
// available, the Python example's neural-network client. Every client gets
// the same fused reward and θ; under "mean" the fused reward is the mean of
// what was submitted (θ as Φθ) and θ its least-squares fit; under
// "normalized-mean" the result is exactly fusion.FuseContributions of the
// stored submissions. Then, with submissions made directly: a client sending
// Φθ over the wire fuses as one sending θ (1e-12 for mean and
// normalized-mean, the solver's tolerance for the barycenter).
func TestRewardOnProbeFederation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	coord, store, addr := rewardProbeServer(t)
	gw, err := gridworld.DefaultFamily(5).Probe(11)
	if err != nil {
		t.Fatal(err)
	}
	taskPhi, err := tasks.GridFeatures(gw)
	if err != nil {
		t.Fatal(err)
	}
	n, d := taskPhi.Dims()
	probe, err := json.Marshal(tasks.LatticeProbe{
		State:  []tasks.LatticeAxis{{Name: "row", N: 5, Lo: 0, Hi: 4}, {Name: "col", N: 5, Lo: 0, Hi: 4}},
		Action: []tasks.LatticeAxis{{Name: "move", N: gridworld.NumActions, Categorical: true}},
		PhiNPY: npy.EncodeFloat64([]int{n, d}, taskPhi.RawMatrix().Data),
	})
	if err != nil {
		t.Fatal(err)
	}
	py := pythonWith("grpc", "grpc_tools", "numpy")
	clients := []string{"narrow", "theta", "wide"}
	if py != "" {
		clients = append(clients, "nn")
	} else {
		t.Log("no python3 with grpc, grpc_tools and numpy: the neural-network client is left out")
	}
	spec := func(id, method string, quorum int) federation.TaskSpec {
		return federation.TaskSpec{ID: id, EnvFamily: tasks.LatticeFamilyName, Probe: probe, ThetaDim: d, Quorum: quorum,
			IRL: json.RawMessage(`{"max_iter": 40, "l2": 0.001}`), Fusion: json.RawMessage(`{"method": "` + method + `"}`)}
	}
	methods := []string{"mean", "normalized-mean"}
	tokens := map[string]map[string]string{}
	for _, m := range methods {
		if tokens[m], err = coord.CreateTask(spec("rp-"+m, m, len(clients)), clients); err != nil {
			t.Fatal(err)
		}
	}

	cfg := gridstudy.DefaultConfig()
	learners := map[string]*tasks.MaxEntLearner{}
	demosFile := filepath.Join(t.TempDir(), "nn-demos.jsonl")
	for i, id := range []string{"narrow", "theta", "wide", "nn"} {
		env, demos, err := cfg.ClientTask(5, i, 4, 11)
		if err != nil {
			t.Fatal(err)
		}
		switch id {
		case "narrow":
			learners[id] = &tasks.MaxEntLearner{MDP: env.MDP, Features: ownRBF(t, 5, 0.8), Demos: demos, SubmitReward: true}
		case "wide":
			learners[id] = &tasks.MaxEntLearner{MDP: env.MDP, Features: ownRBF(t, 2, 2.5), Demos: demos, SubmitReward: true}
		case "theta":
			learners[id] = &tasks.MaxEntLearner{MDP: env.MDP, Features: taskPhi, Demos: demos}
		case "nn":
			if err := irl.WriteTrajectoriesFile(demosFile, demos); err != nil {
				t.Fatal(err)
			}
		}
	}
	reports := map[string]federation.ClientReport{}
	type result struct {
		key string
		rep federation.ClientReport
		err error
	}
	results := make(chan result, 2*len(learners))
	for id, l := range learners {
		for _, m := range methods {
			conn, err := federation.DialGRPC(addr, federation.DialConfig{Token: tokens[m][id]})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			go func() {
				rep, err := federation.RunClient(ctx, conn, l, federation.ClientConfig{TaskID: "rp-" + m, ClientID: id})
				results <- result{id + "/" + m, rep, err}
			}()
		}
	}
	var nnOut struct {
		LocalReward []float64 `json:"local_reward"`
	}
	nnFused := map[string]struct {
		Theta         []float64 `json:"theta"`
		Reward        []float64 `json:"reward"`
		RewardClients []string  `json:"reward_clients"`
		Method        string    `json:"method"`
	}{}
	pyDone := make(chan error, 1)
	pyOut := filepath.Join(t.TempDir(), "nn.json")
	if py != "" {
		dir := t.TempDir()
		args := []string{filepath.Join(repoRoot(), "examples", "reward-models", "reward_models.py"), "client",
			"--server", addr, "--insecure", "--id", "nn", "--demos", demosFile, "--out", pyOut, "--timeout", "100"}
		for _, m := range methods {
			tf := filepath.Join(dir, "tokens-"+m+".json")
			b, _ := json.Marshal(tokens[m])
			if err := os.WriteFile(tf, b, 0o600); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--task", "rp-"+m, "--token-file", tf)
		}
		go func() {
			out, err := exec.CommandContext(ctx, py, args...).CombinedOutput()
			if err != nil {
				err = fmt.Errorf("python neural-network client: %w\n%s", err, out)
			}
			pyDone <- err
		}()
	}
	if py == "" {
		pyDone <- nil
	}
	for left := 2*len(learners) + 1; left > 0; left-- {
		select {
		case r := <-results:
			if r.err != nil {
				t.Fatalf("%s: %v", r.key, r.err)
			}
			reports[r.key] = r.rep
		case err := <-pyDone:
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if py != "" {
		b, err := os.ReadFile(pyOut)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &nnOut); err != nil {
			t.Fatal(err)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		for _, m := range methods {
			v := nnFused[m]
			if err := json.Unmarshal(raw["rp-"+m], &v); err != nil {
				t.Fatal(err)
			}
			nnFused[m] = v
		}
	}

	wantRewardClients := []string{"narrow", "wide"}
	if py != "" {
		wantRewardClients = []string{"narrow", "nn", "wide"}
	}
	for _, m := range methods {
		subs, err := store.Submissions("rp-"+m, 1)
		if err != nil {
			t.Fatal(err)
		}
		contribs := make([]fusion.Contribution, len(subs))
		rs := make([][]float64, len(subs))
		for i, s := range subs {
			if (s.Reward != nil) == (s.ClientID == "theta") || (s.Theta != nil) != (s.ClientID == "theta") {
				t.Fatalf("%s: stored submission of %s: theta %v, %d reward values", m, s.ClientID, s.Theta, len(s.Reward))
			}
			contribs[i] = fusion.Contribution{Theta: s.Theta, Reward: s.Reward}
			rs[i] = s.Reward
			if s.Reward == nil {
				rs[i] = features.Reward(nil, taskPhi, s.Theta)
			}
			if s.ClientID == "nn" {
				approx.Slices(t, m+": the Python client's stored reward vs its network's", s.Reward, nnOut.LocalReward, 0, 0)
			}
		}
		final := reports["theta/"+m].Final
		if len(final.Reward) != n || !slices.Equal(slices.Sorted(slices.Values(final.RewardClients)), wantRewardClients) {
			t.Fatalf("%s: fused result %+v: want a reward of %d values from reward clients %v", m, final, n, wantRewardClients)
		}
		for key, rep := range reports {
			if !strings.HasSuffix(key, "/"+m) {
				continue
			}
			approx.Slices(t, key+": fused θ", rep.Final.Theta, final.Theta, 0, 0)
			approx.Slices(t, key+": fused reward", rep.Final.Reward, final.Reward, 0, 0)
		}
		if py != "" {
			approx.Slices(t, m+": the Python client's fused reward", nnFused[m].Reward, final.Reward, 0, 0)
			approx.Slices(t, m+": the Python client's fused θ", nnFused[m].Theta, final.Theta, 0, 0)
		}
		switch m {
		case "mean":
			want := make([]float64, n)
			for _, r := range rs {
				for x, v := range r {
					want[x] += v / float64(len(rs))
				}
			}
			approx.Slices(t, "mean: fused reward = mean of the submitted rewards", final.Reward, want, 1e-12, 1e-12)
			fit := features.Reward(nil, taskPhi, final.Theta)
			for j := range d {
				g, scale := 0.0, 0.0
				for x := range n {
					g += taskPhi.At(x, j) * (fit[x] - want[x])
					scale += abs(taskPhi.At(x, j) * want[x])
				}
				approx.Equal(t, "mean: Φᵀ(Φθ̄ − r̄), the normal equations", g, 0, 1e-12*scale, 0)
			}
		case "normalized-mean":
			p, _, err := tasks.ProbeOf(spec("x", m, 1))
			if err != nil {
				t.Fatal(err)
			}
			want, err := fusion.FuseContributions(ctx, p, contribs, nil, fusion.Options{Method: m})
			if err != nil {
				t.Fatal(err)
			}
			approx.Slices(t, "normalized-mean: fused θ over gRPC vs in process", final.Theta, want.Theta, 0, 0)
			approx.Slices(t, "normalized-mean: fused reward over gRPC vs in process", final.Reward, want.Reward.Reward, 0, 0)
			approx.Slices(t, "normalized-mean: outlier scores", final.OutlierScores, want.OutlierScores, 0, 0)
		}
	}

	// A client that sends Φθ on the probe fuses as one that sends θ.
	thetas := [][]float64{reports["theta/mean"].Rounds[0].Local.Theta, {-0.8, 0.3}}
	for _, c := range []struct {
		method   string
		abs, rel float64
	}{{"mean", 1e-12, 1e-12}, {"normalized-mean", 1e-12, 1e-12}, {"barycenter", 1e-8, 1e-8}} {
		var fused [2]federation.FusedResult
		for k, kind := range []string{"theta", "reward"} {
			id := fmt.Sprintf("eq-%s-%s", c.method, kind)
			tok, err := coord.CreateTask(spec(id, c.method, 2), []string{"a", "b"})
			if err != nil {
				t.Fatal(err)
			}
			for i, cl := range []string{"a", "b"} {
				conn, err := federation.DialGRPC(addr, federation.DialConfig{Token: tok[cl]})
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				sub := federation.Submission{TaskID: id, Round: 1, ClientID: cl, Theta: thetas[i]}
				if kind == "reward" && cl == "b" {
					var v mat.VecDense
					v.MulVec(taskPhi, mat.NewVecDense(d, slices.Clone(thetas[i])))
					sub = federation.Submission{TaskID: id, Round: 1, ClientID: cl, Reward: v.RawVector().Data}
				}
				if _, err := conn.Submit(ctx, sub); err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				if i == 1 {
					fs, err := conn.GetFused(ctx, id, cl, 1, 30*time.Second)
					if err != nil || !fs.Ready {
						t.Fatalf("%s: %+v, %v", id, fs, err)
					}
					fused[k] = fs.Result
				}
			}
		}
		approx.Slices(t, c.method+": fused θ, b sends Φθ_b vs θ_b", fused[1].Theta, fused[0].Theta, c.abs, c.rel)
		approx.Slices(t, c.method+": outlier scores, b sends Φθ_b vs θ_b", fused[1].OutlierScores, fused[0].OutlierScores, c.abs, c.rel)
		if len(fused[1].Reward) != n || fused[0].Reward != nil || !slices.Equal(fused[1].RewardClients, []string{"b"}) {
			t.Errorf("%s: reward %d values / %v, reward clients %v", c.method, len(fused[1].Reward), fused[0].Reward, fused[1].RewardClients)
		}
	}

	// A θ-space method refuses a reward submission, naming the methods that take one.
	tok, err := coord.CreateTask(spec("rp-median", "median", 1), []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := federation.DialGRPC(addr, federation.DialConfig{Token: tok["a"]})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.Submit(ctx, federation.Submission{TaskID: "rp-median", Round: 1, ClientID: "a", Reward: make([]float64, n)})
	if federation.CodeOf(err) != federation.CodeInvalidArgument || !containsAll(err.Error(), `fusion method "median"`, "normalized-mean, barycenter") {
		t.Errorf("reward to a median task: %v", err)
	}
	_, err = conn.Submit(ctx, federation.Submission{TaskID: "rp-median", Round: 1, ClientID: "a", Reward: make([]float64, n+1)})
	if federation.CodeOf(err) != federation.CodeInvalidArgument {
		t.Errorf("reward of the wrong length to a median task: %v", err)
	}
	// A reward learner sees it before learning.
	info, err := conn.GetTask(ctx, "rp-median", "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := learners["narrow"].Learn(ctx, info.Spec, nil); err == nil || !containsAll(err.Error(), `fuses by "median"`, "without --submit-reward") {
		t.Errorf("reward learner on a median task: %v", err)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestRewardModelsExample runs examples/reward-models/run.sh as the README
// does (its table, returns.txt, must be the one README.md shows; no warning): a real `fedirl server` process, two `fedirl client --submit-reward`
// processes per task (RBF maps of different widths) and the Python
// neural-network client, fused by mean, normalized-mean and barycenter. The
// mean task's fused reward must be the mean of the three submitted rewards
// (read from the clients' reports), every task must list all three clients
// as reward clients, and every client's table row must be there.
func TestRewardModelsExample(t *testing.T) {
	out, _ := runExample(t, "reward-models", 120*time.Second)
	var r2 map[string]json.RawMessage
	readJSON(t, filepath.Join(out, "client2", "result.json"), &r2)
	var local2 []float64
	if err := json.Unmarshal(r2["local_reward"], &local2); err != nil {
		t.Fatal(err)
	}
	locals := [][]float64{local2}
	for _, c := range []string{"client0", "client1"} {
		locals = append(locals, readReport(t, filepath.Join(out, c, "mean.json")).Rounds[0].Local.Reward)
	}
	for _, m := range []string{"mean", "normalized-mean", "barycenter"} {
		var fr struct {
			Reward        []float64 `json:"reward"`
			RewardClients []string  `json:"reward_clients"`
			Method        string    `json:"method"`
		}
		if err := json.Unmarshal(r2["rm-"+m], &fr); err != nil {
			t.Fatal(err)
		}
		if fr.Method != m || len(fr.RewardClients) != 3 || len(fr.Reward) != len(local2) {
			t.Fatalf("%s: fused %s, reward clients %v, %d reward values for %d probe points", m, fr.Method, fr.RewardClients, len(fr.Reward), len(local2))
		}
		if m == "mean" {
			want := make([]float64, len(local2))
			for _, r := range locals {
				if len(r) != len(want) {
					t.Fatalf("a local reward has %d values, the probe %d points", len(r), len(want))
				}
				for x, v := range r {
					want[x] += v / 3
				}
			}
			approx.Slices(t, "mean task's fused reward vs the mean of the submitted rewards", fr.Reward, want, 1e-12, 1e-12)
		}
	}
	var rows []map[string]any
	readJSON(t, filepath.Join(out, "returns.json"), &rows)
	if len(rows) != 3 {
		t.Fatalf("returns.json has %d rows, want 3", len(rows))
	}
	for _, r := range rows {
		for _, k := range []string{"expert", "local", "mean", "normalized-mean", "barycenter"} {
			if v, ok := r[k].(float64); !ok || v > -1 || v < -200 {
				t.Fatalf("%v: %s return %v, want a mean of episode returns in [-200, -1]", r["client"], k, r[k])
			}
		}
	}
	table, err := os.ReadFile(filepath.Join(out, "returns.txt"))
	if err != nil {
		t.Fatal(err)
	}
	checkDocBlock(t, "README.md", "<!-- output of examples/reward-models/run.sh", string(table))
}
