package nprand

import (
	"encoding/json"
	"os"
	"testing"
)

type recorded struct {
	File  string `json:"file"`
	Seed  uint64 `json:"seed"`
	Draws []struct {
		Fn    string    `json:"fn"`
		Args  []float64 `json:"args"`
		Value float64   `json:"value"`
	} `json:"draws"`
	Actions [][]float64 `json:"actions_f32"`
}

// TestMatchesNumPy replays the draws Gymnasium's BipedalWalker made from
// numpy 1.24.2's default_rng-equivalent generator (testdata/draws.json,
// extracted by testdata/extract.py from ../shared/reference/bipedalwalker):
// every uniform, integers and random value, in order, must be identical,
// and np.random.default_rng(seed).uniform(-1, 1, size=(N, 4)) must give the
// recorded float32 actions.
func TestMatchesNumPy(t *testing.T) {
	b, err := os.ReadFile("testdata/draws.json")
	if err != nil {
		t.Fatal(err)
	}
	var recs []recorded
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 8 {
		t.Fatalf("%d recorded files, want 8", len(recs))
	}
	n := 0
	for _, r := range recs {
		g := New(r.Seed)
		for i, d := range r.Draws {
			var got float64
			switch d.Fn {
			case "uniform":
				got = g.Uniform(d.Args[0], d.Args[1])
			case "integers":
				got = float64(g.Integers(int64(d.Args[0]), int64(d.Args[1])))
			case "random":
				got = g.Random()
			default:
				t.Fatalf("%s: unknown draw %q", r.File, d.Fn)
			}
			if got != d.Value {
				t.Fatalf("%s draw %d: %s%v = %v, numpy drew %v", r.File, i, d.Fn, d.Args, got, d.Value)
			}
			n++
		}
		g = New(r.Seed)
		for i, a := range r.Actions {
			for j, want := range a {
				if got := float64(float32(g.Uniform(-1, 1))); got != want {
					t.Fatalf("%s action %d[%d] = %v, numpy %v", r.File, i, j, got, want)
				}
			}
		}
	}
	t.Logf("%d draws identical to numpy's", n)
}

// TestSeedReuse checks that Seed restarts the stream exactly as New does.
func TestSeedReuse(t *testing.T) {
	g := New(7)
	a := [3]uint64{g.Uint64(), g.Uint64(), uint64(g.Integers(0, 10))}
	g.Seed(7)
	if b := [3]uint64{g.Uint64(), g.Uint64(), uint64(g.Integers(0, 10))}; a != b {
		t.Fatalf("reseeded stream %v, fresh %v", b, a)
	}
	if allocs := testing.AllocsPerRun(100, func() { g.Seed(3); g.Uniform(0, 1) }); allocs != 0 {
		t.Fatalf("Seed allocates %v times", allocs)
	}
}

// TestIntegersRange checks bounds and rough uniformity on small and 64-bit ranges.
func TestIntegersRange(t *testing.T) {
	g := New(1)
	var count [5]int
	for range 50000 {
		v := g.Integers(3, 8)
		if v < 3 || v >= 8 {
			t.Fatalf("Integers(3, 8) = %d", v)
		}
		count[v-3]++
	}
	for i, c := range count {
		if c < 9500 || c > 10500 {
			t.Errorf("value %d drawn %d times of 50000", i+3, c)
		}
	}
	for range 1000 {
		if v := g.Integers(-1<<40, 1<<40); v < -1<<40 || v >= 1<<40 {
			t.Fatalf("Integers(-2^40, 2^40) = %d", v)
		}
	}
}
