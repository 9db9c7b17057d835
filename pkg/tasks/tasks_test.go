package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/ot"
)

func gridSpec(t *testing.T, id string, opt fusion.Options) federation.TaskSpec {
	t.Helper()
	probe, err := gridworld.DefaultFamily(5).Probe(3)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(probe)
	spec := federation.TaskSpec{ID: id, EnvFamily: "gridworld", Probe: raw, ThetaDim: 2, Quorum: 2}
	if spec.Fusion, err = EncodeFusion(opt); err != nil {
		t.Fatal(err)
	}
	if spec.IRL, err = EncodeIRL(irl.Config{MaxIter: 5}); err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestGridProbeLayout(t *testing.T) {
	spec, _ := gridworld.DefaultFamily(5).Probe(3)
	p, err := GridProbe(spec)
	if err != nil {
		t.Fatal(err)
	}
	n, d := p.Phi.Dims()
	if n != 100 || d != 2 || p.Lattice.Len() != 100 {
		t.Fatalf("probe Φ %d×%d, lattice %d; want 100×2 and 100", n, d, p.Lattice.Len())
	}
	idx := make([]int, 3)
	for x := range n {
		p.Lattice.Index(idx, x)
		if s, a := x/4, x%4; idx[0] != s/5 || idx[1] != s%5 || idx[2] != a {
			t.Fatalf("lattice point %d = %v, want (row %d, col %d, action %d)", x, idx, s/5, s%5, a)
		}
	}
	if c := p.Lattice.Cost(0, 4*6+1); c != 3 { // (0,0,a0) → (1,1,a1): 1 + 1 + 1
		t.Fatalf("cost = %v, want 3", c)
	}
	if _, err := p.Fuse([][]float64{{1, 2, 3}}, nil, fusion.Options{}); err == nil {
		t.Fatal("θ of the wrong length accepted")
	}
}

// TestFuserWeightsAndMethods checks the server fuser against hand-computed
// means (uniform and demonstration-weighted) and against fusion.Barycentric
// called directly on the same probe.
func TestFuserWeightsAndMethods(t *testing.T) {
	ctx := context.Background()
	f := NewFuser()
	thetas := [][]float64{{1, -2}, {2, 4}}
	four := 4.0
	for _, tc := range []struct {
		weighting string
		cap       *float64
		want      []float64
		alpha     []float64
	}{
		{fusion.WeightingUniform, nil, []float64{1.5, 1}, []float64{0.5, 0.5}},
		{fusion.WeightingDemos, &four, []float64{1.75, 2.5}, []float64{0.25, 0.75}},
		// The default cap, the lower median count: 30 weighs as 10.
		{fusion.WeightingDemos, nil, []float64{1.5, 1}, []float64{0.5, 0.5}},
	} {
		spec := gridSpec(t, "m-"+tc.weighting, fusion.Options{Method: fusion.MethodMean, Weighting: tc.weighting, DemoCap: tc.cap})
		out, err := f.Fuse(ctx, spec, thetas, []int{10, 30})
		if err != nil {
			t.Fatal(err)
		}
		for k := range tc.want {
			if math.Abs(out.Theta[k]-tc.want[k]) > 1e-15*4 || math.Abs(out.Weights[k]-tc.alpha[k]) > 1e-15 {
				t.Fatalf("%s: θ %v α %v, want %v %v", tc.weighting, out.Theta, out.Weights, tc.want, tc.alpha)
			}
		}
	}
	opt := fusion.Options{Method: fusion.MethodBarycentric, Solver: ot.Debiased, Z: 3}
	spec := gridSpec(t, "b", opt)
	var seen fusion.Output
	f.OnFuse = func(id string, o fusion.Output) { seen = o }
	out, err := f.Fuse(ctx, spec, [][]float64{{-0.3, 0.1}, {-0.2, 0.3}}, []int{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	p, _, _ := ProbeOf(spec)
	want, err := fusion.Barycentric(p.Phi, p.Lattice, [][]float64{{-0.3, 0.1}, {-0.2, 0.3}}, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	for k := range want.Theta {
		if out.Theta[k] != want.Theta[k] {
			t.Fatalf("fused θ %v, direct barycentric %v", out.Theta, want.Theta)
		}
	}
	if seen.Barycentric == nil || seen.Barycentric.Z != 3 || out.Method != fusion.MethodBarycenter {
		t.Fatalf("OnFuse saw %+v, method %q; want the barycentric result with Z = 3", seen, out.Method)
	}
}

// TestValidateRefusesUnfusableTasks: what the server could never fuse is
// refused at creation, naming the field.
func TestValidateRefusesUnfusableTasks(t *testing.T) {
	f := NewFuser()
	good := gridSpec(t, "ok", fusion.Options{Method: fusion.MethodBarycentric})
	if err := f.Validate(good); err != nil {
		t.Fatalf("valid spec refused: %v", err)
	}
	for _, tc := range []struct {
		name, field string
		mutate      func(*federation.TaskSpec)
	}{
		{"unknown family", "env_family", func(s *federation.TaskSpec) { s.EnvFamily = "nonexistent" }},
		{"unknown method", "fusion", func(s *federation.TaskSpec) { s.Fusion = json.RawMessage(`{"method":"fedavg"}`) }},
		{"unknown solver", "fusion", func(s *federation.TaskSpec) { s.Fusion = json.RawMessage(`{"solver":"sinkhorn"}`) }},
		{"unknown fusion key", "fusion", func(s *federation.TaskSpec) { s.Fusion = json.RawMessage(`{"eps":1}`) }},
		{"wrong theta dim", "theta_dim", func(s *federation.TaskSpec) { s.ThetaDim = 3 }},
		{"bad probe", "probe", func(s *federation.TaskSpec) { s.Probe = json.RawMessage(`{"size":-1}`) }},
		{"bad irl", "irl", func(s *federation.TaskSpec) { s.IRL = json.RawMessage(`{"optimizer":"sgd"}`) }},
		{"irl theta0", "theta0", func(s *federation.TaskSpec) { s.IRL = json.RawMessage(`{"theta0":[1,2]}`) }},
	} {
		s := good
		tc.mutate(&s)
		err := f.Validate(s)
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: err = %v, want an error naming %q", tc.name, err, tc.field)
		}
	}
}

// TestCoordinatorRefusesUnfusableTask: the refusal reaches task creation and
// nothing is stored.
func TestCoordinatorRefusesUnfusableTask(t *testing.T) {
	store, err := federation.OpenStore(t.TempDir() + "/s.db")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	coord, err := federation.NewCoordinator(store, federation.CoordinatorConfig{Fuser: NewFuser()})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	spec := gridSpec(t, "bad", fusion.Options{Method: fusion.MethodBarycentric})
	spec.EnvFamily = "nonexistent"
	if _, err := coord.CreateTask(spec, []string{"a", "b"}); err == nil || federation.CodeOf(err) != federation.CodeInvalidArgument ||
		!strings.Contains(err.Error(), "env_family") {
		t.Fatalf("CreateTask: %v", err)
	}
	if sts, _ := store.Statuses(); len(sts) != 0 {
		t.Fatalf("refused task stored: %+v", sts)
	}
}

// TestFuserRunsEveryRegisteredMethod: a task spec may name any method of
// fusion's registry (and the alias "barycentric"); the server's fuser gives
// the θ of fusion.Fuse on the task's probe, bit for bit, and reports the
// registry name.
func TestFuserRunsEveryRegisteredMethod(t *testing.T) {
	f := NewFuser()
	thetas := [][]float64{{-0.3, 0.1}, {-0.2, 0.3}, {-0.25, 0.2}, {-0.1, 0.25}, {5, -7}}
	for _, name := range append(fusion.Methods(), fusion.MethodBarycentric) {
		opt := fusion.Options{Method: name, Weighting: fusion.WeightingDemos}
		spec := gridSpec(t, "m-"+name, opt)
		if err := f.Validate(spec); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, err := f.Fuse(context.Background(), spec, thetas, []int{1, 2, 1, 3, 1})
		if fusion.IsRoundMethod(name) {
			// Gradient/Hessian rounds (joint_test.go): no one-shot fusion.
			if !errors.Is(err, fusion.ErrRoundMethod) {
				t.Errorf("%s: one-shot Fuse gave %v, want ErrRoundMethod", name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, _, err := ProbeOf(spec)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fusion.Fuse(p, thetas, opt.ClientWeights([]int{1, 2, 1, 3, 1}), opt)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out.Theta, want.Theta) || out.Method != want.Method {
			t.Errorf("%s: fuser θ %v (%s), fusion.Fuse %v (%s)", name, out.Theta, out.Method, want.Theta, want.Method)
		}
	}
}

// TestFuserBoundsDemoWeightsAndScoresOutliers: under demos weighting, three
// clients that report no demonstrations (private) and one that reports 1 are
// weighted uniformly, not 0, 0, 0, 1; and every fused result carries each
// client's outlier score, fusion.OutlierScores of its reward Φθ_i on the
// probe (Φθ_i computed here from Φ's entries), the same for every method
// (the score does not depend on the fused result), above
// fusion.OutlierThreshold only for the client sending 1000·θ, with the
// threshold for the federation's warning.
func TestFuserBoundsDemoWeightsAndScoresOutliers(t *testing.T) {
	f := NewFuser()
	thetas := [][]float64{{-0.3, 0.1}, {-0.2, 0.3}, {-0.25, 0.2}, {-300, 100}}
	for _, method := range []string{fusion.MethodMean, fusion.MethodMedian, fusion.MethodNormalizedMean} {
		spec := gridSpec(t, "d-"+method, fusion.Options{Method: method, Weighting: fusion.WeightingDemos})
		out, err := f.Fuse(context.Background(), spec, thetas, []int{0, 0, 0, 1})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out.Weights, []float64{0.25, 0.25, 0.25, 0.25}) {
			t.Errorf("%s: demo counts 0, 0, 0, 1 give weights %v, want uniform", method, out.Weights)
		}
		p, _, err := ProbeOf(spec)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := p.Phi.Dims()
		if len(out.OutlierScores) != len(thetas) {
			t.Fatalf("%s: %d outlier scores", method, len(out.OutlierScores))
		}
		rs := make([][]float64, len(thetas))
		for i, th := range thetas {
			rs[i] = make([]float64, n)
			for x := range n {
				rs[i][x] = p.Phi.At(x, 0)*th[0] + p.Phi.At(x, 1)*th[1]
			}
		}
		want := fusion.OutlierScores(rs)
		for i := range thetas {
			if math.Abs(out.OutlierScores[i]-want[i]) > 1e-9*(1+want[i]) {
				t.Errorf("%s: client %d outlier score %v, want %v", method, i, out.OutlierScores[i], want[i])
			}
		}
		if got := fusion.Flagged(out.OutlierScores); !slices.Equal(got, []int{3}) || out.OutlierThreshold != fusion.OutlierThreshold {
			t.Errorf("%s: outlier scores %v flag %v (threshold %v), want only the client sending 1000·θ", method, out.OutlierScores, got, out.OutlierThreshold)
		}
		if slices.Index(out.OutlierScores, slices.Max(out.OutlierScores)) != 3 {
			t.Errorf("%s: outlier scores %v do not single out the client sending 1000·θ", method, out.OutlierScores)
		}
	}
}
