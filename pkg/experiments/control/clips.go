package control

import (
	"bytes"
	"fmt"
	"image/gif"
	"path/filepath"

	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/envs/render"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
)

// ClipsConfig configures the clips of a run folder: for each environment,
// clips/<env>-expert.gif, one episode of the expert, and
// clips/<env>-<method>.gif, one episode of the PPO policy trained on each
// method's reward (pkg/envs/render), with clips/clips.json listing each
// clip's episode (steps, return, frames) and the unit whose policy acts.
//
// Every clip of an environment shows the study's first seed and first
// client (client_ids[0]; by default the appendix's client 0, whose physics
// `fedirl env list` gives: Pendulum's damping 0.2 and g = 9.81) in the
// client's own simulator, with the evaluation runs of the environment's
// first lattice, and starts from the same state (common random numbers);
// policies act by their mode, and a policy trained with
// evaluation_frame_skip holds each action for that many frames, as it was
// trained. An evaluation run stores the policy its clip shows
// (units/policy/) only when it is computed with clips enabled: a clip
// whose evaluation unit was computed without is skipped, and the log says
// so.
type ClipsConfig struct {
	// Enabled writes the clips (the presets' default; --quick and the sweep turn them off).
	Enabled bool `yaml:"enabled"`
	// Steps ends each clip's episode after this many simulator steps if
	// the environment has not ended it before.
	Steps int `yaml:"steps"`
	// Every draws one image per this many simulator steps (the first and
	// the last are always drawn).
	Every int `yaml:"every"`
	// Width and Height are the images' size in pixels.
	Width  int `yaml:"width"`
	Height int `yaml:"height"`
}

// options returns the render options of a clip.
func (c ClipsConfig) options() render.Options {
	return render.Options{Width: c.Width, Height: c.Height, Every: c.Every, MaxSteps: c.Steps}
}

// validate returns an error naming the first bad key (checked whether or
// not the clips are enabled, so that turning them on cannot fail late).
func (c ClipsConfig) validate() error {
	for _, f := range []struct {
		key  string
		v    int
		what string
	}{
		{"clips.steps", c.Steps, "the cap of a clip's episode in simulator steps"},
		{"clips.every", c.Every, "one image per this many steps"},
		{"clips.width", c.Width, "pixels"},
		{"clips.height", c.Height, "pixels"},
	} {
		if f.v < 1 {
			return fmt.Errorf("%s: %d, want ≥ 1 (%s)", f.key, f.v, f.what)
		}
	}
	if err := c.options().Validate(); err != nil {
		return fmt.Errorf("clips.width %d, clips.height %d: %w", c.Width, c.Height, err)
	}
	return nil
}

// clipJob reports whether evaluation run j is the one a clip shows: the
// first seed, the first client and the environment's first lattice (the
// true reward has none), with clips enabled.
func (s *Study) clipJob(j evalJob) bool {
	c := s.cfg
	if !c.Clips.Enabled || j.Seed != c.Seed || j.Client != c.AllClients()[0] {
		return false
	}
	return j.Lattice == "-" || j.Lattice == c.Lattices[j.Env][0]
}

// policyUnit is the file beside evaluation unit u holding its trained
// policy (written for clip jobs only; same name and key as u, so the
// same content wherever it is computed).
func policyUnit(u unit) unit { return unit{"policy", u.name, u.key, ".json"} }

// ClipsFile is the content of clips/clips.json.
type ClipsFile struct {
	Clips []ClipEntry `json:"clips"`
	// Skipped lists the clips not written, with the reason.
	Skipped []ClipSkip `json:"skipped,omitempty"`
}

// ClipEntry describes one clip.
type ClipEntry struct {
	File string `json:"file"`
	Env  string `json:"env"`
	// Method is "expert" or the method whose reward the policy was trained on.
	Method  string `json:"method"`
	Lattice string `json:"lattice"`
	Client  int    `json:"client"`
	Seed    uint64 `json:"seed"`
	// ResetSeed is the episode's Reset seed, the same for every clip of an environment.
	ResetSeed uint64 `json:"reset_seed"`
	// FrameSkip is the number of frames each action is held (1: every frame).
	FrameSkip int `json:"frame_skip"`
	// Policy is the unit file whose policy acts, under units/.
	Policy string `json:"policy"`
	// Key hashes everything the clip depends on; a clip on disk with the same key is not redrawn.
	Key string `json:"key"`
	render.Result
}

// ClipSkip is a clip that could not be written.
type ClipSkip struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

type clipSpec struct {
	Kind      string         `json:"kind"`
	Version   int            `json:"version"`
	Env       string         `json:"env"`
	Client    int            `json:"client"`
	Noise     uint64         `json:"noise"`
	Reset     uint64         `json:"reset"`
	Policy    string         `json:"policy"`
	FrameSkip int            `json:"frame_skip"`
	Options   render.Options `json:"options"`
}

// clip is one clip to draw: its manifest entry and the unit of its policy.
type clip struct {
	entry  ClipEntry
	noise  uint64
	policy unit
	// expert reads the policy from an expert unit, else from a policy unit.
	expert bool
}

