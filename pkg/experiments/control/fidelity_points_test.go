package control

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/envs/registry"
)

// TestStepRewardIsTheSimulators steps each simulator with uniformly random
// actions and compares stepReward at every observed step with the reward
// the simulator returned: to rounding for Pendulum (the nominal and client
// 3's torque scale 1.3, its observation noise set to 0, as stepReward
// reads the observation), CartPole and Acrobot; for LunarLander held 8
// frames on every step that does not end an episode (its end's shaping is
// TestHeldStepRewardIsTheTrueReward's) and for the walker within its
// stated 0.07 (TestWalkerFeaturesSpanTheReward). An environment with no
// written reward is refused by name.
func TestStepRewardIsTheSimulators(t *testing.T) {
	for _, tc := range []struct {
		env    string
		client int
		frames int
		tol    float64
	}{
		{"Pendulum-v1", nominalClient, 1, 1e-12},
		{"Pendulum-v1", 3, 1, 1e-12},
		{"CartPole-v1", 2, 1, 0},
		{"Acrobot-v1", 1, 1, 0},
		{"LunarLanderContinuous-v3", 4, 8, 1e-4},
		{"BipedalWalker-v3", 7, 1, 0.07},
	} {
		r, err := stepReward(tc.env, tc.client, tc.frames)
		if err != nil {
			t.Fatal(err)
		}
		var params map[string]float64
		if _, err := classic.ClientParams(tc.env, 0); err == nil && tc.client >= 0 {
			params = map[string]float64{"obs_noise_std": 0}
		}
		e, err := registry.Make(tc.env, tc.client, params, 1)
		if err != nil {
			t.Fatal(err)
		}
		if tc.frames > 1 {
			if e, err = envs.NewFrameSkip(e, tc.frames); err != nil {
				t.Fatal(err)
			}
		}
		rng := rand.New(rand.NewPCG(uint64(tc.client+10), 51))
		space := e.ActionSpace()
		act := make([]float64, space.Dim())
		steps, worst := 0, 0.0
		for ep := range 6 {
			obs := slices.Clone(e.Reset(uint64(ep)))
			for n := 0; n < 300; n++ {
				space.Sample(act, rng)
				next, rew, term, trunc := e.Step(act)
				if !(tc.env == "LunarLanderContinuous-v3" && term) {
					steps++
					d := math.Abs(r(obs, act, next, term) - rew)
					worst = math.Max(worst, d)
					if d > tc.tol {
						t.Fatalf("%s client %d episode %d step %d: stepReward %v, the simulator's %v", tc.env, tc.client, ep, n, r(obs, act, next, term), rew)
					}
				}
				if term || trunc {
					break
				}
				obs = slices.Clone(next)
			}
		}
		t.Logf("%s client %d: %d steps, |stepReward − simulator's| ≤ %.3g", tc.env, tc.client, steps, worst)
	}
	if _, err := stepReward("MountainCar-v0", 0, 1); err == nil {
		t.Error("an environment without a written step reward was accepted")
	}
	if _, err := stepReward("Pendulum-v1", 0, 2); err == nil {
		t.Error("Pendulum held 2 frames was accepted")
	}
}
