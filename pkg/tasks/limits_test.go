package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/ot"
)

// TestLimitsRefuseTasksBeforeBuilding: the specs that a server could
// not afford or never fuse (a gridworld probe of size 100000, which ran the
// server out of memory while being validated; ε = 1e-300; max_iter 2·10⁹;
// control grids above the bound) are refused by Fuser.Validate with an error
// naming the field and the bound, having allocated almost nothing.
func TestLimitsRefuseTasksBeforeBuilding(t *testing.T) {
	big := controlProbe(t, "Pendulum-v1", "paper")
	big.Grid.State[0].N, big.Grid.State[1].N = 5000, 5000
	bigRaw, _ := json.Marshal(big)
	pend := controlProbe(t, "Pendulum-v1", "paper")
	pendRaw, _ := json.Marshal(pend)
	gridOf := func(size int) json.RawMessage { return json.RawMessage(`{"size":` + itoa(size) + `,"goal":0}`) }
	for _, tc := range []struct {
		name   string
		spec   func(s *federation.TaskSpec)
		lim    federation.Limits
		expect []string
	}{
		{"gridworld size 100000", func(s *federation.TaskSpec) { s.Probe = gridOf(100000) },
			federation.Limits{}, []string{"probe: 40000000000 points", "bound of 2097152", "--max-probe-points"}},
		{"gridworld size 3000", func(s *federation.TaskSpec) { s.Probe = gridOf(3000) },
			federation.Limits{}, []string{"36000000 points", "--max-probe-points"}},
		{"gridworld over an operator's bound", func(s *federation.TaskSpec) {},
			federation.Limits{MaxProbePoints: 99}, []string{"100 points", "bound of 99"}},
		{"control grid 5000×5000×5", func(s *federation.TaskSpec) { s.EnvFamily, s.Probe, s.ThetaDim = "control", bigRaw, pend.RBF.Dim() },
			federation.Limits{}, []string{"125000000 points", "--max-probe-points"}},
		{"control Φ entries", func(s *federation.TaskSpec) { s.EnvFamily, s.Probe, s.ThetaDim = "control", pendRaw, pend.RBF.Dim() },
			federation.Limits{MaxProbeEntries: 1000}, []string{"features", "--max-probe-entries"}},
		{"epsilon 1e-300", func(s *federation.TaskSpec) {
			s.Fusion = fusionJSON(t, fusion.Options{Method: "barycentric", Eps: 1e-300})
		},
			federation.Limits{}, []string{"fusion.epsilon = 1e-300", "[0.001, 1000]", "--min-epsilon"}},
		{"epsilon 1e9", func(s *federation.TaskSpec) {
			s.Fusion = fusionJSON(t, fusion.Options{Method: "barycentric", Eps: 1e9})
		},
			federation.Limits{}, []string{"fusion.epsilon = 1e+09", "--max-epsilon"}},
		{"fusion max_iter 2e9", func(s *federation.TaskSpec) {
			s.Fusion = fusionJSON(t, fusion.Options{Method: "barycentric", Solver: ot.Paper, MaxIter: 2000000000, Tol: -1})
		}, federation.Limits{}, []string{"fusion.max_iter = 2000000000", "bound of 100000", "--max-fusion-iterations"}},
		{"fusion inner_iter", func(s *federation.TaskSpec) {
			s.Fusion = fusionJSON(t, fusion.Options{Solver: ot.Paper, InnerIter: 5000})
		},
			federation.Limits{}, []string{"fusion.inner_iter = 5000", "--max-inner-iterations"}},
		{"irl max_iter", func(s *federation.TaskSpec) { s.IRL, _ = EncodeIRL(irl.Config{MaxIter: 10000000}) },
			federation.Limits{}, []string{"irl.max_iter = 10000000", "--max-irl-iterations"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := gridSpec(t, "lim", fusion.Options{})
			tc.spec(&spec)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := (&Fuser{Limits: tc.lim}).Validate(spec)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, want := range tc.expect {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if a := after.TotalAlloc - before.TotalAlloc; a > 1<<20 {
				t.Errorf("refusing allocated %d bytes: something was built", a)
			}
		})
	}
	// At the bounds a task is accepted.
	spec := gridSpec(t, "ok", fusion.Options{Method: "barycentric", Eps: 1e-3, MaxIter: 100000})
	if err := (&Fuser{Limits: federation.Limits{MaxProbePoints: 100}}).Validate(spec); err != nil {
		t.Fatalf("a task at the bounds: %v", err)
	}
}

func fusionJSON(t *testing.T, o fusion.Options) json.RawMessage {
	t.Helper()
	b, err := EncodeFusion(o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestFusionStopsAtShutdown: a barycentric fusion with the largest budget
// the default limits allow (max_iter 100000, tol −1, the paper's solver with
// 1000 inner iterations) stops within a second of the coordinator's Close,
// instead of taking a core past shutdown (the issue: "a fusion did not stop
// within 1 s"); the round stays open to be fused after a restart.
func TestFusionStopsAtShutdown(t *testing.T) {
	store, err := federation.OpenStore(t.TempDir() + "/s.db")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var mu sync.Mutex
	var logs []string
	logf := func(format string, args ...any) {
		mu.Lock()
		logs = append(logs, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	coord, err := federation.NewCoordinator(store, federation.CoordinatorConfig{Fuser: NewFuser(), Logf: logf})
	if err != nil {
		t.Fatal(err)
	}
	spec := gridSpec(t, "slow", fusion.Options{Method: fusion.MethodBarycentric, Solver: ot.Paper, MaxIter: 100000, InnerIter: 1000, Tol: -1})
	tok, err := coord.CreateTask(spec, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, c := range []string{"a", "b"} {
		s := federation.Submission{TaskID: "slow", Round: 1, ClientID: c, Theta: []float64{-1 - float64(i), 0.5}, DemoCount: 1}
		if _, err := coord.Submit(ctx, federation.Credentials{Token: tok[c]}, s); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the fusion is running
	start := time.Now()
	coord.Close()
	d := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("Close took %v; log: %q", d, logs)
	if d > time.Second || slices.ContainsFunc(logs, func(s string) bool { return strings.Contains(s, "did not stop") }) {
		t.Fatalf("the fusion did not stop within 1 s of Close (%v)", d)
	}
	if !slices.ContainsFunc(logs, func(s string) bool { return strings.Contains(s, "fusion interrupted by shutdown") }) {
		t.Fatal("no fusion was interrupted: the test did not exercise a running fusion")
	}
}

// TestCreateTaskRPCRefusesUnaffordableProbe: the CreateTask RPC with
// a gridworld probe of size 100000 (the server died with "fatal error: out
// of memory") is refused with InvalidArgument naming the bound, and the
// server keeps serving its other tasks.
func TestCreateTaskRPCRefusesUnaffordableProbe(t *testing.T) {
	store, err := federation.OpenStore(t.TempDir() + "/s.db")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	admin := strings.Repeat("k", 40)
	coord, err := federation.NewCoordinator(store, federation.CoordinatorConfig{Fuser: NewFuser(), AdminToken: admin})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	tok, err := coord.CreateTask(gridSpec(t, "ok", fusion.Options{}), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := federation.NewGRPCServer(coord, federation.GRPCServerConfig{})
	go srv.Serve(lis)
	defer srv.Stop()
	c, err := federation.DialGRPC(lis.Addr().String(), federation.DialConfig{Token: admin})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	huge := gridSpec(t, "huge", fusion.Options{Method: fusion.MethodBarycentric})
	huge.Probe = json.RawMessage(`{"size":100000,"goal":0}`)
	_, err = c.CreateTask(ctx, huge, []string{"a"})
	if federation.CodeOf(err) != federation.CodeInvalidArgument || !strings.Contains(err.Error(), "above the server's bound of 2097152 (--max-probe-points)") {
		t.Fatalf("CreateTask of a size-100000 probe: %v", err)
	}
	cl, err := federation.DialGRPC(lis.Addr().String(), federation.DialConfig{Token: tok["a"]})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.GetTask(ctx, "ok", "a"); err != nil {
		t.Fatalf("the server stopped serving: %v", err)
	}
}

// TestFuserBuildsEachProbeOnce: tasks that share a probe spec share one
// probe (the same Φ, built once), whatever their ids and fusion methods,
// while a task still gets its own checks (an out-of-bounds ε is refused on a
// cached probe) and a different spec its own probe; the oldest of more than
// maxCachedProbes specs is built again.
func TestFuserBuildsEachProbeOnce(t *testing.T) {
	pend := controlProbe(t, "Pendulum-v1", "paper")
	spec := func(id string, grid int, o fusion.Options) federation.TaskSpec {
		p := pend
		p.Grid.State[0].N = grid
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return federation.TaskSpec{ID: id, EnvFamily: "control", Probe: raw, ThetaDim: p.RBF.Dim(), Fusion: fusionJSON(t, o)}
	}
	f := NewFuser()
	a, b := spec("a", 5, fusion.Options{Method: "mean"}), spec("b", 5, fusion.Options{Method: "barycentric"})
	if err := f.Validate(a); err != nil {
		t.Fatal(err)
	}
	pa, err := f.probe(a)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := f.probe(b)
	if err != nil {
		t.Fatal(err)
	}
	if pa.Phi != pb.Phi {
		t.Fatal("two tasks with one probe spec got two builds of Φ")
	}
	bad := spec("bad", 5, fusion.Options{Method: "barycentric", Eps: 1e-300})
	if err := f.Validate(bad); err == nil || !strings.Contains(err.Error(), "fusion.epsilon") {
		t.Fatalf("ε = 1e-300 on a cached probe: %v, want the ε bound refused", err)
	}
	other, err := f.probe(spec("c", 6, fusion.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := other.Phi.Dims(); r == 0 || other.Phi == pa.Phi {
		t.Fatal("a different probe spec got the cached probe")
	}
	for g := 7; g < 7+maxCachedProbes; g++ { // push spec a out
		if _, err := f.probe(spec(fmt.Sprint(g), g, fusion.Options{})); err != nil {
			t.Fatal(err)
		}
	}
	if again, err := f.probe(a); err != nil || again.Phi == pa.Phi {
		t.Fatalf("after %d other specs, spec a's probe was still cached (err %v)", maxCachedProbes, err)
	}
}
