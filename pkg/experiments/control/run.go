package control

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/progress"
)

// Shard selects the work of one job of a job array: the (environment, seed)
// groups whose index in the study's fixed order is ≡ Index (mod Count), with
// every unit they need. A group's experts, demonstrations, local IRL,
// ladder and fusions serve only its own evaluations, so no two shards
// compute the same unit and the shards together cost what one run costs.
// The zero Shard (Count 0 or 1) is the whole study.
type Shard struct{ Index, Count int }

// ParseShard reads "i/n" (0 ≤ i < n).
func ParseShard(s string) (Shard, error) {
	var sh Shard
	if _, err := fmt.Sscanf(s, "%d/%d", &sh.Index, &sh.Count); err != nil || sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count {
		return Shard{}, fmt.Errorf("--shard %q: want i/n with 0 ≤ i < n, e.g. 0/3", s)
	}
	return sh, nil
}

func (sh Shard) has(i int) bool { return sh.Count <= 1 || i%sh.Count == sh.Index }

// Study runs the control study into a run folder.
type Study struct {
	cfg Config
	dir string
	// units is the folder of the unit files: dir/units, or a folder shared
	// by several studies (a sweep's regimes), set by UseUnits.
	units string
	jobs  int
	log   io.Writer
	// Progress, when true, draws a progress bar per phase on a terminal.
	Progress bool
	// Computed counts the units computed (not found on disk) by kind.
	Computed map[string]int
	mu       sync.Mutex
	// horizons caches the lattice MDP's horizon per environment.
	horizons map[string]int
	// shared holds work shared by units (shared.go).
	shared sharedWork
}

// New returns a study of cfg writing into dir with jobs parallel units;
// log receives one line per phase and per computed unit.
func New(cfg Config, dir string, jobs int, log io.Writer) (*Study, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if jobs < 1 {
		jobs = runtime.GOMAXPROCS(0)
	}
	if log == nil {
		log = io.Discard
	}
	return &Study{cfg: cfg, dir: dir, units: filepath.Join(dir, "units"), jobs: jobs, log: log, Computed: map[string]int{}}, nil
}

// UseUnits makes the study read and write its unit files under root instead
// of its run folder's units/: studies that share root (the regimes of a
// sweep) compute a unit they have in common once, as its file name is the
// hash of everything it depends on.
func (s *Study) UseUnits(root string) { s.units = root }

// evalJobs lists every evaluation run of the study in a fixed order.
func (s *Study) evalJobs() []evalJob {
	var out []evalJob
	c := s.cfg
	for _, env := range c.Envs {
		for si := range c.NumberOfSeeds {
			seed := c.Seed + uint64(si)
			for _, m := range c.Methods {
				lattices := c.Lattices[env]
				if m == MethodTrue {
					lattices = []string{"-"}
				}
				for _, l := range lattices {
					ids := c.AllClients()
					if perClientMethod(m) {
						ids = c.TrainingClients()
					}
					for _, client := range ids {
						out = append(out, evalJob{env, l, m, seed, client})
					}
				}
			}
		}
	}
	return out
}

// task is one unit with the function that computes it.
type task struct {
	u   unit
	run func(ctx context.Context, workers int) error
	env string
	// lattice is the unit's lattice preset ("" for units without one).
	lattice string
}

