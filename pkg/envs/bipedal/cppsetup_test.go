package bipedal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
