package control

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/irl"
)

// Row is one line of the summary: PPO trained on one method's reward, per
// seed averaged over the clients of one group (training or held-out), then
// mean ± std over seeds.
type Row struct {
	Env     string `json:"env"`
	Lattice string `json:"lattice"`
	Pairs   int    `json:"pairs,omitempty"`
	Method  string `json:"method"`
	Group   string `json:"group"`
	// PerSeed is the final true return per seed (mean over the group's clients).
	PerSeed []float64      `json:"per_seed"`
	Final   report.Summary `json:"final_true_return"`
	// NormalizedReturn summarizes (R − R_random)/(R_expert − R_random) per
	// client and seed (0 = uniform random policy, 1 = the client's expert).
	NormalizedReturn  report.Summary `json:"normalized_return"`
	PerSeedNormalized nullable       `json:"per_seed_normalized"`
	// EPICToTrue summarizes, per coverage (model, uniform, demonstrations:
	// see irl.Coverage), the EPIC distance to the true lattice reward on
	// each client's own lattice model (learned and projected rewards only);
	// a coverage under which EPIC is undefined for every seed is absent.
	EPICToTrue  map[string]report.Summary `json:"epic_to_true,omitempty"`
	PerSeedEPIC map[string]nullable       `json:"per_seed_epic,omitempty"`
	// WorstNormalized summarizes per seed the lowest normalized return
	// among the group's clients (MetricWorstNormalized).
	WorstNormalized report.Summary `json:"worst_client_normalized_return"`
	PerSeedWorst    nullable       `json:"per_seed_worst_client_normalized"`
	// PerClient is every client's value in every seed, so others can
	// recompute any summary.
	PerClient []ClientResult `json:"per_client"`
}

// Metrics of the comparisons: the normalized and raw final true return, and
// the EPIC distance to the true reward under each coverage.
const (
	MetricNormalizedReturn = "normalized_return"
	MetricFinalReturn      = "final_true_return"
	MetricEPICModel        = "epic_model"
	MetricEPICUniform      = "epic_uniform"
	MetricEPICDemos        = "epic_demonstrations"
)

// EPICCoverages maps each EPIC metric to its coverage's name (irl.Coverage).
var EPICCoverages = map[string]string{MetricEPICModel: string(irl.CoverageModel), MetricEPICUniform: string(irl.CoverageUniform),
	MetricEPICDemos: string(irl.CoverageDemonstrations)}

// ComparedPairs are the paired differences every summary reports, a − b:
// the sweep's declared pairs (barycenter − mean, normalized-mean − mean,
// barycenter − normalized-mean), the joint block's (JointPairs), then
// debiased − mean and barycenter − local.
var ComparedPairs = append(append(append([][2]string(nil), SweepPairs...), JointPairs...), [2]string{MethodDebiased, MethodMean}, [2]string{MethodBarycenter, MethodLocal})

// Comparison is a paired difference of two methods across seeds (same
// experts, demonstrations, local θ and PPO seeds) in one metric:
// "normalized_return", "epic_to_true" or "final_true_return".
type Comparison struct {
	Env     string        `json:"env"`
	Lattice string        `json:"lattice"`
	Group   string        `json:"group"`
	Metric  string        `json:"metric"`
	A       string        `json:"a"`
	B       string        `json:"b"`
	Diff    report.Paired `json:"diff"`
	// Bonferroni is the interval at level 1 − 0.05/m, m the summary's
	// comparisons of the declared pairs (SweepPairs) in this metric; the
	// verdict lines count a difference only where it excludes 0.
	Bonferroni *report.Paired `json:"bonferroni,omitempty"`
}

