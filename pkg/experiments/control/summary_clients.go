package control

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/fedirl/fedirl/pkg/experiments/jointfit"
	"github.com/fedirl/fedirl/pkg/experiments/report"
)

// What a summary reports beside the means over clients: the worst client,
// every client's own value and paired differences, the anchors that a
// learned reward beats (weak anchors), and the pooled and personalized
// fits' diagnostics.

// MetricWorstNormalized is, per seed, the lowest normalized return among
// the group's clients: what a fleet operator's worst robot gets.
const MetricWorstNormalized = "worst_client_normalized_return"

// JointPairs are the comparisons declared for the joint block, a family
// of their own for the Bonferroni correction (so the earlier families'
// corrections are unchanged): each one-shot fusion against the pooled
// ceiling, and the personalized rewards against the local and the pooled.
var JointPairs = [][2]string{
	{MethodPooled, MethodMean},
	{MethodPooled, MethodBarycenter},
	{MethodPersonalized, MethodLocal},
	{MethodPersonalized, MethodPooled},
}

// pairFamilies are the declared families of the Bonferroni correction.
var pairFamilies = [][][2]string{SweepPairs, JointPairs}

// declared reports whether a − b is in a declared family.
func declared(p [2]string) bool {
	for _, f := range pairFamilies {
		if slices.Contains(f, p) {
			return true
		}
	}
	return false
}

// ClientResult is one client's evaluation in one seed.
type ClientResult struct {
	Client     int      `json:"client"`
	Seed       uint64   `json:"seed"`
	FinalTrue  float64  `json:"final_true_return"`
	Anchor     float64  `json:"anchor_return"`
	Random     float64  `json:"random_return"`
	Normalized *float64 `json:"normalized_return"`
}

// ClientComparison is a paired difference of two methods on one client
// across seeds, in the raw final true return or the normalized return.
type ClientComparison struct {
	Env     string        `json:"env"`
	Lattice string        `json:"lattice"`
	Group   string        `json:"group"`
	Client  int           `json:"client"`
	Metric  string        `json:"metric"`
	A       string        `json:"a"`
	B       string        `json:"b"`
	Diff    report.Paired `json:"diff"`
}

// WeakAnchor is a client whose normalization anchor a learned reward
// beats by more than the anchor's own spread over seeds: normalized
// returns of that client exceed 1 and weigh more than they should.
type WeakAnchor struct {
	Env        string  `json:"env"`
	Lattice    string  `json:"lattice"`
	Client     int     `json:"client"`
	AnchorMean float64 `json:"anchor_mean"`
	AnchorSD   float64 `json:"anchor_sd"`
	Method     string  `json:"method"`
	MethodMean float64 `json:"method_mean"`
}

// JointDiag is one pooled unit's diagnostics.
type JointDiag struct {
	Env     string          `json:"env"`
	Lattice string          `json:"lattice"`
	Seed    uint64          `json:"seed"`
	Pooled  jointfit.Pooled `json:"pooled"`
	// Chosen counts the personalization choices: the client's own fit (μ
	// = 0), a finite μ > 0, the pooled θ itself.
	Own, Between, Center int
}

// clientCells holds per cell, client and seed one value.
type clientCells map[cellKey]map[int]map[uint64]float64

func (c clientCells) add(k cellKey, client int, seed uint64, v float64) {
	if c[k] == nil {
		c[k] = map[int]map[uint64]float64{}
	}
	if c[k][client] == nil {
		c[k][client] = map[uint64]float64{}
	}
	c[k][client][seed] = v
}

// worstCells returns, per cell and seed, the lowest finite value of norm's.
func worstCells(norm seedCells) seedCells {
	out := seedCells{}
	for k, bySeed := range norm {
		for sd, vs := range bySeed {
			w := math.NaN()
			for _, v := range vs {
				if !math.IsNaN(v) && !math.IsInf(v, 0) && !(v >= w) {
					w = v
				}
			}
			out.add(k, sd, w)
		}
	}
	return out
}

