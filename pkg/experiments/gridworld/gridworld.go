package gridworld

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	gw "github.com/fedirl/fedirl/pkg/envs/gridworld"
	"github.com/fedirl/fedirl/pkg/experiments/jointfit"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/irl"
	"github.com/fedirl/fedirl/pkg/ot"
	"github.com/fedirl/fedirl/pkg/tasks"
	"gonum.org/v1/gonum/floats"
)

// Columns of the success tables besides the configured fusion methods
// (Config.FusionMethods, names of fusion's registry).
const (
	// ColLocal is each client's own θ_i on its own environment.
	ColLocal = "local"
	// ColExpert is the true reward θ* (an upper reference, Table 1 only).
	ColExpert = "expert"
)

// FusionInfo records one reward-space fusion's diagnostics (σ and Z of the
// map back; the solver's marginal error and iterations, 0 without a solver).
type FusionInfo struct {
	Sigma         float64 `json:"sigma"`
	Z             float64 `json:"z"`
	MarginalError float64 `json:"marginal_error"`
	Iterations    int     `json:"iterations"`
}

// LocalDiag is one client's local MaxEnt IRL convergence: how far the
// learner got within its budget.
type LocalDiag struct {
	Iterations int `json:"iterations"`
	// GradNorm is ‖∇‖₂ of the objective at the returned θ.
	GradNorm float64 `json:"grad_norm"`
	// FeatureGap is ‖μ_D − μ_π‖₂ / ‖μ_D‖₂ at the returned θ: the relative
	// feature-expectation mismatch MaxEnt IRL drives to zero (up to λθ).
	FeatureGap float64 `json:"feature_gap"`
	// FeatureGapAbs is ‖μ_D − μ_π‖₂ at the returned θ (discounted feature
	// expectations from the demonstrations' start states).
	FeatureGapAbs float64 `json:"feature_gap_abs"`
	// Norm is ‖θ_i‖₂.
	Norm float64 `json:"norm"`
	// AngleToTrue is the angle between θ_i and θ*, in degrees.
	AngleToTrue float64 `json:"angle_to_true_deg"`
}

// Direction describes a fused θ: its norm and its angles (degrees) to θ*
// and to the parameter mean. With a temperature-scaled MaxEnt reward only
// the direction of θ decides the greedy policy, so the angles say how the
// fusions differ where success rates cannot.
type Direction struct {
	Norm        float64 `json:"norm"`
	AngleToTrue float64 `json:"angle_to_true_deg"`
	AngleToMean float64 `json:"angle_to_mean_deg"`
}

// angle returns the angle between a and b in degrees (0 when either is 0).
func angle(a, b []float64) float64 {
	na, nb := floats.Norm(a, 2), floats.Norm(b, 2)
	if na == 0 || nb == 0 {
		return 0
	}
	c := floats.Dot(a, b) / (na * nb)
	return math.Acos(math.Max(-1, math.Min(1, c))) * 180 / math.Pi
}

// Fit is one study cell (one grid size, one seed, one budget setting):
// environments, local parameters, fused parameters and success rates.
type Fit struct {
	GridSize int    `json:"grid_size"`
	Seed     uint64 `json:"seed"`
	// Budgets are the clients' IRL iteration budgets.
	Budgets []int `json:"budgets"`
	// Local holds θ_i per client, as learned.
	Local [][]float64 `json:"local_theta"`
	// Sent holds, with privacy, the θ̃_i each client sent (clipped and
	// noised; what the server fused); nil without privacy (Local was sent).
	Sent [][]float64 `json:"sent_theta,omitempty"`
	// Fused holds θ per column: each configured fusion method and, in
	// Table 1 cells, ColExpert (θ*).
	Fused map[string][]float64 `json:"fused_theta"`
	// OutlierScores holds, per column, each client's distance to the fused
	// reward (the server's outlier score, RMS on the probe), in client order.
	OutlierScores map[string][]float64 `json:"outlier_scores"`
	// Info holds the diagnostics of each reward-space method's fusion.
	Info map[string]FusionInfo `json:"fusion_info"`
	// InDist[col][i] is column col's success rate on client i's environment
	// (ColLocal: client i's own θ_i).
	InDist map[string][]float64 `json:"in_distribution"`
	// HeldOut[col][j] is column col's success rate on held-out environment j
	// (no ColLocal).
	HeldOut map[string][]float64 `json:"held_out"`
	// LocalIRL is each client's local learner convergence.
	LocalIRL []LocalDiag `json:"local_irl"`
	// Directions describes each fused θ, keyed by method.
	Directions map[string]Direction `json:"directions"`
	// Bounds evaluates Theorems 1 and 2 on this cell (first seed of each Table-1 grid size).
	Bounds *BoundsReport `json:"bounds,omitempty"`
	// Pooled is the pooled oracle's fit (joint.pooled; its θ is also
	// Fused[ColPooled]) with its identifiability diagnostics; Personal the
	// clients' personalized fits around it (joint.personalized).
	Pooled   *jointfit.Pooled    `json:"pooled,omitempty"`
	Personal []jointfit.Personal `json:"personalized,omitempty"`
	// Joint describes each joint column's federated rounds.
	Joint map[string]JointRounds `json:"joint,omitempty"`

	// Not serialized: the environments and probe, for figures.
	clients, heldOut []*Env
	probe            fusion.Probe
	probeSpec        gw.Spec
	baryMeasure      []float64 // p̄ of the barycenter column, on the probe lattice
}