// Validation is the ladder's verdict on one environment and lattice,
// written before any fusion result: a lattice or feature set that fails
// rung (a) or (b), or whose fit did not converge, is not a basis for
// comparing fusions.
type Validation struct {
	Env     string `json:"env"`
	Lattice string `json:"lattice"`
	// PlannerTrueNormalized is rung (a): the true-reward lattice planner's
	// normalized return in the real simulator, mean over clients and seeds
	// (null where the simulator's state cannot be set).
	PlannerTrueNormalized *float64 `json:"planner_true_normalized"`
	// ProjectedTrueNormalized is rung (b): PPO on the projected true
	// reward, normalized, mean over the training clients and seeds.
	ProjectedTrueNormalized *float64 `json:"projected_true_normalized"`
	// ProjectionR2 is the projection's R² on the lattice, mean over clients and seeds.
	ProjectionR2 *float64 `json:"projection_r2"`
	// FeatureGap is rung (c): the local IRL's ‖μ_D − μ_π‖/‖μ_D‖ at the
	// returned θ, mean over training clients and seeds; BiasGap and BiasGap0
	// the bias column's μ_D − μ_π there and at θ = 0.
	FeatureGap *float64 `json:"feature_gap"`
	BiasGap    *float64 `json:"bias_gap"`
	BiasGap0   *float64 `json:"bias_gap_0"`
	// FeatureGapSE, set where the fits are sample-based, is the mean of
	// their SE(μ̂_π)/‖μ_D‖, the sampling error FeatureGap is judged by.
	FeatureGapSE *float64 `json:"feature_gap_se,omitempty"`
	// FitsConverged of Fits local IRL runs reached ‖∇‖₂ ≤ irl.grad_tol.
	FitsConverged int `json:"fits_converged"`
	Fits          int `json:"fits"`
	// Valid is true when rungs (a) and (b) pass their thresholds (rung (c)
	// is reported, not judged: a converged fit with a gap is what the model
	// and features allow).
	Valid bool `json:"valid"`
	// Reasons lists the rungs that failed.
	Reasons []string `json:"reasons,omitempty"`
	// NotApplicable lists the rungs that do not apply (a point probe's
	// (a), the lattice planner); Valid is judged on the others.
	NotApplicable []string `json:"not_applicable,omitempty"`
}

// nullable is a float list whose NaN entries (a seed whose expert is no
// better than random has no normalized return) are written as JSON null.
type nullable []float64

// MarshalJSON implements json.Marshaler.
func (n nullable) MarshalJSON() ([]byte, error) {
	out := make([]*float64, len(n))
	for i := range n {
		if !math.IsNaN(n[i]) && !math.IsInf(n[i], 0) {
			out[i] = &n[i]
		}
	}
	return json.Marshal(out)
}

// Summary is summary.json.
type Summary struct {
	Protocol    string       `json:"protocol"`
	Validation  []Validation `json:"validation"`
	Rows        []Row        `json:"rows"`
	Comparisons []Comparison `json:"comparisons"`
	Experts     []ExpertRow  `json:"experts"`
	IRL         []IRLFile    `json:"local_irl"`
	// ClientComparisons are the declared pairs per client (raw and
	// normalized return); WeakAnchors the clients whose anchor a learned
	// reward beats; Joint the pooled units' diagnostics.
	ClientComparisons []ClientComparison `json:"client_comparisons"`
	WeakAnchors       []WeakAnchor       `json:"weak_anchors"`
	Joint             []JointDiag        `json:"joint,omitempty"`
	DemoQuality       []DemoQuality      `json:"demo_quality"`
}

// ExpertRow reports one client's expert, random baseline and demonstrations.
type ExpertRow struct {
	Env          string  `json:"env"`
	Seed         uint64  `json:"seed"`
	Client       int     `json:"client"`
	HeldOut      bool    `json:"held_out"`
	EvalReturn   float64 `json:"expert_return"`
	RandomReturn float64 `json:"random_return"`
	// DemoReturn is the demonstrations' mean return (training clients only).
	DemoReturn *float64 `json:"demo_mean_return"`
	// TrueReturn is PPO's final return on the true reward at the evaluation
	// budget (null when method true is not run) and AnchorReturn the upper
	// end of the normalized return (normalization_anchor).
	TrueReturn   *float64 `json:"true_reward_ppo_return"`
	AnchorReturn float64  `json:"anchor_return"`
}

