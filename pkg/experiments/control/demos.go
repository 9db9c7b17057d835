package control

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"github.com/fedirl/fedirl/pkg/envs"
	"io"
	"math/rand/v2"
	"slices"

	"github.com/sbinet/npyio/npy"
	"github.com/sbinet/npyio/npz"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/irl"
	fnpy "github.com/fedirl/fedirl/pkg/npy"
	"github.com/fedirl/fedirl/pkg/tasks"
)

type demosSpec struct {
	Kind          string `json:"kind"`
	Version       int    `json:"version"`
	Expert        string `json:"expert"`
	Episodes      int    `json:"episodes"`
	Deterministic bool   `json:"deterministic"`
	// Start is this client's region of start states (env.<id>.demo_start).
	Start *StartRegion `json:"start,omitempty"`
	// FrameSkip is env.<id>.frame_skip when > 1: the expert acts once
	// every FrameSkip frames and each recorded step holds its action for
	// them (envs.FrameSkip), so a step is a lattice step.
	FrameSkip int `json:"frame_skip,omitempty"`
	// Random is set for a failing demonstrator (failing_demonstrators):
	// the client demonstrates with a uniformly random policy.
	Random bool `json:"random,omitempty"`
}

func (s *Study) demosUnit(env string, client int, seed uint64) (unit, demosSpec, unit, expertSpec, error) {
	eu, es, err := s.expertUnit(env, client, seed)
	if err != nil {
		return unit{}, demosSpec{}, unit{}, expertSpec{}, err
	}
	sp := demosSpec{Kind: "demos", Version: unitVersion, Expert: eu.key, Episodes: s.cfg.EpisodesPerClient, Deterministic: s.cfg.DeterministicExperts}
	if k := s.frameSkip(env); k > 1 {
		sp.FrameSkip = k
	}
	sp.Random = s.cfg.failing(client)
	if ds := s.cfg.Env[env].DemoStart; ds != nil {
		if k := slices.Index(s.cfg.TrainingClients(), client); k >= 0 {
			w := (ds.High - ds.Low) / float64(s.cfg.NumberOfClients)
			sp.Start = &StartRegion{ds.State, ds.Low + float64(k)*w, ds.Low + float64(k+1)*w}
		}
	}
	return unit{"demos", fmt.Sprintf("%s-c%d-s%d", env, client, seed), key(sp), ".npz"}, sp, eu, es, nil
}

// Demos are one client's demonstrations, in imitation's trajectory fields
// (obs with T+1 rows per episode, acts, rews, terminal per episode, and
// indices: the split points of the concatenated episodes) plus the
// simulator's full states (T+1 per episode), which the lattice snaps.
type Demos struct {
	Obs, Acts, States [][]float64
	Rews              []float64
	Terminal          []bool
	// Lengths are the episodes' numbers of actions.
	Lengths []int
}

