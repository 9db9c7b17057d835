package main

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbinet/npyio/npy"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"
)

// TestRewardDistanceCommand runs "fedirl reward distance" on a tiny spec and
// checks the printed distance against irl.EPIC, that θ (as JSON or .npy)
// and its reward vector (flat or (S, A)) give the same distance, and that
// bad inputs name the file and the problem.
func TestRewardDistanceCommand(t *testing.T) {
	const S, A, d = 5, 2, 3
	rng := rand.New(rand.NewPCG(5, 5))
	m := mdptest.RandomMDP(5, S, A, 2, 1, 0.9, 0)
	phi := mat.NewDense(S*A, d, nil)
	for k := 0; k < S*A; k++ {
		for j := 0; j < d; j++ {
			phi.Set(k, j, rng.NormFloat64())
		}
	}
	thetaA := []float64{0.5, -1, 2}
	rA := make([]float64, S*A)
	mat.NewVecDense(S*A, rA).MulVec(phi, mat.NewVecDense(d, thetaA))
	rB := make([]float64, S*A)
	for k := range rB {
		rB[k] = rng.NormFloat64()
	}

	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	writeNPY := func(name string, v any) string {
		f, err := os.Create(file(name))
		if err != nil {
			t.Fatal(err)
		}
		if err := npy.Write(f, v); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return file(name)
	}
	writeFile := func(name, body string) string {
		if err := os.WriteFile(file(name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return file(name)
	}
	spec := file("mdp.json")
	if err := irl.WriteSpecFile(spec, m, phi); err != nil {
		t.Fatal(err)
	}
	thetaJSON, err := json.Marshal(map[string]any{"theta": thetaA, "iterations": 7, "converged": true})
	if err != nil {
		t.Fatal(err)
	}
	aJSON := writeFile("a.json", string(thetaJSON))
	aTheta := writeNPY("a_theta.npy", thetaA)
	aReward := writeNPY("a_reward.npy", rA)
	bReward := writeNPY("b_reward.npy", rB)
	bMatrix := writeNPY("b_matrix.npy", mat.NewDense(S, A, rB))

	run := func(a, b string) (rewardDistanceOutput, error) {
		out := file("out.json")
		os.Remove(out)
		rootCmd.SetArgs([]string{"reward", "distance", "--spec", spec, "--coverage", "model", "--demos", "", "--out", out, a, b})
		if err := rootCmd.Execute(); err != nil {
			return rewardDistanceOutput{}, err
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var got rewardDistanceOutput
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("output %s: %v", data, err)
		}
		return got, nil
	}

	want, err := irl.EPIC(m, rA, rB, irl.EPICOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want.Distance < 0.05 {
		t.Fatalf("test rewards too close (distance %g) to tell inputs apart", want.Distance)
	}
	for _, c := range []struct{ name, a, b string }{
		{"θ json vs reward", aJSON, bReward},
		{"θ npy vs reward", aTheta, bReward},
		{"reward vs reward", aReward, bReward},
		{"θ json vs (S,A) reward", aJSON, bMatrix},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := run(c.a, c.b)
			if err != nil {
				t.Fatal(err)
			}
			approx.Equal(t, "epic", *got.EPIC, want.Distance, 1e-14, 0)
			approx.Equal(t, "pearson", *got.Pearson, want.Pearson, 1e-14, 0)
			if got.Coverage != "model" || !strings.Contains(got.Description, "4 non-terminal states") {
				t.Errorf("coverage %q, %q: want model, describing the 4 non-terminal states", got.Coverage, got.Description)
			}
		})
	}
	// Swapping the arguments gives the same distance (EPIC is symmetric).
	if got, err := run(bReward, aJSON); err != nil || !approx.Close(*got.EPIC, want.Distance, 1e-14, 0) {
		t.Fatalf("swapped: %+v, %v; want %g", got, err, want.Distance)
	}

	badHeader := writeFile("bad_header.npy", "\x93NUMPY\x01\x00\x04\x00abcd")
	truncated := writeFile("truncated.npy", "")
	if data, err := os.ReadFile(bReward); err != nil {
		t.Fatal(err)
	} else {
		truncated = writeFile("truncated.npy", string(data[:len(data)-8]))
	}
	nan := append([]float64(nil), rB...)
	nan[3] = math.NaN()
	for _, c := range []struct {
		name, a, b, want string
	}{
		{"short θ", writeFile("short.json", `{"theta": [1, 2]}`), bReward, "short.json: theta has 2 entries, but the spec's features have d = 3 columns"},
		{"no θ", writeFile("notheta.json", `{"weights": [1, 2, 3]}`), bReward, `notheta.json: want a JSON array of numbers or an object with a "theta" array`},
		{"wrong shape", aJSON, writeNPY("wrong.npy", []float64{1, 2, 3, 4}), "wrong.npy: shape [4]: want θ of length d = 3, a reward of length states*actions = 10"},
		{"float32", aJSON, writeNPY("f32.npy", make([]float32, S*A)), "f32.npy: dtype <f4: want float64"},
		{"malformed header", aJSON, badHeader, "bad_header.npy: not a .npy file"},
		{"truncated", aJSON, truncated, "truncated.npy: 72 data bytes after the header, want 8×10"},
		{"NaN", aJSON, writeNPY("nan.npy", nan), "nan.npy: entry 3 = NaN is not finite"},
		{"extension", aJSON, writeFile("b.csv", "1,2"), "b.csv: unknown extension"},
		{"missing", aJSON, file("absent.npy"), "absent.npy"},
		{"constant", writeNPY("const.npy", make([]float64, S*A)), bReward, "const.npy (r1)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := run(c.a, c.b)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// TestRewardDistanceCoverages runs "fedirl reward distance" under each
// --coverage and --coverage all on a chain MDP, checks each distance against
// irl.EPIC with the same coverage (the demonstrations' visits counted here),
// that a reward constant on the demonstrations' support is reported as
// undefined (null with the reason, not 0) under all and as an error alone,
// and that --coverage and --demos must agree.
func TestRewardDistanceCoverages(t *testing.T) {
	// 0 → 1 → 2 → 3 (terminal); action 0 stays, action 1 moves on.
	b := mdp.NewBuilder(4, 2)
	b.Gamma = 0.9
	b.SetTerminal(3)
	for s := 0; s < 4; s++ {
		b.AddTransition(s, 0, s, 1)
		b.AddTransition(s, 1, min(s+1, 3), 1)
	}
	b.Init = []float64{1, 0, 0, 0}
	m, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	phi := mat.NewDense(8, 2, []float64{1, 0, 0, 1, 1, 1, 0, 2, 2, 0, 1, 3, 0, 0, 0, 0})
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	spec := file("mdp.json")
	if err := irl.WriteSpecFile(spec, m, phi); err != nil {
		t.Fatal(err)
	}
	// The demonstrations stay in states 0 and 1: never in the terminal state.
	demos := []irl.Trajectory{{States: []int{0, 0, 1, 1}, Actions: []int{0, 1, 0}}, {States: []int{0, 1}, Actions: []int{1}}}
	demoFile := file("demos.jsonl")
	if err := irl.WriteTrajectoriesFile(demoFile, demos); err != nil {
		t.Fatal(err)
	}
	visits := []float64{3, 1, 0, 0} // counted by hand: states where an action is taken
	writeReward := func(name string, r []float64) string {
		f, err := os.Create(file(name))
		if err != nil {
			t.Fatal(err)
		}
		if err := npy.Write(f, mat.NewDense(4, 2, r)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return file(name)
	}
	rA := []float64{0.3, -1, 2, 0.5, -0.7, 1.1, 0, 0}
	rB := []float64{1, 0.2, -0.4, 0.9, 0.1, 2, 0, 0}
	rC := []float64{1, 1, 1, 1, 1, 1, 0, 0} // constant per step
	a, bb, c := writeReward("a.npy", rA), writeReward("b.npy", rB), writeReward("c.npy", rC)

	run := func(coverage, demos, x, y string) ([]byte, error) {
		out := file("out.json")
		os.Remove(out)
		rootCmd.SetArgs([]string{"reward", "distance", "--spec", spec, "--coverage", coverage, "--demos", demos, "--out", out, x, y})
		if err := rootCmd.Execute(); err != nil {
			return nil, err
		}
		return os.ReadFile(out)
	}
	want := func(cov irl.Coverage, r1, r2 []float64) irl.EPICResult {
		o := irl.EPICOptions{Coverage: cov}
		if cov == irl.CoverageDemonstrations {
			o.StateWeights = visits
		}
		res, err := irl.EPIC(m, r1, r2, o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, cov := range irl.Coverages() {
		demos := ""
		if cov == irl.CoverageDemonstrations {
			demos = demoFile
		}
		data, err := run(string(cov), demos, a, bb)
		if err != nil {
			t.Fatal(err)
		}
		var got rewardDistanceOutput
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		w := want(cov, rA, rB)
		if got.Coverage != string(cov) || got.EPIC == nil {
			t.Fatalf("--coverage %s: %s", cov, data)
		}
		approx.Equal(t, string(cov)+" epic", *got.EPIC, w.Distance, 1e-14, 0)
		approx.Equal(t, string(cov)+" pearson", *got.Pearson, w.Pearson, 1e-14, 0)
	}

	// all: three entries by name; the constant reward is undefined on the demonstrations only.
	data, err := run("all", demoFile, c, a)
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]rewardDistanceOutput
	if err := json.Unmarshal(data, &all); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	if len(all) != 3 {
		t.Fatalf("--coverage all wrote %d entries: %s", len(all), data)
	}
	for _, cov := range []irl.Coverage{irl.CoverageModel, irl.CoverageUniform} {
		got := all[string(cov)]
		if got.EPIC == nil {
			t.Fatalf("%s: undefined: %s", cov, data)
		}
		approx.Equal(t, string(cov)+" epic of the constant reward", *got.EPIC, want(cov, rC, rA).Distance, 1e-14, 0)
	}
	d := all[string(irl.CoverageDemonstrations)]
	if d.EPIC != nil || d.Pearson != nil || !strings.Contains(d.Undefined, "c.npy (r1)") || !strings.Contains(d.Undefined, "constant after canonicalization") {
		t.Fatalf("demonstrations entry %+v: want null with the reason naming c.npy", d)
	}
	if !strings.Contains(string(data), `"epic": null`) {
		t.Fatalf("undefined EPIC not written as null: %s", data)
	}
	if !strings.Contains(d.Description, "2 trajectories of demos.jsonl (2 distinct non-terminal states, 4 steps)") {
		t.Fatalf("description %q", d.Description)
	}

	for _, e := range []struct{ coverage, demos, want string }{
		{"demonstrations", demoFile, "a.npy (r2) on"},
		{"all", "", "--coverage all needs --demos"},
		{"demonstrations", "", "--coverage demonstrations needs --demos"},
		{"uniform", demoFile, "is used only by --coverage demonstrations or all, not uniform"},
		{"on-policy", "", `--coverage "on-policy": want model, uniform, demonstrations or all`},
		{"demonstrations", file("absent.jsonl"), "absent.jsonl"},
	} {
		if _, err := run(e.coverage, e.demos, c, a); err == nil || !strings.Contains(err.Error(), e.want) {
			t.Errorf("--coverage %s --demos %q: error = %v, want it to contain %q", e.coverage, e.demos, err, e.want)
		}
	}
}
