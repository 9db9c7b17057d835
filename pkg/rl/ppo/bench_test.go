package ppo

import (
	"context"
	"testing"
)

// benchmarkTrain measures PPO training throughput (environment steps per
// second including the updates) with stable-baselines3's default settings.
func benchmarkTrain(b *testing.B, env string, workers int) {
	cfg, _ := Preset("sb3")
	tr, err := NewTrainer(cfg, classicMaker(b, env), Options{Seed: 1, Workers: workers})
	if err != nil {
		b.Fatal(err)
	}
	// One warm-up rollout so that every buffer is allocated.
	if err := tr.Learn(context.Background(), cfg.NSteps); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := tr.Steps()
	for i := 0; i < b.N; i++ {
		if err := tr.Learn(context.Background(), tr.Steps()+cfg.NSteps*cfg.NEnvs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tr.Steps()-start)/b.Elapsed().Seconds(), "steps/s")
}

func BenchmarkTrain_CartPole_SB3Defaults(b *testing.B)         { benchmarkTrain(b, "CartPole-v1", 2) }
func BenchmarkTrain_Pendulum_SB3Defaults(b *testing.B)         { benchmarkTrain(b, "Pendulum-v1", 2) }
func BenchmarkTrain_CartPole_SB3Defaults_1Worker(b *testing.B) { benchmarkTrain(b, "CartPole-v1", 1) }
func BenchmarkTrain_Pendulum_SB3Defaults_1Worker(b *testing.B) { benchmarkTrain(b, "Pendulum-v1", 1) }
