package control

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/longtest"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// TestWalkerPointsStudy (long: FEDIRL_LONG_TESTS=1) runs the walker study on its point probe end to
// end twice into two folders (the same bytes, with 1 and 2 units at a
// time) and once more into the first (nothing computed), and checks what
// the units hold against what they must be: the probe's points are steps
// of the nominal simulator whose recorded reward is the true step reward
// there (stepReward, to its stated tolerance), every local θ has the walker
// set's dimension, the fused θ of the mean is the mean of the local θ,
// rung (b) projects the true reward at the points with R² ≈ 1 (the set
// spans it), rung (a) is reported not applicable, and every fidelity cell
// is a sample-based estimate in [0, 1] with its standard error.
func TestWalkerPointsStudy(t *testing.T) {
	if !longtest.Enabled() {
		t.Skipf("runs the walker study three times (about 35 s each on a loaded 2-core machine: 1600-step episodes); set %s=1", longtest.Var)
	}
	cfg := walkerPointsConfig()
	const env = "BipedalWalker-v3"
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	start := time.Now()
	st := runStudy(t, cfg, a, 2, Shard{})
	t.Logf("walker points study: %v, computed %v", time.Since(start).Round(time.Millisecond), st.Computed)
	runStudy(t, cfg, b, 1, Shard{})
	sameFiles(t, "jobs 2 and jobs 1", files(t, a), files(t, b))
	again := runStudy(t, cfg, a, 2, Shard{})
	for k, n := range again.Computed {
		if n > 0 {
			t.Errorf("the resumed run computed %d %s units", n, k)
		}
	}
	seed := cfg.Seed
	p, _, err := st.readProbe(env, seed)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Obs); n < 20 || n > cfg.Env[env].Probe.MaxPoints {
		t.Fatalf("the probe has %d points, want 20…%d", n, cfg.Env[env].Probe.MaxPoints)
	}
	rTrue, err := stepReward(env, nominalClient, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Obs {
		if d := rTrue(p.Obs[i], p.Act[i], p.Next[i], p.Terminated[i]) - p.Reward[i]; d > 0.07 || d < -0.07 {
			t.Errorf("point %d: the true step reward %v, the nominal simulator's %v", i, p.Reward[i]+d, p.Reward[i])
		}
	}
	walker := tasks.WalkerFeatures()
	var locals [][]float64
	for _, c := range cfg.TrainingClients() {
		u, _, err := st.irlUnit(env, LatticePoints, c, seed)
		if err != nil {
			t.Fatal(err)
		}
		var f IRLFile
		if err := readJSON(u.path(st.units), &f); err != nil {
			t.Fatal(err)
		}
		if len(f.Theta) != walker.Dim() || f.Learner != LocalIRLSample || f.Sample == nil || f.Iterations < 1 {
			t.Fatalf("client %d: local fit %+v", c, f)
		}
		locals = append(locals, f.Theta)
	}
	fu, _, _, err := st.fusionUnit(env, LatticePoints, MethodMean, seed)
	if err != nil {
		t.Fatal(err)
	}
	var ff FusionFile
	if err := readJSON(fu.path(st.units), &ff); err != nil {
		t.Fatal(err)
	}
	for k := range ff.Theta {
		want := (locals[0][k] + locals[1][k]) / 2
		if d := ff.Theta[k] - want; d > 1e-9*(1+abs(want)) || d < -1e-9*(1+abs(want)) {
			t.Errorf("mean θ[%d] = %v, the local θ's mean %v", k, ff.Theta[k], want)
		}
	}
	bu, _, _, err := st.fusionUnit(env, LatticePoints, MethodBarycenter, seed)
	if err != nil {
		t.Fatal(err)
	}
	var fb FusionFile
	if err := readJSON(bu.path(st.units), &fb); err != nil {
		t.Fatal(err)
	}
	if len(fb.Theta) != len(ff.Theta) || fb.Iterations < 1 {
		t.Errorf("barycenter on the points: %+v", fb)
	}
	lu, _, err := st.pointsLadderUnit(env, 0, seed)
	if err != nil {
		t.Fatal(err)
	}
	var lf LadderFile
	if err := readJSON(lu.path(st.units), &lf); err != nil {
		t.Fatal(err)
	}
	if lf.Probe != ProbePoints || lf.Available || !(lf.ProjectionR2 > 0.999) || lf.ProjectionPairs != len(p.Obs) {
		t.Errorf("rung (b) on the points: %+v, want R² ≈ 1 over the %d points", lf, len(p.Obs))
	}
	for _, c := range cfg.AllClients() {
		u, _, _, err := st.pointsFidelityUnit(env, c, seed)
		if err != nil {
			t.Fatal(err)
		}
		var f FidelityFile
		if err := readJSON(u.path(st.units), &f); err != nil {
			t.Fatal(err)
		}
		if f.Estimate != estimateSample || f.Sample == nil {
			t.Fatalf("client %d: fidelity %+v is not the sample-based one", c, f)
		}
		for m, byCov := range f.EPIC {
			for cov, d := range byCov {
				se := f.StdErr[m][cov]
				if d != nil && (!(*d >= 0 && *d <= 1) || se == nil || !(*se >= 0)) {
					t.Errorf("client %d %s %s: EPIC %v ± %v", c, m, cov, *d, se)
				}
			}
		}
		if d := f.EPIC[MethodProjected]; d == nil || d["model"] == nil || *d["model"] > 0.05 {
			t.Errorf("client %d: the projected true reward's EPIC on the probe's coverage is %v, want ≈ 0", c, d)
		}
	}
	md, err := os.ReadFile(filepath.Join(a, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| BipedalWalker-v3 | points | n/a |", "rung (a) does not apply", "(sample)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	if !slices.ContainsFunc(strings.Split(string(md), "\n"), func(l string) bool {
		return strings.HasPrefix(l, "| BipedalWalker-v3 | points |") && strings.Contains(l, "| barycenter |")
	}) {
		t.Error("summary.md has no barycenter row of the walker on points")
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestPendulumPointsPairedWithLattice runs Pendulum on its paper lattice
// and its point probe in one study, with GOMAXPROCS 2 and 1 (the same
// bytes) and resumed (nothing computed), and checks the pairing the two
// entries promise: each client's local θ is the same, bit for bit, on
// both (the same sample-based learner on the same features: the support
// never enters a fit), so is the mean's fused θ; the reward-space fusions
// on the points differ from the lattice's only through their support; rung
// (b) on the points projects the true reward with R² > 0.99 (the quadratic
// set spans it but for the torque term); rung (a) is the lattice's alone
// (reported not applicable on the points).
func TestPendulumPointsPairedWithLattice(t *testing.T) {
	cfg := pendulumPointsConfig()
	const env = "Pendulum-v1"
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	start := time.Now()
	st := runStudy(t, cfg, a, 2, Shard{})
	t.Logf("Pendulum on paper and points: %v, computed %v", time.Since(start).Round(time.Millisecond), st.Computed)
	runStudy(t, cfg, b, 1, Shard{})
	sameFiles(t, "GOMAXPROCS 2 and 1", files(t, a), files(t, b))
	again := runStudy(t, cfg, a, 2, Shard{})
	for k, n := range again.Computed {
		if n > 0 {
			t.Errorf("the resumed run computed %d %s units", n, k)
		}
	}
	theta := func(u unit) []float64 {
		t.Helper()
		var f struct {
			Theta []float64 `json:"theta"`
		}
		if err := readJSON(u.path(st.units), &f); err != nil {
			t.Fatal(err)
		}
		return f.Theta
	}
	for _, c := range cfg.TrainingClients() {
		lu, _, err := st.irlUnit(env, "paper", c, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		pu, _, err := st.irlUnit(env, LatticePoints, c, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(theta(lu), theta(pu)) {
			t.Errorf("client %d: local θ %v on the lattice, %v on the points", c, theta(lu), theta(pu))
		}
	}
	for _, m := range []string{MethodMean, MethodBarycenter} {
		lu, _, _, err := st.fusionUnit(env, "paper", m, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		pu, _, _, err := st.fusionUnit(env, LatticePoints, m, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		same := slices.Equal(theta(lu), theta(pu))
		if m == MethodMean && !same {
			t.Errorf("mean: fused θ %v on the lattice, %v on the points", theta(lu), theta(pu))
		}
		if m != MethodMean && same {
			t.Errorf("%s: the same fused θ on the lattice and the points: the support played no part", m)
		}
	}
	for _, c := range cfg.TrainingClients() {
		lu, _, err := st.ladderUnit(env, "paper", c, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		pu, _, err := st.pointsLadderUnit(env, c, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		var lf, pf LadderFile
		if err := readJSON(lu.path(st.units), &lf); err != nil {
			t.Fatal(err)
		}
		if err := readJSON(pu.path(st.units), &pf); err != nil {
			t.Fatal(err)
		}
		if !lf.Available || lf.Probe != "" || pf.Available || pf.Probe != ProbePoints || !(pf.ProjectionR2 > 0.99) {
			t.Errorf("client %d: ladder on the lattice %+v, on the points %+v", c, lf, pf)
		}
	}
	var sum Summary
	if err := readJSON(filepath.Join(a, "summary.json"), &sum); err != nil {
		t.Fatal(err)
	}
	var seen int
	for _, v := range sum.Validation {
		switch v.Lattice {
		case "paper":
			seen++
			if len(v.NotApplicable) > 0 || v.FeatureGapSE == nil {
				t.Errorf("the lattice's ladder: %+v", v)
			}
		case LatticePoints:
			seen++
			if v.PlannerTrueNormalized != nil || len(v.NotApplicable) != 1 || v.ProjectionR2 == nil || !(*v.ProjectionR2 > 0.99) ||
				v.FeatureGapSE == nil || v.Fits != len(cfg.TrainingClients()) {
				t.Errorf("the point probe's ladder: %+v", v)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("validation rows %+v, want one per entry", sum.Validation)
	}
}

// TestWalkerPointProbeUnits runs the walker's point-probe units alone, on
// planted local fits instead of trained ones (no PPO: the walker's
// 1600-step episodes make the whole study long, TestWalkerPointsStudy),
// and checks each against an independent truth: the probe's recorded
// rewards are the true step reward (stepReward) within the walker set's
// tolerance; rung (b)'s projection recovers θ* (WalkerTrueWeights) with
// R² ≈ 1; planted local fits θ* and 3θ* (the same reward up to scale) fuse
// by the mean into 2θ* exactly and by the normalized mean into a θ whose
// reward on the probe is θ*'s up to a positive scale and shift; the
// sample-based EPIC of θ* and of 3θ* to the true reward is 0 and that of
// −θ* (planted as the mean) 1, on every coverage.
func TestWalkerPointProbeUnits(t *testing.T) {
	cfg := walkerPointsConfig()
	const env = "BipedalWalker-v3"
	ec := cfg.Env[env]
	ec.Probe.Policy, ec.Probe.Episodes, ec.Probe.Every = ProbeHeuristic, 2, 4
	cfg.Env[env] = ec
	cfg.HeldOutClients = 0
	cfg.Methods = []string{MethodLocal, MethodMean, MethodNormalizedMean, MethodProjected, MethodTrue}
	st, err := New(cfg, t.TempDir(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	seed := cfg.Seed
	pu, psp, ref, _, err := st.probeUnit(env, seed)
	if err != nil || ref != nil {
		t.Fatalf("probe unit: %v (reference expert %v, want none for the heuristic)", err, ref)
	}
	if err := st.runProbe(ctx, pu, psp, ref); err != nil {
		t.Fatal(err)
	}
	p, _, err := st.readProbe(env, seed)
	if err != nil {
		t.Fatal(err)
	}
	rTrue, err := stepReward(env, nominalClient, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Obs {
		if d := rTrue(p.Obs[i], p.Act[i], p.Next[i], p.Terminated[i]) - p.Reward[i]; abs(d) > 0.07 {
			t.Errorf("point %d: the true step reward %v, the nominal simulator's %v", i, p.Reward[i]+d, p.Reward[i])
		}
	}
	star := tasks.WalkerTrueWeights()
	for _, c := range cfg.TrainingClients() {
		lu, lsp, err := st.pointsLadderUnit(env, c, seed)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.runPointsLadder(lu, lsp); err != nil {
			t.Fatal(err)
		}
	}
	lu, _, err := st.pointsLadderUnit(env, 0, seed)
	if err != nil {
		t.Fatal(err)
	}
	var lf LadderFile
	if err := readJSON(lu.path(st.units), &lf); err != nil {
		t.Fatal(err)
	}
	if !(lf.ProjectionR2 > 0.9999) {
		t.Errorf("rung (b): R² %v, want ≈ 1 (θ* is in the span)", lf.ProjectionR2)
	}
	for i, w := range star {
		if w != 0 && abs(lf.Theta[i]-w) > 0.05*abs(w) {
			t.Errorf("rung (b): θ[%d] = %v, θ* %v", i, lf.Theta[i], w)
		}
	}
	// Plant the local fits θ* and 3θ*.
	scaled := make([]float64, len(star))
	for i, w := range star {
		scaled[i] = 3 * w
	}
	for k, c := range cfg.TrainingClients() {
		iu, _, err := st.irlUnit(env, LatticePoints, c, seed)
		if err != nil {
			t.Fatal(err)
		}
		th := star
		if k == 1 {
			th = scaled
		}
		if err := report.WriteJSON(iu.path(st.units), IRLFile{Env: env, Lattice: LatticePoints, Client: c, Seed: seed, Theta: th, Learner: LocalIRLSample}); err != nil {
			t.Fatal(err)
		}
	}
	fused := map[string][]float64{}
	for _, m := range []string{MethodMean, MethodNormalizedMean} {
		fu, fsp, locals, err := st.fusionUnit(env, LatticePoints, m, seed)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.runFusion(ctx, fu, fsp, locals, env, LatticePoints, m, seed); err != nil {
			t.Fatal(err)
		}
		var ff FusionFile
		if err := readJSON(fu.path(st.units), &ff); err != nil {
			t.Fatal(err)
		}
		fused[m] = ff.Theta
	}
	for i, w := range star {
		if abs(fused[MethodMean][i]-2*w) > 1e-12 {
			t.Errorf("mean θ[%d] = %v, want 2θ* = %v", i, fused[MethodMean][i], 2*w)
		}
	}
	pf, _ := st.pointFeatures(env)
	phi, err := p.phi(pf)
	if err != nil {
		t.Fatal(err)
	}
	var rs, rn mat.VecDense
	rs.MulVec(phi, mat.NewVecDense(len(star), star))
	rn.MulVec(phi, mat.NewVecDense(len(star), fused[MethodNormalizedMean]))
	if c := stat.Correlation(rs.RawVector().Data, rn.RawVector().Data, nil); !(c > 1-1e-9) {
		t.Errorf("normalized mean of θ* and 3θ*: its reward on the probe correlates %v with θ*'s, want 1", c)
	}
	// Plant −θ* as the mean's θ and score every reward.
	neg := make([]float64, len(star))
	for i, w := range star {
		neg[i] = -w
	}
	mu, _, _, err := st.fusionUnit(env, LatticePoints, MethodMean, seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJSON(mu.path(st.units), FusionFile{Env: env, Lattice: LatticePoints, Seed: seed, Method: MethodMean, Theta: neg}); err != nil {
		t.Fatal(err)
	}
	// the demonstrations coverage needs the client's demonstrations
	eu, esp, err := st.expertUnit(env, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.runExpert(ctx, eu, esp); err != nil {
		t.Fatal(err)
	}
	du, dsp, eu, esp, err := st.demosUnit(env, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.runDemos(ctx, du, dsp, eu, esp); err != nil {
		t.Fatal(err)
	}
	fu, fsp, units, err := st.pointsFidelityUnit(env, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.runPointsFidelity(fu, fsp, units); err != nil {
		t.Fatal(err)
	}
	var f FidelityFile
	if err := readJSON(fu.path(st.units), &f); err != nil {
		t.Fatal(err)
	}
	for _, cov := range irl.Coverages() {
		if d := f.EPIC[MethodLocal][cov]; d == nil || *d > 1e-6 {
			t.Errorf("%s: EPIC of the planted 3θ* %v, want 0", cov, d)
		}
		if d := f.EPIC[MethodMean][cov]; d == nil || abs(*d-1) > 1e-6 {
			t.Errorf("%s: EPIC of −θ* %v, want 1", cov, d)
		}
		if d := f.EPIC[MethodProjected][cov]; d == nil || *d > 0.05 {
			t.Errorf("%s: EPIC of the projected true reward %v, want ≈ 0", cov, d)
		}
	}
}
