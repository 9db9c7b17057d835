package classic_test

import (
	"fmt"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/classic"
)

// Replay a CartPole-v1 trajectory from a given state.
func ExampleMake() {
	env, err := classic.Make("CartPole-v1")
	if err != nil {
		panic(err)
	}
	if err := env.SetState([]float64{2.35, 2, 0, 0}); err != nil {
		panic(err)
	}
	for _, a := range []float64{1, 1} {
		obs, r, term, trunc := env.Step([]float64{a})
		fmt.Printf("x=%.4f reward=%v terminated=%v truncated=%v\n", obs[0], r, term, trunc)
	}
	// Output:
	// x=2.3900 reward=1 terminated=false truncated=false
	// x=2.4339 reward=1 terminated=true truncated=false
}

// Perturbed physics by name; unknown names are errors listing the valid ones.
func ExampleMakeWithParams() {
	_, err := classic.MakeWithParams("Pendulum-v1", map[string]float64{"gravity": 11.81})
	fmt.Println(err)
	env, _ := classic.MakeWithParams("Pendulum-v1", map[string]float64{"g": 11.81})
	fmt.Println(env.Params()["g"])
	// Output:
	// Pendulum-v1 parameter "gravity": unknown parameter (valid: g, m, l, dt, max_speed, max_torque, torque_scale, damping, obs_noise_std, max_episode_steps)
	// 11.81
}

// The paper's client 3 of Acrobot-v1, with observation noise seeded by 42.
func ExampleClientEnv() {
	p, _ := classic.ClientParams("Acrobot-v1", 3)
	fmt.Printf("masses %.2f, torque scale %.4f, noise sd %.3f\n", p["link_mass_1"], p["torque_scale"], p["obs_noise_std"])
	env, _ := classic.ClientEnv("Acrobot-v1", 3, 42)
	obs := env.Reset(7)
	fmt.Println(len(obs))
	// Output:
	// masses 1.15, torque scale 1.3225, noise sd 0.015
	// 6
}

// Step 8 copies in lock step with automatic reset.
func ExampleNewVector() {
	copies := make([]envs.Env, 8)
	for k := range copies {
		copies[k], _ = classic.ClientEnv("CartPole-v1", k%6, uint64(k))
	}
	v := classic.NewVector(copies)
	v.Reset(1)
	actions := make([]float64, v.Len()*v.ActDim())
	episodes := 0
	for range 1000 {
		_, _, term, trunc := v.Step(actions) // always push left
		for k := range term {
			if term[k] || trunc[k] {
				episodes++
			}
		}
	}
	fmt.Println(episodes > 8*1000/60)
	// Output:
	// true
}
