package ppo

// CPUSecondsPerStep is the measured CPU time per environment step of PPO
// training, updates included, with the environment's own preset, float32
// networks and one update goroutine, on the project's machine (Intel Xeon,
// AVX-512, 2 vCPUs sharing one core): what "fedirl ppo train --plan"
// prices a run with. BipedalWalker-v3: BenchmarkTrain_BipedalWalker_Zoo,
// 6,769 steps per CPU-second (2026-12-02, load average 9; a 131,072-step
// "ppo train" smoke run gave 9,700), so an RL Zoo expert of 5e6 steps costs
// about 12 CPU-minutes on one core. The hardcore preset's networks and
// rollout are the same size; its rate is the walker's.
var CPUSecondsPerStep = map[string]float64{
	"BipedalWalker-v3":         1 / 6769.0,
	"BipedalWalkerHardcore-v3": 1 / 6769.0,
}
