package control

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/sbinet/npyio/npy"
	"github.com/sbinet/npyio/npz"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/envs"
	"github.com/fedirl/fedirl/pkg/envs/classic"
	"github.com/fedirl/fedirl/pkg/envs/registry"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/ot"
	"github.com/fedirl/fedirl/pkg/rl/ppo"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// unitVersion is part of every unit key; bump it when a unit's computation changes.
const unitVersion = 1

// key hashes the JSON of v (a struct of everything a unit depends on).
func key(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("control: unit key: %v", err)) // keys are plain structs
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// unit is one unit of work: its file and what it depends on.
type unit struct {
	kind string // expert, demos, irl, fusion, eval
	name string // human-readable part of the file name
	key  string
	ext  string
}

func (u unit) path(dir string) string {
	return filepath.Join(dir, "units", u.kind, u.name+"-"+u.key+u.ext)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// seedOf derives a seed for purpose from the study seed s and indices.
func seedOf(s uint64, purpose string, idx ...int) uint64 {
	h := sha256.New()
	fmt.Fprintf(h, "%d/%s", s, purpose)
	for _, i := range idx {
		fmt.Fprintf(h, "/%d", i)
	}
	var b [8]byte
	copy(b[:], h.Sum(nil))
	v := uint64(0)
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v >> 1 // non-negative as int64 too
}

// ---- experts ----

type expertSpec struct {
	Kind    string     `json:"kind"`
	Version int        `json:"version"`
	Env     string     `json:"env"`
	Client  int        `json:"client"`
	Seed    uint64     `json:"seed"`
	PPO     ppo.Config `json:"ppo"`
	Steps   int        `json:"steps"`
}

// ExpertFile is the content of an expert unit.
type ExpertFile struct {
	Env        string          `json:"env"`
	Client     int             `json:"client"`
	Seed       uint64          `json:"seed"`
	Steps      int             `json:"steps"`
	EvalReturn float64         `json:"eval_return"` // mean true return of the mode policy over 20 episodes
	Policy     *ppo.Checkpoint `json:"policy"`
}

func preset(env, name string) (ppo.Config, error) {
	if name == "" {
		name = env
		if _, err := ppo.Preset(name); err != nil {
			name = "sb3"
		}
	}
	return ppo.Preset(name)
}

func (s *Study) expertUnit(env string, client int, seed uint64) (unit, expertSpec, error) {
	ec := s.cfg.Env[env]
	c, err := preset(env, ec.ExpertPreset)
	if err != nil {
		return unit{}, expertSpec{}, err
	}
	sp := expertSpec{"expert", unitVersion, env, client, seed, c, ec.TotalExpertSteps}
	return unit{"expert", fmt.Sprintf("%s-c%d-s%d", env, client, seed), key(sp), ".json"}, sp, nil
}

func clientMaker(env string, client int, seed uint64) ppo.EnvMaker {
	return func(i int) (envs.Env, error) {
		return registry.Make(env, client, nil, seedOf(seed, "noise", client, i))
	}
}

func (s *Study) runExpert(ctx context.Context, u unit, sp expertSpec) error {
	tr, err := ppo.NewTrainer(sp.PPO, clientMaker(sp.Env, sp.Client, sp.Seed), ppo.Options{Seed: seedOf(sp.Seed, "expert", sp.Client), Workers: 1})
	if err != nil {
		return fmt.Errorf("expert %s client %d: %w", sp.Env, sp.Client, err)
	}
	if err := tr.Learn(ctx, sp.Steps); err != nil {
		return err
	}
	env, err := registry.Make(sp.Env, sp.Client, nil, seedOf(sp.Seed, "expert-eval", sp.Client))
	if err != nil {
		return err
	}
	ret := ppo.Evaluate(tr.Policy(), env, 20, seedOf(sp.Seed, "expert-eval-reset", sp.Client), true, 0)
	ck, err := tr.Policy().Checkpoint(&sp.PPO)
	if err != nil {
		return err
	}
	return report.WriteJSON(u.path(s.dir), ExpertFile{sp.Env, sp.Client, sp.Seed, sp.Steps, floats.Sum(ret) / float64(len(ret)), ck})
}

func (s *Study) readExpert(u unit) (*ExpertFile, *ppo.Policy, error) {
	var f ExpertFile
	if err := readJSON(u.path(s.dir), &f); err != nil {
		return nil, nil, err
	}
	p, err := ppo.FromCheckpoint(f.Policy)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", u.path(s.dir), err)
	}
	return &f, p, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w (delete the file to recompute the unit)", path, err)
	}
	return nil
}

