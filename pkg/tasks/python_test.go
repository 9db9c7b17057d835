package tasks_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/approx"
)

// pythonWith returns the first Python interpreter (Debian's /usr/bin/python3,
// then python3 on the PATH) that imports every one of modules, or "". CI
// installs python3-grpcio, python3-grpc-tools and python3-numpy.
func pythonWith(modules ...string) string {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import "+strings.Join(modules, ", ")).Run() == nil {
			return py
		}
	}
	return ""
}

// TestPythonClientFederatesWithGoClient runs a real server, the Go client
// (MaxEnt IRL on its exported grid world) and the Python example client
// (a θ from a .npy file) in one mean-fused task, and checks both receive
// the same fused θ, the mean of the two submissions.
func TestPythonClientFederatesWithGoClient(t *testing.T) {
	py := pythonWith("grpc", "grpc_tools", "numpy")
	if py == "" {
		t.Skip("no python3 with grpc, grpc_tools and numpy (Debian: python3-grpcio python3-grpc-tools python3-numpy)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	dir := t.TempDir()
	store, tokens := filepath.Join(dir, "fed.db"), filepath.Join(dir, "tokens.json")
	runCLI(t, "server", "task", "create", "--store", store, "--id", "mixed", "--gridworld-size", "5", "--seed", "7",
		"--clients", "gopher,pythonista", "--fusion", "mean", "--tokens-out", tokens)
	_, addr := startServer(t, ctx, dir, store, "127.0.0.1:0")
	mdpPath, demosPath := exportClient(t, dir, 7, 0)
	goOut := filepath.Join(dir, "go.json")
	goClient := start(t, ctx, "go client", "client", "--server", addr, "--insecure", "--task", "mixed", "--id", "gopher",
		"--token-file", tokens, "--mdp", mdpPath, "--demos", demosPath, "--out", goOut)

	thetaFile, pyOut := filepath.Join(dir, "theta.npy"), filepath.Join(dir, "py.json")
	if out, err := exec.Command(py, "-c", "import numpy, sys; numpy.save(sys.argv[1], numpy.array([-0.25, 0.125]))", thetaFile).CombinedOutput(); err != nil {
		t.Fatalf("writing theta.npy: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, py, filepath.Join(root, "examples", "python", "fedirl_client.py"), "--server", addr, "--insecure",
		"--task", "mixed", "--id", "pythonista", "--token-file", tokens, "--theta", thetaFile, "--out", pyOut, "--timeout", "60")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python client: %v\n%s", err, out)
	}
	goClient.wait(t, "go client", 60*time.Second)

	var pyRes struct {
		Theta   []float64 `json:"theta"`
		Clients []string  `json:"clients"`
		Method  string    `json:"method"`
	}
	b, err := os.ReadFile(pyOut)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pyRes); err != nil {
		t.Fatal(err)
	}
	goRes := readReport(t, goOut)
	approx.Slices(t, "fused θ (python vs go client)", pyRes.Theta, goRes.Final.Theta, 0, 0)
	local := goRes.Rounds[0].Local.Theta
	want := []float64{(local[0] - 0.25) / 2, (local[1] + 0.125) / 2}
	approx.Slices(t, "fused θ = mean of the two submissions", pyRes.Theta, want, 1e-15, 1e-15)
	if pyRes.Method != "mean" || len(pyRes.Clients) != 2 {
		t.Fatalf("python result %+v", pyRes)
	}

	// A refusal (a task this token does not open) is one line, not a traceback.
	out, err := exec.CommandContext(ctx, py, filepath.Join(root, "examples", "python", "fedirl_client.py"), "--server", addr, "--insecure",
		"--task", "no-such-task", "--id", "pythonista", "--token-file", tokens, "--theta", thetaFile, "--timeout", "10").CombinedOutput()
	msg := strings.TrimSpace(string(out))
	if err == nil || strings.Contains(msg, "Traceback") || strings.Count(msg, "\n") != 0 ||
		!strings.Contains(msg, "GetTask no-such-task refused by "+addr) {
		t.Errorf("refusal printed as %q (err %v), want one line naming the call and the server's reason", msg, err)
	}
	// Without --insecure against a plaintext server: one line naming the fix, no gRPC core log line.
	out, err = exec.CommandContext(ctx, py, filepath.Join(root, "examples", "python", "fedirl_client.py"), "--server", addr,
		"--task", "mixed", "--id", "pythonista", "--token-file", tokens, "--theta", thetaFile, "--timeout", "10").CombinedOutput()
	msg = strings.TrimSpace(string(out))
	if err == nil || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "fix: the server speaks plaintext (it was started with --insecure): pass --insecure") {
		t.Errorf("TLS client against a plaintext server printed %q (err %v), want one line naming --insecure", msg, err)
	}
}