// clientComparisons pairs the declared pairs per client across seeds in
// the raw and the normalized return.
func (s *Study) clientComparisons(raw, norm clientCells) []ClientComparison {
	var out []ClientComparison
	seeds := s.seeds()
	for _, env := range s.cfg.Envs {
		for _, l := range s.cfg.Lattices[env] {
			for _, g := range []string{"train", "held-out"} {
				for _, fam := range pairFamilies {
					for _, p := range fam {
						for _, met := range []struct {
							name  string
							cells clientCells
						}{{MetricFinalReturn, raw}, {MetricNormalizedReturn, norm}} {
							ca, cb := met.cells[cellKey{env, l, p[0], g}], met.cells[cellKey{env, l, p[1], g}]
							if ca == nil || cb == nil {
								continue
							}
							for _, c := range s.cfg.AllClients() {
								if ca[c] == nil || cb[c] == nil {
									continue
								}
								a, b := make([]float64, len(seeds)), make([]float64, len(seeds))
								for i, sd := range seeds {
									a[i], b[i] = ca[c][sd], cb[c][sd]
								}
								d, err := report.PairedDiff(a, b, 0.95)
								if err != nil {
									continue // a NaN normalized return leaves the pair out
								}
								out = append(out, ClientComparison{env, l, g, c, met.name, p[0], p[1], d})
							}
						}
					}
				}
			}
		}
	}
	return out
}

// weakAnchors flags, per client, an anchor that the best learned reward
// (every method but true and projected) beats on average over seeds by
// more than the anchor's sample standard deviation over seeds.
func (s *Study) weakAnchors(raw clientCells, ends map[clientKey][2]float64) []WeakAnchor {
	var out []WeakAnchor
	seeds := s.seeds()
	for _, env := range s.cfg.Envs {
		for _, l := range s.cfg.Lattices[env] {
			for _, c := range s.cfg.AllClients() {
				var anchors []float64
				for _, sd := range seeds {
					if e, ok := ends[clientKey{env, c, sd}]; ok {
						anchors = append(anchors, e[0])
					}
				}
				if len(anchors) == 0 {
					continue
				}
				a := report.Summarize(anchors)
				best, bestM := math.Inf(-1), ""
				for _, m := range s.cfg.Methods {
					if m == MethodTrue || m == MethodProjected {
						continue
					}
					byClient := raw[cellKey{env, l, m, group(s.heldOut(c))}]
					if byClient == nil || len(byClient[c]) == 0 {
						continue
					}
					var vs []float64
					for _, sd := range seeds {
						vs = append(vs, byClient[c][sd])
					}
					if mu := mean(vs); mu > best {
						best, bestM = mu, m
					}
				}
				if bestM != "" && best > a.Mean+a.Std {
					out = append(out, WeakAnchor{Env: env, Lattice: l, Client: c, AnchorMean: a.Mean, AnchorSD: a.Std, Method: bestM, MethodMean: best})
				}
			}
		}
	}
	return out
}

