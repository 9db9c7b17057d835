package control

import (
	"context"
	"fmt"
	"sync"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/mdp"
	"github.com/fedirl/fedirl/pkg/tasks"
)

// sharedWork holds what several units of one run compute identically, so
// it is computed once per process: the lattice and its feature matrix Φ per
// probe (environment, lattice, features), which every local IRL, ladder and
// fidelity unit of the probe reads, the thin SVD of Φ per (environment,
// lattice, features) for the ladder's projection, which every client and
// seed of a lattice shares, and each client's sampled lattice model with
// its true reward, which its local IRL, ladder and fidelity units of one
// seed share (the model's sampling seed depends on the client and the study
// seed, see modelConfig; LunarLander's is built from the client's expert
// rollouts, see rolloutModel). Units stay files keyed by their own inputs, so a resumed or
// sharded run recomputes an entry once in each process and writes the same
// bytes. Models are kept up to sharedModelBytes, the oldest dropped first.
type sharedWork struct {
	mu         sync.Mutex
	features   map[string]*featuresEntry
	svds       map[string]*svdEntry
	models     map[string]*modelEntry
	modelOrder []string
	modelBytes int
	fuser      *tasks.Fuser
}

// fuser returns the study's fusion server, one per process, so that the
// fusion units of an environment build its probe once (tasks.Fuser keeps
// the probes it built).
func (s *Study) fuser() *tasks.Fuser {
	s.shared.mu.Lock()
	defer s.shared.mu.Unlock()
	if s.shared.fuser == nil {
		s.shared.fuser = tasks.NewFuser()
	}
	return s.shared.fuser
}

// sharedModelBytes bounds the memory of the kept lattice models (a fine
// lattice's is about 8 MB, an ultra one's about 100 MB).
const sharedModelBytes = 512 << 20

type modelEntry struct {
	once sync.Once
	m    *mdp.MDP
	r    []float64
	f    *mat.Dense // the mean step features of each pair (discretize.ReplayModelSteps), or nil
	err  error
}

// model returns the client's sampled lattice model and true reward on g
// (trueModel), built once per (probe, client, model config); callers get a
// shallow copy of the MDP, so they may set its Horizon or Init, and must
// not modify its slices.
func (s *Study) model(ctx context.Context, probeKey string, g *discretize.Grid, env string, client int, cfg discretize.ModelConfig, workers int) (*mdp.MDP, []float64, error) {
	k := key(struct {
		Probe  string
		Client int
		Model  discretize.ModelConfig
	}{probeKey, client, cfg})
	m, r, _, err := s.shared.cachedModel(k, func() (*mdp.MDP, []float64, *mat.Dense, error) {
		m, r, err := trueModel(ctx, g, env, client, cfg, workers)
		return m, r, nil, err
	})
	return m, r, err
}

