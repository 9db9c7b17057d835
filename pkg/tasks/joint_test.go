package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/jointopt"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
	"github.com/fedirl/fedirl/pkg/privacy"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// jointFleet is a lattice-family joint task and its K clients: one random
// feature matrix Φ (S×A rows, d columns, the task's probe), one true θ, and
// per client its own random transitions (heterogeneous dynamics) with
// demonstrations of the soft-optimal policy there, 8 + 5i episodes.
type jointFleet struct {
	spec     federation.TaskSpec
	learners []*tasks.MaxEntLearner
	ids      []string
}

var jointSolver = mdp.Options{Tol: 1e-14, MaxIter: 1 << 20}

func newJointFleet(t testing.TB, seed uint64, k, S, A, d int, opt fusion.Options) jointFleet {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 50))
	rows := make([][]float64, S*A)
	data := make([]float64, 0, S*A*d)
	for i := range rows {
		rows[i] = make([]float64, d)
		for j := range rows[i] {
			rows[i][j] = rng.Float64()
		}
		data = append(data, rows[i]...)
	}
	phi := mat.NewDense(S*A, d, data)
	truth := make([]float64, d)
	for j := range truth {
		truth[j] = 1.5 * rng.NormFloat64()
	}
	probe, err := json.Marshal(tasks.LatticeProbe{
		State:  []tasks.LatticeAxis{{Name: "s", N: S, Categorical: true}},
		Action: []tasks.LatticeAxis{{Name: "a", N: A, Categorical: true}},
		Phi:    rows,
	})
	if err != nil {
		t.Fatal(err)
	}
	icfg := irl.Config{Temperature: 1, L2: 0.01}
	f := jointFleet{spec: federation.TaskSpec{ID: fmt.Sprintf("joint-%d", seed), EnvFamily: tasks.LatticeFamilyName, Probe: probe, ThetaDim: d}}
	if f.spec.IRL, err = tasks.EncodeIRL(icfg); err != nil {
		t.Fatal(err)
	}
	if f.spec.Fusion, err = tasks.EncodeFusion(opt); err != nil {
		t.Fatal(err)
	}
	for i := range k {
		m := mdptest.RandomMDP(seed*100+uint64(i), S, A, 3, 0, 0.9, 0)
		ws := mdp.NewWorkspace(m, mdp.Options{Tol: 1e-13})
		r := features.Reward(make([]float64, m.NumPairs()), phi, truth)
		pi := ws.SoftPolicy(nil, ws.SoftValueIteration(nil, r, 1), 1)
		ws.Close()
		drng := rand.New(rand.NewPCG(seed*100+uint64(i), 9))
		var demos []irl.Trajectory
		for len(demos) < 8+5*i {
			s, a := m.Rollout(drng, pi, 20)
			if len(a) > 0 {
				demos = append(demos, irl.Trajectory{States: s, Actions: a})
			}
		}
		l := &tasks.MaxEntLearner{MDP: m, Features: phi, Demos: demos, Solver: jointSolver}
		f.learners = append(f.learners, l)
		f.ids = append(f.ids, fmt.Sprintf("c%d", i))
	}
	return f
}