func (c Config) family(e EnvConfig) gw.Family {
	f := gw.DefaultFamily(e.GridSize)
	if e.Obstacles > 0 {
		f.Obstacles = e.Obstacles
	}
	if e.SlipMax > 0 {
		f.SlipMax = e.SlipMax
	}
	if e.MaxEpisodeLength > 0 {
		f.Horizon = e.MaxEpisodeLength
	}
	f.RandomStart = e.RandomStart
	return f
}

func heldOutCount(e EnvConfig) int {
	if e.HeldOutEnvironments > 0 {
		return e.HeldOutEnvironments
	}
	return e.NumberOfClients
}

// studyClients returns the cell's clients with the full IRL budget.
func (c Config) studyClients(st *setup) []*studyClient {
	out := make([]*studyClient, len(st.clients))
	for i, env := range st.clients {
		out[i] = &studyClient{env: env, demos: st.demos[i], cfg: c.IRL, budget: c.IRL.IRLIterations, demoSteps: st.demoSteps[i]}
	}
	return out
}

// setup builds the client, held-out and probe environments of a cell, the
// experts' demonstrations and the fusion weights.
type setup struct {
	clients, heldOut []*Env
	probeSpec        gw.Spec
	probe            fusion.Probe
	demos            [][]irl.Trajectory
	demoSteps        []int     // steps taken before termination, per client's demonstrations
	weights          []float64 // nil = uniform
}

func (c Config) buildSetup(e EnvConfig, seed uint64) (*setup, error) {
	fam := c.family(e)
	gamma := c.Expert.DiscountFactor
	st := &setup{}
	for i := range e.NumberOfClients {
		spec, err := fam.Client(seed, i)
		if err != nil {
			return nil, err
		}
		env, err := NewEnv(spec, gamma)
		if err != nil {
			return nil, err
		}
		st.clients = append(st.clients, env)
	}
	for j := range heldOutCount(e) {
		spec, err := fam.HeldOut(seed, j)
		if err != nil {
			return nil, err
		}
		env, err := NewEnv(spec, gamma)
		if err != nil {
			return nil, err
		}
		st.heldOut = append(st.heldOut, env)
	}
	var err error
	if st.probeSpec, err = fam.Probe(seed); err != nil {
		return nil, err
	}
	if st.probe, err = tasks.GridProbe(st.probeSpec); err != nil {
		return nil, err
	}
	live := make([]float64, len(st.clients))
	for i, env := range st.clients {
		pol := env.GreedyPolicy(c.Expert.TrueReward)
		d, n := env.Demonstrations(stream(seed, e.GridSize, purposeDemo, i), pol, c.Expert.EpisodesPerClient)
		st.demos = append(st.demos, d)
		st.demoSteps = append(st.demoSteps, n)
		live[i] = float64(n)
	}
	if c.Barycenter.Weights == "demonstrations" {
		st.weights = live
	}
	return st, nil
}

// fusionOptions returns the fusion options of the configured barycenter for
// a solver: ot.Paper runs the paper's fixed schedule (barycenter_iterations
// outer steps of sinkhorn_iterations Sinkhorn iterations each); the
// single-loop solvers (ibp, stabilized, debiased) get the same number of
// kernel applications, barycenter_iterations × sinkhorn_iterations Bregman
// projections, and stop earlier once the marginal error is below 1e-9.
func (c Config) fusionOptions(method ot.Method) fusion.Options {
	b := c.Barycenter
	opt := fusion.Options{Method: fusion.MethodBarycenter, Sigma: b.Shift, Z: b.Scale, Eps: b.EntropicRegularization, Solver: method}
	if method == ot.Paper {
		opt.MaxIter, opt.InnerIter, opt.Tol = b.BarycenterIterations, b.SinkhornIterations, -1
	} else {
		opt.MaxIter = b.BarycenterIterations * b.SinkhornIterations
	}
	return opt
}

