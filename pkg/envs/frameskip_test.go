package envs_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/lunar"
)

// TestFrameSkipMatchesDirectStepping: a step of FrameSkip{k} on
// LunarLanderContinuous (client 3's wind) equals k steps of a second
// simulator reset with the same seed and given the same action: the same
// observation bit for bit, the undiscounted sum of the k rewards, and the
// episode ending on the same frame (early inside a step when it
// terminates or truncates there; a time limit of 50 frames, not a
// multiple of 3 or 4, makes the last step short). MaxEpisodeSteps is
// ⌈T/k⌉ and no episode takes more steps.
func TestFrameSkipMatchesDirectStepping(t *testing.T) {
	p := lunar.ClientParams(true, 3)
	for _, tc := range []struct {
		skip, limit int
	}{{1, 1000}, {3, 1000}, {4, 50}, {8, 1000}} {
		p.MaxEpisodeSteps = tc.limit
		a, err := lunar.New(p)
		if err != nil {
			t.Fatal(err)
		}
		direct, err := lunar.New(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := envs.NewFrameSkip(a, tc.skip)
		if err != nil {
			t.Fatal(err)
		}
		if want := (tc.limit + tc.skip - 1) / tc.skip; f.MaxEpisodeSteps() != want {
			t.Errorf("skip %d, limit %d: MaxEpisodeSteps %d, want %d", tc.skip, tc.limit, f.MaxEpisodeSteps(), want)
		}
		rng := rand.New(rand.NewPCG(7, uint64(tc.skip)))
		act := make([]float64, 2)
		ended := map[string]int{}
		for ep := range 6 {
			seed := uint64(100 + ep)
			o1, o2 := f.Reset(seed), direct.Reset(seed)
			if !slices.Equal(o1, o2) {
				t.Fatalf("skip %d episode %d: reset observations differ", tc.skip, ep)
			}
			for step := 0; ; step++ {
				if step >= f.MaxEpisodeSteps() {
					t.Fatalf("skip %d episode %d: step %d beyond MaxEpisodeSteps %d", tc.skip, ep, step, f.MaxEpisodeSteps())
				}
				if ep%2 == 0 { // half the episodes random (crashes), half the heuristic (landings)
					act[0], act[1] = 2*rng.Float64()-1, 2*rng.Float64()-1
				} else {
					lunar.Heuristic(act, o1, true)
				}
				obs, r, term, trunc := f.Step(act)
				var sum float64
				var dobs []float64
				var dterm, dtrunc bool
				for range tc.skip {
					var dr float64
					dobs, dr, dterm, dtrunc = direct.Step(act)
					sum += dr
					if dterm || dtrunc {
						break
					}
				}
				if !slices.Equal(obs, dobs) || r != sum || term != dterm || trunc != dtrunc {
					t.Fatalf("skip %d episode %d step %d: (obs %v, r %v, term %v, trunc %v), direct stepping (%v, %v, %v, %v)",
						tc.skip, ep, step, obs, r, term, trunc, dobs, sum, dterm, dtrunc)
				}
				o1 = obs
				if term || trunc {
					ended[map[bool]string{true: "terminated", false: "truncated"}[term]]++
					break
				}
			}
		}
		if tc.limit == 50 && ended["truncated"] == 0 {
			t.Errorf("skip %d, limit %d: no episode truncated, the short last step is untested", tc.skip, tc.limit)
		}
		if tc.limit == 1000 && ended["terminated"] == 0 {
			t.Errorf("skip %d: no episode terminated, the early stop inside a step is untested", tc.skip)
		}
	}
	if _, err := envs.NewFrameSkip(nil, 0); err == nil {
		t.Error("NewFrameSkip(_, 0): no error")
	}
}
