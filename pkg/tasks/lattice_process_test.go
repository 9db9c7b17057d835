package tasks_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/npy"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// repoRoot returns the repository's root folder.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestPythonLatticeMatchesGo: python/fedirl computes the same lattice
// points and the same Φ (within tasks.PhiTolerance) as the Go family for
// probes with every axis kind and RBF kind, so a Python client's features
// pass the Go client's check and a Python-built MDP spec is the task's.
func TestPythonLatticeMatchesGo(t *testing.T) {
	py := pythonWith("numpy")
	if py == "" {
		t.Skip("no python3 with numpy (Debian: python3-numpy)")
	}
	probes := map[string]string{
		"pendulum": `{"state":[{"name":"theta","n":12,"lo":-3.141592653589793,"hi":3.141592653589793,"periodic":true},{"name":"thdot","n":7,"lo":-8,"hi":8}],
			"action":[{"name":"torque","n":5,"lo":-2,"hi":2}],
			"rbf":{"axes":[{"centres":[-2.356194490192345,-0.7853981633974483,0.7853981633974483,2.356194490192345],"bandwidth":1.5707963267948966,"period":6.283185307179586},
				{"centres":[-6,-2,2,6],"bandwidth":4},{"centres":[-1,1],"bandwidth":2}],"bias":true}}`,
		"explicit": `{"state":[{"coords":[-1,-0.25,0.1,3]},{"n":3,"categorical":true}],"action":[{"n":2,"categorical":true,"weight":2}],
			"rbf":{"axes":[{"centres":[-1,0,2],"bandwidth":0.7},{"centres":[0,2],"categorical":true},{"centres":[1,0],"categorical":true}],"bias":false}}`,
		"mountaincar": `{"state":[{"name":"position","n":9,"lo":-1.2,"hi":0.6},{"name":"velocity","n":9,"lo":-0.07,"hi":0.07}],"action":[{"n":3,"categorical":true}],
			"rbf":{"axes":[{"centres":[-1.02,-0.66,-0.3,0.06,0.42],"bandwidth":0.36},{"centres":[-0.056,-0.028,0,0.028,0.056],"bandwidth":0.028},{"centres":[1],"categorical":true}],"bias":true}}`,
	}
	dir := t.TempDir()
	for name, probe := range probes {
		pf := filepath.Join(dir, name+".json")
		if err := os.WriteFile(pf, []byte(probe), 0o644); err != nil {
			t.Fatal(err)
		}
		script := `import json, sys, numpy as np
from fedirl import LatticeTask
t = LatticeTask.from_probe(json.load(open(sys.argv[1])))
np.save(sys.argv[2], np.ascontiguousarray(t.phi()))
np.save(sys.argv[3], np.ascontiguousarray(t.pair_points()))`
		phiFile, ptsFile := filepath.Join(dir, name+"-phi.npy"), filepath.Join(dir, name+"-pts.npy")
		cmd := exec.Command(py, "-c", script, pf, phiFile, ptsFile)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(repoRoot(), "python"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: python: %v\n%s", name, err, out)
		}
		lp, err := tasks.DecodeLatticeProbe([]byte(probe))
		if err != nil {
			t.Fatal(err)
		}
		want, err := lp.Build()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		phi, err := npy.ReadFile(phiFile)
		if err != nil {
			t.Fatal(err)
		}
		r, d := want.Phi.Dims()
		if len(phi.Shape) != 2 || phi.Shape[0] != r || phi.Shape[1] != d {
			t.Fatalf("%s: python Φ has shape %v, Go %d×%d", name, phi.Shape, r, d)
		}
		worst := 0.0
		for i, v := range phi.Floats {
			g := want.Phi.RawMatrix().Data[i]
			worst = math.Max(worst, math.Abs(v-g))
			if math.Abs(v-g) > tasks.PhiTolerance*math.Max(1, math.Abs(g)) {
				t.Fatalf("%s: Φ[%d][%d]: python %v, Go %v", name, i/d, i%d, v, g)
			}
		}
		t.Logf("%s: %d×%d Φ, largest |python − Go| = %.3g", name, r, d, worst)
		pts, err := npy.ReadFile(ptsFile)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float64, len(want.Lattice.Axes))
		for i := range r {
			want.Lattice.Point(x, i)
			for k := range x {
				if got := pts.Floats[i*len(x)+k]; got != x[k] {
					t.Fatalf("%s: pair %d coordinate %d: python %v, Go %v", name, i, k, got, x[k])
				}
			}
		}
	}
}