// columnOptions returns the fusion options of a fusion_methods entry: the
// registry method, with σ and Z of the barycenter block for reward-space
// methods (and the entry's sigma mode), the configured solver and schedule
// for "barycenter", the same schedule with ot.Debiased for "debiased".
func (c Config) columnOptions(col string) (fusion.Options, error) {
	name, mode, err := parseColumn(col)
	if err != nil {
		return fusion.Options{}, err
	}
	m, err := fusion.Lookup(name)
	if err != nil {
		return fusion.Options{}, err
	}
	var opt fusion.Options
	switch name {
	case fusion.MethodBarycenter:
		method, err := c.barycenterMethod()
		if err != nil {
			return fusion.Options{}, err
		}
		opt = c.fusionOptions(method)
	case fusion.MethodDebiased:
		opt = c.fusionOptions(ot.Debiased)
		opt.Method = fusion.MethodDebiased
	case fusion.MethodJoint:
		// the pooled column's tolerance and round cap, so the two are the same fit
		opt = fusion.Options{Method: name, GradTol: c.Joint.GradTol, MaxRounds: c.Joint.MaxRounds}
	default:
		opt = fusion.Options{Method: name}
		if m.Space() == fusion.RewardSpace {
			opt.Sigma, opt.Z = c.Barycenter.Shift, c.Barycenter.Scale
		}
	}
	opt.SigmaMode = mode
	if err := opt.Validate(); err != nil {
		return fusion.Options{}, fmt.Errorf("%q: %w", col, err)
	}
	return opt, nil
}

// evaluate fills f.InDist and f.HeldOut: ColLocal on the clients' own
// environments, and every column of cols (fused methods, ColExpert) on the
// clients' and the held-out environments.
func (c Config) evaluate(f *Fit, st *setup, cols []string) {
	K := len(st.clients)
	f.InDist, f.HeldOut = map[string][]float64{}, map[string][]float64{}
	f.InDist[ColLocal] = make([]float64, K)
	for i, env := range st.clients {
		f.InDist[ColLocal][i] = c.success(env, f.Seed, f.GridSize, i, f.Local[i])
	}
	if f.Personal != nil {
		f.InDist[ColPersonalized] = make([]float64, K)
		for i, env := range st.clients {
			f.InDist[ColPersonalized][i] = c.success(env, f.Seed, f.GridSize, i, f.Personal[i].Theta)
		}
	}
	for _, m := range cols {
		f.InDist[m] = make([]float64, K)
		f.HeldOut[m] = make([]float64, len(st.heldOut))
		for i, env := range st.clients {
			f.InDist[m][i] = c.success(env, f.Seed, f.GridSize, i, f.Fused[m])
		}
		for j, env := range st.heldOut {
			f.HeldOut[m][j] = c.success(env, f.Seed, f.GridSize, heldOutIndex|j, f.Fused[m])
		}
	}
}

// heldOutIndex marks held-out environments in evaluation stream keys.
const heldOutIndex = 0x8000_0000

// success is the success rate of the greedy policy of θ on env (environment
// index of the cell (seed, size); held-out environments are heldOutIndex|j):
// its exact success probability, or with the sampled method the success
// fraction of evaluation_episodes rollouts with common random numbers.
// Every method, and every weak fraction of the ablation, is rolled out on the
// same stream per (evaluation seed, seed, size, environment), episode e on
// its own source (gw.Grid.SuccessRateCRN), so differences between methods
// are not differences between their random draws.
func (c Config) success(env *Env, seed uint64, size, index int, theta []float64) float64 {
	pol := env.GreedyPolicy(theta)
	if c.Evaluation.Method == EvalExact {
		return env.Grid.SuccessProbability(pol)
	}
	return env.Grid.SuccessRateCRN(c.evalKey(seed, size, index), pol, c.Evaluation.EvaluationEpisodes)
}

// evalKey is the common-random-numbers key of environment index of the cell
// (seed, size): a SplitMix64 hash of the evaluation seed, the study seed, the
// grid size and the index.
func (c Config) evalKey(seed uint64, size, index int) uint64 {
	h := splitmix(c.Evaluation.Seed ^ 0x6576616c) // "eval"
	for _, v := range []uint64{seed, uint64(size), uint64(index)} {
		h = splitmix(h ^ v)
	}
	return h
}

