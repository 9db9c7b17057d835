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
		rootCmd.SetArgs([]string{"reward", "distance", "--spec", spec, "--out", out, a, b})
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
			approx.Equal(t, "epic", got.EPIC, want.Distance, 1e-14, 0)
			approx.Equal(t, "pearson", got.Pearson, want.Pearson, 1e-14, 0)
			if !strings.Contains(got.Coverage, "4 non-terminal states") {
				t.Errorf("coverage %q does not describe the 4 non-terminal states", got.Coverage)
			}
		})
	}
	// Swapping the arguments gives the same distance (EPIC is symmetric).
	if got, err := run(bReward, aJSON); err != nil || !approx.Close(got.EPIC, want.Distance, 1e-14, 0) {
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
