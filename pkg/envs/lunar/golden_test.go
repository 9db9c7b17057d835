package lunar

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"hash"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/third_party/box2d"
)

// updateGolden regenerates testdata/golden-trajectories.txt from the code
// as it is: go test ./pkg/envs/lunar -run TestGoldenTrajectories -update-golden.
// The committed file was generated at commit 9d2543e, when the physics ran
// on github.com/ByteArena/box2d v1.0.2 unchanged; it pins the trajectories
// of that code bit for bit, so any later change to the physics engine
// (pooling, fewer allocations, less work) must reproduce it exactly.
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden-trajectories.txt from the current code")

const goldenPath = "testdata/golden-trajectories.txt"

// goldenSeeds is the number of episodes per configuration.
const goldenSeeds = 24

// goldenConfig is one (action space, wind, policy) combination.
type goldenConfig struct {
	continuous, wind bool
	policy           string // "random" or "heuristic"
}

func (c goldenConfig) name() string {
	s := "discrete"
	if c.continuous {
		s = "continuous"
	}
	if c.wind {
		s += "-wind2"
	} else {
		s += "-nowind"
	}
	return s + "-" + c.policy
}

func goldenConfigs() []goldenConfig {
	var cs []goldenConfig
	for _, continuous := range []bool{false, true} {
		for _, wind := range []bool{false, true} {
			for _, policy := range []string{"random", "heuristic"} {
				cs = append(cs, goldenConfig{continuous, wind, policy})
			}
		}
	}
	return cs
}

// hashState writes the exact bits of every body's position, angle and
// velocities, the joints' angles and speeds and the contact flags: more
// than the float32-rounded observation, so a change below its resolution
// is caught too.
func hashState(h hash.Hash, e *Env) {
	var buf [8]byte
	put := func(x float64) {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(x))
		h.Write(buf[:])
	}
	for _, body := range [3]*box2d.B2Body{e.lander, e.legs[0], e.legs[1]} {
		p, v := body.GetPosition(), body.GetLinearVelocity()
		put(p.X)
		put(p.Y)
		put(body.GetAngle())
		put(v.X)
		put(v.Y)
		put(body.GetAngularVelocity())
		if body.IsAwake() {
			put(1)
		} else {
			put(0)
		}
	}
	for _, j := range e.joints {
		put(j.GetJointAngle())
		put(j.GetJointSpeed())
	}
	for _, c := range e.contact {
		if c {
			put(1)
		} else {
			put(0)
		}
	}
}

// goldenEpisode runs episode seed of configuration c on e and returns its
// length, return and the SHA-256 of every step's observation, reward,
// flags and full physical state.
func goldenEpisode(e *Env, c goldenConfig, seed uint64) (steps int, ret float64, end, sum string) {
	h := sha256.New()
	var buf [8]byte
	put := func(x float64) {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(x))
		h.Write(buf[:])
	}
	rng := rand.New(rand.NewPCG(seed, 0x676f6c64)) // "gold"
	obs := e.Reset(seed)
	for _, v := range obs {
		put(v)
	}
	hashState(h, e)
	act := make([]float64, 2)
	if !c.continuous {
		act = act[:1]
	}
	for {
		switch {
		case c.policy == "heuristic":
			Heuristic(act, obs, c.continuous)
		case c.continuous:
			act[0], act[1] = 2*rng.Float64()-1, 2*rng.Float64()-1
		default:
			act[0] = float64(rng.IntN(4))
		}
		o, r, term, trunc := e.Step(act)
		obs = o
		for _, v := range o {
			put(v)
		}
		put(r)
		h.Write([]byte{b2u(term), b2u(trunc)})
		hashState(h, e)
		steps++
		ret += r
		if term || trunc {
			return steps, ret, cause(r, term, trunc), hex.EncodeToString(h.Sum(nil))
		}
	}
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// goldenLines runs every configuration's episodes, one Env per
// configuration reused across its episodes (as training does), and
// returns one line per episode.
func goldenLines(t *testing.T) []string {
	var lines []string
	for _, c := range goldenConfigs() {
		p := DefaultParams(c.continuous)
		if c.wind {
			p = ClientParams(c.continuous, 2)
		}
		e, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		for seed := range uint64(goldenSeeds) {
			n, ret, end, sum := goldenEpisode(e, c, seed)
			lines = append(lines, fmt.Sprintf("%s %d %d %x %s %q", c.name(), seed, n, math.Float64bits(ret), sum, end))
		}
	}
	return lines
}

// TestGoldenTrajectories replays the golden episodes (4 configurations ×
// 2 wind settings × goldenSeeds seeds, random and heuristic policies) and
// requires every step's observation, reward, flags and full body state to
// be bit-identical to the committed file's hashes.
func TestGoldenTrajectories(t *testing.T) {
	if fusesMulAdd() && !*updateGolden {
		t.Skip("this build fuses multiply-adds; the golden pins unfused amd64 arithmetic")
	}
	got := goldenLines(t)
	if *updateGolden {
		var b strings.Builder
		b.WriteString("# LunarLander golden trajectories: config seed steps return-bits sha256(obs, reward, flags, body state per step) end\n")
		b.WriteString("# made by TestGoldenTrajectories -update-golden (golden_test.go)\n")
		for _, l := range got {
			b.WriteString(l + "\n")
		}
		if err := os.WriteFile(goldenPath, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d episodes to %s", len(got), goldenPath)
		return
	}
	f, err := os.Open(filepath.FromSlash(goldenPath))
	if err != nil {
		t.Fatalf("%s: %v (make it with -update-golden)", goldenPath, err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			want = append(want, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", goldenPath, err)
	}
	if len(want) != len(got) {
		t.Fatalf("%s has %d episodes, the test runs %d", goldenPath, len(want), len(got))
	}
	bad, steps := 0, 0
	for i := range got {
		var n int
		fmt.Sscanf(strings.Fields(got[i])[2], "%d", &n)
		steps += n
		if got[i] != want[i] {
			bad++
			if bad <= 5 {
				t.Errorf("episode differs from the golden:\n got  %s\n want %s", got[i], want[i])
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d golden episodes differ", bad, len(got))
	}
	t.Logf("%d episodes, %d steps bit-identical to %s", len(got), steps, goldenPath)
}

// TestGoldenFreshEnv: an Env reused across episodes gives the same
// trajectory as a fresh one (no state leaks from one episode into the
// next, whatever the engine reuses).
func TestGoldenFreshEnv(t *testing.T) {
	for _, c := range goldenConfigs() {
		p := ClientParams(c.continuous, 2)
		reused, _ := New(p)
		for seed := range uint64(3) {
			_, _, _, a := goldenEpisode(reused, c, seed)
			fresh, _ := New(p)
			_, _, _, b := goldenEpisode(fresh, c, seed)
			if a != b {
				t.Fatalf("%s seed %d: the reused Env's trajectory differs from a fresh Env's", c.name(), seed)
			}
		}
	}
}

// fusesMulAdd reports whether this build fuses x*y + z into one rounding
// (Go does on arm64, ppc64le, s390x and riscv64, and on amd64 with
// GOAMD64=v3 or later): then floating-point results legitimately differ in
// the last bits from the unfused amd64 arithmetic the goldens pin.
func fusesMulAdd() bool {
	a, b := 1+0x1p-30, 1-0x1p-30
	return mulAdd(a, b, -1) != 0 // unfused: a·b rounds to 1
}

//go:noinline
func mulAdd(x, y, z float64) float64 { return x*y + z }