// plan returns, phase by phase, the units the selected evaluation runs need.
func (s *Study) plan(sh Shard) ([][]task, []evalJob, error) {
	jobs := s.evalJobs()
	var mine []evalJob
	group := map[[2]any]int{}
	for _, j := range jobs {
		g := [2]any{j.Env, j.Seed}
		if _, ok := group[g]; !ok {
			group[g] = len(group)
		}
		if sh.has(group[g]) {
			mine = append(mine, j)
		}
	}
	seen := map[string]bool{}
	phases := make([][]task, len(phaseNames))
	add := func(p int, t task) {
		if !seen[t.u.kind+t.u.key] {
			seen[t.u.kind+t.u.key] = true
			phases[p] = append(phases[p], t)
		}
	}
	// the point probe of env and seed, with its reference expert.
	addProbe := func(env string, seed uint64) error {
		pu, psp, ref, esp, err := s.probeUnit(env, seed)
		if err != nil {
			return err
		}
		if ref != nil {
			eu := *ref
			add(0, task{eu, func(ctx context.Context, _ int) error { return s.runExpert(ctx, eu, esp) }, env, ""})
		}
		add(1, task{pu, func(ctx context.Context, _ int) error { return s.runProbe(ctx, pu, psp, ref) }, env, LatticePoints})
		return nil
	}
	// every client's expert and random baseline (the ends of the normalized
	// return) and, per lattice, its ladder unit.
	addBaselines := func(env, lattice string, client int, seed uint64) error {
		eu, esp, err := s.expertUnit(env, client, seed)
		if err != nil {
			return err
		}
		add(0, task{eu, func(ctx context.Context, _ int) error { return s.runExpert(ctx, eu, esp) }, env, ""})
		bu, bsp := s.baselineUnit(env, client, seed)
		add(0, task{bu, func(ctx context.Context, _ int) error { return s.runBaseline(ctx, bu, bsp) }, env, ""})
		if lattice == "-" {
			return nil
		}
		if lattice == LatticePoints {
			if err := addProbe(env, seed); err != nil {
				return err
			}
			lu, lsp, err := s.pointsLadderUnit(env, client, seed)
			if err != nil {
				return err
			}
			add(2, task{lu, func(context.Context, int) error { return s.runPointsLadder(lu, lsp) }, env, lattice})
			return nil
		}
		lu, lsp, err := s.ladderUnit(env, lattice, client, seed)
		if err != nil {
			return err
		}
		add(2, task{lu, func(ctx context.Context, w int) error { return s.runLadder(ctx, lu, lsp, lattice, w) }, env, lattice})
		return nil
	}
	addClient := func(env, lattice string, client int, seed uint64) error {
		if err := addBaselines(env, lattice, client, seed); err != nil {
			return err
		}
		du, dsp, eu, esp, err := s.demosUnit(env, client, seed)
		if err != nil {
			return err
		}
		add(1, task{du, func(ctx context.Context, _ int) error { return s.runDemos(ctx, du, dsp, eu, esp) }, env, ""})
		if lattice == "-" {
			return nil
		}
		iu, isp, err := s.irlUnit(env, lattice, client, seed)
		if err != nil {
			return err
		}
		add(2, task{iu, func(ctx context.Context, w int) error { return s.runIRL(ctx, iu, isp, lattice, seed, w) }, env, lattice})
		return nil
	}
	// addFit adds a local fit with its expert and demonstrations only (a
	// pilot fit, which no evaluation, ladder or baseline uses).
	addFit := func(env, lattice string, client int, seed uint64) error {
		du, dsp, eu, esp, err := s.demosUnit(env, client, seed)
		if err != nil {
			return err
		}
		add(0, task{eu, func(ctx context.Context, _ int) error { return s.runExpert(ctx, eu, esp) }, env, ""})
		add(1, task{du, func(ctx context.Context, _ int) error { return s.runDemos(ctx, du, dsp, eu, esp) }, env, ""})
		iu, isp, err := s.irlUnit(env, lattice, client, seed)
		if err != nil {
			return err
		}
		add(2, task{iu, func(ctx context.Context, w int) error { return s.runIRL(ctx, iu, isp, lattice, seed, w) }, env, lattice})
		return nil
	}
	addFusion := func(env, lattice, method string, seed uint64) error {
		for _, c := range s.cfg.TrainingClients() {
			if err := addClient(env, lattice, c, seed); err != nil {
				return err
			}
			if s.cfg.Privacy.Epsilon == 0 {
				continue
			}
			for _, ps := range s.cfg.Privacy.PilotSeeds {
				if err := addFit(env, lattice, c, ps); err != nil {
					return err
				}
			}
		}
		if lattice == LatticePoints {
			if err := addProbe(env, seed); err != nil {
				return err
			}
		}
		fu, fsp, locals, err := s.fusionUnit(env, lattice, method, seed)
		if err != nil {
			return err
		}
		add(3, task{fu, func(ctx context.Context, _ int) error {
			return s.runFusion(ctx, fu, fsp, locals, env, lattice, method, seed)
		}, env, lattice})
		return nil
	}
	addPooled := func(env, lattice string, seed uint64) error {
		for _, c := range s.cfg.TrainingClients() {
			if err := addClient(env, lattice, c, seed); err != nil {
				return err
			}
		}
		pu, psp, isps, err := s.pooledUnit(env, lattice, seed)
		if err != nil {
			return err
		}
		add(3, task{pu, func(ctx context.Context, w int) error {
			return s.runPooled(ctx, pu, psp, isps, env, lattice, seed, w)
		}, env, lattice})
		return nil
	}
	for _, j := range mine {
		if err := addBaselines(j.Env, j.Lattice, j.Client, j.Seed); err != nil {
			return nil, nil, err
		}
		switch j.Method {
		case MethodTrue, MethodProjected:
		case MethodLocal:
			if err := addClient(j.Env, j.Lattice, j.Client, j.Seed); err != nil {
				return nil, nil, err
			}
		case MethodPooled, MethodPersonalized:
			if err := addPooled(j.Env, j.Lattice, j.Seed); err != nil {
				return nil, nil, err
			}
		default:
			if err := addFusion(j.Env, j.Lattice, j.Method, j.Seed); err != nil {
				return nil, nil, err
			}
		}
		if j.Lattice != "-" {
			// the fidelity unit scores every method's reward on this client's model
			for _, m := range s.fidelityMethods(j.Client) {
				switch m {
				case MethodLocal:
					if err := addClient(j.Env, j.Lattice, j.Client, j.Seed); err != nil {
						return nil, nil, err
					}
				case MethodProjected:
				case MethodPooled, MethodPersonalized:
					if err := addPooled(j.Env, j.Lattice, j.Seed); err != nil {
						return nil, nil, err
					}
				default:
					if err := addFusion(j.Env, j.Lattice, m, j.Seed); err != nil {
						return nil, nil, err
					}
				}
			}
			if j.Lattice == LatticePoints {
				fu, fsp, fus, err := s.pointsFidelityUnit(j.Env, j.Client, j.Seed)
				if err != nil {
					return nil, nil, err
				}
				du, dsp, eu, esp, err := s.demosUnit(j.Env, j.Client, j.Seed)
				if err != nil {
					return nil, nil, err
				}
				add(1, task{du, func(ctx context.Context, _ int) error { return s.runDemos(ctx, du, dsp, eu, esp) }, j.Env, ""})
				add(4, task{fu, func(context.Context, int) error { return s.runPointsFidelity(fu, fsp, fus) }, j.Env, LatticePoints})
			} else {
				fu, fsp, fus, err := s.fidelityUnit(j.Env, j.Lattice, j.Client, j.Seed)
				if err != nil {
					return nil, nil, err
				}
				if fsp.Demos != "" { // the demonstrations coverage, also of a held-out client
					du, dsp, eu, esp, err := s.demosUnit(j.Env, j.Client, j.Seed)
					if err != nil {
						return nil, nil, err
					}
					add(1, task{du, func(ctx context.Context, _ int) error { return s.runDemos(ctx, du, dsp, eu, esp) }, j.Env, ""})
				}
				lattice := j.Lattice
				add(4, task{fu, func(ctx context.Context, w int) error { return s.runFidelity(ctx, fu, fsp, lattice, fus, w) }, j.Env, lattice})
			}
		}
		eu, esp, err := s.evalUnit(j)
		if err != nil {
			return nil, nil, err
		}
		j := j
		// A PPO unit runs in the first phase after its reward's: on the
		// true reward beside the local fits (whose sparse solves leave the
		// core's FMA units to it), on a local or projected reward beside
		// the fusions.
		phase := 4
		switch j.Method {
		case MethodTrue:
			phase = 2
		case MethodLocal, MethodProjected:
			phase = 3
		}
		add(phase, task{eu, func(ctx context.Context, _ int) error { return s.runEval(ctx, eu, esp, j) }, j.Env, j.Lattice})
	}
	return phases, mine, nil
}

