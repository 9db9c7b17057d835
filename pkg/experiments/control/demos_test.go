package control

import (
	"archive/zip"
	"bytes"
	"io"
	"path/filepath"
	"slices"
	"testing"

	fnpy "github.com/fedirl/fedirl/pkg/npy"
)

// TestDemosFileHasImitationFields writes two episodes and reads the file
// back as imitation.data.serialize.load's .npz branch does: exactly its
// fields obs, acts, infos, terminal, rews and indices (plus states), split
// at indices (obs at indices[i]+i+1, one extra observation per episode),
// infos the object array of empty dicts that imitation itself writes; and
// ReadDemos returns what was written.
func TestDemosFileHasImitationFields(t *testing.T) {
	d := &Demos{
		Obs:      [][]float64{{0, 1}, {1, 1}, {2, 1}, {5, 0}, {6, 0}},
		States:   [][]float64{{0}, {1}, {2}, {5}, {6}},
		Acts:     [][]float64{{1}, {-1}, {0.5}},
		Rews:     []float64{-1, -2, -3},
		Terminal: []bool{false, true},
		Lengths:  []int{2, 1},
	}
	path := filepath.Join(t.TempDir(), "demos.npz")
	if err := writeDemos(path, d); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	arrays := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		arrays[f.Name], _ = io.ReadAll(rc)
		rc.Close()
	}
	var names []string
	for n := range arrays {
		names = append(names, n)
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(DemosFields))
	if !slices.Equal(names, want) {
		t.Fatalf("fields %v, want %v", names, want)
	}
	for _, f := range []string{"obs", "acts", "infos", "terminal", "rews", "indices"} {
		if arrays[f] == nil {
			t.Errorf("imitation's field %s missing", f)
		}
	}
	if !bytes.Equal(arrays["infos"], fnpy.EncodeEmptyDicts(len(d.Acts))) {
		t.Errorf("infos is not np.full(%d, {})", len(d.Acts))
	}
	dec := func(name string) *fnpy.Array {
		a, err := fnpy.Decode(arrays[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return a
	}
	obs, acts, rews, idx := dec("obs"), dec("acts"), dec("rews"), dec("indices")
	// imitation: np.split(obs, indices + arange(len(indices)) + 1), np.split(acts, indices), np.split(rews, indices).
	if !slices.Equal(idx.Ints, []int64{2}) || obs.Shape[0] != 5 || acts.Shape[0] != 3 || len(rews.Floats) != 3 {
		t.Fatalf("indices %v, obs %v, acts %v, rews %d", idx.Ints, obs.Shape, acts.Shape, len(rews.Floats))
	}
	start, startObs := 0, 0
	for ep, n := range append(idx.Ints, int64(acts.Shape[0])) {
		obsEnd := int(n) + ep + 1
		if ep == len(idx.Ints) {
			obsEnd = obs.Shape[0]
		}
		if obsEnd-startObs != int(n)-start+1 || int(n)-start != d.Lengths[ep] {
			t.Errorf("episode %d: %d observations for %d actions, want T+1 with T = %d", ep, obsEnd-startObs, int(n)-start, d.Lengths[ep])
		}
		if got := obs.Floats[2*startObs : 2*obsEnd]; !slices.Equal(got, slices.Concat(d.Obs[startObs:obsEnd]...)) {
			t.Errorf("episode %d observations %v", ep, got)
		}
		start, startObs = int(n), obsEnd
	}
	back, err := ReadDemos(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Lengths, d.Lengths) || !slices.Equal(back.Rews, d.Rews) || !slices.Equal(back.Terminal, d.Terminal) ||
		!slices.Equal(slices.Concat(back.Obs...), slices.Concat(d.Obs...)) || !slices.Equal(slices.Concat(back.States...), slices.Concat(d.States...)) {
		t.Errorf("ReadDemos: %+v, want %+v", back, d)
	}
}