// cachedModel returns the model, true reward and step features (nil where
// none were asked for) kept under k, built by build on first use (and again
// after a failed build or once dropped for memory), as a shallow copy of
// the MDP.
func (w *sharedWork) cachedModel(k string, build func() (*mdp.MDP, []float64, *mat.Dense, error)) (*mdp.MDP, []float64, *mat.Dense, error) {
	e := sharedEntry(&w.mu, &w.models, k)
	e.once.Do(func() {
		e.m, e.r, e.f, e.err = build()
		if e.err != nil {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.modelOrder = append(w.modelOrder, k)
		w.modelBytes += modelSize(e.m)
		for w.modelBytes > sharedModelBytes && len(w.modelOrder) > 1 {
			old := w.modelOrder[0]
			w.modelOrder = w.modelOrder[1:]
			w.modelBytes -= modelSize(w.models[old].m)
			delete(w.models, old) // holders keep theirs; the next caller rebuilds it
		}
	})
	if e.err != nil {
		w.mu.Lock()
		if w.models[k] == e {
			delete(w.models, k) // a cancelled build is not remembered
		}
		w.mu.Unlock()
		return nil, nil, nil, e.err
	}
	m := *e.m
	return &m, e.r, e.f, nil
}

// modelSize is the approximate memory of m's slices in bytes.
func modelSize(m *mdp.MDP) int {
	return 8*len(m.RowPtr) + 12*len(m.Next) + 9*m.NumStates + 8*m.NumPairs()
}

// sharedEntry returns the entry kept under k in *m, creating it (and the
// map) under mu on first use; the caller fills it through its sync.Once.
func sharedEntry[E any](mu *sync.Mutex, m *map[string]*E, k string) *E {
	mu.Lock()
	defer mu.Unlock()
	if *m == nil {
		*m = map[string]*E{}
	}
	e := (*m)[k]
	if e == nil {
		e = new(E)
		(*m)[k] = e
	}
	return e
}

type featuresEntry struct {
	once sync.Once
	g    *discretize.Grid
	phi  *mat.Dense
	err  error
}

// features returns the probe's lattice and pair feature matrix
// (tasks.ControlProbe.Features), built once per process under probeKey
// (the probe's unit key); callers must not modify either.
func (s *Study) features(p tasks.ControlProbe) (*discretize.Grid, *mat.Dense, error) {
	e := sharedEntry(&s.shared.mu, &s.shared.features, key(p))
	e.once.Do(func() { e.g, e.phi, e.err = p.Features() })
	return e.g, e.phi, e.err
}

type svdEntry struct {
	once sync.Once
	p    *projector
	err  error
}

// projector returns the projector onto the first n rows of phi, factorized
// on first use under probeKey (the probe's unit key: grid and features).
func (w *sharedWork) projector(probeKey string, phi *mat.Dense, n int) (*projector, error) {
	e := sharedEntry(&w.mu, &w.svds, fmt.Sprintf("%s/%d", probeKey, n))
	e.once.Do(func() { e.p, e.err = newProjector(phi, n) })
	return e.p, e.err
}

// projector holds the thin SVD Φ_n = U Σ Vᵀ of the first n rows of Φ (the
// non-terminal pairs).
type projector struct {
	a    mat.Matrix
	u, v mat.Dense
	sv   []float64
	n    int
}

func newProjector(phi *mat.Dense, n int) (*projector, error) {
	_, d := phi.Dims()
	p := &projector{a: phi.Slice(0, n, 0, d), n: n}
	var svd mat.SVD
	if !svd.Factorize(p.a, mat.SVDThin) {
		return nil, fmt.Errorf("projecting the true reward onto the features: the SVD did not converge")
	}
	p.sv = svd.Values(nil)
	svd.UTo(&p.u)
	svd.VTo(&p.v)
	return p, nil
}

// project returns the minimum-norm argmin_θ ‖Φθ − r‖ over the first n rows
// (the non-terminal pairs), with singular values below 1e-10·σ_max treated
// as zero (a feature set can be rank-deficient on a small lattice), and the
// fit's R² (1 when r is constant and fitted exactly).
func (p *projector) project(r []float64) ([]float64, float64) {
	n := p.n
	b := mat.NewVecDense(n, append([]float64(nil), r[:n]...))
	var utb mat.VecDense
	utb.MulVec(p.u.T(), b)
	for i, s := range p.sv {
		if s > 1e-10*p.sv[0] {
			utb.SetVec(i, utb.AtVec(i)/s)
		} else {
			utb.SetVec(i, 0)
		}
	}
	var x mat.VecDense
	x.MulVec(&p.v, &utb)
	var fit mat.VecDense
	fit.MulVec(p.a, &x)
	mean := floats.Sum(r[:n]) / float64(n)
	var ss, st float64
	for i := range n {
		e := r[i] - fit.AtVec(i)
		ss += e * e
		st += (r[i] - mean) * (r[i] - mean)
	}
	r2 := 1.0
	if st > 0 {
		r2 = 1 - ss/st
	} else if ss > 1e-18*float64(n) {
		r2 = 0
	}
	return mat.Col(nil, 0, &x), r2
}