// pooled is the central fit of the fleet's clients (irl.Pooled) with the
// task's weights: the ceiling the federated joint fit must reach.
func (f jointFleet) pooled(t testing.TB) *jointopt.State {
	t.Helper()
	opt, err := fusion.DecodeOptions(f.spec.Fusion)
	if err != nil {
		t.Fatal(err)
	}
	icfg, err := tasks.DecodeIRL(f.spec.IRL)
	if err != nil {
		t.Fatal(err)
	}
	icfg.Solver = jointSolver
	objs := make([]*irl.Objective, len(f.learners))
	counts := make([]int, len(f.learners))
	for i, l := range f.learners {
		if objs[i], err = irl.NewObjective(l.MDP, l.Features, l.Demos, icfg); err != nil {
			t.Fatal(err)
		}
		defer objs[i].Close()
		counts[i] = len(l.Demos)
	}
	w, err := opt.JointWeights(counts)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := opt.JointConfig()
	if err != nil {
		t.Fatal(err)
	}
	s, err := irl.Pooled(context.Background(), objs, w, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f jointFleet) local() []federation.LocalClient {
	out := make([]federation.LocalClient, len(f.learners))
	for i, l := range f.learners {
		out[i] = federation.LocalClient{ID: f.ids[i], Learner: l}
	}
	return out
}

// grpcServer runs a coordinator with the real fuser on a bbolt store behind
// a loopback gRPC server, with an admin token.
func grpcServer(t testing.TB) (*federation.Coordinator, string) {
	t.Helper()
	store, err := federation.OpenStore(filepath.Join(t.TempDir(), "fed.db"))
	if err != nil {
		t.Fatal(err)
	}
	coord, err := federation.NewCoordinator(store, federation.CoordinatorConfig{Fuser: tasks.NewFuser(), AdminToken: "admin"})
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
	return coord, lis.Addr().String()
}

// runGRPC creates the fleet's task on a gRPC server and runs every client
// through the gRPC transport; it returns each client's report.
func (f jointFleet) runGRPC(t testing.TB, ctx context.Context, addr string) []federation.ClientReport {
	t.Helper()
	admin, err := federation.DialGRPC(addr, federation.DialConfig{Token: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	tokens, err := admin.CreateTask(ctx, f.spec, f.ids)
	if err != nil {
		t.Fatal(err)
	}
	reps := make([]federation.ClientReport, len(f.ids))
	errs := make(chan error, len(f.ids))
	for i, id := range f.ids {
		go func() {
			c, err := federation.DialGRPC(addr, federation.DialConfig{Token: tokens[id]})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			reps[i], err = federation.RunClient(ctx, c, f.learners[i], federation.ClientConfig{TaskID: f.spec.ID, ClientID: id})
			errs <- err
		}()
	}
	for range f.ids {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return reps
}

func relErr(got, want []float64) float64 {
	num, den := 0.0, 0.0
	for i := range want {
		num += (got[i] - want[i]) * (got[i] - want[i])
		den += want[i] * want[i]
	}
	return math.Sqrt(num / den)
}

// TestJointOverGRPCReachesPooled is acceptance 1 on random tabular MDPs:
// several clients with different dynamics, the joint task over the real
// gRPC path, against the central pooled fit (irl.Pooled) computed here
// from the same models and demonstrations: relative error ≤ 1e-8 in ≤ 15
// rounds, for both weightings (demos uncapped is the pooled MLE).
func TestJointOverGRPCReachesPooled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	_, addr := grpcServer(t)
	for i, c := range []struct {
		k, S, A, d int
		opt        fusion.Options
	}{
		{3, 12, 3, 4, fusion.Options{Method: "joint", Weighting: "demos", DemoCap: ptrF(1e6)}},
		{4, 15, 2, 5, fusion.Options{Method: "joint"}},
		{2, 10, 4, 3, fusion.Options{Method: "joint", Weighting: "demos", GradTol: 1e-9, MaxRounds: 15}},
	} {
		f := newJointFleet(t, uint64(11+i), c.k, c.S, c.A, c.d, c.opt)
		want := f.pooled(t)
		if !want.Converged() {
			t.Fatalf("case %d: the pooled fit did not converge: %s", i, want.Reason)
		}
		reps := f.runGRPC(t, ctx, addr)
		for ci, rep := range reps {
			fin := rep.Final
			if fin.Joint == nil || !fin.Joint.Done || fin.Joint.Reason != jointopt.StopConverged {
				t.Fatalf("case %d client %d: final round %+v", i, ci, fin.Joint)
			}
			if fin.Round > 15 || len(rep.Rounds) != fin.Round {
				t.Errorf("case %d client %d: %d rounds (reported %d), want ≤ 15", i, ci, fin.Round, len(rep.Rounds))
			}
			if e := relErr(fin.Theta, want.Theta); !(e <= 1e-8) {
				t.Errorf("case %d client %d: joint θ %v, pooled %v: relative error %.3g > 1e-8", i, ci, fin.Theta, want.Theta, e)
			}
		}
		t.Logf("case %d: K=%d S=%d A=%d d=%d: %d rounds (pooled %d), relative error %.2g", i, c.k, c.S, c.A, c.d,
			reps[0].Final.Round, want.Rounds, relErr(reps[0].Final.Theta, want.Theta))
	}
}

func ptrF(v float64) *float64 { return &v }

// TestJointEvaluateIsAFunctionOfTheta: a client's evaluation at θ has the
// same bits whatever it evaluated before (so a restarted client re-sends
// an identical evaluation), and its gradient and Hessian match central
// differences of its value and gradient.
func TestJointEvaluateIsAFunctionOfTheta(t *testing.T) {
	f := newJointFleet(t, 5, 1, 10, 3, 3, fusion.Options{Method: "joint"})
	l, ctx := f.learners[0], context.Background()
	a, b := []float64{0.3, -0.2, 0.5}, []float64{-1, 2, 0.1}
	e1, n, err := l.Evaluate(ctx, f.spec, a)
	if err != nil || n != len(l.Demos) {
		t.Fatal(n, err)
	}
	if _, _, err := l.Evaluate(ctx, f.spec, b); err != nil {
		t.Fatal(err)
	}
	e2, _, _ := l.Evaluate(ctx, f.spec, a)
	if math.Float64bits(e1.Value) != math.Float64bits(e2.Value) || !sameBits(e1.Grad, e2.Grad) || !sameBits(e1.Hess, e2.Hess) {
		t.Fatalf("θ evaluated twice, with another θ between: %v then %v", e1, e2)
	}
	const h = 1e-5
	d := len(a)
	for j := range d {
		ap, am := append([]float64(nil), a...), append([]float64(nil), a...)
		ap[j] += h
		am[j] -= h
		ep, _, _ := l.Evaluate(ctx, f.spec, ap)
		em, _, _ := l.Evaluate(ctx, f.spec, am)
		if fd := (ep.Value - em.Value) / (2 * h); math.Abs(fd-e1.Grad[j]) > 1e-7*(1+math.Abs(fd)) {
			t.Errorf("∂L/∂θ%d = %v, central difference %v", j, e1.Grad[j], fd)
		}
		for i := range d {
			if fd := (ep.Grad[i] - em.Grad[i]) / (2 * h); math.Abs(fd-e1.Hess[i*d+j]) > 1e-5*(1+math.Abs(fd)) {
				t.Errorf("H[%d][%d] = %v, central difference %v", i, j, e1.Hess[i*d+j], fd)
			}
		}
	}
	if _, _, err := l.Evaluate(ctx, f.spec, []float64{1}); err == nil {
		t.Error("a θ of the wrong length evaluated")
	}
}

// TestJointInProcessEqualsGRPC is the metamorphic test: one seed drives
// random fleets (client count, model size, weighting, update rule) whose joint task
// runs in process (RunInProcess, memory store) and over gRPC (bbolt
// store); every round's trial θ, accepted θ, weights and summed value
// agree bit for bit.
func TestJointInProcessEqualsGRPC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	_, addr := grpcServer(t)
	rng := rand.New(rand.NewPCG(2026, 50))
	for trial := range 5 {
		k, S, A, d := 2+rng.IntN(3), 8+rng.IntN(8), 2+rng.IntN(3), 2+rng.IntN(4)
		opt := fusion.Options{Method: "joint"}
		if trial%2 == 0 {
			opt.Weighting = "demos"
		}
		switch trial {
		case 3:
			opt.Update, opt.LocalSteps, opt.MaxRounds = "fedavg", 1+rng.IntN(4), 6
		case 4:
			opt.Update, opt.Mu, opt.MaxRounds = "fedprox", 0.1+rng.Float64(), 6
		}
		seed := uint64(100 + trial)
		inproc, _, err := federation.RunInProcess(ctx, newJointFleet(t, seed, k, S, A, d, opt).spec, newJointFleet(t, seed, k, S, A, d, opt).local(),
			federation.InProcessConfig{Fuser: tasks.NewFuser()})
		if err != nil {
			t.Fatal(err)
		}
		remote := newJointFleet(t, seed, k, S, A, d, opt).runGRPC(t, ctx, addr)[0].Rounds
		if len(inproc) != len(remote) {
			t.Fatalf("trial %d: %d rounds in process, %d over gRPC", trial, len(inproc), len(remote))
		}
		for r := range inproc {
			a, b := inproc[r], remote[r].Fused
			if !sameBits(a.Theta, b.Theta) || !sameBits(a.Joint.Trial, b.Joint.Trial) || !sameBits(a.Weights, b.Weights) ||
				!sameBits(a.Joint.Next, b.Joint.Next) || math.Float64bits(a.Joint.Value) != math.Float64bits(b.Joint.Value) {
				t.Fatalf("trial %d round %d: in process θ %v trial %v F %v, gRPC θ %v trial %v F %v", trial, r+1,
					a.Theta, a.Joint.Trial, a.Joint.Value, b.Theta, b.Joint.Trial, b.Joint.Value)
			}
		}
		t.Logf("trial %d: K=%d S=%d A=%d d=%d weighting %q update %q: %d rounds agree", trial, k, S, A, d, opt.Weighting, opt.Update, len(inproc))
	}
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// TestJointRefusals: over gRPC, a joint round refuses, with a status code
// and a message naming the problem, a θ instead of an evaluation, a NaN,
// a gradient or Hessian of the wrong shape, an asymmetric Hessian, an
// evaluation at another θ, a stale or future round, a moved demo count,
// and a joint task spec that cannot run (a deadline, a quorum below the
// clients, explicit rounds other than max_rounds, a warm start).
func TestJointRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, addr := grpcServer(t)
	admin, err := federation.DialGRPC(addr, federation.DialConfig{Token: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	f := newJointFleet(t, 7, 2, 8, 2, 3, fusion.Options{Method: "joint", Weighting: "demos"})
	for _, c := range []struct {
		edit func(*federation.TaskSpec)
		want string
	}{
		{func(s *federation.TaskSpec) { s.DeadlineSeconds = 5 }, "deadline"},
		{func(s *federation.TaskSpec) { s.Quorum = 1 }, "quorum 1 with 2 clients"},
		{func(s *federation.TaskSpec) { s.Rounds = 7 }, "max_rounds"},
		{func(s *federation.TaskSpec) { s.WarmStart = true }, "warm_start"},
	} {
		spec := f.spec
		c.edit(&spec)
		if _, err := admin.CreateTask(ctx, spec, f.ids); federation.CodeOf(err) != federation.CodeInvalidArgument || !strings.Contains(err.Error(), c.want) {
			t.Errorf("spec refused with %v, want InvalidArgument naming %q", err, c.want)
		}
	}
	tokens, err := admin.CreateTask(ctx, f.spec, f.ids)
	if err != nil {
		t.Fatal(err)
	}
	cl := make([]*federation.GRPCClient, 2)
	for i, id := range f.ids {
		if cl[i], err = federation.DialGRPC(addr, federation.DialConfig{Token: tokens[id]}); err != nil {
			t.Fatal(err)
		}
		defer cl[i].Close()
	}
	info, err := cl[0].GetTask(ctx, f.spec.ID, "c0")
	if err != nil || !info.Joint || info.CurrentRound != 1 || len(info.Trial) != 3 || info.Spec.Rounds != jointopt.DefaultMaxRounds {
		t.Fatalf("GetTask: %+v, %v", info, err)
	}
	eval := func(i int, theta []float64) *jointopt.Eval {
		e, _, err := f.learners[i].Evaluate(ctx, info.Spec, theta)
		if err != nil {
			t.Fatal(err)
		}
		return &e
	}
	good := eval(0, info.Trial)
	sub := func(mod func(*federation.Submission)) federation.Submission {
		s := federation.Submission{TaskID: f.spec.ID, Round: 1, ClientID: "c0", Theta: info.Trial, Eval: good, DemoCount: len(f.learners[0].Demos)}
		e := *good
		e.Grad, e.Hess = append([]float64(nil), good.Grad...), append([]float64(nil), good.Hess...)
		s.Eval = &e
		mod(&s)
		return s
	}
	for _, c := range []struct {
		name string
		sub  federation.Submission
		code federation.Code
		want string
	}{
		{"θ instead of an evaluation", sub(func(s *federation.Submission) { s.Eval = nil }), federation.CodeInvalidArgument, "gradient/Hessian rounds"},
		{"NaN gradient", sub(func(s *federation.Submission) { s.Eval.Grad[1] = math.NaN() }), federation.CodeInvalidArgument, "gradient entry 1 is NaN"},
		{"NaN value", sub(func(s *federation.Submission) { s.Eval.Value = math.NaN() }), federation.CodeInvalidArgument, "value is NaN"},
		{"short gradient", sub(func(s *federation.Submission) { s.Eval.Grad = s.Eval.Grad[:2] }), federation.CodeInvalidArgument, "gradient has 2 entries, want 3"},
		{"wrong Hessian", sub(func(s *federation.Submission) { s.Eval.Hess = s.Eval.Hess[:4] }), federation.CodeInvalidArgument, "Hessian has 4 entries, want 3×3 = 9"},
		{"asymmetric Hessian", sub(func(s *federation.Submission) { s.Eval.Hess[1] += 1 }), federation.CodeInvalidArgument, "not symmetric"},
		{"huge Hessian", sub(func(s *federation.Submission) {
			s.Eval.Hess = make([]float64, federation.MaxJointDim*federation.MaxJointDim+1)
		}), federation.CodeResourceExhausted, ""}, // the gRPC message limit binds before MaxJointDim
		{"another θ", sub(func(s *federation.Submission) { s.Theta = []float64{0, 0, 1e-300} }), federation.CodeInvalidArgument, "trial point"},
		{"future round", sub(func(s *federation.Submission) { s.Round = 2 }), federation.CodeFailedPrecondition, "not open yet: the open round is 1"},
	} {
		if _, err := cl[0].Submit(ctx, c.sub); federation.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %v naming %q", c.name, err, c.code, c.want)
		}
	}
	// Round 1 by both clients, then round 2 refuses a stale and a moved count.
	for i, id := range f.ids {
		s := federation.Submission{TaskID: f.spec.ID, Round: 1, ClientID: id, Theta: info.Trial, Eval: eval(i, info.Trial), DemoCount: len(f.learners[i].Demos)}
		if _, err := cl[i].Submit(ctx, s); err != nil {
			t.Fatal(err)
		}
		if i == 0 { // a retry of an accepted evaluation is a duplicate, not a refusal
			if res, err := cl[0].Submit(ctx, s); err != nil || !res.Duplicate {
				t.Fatalf("resubmission: %+v, %v", res, err)
			}
		}
	}
	fs, err := cl[0].GetFused(ctx, f.spec.ID, "c0", 1, 20*time.Second)
	if err != nil || !fs.Ready || fs.Result.Joint == nil || fs.Result.Joint.Done {
		t.Fatalf("round 1: %+v, %v", fs, err)
	}
	next := fs.Result.Joint.Next
	stale := federation.Submission{TaskID: f.spec.ID, Round: 1, ClientID: "c0", Theta: info.Trial, Eval: eval(0, info.Trial), DemoCount: 99}
	if _, err := cl[0].Submit(ctx, stale); federation.CodeOf(err) != federation.CodeAlreadyExists {
		t.Errorf("a different evaluation for the closed round 1: %v, want AlreadyExists", err)
	}
	c1stale := federation.Submission{TaskID: f.spec.ID, Round: 1, ClientID: "c1", Theta: info.Trial, Eval: eval(1, info.Trial), DemoCount: len(f.learners[1].Demos)}
	if res, err := cl[1].Submit(ctx, c1stale); err != nil || !res.Duplicate {
		t.Errorf("c1's round 1 again: %+v, %v (an identical retry is a duplicate)", res, err)
	}
	moved := federation.Submission{TaskID: f.spec.ID, Round: 2, ClientID: "c0", Theta: next, Eval: eval(0, next), DemoCount: len(f.learners[0].Demos) + 1}
	if _, err := cl[0].Submit(ctx, moved); federation.CodeOf(err) != federation.CodeInvalidArgument || !strings.Contains(err.Error(), "weights stay fixed") {
		t.Errorf("moved demo count: %v", err)
	}
	// A client that has not evaluated round 2 cannot jump to round 3.
	skip := federation.Submission{TaskID: f.spec.ID, Round: 3, ClientID: "c1", Theta: next, Eval: eval(1, next), DemoCount: len(f.learners[1].Demos)}
	if _, err := cl[1].Submit(ctx, skip); federation.CodeOf(err) != federation.CodeFailedPrecondition || !strings.Contains(err.Error(), "the open round is 2") {
		t.Errorf("round 3 while 2 is open: %v", err)
	}
	// A one-shot task refuses an evaluation.
	one := f.spec
	one.ID, one.Quorum = "oneshot", 1
	one.Fusion, _ = tasks.EncodeFusion(fusion.Options{Method: "mean"})
	tok1, err := admin.CreateTask(ctx, one, []string{"c0"})
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := federation.DialGRPC(addr, federation.DialConfig{Token: tok1["c0"]})
	defer c1.Close()
	if _, err := c1.Submit(ctx, federation.Submission{TaskID: "oneshot", Round: 1, ClientID: "c0", Theta: []float64{1, 2, 3}, Eval: good}); federation.CodeOf(err) != federation.CodeInvalidArgument || !strings.Contains(err.Error(), "fuses each client's θ once") {
		t.Errorf("an evaluation for a one-shot task: %v", err)
	}
}

// TestJointLocalUpdatesOverGRPC: joint's FedAvg and FedProx rules over the
// real gRPC path. Clients with the same model and demonstrations make
// FedAvg's average their common optimum, which it reaches (against
// irl.Pooled, relative error ≤ 1e-8); with different dynamics FedProx's
// first round is recomputed here from each client's own local solve
// (fusion.LocalUpdate.Solve on its irl.Objective) and its summed gradient
// norm at θ = 0 is the pooled fit's first; and a local-update round
// refuses a Hessian or a missing update, a Newton round an update.
func TestJointLocalUpdatesOverGRPC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	_, addr := grpcServer(t)

	same := newJointFleet(t, 21, 1, 10, 3, 3, fusion.Options{Method: "joint", Update: "fedavg", LocalSteps: 3, MaxRounds: 20})
	l0 := same.learners[0]
	for i := 1; i < 3; i++ {
		same.learners = append(same.learners, &tasks.MaxEntLearner{MDP: l0.MDP, Features: l0.Features, Demos: l0.Demos, Solver: jointSolver})
		same.ids = append(same.ids, fmt.Sprintf("c%d", i))
	}
	same.spec.ID = "fedavg-same"
	want := same.pooled(t)
	fin := same.runGRPC(t, ctx, addr)[0].Final
	if fin.Joint == nil || fin.Joint.Reason != jointopt.StopConverged || relErr(fin.Theta, want.Theta) > 1e-8 {
		t.Errorf("FedAvg of identical clients: %+v, θ %v, pooled %v", fin.Joint, fin.Theta, want.Theta)
	}
	t.Logf("FedAvg, 3 identical clients: %s after %d rounds, relative error %.2g", fin.Joint.Reason, fin.Round, relErr(fin.Theta, want.Theta))

	het := newJointFleet(t, 22, 3, 12, 3, 4, fusion.Options{Method: "joint", Update: "fedprox", Mu: 1, LocalSteps: 2, MaxRounds: 4})
	reps := het.runGRPC(t, ctx, addr)
	r1 := reps[0].Rounds[0].Fused
	icfg, _ := tasks.DecodeIRL(het.spec.IRL)
	icfg.Solver = jointSolver
	lu := fusion.LocalUpdate{Steps: 2, Mu: 1}
	alpha, _ := fusion.Weights(nil, 3)
	avg := make([]float64, 4)
	counts := make([]int, len(het.learners))
	for i, l := range het.learners {
		o, err := irl.NewObjective(l.MDP, l.Features, l.Demos, icfg)
		if err != nil {
			t.Fatal(err)
		}
		term := func(th []float64) (jointopt.Eval, error) {
			o2, _ := irl.NewObjective(l.MDP, l.Features, l.Demos, icfg)
			defer o2.Close()
			return o2.Evaluate(th, 0), nil
		}
		u, _, err := lu.Solve(term, make([]float64, 4), jointopt.DefaultGradTol)
		o.Close()
		if err != nil {
			t.Fatal(err)
		}
		for k := range avg {
			avg[k] += alpha[i] * u[k]
		}
		counts[i] = len(l.Demos)
	}
	if !sameBits(r1.Theta, avg) {
		t.Errorf("FedProx round 1 θ %v, the clients' local solves averaged here %v", r1.Theta, avg)
	}
	pooled := het.pooled(t)
	if math.Abs(r1.Joint.GradNorm-pooled.GradNorms[0]) > 1e-12*pooled.GradNorms[0] {
		t.Errorf("FedProx round 1 ‖∇F(0)‖ = %v, the pooled fit's %v", r1.Joint.GradNorm, pooled.GradNorms[0])
	}
	last := reps[0].Final
	if len(reps[0].Rounds) != 4 || last.Joint.Reason != jointopt.StopRoundCap {
		t.Errorf("FedProx with max_rounds 4: %d rounds, %s", len(reps[0].Rounds), last.Joint.Reason)
	}
	t.Logf("FedProx μ = 1, E = 2, 3 clients with their own dynamics: relative error to pooled after 4 rounds %.3g", relErr(last.Theta, pooled.Theta))

	// Refusals.
	admin, err := federation.DialGRPC(addr, federation.DialConfig{Token: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	spec := het.spec
	spec.ID = "refuse-updates"
	tok, err := admin.CreateTask(ctx, spec, het.ids)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := federation.DialGRPC(addr, federation.DialConfig{Token: tok["c0"]})
	defer c.Close()
	info, err := c.GetTask(ctx, spec.ID, "c0")
	if err != nil || !info.Joint || !info.JointUpdate {
		t.Fatalf("GetTask: %+v, %v", info, err)
	}
	full, _, _ := het.learners[0].Evaluate(ctx, info.Spec, info.Trial)
	gradOnly := jointopt.Eval{Value: full.Value, Grad: full.Grad}
	for _, x := range []struct {
		sub  federation.Submission
		want string
	}{
		{federation.Submission{Eval: &full, Update: []float64{1, 2, 3, 4}}, "takes no Hessian"},
		{federation.Submission{Eval: &gradOnly}, "send the θ after your local steps"},
		{federation.Submission{Eval: &gradOnly, Update: []float64{1, 2}}, "theta has dimension 2"},
	} {
		x.sub.TaskID, x.sub.Round, x.sub.ClientID, x.sub.Theta = spec.ID, 1, "c0", info.Trial
		if _, err := c.Submit(ctx, x.sub); federation.CodeOf(err) != federation.CodeInvalidArgument || !strings.Contains(err.Error(), x.want) {
			t.Errorf("%v, want InvalidArgument naming %q", err, x.want)
		}
	}
	newton := newJointFleet(t, 23, 1, 8, 2, 4, fusion.Options{Method: "joint"})
	newton.spec.ID = "refuse-newton-update"
	tok2, err := admin.CreateTask(ctx, newton.spec, newton.ids)
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := federation.DialGRPC(addr, federation.DialConfig{Token: tok2["c0"]})
	defer c2.Close()
	info2, _ := c2.GetTask(ctx, newton.spec.ID, "c0")
	e2, _, _ := newton.learners[0].Evaluate(ctx, info2.Spec, info2.Trial)
	if _, err := c2.Submit(ctx, federation.Submission{TaskID: newton.spec.ID, Round: 1, ClientID: "c0", Theta: info2.Trial, Eval: &e2, Update: []float64{1, 2, 3, 4}}); federation.CodeOf(err) != federation.CodeInvalidArgument || !strings.Contains(err.Error(), "no local update") {
		t.Errorf("an update in a Newton round: %v", err)
	}
}

// TestJointPrivateLocalUpdatesInProcess: under local DP a FedAvg round
// releases value, gradient and update as one clipped, noised vector of
// 1 + 2d numbers, recorded in the client's ledger before it is sent and
// stored by the server exactly; the ledger's total over the task's rounds
// is the accountant's ε for the declared σ (the declared ε).
func TestJointPrivateLocalUpdatesInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := newJointFleet(t, 31, 2, 10, 3, 3, fusion.Options{Method: "joint", Update: "fedavg", LocalSteps: 2, MaxRounds: 3})
	f.spec.Privacy = &privacy.Requirement{MaxEpsilon: 2, MaxDelta: 1e-5, Clip: 3}
	dir := t.TempDir()
	ledgers := make([]*privacy.Ledger, 2)
	for i := range ledgers {
		var err error
		if ledgers[i], err = privacy.OpenLedger(filepath.Join(dir, fmt.Sprintf("l%d.db", i))); err != nil {
			t.Fatal(err)
		}
	}
	store := filepath.Join(dir, "fed.db")
	fused, _, err := federation.RunInProcess(ctx, f.spec, f.local(), federation.InProcessConfig{Fuser: tasks.NewFuser(), StorePath: store,
		Privacy: func(i int) *federation.ClientPrivacy {
			return &federation.ClientPrivacy{Params: privacy.Params{Epsilon: 1, Delta: 1e-5}, Noise: rand.New(rand.NewPCG(uint64(i), 7)), Ledger: ledgers[i]}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(fused) != 3 || fused[2].Joint.Reason != jointopt.StopRoundCap {
		t.Fatalf("%d rounds, last %+v", len(fused), fused[len(fused)-1].Joint)
	}
	s, err := federation.OpenStore(store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for r := 1; r <= 3; r++ {
		subs, err := s.Submissions(f.spec.ID, r)
		if err != nil {
			t.Fatal(err)
		}
		for i, sub := range subs {
			rel, err := ledgers[i].Released(f.spec.ID, sub.ClientID, r)
			if err != nil || rel == nil {
				t.Fatalf("round %d %s: no release (%v)", r, sub.ClientID, err)
			}
			got := append(federation.PackEval(*sub.Eval), sub.Update...)
			if len(rel.Joint) != 1+2*3 || !sameBits(rel.Joint, got) || sub.DemoCount != 0 || len(sub.Eval.Hess) != 0 {
				t.Errorf("round %d %s: released %v, stored %v (demo count %d)", r, sub.ClientID, rel.Joint, got, sub.DemoCount)
			}
		}
	}
	for i, l := range ledgers {
		sum, err := l.Summary(0)
		if err != nil {
			t.Fatal(err)
		}
		d := sum.Tasks[0].Declaration
		want, _ := privacy.Epsilon(d.Delta, privacy.ComposedSigma([]float64{d.Sigma}, []int{3}))
		if sum.Tasks[0].Releases != 3 || sum.Epsilon != want || math.Abs(want-1) > 1e-9 {
			t.Errorf("client %d: %d releases, ε %v; the accountant's %v (declared 1)", i, sum.Tasks[0].Releases, sum.Epsilon, want)
		}
	}
}