// runExample runs examples/<name>/run.sh at a small size (N=13, 5
// episodes, the system's python3) into a temporary folder, and returns
// the folder and the script's output, skipping the test where python3 lacks grpc, grpc_tools or numpy
// and failing it, with the script's output, when the script fails.
func runExample(t *testing.T, name string, timeout time.Duration) (string, []byte) {
	t.Helper()
	if pythonWith("grpc", "grpc_tools", "numpy") == "" {
		t.Skip("no python3 with grpc, grpc_tools and numpy (Debian: python3-grpcio python3-grpc-tools python3-numpy)")
	}
	bin := fedirlBinary(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(), "examples", name, "run.sh"), out)
	// The README's size (run.sh's defaults), so that its table can be compared.
	cmd.Env = append(os.Environ(), "FEDIRL_BIN="+bin, "PYTHON=/usr/bin/python3")
	start := time.Now()
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s/run.sh: %v\n%s", name, err, b)
	}
	t.Logf("%s/run.sh took %v:\n%s", name, time.Since(start).Round(time.Millisecond), b)
	// The documented examples print no warning (issue 54): their task specs' fits converge.
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(strings.ToLower(l), "warning") {
			t.Errorf("%s/run.sh printed a warning: %s", name, l)
		}
	}
	return out, b
}

// TestOwnProblemExample runs examples/own-problem/run.sh as the README does: a
// real server, two `fedirl client` processes per task and the Python
// client, mean and barycentric fusion. The mean task's θ must be the mean of
// the three local θ, the barycentric one what the server's fuser computes
// from them, no warning printed, and the table (returns.txt) must be the
// one README.md shows.
func TestOwnProblemExample(t *testing.T) {
	out, b := runExample(t, "own-problem", 90*time.Second)

	var r0 struct {
		Local []float64                `json:"local_theta"`
		Fused map[string]FusedResultJS `json:"-"`
		Mean  FusedResultJS            `json:"mean"`
		Bary  FusedResultJS            `json:"barycentric"`
	}
	readJSON(t, filepath.Join(out, "client0", "result.json"), &r0)
	locals := map[string][]float64{"client0": r0.Local}
	for _, c := range []string{"client1", "client2"} {
		for _, m := range []string{"mean", "barycentric"} {
			rep := readReport(t, filepath.Join(out, c, m+".json"))
			locals[c] = rep.Rounds[0].Local.Theta
			want := r0.Mean.Theta
			if m == "barycentric" {
				want = r0.Bary.Theta
			}
			approx.Slices(t, c+" fused θ ("+m+") vs client0's", rep.Final.Theta, want, 0, 0)
		}
	}
	d := len(r0.Local)
	mean := make([]float64, d)
	for _, th := range locals {
		for k := range mean {
			mean[k] += th[k] / 3
		}
	}
	approx.Slices(t, "mean task's θ vs the mean of the local θ", r0.Mean.Theta, mean, 1e-12, 1e-12)

	spec := storedSpec(t, filepath.Join(out, "fed.db"), "mc-barycentric")
	var thetas [][]float64
	for _, c := range r0.Bary.Clients {
		thetas = append(thetas, locals[c])
	}
	fo, err := tasks.NewFuser().Fuse(context.Background(), spec, thetas, []int{20, 20, 20})
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "barycentric task's θ vs the fuser on the local θ", r0.Bary.Theta, fo.Theta, 0, 0)

	var rows []map[string]any
	readJSON(t, filepath.Join(out, "returns.json"), &rows)
	if len(rows) != 3 {
		t.Fatalf("returns.json has %d rows, want 3", len(rows))
	}
	for _, r := range rows {
		for _, k := range []string{"expert", "local", "mean", "barycentric"} {
			if v, ok := r[k].(float64); !ok || v > -1 || v < -200 {
				t.Fatalf("%v: %s return %v, want a mean of episode returns in [-200, -1]", r["client"], k, r[k])
			}
		}
	}
	if !strings.Contains(string(b), "client2") || !strings.Contains(string(b), "barycentric") {
		t.Fatalf("table not printed:\n%s", b)
	}
	table, err := os.ReadFile(filepath.Join(out, "returns.txt"))
	if err != nil {
		t.Fatal(err)
	}
	checkDocBlock(t, "README.md", "<!-- output of examples/own-problem/run.sh", string(table))
	var gen any
	readJSON(t, filepath.Join(out, "task-mean.json"), &gen)
	if err := jsonSubset(docJSON(t, "README.md", "**The task spec**"), gen, "task-mean.json"); err != nil {
		t.Errorf("README.md's task spec is not the example's: %v", err)
	}
}