func num(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }

type cellKey struct{ env, lattice, method, group string }

func group(heldOut bool) string {
	if heldOut {
		return "held-out"
	}
	return "train"
}

type clientKey struct {
	env    string
	client int
	seed   uint64
}

// evaluated returns the (environment, client, seed) triples some evaluation
// run scores: only they have an expert, a random baseline and a ladder unit
// (methods [local] evaluates no held-out client, so its expert is never
// trained).
func (s *Study) evaluated() map[clientKey]bool {
	out := map[clientKey]bool{}
	for _, j := range s.evalJobs() {
		out[clientKey{j.Env, j.Client, j.Seed}] = true
	}
	return out
}

// ends returns R_expert and R_random of every evaluated client and seed of the study.
func (s *Study) ends() (map[clientKey][2]float64, []ExpertRow, error) {
	out := map[clientKey][2]float64{}
	var rows []ExpertRow
	evaluated := s.evaluated()
	for _, env := range s.cfg.Envs {
		for si := range s.cfg.NumberOfSeeds {
			seed := s.cfg.Seed + uint64(si)
			for _, c := range s.cfg.AllClients() {
				if !evaluated[clientKey{env, c, seed}] {
					continue
				}
				eu, _, err := s.expertUnit(env, c, seed)
				if err != nil {
					return nil, nil, err
				}
				ef, _, err := s.readExpert(eu)
				if err != nil {
					return nil, nil, err
				}
				bu, _ := s.baselineUnit(env, c, seed)
				var bf BaselineFile
				if err := readJSON(bu.path(s.units), &bf); err != nil {
					return nil, nil, err
				}
				out[clientKey{env, c, seed}] = [2]float64{ef.EvalReturn, bf.RandomReturn}
				row := ExpertRow{Env: env, Seed: seed, Client: c, HeldOut: s.heldOut(c), EvalReturn: ef.EvalReturn, RandomReturn: bf.RandomReturn}
				if !s.heldOut(c) {
					du, _, _, _, err := s.demosUnit(env, c, seed)
					if err != nil {
						return nil, nil, err
					}
					d, err := ReadDemos(du.path(s.units))
					if err != nil {
						return nil, nil, err
					}
					m := mean(d.Returns())
					row.DemoReturn = &m
				}
				rows = append(rows, row)
			}
		}
	}
	return out, rows, nil
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

// meanFinite returns the mean of the finite values of xs (NaN if none).
func meanFinite(xs []float64) float64 {
	var f []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			f = append(f, x)
		}
	}
	return mean(f)
}

