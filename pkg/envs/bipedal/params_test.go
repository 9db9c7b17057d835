package bipedal

import (
	"compress/gzip"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fedirl/fedirl/pkg/cpuclock"
)

// TestParamsRefused checks that every parameter outside its meaningful
// range (a non-positive torque, friction, density or length, a gravity that
// does not pull down) is refused with an error naming it and its range.
func TestParamsRefused(t *testing.T) {
	for _, tc := range []struct {
		k    string
		v    float64
		want string
	}{
		{"motors_torque", 0, "motors_torque 0 must be in (0, 200]"},
		{"motors_torque", -5, "(0, 200]"},
		{"leg_length", 0, "leg_length 0 must be in [20, 50]"},
		{"friction", 0, "friction 0 must be in (0, 10]"},
		{"friction", math.NaN(), "friction NaN"},
		{"hull_density", -1, "hull_density -1 must be in (0, 20]"},
		{"gravity", 0, "gravity 0 must be in [-20, -1]"},
		{"gravity", 3, "[-20, -1]"},
		{"terrain_roughness", 4, "terrain_roughness 4 must be in [0, 3]"},
		{"max_episode_steps", 0, "max_episode_steps"},
		{"max_episode_steps", 1.5, "max_episode_steps"},
		{"hardcore", 2, "hardcore = 2"},
		{"wind_power", 1, `no parameter "wind_power"`},
	} {
		_, err := Make("BipedalWalker-v3", -1, map[string]float64{tc.k: tc.v})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s = %v: error %v, want one containing %q", tc.k, tc.v, err, tc.want)
		}
	}
	if _, err := Make("BipedalWalkerHardcore-v3", -1, map[string]float64{"hardcore": 0}); err == nil {
		t.Error("BipedalWalkerHardcore-v3 with hardcore = 0 accepted")
	}
	if _, err := Make("BipedalWalker-v3", 11, nil); err == nil {
		t.Error("client 11 accepted")
	}
}

// TestMakeVariants checks names, hardcore and TimeLimits as Gymnasium
// registers them, and that every client's physics are valid and distinct,
// client 5 being Gymnasium's.
func TestMakeVariants(t *testing.T) {
	for _, tc := range []struct {
		name     string
		params   map[string]float64
		hardcore bool
		limit    int
	}{
		{"BipedalWalker-v3", nil, false, 1600},
		{"BipedalWalker-v3", map[string]float64{"hardcore": 1}, true, 1600},
		{"BipedalWalkerHardcore-v3", nil, true, 2000},
		{"BipedalWalker-v3", map[string]float64{"max_episode_steps": 10}, false, 10},
	} {
		e, err := Make(tc.name, -1, tc.params)
		if err != nil {
			t.Fatal(err)
		}
		if e.Params().Hardcore != tc.hardcore || e.MaxEpisodeSteps() != tc.limit || e.Name() != tc.name {
			t.Errorf("%s %v: %s hardcore %v limit %d", tc.name, tc.params, e.Name(), e.Params().Hardcore, e.MaxEpisodeSteps())
		}
	}
	if ClientParams(false, 5) != DefaultParams(false) {
		t.Errorf("client 5 %+v is not Gymnasium's walker %+v", ClientParams(false, 5), DefaultParams(false))
	}
	seen := map[Params]bool{}
	for i := 0; i <= 10; i++ {
		p := ClientParams(false, i)
		if err := p.Validate(); err != nil {
			t.Errorf("client %d: %v", i, err)
		}
		if seen[p] {
			t.Errorf("client %d repeats another client's physics", i)
		}
		seen[p] = true
	}
	e, _ := Make("BipedalWalker-v3", 10, nil)
	if p := e.Params(); p.Friction != 2.5*1.4 || p.MotorsTorque != 80*1.1 {
		t.Errorf("client 10: %+v", p)
	}
}

// TestTimeLimitAndDeterminism checks truncation at the TimeLimit and that
// the same seed gives the same bytes, a different seed a different terrain.
func TestTimeLimitAndDeterminism(t *testing.T) {
	run := func(seed uint64, steps int) ([]float64, bool) {
		e, _ := Make("BipedalWalker-v3", 3, map[string]float64{"max_episode_steps": float64(steps)})
		e.Reset(seed)
		var obs []float64
		var trunc bool
		for k := range steps {
			var term bool
			obs, _, term, trunc = e.Step([]float64{0, 0, 0, 0})
			if term {
				t.Fatalf("standing still fell at step %d", k)
			}
		}
		return append([]float64(nil), obs...), trunc
	}
	a, trunc := run(7, 30)
	b, _ := run(7, 30)
	if !trunc {
		t.Error("not truncated at max_episode_steps")
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, obs[%d] %v vs %v", i, a[i], b[i])
		}
	}
	e1, _ := New(DefaultParams(false))
	e2, _ := New(DefaultParams(false))
	e1.Reset(1)
	e2.Reset(2)
	if e1.Terrain().Y == e2.Terrain().Y {
		t.Error("seeds 1 and 2 built the same terrain")
	}
	flat, _ := Make("BipedalWalker-v3", -1, map[string]float64{"terrain_roughness": 0})
	flat.Reset(1)
	for i := 1; i < terrainLength; i++ {
		if d := math.Abs(flat.Terrain().Y[i] - terrainHeight); d > 0.2 {
			t.Fatalf("terrain_roughness 0: point %d at %v, want near %v", i, flat.Terrain().Y[i], terrainHeight)
		}
	}
}

