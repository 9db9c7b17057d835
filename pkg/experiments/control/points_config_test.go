package control

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/tasks"
)

// walkerPointsConfig is the smallest study of BipedalWalker-v3 on its point
// probe: 2 training clients and 1 held out, one seed, stable-baselines3's
// default PPO (one env, 2048-step rollouts cut by the budgets) for the
// experts, the learner and the evaluations, 1–2 sample-based iterations,
// a probe of 120 points from 2 episodes of the ε-greedy nominal expert,
// the mean and barycentric fusions on it and a small sample-based EPIC.
func walkerPointsConfig() Config {
	c := microConfig()
	const env = "BipedalWalker-v3"
	c.Envs = []string{env}
	c.Methods = []string{MethodLocal, MethodMean, MethodBarycenter, MethodProjected, MethodTrue}
	batch, mean := 256, 64
	c.Env = EnvConfigs{env: {TotalExpertSteps: 512, IRLIterations: 1, EvaluationSteps: 256, ExpertPreset: "sb3", EvaluationPreset: "sb3",
		Features: tasks.FeaturesWalker, LocalIRL: LocalIRLSample,
		SampleIRL: &SampleIRLConfig{MaxIter: 2, Episodes: 2, PolicySteps: 128, LearningRate: 0.05},
		Probe: &ProbeConfig{Kind: ProbeKindPoints, Policy: ProbeExpert, Epsilon: 0.3, Episodes: 2, Every: 2, MaxPoints: 120,
			FidelityBatch: &batch, FidelityMeanSamples: &mean}}}
	c.Lattices = map[string][]string{env: {LatticePoints}}
	c.LogEvery = 256
	return c
}

// pendulumPointsConfig is the sample micro study (Pendulum, two training
// clients, the sample-based learner) on both the paper lattice and the
// point probe: the same experts, demonstrations and learner, only the
// support differs.
func pendulumPointsConfig() Config {
	c := sampleMicroConfig()
	c.Methods = []string{MethodLocal, MethodMean, MethodBarycenter, MethodTrue}
	ec := c.Env["Pendulum-v1"]
	ec.EvaluationSteps = 1024
	batch, mean := 512, 128
	ec.Probe = &ProbeConfig{Kind: ProbeKindPoints, Policy: ProbeExpert, Epsilon: 0.3, Episodes: 3, Every: 2, MaxPoints: 150,
		FidelityBatch: &batch, FidelityMeanSamples: &mean}
	c.Env["Pendulum-v1"] = ec
	c.Lattices = map[string][]string{"Pendulum-v1": {"paper", LatticePoints}}
	return c
}

// TestPointProbeConfigErrors checks that every bad point-probe setting is
// refused with an error naming its key, that the lattice learner, the
// tabular methods and a probe no lattices entry uses are refused, and that
// a partial probe block merges into the preset's.
func TestPointProbeConfigErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"env: {Pendulum-v1: {probe: {kind: lattice}}}", "env.Pendulum-v1.probe.kind"},
		{"env: {Pendulum-v1: {probe: {policy: greedy}}}", "env.Pendulum-v1.probe.policy"},
		{"env: {Pendulum-v1: {probe: {policy: heuristic}}}", "env.Pendulum-v1.probe.policy: \"heuristic\", want expert or random: Pendulum-v1 has no heuristic controller"},
		{"env: {Pendulum-v1: {probe: {epsilon: 1.5}}}", "env.Pendulum-v1.probe.epsilon"},
		{"env: {Pendulum-v1: {probe: {episodes: 0}}}", "env.Pendulum-v1.probe.episodes"},
		{"env: {Pendulum-v1: {probe: {every: 0}}}", "env.Pendulum-v1.probe.every"},
		{"env: {Pendulum-v1: {probe: {max_points: 1}}}", "env.Pendulum-v1.probe.max_points: 1"},
		{"env: {Pendulum-v1: {probe: {max_points: 100000}}}", "env.Pendulum-v1.probe.max_points: 100000, at most"},
		{"env: {Pendulum-v1: {probe: {fidelity_batch: 1}}}", "env.Pendulum-v1.probe.fidelity_batch"},
		{"env: {Pendulum-v1: {probe: {points: 10}}}", "env.Pendulum-v1.probe.points: unknown key"},
		{"env: {Pendulum-v1: {local_irl: lattice}}", "env.Pendulum-v1.local_irl: \"lattice\": the point probe"},
		{"env: {Pendulum-v1: {features: walker}}", "env.Pendulum-v1.features"},
		{"lattices: {Pendulum-v1: [paper]}", "env.Pendulum-v1.probe: set, but lattices.Pendulum-v1"},
		{"methods: [local, pooled, true]\njoint: {pooled: true}", "methods: \"pooled\""},
		{"methods: [local, joint, true]", "methods: \"joint\" fits the tabular lattice model"},
		{"env: {Pendulum-v1: {demo_start: {state: theta, low: -1, high: 1}}}", "env.Pendulum-v1.demo_start"},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(path, pendulumPointsConfig())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.yaml, err, tc.want)
		}
	}
	noProbe := sampleMicroConfig()
	noProbe.Lattices["Pendulum-v1"] = []string{"paper", LatticePoints}
	if err := noProbe.Validate(); err == nil || !strings.Contains(err.Error(), "set env.Pendulum-v1.probe") {
		t.Errorf("points without a probe block: %v", err)
	}
	walker := walkerPointsConfig()
	walker.Lattices["BipedalWalker-v3"] = []string{"paper", LatticePoints}
	if err := walker.Validate(); err == nil || !strings.Contains(err.Error(), "envs:") {
		t.Errorf("a lattice entry for the walker: %v, want the envs error (no lattice discretisation)", err)
	}
	walker = walkerPointsConfig()
	ec := walker.Env["BipedalWalker-v3"]
	ec.FrameSkip = 2
	walker.Env["BipedalWalker-v3"] = ec
	if err := walker.Validate(); err == nil || !strings.Contains(err.Error(), "lattices.BipedalWalker-v3: points") {
		t.Errorf("the walker held 2 frames: %v, want a refusal (its true step reward is of one frame)", err)
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("env: {Pendulum-v1: {probe: {episodes: 7}}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := pendulumPointsConfig()
	c, err := LoadConfig(path, base)
	if err != nil {
		t.Fatal(err)
	}
	got, orig := c.Env["Pendulum-v1"].Probe, base.Env["Pendulum-v1"].Probe
	if got.Episodes != 7 || got.MaxPoints != orig.MaxPoints || got.Policy != orig.Policy || orig.Episodes == 7 {
		t.Errorf("partial probe block: got %+v over %+v", got, orig)
	}
}