var phaseNames = []string{"experts and baselines", "demonstrations", "local IRL, ladder and PPO on the true reward",
	"fusion and PPO on the local and projected rewards", "PPO on the fused rewards and fidelity"}

// Run computes the units of shard sh that are not on disk yet, phase by
// phase, jobs at a time. The outputs are written by WriteOutputs.
func (s *Study) Run(ctx context.Context, sh Shard) error {
	phases, _, err := s.plan(sh)
	if err != nil {
		return err
	}
	for p, ts := range phases {
		var todo []task
		for _, t := range ts {
			if !exists(t.u.path(s.units)) {
				todo = append(todo, t)
			}
		}
		fmt.Fprintf(s.log, "%s: %d units, %d on disk, %d to compute\n", phaseNames[p], len(ts), len(ts)-len(todo), len(todo))
		if len(todo) == 0 {
			continue
		}
		s.longestFirst(todo)
		var bar *progress.Bar
		if s.Progress {
			bar = progress.New(len(todo), phaseNames[p])
		}
		err := s.pool(ctx, todo, bar)
		bar.Finish()
		if err != nil {
			return err
		}
	}
	return nil
}

// longestFirst orders a phase's tasks by their modelled cost (cost.go),
// longest first, ties in plan order: with jobs units at a time a phase then
// ends on short units, where in plan order it could end on one long unit
// (a CartPole fit, a CartPole PPO run) running alone while the other cores
// wait for the next phase. Unit results do not depend on the order.
func (s *Study) longestFirst(ts []task) {
	if s.jobs < 2 {
		return
	}
	cost := make([]float64, len(ts))
	for i, t := range ts {
		c, err := s.unitCost(t)
		if err != nil {
			return // a unit that cannot be priced: keep plan order
		}
		cost[i] = c
	}
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cost[b], cost[a]) })
	sorted := make([]task, len(ts))
	for i, k := range order {
		sorted[i] = ts[k]
	}
	copy(ts, sorted)
}

