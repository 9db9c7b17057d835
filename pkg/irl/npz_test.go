package irl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/mdp"
)

// denseP returns the transition probabilities of m as a dense
// (S·A)×S matrix, independent of the order of successors within a row.
func denseP(m *mdp.MDP) *mat.Dense {
	p := mat.NewDense(m.NumPairs(), m.NumStates, nil)
	for s := range m.NumStates {
		for a := range m.NumActions {
			next, prob := m.Successors(s, a)
			for i, n := range next {
				p.Set(s*m.NumActions+a, int(n), p.At(s*m.NumActions+a, int(n))+prob[i])
			}
		}
	}
	return p
}

// TestLoadSpecNPZ reads the fixtures of testdata/make_mdp_npz.py: the .npz
// twin of tinySpec gives the same MDP and features as the JSON spec, and
// every malformed archive names its array.
func TestLoadSpecNPZ(t *testing.T) {
	want, wantPhi := tinyMDP(t)
	for _, name := range []string{"mdp.npz", "mdp_int32.npz"} {
		m, phi, err := LoadMDP(filepath.Join("testdata", name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !mat.Equal(phi, wantPhi) || !mat.Equal(denseP(m), denseP(want)) || m.Gamma != want.Gamma ||
			!m.IsTerminal(2) || m.IsTerminal(0) || m.Init[0] != want.Init[0] || m.Init[2] != 0 {
			t.Fatalf("%s: MDP or features differ from the JSON spec's", name)
		}
	}
	for _, tc := range []struct{ file, want string }{
		{"bad_mdp_next.npz", "field next[4]: state 5 out of range [0,3)"},
		{"bad_mdp_gamma.npz", "field gamma: missing array"},
		{"bad_mdp_features.npz", "field features: has shape [12], want (num_states*num_actions, d)"},
		{"bad_mdp_prob.npz", "field prob: has dtype <i8, want float64"},
		{"bad_mdp_rowptr.npz", "field row_ptr: has 6 entries, want states*actions+1 = 7"},
		{"bad_mdp_states.npz", "field num_states: must be positive, got 0"},
		{"demos.npz", "field num_states: missing array"},
		{"make_mdp_npz.py", "not a readable .npz archive"},
	} {
		_, _, err := LoadSpecNPZ(filepath.Join("testdata", tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
			t.Errorf("%s: err = %v, want one naming the file and %q", tc.file, err, tc.want)
		}
	}
}

// TestReadImitationNPZ: imitation's concatenated trajectory layout with
// integer observations gives the trajectories it holds.
func TestReadImitationNPZ(t *testing.T) {
	m, _ := tinyMDP(t)
	got, err := ReadTrajectoriesAny(filepath.Join("testdata", "imitation.npz"), m)
	if err != nil {
		t.Fatal(err)
	}
	want := []Trajectory{
		{States: []int{0, 1, 2}, Actions: []int{1, 1}},
		{States: []int{0, 0, 1, 2}, Actions: []int{0, 1, 1}},
		{States: []int{1, 0, 0}, Actions: []int{0, 1}},
	}
	var gb, wb bytes.Buffer
	WriteTrajectories(&gb, got)
	WriteTrajectories(&wb, want)
	if gb.String() != wb.String() {
		t.Fatalf("got\n%s\nwant\n%s", gb.String(), wb.String())
	}
	for _, tc := range []struct{ file, want string }{
		{"bad_imitation_float.npz", "field obs: has dtype <f8, want integer indices"},
		{"bad_imitation_len.npz", "field obs: has 9 entries, want len(acts)+episodes = 7+3"},
		{"bad_imitation_range.npz", "field episode 1: states[1]: state 9 out of range [0,3)"},
	} {
		_, err := ReadTrajectoriesNPZ(filepath.Join("testdata", tc.file), m)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.file, err, tc.want)
		}
	}
}

// FuzzDecodeSpecNPZ: no archive makes the .npz MDP reader panic; an accepted
// one is a valid MDP with one feature row per pair.
func FuzzDecodeSpecNPZ(f *testing.F) {
	for _, name := range []string{"mdp.npz", "mdp_int32.npz", "bad_mdp_next.npz"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, phi, err := DecodeSpecNPZ(bytes.NewReader(data), int64(len(data)), "fuzz.npz")
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted an invalid MDP: %v", err)
		}
		if r, _ := phi.Dims(); r != m.NumPairs() {
			t.Fatalf("%d feature rows for %d pairs", r, m.NumPairs())
		}
	})
}