// finitePtr returns &x, or nil when x is not finite (JSON null).
func finitePtr(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// normalized returns (r − random)/(expert − random), NaN when the expert is
// no better than random.
func normalized(r float64, e [2]float64) float64 {
	if !(e[0] > e[1]) {
		return math.NaN()
	}
	return (r - e[1]) / (e[0] - e[1])
}

// seedCells accumulates per (cell, seed) the values of the cell's clients.
type seedCells map[cellKey]map[uint64][]float64

func (c seedCells) add(k cellKey, seed uint64, v float64) {
	if c[k] == nil {
		c[k] = map[uint64][]float64{}
	}
	c[k][seed] = append(c[k][seed], v)
}

// perSeed returns the per-seed means of cell k in seed order (nil if absent).
func (c seedCells) perSeed(k cellKey, seeds []uint64) []float64 {
	m := c[k]
	if m == nil {
		return nil
	}
	out := make([]float64, len(seeds))
	for i, sd := range seeds {
		out[i] = meanFinite(m[sd])
	}
	return out
}

func (s *Study) seeds() []uint64 {
	out := make([]uint64, s.cfg.NumberOfSeeds)
	for i := range out {
		out[i] = s.cfg.Seed + uint64(i)
	}
	return out
}

func (s *Study) summarize(evals []EvalFile) (*Summary, error) {
	ends, experts, err := s.ends()
	if err != nil {
		return nil, err
	}
	// The upper anchor: the expert's return, or the better of it and PPO on
	// the true reward at the evaluation budget (normalization_anchor best).
	trueRet := map[clientKey]float64{}
	for _, f := range evals {
		if f.Method == MethodTrue {
			trueRet[clientKey{f.Env, f.Client, f.Seed}] = f.FinalTrue
		}
	}
	for i := range experts {
		e := &experts[i]
		k := clientKey{e.Env, e.Client, e.Seed}
		end := ends[k]
		if t, ok := trueRet[k]; ok {
			e.TrueReturn = &t
			if s.cfg.NormalizationAnchor == AnchorBest && t > end[0] {
				end[0] = t
			}
		}
		ends[k], e.AnchorReturn = end, end[0]
	}
	seeds := s.seeds()
	final, norm := seedCells{}, seedCells{}
	epic := map[string]seedCells{}
	for _, cov := range irl.Coverages() {
		epic[string(cov)] = seedCells{}
	}
	var order []cellKey
	rawC, normC := clientCells{}, clientCells{}
	perClient := map[cellKey][]ClientResult{}
	for _, f := range evals {
		k := cellKey{f.Env, f.Lattice, f.Method, group(f.HeldOut)}
		if final[k] == nil {
			order = append(order, k)
		}
		e := ends[clientKey{f.Env, f.Client, f.Seed}]
		n := normalized(f.FinalTrue, e)
		final.add(k, f.Seed, f.FinalTrue)
		norm.add(k, f.Seed, n)
		rawC.add(k, f.Client, f.Seed, f.FinalTrue)
		normC.add(k, f.Client, f.Seed, n)
		perClient[k] = append(perClient[k], ClientResult{Client: f.Client, Seed: f.Seed, FinalTrue: f.FinalTrue, Anchor: e[0], Random: e[1], Normalized: finitePtr(n)})
	}
	worst := worstCells(norm)
	// EPIC to the true reward, from the fidelity units.
	for _, env := range s.cfg.Envs {
		for _, l := range s.cfg.Lattices[env] {
			for _, seed := range seeds {
				for _, c := range s.cfg.AllClients() {
					if len(s.fidelityMethods(c)) == 0 {
						continue // no learned reward to score (e.g. a held-out client with only local and true)
					}
					var u unit
					var err error
					if l == LatticePoints {
						u, _, _, err = s.pointsFidelityUnit(env, c, seed)
					} else {
						u, _, _, err = s.fidelityUnit(env, l, c, seed)
					}
					if err != nil {
						return nil, err
					}
					var f FidelityFile
					if err := readJSON(u.path(s.units), &f); err != nil {
						return nil, err
					}
					for m, byCov := range f.EPIC {
						for cov, d := range byCov {
							if cells, ok := epic[string(cov)]; ok && d != nil {
								cells.add(cellKey{env, l, m, group(s.heldOut(c))}, seed, *d)
							}
						}
					}
				}
			}
		}
	}
	sum := &Summary{Protocol: s.cfg.Protocol, Experts: experts}
	for _, k := range order {
		ps, pn := final.perSeed(k, seeds), norm.perSeed(k, seeds)
		pw := worst.perSeed(k, seeds)
		r := Row{Env: k.env, Lattice: k.lattice, Method: k.method, Group: k.group, PerSeed: ps, Final: report.Summarize(ps),
			PerSeedNormalized: pn, NormalizedReturn: summarizeFinite(pn), PerSeedWorst: pw, WorstNormalized: summarizeFinite(pw), PerClient: perClient[k]}
		for _, c := range irl.Coverages() {
			cov := string(c)
			pe := epic[cov].perSeed(k, seeds)
			if pe == nil || math.IsNaN(meanFinite(pe)) {
				continue
			}
			if r.EPICToTrue == nil {
				r.EPICToTrue, r.PerSeedEPIC = map[string]report.Summary{}, map[string]nullable{}
			}
			r.EPICToTrue[cov], r.PerSeedEPIC[cov] = summarizeFinite(pe), pe
		}
		if k.lattice != "-" && k.lattice != LatticePoints { // a point probe has no pairs
			p, err := s.probe(k.env, k.lattice)
			if err != nil {
				return nil, err
			}
			r.Pairs = p.Grid.NumPairs()
		}
		sum.Rows = append(sum.Rows, r)
	}
	metrics := []struct {
		name  string
		cells seedCells
	}{{MetricNormalizedReturn, norm}, {MetricWorstNormalized, worst}, {MetricEPICModel, epic[EPICCoverages[MetricEPICModel]]},
		{MetricEPICUniform, epic[EPICCoverages[MetricEPICUniform]]}, {MetricEPICDemos, epic[EPICCoverages[MetricEPICDemos]]}, {MetricFinalReturn, final}}
	for _, env := range s.cfg.Envs {
		for _, l := range s.cfg.Lattices[env] {
			for _, g := range []string{"train", "held-out"} {
				for _, met := range metrics {
					for _, cmp := range ComparedPairs {
						a := met.cells.perSeed(cellKey{env, l, cmp[0], g}, seeds)
						b := met.cells.perSeed(cellKey{env, l, cmp[1], g}, seeds)
						if a == nil || b == nil {
							continue
						}
						d, err := report.PairedDiff(a, b, 0.95)
						if err != nil {
							continue // a NaN normalized return (an expert no better than random) leaves the pair out
						}
						sum.Comparisons = append(sum.Comparisons, Comparison{Env: env, Lattice: l, Group: g, Metric: met.name, A: cmp[0], B: cmp[1], Diff: d})
					}
				}
			}
		}
	}
	if err := sum.bonferroni(); err != nil {
		return nil, err
	}
	sum.ClientComparisons = s.clientComparisons(rawC, normC)
	sum.WeakAnchors = s.weakAnchors(rawC, ends)
	if sum.Joint, err = s.jointDiags(); err != nil {
		return nil, err
	}
	if sum.DemoQuality, err = s.demoQuality(); err != nil {
		return nil, err
	}
	if sum.IRL, err = s.irlFiles(); err != nil {
		return nil, err
	}
	if sum.Validation, err = s.validate(norm, ends, sum.IRL); err != nil {
		return nil, err
	}
	return sum, nil
}

// summarizeFinite summarizes the finite values of xs.
func summarizeFinite(xs []float64) report.Summary {
	var f []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			f = append(f, x)
		}
	}
	return report.Summarize(f)
}