func (s *Study) runDemos(ctx context.Context, u unit, sp demosSpec, eu unit, es expertSpec) error {
	_, pol, err := s.readExpert(eu)
	if err != nil {
		return err
	}
	env, err := heldEnv(es.Env, es.Client, sp.FrameSkip, seedOf(es.Seed, "demo-noise", es.Client))
	if err != nil {
		return err
	}
	// The lattice's state: the simulator's full state where it can be read
	// (classic), else the state coordinates of the observation; an
	// environment studied only on its point probe (no lattice
	// discretisation) records the observation itself.
	stateOf := slices.Clone[[]float64]
	if ce, err := tasks.LookupControl(es.Env); err == nil {
		stateOf = func(obs []float64) []float64 {
			if st, ok := env.(interface{ State([]float64) []float64 }); ok && !ce.Counted {
				return st.State(nil)
			}
			return ce.StateOf(make([]float64, len(ce.Grids["paper"].State)), obs)
		}
	} else if !slices.Equal(s.cfg.Lattices[es.Env], []string{LatticePoints}) {
		return err
	}
	var rng *rand.Rand
	if !sp.Deterministic {
		rng = rand.New(rand.NewPCG(seedOf(es.Seed, "demo-actions", es.Client), 0))
	}
	var d Demos
	space := env.ActionSpace()
	act := make([]float64, space.Dim())
	var actor interface {
		Act(dst, obs []float64, rng *rand.Rand) []float64
	} = pol
	if sp.Random {
		// the failing demonstrator; the expert is trained all the same (its return anchors the client)
		actor = randomActor{space, rand.New(rand.NewPCG(seedOf(es.Seed, "demo-random", es.Client), 0))}
	}
	for ep := range sp.Episodes {
		if err := ctx.Err(); err != nil {
			return err
		}
		obs := env.Reset(seedOf(es.Seed, "demo-reset", es.Client, ep))
		if sp.Start != nil {
			if obs, err = startIn(env, *sp.Start, seedOf(es.Seed, "demo-start", es.Client, ep)); err != nil {
				return fmt.Errorf("demonstrations %s: %w", u.name, err)
			}
		}
		d.Obs = append(d.Obs, slices.Clone(obs))
		d.States = append(d.States, stateOf(obs))
		n, term := 0, false
		for {
			actor.Act(act, obs, rng)
			var r float64
			var trunc bool
			obs, r, term, trunc = env.Step(act)
			d.Acts = append(d.Acts, slices.Clone(act))
			d.Rews = append(d.Rews, r)
			d.Obs = append(d.Obs, slices.Clone(obs))
			d.States = append(d.States, stateOf(obs))
			n++
			if term || trunc {
				break
			}
		}
		d.Terminal = append(d.Terminal, term)
		d.Lengths = append(d.Lengths, n)
	}
	return writeDemos(u.path(s.units), &d)
}

// randomActor acts uniformly at random from its own stream (a failing
// demonstrator), ignoring the observation and the caller's stream.
type randomActor struct {
	space envs.Space
	rng   *rand.Rand
}

// Act implements the demonstrator's policy.
func (r randomActor) Act(dst, _ []float64, _ *rand.Rand) []float64 { return r.space.Sample(dst, r.rng) }

func dense(rows [][]float64) *mat.Dense {
	m := mat.NewDense(len(rows), len(rows[0]), nil)
	for i, r := range rows {
		m.SetRow(i, r)
	}
	return m
}

// DemosFields are the arrays of a demonstrations file: imitation's
// trajectory fields as its imitation.data.serialize .npz loader splits
// them (obs, acts, infos, terminal, rews, indices), then states.
var DemosFields = []string{"obs", "acts", "rews", "terminal", "indices", "states", "infos"}