// TestStepAllocatesNothing checks that a step allocates nothing once the
// episode runs (the world is built by Reset).
func TestStepAllocatesNothing(t *testing.T) {
	e, _ := New(DefaultParams(true))
	h := NewHeuristic()
	act := make([]float64, 4)
	obs := e.Reset(1)
	for range 20 {
		obs, _, _, _ = e.Step(h.Act(act, obs))
	}
	allocs := testing.AllocsPerRun(100, func() {
		if e.done {
			obs = e.Reset(1)
			h.Reset()
			return
		}
		obs, _, _, _ = e.Step(h.Act(act, obs))
	})
	if allocs != 0 {
		t.Errorf("%v allocations per step", allocs)
	}
}

// BenchmarkStep measures the walker's step on one goroutine under uniform
// random actions (falls within ~50–100 steps) and Gymnasium's heuristic
// (long walks), on normal and hardcore terrain. Resets, which build a new
// world (about 1,000 allocations), run with the timer stopped, so ns/op and
// allocs/op are the step's own; cpu-ns/step is the process's CPU time per
// step (wall time on a shared machine includes other processes' turns).
// bench/bipedal/run.sh runs it beside pybox2d and Box2D C++ on the same
// worlds, for the ratio.
func BenchmarkStep(b *testing.B) {
	for _, hardcore := range []bool{false, true} {
		for _, policy := range []string{"random", "heuristic"} {
			name := policy + "/normal"
			if hardcore {
				name = policy + "/hardcore"
			}
			b.Run(name, func(b *testing.B) {
				e, _ := New(DefaultParams(hardcore))
				h := NewHeuristic()
				rng := rand.New(rand.NewPCG(1, 2))
				act := make([]float64, 4)
				obs := e.Reset(0)
				ep := uint64(1)
				b.ReportAllocs()
				var resetCPU time.Duration
				cpu0 := cpuclock.ProcessCPU()
				for b.Loop() {
					if policy == "random" {
						for j := range act {
							act[j] = 2*rng.Float64() - 1
						}
					} else {
						h.Act(act, obs)
					}
					var term, trunc bool
					if obs, _, term, trunc = e.Step(act); term || trunc {
						b.StopTimer()
						c := cpuclock.ProcessCPU()
						obs = e.Reset(ep)
						h.Reset()
						ep++
						resetCPU += cpuclock.ProcessCPU() - c
						b.StartTimer()
					}
				}
				b.ReportMetric(float64(cpuclock.ProcessCPU()-cpu0-resetCPU)/float64(b.N), "cpu-ns/step")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
				b.ReportMetric(float64(b.N)/float64(ep), "steps/episode")
			})
		}
	}
}

// TestClientsMatchPybox2d runs four of the fleet's walkers (clients 0, 3, 8
// and 10: every parameter at its extremes and between, normal and hardcore)
// under random actions and compares every observation and reward, bit for
// bit, with pybox2d simulating the same world
// (testdata/pybox2d-clients.json.gz, made by make-pybox2d-clients.sh
// beside it): the client parameters reach Box2D as they would in pybox2d.
func TestClientsMatchPybox2d(t *testing.T) {
	if fusesMulAdd() {
		t.Skip("pins unfused arithmetic (see TestReplayGymnasium)")
	}
	fh, err := os.Open("testdata/pybox2d-clients.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	var gold struct {
		Episodes map[string][]struct {
			Obs        []float64 `json:"obs"`
			Reward     float64   `json:"reward"`
			Terminated bool      `json:"terminated"`
		} `json:"episodes"`
	}
	if err := json.NewDecoder(zr).Decode(&gold); err != nil {
		t.Fatal(err)
	}
	for _, c := range clientCases {
		want, ok := gold.Episodes[c.name]
		if !ok {
			t.Fatalf("%s missing from the golden file", c.name)
		}
		e, _ := New(ClientParams(c.hardcore, c.client))
		obs := e.Reset(c.seed)
		acts := clientActions(c.seed, c.steps)
		for k := 0; k < len(want); k++ {
			var r float64
			var term bool
			if k > 0 {
				obs, r, term, _ = e.Step(acts[k-1])
			}
			for i := range obs {
				if obs[i] != want[k].Obs[i] {
					t.Fatalf("%s step %d: obs[%d] = %v, pybox2d %v", c.name, k, i, obs[i], want[k].Obs[i])
				}
			}
			if k > 0 && (r != want[k].Reward || term != want[k].Terminated) {
				t.Fatalf("%s step %d: reward %v terminated %v, pybox2d %v %v", c.name, k, r, term, want[k].Reward, want[k].Terminated)
			}
		}
		t.Logf("%s: %d steps bit for bit with pybox2d", c.name, len(want)-1)
	}
}
