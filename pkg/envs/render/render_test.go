package render

import (
	"bytes"
	"image/gif"
	"math/rand/v2"
	"testing"

	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/bipedal"
	"github.com/fedirl/fedirl/pkg/envs/registry"
)

func randomPolicy(e envs.Env, seed uint64) Policy {
	rng := rand.New(rand.NewPCG(seed, 1))
	space := e.ActionSpace()
	act := make([]float64, space.Dim())
	return func([]float64) []float64 { return space.Sample(act, rng) }
}

// TestWalkerClip renders a heuristic walker episode cut at 41 steps, one
// frame every 4 steps, encodes and decodes the GIF, and checks the frame
// count (step 0, steps 4…40, the last step 41: 12), the frame size, the
// return against an undrawn run of the same episode, and that a frame shows
// the terrain, the hull, the legs and the lidar (pixels of their colours).
func TestWalkerClip(t *testing.T) {
	e, _ := bipedal.New(bipedal.DefaultParams(false))
	h := bipedal.NewHeuristic()
	act := make([]float64, 4)
	g, res, err := Episode(e, "BipedalWalker-v3", 3, func(obs []float64) []float64 { return h.Act(act, obs) },
		Options{Width: 300, Height: 200, Every: 4, MaxSteps: 41})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, g); err != nil {
		t.Fatal(err)
	}
	back, err := gif.DecodeAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Image) != 12 || res.Frames != 12 || res.Steps != 41 {
		t.Fatalf("%d frames (result %d) over %d steps, want 12 over 41", len(back.Image), res.Frames, res.Steps)
	}
	for i, im := range back.Image {
		if b := im.Bounds(); b.Dx() != 300 || b.Dy() != 200 {
			t.Fatalf("frame %d is %v", i, b)
		}
	}
	if back.Config.Width != 300 || back.Config.Height != 200 {
		t.Fatalf("GIF size %d×%d", back.Config.Width, back.Config.Height)
	}
	// The same episode undrawn gives the same return.
	e2, _ := bipedal.New(bipedal.DefaultParams(false))
	h2 := bipedal.NewHeuristic()
	obs := e2.Reset(3)
	ret := 0.0
	for range 41 {
		var r float64
		obs, r, _, _ = e2.Step(h2.Act(act, obs))
		ret += r
	}
	if ret != res.Return {
		t.Errorf("return %v, undrawn %v", res.Return, ret)
	}
	var count [16]int
	for _, p := range g.Image[len(g.Image)-1].Pix {
		count[p]++
	}
	for _, c := range []struct {
		idx  uint8
		what string
	}{{colGround, "terrain"}, {colHull, "hull"}, {colLeg0, "leg 0"}, {colLeg1, "leg 1"}, {colLidar, "lidar"}, {colSky, "sky"}} {
		if count[c.idx] == 0 {
			t.Errorf("the last frame shows no %s", c.what)
		}
	}
}

// TestEveryEnvironmentRenders renders 10 random steps of every registered
// environment and checks each gives its frames at the requested size.
func TestEveryEnvironmentRenders(t *testing.T) {
	for _, name := range registry.Names() {
		e, err := registry.Make(name, -1, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		g, res, err := Episode(e, name, 1, randomPolicy(e, 1), Options{Width: 160, Height: 120, Every: 5, MaxSteps: 10})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := 1 + res.Steps/5
		if res.Steps%5 != 0 {
			want++
		}
		if len(g.Image) != want || g.Image[0].Bounds().Dx() != 160 || g.Image[0].Bounds().Dy() != 120 {
			t.Errorf("%s: %d frames of %v after %d steps, want %d of 160×120", name, len(g.Image), g.Image[0].Bounds(), res.Steps, want)
		}
		var buf bytes.Buffer
		if err := gif.EncodeAll(&buf, g); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestOptionsRefused checks that sizes, frame steps and delays out of range are refused.
func TestOptionsRefused(t *testing.T) {
	e, _ := bipedal.New(bipedal.DefaultParams(false))
	for _, o := range []Options{{Width: 10}, {Height: 5000}, {Every: -1}, {MaxSteps: -2}, {Delay: -1}} {
		if _, _, err := Episode(e, "BipedalWalker-v3", 0, randomPolicy(e, 0), o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
