package federation

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/fedirl/fedirl/pkg/jointopt"
	pb "github.com/fedirl/fedirl/proto"
)

// jointFake is a JointFuser without pkg/fusion: a spec whose fusion
// section says {"method":"joint"} runs in gradient rounds with the given
// max_rounds and grad_tol, weighted uniformly; block, when set, makes the
// first JointStep of that round wait for its context (a server killed in
// the combining step).
type jointFake struct {
	meanFuser
	block atomic.Int64
	steps atomic.Int64
}

func (j *jointFake) Validate(spec TaskSpec) error { _, _, err := j.JointConfig(spec); return err }

func (j *jointFake) JointConfig(spec TaskSpec) (jointopt.Config, bool, error) {
	var f struct {
		Method    string  `json:"method"`
		MaxRounds int     `json:"max_rounds"`
		GradTol   float64 `json:"grad_tol"`
	}
	if len(spec.Fusion) > 0 {
		if err := json.Unmarshal(spec.Fusion, &f); err != nil {
			return jointopt.Config{}, false, err
		}
	}
	if f.Method != "joint" {
		return jointopt.Config{}, false, nil
	}
	cfg, err := jointopt.Config{MaxRounds: f.MaxRounds, GradTol: f.GradTol}.Resolve()
	return cfg, true, err
}

func (j *jointFake) JointUpdates(TaskSpec) bool { return false }

func (j *jointFake) JointStep(ctx context.Context, spec TaskSpec, s *jointopt.State, evals []jointopt.Eval, updates [][]float64, demos []int) ([]float64, jointopt.Eval, error) {
	j.steps.Add(1)
	if b := j.block.Load(); b > 0 && int64(s.Rounds+1) == b {
		j.block.Store(0)
		<-ctx.Done()
		return nil, jointopt.Eval{}, ctx.Err()
	}
	w := make([]float64, len(evals))
	for i := range w {
		w[i] = 1 / float64(len(w))
	}
	sum, err := jointopt.Sum(evals, w, s.Dim())
	if err != nil {
		return nil, sum, err
	}
	return w, sum, s.Observe(sum)
}

// smoothLearner's objective is f(θ) = −Σ_k a_k·logcosh(θ_k − c_k) −
// ½‖θ − c‖²·b: smooth, strictly concave, maximized at c, with a Hessian
// that varies (so Newton takes several rounds from 0).
type smoothLearner struct {
	c    []float64
	a, b float64
	n    int
	seen atomic.Int64
}

func (l *smoothLearner) Learn(context.Context, TaskSpec, []float64) (LocalResult, error) {
	return LocalResult{}, errors.New("a joint task's learner is asked for evaluations only")
}

func (l *smoothLearner) Evaluate(_ context.Context, spec TaskSpec, th []float64) (jointopt.Eval, int, error) {
	l.seen.Add(1)
	d := len(th)
	e := jointopt.Eval{Grad: make([]float64, d), Hess: make([]float64, d*d)}
	for k := range th {
		x := th[k] - l.c[k]
		e.Value -= l.a*math.Log(math.Cosh(x)) + 0.5*l.b*x*x
		e.Grad[k] = -l.a*math.Tanh(x) - l.b*x
		e.Hess[k*d+k] = -l.a*(1-math.Tanh(x)*math.Tanh(x)) - l.b
	}
	return e, l.n, nil
}

func jointSpec(id string, d, maxRounds int) TaskSpec {
	return TaskSpec{ID: id, EnvFamily: "fake", ThetaDim: d,
		Fusion: json.RawMessage(fmt.Sprintf(`{"method":"joint","max_rounds":%d,"grad_tol":1e-12}`, maxRounds))}
}

func smoothClients() []LocalClient {
	return []LocalClient{
		{ID: "a", Learner: &smoothLearner{c: []float64{3, -1}, a: 2, b: 0.1, n: 5}},
		{ID: "b", Learner: &smoothLearner{c: []float64{-2, 4}, a: 1, b: 0.3, n: 9}},
		{ID: "c", Learner: &smoothLearner{c: []float64{1, 1}, a: 0.5, b: 0.2, n: 2}},
	}
}

