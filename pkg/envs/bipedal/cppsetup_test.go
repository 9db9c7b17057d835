package bipedal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/nprand"
)

// WriteCppSetup writes the setup file that bench/bipedal-cpp/walker.cpp
// reads: the physics, obstacles, terrain and push of e's current episode
// and the actions to replay, repeated repeats times.
func writeCppSetup(path string, e *Env, actions [][]float64, repeats int) error {
	var b strings.Builder
	p := e.p
	fmt.Fprintf(&b, "%.17g %.17g %.17g %.17g %.17g\n", p.Gravity, p.Friction, p.MotorsTorque, p.LegLength, p.HullDensity)
	fmt.Fprintf(&b, "%d\n", len(e.terrain.Obstacles))
	for _, o := range e.terrain.Obstacles {
		for _, v := range o {
			fmt.Fprintf(&b, "%.17g %.17g ", v[0], v[1])
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%d\n", terrainLength)
	for i := range terrainLength {
		fmt.Fprintf(&b, "%.17g %.17g\n", e.terrain.X[i], e.terrain.Y[i])
	}
	fmt.Fprintf(&b, "%.17g\n%d\n", e.push, len(actions))
	for _, a := range actions {
		fmt.Fprintf(&b, "%.17g %.17g %.17g %.17g\n", a[0], a[1], a[2], a[3])
	}
	fmt.Fprintf(&b, "%d\n", repeats)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// TestWriteCppSetups writes one setup per reference episode into the
// folder named by BIPEDAL_CPP_SETUPS (skipped when unset); see
// bench/bipedal-cpp/run.sh.
func TestWriteCppSetups(t *testing.T) {
	dir := os.Getenv("BIPEDAL_CPP_SETUPS")
	if dir == "" {
		t.Skip("BIPEDAL_CPP_SETUPS not set")
	}
	for _, path := range refPaths(t) {
		f := loadRef(t, path)
		e, _ := New(DefaultParams(f.MakeKwargs["hardcore"] == true))
		e.Reset(f.Seed)
		name := strings.TrimSuffix(filepath.Base(path), ".json.gz")
		if err := writeCppSetup(filepath.Join(dir, name+".txt"), e, f.Actions, 1); err != nil {
			t.Fatal(err)
		}
	}
}

// clientCases are the fleet episodes pinned against pybox2d
// (testdata/pybox2d-clients.json): the extreme clients and one in between,
// on normal and hardcore terrain, under random actions drawn from
// nprand.New(seed) (uniform in [−1, 1], rounded to float32).
var clientCases = []struct {
	name     string
	client   int
	hardcore bool
	seed     uint64
	steps    int
}{
	{"client0-seed1-normal", 0, false, 1, 300},
	{"client10-seed2-normal", 10, false, 2, 300},
	{"client3-seed3-hardcore", 3, true, 3, 300},
	{"client8-seed4-hardcore", 8, true, 4, 300},
}

func clientActions(seed uint64, n int) [][]float64 {
	g := nprand.New(seed + 1000)
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, 4)
		for j := range out[i] {
			out[i][j] = float64(float32(g.Uniform(-1, 1)))
		}
	}
	return out
}

// TestWriteClientSetups writes the setups of clientCases into the folder
// named by BIPEDAL_CLIENT_SETUPS (skipped when unset), for
// testdata/make-pybox2d-clients.sh.
func TestWriteClientSetups(t *testing.T) {
	dir := os.Getenv("BIPEDAL_CLIENT_SETUPS")
	if dir == "" {
		t.Skip("BIPEDAL_CLIENT_SETUPS not set")
	}
	for _, c := range clientCases {
		e, err := New(ClientParams(c.hardcore, c.client))
		if err != nil {
			t.Fatal(err)
		}
		e.Reset(c.seed)
		if err := writeCppSetup(filepath.Join(dir, c.name+".txt"), e, clientActions(c.seed, c.steps), 1); err != nil {
			t.Fatal(err)
		}
	}
}
