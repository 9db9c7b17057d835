package irl

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/mdp/mdptest"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/mdp"
)

// tinySpec is a 3-state, 2-action spec with terminal state 2.
const tinySpec = `{"states": 3, "actions": 2, "gamma": 0.9, "terminal": [2],
 "transitions": [[0,0,0,1],[0,1,1,0.9],[0,1,0,0.1],[1,0,0,1],[1,1,2,1]],
 "features": [[1,0],[0,0],[0,0],[0,1],[0,0],[0,0]]}`

func tinyMDP(t *testing.T) (*mdp.MDP, *mat.Dense) {
	t.Helper()
	s, err := ReadSpec(strings.NewReader(tinySpec), "tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	m, phi, err := s.Build("tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	return m, phi
}

func TestReadTrajectoriesErrors(t *testing.T) {
	m, _ := tinyMDP(t)
	good := `{"states":[0,1,2],"actions":[1,1]}` + "\n"
	cases := []struct {
		name, input, want string
	}{
		{"empty file", "", "demos.jsonl: no trajectories"},
		{"blank lines only", "\n  \n", "demos.jsonl: no trajectories"},
		{"state out of range", good + `{"states":[0,5,1],"actions":[1,1]}`, "demos.jsonl:2: field states[1]: state 5 out of range [0,3)"},
		{"negative action", good + good + `{"states":[0,1],"actions":[-1]}`, "demos.jsonl:3: field actions[0]: action -1 out of range [0,2)"},
		{"action out of range", `{"states":[0,1],"actions":[2]}`, "demos.jsonl:1: field actions[0]: action 2 out of range"},
		{"ragged", `{"states":[0,1,0,1],"actions":[1,0]}`, "demos.jsonl:1: field states: has 4 entries but actions has 2"},
		{"ragged short", `{"states":[0],"actions":[1,0]}`, "demos.jsonl:1: field states: has 1 entries but actions has 2"},
		{"no actions", `{"states":[0],"actions":[]}`, "demos.jsonl:1: field actions: empty"},
		{"missing states", `{"actions":[0]}`, "demos.jsonl:1: field states: missing"},
		{"missing actions", good + "\n" + `{"states":[0]}`, "demos.jsonl:3: field actions: missing"},
		{"string state", `{"states":[0,"1"],"actions":[1]}`, "demos.jsonl:1: field states: cannot use JSON string as int"},
		{"float action", `{"states":[0,1],"actions":[0.5]}`, "demos.jsonl:1: field actions: cannot use JSON number 0.5 as int"},
		{"object as states", `{"states":{"a":1},"actions":[0]}`, "demos.jsonl:1: field states: cannot use JSON object"},
		{"array line", `[0,1]`, "demos.jsonl:1: cannot use JSON array here: want a JSON object"},
		{"truncated", good + `{"states":[0,1`, "demos.jsonl:2: invalid JSON"},
		{"garbage", good + `states 0 1`, "demos.jsonl:2: invalid JSON at column 1"},
		{"two objects on a line", good + good[:len(good)-1] + good, "demos.jsonl:2: invalid JSON"},
		{"terminal action", `{"states":[2,1],"actions":[0]}`, "demos.jsonl:1: field actions[0]: action taken in terminal state 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadTrajectories(strings.NewReader(c.input), "demos.jsonl", m)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want it to contain %q", err, c.want)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FormatError", err)
			}
		})
	}
}

func TestHorizonTooShort(t *testing.T) {
	m, _ := tinyMDP(t)
	m.Horizon = 1
	_, err := ReadTrajectories(strings.NewReader(`{"states":[0,0,1],"actions":[0,1]}`), "d.jsonl", m)
	if err == nil || !strings.Contains(err.Error(), "d.jsonl:1: field actions: 2 actions exceed the horizon 1") {
		t.Fatalf("error = %v", err)
	}
}

