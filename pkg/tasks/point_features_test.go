package tasks

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/envs/bipedal"
)

// walkerRefDir holds Gymnasium 1.4.0's BipedalWalker-v3 reference episodes
// with their per-step rewards: the gzip copies, kept beside the walker's
// port, of /work/shared/reference/bipedalwalker (README.md there).
const walkerRefDir = "../envs/bipedal/testdata/gymnasium"

// walkerTolerance is the largest |θ*ᵀφ − r| allowed on a step of the
// reference episodes (measured: 0.061; the hull's position corrections
// move it off v′·dt, see WalkerFeatures).
const walkerTolerance = 0.07

type walkerRef struct {
	Actions [][]float64 `json:"actions"`
	Steps   []struct {
		Obs        []float64 `json:"obs"`
		Hull       []float64 `json:"hull"`
		Reward     float64   `json:"reward"`
		Terminated bool      `json:"terminated"`
	} `json:"steps"`
}

func readWalkerRef(t *testing.T, path string) walkerRef {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var r walkerRef
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// TestWalkerFeaturesSpanTheReward checks that the walker set spans
// Gymnasium's BipedalWalker-v3 reward: on every step of the 16 reference
// episodes recorded with Gymnasium (normal and hardcore terrain, random
// and heuristic actions; 5,962 steps, falls included), WalkerTrueWeights
// give the recorded reward within walkerTolerance, except the step that
// reaches the terrain's far end (found by the recorded hull x, which the
// observation does not hold), which the set scores −100 as a fall. The
// least-squares θ over the same steps (that one left out) is θ* to 1 %,
// so nothing else in the span fits the reward better.
func TestWalkerFeaturesSpanTheReward(t *testing.T) {
	pf, err := LookupPointFeatures("BipedalWalker-v3", FeaturesWalker, 1)
	if err != nil {
		t.Fatal(err)
	}
	phiOf, err := pf.Evaluator()
	if err != nil {
		t.Fatal(err)
	}
	theta := WalkerTrueWeights()
	paths, _ := filepath.Glob(filepath.Join(walkerRefDir, "*.json.gz"))
	if len(paths) != 16 {
		t.Fatalf("%d reference episodes in %s, want 16", len(paths), walkerRefDir)
	}
	sort.Strings(paths)
	// The far end: x > (TERRAIN_LENGTH − TERRAIN_GRASS)·TERRAIN_STEP (bipedal_walker.py).
	const farEnd = (200 - 10) * 14 / 30.0
	var rows [][]float64
	var rewards []float64
	worst, sse, finishes := 0.0, 0.0, 0
	for _, p := range paths {
		ref := readWalkerRef(t, p)
		for k := 1; k < len(ref.Steps); k++ {
			s, s1 := ref.Steps[k-1], ref.Steps[k]
			phi := phiOf(nil, s.Obs, ref.Actions[k-1], s1.Obs, s1.Terminated)
			got := 0.0
			for i := range phi {
				got += theta[i] * phi[i]
			}
			if s1.Terminated && s1.Hull[0] > farEnd {
				finishes++
				if got != -100 || s1.Reward == -100 {
					t.Errorf("%s step %d reaches the far end: the set says %v, Gymnasium %v; want −100 and an ordinary reward", filepath.Base(p), k, got, s1.Reward)
				}
				continue
			}
			e := math.Abs(got - s1.Reward)
			worst, sse = math.Max(worst, e), sse+e*e
			if e > walkerTolerance {
				t.Errorf("%s step %d: θ*ᵀφ = %v, Gymnasium's reward %v (|Δ| %.3g > %g)", filepath.Base(p), k, got, s1.Reward, e, walkerTolerance)
			}
			rows, rewards = append(rows, phi), append(rewards, s1.Reward)
		}
	}
	if finishes != 1 || len(rows) < 5900 {
		t.Fatalf("%d steps and %d far-end steps, want > 5900 and 1 (heuristic-seed4-normal)", len(rows), finishes)
	}
	t.Logf("%d steps: |θ*ᵀφ − r| ≤ %.4f, RMS %.4f", len(rows), worst, math.Sqrt(sse/float64(len(rows))))
	X := mat.NewDense(len(rows), pf.Dim(), nil)
	for i, r := range rows {
		X.SetRow(i, r)
	}
	var fit mat.VecDense
	if err := fit.SolveVec(X, mat.NewVecDense(len(rewards), rewards)); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{WalkerForwardVelocity, WalkerAngleChange, WalkerTorque, WalkerTerminal} {
		if math.Abs(fit.AtVec(i)-theta[i]) > 0.01*math.Abs(theta[i]) {
			t.Errorf("least-squares θ[%d] (%s) = %v, θ* %v", i, pf.Names()[i], fit.AtVec(i), theta[i])
		}
	}
}

// TestWalkerTrueWeightsEveryClient checks θ* against the port's own
// reward for the fleet's extreme clients 0 and 10 (motors 72 and 88 N·m,
// other legs, friction, gravity and terrain): the same weights, within
// walkerTolerance on every step, with random and heuristic actions.
func TestWalkerTrueWeightsEveryClient(t *testing.T) {
	pf, err := LookupPointFeatures("BipedalWalker-v3", FeaturesWalker, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pf.RewardFunc(WalkerTrueWeights())
	if err != nil {
		t.Fatal(err)
	}
	steps, worst := 0, 0.0
	for _, client := range []int{0, 10} {
		e, err := bipedal.Make("BipedalWalker-v3", client, nil)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(client), 51))
		act := make([]float64, 4)
		for ep := range 4 {
			obs := append([]float64(nil), e.Reset(uint64(ep))...)
			h := bipedal.NewHeuristic()
			for n := 0; n < 300; n++ {
				if ep%2 == 0 {
					for i := range act {
						act[i] = 2*rng.Float64() - 1
					}
				} else {
					h.Act(act, obs)
				}
				next, rew, term, trunc := e.Step(act)
				got := r(obs, act, next, term)
				steps++
				worst = math.Max(worst, math.Abs(got-rew))
				if math.Abs(got-rew) > walkerTolerance {
					t.Fatalf("client %d episode %d step %d: θ*ᵀφ = %v, the simulator's reward %v", client, ep, n, got, rew)
				}
				if term || trunc {
					break
				}
				obs = append(obs[:0], next...)
			}
		}
	}
	t.Logf("%d steps of clients 0 and 10: |θ*ᵀφ − r| ≤ %.4f", steps, worst)
}

