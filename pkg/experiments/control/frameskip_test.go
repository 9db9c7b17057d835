package control

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/registry"
)

// TestFrameSkipStudy runs the tiny LunarLander study of
// TestLunarLadderComputed with env.<id>.frame_skip 3 and checks the hold
// where the study applies it: every demonstration step equals 3 frames of
// a second simulator (reset with the episode's seed, given the recorded
// action 3 times, stopping where the episode ends): the same next
// observation bit for bit and the sum of the 3 rewards; the lattice model
// discounts γ³ per lattice step and its time-limit horizon is ⌈1000/3⌉;
// the ladder's rungs are computed (irl.horizon time-limit); and the experts (PPO on every frame)
// are the same units as without the hold.
func TestFrameSkipStudy(t *testing.T) {
	const env, skip = "LunarLanderContinuous-v3", 3
	c := tinyLunarConfig()
	ec := c.Env[env]
	ec.FrameSkip = skip
	c.Env = EnvConfigs{env: ec}
	c.Methods = []string{MethodTrue, MethodProjected}
	c.IRL.Horizon = "time-limit"
	st := runStudy(t, c, t.TempDir(), 2, Shard{})
	plain := &Study{cfg: tinyLunarConfig()}
	for _, client := range c.AllClients() {
		du, dsp, eu, es, err := st.demosUnit(env, client, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		if dsp.FrameSkip != skip {
			t.Fatalf("client %d demonstrations spec: frame skip %d, want %d", client, dsp.FrameSkip, skip)
		}
		if peu, _, _ := plain.expertUnit(env, client, c.Seed); peu.key != eu.key {
			t.Errorf("client %d: the expert unit's key changed with frame_skip (%s, %s)", client, eu.key, peu.key)
		}
		d, err := ReadDemos(du.path(st.units))
		if err != nil {
			t.Fatal(err)
		}
		sim, err := registry.Make(env, client, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		frames, at := 0, 0
		for ep, n := range d.Lengths {
			obsRow := at + ep // episode ep's observations start after ep earlier resets
			if got := sim.Reset(seedOf(es.Seed, "demo-reset", es.Client, ep)); !slices.Equal(got, d.Obs[obsRow]) {
				t.Fatalf("client %d episode %d: reset observation differs from the recorded one", client, ep)
			}
			for i := range n {
				var sum float64
				var obs []float64
				var end bool
				for range skip {
					o, r, term, trunc := sim.Step(d.Acts[at+i])
					obs, sum, end = o, sum+r, term || trunc
					frames++
					if end {
						break
					}
				}
				if !slices.Equal(obs, d.Obs[obsRow+i+1]) || sum != d.Rews[at+i] {
					t.Fatalf("client %d episode %d step %d: recorded (obs %v, reward %v), %d frames of the simulator (%v, %v)",
						client, ep, i, d.Obs[obsRow+i+1], d.Rews[at+i], skip, obs, sum)
				}
				if end != (i == n-1) {
					t.Fatalf("client %d episode %d: the simulator's episode ended at step %v of %d", client, ep, i, n)
				}
			}
			at += n
		}
		if frames <= len(d.Acts) {
			t.Errorf("client %d: %d frames for %d demonstration steps: the actions were not held", client, frames, len(d.Acts))
		}
		lu, lsp, err := st.ladderUnit(env, "paper", client, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		_, plsp, _ := plain.ladderUnit(env, "paper", client, c.Seed)
		if want := math.Pow(plsp.Model.Gamma, skip); math.Abs(lsp.Model.Gamma-want) > 1e-15 || lsp.Rollouts.FrameSkip != skip {
			t.Errorf("client %d ladder spec: γ %v and frame skip %d, want γ %v = %v³ and %d", client, lsp.Model.Gamma, lsp.Rollouts.FrameSkip, want, plsp.Model.Gamma, skip)
		}
		var f LadderFile
		if err := readJSON(lu.path(st.units), &f); err != nil {
			t.Fatal(err)
		}
		if !f.Available || math.IsNaN(f.PlannerReturn) || f.PlannerReturn == 0 {
			t.Errorf("client %d ladder: %+v, want rung (a) computed", client, f)
		}
	}
	if h, err := st.horizon(env); err != nil || h != 334 {
		t.Errorf("horizon %d (%v), want ⌈1000/3⌉ = 334", h, err)
	}
}

// TestFrameSkipConfig: an unset frame_skip and an explicit 1 give the
// same unit keys for every environment of the default study and for
// LunarLander (so cached units stay valid), frame_skip 4 changes
// LunarLander's demonstrations, ladder, local IRL and fidelity keys but not
// its expert's, and 0, a negative value and a value > 1 on an environment
// whose model is sampled are refused, naming the key.
func TestFrameSkipConfig(t *testing.T) {
	const lunarEnv = "LunarLanderContinuous-v3"
	base := DefaultConfig()
	base.Envs = append(base.Envs, lunarEnv)
	base.Env = cloneEnv(base.Env)
	lec := base.Env[lunarEnv]
	lec.FrameSkip, lec.EvaluationFrameSkip = 0, 0 // unset (the preset's are 8)
	base.Env[lunarEnv] = lec
	keys := func(c Config, env string) map[string]string {
		t.Helper()
		s := &Study{cfg: c}
		l := c.Lattices[env][0]
		out := map[string]string{}
		eu, _, err := s.expertUnit(env, 0, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		du, _, _, _, err := s.demosUnit(env, 0, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		lu, _, err := s.ladderUnit(env, l, 0, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		iu, _, err := s.irlUnit(env, l, 0, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		fu, _, _, err := s.fidelityUnit(env, l, 0, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		vu, _, err := s.evalUnit(evalJob{env, l, MethodLocal, c.Seed, 0})
		if err != nil {
			t.Fatal(err)
		}
		out["expert"], out["demos"], out["ladder"], out["irl"], out["fidelity"], out["eval"] = eu.key, du.key, lu.key, iu.key, fu.key, vu.key
		return out
	}
	load := func(yaml string) (Config, error) { return loadConfigText(t, yaml, base) }
	for _, env := range base.Envs {
		one, err := load("env:\n  " + env + ":\n    frame_skip: 1\n")
		if err != nil {
			t.Fatal(err)
		}
		if one.Env[env].FrameSkip != 1 || one.Env[env].TotalExpertSteps != base.Env[env].TotalExpertSteps {
			t.Fatalf("%s: frame_skip 1 merged into %+v", env, one.Env[env])
		}
		sameKeys(t, keys, base, one, env, "frame_skip 1")
	}
	four, err := load("env:\n  " + lunarEnv + ":\n    frame_skip: 4\n")
	if err != nil {
		t.Fatal(err)
	}
	k0, k4 := keys(base, lunarEnv), keys(four, lunarEnv)
	for kind, k := range k0 {
		if changed := k4[kind] != k; changed != (kind != "expert") {
			t.Errorf("%s %s unit: key changed with frame_skip 4 = %v, want %v", lunarEnv, kind, changed, kind != "expert")
		}
	}
	for _, tc := range []struct{ yaml, want string }{
		{"env:\n  " + lunarEnv + ":\n    frame_skip: 0\n", "frame_skip: 0"},
		{"env:\n  " + lunarEnv + ":\n    frame_skip: -2\n", "frame_skip: -2"},
		{"env:\n  Pendulum-v1:\n    frame_skip: 2\n", "Pendulum-v1.frame_skip: 2"},
	} {
		if _, err := load(tc.yaml); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %q: error %v, want one naming %q", tc.yaml, err, tc.want)
		}
	}
}

// TestEvaluationFrameSkipConfig: an unset evaluation_frame_skip and an
// explicit 1 give the same evaluation keys for every environment of the
// default study and for LunarLander; on LunarLander (frame_skip 8) an
// evaluation_frame_skip of 8 changes the evaluation units' keys (of the
// true reward too) and no other unit's, and their PPO acts through a hold
// of 8 frames; 0, a negative value and a value other than 1 and frame_skip
// are refused, naming the key; the cost model prices the held frames.
func TestEvaluationFrameSkipConfig(t *testing.T) {
	const lunarEnv = "LunarLanderContinuous-v3"
	base := DefaultConfig()
	base.Envs = append(base.Envs, lunarEnv)
	base.Env = cloneEnv(base.Env)
	lec := base.Env[lunarEnv]
	lec.FrameSkip, lec.EvaluationFrameSkip = 8, 0
	base.Env[lunarEnv] = lec
	keys := func(c Config, env string) map[string]string {
		t.Helper()
		s := &Study{cfg: c}
		l := c.Lattices[env][0]
		out := map[string]string{}
		for _, m := range []string{MethodTrue, MethodProjected, MethodLocal} {
			u, _, err := s.evalUnit(evalJob{env, l, m, c.Seed, 0})
			if err != nil {
				t.Fatal(err)
			}
			out["eval "+m] = u.key
		}
		lu, _, err := s.ladderUnit(env, l, 0, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		iu, _, err := s.irlUnit(env, l, 0, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		out["ladder"], out["irl"] = lu.key, iu.key
		return out
	}
	load := func(yaml string) (Config, error) { return loadConfigText(t, yaml, base) }
	for _, env := range base.Envs {
		one, err := load("env:\n  " + env + ":\n    evaluation_frame_skip: 1\n")
		if err != nil {
			t.Fatal(err)
		}
		sameKeys(t, keys, base, one, env, "evaluation_frame_skip 1")
	}
	eight, err := load("env:\n  " + lunarEnv + ":\n    evaluation_frame_skip: 8\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := eight.Env[lunarEnv]; got.EvaluationFrameSkip != 8 || got.FrameSkip != 8 || got.EvaluationSteps != lec.EvaluationSteps {
		t.Fatalf("evaluation_frame_skip 8 merged into %+v", got)
	}
	k0, k8 := keys(base, lunarEnv), keys(eight, lunarEnv)
	for kind, k := range k0 {
		if changed := k8[kind] != k; changed != strings.HasPrefix(kind, "eval") {
			t.Errorf("%s %s unit: key changed with evaluation_frame_skip 8 = %v", lunarEnv, kind, changed)
		}
	}
	s := &Study{cfg: eight}
	_, sp, err := s.evalUnit(evalJob{lunarEnv, eight.Lattices[lunarEnv][0], MethodTrue, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	e, err := heldMaker(clientMaker(lunarEnv, 0, 1), sp.FrameSkip)(0)
	if fs, ok := e.(*envs.FrameSkip); err != nil || !ok || fs.Skip != 8 {
		t.Fatalf("evaluation environment %T (%v), want a hold of 8 frames", e, err)
	}
	// The cost model prices the held frames: (k − 1)·perHeldFrame per decision.
	cost := func(c Config) float64 {
		t.Helper()
		s := &Study{cfg: c}
		u, _, err := s.evalUnit(evalJob{lunarEnv, "-", MethodTrue, 1, 0})
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.unitCost(task{u: u, env: lunarEnv, lattice: "-"})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	steps := float64(lec.EvaluationSteps)
	if got, want := cost(base), steps*perStep["eval"][lunarEnv]; math.Abs(got-want) > 1e-9*want {
		t.Errorf("evaluation unit every frame priced %g s, want %g", got, want)
	}
	if got, want := cost(eight), steps*(perStep["eval"][lunarEnv]+7*perHeldFrame[lunarEnv]); math.Abs(got-want) > 1e-9*want {
		t.Errorf("evaluation unit held 8 frames priced %g s, want %g", got, want)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"env:\n  " + lunarEnv + ":\n    evaluation_frame_skip: 0\n", "evaluation_frame_skip: 0"},
		{"env:\n  " + lunarEnv + ":\n    evaluation_frame_skip: -8\n", "evaluation_frame_skip: -8"},
		{"env:\n  " + lunarEnv + ":\n    evaluation_frame_skip: 4\n", "evaluation_frame_skip: 4"},
		{"env:\n  Pendulum-v1:\n    evaluation_frame_skip: 2\n", "Pendulum-v1.evaluation_frame_skip: 2"},
	} {
		if _, err := load(tc.yaml); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %q: error %v, want one naming %q", tc.yaml, err, tc.want)
		}
	}
}

// loadConfigText loads the config text yaml over base, as LoadConfig loads
// a file.
func loadConfigText(t *testing.T, yaml string, base Config) (Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return LoadConfig(p, base)
}

// sameKeys reports each unit whose key for env differs between the configs
// without and with the setting what.
func sameKeys(t *testing.T, keys func(Config, string) map[string]string, without, with Config, env, what string) {
	t.Helper()
	k0, k1 := keys(without, env), keys(with, env)
	for kind, k := range k0 {
		if k1[kind] != k {
			t.Errorf("%s %s unit: key %s with %s, %s without", env, kind, k1[kind], what, k)
		}
	}
}