// irlFiles returns the local IRL units of the training clients.
func (s *Study) irlFiles() ([]IRLFile, error) {
	var out []IRLFile
	for _, env := range s.cfg.Envs {
		for _, seed := range s.seeds() {
			for _, c := range s.cfg.TrainingClients() {
				for _, l := range s.cfg.Lattices[env] {
					iu, _, err := s.irlUnit(env, l, c, seed)
					if err != nil {
						return nil, err
					}
					if !exists(iu.path(s.units)) {
						continue // only needed by methods not run
					}
					var f IRLFile
					if err := readJSON(iu.path(s.units), &f); err != nil {
						return nil, err
					}
					out = append(out, f)
				}
			}
		}
	}
	return out, nil
}

// validate computes the ladder's verdict per environment and lattice.
func (s *Study) validate(norm seedCells, ends map[clientKey][2]float64, irls []IRLFile) ([]Validation, error) {
	var out []Validation
	lc := s.cfg.Ladder
	evaluated := s.evaluated()
	for _, env := range s.cfg.Envs {
		for _, l := range s.cfg.Lattices[env] {
			v := Validation{Env: env, Lattice: l}
			var planner, r2 []float64
			avail := true
			for _, seed := range s.seeds() {
				for _, c := range s.cfg.AllClients() {
					if !evaluated[clientKey{env, c, seed}] {
						continue
					}
					var u unit
					var err error
					if l == LatticePoints {
						u, _, err = s.pointsLadderUnit(env, c, seed)
					} else {
						u, _, err = s.ladderUnit(env, l, c, seed)
					}
					if err != nil {
						return nil, err
					}
					var f LadderFile
					if err := readJSON(u.path(s.units), &f); err != nil {
						return nil, err
					}
					if f.Probe == ProbePoints { // rung (b) only
						r2 = append(r2, f.ProjectionR2)
						continue
					}
					if !f.Available {
						avail = false
						continue
					}
					planner = append(planner, normalized(f.PlannerReturn, ends[clientKey{env, c, seed}]))
					r2 = append(r2, f.ProjectionR2)
				}
			}
			switch {
			case l == LatticePoints:
				v.ProjectionR2 = finitePtr(meanFinite(r2))
				v.NotApplicable = append(v.NotApplicable, "(a) planner: a point probe has no lattice model to plan on")
			case avail:
				v.PlannerTrueNormalized, v.ProjectionR2 = finitePtr(meanFinite(planner)), finitePtr(meanFinite(r2))
			}
			if pn := norm.perSeed(cellKey{env, l, MethodProjected, "train"}, s.seeds()); pn != nil {
				v.ProjectedTrueNormalized = finitePtr(meanFinite(pn))
			}
			var gap, bias, bias0, gapSE []float64
			for _, f := range irls {
				if f.Env == env && f.Lattice == l {
					gap, bias, bias0 = append(gap, f.FeatureGap), append(bias, f.BiasGap), append(bias0, f.BiasGap0)
					if f.Sample != nil {
						gapSE = append(gapSE, f.Sample.FeatureGapSE)
					}
					v.FitsConverged++
					if !f.Converged {
						v.FitsConverged--
					}
					v.Fits++
				}
			}
			v.FeatureGap, v.BiasGap, v.BiasGap0 = finitePtr(meanFinite(gap)), finitePtr(meanFinite(bias)), finitePtr(meanFinite(bias0))
			if len(gapSE) > 0 {
				v.FeatureGapSE = finitePtr(meanFinite(gapSE))
			}
			switch {
			case l == LatticePoints: // not applicable, judged on (b)
			case v.PlannerTrueNormalized == nil:
				v.Reasons = append(v.Reasons, "(a) no true-reward planner: the simulator's state cannot be set")
			case !(*v.PlannerTrueNormalized >= lc.PlannerMin):
				v.Reasons = append(v.Reasons, fmt.Sprintf("(a) planner normalized return %.2f < %.2f", *v.PlannerTrueNormalized, lc.PlannerMin))
			}
			switch {
			case v.ProjectedTrueNormalized == nil:
				v.Reasons = append(v.Reasons, "(b) the projected reward was not evaluated")
			case !(*v.ProjectedTrueNormalized >= lc.ProjectedMin):
				v.Reasons = append(v.Reasons, fmt.Sprintf("(b) projected-reward PPO normalized return %.2f < %.2f", *v.ProjectedTrueNormalized, lc.ProjectedMin))
			}
			v.Valid = len(v.Reasons) == 0
			out = append(out, v)
		}
	}
	return out, nil
}

// bonferroni fills the Bonferroni intervals of the declared pairs: per
// family (pairFamilies) and metric the family is the summary's comparisons
// of that family's pairs.
func (s *Summary) bonferroni() error {
	for fi, fam := range pairFamilies {
		m := map[string]int{}
		for _, c := range s.Comparisons {
			if slices.Contains(fam, [2]string{c.A, c.B}) {
				m[c.Metric]++
			}
		}
		for i := range s.Comparisons {
			c := &s.Comparisons[i]
			if !slices.Contains(fam, [2]string{c.A, c.B}) {
				continue
			}
			b, err := c.Diff.AtLevel(1 - 0.05/float64(m[c.Metric]))
			if err != nil {
				return fmt.Errorf("family %d: %w", fi, err)
			}
			c.Bonferroni = &b
		}
	}
	return nil
}
