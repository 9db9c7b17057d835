package tasks

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/npy"
	"github.com/fedirl/fedirl/pkg/ot"
)

// gridLatticeProbe describes the grid world of spec as a lattice-family
// probe: its lattice as data (two uniform axes of spacing 1, the action as a
// categorical axis) and its Φ as .npy bytes, built by the gridworld
// family's own feature code.
func gridLatticeProbe(t testing.TB, spec gridworld.Spec) LatticeProbe {
	t.Helper()
	phi, err := GridFeatures(spec)
	if err != nil {
		t.Fatal(err)
	}
	r, d := phi.Dims()
	n := spec.Size
	return LatticeProbe{
		State:  []LatticeAxis{{Name: "row", N: n, Lo: 0, Hi: float64(n - 1)}, {Name: "col", N: n, Lo: 0, Hi: float64(n - 1)}},
		Action: []LatticeAxis{{Name: "move", N: gridworld.NumActions, Categorical: true}},
		PhiNPY: npy.EncodeFloat64([]int{r, d}, phi.RawMatrix().Data),
	}
}

func latticeSpec(t *testing.T, id string, p LatticeProbe, dim int, opt fusion.Options) federation.TaskSpec {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	spec := federation.TaskSpec{ID: id, EnvFamily: LatticeFamilyName, Probe: raw, ThetaDim: dim, Quorum: 3}
	if spec.Fusion, err = EncodeFusion(opt); err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestLatticeFamilyFusesLikeGridWorld: a lattice-family task built from the
// grid world's lattice and Φ fuses to exactly the same θ as the gridworld
// family's task, by the mean and by every barycenter solver.
func TestLatticeFamilyFusesLikeGridWorld(t *testing.T) {
	ctx := context.Background()
	gw, err := gridworld.DefaultFamily(5).Probe(3)
	if err != nil {
		t.Fatal(err)
	}
	thetas := [][]float64{{-0.9, 0.2}, {-0.4, 0.5}, {-0.7, -0.1}}
	counts := []int{10, 20, 5}
	for _, opt := range []fusion.Options{
		{Method: fusion.MethodMean},
		{Method: fusion.MethodMean, Weighting: fusion.WeightingDemos},
		{Method: fusion.MethodBarycentric},
		{Method: fusion.MethodBarycentric, Solver: ot.Debiased, Weighting: fusion.WeightingDemos},
		{Method: fusion.MethodBarycentric, Solver: ot.Stabilized},
	} {
		want, err := NewFuser().Fuse(ctx, gridSpec(t, "grid", opt), thetas, counts)
		if err != nil {
			t.Fatal(err)
		}
		// Both encodings of Φ: .npy bytes and inline rows.
		lp := gridLatticeProbe(t, gw)
		inline := lp
		phi, _ := GridFeatures(gw)
		r, _ := phi.Dims()
		inline.PhiNPY = nil
		for i := range r {
			inline.Phi = append(inline.Phi, mat.Row(nil, i, phi))
		}
		for name, p := range map[string]LatticeProbe{"phi_npy": lp, "phi": inline} {
			got, err := NewFuser().Fuse(ctx, latticeSpec(t, "lat", p, 2, opt), thetas, counts)
			if err != nil {
				t.Fatalf("%s %+v: %v", name, opt, err)
			}
			approx.Slices(t, name+" "+opt.MethodName()+" fused θ (lattice vs gridworld family)", got.Theta, want.Theta, 0, 0)
			if got.MarginalError != want.MarginalError || got.Iterations != want.Iterations {
				t.Fatalf("%s: marginal error %v / %d iterations, gridworld %v / %d", name, got.MarginalError, got.Iterations, want.MarginalError, want.Iterations)
			}
		}
	}
	// The probes themselves agree: same Φ and the same cost on every pair of points.
	a, _ := GridProbe(gw)
	b, err := gridLatticeProbe(t, gw).Build()
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(a.Phi, b.Phi) {
		t.Fatal("lattice-family Φ differs from the gridworld family's")
	}
	for i := 0; i < a.Lattice.Len(); i += 7 {
		for j := range a.Lattice.Len() {
			if ca, cb := a.Lattice.Cost(i, j), b.Lattice.Cost(i, j); ca != cb {
				t.Fatalf("cost(%d, %d): gridworld %v, lattice %v", i, j, ca, cb)
			}
		}
	}
}

// TestLatticeRBFMatchesControlFamily: an RBF lattice task on Pendulum's
// lattice (periodic, uniform and action axes) has the control family's Φ
// and its fusion cost (1/spacing² weights) exactly.
func TestLatticeRBFMatchesControlFamily(t *testing.T) {
	cp := controlProbe(t, "Pendulum-v1", "paper")
	want, err := cp.Build()
	if err != nil {
		t.Fatal(err)
	}
	var lp LatticeProbe
	for _, a := range cp.Grid.State {
		lp.State = append(lp.State, LatticeAxis{Name: a.Name, N: a.N, Lo: a.Lo, Hi: a.Hi, Periodic: a.Periodic})
	}
	for _, a := range cp.Grid.Action {
		lp.Action = append(lp.Action, LatticeAxis{Name: a.Name, N: a.N, Lo: a.Lo, Hi: a.Hi})
	}
	rbf := cp.RBF
	lp.RBF = &rbf
	got, err := lp.Build()
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(got.Phi, want.Phi) {
		t.Fatal("RBF Φ differs from the control family's")
	}
	n := got.Lattice.Len()
	for _, ij := range [][2]int{{0, 1}, {0, n - 1}, {5, 5 * 17}, {n / 2, n/3 + 2}} {
		if a, b := got.Lattice.Cost(ij[0], ij[1]), want.Lattice.Cost(ij[0], ij[1]); math.Abs(a-b) > 1e-12*math.Max(1, b) {
			t.Fatalf("cost%v = %v, control family %v", ij, a, b)
		}
	}
}

// TestLatticeProbeValidation: every malformed probe is refused at task
// creation with an error naming the field.
func TestLatticeProbeValidation(t *testing.T) {
	gw, _ := gridworld.DefaultFamily(5).Probe(3)
	good := gridLatticeProbe(t, gw)
	f := NewFuser()
	if err := f.Validate(latticeSpec(t, "ok", good, 2, fusion.Options{Method: fusion.MethodBarycentric})); err != nil {
		t.Fatalf("valid lattice task refused: %v", err)
	}
	phi, _ := GridFeatures(gw)
	nanPhi := mat.DenseCopyOf(phi)
	nanPhi.Set(37, 1, math.NaN())
	for _, tc := range []struct {
		name, want string
		mutate     func(*LatticeProbe)
		dim        int
	}{
		{"no state axes", "state: no axes", func(p *LatticeProbe) { p.State = nil }, 2},
		{"lo ≥ hi", "state[1] (col): need finite lo < hi", func(p *LatticeProbe) { p.State[1].Hi = -1 }, 2},
		{"zero points", "action[0] (move): n = 0 points, want 1..MaxLatticePairs", func(p *LatticeProbe) { p.Action[0].N = 0 }, 2},
		{"coords not increasing", "state[0]: coords[2] = 1 does not increase", func(p *LatticeProbe) {
			p.State[0] = LatticeAxis{Coords: []float64{0, 1, 1, 3, 4}}
		}, 2},
		{"coords with n", "explicit axis (coords) takes no n", func(p *LatticeProbe) { p.State[0].Coords = []float64{0, 1, 2, 3, 4} }, 2},
		{"negative weight", "weight -1 must be a positive finite number", func(p *LatticeProbe) { w := -1.0; p.State[0].Weight = &w }, 2},
		{"zero weight", "weight 0 must be a positive finite number (omit it for the default)", func(p *LatticeProbe) { w := 0.0; p.State[0].Weight = &w }, 2},
		{"rows ≠ pairs", "phi_npy has 100 rows, the lattice 125", func(p *LatticeProbe) { p.Action[0].N = 5 }, 2},
		{"non-finite Φ", "Φ[37][1] (state 9, action 1, feature 1) is NaN", func(p *LatticeProbe) {
			p.PhiNPY = npy.EncodeFloat64([]int{100, 2}, nanPhi.RawMatrix().Data)
		}, 2},
		{"Φ not a matrix", "want float64 (pairs, features)", func(p *LatticeProbe) { p.PhiNPY = npy.EncodeFloat64([]int{200}, phi.RawMatrix().Data) }, 2},
		{"garbage npy", "phi_npy: not a .npy array", func(p *LatticeProbe) { p.PhiNPY = []byte("hello, world") }, 2},
		{"two sources", "exactly one of rbf, phi, phi_npy and phi_file (got 2)", func(p *LatticeProbe) { p.Phi = [][]float64{{1}} }, 2},
		{"no source", "exactly one of rbf, phi, phi_npy and phi_file (got 0)", func(p *LatticeProbe) { p.PhiNPY = nil }, 2},
		{"file reference", "phi_file \"phi.npy\": a task must carry Φ itself", func(p *LatticeProbe) { p.PhiNPY, p.PhiFile = nil, "phi.npy" }, 2},
		{"ragged inline", "phi[3] has 1 entries, phi[0] 2", func(p *LatticeProbe) {
			p.PhiNPY = nil
			for range 100 {
				p.Phi = append(p.Phi, []float64{1, 2})
			}
			p.Phi[3] = []float64{1}
		}, 2},
		{"rbf axes", "rbf has 2 axes, the lattice 2 state and 1 action axes", func(p *LatticeProbe) {
			p.PhiNPY = nil
			p.RBF = &features.RBFSpec{Axes: []features.RBFAxis{{Centres: []float64{1}, Bandwidth: 1}, {Centres: []float64{1}, Bandwidth: 1}}}
		}, 2},
		{"rbf invalid", "rbf: invalid RBF spec: axes[2]: bandwidth 0", func(p *LatticeProbe) {
			p.PhiNPY = nil
			p.RBF = &features.RBFSpec{Axes: []features.RBFAxis{{Centres: []float64{1}, Bandwidth: 1}, {Centres: []float64{1}, Bandwidth: 1}, {Centres: []float64{0}}}}
		}, 2},
		{"too many pairs", "more than MaxLatticePairs", func(p *LatticeProbe) { p.State[0].N, p.State[1].N = 2048, 2048 }, 2},
		{"Φ too large", "more than MaxPhiEntries", func(p *LatticeProbe) {
			p.PhiNPY = nil
			p.State[0].N, p.State[1].N = 1024, 256
			p.RBF = &features.RBFSpec{Axes: []features.RBFAxis{features.UniformRBFAxis("r", 8, 0, 1, 0),
				features.UniformRBFAxis("c", 8, 0, 1, 0), {Centres: []float64{0}, Categorical: true}}}
		}, 64},
		{"theta_dim", "theta_dim 3: family lattice's features have 2 columns", func(p *LatticeProbe) {}, 3},
	} {
		p := good
		p.State = append([]LatticeAxis(nil), good.State...)
		p.Action = append([]LatticeAxis(nil), good.Action...)
		tc.mutate(&p)
		err := f.Validate(latticeSpec(t, "bad", p, tc.dim, fusion.Options{}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	spec := latticeSpec(t, "unknown", good, 2, fusion.Options{})
	spec.Probe = json.RawMessage(`{"state":[{"n":2,"lo":0,"hi":1}],"action":[{"n":2,"categorical":true}],"phi":[[1],[1],[1],[1]],"gamma":0.9}`)
	if err := f.Validate(spec); err == nil || !strings.Contains(err.Error(), `unknown field "gamma"`) {
		t.Errorf("unknown key: err = %v", err)
	}
}

// TestResolvePhiFile: a phi_file next to the spec is inlined as phi_npy
// and gives the same probe; a missing or malformed file is named.
func TestResolvePhiFile(t *testing.T) {
	gw, _ := gridworld.DefaultFamily(5).Probe(3)
	p := gridLatticeProbe(t, gw)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "phi.npy"), p.PhiNPY, 0o644); err != nil {
		t.Fatal(err)
	}
	ref := p
	ref.PhiNPY, ref.PhiFile = nil, "phi.npy"
	spec := latticeSpec(t, "file", ref, 2, fusion.Options{})
	if err := ResolveProbeFiles(&spec, dir); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(spec.Probe), "phi_file") {
		t.Fatalf("phi_file left in the stored probe: %.200s", spec.Probe)
	}
	got, _, err := ProbeOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := p.Build()
	if !mat.Equal(got.Phi, want.Phi) {
		t.Fatal("resolved Φ differs from the file's")
	}
	os.WriteFile(filepath.Join(dir, "bad.npy"), []byte("\x93NUMPY\x01\x00\x10\x00{'descr': '<i8'}"), 0o644)
	for file, msg := range map[string]string{"missing.npy": "no such file", "bad.npy": "bad.npy: malformed .npy header"} {
		ref.PhiFile = file
		s := latticeSpec(t, "file", ref, 2, fusion.Options{})
		if err := ResolveProbeFiles(&s, dir); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: err = %v, want %q", file, err, msg)
		}
	}
}