// clipPlan lists env's clips: the expert's, then one per method in
// methods order that has an evaluation run in the clip slot.
func (s *Study) clipPlan(env string) ([]clip, error) {
	c := s.cfg
	client, seed := c.AllClients()[0], c.Seed
	base := ClipEntry{Env: env, Client: client, Seed: seed, ResetSeed: seedOf(seed, "clip-reset", client), FrameSkip: 1}
	noise := seedOf(seed, "clip-noise", client)
	eu, _, err := s.expertUnit(env, client, seed)
	if err != nil {
		return nil, err
	}
	e := base
	e.Method, e.Lattice = "expert", "-"
	out := []clip{{entry: e, noise: noise, policy: eu, expert: true}}
	for _, j := range s.evalJobs() {
		if j.Env != env || !s.clipJob(j) {
			continue
		}
		u, sp, err := s.evalUnit(j)
		if err != nil {
			return nil, err
		}
		e := base
		e.Method, e.Lattice = j.Method, j.Lattice
		e.FrameSkip = max(sp.FrameSkip, 1)
		out = append(out, clip{entry: e, noise: noise, policy: policyUnit(u)})
	}
	for i := range out {
		cl := &out[i]
		cl.entry.File = fmt.Sprintf("%s-%s.gif", env, cl.entry.Method)
		cl.entry.Policy = filepath.ToSlash(filepath.Join(cl.policy.kind, cl.policy.name+"-"+cl.policy.key+cl.policy.ext))
		cl.entry.Key = key(clipSpec{"clip", unitVersion, env, client, cl.noise, cl.entry.ResetSeed, cl.entry.Policy,
			cl.entry.FrameSkip, c.Clips.options()})
	}
	return out, nil
}

// writeClips writes clips/ (ClipsConfig) when clips are enabled: a clip
// already on disk under the same key is kept, a clip whose policy is not
// stored is skipped and logged, and each GIF is written atomically.
func (s *Study) writeClips() error {
	if !s.cfg.Clips.Enabled {
		return nil
	}
	dir := filepath.Join(s.dir, "clips")
	manifest := filepath.Join(dir, "clips.json")
	old := map[string]ClipEntry{}
	var prev ClipsFile
	if exists(manifest) {
		if err := readJSON(manifest, &prev); err != nil {
			return err
		}
		for _, e := range prev.Clips {
			old[e.File] = e
		}
	}
	var out ClipsFile
	kept := 0
	for _, env := range s.cfg.Envs {
		plan, err := s.clipPlan(env)
		if err != nil {
			return err
		}
		for _, cl := range plan {
			path := filepath.Join(dir, cl.entry.File)
			if e, ok := old[cl.entry.File]; ok && e.Key == cl.entry.Key && exists(path) {
				out.Clips = append(out.Clips, e)
				kept++
				continue
			}
			e, why, err := s.drawClip(cl, path)
			if err != nil {
				return fmt.Errorf("clip %s: %w", cl.entry.File, err)
			}
			if why != "" {
				out.Skipped = append(out.Skipped, ClipSkip{cl.entry.File, why})
				fmt.Fprintf(s.log, "  clip %s skipped: %s\n", cl.entry.File, why)
				continue
			}
			out.Clips = append(out.Clips, e)
			fmt.Fprintf(s.log, "  clip %s (%d steps, return %.1f, %d frames)\n", e.File, e.Steps, e.Return, e.Frames)
		}
	}
	fmt.Fprintf(s.log, "clips: %d written, %d on disk, %d skipped\n", len(out.Clips)-kept, kept, len(out.Skipped))
	return report.WriteJSON(manifest, out)
}

// drawClip renders cl into path; a non-empty reason says why it was not
// drawn (its policy is not stored).
func (s *Study) drawClip(cl clip, path string) (ClipEntry, string, error) {
	e := cl.entry
	pu := cl.policy.path(s.units)
	if !exists(pu) {
		if cl.expert {
			return e, fmt.Sprintf("the expert unit %s is not on disk", e.Policy), nil
		}
		return e, fmt.Sprintf("no policy stored for the %s evaluation (%s): its unit was computed with clips disabled; delete units/eval/%s-%s.json to recompute it with its policy",
			e.Method, e.Policy, cl.policy.name, cl.policy.key), nil
	}
	var pol *ppo.Policy
	if cl.expert {
		_, p, err := s.readExpert(cl.policy)
		if err != nil {
			return e, "", err
		}
		pol = p
	} else {
		var ck ppo.Checkpoint
		if err := readJSON(pu, &ck); err != nil {
			return e, "", err
		}
		p, err := ppo.FromCheckpoint(&ck)
		if err != nil {
			return e, "", fmt.Errorf("%s: %w", pu, err)
		}
		pol = p
	}
	env, err := registry.Make(e.Env, e.Client, nil, cl.noise)
	if err != nil {
		return e, "", err
	}
	g, res, err := render.Episode(env, e.Env, e.ResetSeed, holdAction(modePolicy(pol), e.FrameSkip), s.cfg.Clips.options())
	if err != nil {
		return e, "", err
	}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, g); err != nil {
		return e, "", err
	}
	if err := report.WriteFile(path, buf.Bytes()); err != nil {
		return e, "", err
	}
	e.Result = res
	return e, "", nil
}

// modePolicy returns p's mode action as a render.Policy.
func modePolicy(p *ppo.Policy) render.Policy {
	act := make([]float64, p.Action.Dim())
	return func(obs []float64) []float64 { return p.Act(act, obs, nil) }
}

// holdAction returns a policy that asks p once every skip calls and repeats
// its action in between: stepped frame by frame, the episode of p trained
// on envs.FrameSkip with skip (so a clip draws every frame, the wrapper's
// intermediate ones included).
func holdAction(p render.Policy, skip int) render.Policy {
	if skip <= 1 {
		return p
	}
	var held []float64
	t := 0
	return func(obs []float64) []float64 {
		if t%skip == 0 {
			held = append(held[:0], p(obs)...)
		}
		t++
		return held
	}
}