// splitmix is the SplitMix64 finalizer.
func splitmix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// runCell runs one Table-1 cell: setup, local IRL with the full budget,
// fusion, evaluation and bounds.
func (c Config) runCell(ctx context.Context, e EnvConfig, seed uint64, withBounds bool, w2Limit int) (*Fit, error) {
	st, err := c.buildSetup(e, seed)
	if err != nil {
		return nil, err
	}
	f := &Fit{GridSize: e.GridSize, Seed: seed, clients: st.clients, heldOut: st.heldOut, probe: st.probe, probeSpec: st.probeSpec}
	clients := c.studyClients(st)
	for range clients {
		f.Budgets = append(f.Budgets, c.IRL.IRLIterations)
	}
	if err := c.federate(ctx, fmt.Sprintf("grid%d-seed%d", e.GridSize, seed), f, st, clients, purposePrivacy); err != nil {
		return nil, fmt.Errorf("grid %d seed %d: %w", e.GridSize, seed, err)
	}
	if err := c.fitJoint(ctx, f, clients); err != nil {
		return nil, fmt.Errorf("grid %d seed %d: %w", e.GridSize, seed, err)
	}
	c.evaluate(f, st, append(c.fusedCols(), ColExpert))
	if withBounds {
		b, err := c.cellBounds(f, st, w2Limit)
		if err != nil {
			return nil, fmt.Errorf("grid %d seed %d bounds: %w", e.GridSize, seed, err)
		}
		f.Bounds = b
	}
	return f, nil
}

// ablationEnv is Table 2's environments entry: the environments (obstacles,
// slip, horizon, start) of its grid size's entry, with the ablation's number
// of clients and as many held-out environments.
func (c Config) ablationEnv() EnvConfig {
	e := c.envConfig(c.Ablation.GridSize)
	e.NumberOfClients = c.Ablation.NumberOfClients
	e.HeldOutEnvironments = c.Ablation.NumberOfClients
	return e
}

// runAblation runs Table 2 for one seed: the same clients and demonstrations
// for every weak fraction p; round(pK) clients drawn uniformly get their
// budget multiplied by f ~ U(weak_factor_min, weak_factor_max) (at least 1
// step). Returns one Fit per p.
func (c Config) runAblation(ctx context.Context, seed uint64) ([]*Fit, error) {
	a := c.Ablation
	e := c.ablationEnv()
	st, err := c.buildSetup(e, seed)
	if err != nil {
		return nil, err
	}
	K := a.NumberOfClients
	full := c.studyClients(st) // learned once, shared by every p
	if a.InitScale > 0 {
		for i, cl := range full {
			rng := stream(seed, a.GridSize, purposeInit, i)
			th := make([]float64, len(c.Expert.TrueReward))
			for k := range th {
				th[k] = a.InitScale * rng.NormFloat64()
			}
			cl.theta0 = th
		}
	}
	var out []*Fit
	for pi, p := range a.WeakFractions {
		rng := stream(seed, a.GridSize, purposeWeak, pi)
		nWeak := int(math.Round(p * float64(K)))
		perm := rng.Perm(K)
		budgets := make([]int, K)
		for i := range budgets {
			budgets[i] = c.IRL.IRLIterations
		}
		for _, i := range perm[:nWeak] {
			fct := a.WeakFactorMin + (a.WeakFactorMax-a.WeakFactorMin)*rng.Float64()
			budgets[i] = max(1, int(math.Round(fct*float64(c.IRL.IRLIterations))))
		}
		f := &Fit{GridSize: a.GridSize, Seed: seed, Budgets: budgets, clients: st.clients, heldOut: st.heldOut, probe: st.probe, probeSpec: st.probeSpec}
		clients := slices.Clone(full)
		for i, b := range budgets {
			if b != c.IRL.IRLIterations {
				clients[i] = c.weakClient(full[i], b, seed, pi, i)
			}
		}
		if err := c.federate(ctx, fmt.Sprintf("ablation-seed%d-p%d", seed, pi), f, st, clients, purposePrivacyAblation); err != nil {
			return nil, fmt.Errorf("ablation seed %d p %v: %w", seed, p, err)
		}
		if err := c.fitJoint(ctx, f, clients); err != nil {
			return nil, fmt.Errorf("ablation seed %d p %v: %w", seed, p, err)
		}
		c.evaluate(f, st, c.fusedCols())
		out = append(out, f)
	}
	return out, nil
}

