package ppo

import (
	"context"
	"testing"

	"github.com/fedirl/fedirl/pkg/cpuclock"
	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/bipedal"
)

// benchmarkTrain measures PPO training throughput (environment steps per
// second including the updates) with stable-baselines3's default settings,
// for the float32 and the float64 networks side by side in the same run:
// steps/s is wall-clock, steps/cpu-s divides by the CPU time the process
// used (the fairer figure on a shared machine).
//
// GFLOP/s counts the dense layers' multiply-adds as 2 FLOPs each (flopsPerStep:
// per environment step, the rollout's actor and critic forward passes on one
// row plus NEpochs × the actor's and critic's forward and backward passes on
// one minibatch row, the backward being dW for every layer and dX for all but
// the first; biases, activations, losses and Adam are not counted), times
// the wall-clock steps/s. %peak divides it by one core's FMA peak, and
// %peak-cpu does the same for the rate per CPU-second (steps/cpu-s): 2 512-bit
// FMA units × 2 FLOPs × 8 float64 or 16 float32 lanes × 3.0 GHz = 96 GFLOP/s
// float64 (a C AVX-512 FMA loop measures 94–98 on this machine) and 192
// GFLOP/s float32. The machine's two vCPUs share that one core.
//
// With 2 workers the wall-clock rate can be higher only by the overlapped
// critic work. Measured on the project's 2-vCPU machine (2026-11-23, five
// interleaved runs of both variants, -benchtime 10x, wall steps/s, median,
// float64): CartPole 59.4k with 1 worker vs 57.7k with 2, Pendulum 66.9k vs
// 62.1k; every 1-worker run was faster than every 2-worker run on both. The
// split does not pay for its synchronisation on 2 cores, so 1 is the default.
func benchmarkTrain(b *testing.B, env string, workers int) {
	for _, prec := range []Precision{Float32, Float64} {
		b.Run(string(prec), func(b *testing.B) { benchmarkTrainPrec(b, env, workers, prec) })
	}
}

func benchmarkTrainPrec(b *testing.B, env string, workers int, prec Precision) {
	cfg, _ := Preset("sb3")
	tr, err := NewTrainer(cfg, classicMaker(b, env), Options{Seed: 1, Workers: workers, Precision: prec})
	if err != nil {
		b.Fatal(err)
	}
	// One warm-up rollout so that every buffer is allocated.
	if err := tr.Learn(context.Background(), cfg.NSteps); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	c0 := cpuclock.ProcessCPU()
	b.ResetTimer()
	start := tr.Steps()
	for i := 0; i < b.N; i++ {
		if err := tr.Learn(context.Background(), tr.Steps()+cfg.NSteps*cfg.NEnvs); err != nil {
			b.Fatal(err)
		}
	}
	rate := float64(tr.Steps()-start) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "steps/s")
	gflops := rate * flopsPerStep(cfg, tr.pol) / 1e9
	peak := map[Precision]float64{Float32: peakFloat32, Float64: peakFloat64}[prec]
	b.ReportMetric(gflops, "GFLOP/s")
	b.ReportMetric(100*gflops/peak, "%peak")
	cpuRate := float64(tr.Steps()-start) / (cpuclock.ProcessCPU() - c0).Seconds()
	b.ReportMetric(cpuRate, "steps/cpu-s")
	b.ReportMetric(100*cpuRate*flopsPerStep(cfg, tr.pol)/1e9/peak, "%peak-cpu")
}

func BenchmarkTrain_CartPole_SB3Defaults(b *testing.B)         { benchmarkTrain(b, "CartPole-v1", 2) }
func BenchmarkTrain_Pendulum_SB3Defaults(b *testing.B)         { benchmarkTrain(b, "Pendulum-v1", 2) }
func BenchmarkTrain_CartPole_SB3Defaults_1Worker(b *testing.B) { benchmarkTrain(b, "CartPole-v1", 1) }
func BenchmarkTrain_Pendulum_SB3Defaults_1Worker(b *testing.B) { benchmarkTrain(b, "Pendulum-v1", 1) }

// One core's FMA peak in GFLOP/s (see benchmarkTrain).
const (
	peakFloat64 = 96
	peakFloat32 = 192
)

// flopsPerStep returns the dense-layer FLOPs per environment step of PPO with
// cfg on p's networks (see benchmarkTrain): 2·(forward_A + forward_C) for the
// rollout plus 2·NEpochs·(forward + backward of A and C) for the update,
// where forward = Σ_l in_l·out_l and backward = Σ_l in_l·out_l + Σ_{l≥1} in_l·out_l.
func flopsPerStep(cfg Config, p *Policy) float64 {
	macs := func(sizes []int) (fwd, bwd float64) {
		for l := 0; l+1 < len(sizes); l++ {
			m := float64(sizes[l] * sizes[l+1])
			fwd += m
			bwd += m
			if l > 0 {
				bwd += m
			}
		}
		return fwd, bwd
	}
	fa, ba := macs(p.Actor.Sizes)
	fc, bc := macs(p.Critic.Sizes)
	return 2*(fa+fc) + 2*float64(cfg.NEpochs)*(fa+ba+fc+bc)
}

// TestFlopsPerStep checks the documented count by hand for CartPole's sb3 networks (4-64-64-2 and 4-64-64-1).
func TestFlopsPerStep(t *testing.T) {
	cfg, _ := Preset("sb3")
	tr, err := NewTrainer(cfg, classicMaker(t, "CartPole-v1"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	fa, ba := 4.0*64+64*64+64*2, 4.0*64+2*(64*64+64*2)
	fc, bc := 4.0*64+64*64+64, 4.0*64+2*(64*64+64)
	want := 2*(fa+fc) + 2*10*(fa+ba+fc+bc)
	if got := flopsPerStep(cfg, tr.pol); got != want || got != 541312 {
		t.Fatalf("flopsPerStep = %g, want %g (541312)", got, want)
	}
}

// BenchmarkTrain_BipedalWalker_Zoo measures PPO training throughput on
// BipedalWalker-v3 (pkg/envs/bipedal) with RL Zoo's preset (32 copies,
// n_steps 2048, 10 epochs of batch 64, normalized observations and
// rewards), one rollout and update per iteration, float32 networks, one
// update goroutine: steps/cpu-s prices an expert (5e6 steps / rate CPU
// seconds on one core). The first rollout, which allocates the buffers,
// is outside the timer.
func BenchmarkTrain_BipedalWalker_Zoo(b *testing.B) {
	cfg, err := Preset("BipedalWalker-v3")
	if err != nil {
		b.Fatal(err)
	}
	maker := func(int) (envs.Env, error) { return bipedal.New(bipedal.DefaultParams(false)) }
	tr, err := NewTrainer(cfg, maker, Options{Seed: 1, Workers: 1, Precision: Float32})
	if err != nil {
		b.Fatal(err)
	}
	per := cfg.NSteps * cfg.NEnvs
	if err := tr.Learn(context.Background(), per); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	c0 := cpuclock.ProcessCPU()
	b.ResetTimer()
	start := tr.Steps()
	for i := 0; i < b.N; i++ {
		if err := tr.Learn(context.Background(), tr.Steps()+per); err != nil {
			b.Fatal(err)
		}
	}
	steps := float64(tr.Steps() - start)
	cpu := (cpuclock.ProcessCPU() - c0).Seconds()
	b.ReportMetric(steps/b.Elapsed().Seconds(), "steps/s")
	b.ReportMetric(steps/cpu, "steps/cpu-s")
	b.ReportMetric(float64(cfg.TotalSteps)/(steps/cpu)/3600, "expert-cpu-h")
}
