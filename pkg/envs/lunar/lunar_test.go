package lunar

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/cpuclock"
	"github.com/fedirl/fedirl/third_party/box2d"
)

// TestFreeFallFollowsGravity: with the engines off, no wind and no initial
// push, the vertical momentum of the lander and its legs (joint forces are
// internal) grows by m·g·dt per step until the first contact, and the
// horizontal momentum stays zero.
func TestFreeFallFollowsGravity(t *testing.T) {
	e, _ := New(DefaultParams(true))
	e.SetDraws(zeroDraws{})
	e.Reset(0)
	momentum := func() (px, py, m float64) {
		for _, b := range []*box2d.B2Body{e.lander, e.legs[0], e.legs[1]} {
			v := b.GetLinearVelocity()
			px += b.GetMass() * v.X
			py += b.GetMass() * v.Y
			m += b.GetMass()
		}
		return
	}
	_, py0, m := momentum()
	for k := 1; k <= 40; k++ {
		e.Step([]float64{-1, 0})
		px, py, _ := momentum()
		want := py0 + float64(k)*m*e.p.Gravity/fps
		if math.Abs(py-want) > 1e-9*math.Abs(want) || math.Abs(px) > 1e-9 {
			t.Fatalf("step %d: momentum (%.12g, %.12g), free fall gives (0, %.12g)", k, px, py, want)
		}
	}
}

// zeroDraws returns the middle of every range: a flat-ish terrain, no
// initial push, no dispersion.
type zeroDraws struct{}

func (zeroDraws) Uniform(lo, hi float64) float64 { return (lo + hi) / 2 }
func (zeroDraws) Integers(lo, hi int64) int64    { return (lo + hi) / 2 }

// TestRestingLanderSleeps: landed by the heuristic on flat ground with no
// push, the lander comes to rest, Box2D puts it to sleep and the episode
// ends with +100.
func TestRestingLanderSleeps(t *testing.T) {
	e, _ := New(DefaultParams(true))
	e.SetDraws(zeroDraws{})
	obs := e.Reset(0)
	act := make([]float64, 2)
	for k := 0; k < 1000; k++ {
		o, r, term, _ := e.Step(Heuristic(act, obs, true))
		obs = o
		if term {
			if r != 100 || e.Physics().Awake {
				t.Fatalf("terminated at step %d with reward %v, awake %v; want +100 asleep", k, r, e.Physics().Awake)
			}
			return
		}
	}
	t.Fatal("the lander never came to rest")
}

// TestSameSeedSameTrajectory checks reproducibility from the seed, at
// GOMAXPROCS 1 and 2.
func TestSameSeedSameTrajectory(t *testing.T) {
	run := func(procs int) []float64 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		e, _ := New(ClientParams(true, 3))
		var out []float64
		rng := rand.New(rand.NewPCG(5, 6))
		obs := e.Reset(42)
		out = append(out, obs...)
		for {
			o, r, term, trunc := e.Step([]float64{2*rng.Float64() - 1, 2*rng.Float64() - 1})
			out = append(append(out, o...), r)
			if term || trunc {
				return out
			}
		}
	}
	if a, b := run(1), run(2); !slices.Equal(a, b) {
		t.Fatal("the same seed gave different trajectories")
	}
}

// TestBadInput: parameters outside Gymnasium's ranges and malformed actions
// get errors naming them.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Params)
		want string
	}{
		{func(p *Params) { p.Gravity = -12 }, "gravity"},
		{func(p *Params) { p.Gravity = 0.5 }, "gravity"},
		{func(p *Params) { p.WindPower = 21 }, "wind_power"},
		{func(p *Params) { p.TurbulencePower = -0.1 }, "turbulence_power"},
		{func(p *Params) { p.WindPower = math.NaN() }, "wind_power"},
	} {
		p := DefaultParams(true)
		tc.edit(&p)
		if _, err := New(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error naming %s", p, err, tc.want)
		}
	}
	c, _ := New(DefaultParams(true))
	d, _ := New(DefaultParams(false))
	for _, tc := range []struct {
		e   *Env
		act []float64
	}{{c, []float64{0}}, {c, []float64{math.NaN(), 0}}, {c, []float64{0, math.Inf(1)}}, {d, []float64{4}}, {d, []float64{1.5}}, {d, []float64{0, 1}}} {
		if err := tc.e.CheckAction(tc.act); err == nil {
			t.Errorf("%s: action %v accepted", tc.e.Name(), tc.act)
		}
	}
}

// BenchmarkStep measures environment steps per second on one goroutine,
// resets included, for client 2's wind under two policies: uniform random
// actions (short episodes, so resets weigh most) and Gymnasium's heuristic
// controller (long episodes that end at rest, so contacts weigh most).
func BenchmarkStep(b *testing.B) {
	for _, policy := range []string{"random", "heuristic"} {
		b.Run(policy, func(b *testing.B) {
			e, _ := New(ClientParams(true, 2))
			rng := rand.New(rand.NewPCG(1, 2))
			act := make([]float64, 2)
			obs := e.Reset(0)
			ep := uint64(1)
			b.ReportAllocs()
			cpu0 := cpuclock.ProcessCPU()
			for b.Loop() {
				if policy == "random" {
					act[0], act[1] = 2*rng.Float64()-1, 2*rng.Float64()-1
				} else {
					Heuristic(act, obs, true)
				}
				var term, trunc bool
				if obs, _, term, trunc = e.Step(act); term || trunc {
					obs = e.Reset(ep)
					ep++
				}
			}
			// CPU time per step beside the wall time: other processes on a
			// shared machine inflate the latter.
			b.ReportMetric(float64(cpuclock.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/step")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
			b.ReportMetric(float64(b.N)/float64(ep), "steps/episode")
		})
	}
}
