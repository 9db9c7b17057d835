package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/npy"
	"github.com/fedirl/fedirl/pkg/ot"
)

// pointsSpec is a points-family task spec with probe JSON raw.
func pointsSpec(id string, raw []byte, dim, quorum int, method string) federation.TaskSpec {
	return federation.TaskSpec{ID: id, EnvFamily: PointsFamilyName, Probe: raw, ThetaDim: dim, Quorum: quorum,
		Fusion: json.RawMessage(`{"method": "` + method + `"}`)}
}

// randomPoints returns n points of dimension d and an n × f Φ, from seed.
func randomPoints(seed uint64, n, d, f int) ([][]float64, [][]float64) {
	rng := rand.New(rand.NewPCG(seed, 51))
	pts, phi := make([][]float64, n), make([][]float64, n)
	for i := range pts {
		pts[i], phi[i] = make([]float64, d), make([]float64, f)
		for k := range pts[i] {
			pts[i][k] = rng.NormFloat64()
		}
		for k := range phi[i] {
			phi[i][k] = rng.Float64()
		}
	}
	return pts, phi
}

// TestPointProbeValidation: a points task's probe with NaN or infinite
// values (also NaN as Python's json.dump writes it), points of the wrong
// dimension, more points or coordinates than the bounds, bad cost weights
// or a Φ that does not fit the points is refused when the task is checked,
// with an error naming the field, the point and the coordinate.
func TestPointProbeValidation(t *testing.T) {
	pts, phi := randomPoints(1, 6, 5, 2)
	enc := func(p PointProbe) string {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	good := PointProbe{Points: pts, Phi: phi}
	if _, _, err := ProbeOf(pointsSpec("ok", []byte(enc(good)), 2, 1, "barycenter")); err != nil {
		t.Fatalf("a good probe: %v", err)
	}
	with := func(edit func(p *PointProbe)) string {
		p := good
		p.Points = make([][]float64, len(pts))
		for i := range pts {
			p.Points[i] = append([]float64(nil), pts[i]...)
		}
		edit(&p)
		return enc(p)
	}
	flat := func(rows [][]float64) []float64 {
		var out []float64
		for _, r := range rows {
			out = append(out, r...)
		}
		return out
	}
	infNPY := flat(pts)
	infNPY[2*5+1] = math.Inf(1)
	nanPhi := flat(phi)
	nanPhi[3*2+1] = math.NaN()
	big := make([][]float64, fusion.MaxProbePoints+1)
	for i := range big {
		big[i] = []float64{float64(i)}
	}
	wide := make([]float64, fusion.MaxProbeDim+1)
	pythonNaN := strings.Replace(enc(good), fmt.Sprintf("[%v,", pts[4][0]), "[NaN,", 1)
	if !strings.Contains(pythonNaN, "NaN") {
		t.Fatal("no NaN in the Python-style probe")
	}
	for _, c := range []struct {
		name, probe string
		dim         int
		want        []string
	}{
		{"python NaN", pythonNaN, 2, []string{"points[4][0] = NaN", "json.dump"}},
		{"python Infinity", strings.Replace(enc(good), fmt.Sprintf(",%v]", pts[1][4]), ",-Infinity]", 1), 2, []string{"points[1][4] = -Infinity"}},
		{"python NaN in phi", strings.Replace(enc(good), fmt.Sprintf("[%v,", phi[5][0]), "[NaN,", 1), 2, []string{"phi[5][0] = NaN"}},
		{"inf in points_npy", enc(PointProbe{PointsNPY: npy.EncodeFloat64([]int{6, 5}, infNPY), Phi: phi}), 2, []string{"points_npy[2][1] = +Inf"}},
		{"wrong dimension", with(func(p *PointProbe) { p.Points[4] = p.Points[4][:3] }), 2, []string{"points[4]: 3 coordinates, want 5"}},
		{"too many points", enc(PointProbe{Points: big, Phi: [][]float64{{1}}}), 1, []string{"points: 131073 points, more than the bound fusion.MaxProbePoints = 131072"}},
		{"too many points (npy)", enc(PointProbe{PointsNPY: npy.EncodeFloat64([]int{200000, 1}, make([]float64, 200000)), Phi: [][]float64{{1}}}), 1,
			[]string{"points_npy: 200000 points, more than the bound fusion.MaxProbePoints = 131072"}},
		{"too many coordinates", enc(PointProbe{Points: [][]float64{wide}, Phi: [][]float64{{1}}}), 1, []string{"points[0]: 257 coordinates, more than the bound fusion.MaxProbeDim = 256"}},
		{"no points", enc(PointProbe{Phi: phi}), 2, []string{"points: no points"}},
		{"two point sources", enc(PointProbe{Points: pts, PointsNPY: npy.EncodeFloat64([]int{6, 5}, flat(pts)), Phi: phi}), 2, []string{"exactly one of points, points_npy"}},
		{"unresolved points_file", enc(PointProbe{PointsFile: "p.npy", Phi: phi}), 2, []string{`points_file "p.npy"`, "points_npy"}},
		{"cost weights length", with(func(p *PointProbe) { p.CostWeights = []float64{1, 2} }), 2, []string{"cost_weights: 2 weights, the points have 5 coordinates"}},
		{"cost weight negative", with(func(p *PointProbe) { p.CostWeights = []float64{1, 1, -2, 1, 1} }), 2, []string{"cost_weights[2] = -2"}},
		{"names length", with(func(p *PointProbe) { p.Names = []string{"x"} }), 2, []string{"names: 1 names, the points have 5 coordinates"}},
		{"no phi", enc(PointProbe{Points: pts}), 2, []string{"exactly one of rbf, phi, phi_npy and phi_file (got 0)"}},
		{"phi rows", enc(PointProbe{Points: pts, Phi: phi[:4]}), 2, []string{"phi: 4 rows, the probe has 6 points"}},
		{"phi ragged", with(func(p *PointProbe) { p.Phi = append([][]float64{{1, 2}, {3}}, phi[2:]...) }), 2, []string{"phi[1]: 1 features, phi[0] has 2"}},
		{"NaN in phi_npy", enc(PointProbe{Points: pts, PhiNPY: npy.EncodeFloat64([]int{6, 2}, nanPhi)}), 2, []string{"Φ[3][1] (point 3, feature 1) is NaN"}},
		{"theta_dim", enc(good), 3, []string{"theta_dim 3", "2 columns"}},
		{"unknown key", `{"points": [[1]], "phi": [[1]], "lattice": 1}`, 1, []string{`unknown field "lattice"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ProbeOf(pointsSpec("bad", []byte(c.probe), c.dim, 1, "barycenter"))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "probe: ") && c.name != "theta_dim" {
				t.Errorf("error %q does not name the probe field", err)
			}
		})
	}
}

// TestPointProbeRoundTrip: a points task's spec survives JSON encoding, the
// store and GetTask with its points bit for bit (also -0, subnormals and
// values with 17 significant digits), and its rebuilt probe has them.
func TestPointProbeRoundTrip(t *testing.T) {
	pts, phi := randomPoints(2, 7, 3, 2)
	pts[0] = []float64{math.Copysign(0, -1), 5e-324, 0.1 + 0.2}
	pts[1] = []float64{math.Nextafter(1, 2), -math.MaxFloat64, 1e-310}
	for _, p := range []PointProbe{
		{Points: pts, Phi: phi, CostWeights: []float64{1, 0.5, 3}},
		{PointsNPY: npy.EncodeFloat64([]int{7, 3}, flatten(pts)), Phi: phi},
	} {
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		spec := pointsSpec("rt", raw, 2, 1, "normalized-mean")
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		var back federation.TaskSpec
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		coord, _ := pointsCoordinator(t)
		tok, err := coord.CreateTask(back, []string{"a"})
		if err != nil {
			t.Fatal(err)
		}
		info, err := coord.GetTask(context.Background(), federation.Credentials{Token: tok["a"]}, "rt", "a")
		if err != nil {
			t.Fatal(err)
		}
		pr, _, err := ProbeOf(info.Spec)
		if err != nil {
			t.Fatal(err)
		}
		if !pr.Scattered() || pr.Len() != len(pts) || pr.Points.Dim() != 3 {
			t.Fatalf("stored probe: scattered %v, %d points", pr.Scattered(), pr.Len())
		}
		x := make([]float64, 3)
		for i, want := range pts {
			pr.Points.Point(x, i)
			for k := range want {
				if math.Float64bits(x[k]) != math.Float64bits(want[k]) {
					t.Errorf("points[%d][%d] = %v after the round trip, want %v", i, k, x[k], want[k])
				}
			}
		}
		if p.CostWeights != nil {
			approx.Slices(t, "cost weights", pr.Points.Weights(), p.CostWeights, 0, 0)
		}
	}
}

func flatten(rows [][]float64) []float64 {
	var out []float64
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// pointsCoordinator is an in-process coordinator with the real fuser.
func pointsCoordinator(t *testing.T) (*federation.Coordinator, *federation.Store) {
	t.Helper()
	store, err := federation.OpenStore(filepath.Join(t.TempDir(), "fed.db"))
	if err != nil {
		t.Fatal(err)
	}
	coord, err := federation.NewCoordinator(store, federation.CoordinatorConfig{Fuser: NewFuser()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { coord.Close(); store.Close() })
	return coord, store
}

// runRound submits cs (client i's reward or θ) to task id and returns the
// fused result.
func runRound(t *testing.T, coord *federation.Coordinator, spec federation.TaskSpec, cs []fusion.Contribution) federation.FusedResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clients := make([]string, len(cs))
	for i := range clients {
		clients[i] = fmt.Sprintf("c%d", i)
	}
	tok, err := coord.CreateTask(spec, clients)
	if err != nil {
		t.Fatalf("%s: %v", spec.ID, err)
	}
	for i, c := range cs {
		sub := federation.Submission{TaskID: spec.ID, Round: 1, ClientID: clients[i], Theta: c.Theta, Reward: c.Reward, DemoCount: 1}
		if _, err := coord.Submit(ctx, federation.Credentials{Token: tok[clients[i]]}, sub); err != nil {
			t.Fatalf("%s: client %d: %v", spec.ID, i, err)
		}
	}
	fs, err := coord.GetFused(ctx, federation.Credentials{Token: tok[clients[0]]}, spec.ID, clients[0], 1, 30*time.Second)
	if err != nil || !fs.Ready {
		t.Fatalf("%s: %+v, %v", spec.ID, fs, err)
	}
	return fs.Result
}

// TestPointsTaskFusesAsFusion is the end-to-end check of a scattered probe
// in a federation (in process): K = 4 clients submit their rewards at the
// points (one submits θ on the task's Φ instead) to a points task, for
// every reward-space method, and the server's fused θ, reward and outlier
// scores are exactly fusion.FuseContributions on the probe built directly
// with fusion.NewPointProbe.
func TestPointsTaskFusesAsFusion(t *testing.T) {
	const n, dim, d = 30, 4, 3
	pts, phiRows := randomPoints(3, n, dim, d)
	// Coordinates in {0, 1, 2}: the median nearest-neighbour cost, the unit
	// of the default ε, is then a weight, not the gap of a random pair,
	// and the largest cost a few dozen units (as on the 5×5 grid).
	for _, x := range pts {
		for k := range x {
			x[k] = float64(int(math.Abs(3*x[k])) % 3)
		}
	}
	weights := []float64{1, 2, 0.5, 1}
	raw, err := json.Marshal(PointProbe{Names: []string{"x", "v", "a", "x'"}, Points: pts, Phi: phiRows, CostWeights: weights})
	if err != nil {
		t.Fatal(err)
	}
	phi := mat.NewDense(n, d, flatten(phiRows))
	direct, err := fusion.NewPointProbe(phi, pts, weights)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 51))
	cs := make([]fusion.Contribution, 4)
	for i := range cs {
		if i == 2 {
			cs[i].Theta = []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
			continue
		}
		cs[i].Reward = make([]float64, n)
		for k := range cs[i].Reward {
			cs[i].Reward[k] = 0.2*rng.NormFloat64() + float64(i)*phiRows[k][0] - phiRows[k][1]
		}
	}
	coord, _ := pointsCoordinator(t)
	for _, m := range fusion.RewardMethods() {
		t.Run(m, func(t *testing.T) {
			spec := pointsSpec("pts-"+m, raw, d, len(cs), m)
			got := runRound(t, coord, spec, cs)
			opt, err := fusion.DecodeOptions(spec.Fusion)
			if err != nil {
				t.Fatal(err)
			}
			want, err := fusion.FuseContributions(context.Background(), direct, cs, nil, opt)
			if err != nil {
				t.Fatal(err)
			}
			approx.Slices(t, m+": fused θ", got.Theta, want.Theta, 0, 0)
			approx.Slices(t, m+": fused reward at the points", got.Reward, want.Reward.Reward, 0, 0)
			approx.Slices(t, m+": outlier scores", got.OutlierScores, want.OutlierScores, 0, 0)
			if len(got.Reward) != n {
				t.Errorf("%s: fused reward has %d values, the probe %d points", m, len(got.Reward), n)
			}
		})
	}
	// A reward of the wrong length is refused.
	tok, err := coord.CreateTask(pointsSpec("pts-len", raw, d, 1, "barycenter"), []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = coord.Submit(context.Background(), federation.Credentials{Token: tok["a"]},
		federation.Submission{TaskID: "pts-len", Round: 1, ClientID: "a", Reward: make([]float64, n+1)})
	if err == nil {
		t.Error("a reward with one value too many was accepted")
	}
}

// TestPointsTaskMatchesLatticeTask is the metamorphic check of STYLE.md
// through the server: a points task whose points are the grid world's
// lattice (one-hot actions, ot.NewLatticeCloud's coordinates and weights)
// and whose Φ is the lattice task's fuses the same submissions to the same
// θ and reward as the lattice task, for every reward-space method (to the
// solver's tolerance for the barycenters).
func TestPointsTaskMatchesLatticeTask(t *testing.T) {
	gw, err := gridworld.DefaultFamily(5).Probe(3)
	if err != nil {
		t.Fatal(err)
	}
	lp := gridLatticeProbe(t, gw)
	lprobe, err := lp.Build()
	if err != nil {
		t.Fatal(err)
	}
	n, d := lprobe.Phi.Dims()
	pc, err := ot.NewLatticeCloud(lprobe.Lattice)
	if err != nil {
		t.Fatal(err)
	}
	pts := make([][]float64, pc.Len())
	for i := range pts {
		pts[i] = pc.Point(make([]float64, pc.Dim()), i)
	}
	praw, err := json.Marshal(PointProbe{Points: pts, PhiNPY: lp.PhiNPY, CostWeights: pc.Weights()})
	if err != nil {
		t.Fatal(err)
	}
	lraw, err := json.Marshal(lp)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 51))
	cs := make([]fusion.Contribution, 3)
	for i := range cs {
		th := []float64{rng.NormFloat64(), rng.NormFloat64()}
		if i == 0 {
			cs[i].Theta = th
			continue
		}
		r := mat.NewVecDense(n, nil)
		r.MulVec(lprobe.Phi, mat.NewVecDense(d, th))
		cs[i].Reward = r.RawVector().Data
		for k := range cs[i].Reward {
			cs[i].Reward[k] += 0.1 * rng.NormFloat64()
		}
	}
	coord, _ := pointsCoordinator(t)
	for _, m := range fusion.RewardMethods() {
		t.Run(m, func(t *testing.T) {
			fusionJSON := json.RawMessage(`{"method": "` + m + `", "tol": 1e-11, "max_iter": 5000}`)
			if m == fusion.MethodWassersteinMedian {
				fusionJSON = json.RawMessage(`{"method": "` + m + `"}`)
			}
			ls := federation.TaskSpec{ID: "lat-" + m, EnvFamily: LatticeFamilyName, Probe: lraw, ThetaDim: d, Quorum: len(cs), Fusion: fusionJSON}
			ps := federation.TaskSpec{ID: "pts-" + m, EnvFamily: PointsFamilyName, Probe: praw, ThetaDim: d, Quorum: len(cs), Fusion: fusionJSON}
			want := runRound(t, coord, ls, cs)
			got := runRound(t, coord, ps, cs)
			approx.Slices(t, m+": fused θ, points vs lattice", got.Theta, want.Theta, 1e-9, 1e-7)
			approx.Slices(t, m+": fused reward, points vs lattice", got.Reward, want.Reward, 1e-9, 1e-7)
		})
	}
}

// TestResolvePointsFile: points_file and phi_file next to the spec are
// inlined as points_npy and phi_npy, so the stored task is self-contained
// and builds the same probe; a missing file is named.
func TestResolvePointsFile(t *testing.T) {
	pts, phi := randomPoints(6, 5, 2, 2)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "points.npy"), npy.EncodeFloat64([]int{5, 2}, flatten(pts)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "phi.npy"), npy.EncodeFloat64([]int{5, 2}, flatten(phi)), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := pointsSpec("f", []byte(`{"points_file": "points.npy", "phi_file": "phi.npy"}`), 2, 1, "mean")
	if err := ResolveProbeFiles(&spec, dir); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(spec.Probe), "_file") {
		t.Fatalf("probe still names a file: %.200s", spec.Probe)
	}
	got, _, err := ProbeOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	inline, err := PointProbe{Points: pts, Phi: phi}.Build()
	if err != nil {
		t.Fatal(err)
	}
	approx.Slices(t, "Φ", got.Phi.RawMatrix().Data, inline.Phi.RawMatrix().Data, 0, 0)
	approx.Slices(t, "points", got.Points.CostMatrix(), inline.Points.CostMatrix(), 0, 0)
	bad := pointsSpec("f", []byte(`{"points_file": "missing.npy", "phi": [[1]]}`), 1, 1, "mean")
	if err := ResolveProbeFiles(&bad, dir); err == nil || !strings.Contains(err.Error(), "points_file") {
		t.Errorf("missing points_file: %v", err)
	}
}

// TestReadmePointsSpec: README.md's scattered-probe task spec is a valid
// points task (it decodes without unknown fields and builds its probe).
func TestReadmePointsSpec(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md")) // go test runs in the package folder
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "**A scattered probe**")
	if !ok {
		t.Fatal("README.md: no scattered-probe paragraph")
	}
	_, block, ok := strings.Cut(after, "```json\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("README.md: no JSON block after the scattered-probe paragraph")
	}
	dec := json.NewDecoder(strings.NewReader(block))
	dec.DisallowUnknownFields()
	var spec federation.TaskSpec
	if err := dec.Decode(&spec); err != nil {
		t.Fatal(err)
	}
	spec.Normalize()
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	p, _, err := ProbeOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Scattered() || p.Len() != 3 {
		t.Errorf("README's points task: scattered %v, %d points", p.Scattered(), p.Len())
	}
}
