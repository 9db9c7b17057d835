package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// meanFuser is an independent weighted mean (normalizing the raw weights
// itself) used to check the coordinator's
// bookkeeping without pkg/fusion.
type meanFuser struct {
	calls atomic.Int64
	fail  atomic.Bool
	last  atomic.Pointer[[]float64] // the weights of the latest call, as received
}

// Validate accepts every spec whose fusion section, if any, is JSON with an
// optional "weighting" of "uniform" or "demos".
func (m *meanFuser) Validate(spec TaskSpec) error {
	_, err := weightingOf(spec)
	return err
}

func weightingOf(spec TaskSpec) (string, error) {
	var f struct {
		Weighting string `json:"weighting"`
	}
	if len(spec.Fusion) > 0 {
		if err := json.Unmarshal(spec.Fusion, &f); err != nil {
			return "", err
		}
	}
	if f.Weighting != "" && f.Weighting != "uniform" && f.Weighting != "demos" {
		return "", fmt.Errorf("fusion.weighting %q", f.Weighting)
	}
	return f.Weighting, nil
}

func (m *meanFuser) Fuse(_ context.Context, spec TaskSpec, thetas [][]float64, demos []int) (FuseOutput, error) {
	m.calls.Add(1)
	var weights []float64
	if w, _ := weightingOf(spec); w == "demos" {
		for _, d := range demos {
			weights = append(weights, float64(d))
		}
	}
	m.last.Store(&weights)
	if m.fail.Load() {
		return FuseOutput{}, fmt.Errorf("fuser deliberately failing: %w", ErrTransient)
	}
	sum := float64(len(thetas))
	if weights != nil {
		sum = 0
		for _, w := range weights {
			sum += w
		}
	}
	out := make([]float64, spec.ThetaDim)
	for i, th := range thetas {
		w := 1.0
		if weights != nil {
			w = weights[i]
		}
		for k, v := range th {
			out[k] += w / sum * v
		}
	}
	alpha := make([]float64, len(thetas))
	for i := range alpha {
		alpha[i] = 1 / sum
		if weights != nil {
			alpha[i] = weights[i] / sum
		}
	}
	scores := make([]float64, len(thetas)) // ‖θ_i − θ̄‖₂
	for i, th := range thetas {
		for k, v := range th {
			scores[i] += (v - out[k]) * (v - out[k])
		}
		scores[i] = math.Sqrt(scores[i])
	}
	return FuseOutput{Theta: out, Method: "mean", Weights: alpha, MarginalError: 0, Iterations: 1, OutlierScores: scores}, nil
}

// fixedLearner returns warmStart+Delta (or Delta when there is no warm start).
type fixedLearner struct {
	Delta []float64
	Demos int
}

func (l fixedLearner) Learn(_ context.Context, spec TaskSpec, warm []float64) (LocalResult, error) {
	th := make([]float64, len(l.Delta))
	copy(th, l.Delta)
	for i := range warm {
		th[i] += warm[i]
	}
	return LocalResult{Theta: th, DemoCount: l.Demos, Iterations: 7, GradNorm: 0.5}, nil
}

func testSpec(id string, dim, quorum int) TaskSpec {
	return TaskSpec{ID: id, EnvFamily: "test", ThetaDim: dim, Quorum: quorum, MaxThetaNorm: 100}
}

type fixture struct {
	path  string
	store *Store
	coord *Coordinator
	fuser *meanFuser
}

func newFixture(t *testing.T, cfg CoordinatorConfig) *fixture {
	t.Helper()
	f := &fixture{path: filepath.Join(t.TempDir(), "store.db"), fuser: &meanFuser{}}
	f.open(t, cfg)
	t.Cleanup(f.close)
	return f
}

func (f *fixture) open(t *testing.T, cfg CoordinatorConfig) {
	t.Helper()
	var err error
	if f.store, err = OpenStore(f.path); err != nil {
		t.Fatal(err)
	}
	if cfg.Fuser == nil {
		cfg.Fuser = f.fuser
	}
	if cfg.AdminToken == "" {
		cfg.OpenStatus = true // as on a loopback quick start
	}
	if cfg.Tick == 0 {
		cfg.Tick = 20 * time.Millisecond
	}
	if f.coord, err = NewCoordinator(f.store, cfg); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) close() {
	if f.coord != nil {
		f.coord.Close()
		f.store.Close()
		f.coord = nil
	}
}

func (f *fixture) create(t *testing.T, spec TaskSpec, clients ...string) map[string]string {
	t.Helper()
	tok, err := f.coord.CreateTask(spec, clients)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (f *fixture) count(t *testing.T, task string, round int) int {
	t.Helper()
	subs, err := f.store.Submissions(task, round)
	if err != nil {
		t.Fatal(err)
	}
	return len(subs)
}

func sub(task, client string, round int, theta ...float64) Submission {
	return Submission{TaskID: task, ClientID: client, Round: round, Theta: theta, DemoCount: 10, Iterations: 3, GradNorm: 0.1}
}

// eventually polls cond every 5 ms until it holds or 30 s pass (long enough for a loaded CI machine; a passing test returns as soon as cond holds).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