// writeDemos writes d as an .npz archive of DemosFields. infos is what
// imitation writes for trajectories without info dicts (an object array of
// empty dicts, one per action); fedirl's readers ignore it.
func writeDemos(path string, d *Demos) error {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	idx := make([]int64, 0, len(d.Lengths))
	at := int64(0)
	for _, n := range d.Lengths[:len(d.Lengths)-1] {
		at += int64(n)
		idx = append(idx, at)
	}
	for _, e := range []struct {
		name string
		v    any
	}{{"obs", dense(d.Obs)}, {"acts", dense(d.Acts)}, {"rews", d.Rews}, {"terminal", d.Terminal},
		{"indices", idx}, {"states", dense(d.States)}, {"infos", nil}} {
		ew, err := zw.Create(e.name)
		if err == nil {
			if e.v == nil {
				_, err = ew.Write(fnpy.EncodeEmptyDicts(len(d.Acts)))
			} else {
				err = npy.Write(ew, e.v)
			}
		}
		if err != nil {
			return fmt.Errorf("writing %s: field %s: %w", path, e.name, err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return report.WriteFile(path, buf.Bytes())
}

// ReadDemos reads a demonstrations file written by the study.
func ReadDemos(path string) (*Demos, error) {
	r, err := npz.Open(path)
	if err != nil {
		return nil, fmt.Errorf("demonstrations %s: %w", path, err)
	}
	defer r.Close()
	var d Demos
	var idx []int64
	matrix := func(name string) ([][]float64, error) {
		var flat []float64
		h, err := readNPY(r, name, &flat)
		if err != nil {
			return nil, fmt.Errorf("demonstrations %s: field %s: %w", path, name, err)
		}
		sh := h.Descr.Shape
		if len(sh) != 2 || sh[0]*sh[1] != len(flat) || h.Descr.Fortran {
			return nil, fmt.Errorf("demonstrations %s: field %s has shape %v, want a C-ordered matrix", path, name, sh)
		}
		out := make([][]float64, sh[0])
		for i := range out {
			out[i] = flat[i*sh[1] : (i+1)*sh[1] : (i+1)*sh[1]]
		}
		return out, nil
	}
	var err2 error
	if d.Obs, err2 = matrix("obs"); err2 != nil {
		return nil, err2
	}
	if d.Acts, err2 = matrix("acts"); err2 != nil {
		return nil, err2
	}
	if d.States, err2 = matrix("states"); err2 != nil {
		return nil, err2
	}
	for _, e := range []struct {
		name string
		ptr  any
	}{{"rews", &d.Rews}, {"terminal", &d.Terminal}, {"indices", &idx}} {
		if _, err := readNPY(r, e.name, e.ptr); err != nil {
			return nil, fmt.Errorf("demonstrations %s: field %s: %w", path, e.name, err)
		}
	}
	prev := int64(0)
	for _, at := range append(idx, int64(len(d.Acts))) {
		if at < prev {
			return nil, fmt.Errorf("demonstrations %s: indices not increasing", path)
		}
		d.Lengths = append(d.Lengths, int(at-prev))
		prev = at
	}
	if len(d.Lengths) != len(d.Terminal) || len(d.States) != len(d.Acts)+len(d.Lengths) {
		return nil, fmt.Errorf("demonstrations %s: %d episodes, %d terminal flags, %d states for %d actions: inconsistent", path, len(d.Lengths), len(d.Terminal), len(d.States), len(d.Acts))
	}
	return &d, nil
}

// readNPY reads one array of an npz archive into ptr and returns its header.
// It reads the whole entry into memory first: npyio's npy reader assumes
// full reads, which a deflated zip entry does not give.
func readNPY(r *npz.Reader, name string, ptr any) (*npy.Header, error) {
	rc, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	nr, err := npy.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	if err := nr.Read(ptr); err != nil {
		return nil, err
	}
	return &nr.Header, nil
}

// Trajectories snaps the demonstrations onto grid g.
func (d *Demos) Trajectories(g *discretize.Grid) ([]irl.Trajectory, error) {
	var out []irl.Trajectory
	s, a := 0, 0
	for ep, n := range d.Lengths {
		st, ac, err := g.SnapTrajectory(d.States[s:s+n+1], d.Acts[a:a+n], d.Terminal[ep])
		if err != nil {
			return nil, fmt.Errorf("episode %d: %w", ep, err)
		}
		out = append(out, irl.Trajectory{States: st, Actions: ac})
		s += n + 1
		a += n
	}
	return out, nil
}

// Returns returns the true return of each episode.
func (d *Demos) Returns() []float64 {
	var out []float64
	a := 0
	for _, n := range d.Lengths {
		out = append(out, floats.Sum(d.Rews[a:a+n]))
		a += n
	}
	return out
}

// stateLabels returns the names of env's settable simulator state, or an
// error when its state cannot be set.
func stateLabels(env string) ([]string, error) {
	e, err := registry.Make(env, 0, nil, 0)
	if err != nil {
		return nil, err
	}
	st, ok := e.(classic.Stateful)
	if !ok {
		return nil, fmt.Errorf("%s's simulator state cannot be set", env)
	}
	return st.StateLabels(), nil
}

// startIn moves a freshly reset env's state coordinate r.State to a uniform
// draw in [r.Low, r.High) (seeded by seed) and returns the observation of
// the new start state.
func startIn(env any, r StartRegion, seed uint64) ([]float64, error) {
	st, ok := env.(classic.Stateful)
	if !ok {
		return nil, fmt.Errorf("demo_start: the simulator's state cannot be set")
	}
	i := slices.Index(st.StateLabels(), r.State)
	if i < 0 {
		return nil, fmt.Errorf("demo_start.state %q: not a state coordinate (%v)", r.State, st.StateLabels())
	}
	x := st.State(nil)
	x[i] = r.Low + rand.New(rand.NewPCG(seed, 0)).Float64()*(r.High-r.Low)
	if err := st.SetState(x); err != nil {
		return nil, fmt.Errorf("demo_start: %w", err)
	}
	return st.Observe(), nil
}