// jointDiags reads the pooled units of the study (where pooled is run).
func (s *Study) jointDiags() ([]JointDiag, error) {
	if !slices.Contains(s.cfg.Methods, MethodPooled) && !slices.Contains(s.cfg.Methods, MethodPersonalized) {
		return nil, nil
	}
	var out []JointDiag
	for _, env := range s.cfg.Envs {
		for _, l := range s.cfg.Lattices[env] {
			for _, sd := range s.seeds() {
				u, _, _, err := s.pooledUnit(env, l, sd)
				if err != nil {
					return nil, err
				}
				var f PooledFile
				if err := readJSON(u.path(s.units), &f); err != nil {
					return nil, err
				}
				d := JointDiag{Env: env, Lattice: l, Seed: sd, Pooled: f.Pooled}
				for _, p := range f.Personal {
					switch {
					case p.Choice.Center:
						d.Center++
					case p.Choice.Mu == 0:
						d.Own++
					default:
						d.Between++
					}
				}
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// writeClientSections renders the worst client, the weak anchors, the
// per-client raw-return differences of the declared pairs and the joint
// diagnostics.
func (s *Summary) writeClientSections(b *strings.Builder) {
	b.WriteString("\n## The worst client (per seed the lowest normalized return among the group's clients; mean ± std over seeds)\n\n")
	b.WriteString("| env | lattice | method | clients | worst-client normalized return | mean normalized return |\n|---|---|---|---|---|---|\n")
	for _, r := range s.Rows {
		if r.WorstNormalized.N == 0 {
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s ± %s | %s ± %s |\n", r.Env, r.Lattice, r.Method, r.Group,
			fmt2(r.WorstNormalized.Mean), fmt2(r.WorstNormalized.Std), fmt2(r.NormalizedReturn.Mean), fmt2(r.NormalizedReturn.Std))
	}
	b.WriteString("\n## Weak anchors\n\nA client's anchor (the upper end of its normalized return) is **weak** where a learned reward's PPO beats it, on average over seeds, by more than the anchor's own standard deviation over seeds: that client's normalized returns exceed 1 and weigh more than the others' in every mean. Read the raw-return differences below for those clients.\n\n")
	if len(s.WeakAnchors) == 0 {
		b.WriteString("None.\n")
	} else {
		b.WriteString("| env | lattice | client | anchor return (mean ± sd) | best learned reward | its mean return |\n|---|---|---|---|---|---|\n")
		for _, w := range s.WeakAnchors {
			fmt.Fprintf(b, "| %s | %s | %d | %s ± %s | %s | %s |\n", w.Env, w.Lattice, w.Client, fmtNum(w.AnchorMean), fmtNum(w.AnchorSD), w.Method, fmtNum(w.MethodMean))
		}
	}
	b.WriteString("\n## Per-client paired differences of the declared pairs in raw final true return (mean [95 % t-interval] over seeds)\n\n")
	b.WriteString("| env | lattice | clients | client | difference | raw return | normalized return |\n|---|---|---|---|---|---|---|\n")
	norm := map[[6]string]ClientComparison{}
	for _, c := range s.ClientComparisons {
		if c.Metric == MetricNormalizedReturn {
			norm[[6]string{c.Env, c.Lattice, c.Group, fmt.Sprint(c.Client), c.A, c.B}] = c
		}
	}
	for _, c := range s.ClientComparisons {
		if c.Metric != MetricFinalReturn {
			continue
		}
		n := "–"
		if nc, ok := norm[[6]string{c.Env, c.Lattice, c.Group, fmt.Sprint(c.Client), c.A, c.B}]; ok {
			n = fmt.Sprintf("%s [%s, %s]", fmt2(nc.Diff.Mean), fmt2(nc.Diff.Lo), fmt2(nc.Diff.Hi))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %d | %s − %s | %s [%s, %s] | %s |\n", c.Env, c.Lattice, c.Group, c.Client, c.A, c.B,
			fmtNum(c.Diff.Mean), fmtNum(c.Diff.Lo), fmtNum(c.Diff.Hi), n)
	}
	s.writeDemoQuality(b)
	if len(s.Joint) == 0 {
		return
	}
	b.WriteString("\n## The pooled oracle and the personalized rewards\n\nPooled: one θ fitted by Newton rounds to every training client's demonstrations, each under its own lattice model (jointfit). Identifiability (jointfit.Identifiability): the data curvature −∇²L − λI at the pooled θ, read on the joint curvature's range (the directions the federation's data identify; rank of d): its λ_min jointly and of the best single client there, gain = joint / best > 1 where the federation pins down a direction that no client alone does, and the largest single client's rank. Personalized: μ chosen per client on its held-out demonstrations (joint.prox_candidates × tr(−H)/d, or the pooled θ itself).\n\n")
	b.WriteString("| env | lattice | seed | converged | rounds | final ‖∇‖ | rank joint / best client / d | λ_min joint | λ_min best client | gain | personalized: own / between / pooled |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, d := range s.Joint {
		gain := "–"
		if g := d.Pooled.Ident.Gain; g != nil {
			gain = fmt.Sprintf("%.3g", *g)
		}
		id := d.Pooled.Ident
		fmt.Fprintf(b, "| %s | %s | %d | %v | %d | %.3g | %d / %d / %d | %.3g | %.3g | %s | %d / %d / %d |\n", d.Env, d.Lattice, d.Seed, d.Pooled.Converged, d.Pooled.Rounds,
			d.Pooled.GradNorm, id.JointRank, slices.Max(id.LocalRank), id.Dim, id.JointMinEig, slices.Max(id.LocalMinEig), gain, d.Own, d.Between, d.Center)
	}
}

// DemoQuality is what a server can know of one client's demonstrations
// without seeing them: the statistics the client declares (mean return,
// mean episode length, the share of episodes that terminated before the
// time limit) and its learned reward's mean over the lattice, r̄ = mean
// θ_iᵀφ(s, a): the terminal state's value is 0 (the absorbing value is
// folded into the bias), so r̄ < 0 says the reward prefers ending an
// episode to continuing it — a survival task's failing demonstrator.
type DemoQuality struct {
	Env        string  `json:"env"`
	Lattice    string  `json:"lattice"`
	Seed       uint64  `json:"seed"`
	Client     int     `json:"client"`
	Failing    bool    `json:"failing_demonstrator"`
	DemoReturn float64 `json:"demo_mean_return"`
	DemoLength float64 `json:"demo_mean_length"`
	Terminated float64 `json:"demo_terminated_share"`
	RewardMean float64 `json:"local_reward_mean"`
}

// demoQuality reads every training client's demonstrations and local θ.
func (s *Study) demoQuality() ([]DemoQuality, error) {
	var out []DemoQuality
	for _, env := range s.cfg.Envs {
		for _, l := range s.cfg.Lattices[env] {
			var meanRow []float64
			if l != LatticePoints {
				p, err := s.probe(env, l)
				if err != nil {
					return nil, err
				}
				_, phi, err := s.features(p)
				if err != nil {
					return nil, err
				}
				rows, d := phi.Dims()
				meanRow = make([]float64, d)
				for i := range rows {
					for j := range d {
						meanRow[j] += phi.At(i, j) / float64(rows)
					}
				}
			}
			for _, sd := range s.seeds() {
				if l == LatticePoints { // the mean over the seed's probe points
					var err error
					if meanRow, err = s.pointPhiMean(env, sd); err != nil {
						return nil, err
					}
				}
				for _, c := range s.cfg.TrainingClients() {
					iu, _, err := s.irlUnit(env, l, c, sd)
					if err != nil {
						return nil, err
					}
					if !exists(iu.path(s.units)) {
						continue
					}
					var f IRLFile
					if err := readJSON(iu.path(s.units), &f); err != nil {
						return nil, err
					}
					du, _, _, _, err := s.demosUnit(env, c, sd)
					if err != nil {
						return nil, err
					}
					dm, err := ReadDemos(du.path(s.units))
					if err != nil {
						return nil, err
					}
					q := DemoQuality{Env: env, Lattice: l, Seed: sd, Client: c, Failing: s.cfg.failing(c), DemoReturn: mean(dm.Returns())}
					term := 0
					for i, n := range dm.Lengths {
						q.DemoLength += float64(n) / float64(len(dm.Lengths))
						if dm.Terminal[i] {
							term++
						}
					}
					q.Terminated = float64(term) / float64(len(dm.Lengths))
					for j, v := range f.Theta {
						q.RewardMean += meanRow[j] * v
					}
					out = append(out, q)
				}
			}
		}
	}
	return out, nil
}

// writeDemoQuality renders DemoQuality, averaged over seeds per client.
func (s *Summary) writeDemoQuality(b *strings.Builder) {
	if len(s.DemoQuality) == 0 {
		return
	}
	b.WriteString("\n## Demonstrator quality (what the server can know without the demonstrations; mean over seeds)\n\nDeclared by each client: its demonstrations' mean return, mean length and the share of episodes that terminated before the time limit; computed from its θ on the lattice: the local reward's mean r̄ (the terminal state is worth 0, so r̄ < 0 means the reward prefers ending an episode, the mark of a failing demonstrator in a survival task).\n\n")
	b.WriteString("| env | lattice | client | failing demonstrator (config) | demo return | demo length | terminated | local reward mean r̄ |\n|---|---|---|---|---|---|---|---|\n")
	type ck struct {
		env, lattice string
		client       int
	}
	var order []ck
	acc := map[ck][]DemoQuality{}
	for _, q := range s.DemoQuality {
		k := ck{q.Env, q.Lattice, q.Client}
		if acc[k] == nil {
			order = append(order, k)
		}
		acc[k] = append(acc[k], q)
	}
	for _, k := range order {
		qs := acc[k]
		var ret, ln, term, rm float64
		for _, q := range qs {
			n := float64(len(qs))
			ret, ln, term, rm = ret+q.DemoReturn/n, ln+q.DemoLength/n, term+q.Terminated/n, rm+q.RewardMean/n
		}
		fmt.Fprintf(b, "| %s | %s | %d | %v | %s | %s | %s | %.3g |\n", k.env, k.lattice, k.client, qs[0].Failing, fmtNum(ret), fmtNum(ln), fmt2(term), rm)
	}
}