func TestSpecErrors(t *testing.T) {
	cases := []struct {
		name, from, to, want string
	}{
		{"unknown key", `"gamma"`, `"gama"`, "spec.json:1: field gama: unknown key"},
		{"missing gamma", `"gamma": 0.9,`, ``, "spec.json: field gamma: missing"},
		{"gamma range", `"gamma": 0.9`, `"gamma": 1.5`, "field gamma: 1.5 not in [0,1]"},
		{"states type", `"states": 3`, `"states": "3"`, "spec.json:1: field states: cannot use JSON string as int"},
		{"zero actions", `"actions": 2`, `"actions": 0`, "field actions: must be positive"},
		{"probabilities", `[1,1,2,1]`, `[1,1,2,0.5]`, "field transitions: mdp: state 1 action 1: transition probabilities sum to 0.5"},
		{"transition arity", `[1,1,2,1]`, `[1,1,2]`, "field transitions[4]: has 3 entries"},
		{"fractional index", `[1,1,2,1]`, `[1,1.5,2,1]`, "field transitions[4][1]: 1.5 is not an index in [0,2)"},
		{"next out of range", `[1,1,2,1]`, `[1,1,3,1]`, "field transitions[4][2]: 3 is not an index in [0,3)"},
		{"negative prob", `[0,1,0,0.1]`, `[0,1,0,-0.1]`, "field transitions[2][3]: probability -0.1 not in [0,1]"},
		{"ragged features", `[0,1],`, `[0,1,3],`, "field features[3]: has 3 entries, want 2"},
		{"too few features", `[[1,0],`, `[`, "field features: has 5 rows, want states*actions = 6"},
		{"terminal range", `"terminal": [2]`, `"terminal": [3]`, "field terminal[0]: state 3 out of range [0,3)"},
		{"init length", `"terminal": [2]`, `"terminal": [2], "init": [1]`, "field init: has 1 entries, want 3 states"},
		{"init mass", `"terminal": [2]`, `"terminal": [2], "init": [0.5, 0.2, 0]`, "init sums to 0.7"},
		{"no transitions", `"transitions"`, `"transitionz"`, "unknown key"},
		{"trailing data", `0]]}`, `0]]} {}`, "spec.json:3: unexpected data after the JSON object"},
		{"truncated", `[0,0]]}`, `[0,0]`, "spec.json:3: unexpected end of JSON input"},
		{"huge", `"states": 3`, `"states": 3000000000000`, "field states: states*actions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := strings.Replace(tinySpec, c.from, c.to, 1)
			if in == tinySpec {
				t.Fatalf("replacement %q not found", c.from)
			}
			s, err := ReadSpec(strings.NewReader(in), "spec.json")
			if err == nil {
				_, _, err = s.Build("spec.json")
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestSpecCSR(t *testing.T) {
	m, phi := tinyMDP(t)
	in := `{"states": 3, "actions": 2, "gamma": 0.9, "terminal": [2],
	 "csr": {"row_ptr": [0,1,3,4,5,5,5], "next": [0,0,1,0,2], "prob": [1,0.1,0.9,1,1]},
	 "features": [[1,0],[0,0],[0,0],[0,1],[0,0],[0,0]]}`
	s, err := ReadSpec(strings.NewReader(in), "csr.json")
	if err != nil {
		t.Fatal(err)
	}
	m2, phi2, err := s.Build("csr.json")
	if err != nil {
		t.Fatal(err)
	}
	assertSameMDP(t, m, m2)
	if !mat.Equal(phi, phi2) {
		t.Fatal("features differ")
	}
}

func assertSameMDP(t *testing.T, a, b *mdp.MDP) {
	t.Helper()
	if a.NumStates != b.NumStates || a.NumActions != b.NumActions || a.Gamma != b.Gamma || a.Horizon != b.Horizon {
		t.Fatalf("headers differ: %+v vs %+v", a, b)
	}
	for s := 0; s < a.NumStates; s++ {
		if a.IsTerminal(s) != b.IsTerminal(s) {
			t.Fatalf("terminal flag of %d differs", s)
		}
		for act := 0; act < a.NumActions; act++ {
			n1, p1 := a.Successors(s, act)
			n2, p2 := b.Successors(s, act)
			if len(n1) != len(n2) {
				t.Fatalf("(%d,%d): %v vs %v", s, act, n1, n2)
			}
			for i := range n1 {
				if n1[i] != n2[i] || p1[i] != p2[i] {
					t.Fatalf("(%d,%d): %v %v vs %v %v", s, act, n1, p1, n2, p2)
				}
			}
		}
	}
	approx.Slices(t, "init", b.Init, a.Init, 0, 0)
}

func TestRoundTrip(t *testing.T) {
	m := mdptest.RandomMDP(400, 9, 3, 3, 2, 0.87, 4)
	phi := randomFeatures(400, m.NumPairs(), 3)
	dir := t.TempDir()
	specPath := filepath.Join(dir, "spec.json")
	if err := WriteSpecFile(specPath, m, phi); err != nil {
		t.Fatal(err)
	}
	m2, phi2, err := LoadSpec(specPath)
	if err != nil {
		t.Fatal(err)
	}
	assertSameMDP(t, m, m2)
	if !mat.Equal(phi, phi2) {
		t.Fatal("features differ after round trip")
	}
	demos, _ := expertDemos(m, phi, []float64{1, 0, -1}, 1, 7, 4, 1)
	demoPath := filepath.Join(dir, "demos.jsonl")
	if err := WriteTrajectoriesFile(demoPath, demos); err != nil {
		t.Fatal(err)
	}
	back, err := ReadTrajectoriesFile(demoPath, m2)
	if err != nil {
		t.Fatal(err)
	}
	var b1, b2 bytes.Buffer
	if err := WriteTrajectories(&b1, demos); err != nil {
		t.Fatal(err)
	}
	if err := WriteTrajectories(&b2, back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1.Bytes(), b2.Bytes()) || len(back) != len(demos) {
		t.Fatal("trajectories differ after round trip")
	}
	if _, err := os.Stat(demoPath); err != nil {
		t.Fatal(err)
	}
}

func FuzzReadTrajectories(f *testing.F) {
	f.Add([]byte(`{"states":[0,1,2],"actions":[1,1]}` + "\n"))
	f.Add([]byte(`{"states":[0,1],"actions":[1]}` + "\n\n" + `{"states":[1,0],"actions":[0,1]}`))
	f.Add([]byte(`{"states":[0,"x"],"actions":[1]}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{"states":[0,1],"actions":[1e40]}`))
	m, _ := func() (*mdp.MDP, *mat.Dense) {
		s, _ := ReadSpec(strings.NewReader(tinySpec), "tiny")
		m, phi, _ := s.Build("tiny")
		return m, phi
	}()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mm := range []*mdp.MDP{nil, m} {
			demos, err := ReadTrajectories(bytes.NewReader(data), "fuzz.jsonl", mm)
			if err != nil {
				var fe *FormatError
				if !errors.As(err, &fe) || fe.File != "fuzz.jsonl" {
					t.Fatalf("error %v is not a FormatError naming the file", err)
				}
				continue
			}
			if len(demos) == 0 {
				t.Fatal("no error and no trajectories")
			}
			if mm != nil {
				if err := CheckTrajectories(mm, demos); err != nil {
					t.Fatalf("accepted trajectories fail the check: %v", err)
				}
			}
		}
	})
}

func FuzzReadSpec(f *testing.F) {
	f.Add([]byte(tinySpec))
	f.Add([]byte(`{"states": 1, "actions": 1, "gamma": 0.5, "transitions": [[0,0,0,1]], "features": [[1]]}`))
	f.Add([]byte(`{"states": 2, "actions": 1, "gamma": 1, "horizon": 3, "csr": {"row_ptr": [0,1,2], "next": [1,0], "prob": [1,1]}, "features": [[1],[2]]}`))
	f.Add([]byte(`{"states": 2, "actions": 1, "gamma": 0.5, "csr": {"row_ptr": [0,5,2], "next": [1,0], "prob": [1,1]}, "features": [[1],[2]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ReadSpec(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			return
		}
		m, phi, err := s.Build("fuzz.json")
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || fe.File != "fuzz.json" {
				t.Fatalf("error %v is not a FormatError naming the file", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted spec gives an invalid MDP: %v", err)
		}
		if r, _ := phi.Dims(); r != m.NumPairs() {
			t.Fatalf("feature rows %d, want %d", r, m.NumPairs())
		}
		ws := mdp.NewWorkspace(m, mdp.Options{MaxIter: 50})
		defer ws.Close()
		v := ws.SoftValueIteration(nil, features.Reward(make([]float64, m.NumPairs()), phi, make([]float64, phi.RawMatrix().Cols)), 1)
		ws.Occupancy(nil, ws.SoftPolicy(nil, v, 1))
	})
}

// TestReadTrajectoriesNPZ reads fixtures written by testdata/make_npz.py.
func TestReadTrajectoriesNPZ(t *testing.T) {
	m, _ := tinyMDP(t)
	want := []Trajectory{
		{States: []int{0, 1, 2}, Actions: []int{1, 1}},
		{States: []int{0, 0, 1, 2}, Actions: []int{0, 1, 1}},
		{States: []int{1, 0}, Actions: []int{0}},
	}
	var wantBuf bytes.Buffer
	if err := WriteTrajectories(&wantBuf, want); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"demos.npz", "demos_int32.npz"} {
		got, err := ReadTrajectoriesNPZ(filepath.Join("testdata", name), m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var gotBuf bytes.Buffer
		if err := WriteTrajectories(&gotBuf, got); err != nil {
			t.Fatal(err)
		}
		if gotBuf.String() != wantBuf.String() {
			t.Fatalf("%s: got\n%s\nwant\n%s", name, gotBuf.String(), wantBuf.String())
		}
	}
	cases := []struct{ file, want string }{
		{"bad_float.npz", "field states: has dtype <f8, want little-endian int64 or int32"},
		{"bad_missing.npz", "field actions: missing array"},
		{"bad_1d.npz", "field states: has shape [4], want 2 dimensions"},
		{"bad_rows.npz", "field states: has 2 rows but actions has 3"},
		{"bad_gap.npz", "field actions[1][2]: value 1 after the -1 padding"},
		{"bad_range.npz", "field row 2: states[1]: state 7 out of range [0,3)"},
		{"make_npz.py", "not a readable .npz archive"},
	}
	for _, c := range cases {
		path := filepath.Join("testdata", c.file)
		_, err := ReadTrajectoriesNPZ(path, m)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error = %v, want it to name the file and contain %q", c.file, err, c.want)
		}
	}
}

func FuzzReadTrajectoriesNPZ(f *testing.F) {
	for _, name := range []string{"demos.npz", "demos_int32.npz", "bad_gap.npz", "bad_1d.npz"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	const path = "fuzz.npz"
	f.Fuzz(func(t *testing.T, data []byte) {
		demos, err := DecodeTrajectoriesNPZ(bytes.NewReader(data), int64(len(data)), path, nil)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || fe.File != path {
				t.Fatalf("error %v is not a FormatError naming the file", err)
			}
			return
		}
		for i, tr := range demos {
			if err := checkTrajectory(0, 0, nil, tr); err != nil {
				t.Fatalf("accepted trajectory %d is invalid: %v", i, err)
			}
		}
	})
}