// gridClient returns a grid-world client's MDP and features with one extra
// terminal state appended (as a lattice client may have), the features
// taken from the task's Φ.
func gridClient(t *testing.T, gw gridworld.Spec, extra bool) (*mdp.MDP, *mat.Dense) {
	t.Helper()
	phi, _ := GridFeatures(gw)
	S, A := gw.Size*gw.Size, gridworld.NumActions
	nS := S
	if extra {
		nS++
	}
	b := mdp.NewBuilder(nS, A)
	b.Gamma = 0.9
	b.Terminal = make([]bool, nS)
	if extra {
		b.Terminal[S] = true
	}
	for s := range S {
		for a := range A {
			b.AddTransition(s, a, (s+a+1)%nS, 1)
		}
	}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	cphi := mat.NewDense(nS*A, 2, nil)
	cphi.Slice(0, S*A, 0, 2).(*mat.Dense).Copy(phi)
	return m, cphi
}

// TestClientFeaturesCheck: matching features pass (within PhiTolerance) and
// the learner gets the task's Φ; any disagreement names the first mismatch.
func TestClientFeaturesCheck(t *testing.T) {
	gw, _ := gridworld.DefaultFamily(5).Probe(3)
	raw, _ := json.Marshal(gridLatticeProbe(t, gw))
	var fam LatticeFamily
	m, phi := gridClient(t, gw, true)
	phi.Set(41, 0, phi.At(41, 0)*(1+1e-12)) // a last-bits difference is tolerated
	got, err := fam.ClientFeatures(raw, m, phi)
	if err != nil {
		t.Fatalf("matching client refused: %v", err)
	}
	task, _ := GridFeatures(gw)
	if !mat.Equal(got.Slice(0, 100, 0, 2), task) || mat.Norm(got.Slice(100, 104, 0, 2), 1) != 0 {
		t.Fatal("learning Φ is not the task's Φ with zero terminal rows")
	}
	for _, tc := range []struct {
		name, want string
		mutate     func(*mdp.MDP, *mat.Dense) (*mdp.MDP, *mat.Dense)
	}{
		{"entry", "client features[57][1] = 0.123456 (state 14, action 1, feature 1), the task's Φ has", func(m *mdp.MDP, p *mat.Dense) (*mdp.MDP, *mat.Dense) {
			p.Set(57, 1, 0.123456)
			p.Set(90, 0, 0.5)
			return m, p
		}},
		{"columns", "client features: 3 columns, the task's Φ has 2", func(m *mdp.MDP, p *mat.Dense) (*mdp.MDP, *mat.Dense) {
			r, _ := p.Dims()
			return m, mat.NewDense(r, 3, nil)
		}},
		{"terminal row", "extra terminal state 25 must have zero features", func(m *mdp.MDP, p *mat.Dense) (*mdp.MDP, *mat.Dense) {
			p.Set(101, 0, 1)
			return m, p
		}},
		{"extra state not terminal", "state 25 lies beyond the task's 25 lattice states and is not terminal", func(m *mdp.MDP, p *mat.Dense) (*mdp.MDP, *mat.Dense) {
			m.Terminal[25] = false
			return m, p
		}},
		{"actions", "client MDP: actions = 2, the task's lattice has 4 action points", func(m *mdp.MDP, p *mat.Dense) (*mdp.MDP, *mat.Dense) {
			m.NumActions = 2
			return m, p
		}},
	} {
		m, phi := gridClient(t, gw, true)
		m, phi = tc.mutate(m, phi)
		if _, err := fam.ClientFeatures(raw, m, phi); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	// The learner refuses before learning, naming the task.
	m, phi = gridClient(t, gw, false)
	phi.Set(0, 0, 7)
	l := &MaxEntLearner{MDP: m, Features: phi, Demos: []irl.Trajectory{{States: []int{0, 1}, Actions: []int{0}}}}
	spec := latticeSpec(t, "lat", gridLatticeProbe(t, gw), 2, fusion.Options{})
	if _, err := l.Learn(context.Background(), spec, nil); err == nil || !strings.Contains(err.Error(), "task lat: client features[0][0] = 7") {
		t.Fatalf("Learn: err = %v", err)
	}
}

// TestCreateLatticeTaskOverRPC: the CreateTask RPC creates a lattice task
// (and refuses a malformed one, storing nothing), and submissions over gRPC
// are fused barycentrically to the same θ as the gridworld family's fuser.
func TestCreateLatticeTaskOverRPC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := federation.OpenStore(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	coord, err := federation.NewCoordinator(store, federation.CoordinatorConfig{Fuser: NewFuser(), AdminToken: "admin-secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := federation.NewGRPCServer(coord, federation.GRPCServerConfig{})
	go srv.Serve(lis)
	defer srv.Stop()
	admin, err := federation.DialGRPC(lis.Addr().String(), federation.DialConfig{Token: "admin-secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	gw, _ := gridworld.DefaultFamily(5).Probe(3)
	opt := fusion.Options{Method: fusion.MethodBarycentric}
	bad := gridLatticeProbe(t, gw)
	bad.Action = []LatticeAxis{{N: 3, Categorical: true}}
	badSpec := latticeSpec(t, "bad", bad, 2, opt)
	badSpec.Quorum = 2
	if _, err := admin.CreateTask(ctx, badSpec, []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "phi_npy has 100 rows, the lattice 75") {
		t.Fatalf("malformed lattice task: err = %v", err)
	}
	spec := latticeSpec(t, "lat", gridLatticeProbe(t, gw), 2, opt)
	spec.Quorum = 2
	tokens, err := admin.CreateTask(ctx, spec, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if sts, _ := coord.Status(ctx, federation.Credentials{Token: "admin-secret"}); len(sts) != 1 {
		t.Fatalf("%d tasks stored, want only the valid one", len(sts))
	}
	thetas := [][]float64{{-0.9, 0.2}, {-0.4, 0.5}}
	var fused federation.FusedStatus
	for i, id := range []string{"a", "b"} {
		c, err := federation.DialGRPC(lis.Addr().String(), federation.DialConfig{Token: tokens[id]})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Submit(ctx, federation.Submission{TaskID: "lat", Round: 1, ClientID: id, Theta: thetas[i], DemoCount: 1}); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if fused, err = c.GetFused(ctx, "lat", id, 1, 20*time.Second); err != nil || !fused.Ready {
				t.Fatalf("GetFused: %+v, %v", fused, err)
			}
		}
	}
	want, err := NewFuser().Fuse(ctx, gridSpec(t, "grid", opt), thetas, []int{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "fused θ over gRPC (lattice task vs gridworld fuser)", fused.Result.Theta, want.Theta, 0, 0)
}

// FuzzLatticeProbe: no probe JSON makes the family panic; a probe it
// accepts has one Φ row per lattice point, all finite.
func FuzzLatticeProbe(f *testing.F) {
	gw, _ := gridworld.DefaultFamily(5).Probe(3)
	p := gridLatticeProbe(f, gw)
	good, _ := json.Marshal(p)
	f.Add(good)
	f.Add([]byte(`{"state":[{"n":3,"lo":0,"hi":1,"periodic":true},{"coords":[0,2]}],"action":[{"n":2,"categorical":true}],
		"rbf":{"axes":[{"centres":[0.5],"bandwidth":1,"period":1},{"centres":[0,1],"bandwidth":1},{"centres":[0,1],"categorical":true}],"bias":true}}`))
	f.Add([]byte(`{"state":[{"n":2,"lo":-1e308,"hi":1e308,"periodic":true}],"action":[{"n":1,"categorical":true}],"phi":[[1],[2]]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		pr, err := LatticeFamily{}.Probe(raw)
		if err != nil {
			return
		}
		if err := pr.Validate(); err != nil {
			t.Fatalf("accepted probe is invalid: %v", err)
		}
		for _, v := range pr.Phi.RawMatrix().Data {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatal("accepted a non-finite Φ")
			}
		}
	})
}