// TestPythonRunLoader trains a tiny PPO run with the CLI and checks that
// the Python package's loader, fedirl.load_run (which
// examples/python/fedirl_runs.py uses), reads its curve.csv into the same
// numbers as the curve.json written beside it (NaN where no evaluation
// ran), and its config.
func TestPythonRunLoader(t *testing.T) {
	var py string
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import numpy").Run() == nil {
			py = p
			break
		}
	}
	if py == "" {
		t.Skip("no python3 with numpy (Debian: python3-numpy)")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	dir := filepath.Join(t.TempDir(), "run")
	runCLI(t, "ppo", "train", "--env", "CartPole-v1", "--steps", "2048", "--eval-every", "1024", "--seed", "3", "--out", dir)
	script := `import json, sys
sys.path.insert(0, sys.argv[1])
import fedirl
run = fedirl.load_run(sys.argv[2])
t = run.tables["curve"]
ev = [None if v != v else float(v) for v in t["eval_return"]]
print(json.dumps({"steps": [int(v) for v in t["steps"]], "eval": ev, "env": run.config["env"], "json": sorted(run.json)}))`
	cmd := exec.Command(py, "-c", script, filepath.Join(root, "python"), dir)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fedirl.load_run: %v\n%s", err, out)
	}
	var got struct {
		Steps []int      `json:"steps"`
		Eval  []*float64 `json:"eval"`
		Env   string     `json:"env"`
		JSON  []string   `json:"json"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "curve.json"))
	if err != nil {
		t.Fatal(err)
	}
	var curve []struct {
		Steps int      `json:"steps"`
		Eval  *float64 `json:"eval_return"`
	}
	if err := json.Unmarshal(b, &curve); err != nil {
		t.Fatal(err)
	}
	if len(curve) == 0 || len(got.Steps) != len(curve) || len(got.Eval) != len(curve) {
		t.Fatalf("python read %d rows, curve.json has %d", len(got.Steps), len(curve))
	}
	evals := 0
	for i, c := range curve {
		if got.Steps[i] != c.Steps || (got.Eval[i] == nil) != (c.Eval == nil) || (c.Eval != nil && *got.Eval[i] != *c.Eval) {
			t.Errorf("row %d: python steps %d eval %v, curve.json %d %v", i, got.Steps[i], got.Eval[i], c.Steps, c.Eval)
		}
		if c.Eval != nil {
			evals++
		}
	}
	if evals == 0 || got.Env != "CartPole-v1" || strings.Join(got.JSON, ",") != "config,curve,policy" {
		t.Errorf("evaluations %d, config env %q, JSON files %v", evals, got.Env, got.JSON)
	}
}

// TestPythonPackageProtoCopy: the Python package installs its own copy of
// the federation protocol (python/fedirl/federation.proto, package data,
// used when the package runs outside a checkout); it must equal
// proto/federation.proto byte for byte.
func TestPythonPackageProtoCopy(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	want, err := os.ReadFile(filepath.Join(root, "proto", "federation.proto"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "python", "fedirl", "federation.proto"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("python/fedirl/federation.proto differs from proto/federation.proto: cp proto/federation.proto python/fedirl/")
	}
}
