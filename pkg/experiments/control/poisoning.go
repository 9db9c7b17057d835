package control

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"gonum.org/v1/gonum/floats"

	"github.com/fedirl/fedirl/pkg/discretize"
	"github.com/fedirl/fedirl/pkg/experiments/attack"
	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/features"
	"github.com/fedirl/fedirl/pkg/federation"
	"github.com/fedirl/fedirl/pkg/fusion"
)

// Attack kinds (AttackConfig.Kind).
const (
	// AttackScale: the attacker sends scale·θ_i, its own honest fit scaled.
	AttackScale = "scale"
	// AttackSignFlip: the attacker sends −scale·θ_i.
	AttackSignFlip = "sign-flip"
	// AttackSpike: the attacker puts scale times its own reward's total mass
	// Σ_x |Φθ_i(x)| on the probe onto one state cell (the cell whose mean
	// over action levels of its own reward Φθ_i is lowest, spread evenly over
	// the cell's action levels) and sends the θ whose reward best fits that
	// spike: the least-squares solution on the probe's Φ (fusion.BackProject).
	// The RBF features are not one-hot, so the fusion sees the spike's
	// projection onto span(Φ), not the spike.
	AttackSpike = "spike"
	// AttackGaussian: the attacker sends θ ~ N(0, I), drawn from a stream
	// seeded by the study seed, the environment and the client, scaled to
	// scale times ‖mean of the honest clients' θ‖.
	AttackGaussian = "gaussian"
)

// AttackKinds lists the attack kinds.
var AttackKinds = []string{AttackScale, AttackSignFlip, AttackSpike, AttackGaussian}

// AttackConfig is the config key `attack`: the last Clients training
// clients fit θ_i honestly, then send to every fusion what Kind and Scale
// say instead (deterministic from the seed). The honest-only reference is
// the same config without the key: the same fits, every θ_i sent as is.
type AttackConfig struct {
	// Clients is the number of attackers f, 1 ≤ f < number_of_clients.
	Clients int `yaml:"clients" json:"clients"`
	// Kind is one of AttackKinds.
	Kind string `yaml:"kind" json:"kind"`
	// Scale is the attack's multiple (> 0): of θ_i (scale, sign-flip), of
	// the attacker's reward mass (spike) or of the honest mean's norm
	// (gaussian).
	Scale float64 `yaml:"scale" json:"scale"`
}

// validate checks an attack among k training clients (nil: no attack).
func (a *AttackConfig) validate(k int) error {
	if a == nil {
		return nil
	}
	switch {
	case !slices.Contains(AttackKinds, a.Kind):
		return fmt.Errorf("attack.kind: %q, want one of %s", a.Kind, strings.Join(AttackKinds, ", "))
	case a.Clients < 1 || a.Clients >= k:
		return fmt.Errorf("attack.clients: %d, want 1 ≤ clients < number_of_clients = %d (at least one honest client)", a.Clients, k)
	case !(a.Scale > 0) || math.IsInf(a.Scale, 0):
		return fmt.Errorf("attack.scale: %v, want a finite number > 0 (sign-flip carries the sign)", a.Scale)
	}
	return nil
}

// poison replaces the θ of the last sp.Attack.Clients clients (their
// honest fits) by what the attack sends.
func (s *Study) poison(clients []federation.LocalClient, sp fusionSpec, env string, seed uint64) error {
	a := sp.Attack
	k := len(clients) - a.Clients
	if k < 1 {
		return fmt.Errorf("attack.clients %d of %d clients leaves no honest client", a.Clients, len(clients))
	}
	thetas := make([][]float64, len(clients))
	for i, c := range clients {
		thetas[i] = c.Learner.(fixedLearner).fit.Theta
	}
	honestMean := make([]float64, len(thetas[0]))
	for _, th := range thetas[:k] {
		floats.AddScaled(honestMean, 1/float64(k), th)
	}
	var probe fusion.Probe
	var actions int
	if a.Kind == AttackSpike {
		var err error
		if probe, err = sp.Probe.Build(); err != nil {
			return err
		}
		g, err := discretize.New(sp.Probe.Grid)
		if err != nil {
			return err
		}
		actions = g.NumActions()
	}
	for i := k; i < len(clients); i++ {
		rng := rand.New(rand.NewPCG(seedOf(seed, "attack/"+env, i), 0))
		th, err := attackTheta(*a, thetas[i], honestMean, probe, actions, rng)
		if err != nil {
			return fmt.Errorf("attacker %d: %w", i, err)
		}
		l := clients[i].Learner.(fixedLearner)
		l.fit.Theta = th
		clients[i].Learner = l
	}
	return nil
}

