package lunar

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// recorded is one episode: its seed, actions, the observations after each
// step (obs[0] is Reset's) and the rewards.
type recorded struct {
	seed    uint64
	actions [][]float64
	obs     [][]float64
	rewards []float64
	term    []bool
}

// record plays one episode of the heuristic controller with every action
// replaced, with probability eps, by a uniform random one.
func record(e *Env, seed uint64, eps float64, rng *rand.Rand) recorded {
	r := recorded{seed: seed}
	obs := e.Reset(seed)
	r.obs = append(r.obs, slices.Clone(obs))
	act := make([]float64, 2)
	for {
		Heuristic(act, obs, true)
		if rng.Float64() < eps {
			act[0], act[1] = 2*rng.Float64()-1, 2*rng.Float64()-1
		}
		o, rew, term, trunc := e.Step(act)
		obs = o
		r.actions = append(r.actions, slices.Clone(act))
		r.obs = append(r.obs, slices.Clone(o))
		r.rewards = append(r.rewards, rew)
		r.term = append(r.term, term)
		if term || trunc {
			return r
		}
	}
}

// TestReplayCloneReproducesNextObservation: a state visited at step t is
// cloned by Reset(seed) and the episode's first t actions; stepping the
// clone with the episode's action t gives the recorded next observation,
// reward and termination bit for bit, on a fresh environment and on one
// that has played other episodes in between.
func TestReplayCloneReproducesNextObservation(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rec, _ := New(ClientParams(true, 4))
	fresh := func() *Env { e, _ := New(ClientParams(true, 4)); return e }
	reused := fresh()
	for ep := range 4 {
		r := record(rec, 1000+uint64(ep), 0.3, rng)
		T := len(r.actions)
		for _, tt := range []int{0, 1, T / 3, T / 2, T - 2, T - 1} {
			if tt < 0 {
				continue
			}
			for name, e := range map[string]*Env{"fresh": fresh(), "reused": reused} {
				e.Reset(r.seed)
				for _, a := range r.actions[:tt] {
					e.Step(a)
				}
				obs, rew, term, _ := e.Step(r.actions[tt])
				if !slices.Equal(obs, r.obs[tt+1]) || rew != r.rewards[tt] || term != r.term[tt] {
					t.Fatalf("episode %d (seed %d) step %d/%d, %s env: clone gives obs %v reward %v term %v, recorded %v %v %v",
						ep, r.seed, tt, T, name, obs, rew, term, r.obs[tt+1], r.rewards[tt], r.term[tt])
				}
				// play something else on the reused environment before the next clone
				if name == "reused" {
					record(e, 77+uint64(tt), 1, rng)
				}
			}
		}
	}
}

// TestRewardIsAFunctionOfTheTransition checks the shaping identity the
// lattice's true reward relies on: away from the terminal ±100, the reward
// is Φ(s′) − Φ(s) − 0.30·m − 0.03·|s| with Φ = −100‖(x, y)‖ − 100‖(ẋ, ẏ)‖ −
// 100|angle| + 10·(leg₁ + leg₂), evaluated on the float32-rounded
// observations (m and |s| the engines' powers of the clipped action), up to
// that rounding.
func TestRewardIsAFunctionOfTheTransition(t *testing.T) {
	phi := func(s []float64) float64 {
		return -100*math.Hypot(s[0], s[1]) - 100*math.Hypot(s[2], s[3]) - 100*math.Abs(s[4]) + 10*s[6] + 10*s[7]
	}
	rng := rand.New(rand.NewPCG(5, 6))
	e, _ := New(ClientParams(true, 2))
	worst, n := 0.0, 0
	for ep := range 6 {
		r := record(e, 500+uint64(ep), 0.5, rng)
		for k, a := range r.actions {
			if r.term[k] {
				if math.Abs(r.rewards[k]) != 100 {
					t.Fatalf("episode %d step %d: terminal reward %v, want ±100", ep, k, r.rewards[k])
				}
				continue
			}
			m, s := 0.0, 0.0
			if a0 := clip(a[0], -1, 1); a0 > 0 {
				m = (a0 + 1) / 2
			}
			if a1 := clip(a[1], -1, 1); math.Abs(a1) > 0.5 {
				s = math.Abs(a1)
			}
			want := phi(r.obs[k+1]) - phi(r.obs[k]) - 0.30*m - 0.03*s
			worst = max(worst, math.Abs(r.rewards[k]-want))
			n++
		}
	}
	if worst > 1e-4 || n < 200 {
		t.Fatalf("max |reward − shaping formula| = %g over %d steps, want ≤ 1e-4 over ≥ 200", worst, n)
	}
}