// TestJointRoundsInProcess: RunInProcess with joint clients ends at the
// maximizer of the uniform sum, which the stationarity condition checks
// independently (Σ ∇f_i = 0 at the result, by the clients' own gradients),
// and at the same θ as jointopt.Maximize run centrally on the same terms.
func TestJointRoundsInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fuser := &jointFake{}
	fused, reps, err := RunInProcess(ctx, jointSpec("j", 2, 40), smoothClients(), InProcessConfig{Fuser: fuser})
	if err != nil {
		t.Fatal(err)
	}
	last := fused[len(fused)-1]
	if last.Joint == nil || !last.Joint.Done || last.Joint.Reason != jointopt.StopConverged || last.Method != "joint" {
		t.Fatalf("last round %+v", last.Joint)
	}
	var terms []jointopt.Objective
	g := make([]float64, 2)
	for _, c := range smoothClients() {
		e, _, _ := c.Learner.(JointLearner).Evaluate(ctx, TaskSpec{}, last.Theta)
		g[0], g[1] = g[0]+e.Grad[0], g[1]+e.Grad[1]
		l := c.Learner.(JointLearner)
		terms = append(terms, func(th []float64) (jointopt.Eval, error) { e, _, err := l.Evaluate(ctx, TaskSpec{}, th); return e, err })
	}
	if norm2(g) > 1e-11 {
		t.Errorf("Σ ∇f_i at the joint θ %v is %v", last.Theta, g)
	}
	central, err := jointopt.Maximize(terms, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, []float64{0, 0}, jointopt.Config{MaxRounds: 40, GradTol: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	if !equalBits(central.Theta, last.Theta) || central.Rounds != len(fused) {
		t.Errorf("federated θ %v in %d rounds, central %v in %d", last.Theta, len(fused), central.Theta, central.Rounds)
	}
	for _, rep := range reps {
		if len(rep.Rounds) != len(fused) || !equalBits(rep.Final.Theta, last.Theta) {
			t.Errorf("client %s: %d rounds, final %v", rep.ClientID, len(rep.Rounds), rep.Final.Theta)
		}
	}
	for r := 1; r < len(fused); r++ {
		if !equalBits(fused[r].Joint.Trial, fused[r-1].Joint.Next) {
			t.Errorf("round %d evaluated %v, round %d announced %v", r+1, fused[r].Joint.Trial, r, fused[r-1].Joint.Next)
		}
	}
}

// TestJointResumesAfterInterruptedStep: a server stopped while a joint
// round's combining step runs (its context cancelled, the round left
// "fusing" in the bbolt store) re-fuses the round from the stored
// evaluations when a new coordinator opens the store, and the task ends at
// the θ of an uninterrupted run bit for bit; a round cap ends the task at
// max_rounds.
func TestJointResumesAfterInterruptedStep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want, _, err := RunInProcess(ctx, jointSpec("j", 2, 40), smoothClients(), InProcessConfig{Fuser: &jointFake{}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.db")
	store, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	fuser := &jointFake{}
	fuser.block.Store(3)
	coord, err := NewCoordinator(store, CoordinatorConfig{Fuser: fuser})
	if err != nil {
		t.Fatal(err)
	}
	clients := smoothClients()
	ids := []string{"a", "b", "c"}
	tokens, err := coord.CreateTask(jointSpec("j", 2, 40), ids)
	if err != nil {
		t.Fatal(err)
	}
	// Run the clients by hand up to round 3's submissions, then stop the
	// server in its combining step.
	for r := 1; r <= 3; r++ {
		info, err := coord.GetTask(ctx, Credentials{Token: tokens["a"]}, "j", "a")
		if err != nil || info.CurrentRound != r {
			t.Fatalf("round %d: %+v, %v", r, info, err)
		}
		for i, id := range ids {
			e, n, _ := clients[i].Learner.(JointLearner).Evaluate(ctx, info.Spec, info.Trial)
			if _, err := coord.Submit(ctx, Credentials{Token: tokens[id]}, Submission{TaskID: "j", Round: r, ClientID: id, Theta: info.Trial, Eval: &e, DemoCount: n}); err != nil {
				t.Fatal(err)
			}
		}
		if r < 3 {
			if fs, err := coord.GetFused(ctx, Credentials{Token: tokens["a"]}, "j", "a", r, 10*time.Second); err != nil || !fs.Ready {
				t.Fatalf("round %d: %+v, %v", r, fs, err)
			}
		}
	}
	waitUntil(t, func() bool { st, _ := store.state("j"); return st.Fusing && fuser.steps.Load() == 3 })
	coord.Close()
	if st, _ := store.state("j"); !st.Fusing || st.Round != 3 {
		t.Fatalf("after the stop: state %+v, want round 3 fusing", st)
	}
	store.Close()
	store, err = OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	coord, err = NewCoordinator(store, CoordinatorConfig{Fuser: &jointFake{}})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	reps := make([]ClientReport, len(ids))
	errs := make(chan error, len(ids))
	for i, id := range ids {
		go func() {
			var err error
			reps[i], err = RunClient(ctx, InProcess{C: coord, Cred: Credentials{Token: tokens[id]}}, clients[i].Learner, ClientConfig{TaskID: "j", ClientID: id})
			errs <- err
		}()
	}
	for range ids {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Round 3 is re-fused in the background at start-up: a client that
	// fetches the task first re-sends its identical round-3 evaluation (a
	// duplicate); either way it resumes at round 3 or 4, not before.
	if r := reps[0].Rounds[0].Round; r != 3 && r != 4 {
		t.Errorf("the resumed client started at round %d, want 3 or 4", r)
	}
	sts, _ := store.Statuses()
	got := sts[0].Fused
	if len(got) != len(want) {
		t.Fatalf("%d rounds after the restart, %d uninterrupted", len(got), len(want))
	}
	for r := range got {
		if !equalBits(got[r].Theta, want[r].Theta) || !equalBits(got[r].Joint.Trial, want[r].Joint.Trial) {
			t.Errorf("round %d: θ %v, uninterrupted %v", r+1, got[r].Theta, want[r].Theta)
		}
	}

	capped, _, err := RunInProcess(ctx, jointSpec("cap", 2, 2), smoothClients(), InProcessConfig{Fuser: &jointFake{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(capped) != 2 || !capped[1].Joint.Done || capped[1].Joint.Reason != jointopt.StopRoundCap {
		t.Errorf("max_rounds 2: %d rounds, last %+v", len(capped), capped[len(capped)-1].Joint)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// TestPackEvalRoundTrip: UnpackEval inverts PackEval on a symmetric
// Hessian and refuses a vector of another length.
func TestPackEvalRoundTrip(t *testing.T) {
	e := jointopt.Eval{Value: -2.5, Grad: []float64{1, 2, 3}, Hess: []float64{-4, 1, 0.5, 1, -3, 0.25, 0.5, 0.25, -2}}
	v := PackEval(e)
	if len(v) != 1+3+6 {
		t.Fatalf("packed %d numbers, want 10", len(v))
	}
	got, err := UnpackEval(v, 3)
	if err != nil || !sameEval(&got, &e) {
		t.Fatalf("round trip %+v, %v", got, err)
	}
	if _, err := UnpackEval(v[:9], 3); err == nil {
		t.Error("a short vector unpacked")
	}
}

// FuzzJointSubmit: no evaluation, however malformed, panics the
// coordinator; one it accepts is stored bit for bit and is a finite,
// symmetric evaluation of the task's dimension at the round's trial θ.
func FuzzJointSubmit(f *testing.F) {
	store, err := OpenStore(filepath.Join(f.TempDir(), "s.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { store.Close() })
	c, err := NewCoordinator(store, CoordinatorConfig{Fuser: &jointFake{}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(c.Close)
	tok, err := c.CreateTask(jointSpec("j", 2, 5), []string{"a", "b"})
	if err != nil {
		f.Fatal(err)
	}
	one := binary.LittleEndian.AppendUint64(nil, math.Float64bits(1))
	nan := binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.NaN()))
	f.Add(1, -1.0, append(one, one...), append(append(append(one, one...), one...), one...), []byte{})
	f.Add(1, 2.0, append(one, nan...), one, one)
	f.Add(2, 0.0, one, one, append(one, one...))
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, round int, value float64, grad, hess, theta []byte) {
		sub := Submission{TaskID: "j", Round: round, ClientID: "a", Theta: floats(theta),
			Eval: &jointopt.Eval{Value: value, Grad: floats(grad), Hess: floats(hess)}}
		if len(theta) == 0 {
			sub.Theta = []float64{0, 0}
		}
		_, err := c.Submit(ctx, Credentials{Token: tok["a"]}, sub)
		if err != nil {
			if CodeOf(err) == CodeUnknown {
				t.Fatalf("unclassified refusal %v", err)
			}
			return
		}
		subs, err := store.Submissions("j", round)
		if err != nil || len(subs) == 0 {
			t.Fatalf("accepted evaluation not stored: %v", err)
		}
		got := subs[0]
		if got.Eval == nil || got.Eval.Check(2) != nil || !equalBits(got.Theta, []float64{0, 0}) || !sameEval(got.Eval, sub.Eval) {
			t.Fatalf("accepted %+v", got.Eval)
		}
	})
}

// TestJointTaskRefusedAboveMessageLimit: a coordinator that knows its
// transport's message limit refuses a joint task whose round submission
// cannot fit, naming the numbers and the flag, and accepts one that fits;
// an encoded submission of the largest accepted size passes the limit.
func TestJointTaskRefusedAboveMessageLimit(t *testing.T) {
	c, err := newCoordinator(newMemStore(), CoordinatorConfig{Fuser: &jointFake{}, MaxMessageBytes: DefaultMaxMessageBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d := 1
	for JointMessageBytes(d+1) <= DefaultMaxMessageBytes {
		d++
	}
	if _, err := c.CreateTask(jointSpec("big", d+1, 5), []string{"a"}); CodeOf(err) != CodeInvalidArgument || !strings.Contains(err.Error(), "--max-message-bytes") {
		t.Errorf("d = %d: %v, want a refusal naming --max-message-bytes", d+1, err)
	}
	if _, err := c.CreateTask(jointSpec("fits", d, 5), []string{"a"}); err != nil {
		t.Errorf("d = %d: %v", d, err)
	}
	e := jointopt.Eval{Value: -1, Grad: make([]float64, d), Hess: make([]float64, d*d)}
	for i := range e.Hess {
		e.Hess[i] = -math.Pi * float64(i+1)
	}
	msg := &pb.SubmitRequest{TaskId: "fits", Round: 1, ClientId: "a", Theta: make([]float64, d), Eval: evalToPB(&e)}
	if n := proto.Size(msg); n > JointMessageBytes(d) {
		t.Errorf("an encoded submission of dimension %d has %d bytes, JointMessageBytes %d", d, n, JointMessageBytes(d))
	}
}

// refusingLearner answers one-shot tasks and refuses joint ones with its reason.
type refusingLearner struct{}

func (refusingLearner) Learn(context.Context, TaskSpec, []float64) (LocalResult, error) {
	return LocalResult{Theta: []float64{1, 2}}, nil
}

func (refusingLearner) RefuseJoint(spec TaskSpec) error {
	return fmt.Errorf("my gradients of task %s would be estimates", spec.ID)
}

// TestJointRefuserSaysWhy: a JointRefuser's reason, with the task id, is
// the client's error for a joint task, and nothing is submitted; a
// learner that is neither JointLearner nor JointRefuser gets the generic
// refusal.
func TestJointRefuserSaysWhy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct {
		learner Learner
		want    string
	}{
		{refusingLearner{}, "client a: task j: my gradients of task j would be estimates"},
		{struct{ Learner }{refusingLearner{}}, "task j runs gradient/Hessian rounds (joint) and this client's learner evaluates no objective"},
	} {
		fuser := &jointFake{}
		_, _, err := RunInProcess(ctx, jointSpec("j", 2, 5), []LocalClient{{ID: "a", Learner: tc.learner}}, InProcessConfig{Fuser: fuser})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%T: error %v, want one containing %q", tc.learner, err, tc.want)
		}
		if n := fuser.steps.Load(); n != 0 {
			t.Errorf("%T: %d combining steps ran", tc.learner, n)
		}
	}
}
