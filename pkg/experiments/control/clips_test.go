package control

import (
	"bytes"
	"context"
	"fmt"
	"image/gif"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fedirl/fedirl/pkg/approx"
	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

// clipsConfig is the micro study with clips on, cut to 60 steps of
// 120 × 80 images, one every 4 steps.
func clipsConfig() Config {
	c := microConfig()
	c.Clips = ClipsConfig{Enabled: true, Steps: 60, Every: 4, Width: 120, Height: 80}
	return c
}

// clipPolicy loads the policy of clip e from the study's unit files.
func clipPolicy(t *testing.T, st *Study, e ClipEntry) *ppo.Policy {
	t.Helper()
	path := filepath.Join(st.units, filepath.FromSlash(e.Policy))
	if e.Method == "expert" {
		var f ExpertFile
		if err := readJSON(path, &f); err != nil {
			t.Fatal(err)
		}
		p, err := ppo.FromCheckpoint(f.Policy)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p, err := ppo.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// replay runs clip e's episode undrawn, frame by frame with the policy's
// mode action held for e.FrameSkip frames, and returns its length (at most
// steps) and return.
func replay(t *testing.T, p *ppo.Policy, e ClipEntry, noise uint64, steps int) (int, float64) {
	t.Helper()
	env, err := registry.Make(e.Env, e.Client, nil, noise)
	if err != nil {
		t.Fatal(err)
	}
	act := make([]float64, p.Action.Dim())
	obs := env.Reset(e.ResetSeed)
	n, ret := 0, 0.0
	for n < steps {
		if n%e.FrameSkip == 0 {
			p.Act(act, obs, nil)
		}
		var r float64
		var term, trunc bool
		obs, r, term, trunc = env.Step(act)
		n++
		ret += r
		if term || trunc {
			break
		}
	}
	return n, ret
}

// TestClips runs the micro study with clips on and checks that every
// environment has its expert's clip and one per method, each a GIF of the
// configured size whose frame count is the one its episode implies (the
// first step, every clips.every-th, the last), the episode's length and
// return replayed undrawn (and, through ppo.Evaluate, the return once
// more); that all clips of an environment start from the same state; that
// a second run into another folder, and the run merged into an empty one,
// write the same bytes; and that a rerun keeps the clips on disk and
// redraws a deleted one byte for byte.
func TestClips(t *testing.T) {
	cfg := clipsConfig()
	root := t.TempDir()
	dir := filepath.Join(root, "a")
	st := runStudy(t, cfg, dir, 2, Shard{})

	var man ClipsFile
	if err := readJSON(filepath.Join(dir, "clips", "clips.json"), &man); err != nil {
		t.Fatal(err)
	}
	if len(man.Skipped) != 0 {
		t.Errorf("skipped clips: %+v", man.Skipped)
	}
	var want []string
	for _, env := range cfg.Envs {
		want = append(want, env+"-expert.gif")
		for _, m := range cfg.Methods {
			want = append(want, env+"-"+m+".gif")
		}
	}
	var got []string
	for _, e := range man.Clips {
		got = append(got, e.File)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("clips.json lists %v, want %v", got, want)
	}
	reset := map[string]uint64{}
	for _, e := range man.Clips {
		b, err := os.ReadFile(filepath.Join(dir, "clips", e.File))
		if err != nil {
			t.Fatal(err)
		}
		g, err := gif.DecodeAll(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", e.File, err)
		}
		if g.Config.Width != cfg.Clips.Width || g.Config.Height != cfg.Clips.Height {
			t.Errorf("%s: %d×%d, want %d×%d", e.File, g.Config.Width, g.Config.Height, cfg.Clips.Width, cfg.Clips.Height)
		}
		for i, im := range g.Image {
			if b := im.Bounds(); b.Dx() != cfg.Clips.Width || b.Dy() != cfg.Clips.Height {
				t.Fatalf("%s: frame %d is %v", e.File, i, b)
			}
		}
		p := clipPolicy(t, st, e)
		n, ret := replay(t, p, e, seedOf(e.Seed, "clip-noise", e.Client), cfg.Clips.Steps)
		frames := 1 + n/cfg.Clips.Every
		if n%cfg.Clips.Every != 0 {
			frames++
		}
		if len(g.Image) != frames || e.Frames != frames || e.Steps != n {
			t.Errorf("%s: %d frames (clips.json: %d over %d steps), want %d over %d steps", e.File, len(g.Image), e.Frames, e.Steps, frames, n)
		}
		if e.Return != ret {
			t.Errorf("%s: return %v, replayed %v", e.File, e.Return, ret)
		}
		if e.FrameSkip == 1 {
			env, _ := registry.Make(e.Env, e.Client, nil, seedOf(e.Seed, "clip-noise", e.Client))
			if r := ppo.Evaluate(p, env, 1, e.ResetSeed, true, cfg.Clips.Steps)[0]; r != e.Return {
				t.Errorf("%s: return %v, ppo.Evaluate %v", e.File, e.Return, r)
			}
		}
		if s, ok := reset[e.Env]; ok && s != e.ResetSeed {
			t.Errorf("%s: reset seed %d, the environment's other clips %d", e.File, e.ResetSeed, s)
		}
		reset[e.Env] = e.ResetSeed
		if e.Seed != cfg.Seed || e.Client != cfg.AllClients()[0] {
			t.Errorf("%s: seed %d client %d, want the first seed %d and client %d", e.File, e.Seed, e.Client, cfg.Seed, cfg.AllClients()[0])
		}
	}

	// Same seed, same bytes, in another folder.
	other := filepath.Join(root, "b")
	runStudy(t, cfg, other, 1, Shard{})
	ref := files(t, dir)
	sameFiles(t, "a second run", ref, files(t, other))

	// Merged into an empty folder, the units carry the clips' policies.
	merged := filepath.Join(root, "merged")
	if _, err := Merge(merged, []string{dir}); err != nil {
		t.Fatal(err)
	}
	ms, err := New(cfg, merged, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ms.WriteOutputs(); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "merged", ref, files(t, merged))

	// A rerun keeps every clip; a deleted one is redrawn byte for byte.
	mtimes := map[string]os.FileInfo{}
	for _, e := range man.Clips {
		info, _ := os.Stat(filepath.Join(dir, "clips", e.File))
		mtimes[e.File] = info
	}
	gone := man.Clips[1].File
	os.Remove(filepath.Join(dir, "clips", gone))
	var log strings.Builder
	st, err = New(cfg, dir, 2, &log)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Run(context.Background(), Shard{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WriteOutputs(); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("clips: 1 written, %d on disk, 0 skipped", len(man.Clips)-1); !strings.Contains(log.String(), want) {
		t.Errorf("rerun log lacks %q:\n%s", want, log.String())
	}
	for f, before := range mtimes {
		info, err := os.Stat(filepath.Join(dir, "clips", f))
		if err != nil {
			t.Fatal(err)
		}
		if f != gone && !info.ModTime().Equal(before.ModTime()) {
			t.Errorf("%s was redrawn on rerun", f)
		}
	}
	sameFiles(t, "rerun with a clip deleted", ref, files(t, dir))
}

// TestClipsWithoutStoredPolicies turns clips on over a run folder computed
// with clips off: nothing is recomputed, the expert's clip is drawn, and
// every method's clip is skipped with its reason in the log and in
// clips.json, without failing the outputs.
func TestClipsWithoutStoredPolicies(t *testing.T) {
	cfg := clipsConfig()
	cfg.Envs = []string{"CartPole-v1"}
	cfg.Methods = []string{MethodLocal, MethodMean, MethodTrue}
	cfg.NormalizationAnchor = AnchorExpert
	off := cfg
	off.Clips.Enabled = false
	dir := t.TempDir()
	runStudy(t, off, dir, 2, Shard{})
	if _, err := os.Stat(filepath.Join(dir, "clips")); !os.IsNotExist(err) {
		t.Fatalf("clips/ written with clips disabled (%v)", err)
	}
	var log strings.Builder
	st, err := New(cfg, dir, 2, &log)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Run(context.Background(), Shard{}); err != nil {
		t.Fatal(err)
	}
	if len(st.Computed) != 0 {
		t.Errorf("turning clips on recomputed units: %v", st.Computed)
	}
	if _, err := st.WriteOutputs(); err != nil {
		t.Fatal(err)
	}
	var man ClipsFile
	if err := readJSON(filepath.Join(dir, "clips", "clips.json"), &man); err != nil {
		t.Fatal(err)
	}
	if len(man.Clips) != 1 || man.Clips[0].File != "CartPole-v1-expert.gif" {
		t.Errorf("clips %+v, want the expert's only", man.Clips)
	}
	if len(man.Skipped) != len(cfg.Methods) {
		t.Errorf("skipped %+v, want one per method", man.Skipped)
	}
	for _, m := range cfg.Methods {
		f := "CartPole-v1-" + m + ".gif"
		if !strings.Contains(log.String(), "clip "+f+" skipped: no policy stored") {
			t.Errorf("log does not say why %s is skipped:\n%s", f, log.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "clips", f)); !os.IsNotExist(err) {
			t.Errorf("%s written without its policy", f)
		}
	}
}

// TestHoldActionIsFrameSkip: holdAction stepped frame by frame is the
// episode of the same policy on envs.FrameSkip (same return, same last
// observation), on a Pendulum episode of 200 frames (not a multiple of 3) with a policy that depends on its
// observation.
func TestHoldActionIsFrameSkip(t *testing.T) {
	pol := func(obs []float64) []float64 { return []float64{2*obs[1] - obs[2]} }
	raw, err := registry.Make("Pendulum-v1", 3, nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	inner, _ := registry.Make("Pendulum-v1", 3, nil, 7)
	held, err := envs.NewFrameSkip(inner, 3)
	if err != nil {
		t.Fatal(err)
	}
	h := holdAction(pol, 3)
	obs := raw.Reset(11)
	var ret float64
	frames := 0
	for {
		o, r, term, trunc := raw.Step(h(obs))
		obs, ret, frames = o, ret+r, frames+1
		if term || trunc {
			break
		}
	}
	hobs := held.Reset(11)
	var hret float64
	for {
		o, r, term, trunc := held.Step(pol(hobs))
		hobs, hret = o, hret+r
		if term || trunc {
			break
		}
	}
	// The returns are sums of the same rewards in another grouping.
	if frames != 200 || !approx.Close(ret, hret, 0, 1e-12) || !slices.Equal(obs, hobs) {
		t.Errorf("held frame by frame: %d frames, return %v, last obs %v; FrameSkip: return %v, last obs %v", frames, ret, obs, hret, hobs)
	}
}