// FusedResultJS is the fused result as the Python client writes it.
type FusedResultJS struct {
	Theta   []float64 `json:"theta"`
	Clients []string  `json:"clients"`
	Method  string    `json:"method"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestLatticeClientRefusedBeforeSubmit: a task created from a spec file with
// phi_file; a client whose features disagree with the task's Φ, or whose
// MDP is malformed, exits with an error naming the field, and the server
// holds no submission.
func TestLatticeClientRefusedBeforeSubmit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	gw, _ := gridworld.DefaultFamily(5).Probe(3)
	phi, err := tasks.GridFeatures(gw)
	if err != nil {
		t.Fatal(err)
	}
	r, d := phi.Dims()
	if err := os.WriteFile(filepath.Join(dir, "phi.npy"), npy.EncodeFloat64([]int{r, d}, phi.RawMatrix().Data), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := `{"id":"lat","env_family":"lattice","theta_dim":2,"fusion":{"method":"barycentric"},
		"probe":{"state":[{"n":5,"lo":0,"hi":4},{"n":5,"lo":0,"hi":4}],"action":[{"n":4,"categorical":true}],"phi_file":"phi.npy"}}`
	if err := os.WriteFile(filepath.Join(dir, "task.json"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	store, tokens := filepath.Join(dir, "fed.db"), filepath.Join(dir, "tokens.json")
	runCLI(t, "server", "task", "create", "--store", store, "--spec", filepath.Join(dir, "task.json"),
		"--clients", "a,b", "--tokens-out", tokens)
	if s := storedSpec(t, store, "lat"); strings.Contains(string(s.Probe), "phi_file") || !strings.Contains(string(s.Probe), "phi_npy") {
		t.Fatalf("stored probe does not carry Φ itself: %.120s", s.Probe)
	}
	srv, addr := startServer(t, ctx, dir, store, "127.0.0.1:0")

	// A client on the task's lattice whose feature row 57 differs.
	b := mdp.NewBuilder(25, 4)
	b.Gamma = 0.9
	for s := range 25 {
		for a := range 4 {
			b.AddTransition(s, a, (s+a)%25, 1)
		}
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	bad := mat.DenseCopyOf(phi)
	bad.Set(57, 1, bad.At(57, 1)+0.01)
	mdpFile, demos := filepath.Join(dir, "mdp.json"), filepath.Join(dir, "demos.jsonl")
	if err := irl.WriteSpecFile(mdpFile, m, bad); err != nil {
		t.Fatal(err)
	}
	if err := irl.WriteTrajectoriesFile(demos, []irl.Trajectory{{States: []int{0, 1, 2}, Actions: []int{1, 1}}}); err != nil {
		t.Fatal(err)
	}
	malformed := filepath.Join(dir, "bad.json")
	os.WriteFile(malformed, []byte(`{"states":25,"actions":4,"gamma":0.9,"transitions":[[0,0,1,1.5]],"features":[[0,0]]}`), 0o644)
	for _, tc := range []struct{ mdp, want string }{
		{mdpFile, "client features[57][1] = "},
		{malformed, "field features: has 1 rows, want states*actions = 100"},
		{filepath.Join(repoRoot(), "pkg", "irl", "testdata", "bad_mdp_next.npz"), "field next[4]: state 5 out of range"},
	} {
		cmd := exec.CommandContext(ctx, fedirlBinary(t), "client", "--server", addr, "--insecure", "--task", "lat", "--id", "a",
			"--token-file", tokens, "--mdp", tc.mdp, "--demos", demos, "--quiet")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("client with %s: err %v, output %q; want an error containing %q", filepath.Base(tc.mdp), err, out, tc.want)
		}
	}
	srv.cmd.Process.Kill()
	<-srv.done
	s, err := federation.OpenStoreWith(store, federation.StoreOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sts, err := s.Statuses()
	if err != nil || len(sts) != 1 || sts[0].TotalSubmissions != 0 {
		t.Fatalf("statuses %+v, %v: want task lat with no submission", sts, err)
	}
}
