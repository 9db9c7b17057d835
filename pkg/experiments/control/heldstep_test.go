package control

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// TestHeldStepRewardIsTheTrueReward: LunarLander's held_step features,
// weighted by the true reward's coefficients (−100 on each shaping term,
// +10 per leg contact, +100 at rest, −100 on a crash), give the reward PPO
// is trained on for every held step of 8 frames that the simulator takes:
// the simulator's own reward less its fuel cost (−0.30·main − 0.03·side
// per frame, features.LanderThrottles, which the set leaves out),
// to the observation's float32 rounding (10⁻⁴), on every step that does
// not end the episode; on a step that ends it, rest (+100) and crash
// (−100) are told apart, the rest of its reward (the shaping of the frames
// before the last, which the features leave out) within 100. The
// episodes follow Gymnasium's heuristic lander with random actions mixed
// in, so that both landings and crashes occur, for clients 0 and 3 (wind).
func TestHeldStepRewardIsTheTrueReward(t *testing.T) {
	const env, frames = "LunarLanderContinuous-v3", 8
	ce, err := tasks.LookupControl(env)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ce.Features(tasks.FeaturesHeldStep, frames)
	if err != nil {
		t.Fatal(err)
	}
	g, err := ce.Grid("lander", nil)
	if err != nil {
		t.Fatal(err)
	}
	theta := trueHeldStepWeights(t, spec)
	reward, err := tasks.ControlProbe{Env: env, Grid: g, RBF: spec}.RewardFunc(theta)
	if err != nil {
		t.Fatal(err)
	}
	heuristic, _ := registry.Heuristic(env)
	var steps, rests, crashes int
	worst := 0.0 // over the steps that end an episode
	for _, client := range []int{0, 3} {
		e, err := heldEnv(env, client, frames, 1)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(client), 34))
		act := make([]float64, 2)
		for ep := range 24 {
			obs := append([]float64(nil), e.Reset(uint64(100*client+ep))...)
			eps := float64(ep%4) / 4 // 0, 0.25, 0.5, 0.75: some episodes land, some crash
			for {
				if rng.Float64() < eps {
					act[0], act[1] = 2*rng.Float64()-1, 2*rng.Float64()-1
				} else {
					heuristic(act, obs)
				}
				next, r, term, trunc := e.Step(act)
				got := reward(obs, act, next, term)
				if !term {
					r -= heldFuel(act, frames)
				}
				switch {
				case !term:
					steps++
					// The observation is float32 (Gymnasium's), the shaping float64.
					if math.Abs(got-r) > 1e-4 {
						t.Fatalf("client %d episode %d: held step reward %v, the simulator's %v", client, ep, got, r)
					}
				case r > 0:
					rests++
					worst = math.Max(worst, math.Abs(got-r))
					if math.Abs(got-r) > 100 || got < 50 {
						t.Fatalf("client %d episode %d: the landing's held step: reward %v, the simulator's %v", client, ep, got, r)
					}
				default:
					crashes++
					worst = math.Max(worst, math.Abs(got-r))
					if math.Abs(got-r) > 100 || got > -50 {
						t.Fatalf("client %d episode %d: the crash's held step: reward %v, the simulator's %v", client, ep, got, r)
					}
				}
				if term || trunc {
					break
				}
				obs = append(obs[:0], next...)
			}
		}
	}
	if steps < 500 || rests < 5 || crashes < 5 {
		t.Fatalf("%d steps, %d landings and %d crashes: too few to test", steps, rests, crashes)
	}
	t.Logf("%d held steps, %d landings, %d crashes; on these two, |reward − simulator's| ≤ %.1f", steps, rests, crashes, worst)
}

