package control

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// TestLunarLadderComputed runs a tiny LunarLander study (experts of one
// update of SB3's PPO preset, 3 rollouts, 2 clones per cell and action
// pooled with the rollouts' own steps, a 3⁴·1⁴ lattice)
// and checks that the ladder's rungs (a) and (b) are computed on the replay
// model: every ladder unit is available with a finite planner return and
// an R² in [0, 1], the projected method is evaluated, the summary's
// validation has numbers for (a), (b) and the projection, and the
// fidelity units score the learned rewards on the same model (a defined
// EPIC distance under the model coverage).
func TestLunarLadderComputed(t *testing.T) {
	const env = "LunarLanderContinuous-v3"
	c := tinyLunarConfig()
	dir := t.TempDir()
	st := runStudy(t, c, dir, 2, Shard{})
	for client := range 3 {
		u, _, err := st.ladderUnit(env, "paper", client, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		var f LadderFile
		if err := readJSON(u.path(st.units), &f); err != nil {
			t.Fatal(err)
		}
		if !f.Available || math.IsNaN(f.PlannerReturn) || f.PlannerReturn == 0 || !(f.ProjectionR2 >= 0 && f.ProjectionR2 <= 1+1e-12) || len(f.Theta) == 0 {
			t.Fatalf("client %d ladder: %+v, want rungs (a) and (b) computed", client, f)
		}
		fu, _, _, err := st.fidelityUnit(env, "paper", client, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		var fid FidelityFile
		if err := readJSON(fu.path(st.units), &fid); err != nil {
			t.Fatal(err)
		}
		if len(fid.EPIC) != len(st.fidelityMethods(client)) || fid.DemoSteps == 0 {
			t.Fatalf("client %d fidelity: %+v, want every learned reward scored on the demonstrations", client, fid)
		}
		for meth, byCov := range fid.EPIC {
			d := byCov[irl.CoverageModel]
			if d == nil || !(*d >= 0 && *d <= 1) {
				t.Fatalf("client %d fidelity: %s's EPIC under the model coverage is %v, want a distance in [0, 1]", client, meth, d)
			}
		}
	}
	eu, _, err := st.evalUnit(evalJob{env, "paper", MethodProjected, c.Seed, 0})
	if err != nil {
		t.Fatal(err)
	}
	if !exists(eu.path(st.units)) {
		t.Fatal("the projected reward was not evaluated")
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Validation []Validation `json:"validation"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Validation) != 1 || sum.Validation[0].PlannerTrueNormalized == nil || sum.Validation[0].ProjectedTrueNormalized == nil || sum.Validation[0].ProjectionR2 == nil {
		t.Fatalf("validation %+v, want rungs (a) and (b) with numbers", sum.Validation)
	}
}

// tinyLunarConfig is the tiny LunarLander study of TestLunarLadderComputed.
func tinyLunarConfig() Config {
	const env = "LunarLanderContinuous-v3"
	c := QuickConfig()
	c.Envs = []string{env}
	c.NumberOfClients, c.HeldOutClients, c.NumberOfSeeds = 2, 1, 1
	c.EpisodesPerClient = 2
	c.Env = EnvConfigs{env: {TotalExpertSteps: 1024, IRLIterations: 2, EvaluationSteps: 1024, Features: tasks.FeaturesPotential,
		ExpertPreset: "sb3", EvaluationPreset: "sb3",
		Bins: map[string]int{"ll-x": 3, "ll-y": 3, "ll-vx": 3, "ll-vy": 3}}}
	c.Lattices = map[string][]string{env: {"paper"}}
	c.ModelRollouts = RolloutConfig{Episodes: 3, Epsilon: 0.3, Clones: 2, Count: true}
	c.Methods = []string{MethodTrue, MethodLocal, MethodMean, MethodProjected}
	c.Barycenter.BarycenterIterations = 2
	c.Ladder.Episodes = 1
	c.LogEvery = 1024
	return c
}

// TestRolloutsLeaveSampledKeysAlone: the ladder, local IRL and fidelity
// specs of the environments whose state can be set carry no rollout
// settings or expert key (their unit keys, and so the committed results'
// cached units, do not depend on model_rollouts), while LunarLander's
// carry both and change with model_rollouts.
func TestRolloutsLeaveSampledKeysAlone(t *testing.T) {
	c := DefaultConfig()
	s := &Study{cfg: c}
	for _, env := range append(slices.Clone(c.Envs), "LunarLanderContinuous-v3") {
		counted := env == "LunarLanderContinuous-v3"
		l := c.Lattices[env][0]
		lu, lsp, err := s.ladderUnit(env, l, 0, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		iu, isp, err := s.irlUnit(env, l, 0, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		fu, fsp, _, err := s.fidelityUnit(env, l, 0, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		for name, sp := range map[string]any{"ladder": lsp, "irl": isp, "fidelity": fsp} {
			b, err := json.Marshal(sp)
			if err != nil {
				t.Fatal(err)
			}
			has := strings.Contains(string(b), `"rollouts":`)
			if name != "irl" {
				has = has && strings.Contains(string(b), `"expert":`)
			}
			if has != counted {
				t.Errorf("%s %s spec: rollout settings present = %v, want %v: %s", env, name, has, counted, b)
			}
		}
		s2 := &Study{cfg: c}
		s2.cfg.ModelRollouts.Clones++
		lu2, _, _ := s2.ladderUnit(env, l, 0, c.Seed)
		iu2, _, _ := s2.irlUnit(env, l, 0, c.Seed)
		fu2, _, _, _ := s2.fidelityUnit(env, l, 0, c.Seed)
		if changed := lu2.key != lu.key && iu2.key != iu.key && fu2.key != fu.key; changed != counted {
			t.Errorf("%s: unit keys changed with model_rollouts.clones = %v, want %v", env, changed, counted)
		}
		if !counted && (lu2.key != lu.key || iu2.key != iu.key || fu2.key != fu.key) {
			t.Errorf("%s: a unit key depends on model_rollouts", env)
		}
	}
}