// attackTheta returns what an attacker with honest fit own sends under a:
// scale·own, −scale·own, the least-squares spike (probe and its number of
// action levels per state, rows s·actions + a) or a draw of rng at
// scale·‖honestMean‖.
func attackTheta(a AttackConfig, own, honestMean []float64, probe fusion.Probe, actions int, rng *rand.Rand) ([]float64, error) {
	out := make([]float64, len(own))
	switch a.Kind {
	case AttackScale, AttackSignFlip:
		c := a.Scale
		if a.Kind == AttackSignFlip {
			c = -c
		}
		for i, v := range own {
			out[i] = c * v
		}
		return out, nil
	case AttackSpike:
		r := features.Reward(nil, probe.Phi, own)
		if actions < 1 || len(r)%actions != 0 {
			return nil, fmt.Errorf("spike: %d probe points are not whole cells of %d action levels", len(r), actions)
		}
		mass := 0.0
		for _, v := range r {
			mass += math.Abs(v)
		}
		cell, low := 0, math.Inf(1)
		for c := range len(r) / actions {
			if m := floats.Sum(r[c*actions:(c+1)*actions]) / float64(actions); m < low {
				cell, low = c, m
			}
		}
		return attack.SpikeTheta(probe.Phi, cell, actions, a.Scale*mass)
	case AttackGaussian:
		return attack.GaussianTheta(rng, len(own), a.Scale*floats.Norm(honestMean, 2)), nil
	}
	return nil, fmt.Errorf("attack.kind %q", a.Kind)
}

// PoisoningMetrics are the metrics each attacked fusion is compared in with
// its honest-only twin.
var PoisoningMetrics = []string{MetricNormalizedReturn, MetricEPICModel, MetricEPICUniform, MetricEPICDemos}

// PoisoningRow is one fusion method under one attack in one environment,
// lattice, client group and metric: the method's honest-only value, its
// value under the attack, and attacked − honest-only paired over seeds
// (same experts, demonstrations, honest fits and PPO seeds).
type PoisoningRow struct {
	Regime   string         `json:"regime"`
	Attack   AttackConfig   `json:"attack"`
	Env      string         `json:"env"`
	Lattice  string         `json:"lattice"`
	Group    string         `json:"group"`
	Method   string         `json:"method"`
	Metric   string         `json:"metric"`
	Honest   report.Summary `json:"honest"`
	Attacked report.Summary `json:"attacked"`
	Diff     report.Paired  `json:"attacked_minus_honest"`
}

// poisoningRows compares every regime with an attack with the regime whose
// config is the same without it (exactly one must exist), method by method,
// for the fusion methods of its config; nil when no regime has an attack.
// A seed whose value is not finite (an expert no better than random, an
// undefined EPIC) leaves that comparison out, as in the summaries.
func poisoningRows(results []SweepResult) ([]PoisoningRow, error) {
	var rows []PoisoningRow
	for _, res := range results {
		if res.Config.Attack == nil {
			continue
		}
		twin := res.Config
		twin.Attack = nil
		hi := slices.IndexFunc(results, func(r SweepResult) bool { return reflect.DeepEqual(r.Config, twin) })
		if hi < 0 {
			return nil, fmt.Errorf("regime %q: no regime has the same config without attack (the honest-only reference)", res.Regime)
		}
		honest, attacked := results[hi].summary, res.summary
		if honest == nil || attacked == nil {
			return nil, fmt.Errorf("regime %q: summaries not at hand", res.Regime)
		}
		for _, ar := range attacked.Rows {
			if ar.Lattice == "-" || ar.Method == MethodLocal || ar.Method == MethodProjected || ar.Method == MethodTrue {
				continue // no fusion, nothing attacked
			}
			j := slices.IndexFunc(honest.Rows, func(r Row) bool {
				return r.Env == ar.Env && r.Lattice == ar.Lattice && r.Method == ar.Method && r.Group == ar.Group
			})
			if j < 0 {
				return nil, fmt.Errorf("regime %q: %s %s %s %s has no honest-only row", res.Regime, ar.Env, ar.Lattice, ar.Method, ar.Group)
			}
			hr := honest.Rows[j]
			for _, met := range PoisoningMetrics {
				a, h := ar.PerSeedNormalized, hr.PerSeedNormalized
				if met != MetricNormalizedReturn {
					a, h = ar.PerSeedEPIC[EPICCoverages[met]], hr.PerSeedEPIC[EPICCoverages[met]]
				}
				if a == nil || h == nil {
					continue
				}
				d, err := report.PairedDiff(a, h, 0.95)
				if err != nil {
					continue
				}
				rows = append(rows, PoisoningRow{Regime: res.Regime, Attack: *res.Config.Attack, Env: ar.Env, Lattice: ar.Lattice,
					Group: ar.Group, Method: ar.Method, Metric: met, Honest: summarizeFinite(h), Attacked: summarizeFinite(a), Diff: d})
			}
		}
	}
	return rows, nil
}

