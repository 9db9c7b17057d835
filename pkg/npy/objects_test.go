package npy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestEncodeEmptyDicts compares EncodeEmptyDicts with the bytes NumPy's
// np.save writes for np.full(n, {}) (testdata/make_empty_dicts.py), across
// the pickler's batch and integer-width boundaries; n = 70000 (a 4-byte
// shape) is compared against NumPy directly when a python3 with numpy is
// installed.
func TestEncodeEmptyDicts(t *testing.T) {
	for _, n := range []int{1, 2, 3, 255, 256, 1000, 1001, 2001} {
		want, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("empty_dicts_%d.npy", n)))
		if err != nil {
			t.Fatal(err)
		}
		if got := EncodeEmptyDicts(n); !bytes.Equal(got, want) {
			t.Errorf("n = %d: %d bytes differ from NumPy's %d", n, len(got), len(want))
		}
	}
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import numpy").Run() != nil {
		t.Skip("no /usr/bin/python3 with numpy for n = 70000")
	}
	out := filepath.Join(t.TempDir(), "big.npy")
	if b, err := exec.Command(py, "-c", "import numpy, sys; numpy.save(sys.argv[1], numpy.full(70000, {}), allow_pickle=True)", out).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	want, _ := os.ReadFile(out)
	if got := EncodeEmptyDicts(70000); !bytes.Equal(got, want) {
		t.Errorf("n = 70000: %d bytes differ from NumPy's %d", len(got), len(want))
	}
}
