package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

// TestParseFlatJSONNumbers checks the fast path of JSON measures against
// encoding/json on random flat arrays (every float64 formatting Go and
// Python write), and that everything else falls back.
func TestParseFlatJSONNumbers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		x := make([]float64, rng.IntN(50))
		for i := range x {
			x[i] = (rng.Float64() - 0.5) * float64(int(1)<<rng.IntN(60)) / float64(int(1)<<rng.IntN(60))
		}
		b, _ := json.Marshal(x)
		if trial%2 == 1 {
			b = []byte(strings.ReplaceAll(string(b), ",", " ,\n\t"))
		}
		got, ok := parseFlatJSONNumbers(b)
		var want []float64
		json.Unmarshal(b, &want)
		if !ok || !slices.Equal(got, want) {
			t.Fatalf("%s: %v %v, want %v", b, got, ok, want)
		}
	}
	for _, in := range []string{`[1,]`, `[1 2]`, `[[1]]`, `["a"]`, `[NaN]`, `[1e999]`, `[1]x`, `[+1]`, `[.5]`, `[1`} {
		if _, ok := parseFlatJSONNumbers([]byte(in)); ok {
			t.Errorf("%s: parsed by the fast path", in)
		}
	}
}

// TestJSONMeasureErrors: a measure file that is not an array of numbers is
// named by kind and place, never dumped whole; NaN as Python writes it is
// named; nested arrays still work.
func TestJSONMeasureErrors(t *testing.T) {
	big := `{"actions": 4, "features": [` + strings.Repeat(`[1, 0.17677669529663687], `, 200) + `[1, 0]]}`
	for _, tc := range []struct{ in, want string }{
		{big, "holds a JSON object, not an array of numbers"},
		{`["a", 1]`, `non-number "a" at $[0]`},
		{`[[1, {"x": [1, 2, 3]}], [1, 2]]`, "non-number (a JSON object) at $[0][1]"},
		{`[NaN, 1]`, "line 1 column 2: NaN is not a JSON number at $[0] (Python's json.dump writes NaN and infinities so by default)"},
		{"[1,\n -Infinity]", "line 2 column 2: -Infinity is not a JSON number"},
		{``, "the file is empty"},
	} {
		_, _, err := otParseJSONArray([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 400 {
			t.Errorf("%.40s…: %v, want %q in a short message", tc.in, err, tc.want)
		}
	}
	x, shape, err := otParseJSONArray([]byte(`[[1, 2, 3], [4, 5, 6]]`))
	if err != nil || !slices.Equal(shape, []int{2, 3}) || !slices.Equal(x, []float64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("nested: %v %v %v", x, shape, err)
	}
}

// TestNaNInJSONInputsNamed: θ and task specs written by Python's json.dump
// with a NaN are refused naming NaN and where it is.
func TestNaNInJSONInputsNamed(t *testing.T) {
	dir := t.TempDir()
	theta := filepath.Join(dir, "theta-nan.json")
	os.WriteFile(theta, []byte(`{"theta": [NaN, 1]}`), 0o644)
	if _, err := readTheta(theta); err == nil || !strings.Contains(err.Error(), "line 1 column 12: NaN is not a JSON number") {
		t.Errorf("θ with NaN: %v", err)
	}
	spec := filepath.Join(dir, "spec.json")
	os.WriteFile(spec, []byte("{\"id\": \"t\",\n \"probe\": {\"phi\": [[NaN], [1.0]]}}"), 0o644)
	if _, err := readTaskSpecFile(spec); err == nil || !strings.Contains(err.Error(), "line 2 column 21: NaN is not a JSON number at probe.phi[0][0]") {
		t.Errorf("spec with NaN: %v", err)
	}
	// A points task's probe as Python's json.dump writes a NaN coordinate:
	// the point and the coordinate are named.
	os.WriteFile(spec, []byte("{\"id\": \"t\", \"env_family\": \"points\",\n \"probe\": {\"points\": [[0, 1], [2, 3], [4, NaN]], \"phi\": [[1], [2], [3]]}}"), 0o644)
	if _, err := readTaskSpecFile(spec); err == nil || !strings.Contains(err.Error(), "line 2 column 43: NaN is not a JSON number at probe.points[2][1]") {
		t.Errorf("points spec with NaN: %v", err)
	}
	os.WriteFile(spec, []byte("{\"id\": \"t\",\n \"quorum\": \"two\"}"), 0o644)
	if _, err := readTaskSpecFile(spec); err == nil || !strings.Contains(err.Error(), "line 2 column") {
		t.Errorf("spec with a wrong type: %v (want a line and column)", err)
	}
	huge := filepath.Join(dir, "huge.json")
	if f, err := os.Create(huge); err == nil { // sparse: nothing is written
		f.Truncate(maxSpecFileBytes + 1)
		f.Close()
	}
	if _, err := readTaskSpecFile(huge); err == nil || !strings.Contains(err.Error(), "no spec above 33554432 bytes is read") {
		t.Errorf("a spec file above the bound: %v", err)
	}
}

// TestTokenFileAndTaskHints: an empty --token-file is named as empty; an
// Unauthenticated refusal names --task as the first thing to check.
func TestTokenFileAndTaskHints(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.txt")
	os.WriteFile(empty, []byte("\n  \n"), 0o600)
	if _, err := readToken(empty, "alice"); err == nil || !strings.Contains(err.Error(), empty+" is empty") {
		t.Errorf("empty token file: %v", err)
	}
	err := connHint(fmt.Errorf("task grid-5: %w", &federation.Error{Code: federation.CodeUnauthenticated, Msg: "invalid token for client alice on task grid-5"}))
	if !strings.Contains(err.Error(), "invalid token for client alice on task grid-5\n  fix: check --task first") {
		t.Errorf("bad token or task: %v", err)
	}
}

// TestPolicySpacesNameBothEnvironments: a CartPole checkpoint in Pendulum
// is refused naming both environments and both spaces.
func TestPolicySpacesNameBothEnvironments(t *testing.T) {
	e, err := registry.Make("Pendulum-v1", -1, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := &ppo.Policy{ObsDim: 4, Action: envs.Space{N: 2}}
	err = checkPolicySpaces(p, e, "Pendulum-v1", "CartPole-v1")
	want := "trained on CartPole-v1 (actions Discrete(2), 4 observations) and Pendulum-v1 has actions Box(1) and 3 observations"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v, want %q", err, want)
	}
}