// TestPointFeaturesOfALatticeEnv checks that a lattice environment's set
// on a point probe is its ControlProbe's features at the same step (the
// same RBF at the observation's state), that an unknown set is refused
// naming it, and that the additive set refuses a Discrete action space.
func TestPointFeaturesOfALatticeEnv(t *testing.T) {
	pf, err := LookupPointFeatures("Pendulum-v1", FeaturesQuadratic, 1)
	if err != nil {
		t.Fatal(err)
	}
	ce, _ := LookupControl("Pendulum-v1")
	g, _ := ce.Grid("paper", nil)
	cp := ControlProbe{Env: "Pendulum-v1", Grid: g, RBF: *pf.RBF}
	want, err := cp.FeatureMap()
	if err != nil {
		t.Fatal(err)
	}
	got, err := pf.FeatureMap()
	if err != nil {
		t.Fatal(err)
	}
	obs, act, next := []float64{math.Cos(2), math.Sin(2), -3}, []float64{1.2}, []float64{math.Cos(1.9), math.Sin(1.9), -2}
	a, b := want.Eval(nil, obs, act, next, false), got.Eval(nil, obs, act, next, false)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("feature %d: %v on the point probe, %v on the lattice probe", i, b[i], a[i])
		}
	}
	if _, err := LookupPointFeatures("Pendulum-v1", "cubic", 1); err == nil {
		t.Error("an unknown set was accepted")
	}
	if _, err := LookupPointFeatures("CartPole-v1", FeaturesAdditive, 1); err == nil {
		t.Error("the additive set accepted CartPole's Discrete actions")
	}
	if _, err := LookupPointFeatures("Pendulum-v1", FeaturesWalker, 1); err == nil {
		t.Error("the walker set was accepted for Pendulum")
	}
	if pa, err := LookupPointFeatures("BipedalWalker-v3", FeaturesAdditive, 1); err != nil || pa.Dim() != AdditiveCentres*28+1 {
		t.Errorf("the walker's additive set: %v, %d columns", err, pa.Dim())
	}
}