// WritePoisoning writes poisoning.{md,csv,json} into dir when some regime of
// results has an attack (and nothing otherwise).
func WritePoisoning(dir string, results []SweepResult) error {
	rows, err := poisoningRows(results)
	if err != nil || rows == nil {
		return err
	}
	if err := report.WriteJSON(filepath.Join(dir, "poisoning.json"), rows); err != nil {
		return err
	}
	if err := report.WriteFile(filepath.Join(dir, "poisoning.md"), poisoningMarkdown(rows)); err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString("regime,kind,scale,attackers,env,lattice,group,method,metric,seeds,honest,attacked,diff,diff_lo,diff_hi\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%s,%g,%d,%s,%s,%s,%s,%s,%d,%.6g,%.6g,%.6g,%.6g,%.6g\n", r.Regime, r.Attack.Kind, r.Attack.Scale, r.Attack.Clients,
			r.Env, r.Lattice, r.Group, r.Method, r.Metric, r.Diff.N, r.Honest.Mean, r.Attacked.Mean, r.Diff.Mean, r.Diff.Lo, r.Diff.Hi)
	}
	return report.WriteFile(filepath.Join(dir, "poisoning.csv"), b.Bytes())
}

// poisoningMarkdown is poisoning.md: per attack, one line per environment,
// group and method with the normalized return (honest-only, attacked, the
// paired difference) and the EPIC differences under each coverage.
func poisoningMarkdown(rows []PoisoningRow) []byte {
	var b bytes.Buffer
	b.WriteString("# Control-study poisoning: every fusion method under attack vs its honest-only fusion\n\n")
	b.WriteString("Attacked − honest-only, paired over seeds (same experts, demonstrations, honest fits and PPO seeds), mean [95 % t-interval], * where the interval excludes 0. Normalized return: higher is better; EPIC distance to the true reward: lower is better.\n")
	type key struct{ regime, env, lattice, group, method string }
	var order []key
	byKey := map[key]map[string]PoisoningRow{}
	for _, r := range rows {
		k := key{r.Regime, r.Env, r.Lattice, r.Group, r.Method}
		if byKey[k] == nil {
			byKey[k] = map[string]PoisoningRow{}
			order = append(order, k)
		}
		byKey[k][r.Metric] = r
	}
	cell := func(m map[string]PoisoningRow, met string, f func(PoisoningRow) string) string {
		r, ok := m[met]
		if !ok {
			return "–"
		}
		return f(r)
	}
	diff := func(r PoisoningRow) string {
		star := ""
		if r.Diff.Excludes0() {
			star = "*"
		}
		return fmt.Sprintf("%+.3f [%+.3f, %+.3f]%s", r.Diff.Mean, r.Diff.Lo, r.Diff.Hi, star)
	}
	regime := ""
	for _, k := range order {
		m := byKey[k]
		if k.regime != regime {
			regime = k.regime
			var a AttackConfig
			for _, r := range m {
				a = r.Attack
			}
			fmt.Fprintf(&b, "\n## %s (%d attacker%s, %s, scale %g)\n\n", k.regime, a.Clients, map[bool]string{true: "s", false: ""}[a.Clients > 1], a.Kind, a.Scale)
			b.WriteString("| env | group | method | seeds | norm. return honest-only | attacked | attacked − honest-only | EPIC model: attacked − honest-only | EPIC uniform | EPIC demonstrations |\n|---|---|---|---|---|---|---|---|---|---|\n")
		}
		n := 0
		for _, r := range m {
			n = max(n, r.Diff.N)
		}
		fmt.Fprintf(&b, "| %s %s | %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", k.env, k.lattice, k.group, k.method, n,
			cell(m, MetricNormalizedReturn, func(r PoisoningRow) string { return fmt.Sprintf("%.3f", r.Honest.Mean) }),
			cell(m, MetricNormalizedReturn, func(r PoisoningRow) string { return fmt.Sprintf("%.3f", r.Attacked.Mean) }),
			cell(m, MetricNormalizedReturn, diff), cell(m, MetricEPICModel, diff), cell(m, MetricEPICUniform, diff), cell(m, MetricEPICDemos, diff))
	}
	return b.Bytes()
}