// weakClient returns full's weak counterpart at weak fraction index pi: the
// same environment and starting θ with budget b, and, as the ablation keys
// ask, new demonstrations (weak_episodes of them, from an ε-greedy expert
// with ε = weak_expert_epsilon) and noise on the sent θ (weak_theta_noise).
// Its draws come from streams keyed by (seed, p's index, client), so the
// weak clients of one p do not change when another p is added.
func (c Config) weakClient(full *studyClient, b int, seed uint64, pi, i int) *studyClient {
	a := c.Ablation
	w := &studyClient{env: full.env, demos: full.demos, cfg: c.IRL, budget: b, theta0: full.theta0, demoSteps: full.demoSteps}
	if a.WeakExpertEpsilon > 0 || a.WeakEpisodes > 0 {
		n := c.Expert.EpisodesPerClient
		if a.WeakEpisodes > 0 {
			n = a.WeakEpisodes
		}
		pol := full.env.GreedyPolicy(c.Expert.TrueReward)
		w.demos, w.demoSteps = full.env.NoisyDemonstrations(stream(seed, a.GridSize, purposeWeakDemo, pi<<20|i), pol, n, a.WeakExpertEpsilon)
	}
	if a.WeakThetaNoise > 0 {
		rng := stream(seed, a.GridSize, purposeNoise, pi<<20|i)
		w.noise = make([]float64, len(c.Expert.TrueReward))
		for k := range w.noise {
			w.noise[k] = a.WeakThetaNoise * rng.NormFloat64()
		}
	}
	return w
}

// Study is the outcome of GridWorld.
type Study struct {
	Config Config `json:"config"`
	// Cells[k][s] is grid size Environments[k] at seed Seed+s.
	Cells [][]*Fit `json:"cells"`
	// Ablation[s][p] is ablation seed s at weak fraction WeakFractions[p].
	Ablation [][]*Fit `json:"ablation"`
}

// Progress receives the number of finished work units; it may be nil.
type Progress interface{ Add(n int) }

// Units returns the number of work units GridWorld reports to a Progress.
func (c Config) Units() int {
	return len(c.Environments)*c.NumberOfSeeds + c.ablationSeeds()
}

func (c Config) ablationSeeds() int {
	if c.Ablation.NumberOfSeeds > 0 {
		return c.Ablation.NumberOfSeeds
	}
	return c.NumberOfSeeds
}

// GridWorld runs the whole study: every (grid size, seed) cell of Table 1 and
// every ablation seed of Table 2, on c.Workers goroutines (default 2), the
// most expensive cells first. Results are collected by index, so they do not
// depend on scheduling.
func GridWorld(ctx context.Context, c Config, prog Progress) (*Study, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.Resolved()
	workers := c.Workers
	type job struct {
		cost float64
		run  func() error
	}
	st := &Study{Config: c, Cells: make([][]*Fit, len(c.Environments)), Ablation: make([][]*Fit, c.ablationSeeds())}
	var jobs []job
	for k, e := range c.Environments {
		st.Cells[k] = make([]*Fit, c.NumberOfSeeds)
		for s := range c.NumberOfSeeds {
			cost := float64(e.NumberOfClients) * math.Pow(float64(e.GridSize), 3)
			jobs = append(jobs, job{cost, func() error {
				f, err := c.runCell(ctx, e, c.Seed+uint64(s), s == 0, StudyW2Limit)
				st.Cells[k][s] = f
				return err
			}})
		}
	}
	for s := range c.ablationSeeds() {
		a := c.Ablation
		cost := float64(a.NumberOfClients) * math.Pow(float64(a.GridSize), 3) * 1.5
		jobs = append(jobs, job{cost, func() error {
			fs, err := c.runAblation(ctx, c.Seed+uint64(s))
			st.Ablation[s] = fs
			return err
		}})
	}
	// Most expensive first (stable on ties, so the order is deterministic;
	// the order affects only the wall time, never the results).
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && jobs[order[j]].cost > jobs[order[j-1]].cost; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	var next atomic.Int64
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := int(next.Add(1)) - 1
				if n >= len(order) || ctx.Err() != nil {
					return
				}
				errs[order[n]] = jobs[order[n]].run()
				if prog != nil {
					prog.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return st, nil
}

// Cell runs one Table-1 cell (grid size, seed) of the study with its bounds,
// exactly as GridWorld does (plus T1's Sinkhorn upper bound at any size). The grid size's EnvConfig is taken from
// c.Environments when listed there, else the paper's client count is used.
func (c Config) Cell(ctx context.Context, size int, seed uint64) (*Fit, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	e := EnvConfig{GridSize: size, NumberOfClients: gw.DefaultClients(size)}
	for _, ec := range c.Environments {
		if ec.GridSize == size {
			e = ec
		}
	}
	return c.runCell(ctx, e, seed, true, math.MaxInt)
}

// AblationSeedCount returns the number of seeds of Table 2.
func (c Config) AblationSeedCount() int { return c.ablationSeeds() }