// TestHeldStepStudy runs the tiny LunarLander study with the held_step
// features (actions held 4 frames, irl absorbing off, replay clones only)
// through every unit, and checks the client's feature matrix the ladder,
// the local IRL and fidelity read: on every pair its replay model observed
// whose steps all continued the episode, the row weighted by the true
// reward's coefficients is the pair's true lattice reward (the mean
// simulator reward of the same clones) less the fuel of its action level,
// to the observation's float32 rounding; elsewhere it is the probe's
// nominal row. And the local IRL's μ_D is the demonstrations' own steps'
// features (demoStepFeatures): its shaping columns telescope, so each
// episode's distance column is its last observation's ‖(x, y)‖ less its
// first's.
func TestHeldStepStudy(t *testing.T) {
	const env, frames = "LunarLanderContinuous-v3", 4
	c := tinyLunarConfig()
	ec := c.Env[env]
	ec.Features, ec.FrameSkip = tasks.FeaturesHeldStep, frames
	no := false
	ec.Absorbing = &no
	c.Env = EnvConfigs{env: ec}
	c.ModelRollouts.Count = false
	st := runStudy(t, c, t.TempDir(), 2, Shard{})
	_, sp, err := st.ladderUnit(env, "paper", 0, c.Seed)
	if err != nil {
		t.Fatal(err)
	}
	theta := trueHeldStepWeights(t, sp.Probe.RBF)
	g, phi, err := st.features(sp.Probe)
	if err != nil {
		t.Fatal(err)
	}
	m, r, phiC, err := st.latticeModel(context.Background(), sp.Probe, g, phi, env, 0, c.Seed, sp.Model, sp.Rollouts, 1)
	if err != nil {
		t.Fatal(err)
	}
	observed := discretize.ObservedPairs(m, r, sp.Rollouts.HaltReward)
	checked, own := 0, 0
	for k, o := range observed {
		if !o {
			if !slices.Equal(phiC.RawRowView(k), phi.RawRowView(k)) {
				t.Fatalf("pair %d, not observed: row %v, want the probe's %v", k, phiC.RawRowView(k), phi.RawRowView(k))
			}
			continue
		}
		if !slices.Equal(phiC.RawRowView(k), phi.RawRowView(k)) {
			own++
		}
		next, _ := m.Successors(k/g.NumActions(), k%g.NumActions())
		if slices.Contains(next, int32(g.Terminal())) {
			continue
		}
		want := r[k] - heldFuel(g.Action(make([]float64, 2), k%g.NumActions()), frames)
		if got := floats.Dot(phiC.RawRowView(k), theta); math.Abs(got-want) > 1e-4 {
			t.Fatalf("pair %d: θ*ᵀφ = %v, the true lattice reward less the fuel %v", k, got, want)
		}
		checked++
	}
	if checked < 50 || own < checked {
		t.Fatalf("%d pairs checked, %d rows of the client's own: the test exercises too little", checked, own)
	}
	t.Logf("%d observed pairs with the client's own rows, %d of them checked against the true lattice reward", own, checked)

	// μ_D of the local IRL: the demonstrations' own steps.
	_, isp, err := st.irlUnit(env, "paper", 0, c.Seed)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, trajs, icfg, d, err := st.irlProblem(context.Background(), isp, "paper", c.Seed, 1)
	if err != nil {
		t.Fatal(err)
	}
	if isp.DemoFeatures != demoFeaturesObserved || icfg.EmpiricalFeatures == nil {
		t.Fatalf("irl spec %q, μ_D %v: want the demonstrations' observed steps", isp.DemoFeatures, icfg.EmpiricalFeatures)
	}
	one := &Demos{Obs: d.Obs[:d.Lengths[0]+1], Acts: d.Acts[:d.Lengths[0]], States: d.States[:d.Lengths[0]+1], Rews: d.Rews[:d.Lengths[0]],
		Terminal: []bool{false}, Lengths: d.Lengths[:1]}
	mu := demoStepFeatures(sp.Probe.RBF, one, g.StateDim(), 1, trajs[:1])
	first, last := one.States[0], one.States[len(one.States)-1]
	if want := math.Hypot(last[0], last[1]) - math.Hypot(first[0], first[1]); math.Abs(mu[0]-want) > 1e-12 {
		t.Fatalf("episode 0's undiscounted distance column %v, its end less its start %v", mu[0], want)
	}
}

// trueHeldStepWeights returns θ* of a held_step set: the true reward's
// coefficients of its terms.
func trueHeldStepWeights(t *testing.T, spec features.RBFSpec) []float64 {
	t.Helper()
	weights := map[string]float64{"distance": -100, "speed": -100, "angle": -100, "leg1": 10, "leg2": 10, "rest": 100, "crash": -100}
	theta := make([]float64, spec.Dim())
	for i, term := range spec.HeldLander.Terms {
		w, ok := weights[term]
		if !ok {
			t.Fatalf("held_step term %q: no true weight", term)
		}
		theta[i] = w
	}
	return theta
}

// heldFuel is the true reward's fuel cost of action act held for frames frames.
func heldFuel(act []float64, frames int) float64 {
	m, s := features.LanderThrottles(act[0], act[1])
	return float64(frames) * (-0.30*m - 0.03*math.Abs(s))
}