// ---- demonstrations ----

type demosSpec struct {
	Kind          string `json:"kind"`
	Version       int    `json:"version"`
	Expert        string `json:"expert"`
	Episodes      int    `json:"episodes"`
	Deterministic bool   `json:"deterministic"`
}

func (s *Study) demosUnit(env string, client int, seed uint64) (unit, demosSpec, unit, expertSpec, error) {
	eu, es, err := s.expertUnit(env, client, seed)
	if err != nil {
		return unit{}, demosSpec{}, unit{}, expertSpec{}, err
	}
	sp := demosSpec{"demos", unitVersion, eu.key, s.cfg.EpisodesPerClient, s.cfg.DeterministicExperts}
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
	env, err := registry.Make(es.Env, es.Client, nil, seedOf(es.Seed, "demo-noise", es.Client))
	if err != nil {
		return err
	}
	ce, err := tasks.LookupControl(es.Env)
	if err != nil {
		return err
	}
	// The lattice's state: the simulator's full state where it can be read
	// (classic), else the state coordinates of the observation.
	stateOf := func(obs []float64) []float64 {
		if st, ok := env.(interface{ State([]float64) []float64 }); ok && !ce.Counted {
			return st.State(nil)
		}
		return ce.StateOf(make([]float64, len(ce.Grids["paper"].State)), obs)
	}
	var rng *rand.Rand
	if !sp.Deterministic {
		rng = rand.New(rand.NewPCG(seedOf(es.Seed, "demo-actions", es.Client), 0))
	}
	var d Demos
	act := make([]float64, env.ActionSpace().Dim())
	for ep := range sp.Episodes {
		if err := ctx.Err(); err != nil {
			return err
		}
		obs := env.Reset(seedOf(es.Seed, "demo-reset", es.Client, ep))
		d.Obs = append(d.Obs, slices.Clone(obs))
		d.States = append(d.States, stateOf(obs))
		n, term := 0, false
		for {
			pol.Act(act, obs, rng)
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
	return writeDemos(u.path(s.dir), &d)
}

func dense(rows [][]float64) *mat.Dense {
	m := mat.NewDense(len(rows), len(rows[0]), nil)
	for i, r := range rows {
		m.SetRow(i, r)
	}
	return m
}

func writeDemos(path string, d *Demos) error {
	var buf bytes.Buffer
	w := npz.NewWriter(&buf)
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
		{"indices", idx}, {"states", dense(d.States)}} {
		if err := w.Write(e.name, e.v); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err := w.Close(); err != nil {
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

// ---- local IRL ----

type irlSpec struct {
	Kind       string                 `json:"kind"`
	Version    int                    `json:"version"`
	Demos      string                 `json:"demos"`
	Env        string                 `json:"env"`
	Client     int                    `json:"client"`
	Probe      tasks.ControlProbe     `json:"probe"`
	Model      discretize.ModelConfig `json:"model"`
	Rollouts   *RolloutConfig         `json:"rollouts,omitempty"`
	IRL        IRLConfig              `json:"irl"`
	Iterations int                    `json:"iterations"`
}

// IRLFile is the content of a local IRL unit: θ and its convergence diagnostics.
type IRLFile struct {
	Env        string    `json:"env"`
	Lattice    string    `json:"lattice"`
	Client     int       `json:"client"`
	Seed       uint64    `json:"seed"`
	Pairs      int       `json:"pairs"`
	Theta      []float64 `json:"theta"`
	Iterations int       `json:"iterations"`
	// GradNorm is ‖∇‖₂ at the final θ; GradNorm0 at θ = 0.
	GradNorm, GradNorm0 float64
	// FeatureGap is ‖μ_D − μ_π‖ / ‖μ_D‖ at the final θ.
	FeatureGap float64 `json:"feature_gap"`
	// LogLik0 and LogLik are the demonstrations' log-likelihood at θ = 0 and at the final θ.
	LogLik0, LogLik float64
	DemoSteps       int `json:"demo_steps"`
}

func (s *Study) probe(env, lattice string) (tasks.ControlProbe, error) {
	ce, err := tasks.LookupControl(env)
	if err != nil {
		return tasks.ControlProbe{}, err
	}
	g, err := ce.Grid(lattice, s.cfg.Env[env].Bins)
	if err != nil {
		return tasks.ControlProbe{}, err
	}
	return ce.Probe(g), nil
}

func (s *Study) irlUnit(env, lattice string, client int, seed uint64) (unit, irlSpec, error) {
	du, _, _, _, err := s.demosUnit(env, client, seed)
	if err != nil {
		return unit{}, irlSpec{}, err
	}
	p, err := s.probe(env, lattice)
	if err != nil {
		return unit{}, irlSpec{}, err
	}
	m := s.cfg.Model.WithDefaults()
	m.Seed = seedOf(m.Seed, "model", client)
	sp := irlSpec{Kind: "irl", Version: unitVersion, Demos: du.key, Env: env, Client: client, Probe: p, Model: m, IRL: s.cfg.IRL, Iterations: s.cfg.Env[env].IRLIterations}
	if ce, _ := tasks.LookupControl(env); ce.Counted {
		r := s.cfg.ModelRollouts
		sp.Rollouts = &r
	}
	return unit{"irl", fmt.Sprintf("%s-%s-c%d-s%d", env, lattice, client, seed), key(sp), ".json"}, sp, nil
}

func (s *Study) runIRL(ctx context.Context, u unit, sp irlSpec, lattice string, seed uint64, workers int) error {
	du, _, _, _, err := s.demosUnit(sp.Env, sp.Client, seed)
	if err != nil {
		return err
	}
	d, err := ReadDemos(du.path(s.dir))
	if err != nil {
		return err
	}
	g, phi, err := sp.Probe.Features()
	if err != nil {
		return err
	}
	var m *mdp.MDP
	if sp.Rollouts != nil {
		m, err = s.countedModel(ctx, g, sp, seed)
	} else {
		var params map[string]float64
		if params, err = classic.ClientParams(sp.Env, sp.Client); err != nil {
			return err
		}
		m, err = discretize.SampleModel(ctx, g, func() (discretize.Simulator, error) { return classic.MakeWithParams(sp.Env, params) }, sp.Model, workers)
	}
	if err != nil {
		return fmt.Errorf("%s client %d %s lattice model: %w", sp.Env, sp.Client, lattice, err)
	}
	demos, err := d.Trajectories(g)
	if err != nil {
		return fmt.Errorf("%s: %w", du.path(s.dir), err)
	}
	cfg := irl.Config{LearningRate: sp.IRL.LearningRate, Temperature: sp.IRL.Temperature, L2: sp.IRL.L2,
		MaxIter: sp.Iterations, Optimizer: sp.IRL.Optimizer, GradTol: -1,
		Solver: mdp.Options{Tol: sp.IRL.SolverTol, Anderson: sp.IRL.Anderson, Newton: sp.IRL.Solver == "newton", Workers: workers}}
	res, err := irl.MaxEnt(ctx, m, phi, demos, cfg)
	if err != nil {
		return fmt.Errorf("%s client %d %s: MaxEnt: %w", sp.Env, sp.Client, lattice, err)
	}
	f := IRLFile{Env: sp.Env, Lattice: lattice, Client: sp.Client, Seed: seed, Pairs: g.NumPairs(), Theta: res.Theta,
		Iterations: res.Iterations, GradNorm: res.GradNorm[len(res.GradNorm)-1], GradNorm0: res.GradNorm[0],
		LogLik0: res.LogLik[0], LogLik: res.LogLik[len(res.LogLik)-1], DemoSteps: len(d.Acts)}
	gap := make([]float64, len(res.EmpiricalFeatures))
	floats.SubTo(gap, res.EmpiricalFeatures, res.ExpectedFeatures)
	if n := floats.Norm(res.EmpiricalFeatures, 2); n > 0 {
		f.FeatureGap = floats.Norm(gap, 2) / n
	}
	return report.WriteJSON(u.path(s.dir), f)
}

// RolloutConfig configures the counted lattice model of a simulator whose
// state cannot be set: Episodes episodes of the client's expert, each action
// replaced with probability Epsilon by a uniform random one.
type RolloutConfig struct {
	Episodes int     `json:"episodes" yaml:"episodes"`
	Epsilon  float64 `json:"epsilon" yaml:"epsilon"`
}

// countedModel counts the client's own ε-greedy expert rollouts on g.
func (s *Study) countedModel(ctx context.Context, g *discretize.Grid, sp irlSpec, seed uint64) (*mdp.MDP, error) {
	eu, _, err := s.expertUnit(sp.Env, sp.Client, seed)
	if err != nil {
		return nil, err
	}
	_, pol, err := s.readExpert(eu)
	if err != nil {
		return nil, err
	}
	ce, err := tasks.LookupControl(sp.Env)
	if err != nil {
		return nil, err
	}
	env, err := registry.Make(sp.Env, sp.Client, nil, seedOf(seed, "rollout-noise", sp.Client))
	if err != nil {
		return nil, err
	}
	space := env.ActionSpace()
	rng := rand.New(rand.NewPCG(seedOf(seed, "rollouts", sp.Client), 0))
	c := discretize.NewCounter(g)
	act := make([]float64, space.Dim())
	x, nx := make([]float64, g.StateDim()), make([]float64, g.StateDim())
	for ep := range sp.Rollouts.Episodes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		obs := env.Reset(seedOf(seed, "rollout-reset", sp.Client, ep))
		for {
			ce.StateOf(x, obs)
			if rng.Float64() < sp.Rollouts.Epsilon {
				for j := range act {
					act[j] = space.Low[j] + (space.High[j]-space.Low[j])*rng.Float64()
				}
			} else {
				pol.Act(act, obs, nil)
			}
			o, _, term, trunc := env.Step(act)
			obs = o
			ce.StateOf(nx, obs)
			if err := c.AddState(x, act, nx, term); err != nil {
				return nil, err
			}
			if term || trunc {
				break
			}
		}
	}
	return c.Model(sp.Model.Gamma)
}

// ---- fusion ----

type fusionSpec struct {
	Kind    string             `json:"kind"`
	Version int                `json:"version"`
	Local   []string           `json:"local"`
	Probe   tasks.ControlProbe `json:"probe"`
	Fusion  fusion.Options     `json:"fusion"`
}

// FusionFile is the content of a fusion unit.
type FusionFile struct {
	Env           string    `json:"env"`
	Lattice       string    `json:"lattice"`
	Seed          uint64    `json:"seed"`
	Method        string    `json:"method"`
	Theta         []float64 `json:"theta"`
	MarginalError float64   `json:"marginal_error"`
	Iterations    int       `json:"iterations"`
}

func (s *Study) fusionOptions(method string) fusion.Options {
	if method == MethodMean {
		return fusion.Options{Method: fusion.MethodMean}
	}
	o := fusion.Options{Method: fusion.MethodBarycentric, Solver: ot.IBP, Eps: s.cfg.Barycenter.Epsilon,
		MaxIter: s.cfg.Barycenter.BarycenterIterations, InnerIter: s.cfg.Barycenter.SinkhornIterations}
	if method == MethodDebiased {
		o.Solver = ot.Debiased
	}
	return o
}

func (s *Study) fusionUnit(env, lattice, method string, seed uint64) (unit, fusionSpec, []unit, error) {
	var locals []unit
	var keys []string
	for c := range s.cfg.NumberOfClients {
		u, _, err := s.irlUnit(env, lattice, c, seed)
		if err != nil {
			return unit{}, fusionSpec{}, nil, err
		}
		locals = append(locals, u)
		keys = append(keys, u.key)
	}
	p, err := s.probe(env, lattice)
	if err != nil {
		return unit{}, fusionSpec{}, nil, err
	}
	sp := fusionSpec{"fusion", unitVersion, keys, p, s.fusionOptions(method)}
	return unit{"fusion", fmt.Sprintf("%s-%s-%s-s%d", env, lattice, method, seed), key(sp), ".json"}, sp, locals, nil
}

// fixedLearner submits a θ learned earlier (a local IRL unit).
type fixedLearner struct {
	theta []float64
	demos int
}

func (l fixedLearner) Learn(context.Context, federation.TaskSpec, []float64) (federation.LocalResult, error) {
	return federation.LocalResult{Theta: slices.Clone(l.theta), DemoCount: l.demos}, nil
}

func (s *Study) runFusion(ctx context.Context, u unit, sp fusionSpec, locals []unit, env, lattice, method string, seed uint64) error {
	var clients []federation.LocalClient
	for i, lu := range locals {
		var f IRLFile
		if err := readJSON(lu.path(s.dir), &f); err != nil {
			return err
		}
		clients = append(clients, federation.LocalClient{ID: fmt.Sprintf("client-%06d", i), Learner: fixedLearner{f.Theta, f.DemoSteps}})
	}
	probe, err := json.Marshal(sp.Probe)
	if err != nil {
		return err
	}
	spec := federation.TaskSpec{ID: u.name, EnvFamily: tasks.Control{}.Name(), Probe: probe, ThetaDim: sp.Probe.RBF.Dim(),
		Quorum: len(clients), MinClients: len(clients), Rounds: 1}
	if spec.Fusion, err = tasks.EncodeFusion(sp.Fusion); err != nil {
		return err
	}
	fused, _, err := federation.RunInProcess(ctx, spec, clients, federation.InProcessConfig{Fuser: tasks.NewFuser()})
	if err != nil {
		return fmt.Errorf("federation %s: %w", u.name, err)
	}
	if len(fused) != 1 {
		return fmt.Errorf("federation %s: %d rounds fused, want 1", u.name, len(fused))
	}
	return report.WriteJSON(u.path(s.dir), FusionFile{env, lattice, seed, method, fused[0].Theta, fused[0].MarginalError, fused[0].Iterations})
}

// ---- evaluation ----

type evalSpec struct {
	Kind     string     `json:"kind"`
	Version  int        `json:"version"`
	Env      string     `json:"env"`
	Client   int        `json:"client"`
	Seed     uint64     `json:"seed"`
	Reward   string     `json:"reward"` // key of the θ unit, or "true"
	PPO      ppo.Config `json:"ppo"`
	Steps    int        `json:"steps"`
	LogEvery int        `json:"log_every"`
}

// EvalFile is the content of an evaluation unit: the PPO learning curve.
type EvalFile struct {
	Env     string      `json:"env"`
	Lattice string      `json:"lattice"`
	Method  string      `json:"method"`
	Seed    uint64      `json:"seed"`
	Client  int         `json:"client"`
	HeldOut bool        `json:"held_out"`
	Curve   []CurveStep `json:"curve"`
	// FinalTrue is the last evaluation's mean true return of the mode policy.
	FinalTrue float64 `json:"final_true"`
}

// CurveStep is one logged point of an evaluation run.
type CurveStep struct {
	Step int `json:"step"`
	// True is the mean true return of the mode policy over 10 episodes.
	True float64 `json:"true"`
	// TrainTrue and TrainLearned are the mean true and learned returns of the last 100 training episodes.
	TrainTrue    float64 `json:"train_true"`
	TrainLearned float64 `json:"train_learned"`
}

// evalJob identifies one evaluation run.
type evalJob struct {
	Env, Lattice, Method string
	Seed                 uint64
	Client               int
}

func (s *Study) heldOut(client int) bool { return client >= s.cfg.NumberOfClients }

// rewardUnit returns the unit whose θ method uses, and its lattice's probe.
func (s *Study) rewardUnit(j evalJob) (unit, error) {
	switch j.Method {
	case MethodTrue:
		return unit{}, nil
	case MethodLocal:
		u, _, err := s.irlUnit(j.Env, j.Lattice, j.Client, j.Seed)
		return u, err
	default:
		u, _, _, err := s.fusionUnit(j.Env, j.Lattice, j.Method, j.Seed)
		return u, err
	}
}

func (s *Study) evalUnit(j evalJob) (unit, evalSpec, error) {
	ec := s.cfg.Env[j.Env]
	c, err := preset(j.Env, ec.EvaluationPreset)
	if err != nil {
		return unit{}, evalSpec{}, err
	}
	ru, err := s.rewardUnit(j)
	if err != nil {
		return unit{}, evalSpec{}, err
	}
	rk := "true"
	if j.Method != MethodTrue {
		rk = ru.key
	}
	sp := evalSpec{"eval", unitVersion, j.Env, j.Client, j.Seed, rk, c, ec.EvaluationSteps, s.cfg.LogEvery}
	return unit{"eval", fmt.Sprintf("%s-%s-%s-c%d-s%d", j.Env, j.Lattice, j.Method, j.Client, j.Seed), key(sp), ".json"}, sp, nil
}

func (s *Study) runEval(ctx context.Context, u unit, sp evalSpec, j evalJob) error {
	opts := ppo.Options{Seed: seedOf(j.Seed, "eval", j.Client), Workers: 1, EvalEvery: sp.LogEvery, EvalEpisodes: 10}
	if j.Method != MethodTrue {
		ru, err := s.rewardUnit(j)
		if err != nil {
			return err
		}
		var theta struct {
			Theta []float64 `json:"theta"`
		}
		if err := readJSON(ru.path(s.dir), &theta); err != nil {
			return err
		}
		p, err := s.probe(j.Env, j.Lattice)
		if err != nil {
			return err
		}
		r, err := p.RewardFunc(theta.Theta)
		if err != nil {
			return err
		}
		opts.Reward = r
	}
	tr, err := ppo.NewTrainer(sp.PPO, clientMaker(j.Env, j.Client, j.Seed), opts)
	if err != nil {
		return err
	}
	if err := tr.Learn(ctx, sp.Steps); err != nil {
		return err
	}
	f := EvalFile{Env: j.Env, Lattice: j.Lattice, Method: j.Method, Seed: j.Seed, Client: j.Client, HeldOut: s.heldOut(j.Client)}
	for _, p := range tr.Curve() {
		if p.EvalReturn == nil {
			continue
		}
		f.Curve = append(f.Curve, CurveStep{p.Steps, *p.EvalReturn, p.MeanTrueReturn, p.MeanLearnedReturn})
	}
	if len(f.Curve) == 0 {
		return fmt.Errorf("evaluation %s: no evaluation point in %d steps (log_every %d)", u.name, sp.Steps, sp.LogEvery)
	}
	f.FinalTrue = f.Curve[len(f.Curve)-1].True
	if math.IsNaN(f.FinalTrue) {
		return fmt.Errorf("evaluation %s: NaN return", u.name)
	}
	return report.WriteJSON(u.path(s.dir), f)
}