// pool runs tasks jobs at a time; the first error cancels the rest.
func (s *Study) pool(ctx context.Context, todo []task, bar *progress.Bar) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := 1
	if s.jobs == 1 {
		workers = runtime.GOMAXPROCS(0) // one unit at a time: let its kernels use every core
	}
	ch := make(chan task)
	errs := make(chan error, len(todo))
	var wg sync.WaitGroup
	for range min(s.jobs, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range ch {
				start := time.Now()
				if err := t.run(ctx, workers); err != nil {
					errs <- fmt.Errorf("%s %s: %w", t.u.kind, t.u.name, err)
					cancel()
					continue
				}
				s.mu.Lock()
				s.Computed[t.u.kind]++
				fmt.Fprintf(s.log, "  %s %s (%v)\n", t.u.kind, t.u.name, time.Since(start).Round(time.Millisecond))
				s.mu.Unlock()
				bar.Add(1)
			}
		}()
	}
	for _, t := range todo {
		if ctx.Err() != nil {
			break
		}
		ch <- t
	}
	close(ch)
	wg.Wait()
	close(errs)
	if err, ok := <-errs; ok {
		return err
	}
	return ctx.Err()
}

// Merge copies the unit files of other run folders into dir (a unit with
// the same name has the same content, by construction of the keys).
func Merge(dir string, from []string) (int, error) {
	n := 0
	for _, src := range from {
		for _, kind := range []string{"expert", "baseline", "demos", "probe", "irl", "ladder", "fusion", "pooled", "eval", "policy", "fidelity"} {
			entries, err := os.ReadDir(fmt.Sprintf("%s/units/%s", src, kind))
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				return n, fmt.Errorf("merge: %w", err)
			}
			for _, e := range entries {
				if e.IsDir() || e.Name()[0] == '.' {
					continue
				}
				dst := fmt.Sprintf("%s/units/%s/%s", dir, kind, e.Name())
				if exists(dst) {
					continue
				}
				b, err := os.ReadFile(fmt.Sprintf("%s/units/%s/%s", src, kind, e.Name()))
				if err != nil {
					return n, fmt.Errorf("merge: %w", err)
				}
				if err := report.WriteFile(dst, b); err != nil {
					return n, err
				}
				n++
			}
		}
	}
	return n, nil
}

// Missing returns the evaluation units of the whole study that are not on disk.
func (s *Study) Missing() ([]string, error) {
	var out []string
	for _, j := range s.evalJobs() {
		u, _, err := s.evalUnit(j)
		if err != nil {
			return nil, err
		}
		if !exists(u.path(s.units)) {
			out = append(out, u.name)
		}
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}
