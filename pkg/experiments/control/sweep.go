package control

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fedirl/fedirl/pkg/experiments/report"
)

// DefaultRegimes is the pre-declared regime list of `fedirl sweep control`
// (regimes.yaml beside this file; the sweep copies the list it ran into its
// output folder).
//
//go:embed regimes.yaml
var DefaultRegimes []byte

// SweepPairs are the declared comparisons of the sweep, each a − b: the
// barycenter and the normalized-mean control against parameter averaging,
// and the transport effect itself (barycenter − normalized-mean).
var SweepPairs = [][2]string{
	{MethodBarycenter, MethodMean},
	{MethodNormalizedMean, MethodMean},
	{MethodBarycenter, MethodNormalizedMean},
}

// SweepMetrics are the metrics every declared pair is compared in: the
// normalized return, the EPIC distance to the true reward under each
// coverage, the worst client's normalized return and the raw final true
// return (which no anchor weighs).
var SweepMetrics = []string{MetricNormalizedReturn, MetricEPICModel, MetricEPICUniform, MetricEPICDemos, MetricWorstNormalized, MetricFinalReturn}

// CeilingThreshold is the training clients' local normalized return (mean
// over seeds) at or below which a regime puts the local rewards below the
// ceiling, i.e. leaves fusion something to fix.
const CeilingThreshold = 0.85

// SweepBase returns the base config of `fedirl sweep control`: the default
// study with 10 seeds on Pendulum-v1 and CartPole-v1, methods local,
// personalized, mean, normalized-mean, barycenter, pooled, projected and
// true (quick: the smoke-test study with 2 seeds), without clips: a
// regime's folder holds its tables (a regime's overrides can turn them on,
// clips: {enabled: true}).
func SweepBase(quick bool) Config {
	c := DefaultConfig()
	c.Preset = "sweep"
	c.NumberOfSeeds = 10
	if quick {
		c = QuickConfig()
		c.Preset = "sweep-quick"
		c.NumberOfSeeds = 2
	}
	c.Envs = []string{"Pendulum-v1", "CartPole-v1"}
	c.Methods = []string{MethodLocal, MethodPersonalized, MethodMean, MethodNormalizedMean, MethodBarycenter, MethodPooled, MethodProjected, MethodTrue}
	c.Clips.Enabled = false
	return c
}

// LoadRegimes parses a regimes file named src in errors; every regime's
// overrides must give a valid config over base.
func LoadRegimes(data []byte, src string, base Config) ([]report.Regime, error) {
	return report.LoadRegimes(data, src, func(r report.Regime) error {
		_, err := ApplyRegime(r, base)
		return err
	})
}

// ApplyRegime returns base with r's overrides decoded over it (an env block
// merges key by key, as in a config file), validated.
func ApplyRegime(r report.Regime, base Config) (Config, error) {
	c := base
	c.Env = maps.Clone(base.Env)
	c.Lattices = maps.Clone(base.Lattices)
	if err := r.Decode(&c, nil); err != nil {
		return base, err
	}
	if err := c.Validate(); err != nil {
		return base, fmt.Errorf("regime %q: overrides: %w", r.Name, err)
	}
	return c, nil
}

// SweepComparison is one declared pair in one metric, with its 95 %
// t-interval and whether the interval at the Bonferroni-corrected level
// (1 − 0.05/m, m the metric's comparisons in the sweep) excludes 0.
type SweepComparison struct {
	Metric     string        `json:"metric"`
	A          string        `json:"a"`
	B          string        `json:"b"`
	Diff       report.Paired `json:"diff"`
	Bonferroni report.Paired `json:"bonferroni"`
	// Resolved is Bonferroni.Excludes0().
	Resolved bool `json:"resolved_bonferroni"`
}

// SweepRow is one (regime, environment, lattice, group) of the sweep.
type SweepRow struct {
	Regime  string `json:"regime"`
	Env     string `json:"env"`
	Lattice string `json:"lattice"`
	Group   string `json:"group"`
	Seeds   int    `json:"seeds"`
	// Valid is the ladder's verdict on the environment and lattice.
	Valid bool `json:"valid"`
	// Normalized and Raw are the methods' normalized and raw final true
	// returns, mean over seeds (and the group's clients).
	Normalized map[string]float64 `json:"normalized_return"`
	Raw        map[string]float64 `json:"final_true_return"`
	// Worst is, per method, the mean over seeds of the group's lowest
	// client normalized return (absent where no seed has one).
	Worst map[string]float64 `json:"worst_client_normalized_return,omitempty"`
	// BelowCeiling reports (training group) whether the local rewards'
	// normalized return is at most CeilingThreshold.
	BelowCeiling bool              `json:"below_ceiling"`
	Comparisons  []SweepComparison `json:"comparisons"`
}

// SweepResult is one regime: its declaration, resolved config and rows.
type SweepResult struct {
	Regime    string     `json:"regime"`
	Rationale string     `json:"rationale"`
	Overrides string     `json:"overrides"`
	Config    Config     `json:"config"`
	Rows      []SweepRow `json:"rows"`
	summary   *Summary   // the regime's summary, for WritePoisoning
}

// SweepOptions configures Sweep.
type SweepOptions struct {
	// Jobs is the number of units computed at the same time.
	Jobs int
	// Progress draws each regime's progress bars on a terminal.
	Progress bool
	// Log receives each regime's phase lines.
	Log io.Writer
	// OnRegime, when set, is told when a regime starts.
	OnRegime func(i, n int, name string)
}

// Sweep runs every regime's study over base into dir/regimes/<name>/, all
// regimes sharing the unit files under dir/units (a unit two regimes have
// in common, e.g. the experts, is computed once; a rerun into dir computes
// nothing that is on disk), and writes sweep.{md,csv,json} and forest.png
// into dir.
func Sweep(ctx context.Context, base Config, regimes []report.Regime, dir string, o SweepOptions) ([]SweepResult, error) {
	var out []SweepResult
	units := filepath.Join(dir, "units")
	for i, r := range regimes {
		c, err := ApplyRegime(r, base)
		if err != nil {
			return nil, err
		}
		if o.OnRegime != nil {
			o.OnRegime(i, len(regimes), r.Name)
		}
		s, err := New(c, filepath.Join(dir, "regimes", r.Name), o.Jobs, o.Log)
		if err != nil {
			return nil, fmt.Errorf("regime %q: %w", r.Name, err)
		}
		s.UseUnits(units)
		s.Progress = o.Progress
		if err := s.Run(ctx, Shard{}); err != nil {
			return nil, fmt.Errorf("regime %q: %w", r.Name, err)
		}
		sum, err := s.WriteOutputs()
		if err != nil {
			return nil, fmt.Errorf("regime %q: %w", r.Name, err)
		}
		out = append(out, SweepResult{Regime: r.Name, Rationale: r.Rationale, Overrides: r.OverridesYAML(), Config: c,
			Rows: sweepRows(r.Name, sum), summary: sum})
	}
	if err := bonferroni(out); err != nil {
		return nil, err
	}
	if err := WritePoisoning(dir, out); err != nil { // regimes with an attack against their honest twin
		return nil, err
	}
	return out, WriteSweep(dir, out)
}

// sweepRows extracts a regime's rows from its summary.
func sweepRows(regime string, sum *Summary) []SweepRow {
	var rows []SweepRow
	idx := map[[3]string]int{}
	valid := map[[2]string]bool{}
	for _, v := range sum.Validation {
		valid[[2]string{v.Env, v.Lattice}] = v.Valid
	}
	for _, r := range sum.Rows {
		if r.Lattice == "-" {
			continue
		}
		k := [3]string{r.Env, r.Lattice, r.Group}
		i, ok := idx[k]
		if !ok {
			i = len(rows)
			idx[k] = i
			rows = append(rows, SweepRow{Regime: regime, Env: r.Env, Lattice: r.Lattice, Group: r.Group,
				Valid: valid[[2]string{r.Env, r.Lattice}], Normalized: map[string]float64{}, Raw: map[string]float64{}, Worst: map[string]float64{}})
		}
		rows[i].Normalized[r.Method] = r.NormalizedReturn.Mean
		rows[i].Raw[r.Method] = r.Final.Mean
		if r.WorstNormalized.N > 0 {
			rows[i].Worst[r.Method] = r.WorstNormalized.Mean
		}
		rows[i].Seeds = max(rows[i].Seeds, r.Final.N)
	}
	// the true reward's row has lattice "-": copy it into each lattice's rows
	for _, r := range sum.Rows {
		if r.Method != MethodTrue {
			continue
		}
		for i := range rows {
			if rows[i].Env == r.Env && rows[i].Group == r.Group {
				rows[i].Normalized[MethodTrue] = r.NormalizedReturn.Mean
				rows[i].Raw[MethodTrue] = r.Final.Mean
				if r.WorstNormalized.N > 0 {
					rows[i].Worst[MethodTrue] = r.WorstNormalized.Mean
				}
			}
		}
	}
	for i := range rows {
		if loc, ok := rows[i].Normalized[MethodLocal]; ok && rows[i].Group == "train" {
			rows[i].BelowCeiling = loc <= CeilingThreshold
		}
	}
	for _, cmp := range sum.Comparisons {
		i, ok := idx[[3]string{cmp.Env, cmp.Lattice, cmp.Group}]
		if !ok || !slices.Contains(SweepMetrics, cmp.Metric) || !declared([2]string{cmp.A, cmp.B}) {
			continue
		}
		rows[i].Comparisons = append(rows[i].Comparisons, SweepComparison{Metric: cmp.Metric, A: cmp.A, B: cmp.B, Diff: cmp.Diff})
	}
	return rows
}

// bonferroni fills every comparison's Bonferroni interval: the family of a
// metric and a declared family of pairs (pairFamilies: the sweep's, the
// joint block's) is every (regime, environment, lattice, group, pair) of
// the sweep compared in it, m of them, and each interval is at level
// 1 − 0.05/m.
func bonferroni(results []SweepResult) error {
	type fam struct {
		family int
		metric string
	}
	familyOf := func(c SweepComparison) fam {
		for fi, f := range pairFamilies {
			if slices.Contains(f, [2]string{c.A, c.B}) {
				return fam{fi, c.Metric}
			}
		}
		return fam{-1, c.Metric}
	}
	m := map[fam]int{}
	for _, res := range results {
		for _, r := range res.Rows {
			for _, c := range r.Comparisons {
				m[familyOf(c)]++
			}
		}
	}
	for ri := range results {
		for i := range results[ri].Rows {
			for j := range results[ri].Rows[i].Comparisons {
				c := &results[ri].Rows[i].Comparisons[j]
				b, err := c.Diff.AtLevel(1 - 0.05/float64(m[familyOf(*c)]))
				if err != nil {
					return err
				}
				c.Bonferroni, c.Resolved = b, b.Excludes0()
			}
		}
	}
	return nil
}

// WriteSweep writes sweep.json, sweep.md, sweep.csv and forest.png into dir.
func WriteSweep(dir string, results []SweepResult) error {
	if err := report.WriteJSON(filepath.Join(dir, "sweep.json"), results); err != nil {
		return err
	}
	if err := report.WriteFile(filepath.Join(dir, "sweep.md"), SweepMarkdown(results)); err != nil {
		return err
	}
	if err := report.WriteFile(filepath.Join(dir, "sweep.csv"), sweepCSV(results)); err != nil {
		return err
	}
	png, err := sweepForest(results)
	if err != nil {
		return err
	}
	return report.WriteFile(filepath.Join(dir, "forest.png"), png)
}

// familyLabel names the declared families of pairs (pairFamilies).
var familyLabel = []string{"the sweep's declared pairs", "the joint block's declared pairs (pooled ceiling, personalized rewards)"}

// metricLabel names a metric in tables and plots.
var metricLabel = map[string]string{
	MetricNormalizedReturn: "normalized return",
	MetricWorstNormalized:  "worst-client normalized return",
	MetricFinalReturn:      "raw final true return",
	MetricEPICModel:        "EPIC (model coverage)",
	MetricEPICUniform:      "EPIC (uniform coverage)",
	MetricEPICDemos:        "EPIC (demonstrations coverage)",
}

// fmtDiff prints a paired difference as mean [lo, hi] with a star where
// the 95 % interval excludes 0 and a dagger where the Bonferroni one does.
func fmtDiff(c SweepComparison, decimals int) string {
	if c.Diff.N == 0 {
		return "–"
	}
	f := func(x float64) string {
		if math.IsNaN(x) {
			return "n/a"
		}
		return fmt.Sprintf("%+.*f", decimals, x)
	}
	s := fmt.Sprintf("%s [%s, %s]", f(c.Diff.Mean), f(c.Diff.Lo), f(c.Diff.Hi))
	if c.Diff.Excludes0() {
		s = "**" + s + "**"
	}
	if c.Resolved {
		s += " †"
	}
	return s
}

func (r SweepRow) comparison(metric string, pair [2]string) SweepComparison {
	for _, c := range r.Comparisons {
		if c.Metric == metric && c.A == pair[0] && c.B == pair[1] {
			return c
		}
	}
	return SweepComparison{}
}

// SweepMarkdown is sweep.md: the regimes, whether each puts the local
// rewards below the ceiling, and per metric a table of the declared paired
// differences.
func SweepMarkdown(results []SweepResult) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Control regime sweep: where fusion has something to fix\n\n")
	fmt.Fprintf(&b, "Per regime, environment and client group: paired differences across seeds, mean [95 %% t-interval]; **bold** = the interval excludes 0, † = the Bonferroni-corrected interval (level 1 − 0.05/m, m = the metric's comparisons in the sweep) excludes 0. Normalized return: (R − R_random)/(R_anchor − R_random) per client and seed. EPIC: distance to the true lattice reward (lower is closer), so a negative EPIC difference means a is closer.\n\n")
	fmt.Fprintf(&b, "## Regimes\n\n| regime | rationale | overrides |\n|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s | `%s` |\n", r.Regime, r.Rationale, strings.ReplaceAll(strings.TrimSpace(r.Overrides), "\n", " "))
	}
	// the overview's methods: the sweep's, and the joint block's where any
	// regime ran them
	cols := []string{MethodLocal, MethodMean, MethodNormalizedMean, MethodBarycenter}
	for _, m := range []string{MethodPooled, MethodPersonalized} {
		ran := false
		for _, res := range results {
			for _, r := range res.Rows {
				_, ok := r.Normalized[m]
				ran = ran || ok
			}
		}
		if ran {
			cols = append(cols, m)
		}
	}
	cols = append(cols, MethodTrue)
	fmt.Fprintf(&b, "\n## Does the regime leave fusion something to fix? (training clients, normalized return, mean over seeds)\n\n")
	fmt.Fprintf(&b, "| regime | env | lattice | valid | seeds | %s | local ≤ %.2f | raw: %s |\n|---|---|---|---|---|%s---|---|\n",
		strings.Join(cols, " | "), CeilingThreshold, strings.Join(cols, " / "), strings.Repeat("---|", len(cols)))
	for _, res := range results {
		for _, r := range res.Rows {
			if r.Group != "train" {
				continue
			}
			var ns, raws []string
			for _, m := range cols {
				ns = append(ns, fmtMean(r.Normalized, m, 2))
				raws = append(raws, fmtMean(r.Raw, m, 1))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | %s | %s |\n", r.Regime, r.Env, r.Lattice, yesNo(r.Valid), r.Seeds,
				strings.Join(ns, " | "), yesNo(r.BelowCeiling), strings.Join(raws, " / "))
		}
	}
	fmt.Fprintf(&b, "\n## The worst client (training clients: per seed the lowest client normalized return, mean over seeds)\n\n")
	fmt.Fprintf(&b, "| regime | env | lattice | %s |\n|---|---|---|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
	for _, res := range results {
		for _, r := range res.Rows {
			if r.Group != "train" {
				continue
			}
			var ws []string
			for _, m := range cols {
				ws = append(ws, fmtMean(r.Worst, m, 2))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Regime, r.Env, r.Lattice, strings.Join(ws, " | "))
		}
	}
	for fi, pairs := range pairFamilies {
		for _, met := range SweepMetrics {
			dec := 3 // EPIC and normalized-return differences are both hundredths or less
			if met == MetricFinalReturn {
				dec = 1
			}
			have := false
			for _, res := range results {
				for _, r := range res.Rows {
					for _, p := range pairs {
						have = have || r.comparison(met, p).Diff.N > 0
					}
				}
			}
			if !have {
				continue
			}
			fmt.Fprintf(&b, "\n## %s: %s\n\n| regime | env | group |", metricLabel[met], familyLabel[fi])
			for _, p := range pairs {
				fmt.Fprintf(&b, " %s − %s |", p[0], p[1])
			}
			fmt.Fprintf(&b, "\n|---|---|---|%s\n", strings.Repeat("---|", len(pairs)))
			for _, res := range results {
				for _, r := range res.Rows {
					fmt.Fprintf(&b, "| %s | %s | %s |", r.Regime, r.Env, r.Group)
					for _, p := range pairs {
						fmt.Fprintf(&b, " %s |", fmtDiff(r.comparison(met, p), dec))
					}
					fmt.Fprintln(&b)
				}
			}
		}
	}
	return b.Bytes()
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// fmtMean prints m's value in vals as fixed does, or – where it is missing.
func fmtMean(vals map[string]float64, m string, dec int) string {
	v, ok := vals[m]
	if !ok {
		return "–"
	}
	return fixed(v, dec)
}

// sweepCSV is sweep.csv: one line per (regime, env, lattice, group, metric,
// pair) with fixed columns.
func sweepCSV(results []SweepResult) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"regime", "env", "lattice", "group", "seeds", "valid", "local_normalized_return", "below_ceiling",
		"metric", "a", "b", "mean_diff", "ci95_lo", "ci95_hi", "bonferroni_level", "bonferroni_lo", "bonferroni_hi", "resolved_bonferroni"})
	for _, res := range results {
		for _, r := range res.Rows {
			loc := ""
			if v, ok := r.Normalized[MethodLocal]; ok {
				loc = num(v)
			}
			for _, c := range r.Comparisons {
				w.Write([]string{r.Regime, r.Env, r.Lattice, r.Group, fmt.Sprint(r.Seeds), fmt.Sprint(r.Valid), loc, fmt.Sprint(r.BelowCeiling),
					c.Metric, c.A, c.B, num(c.Diff.Mean), num(c.Diff.Lo), num(c.Diff.Hi), num(c.Bonferroni.Level), num(c.Bonferroni.Lo), num(c.Bonferroni.Hi), fmt.Sprint(c.Resolved)})
			}
		}
	}
	w.Flush()
	return buf.Bytes()
}

// sweepForest draws one panel per metric (training clients): a row per
// regime and environment, a marker and 95 % interval per declared pair.
func sweepForest(results []SweepResult) ([]byte, error) {
	var panels []report.ForestPanel
	for _, met := range SweepMetrics {
		var rows []string
		vals := make([][]report.Paired, len(SweepPairs))
		for _, res := range results {
			for _, r := range res.Rows {
				if r.Group != "train" {
					continue
				}
				rows = append(rows, fmt.Sprintf("%s %s", res.Regime, shortEnv(r.Env)))
				for pi, p := range SweepPairs {
					vals[pi] = append(vals[pi], r.comparison(met, p).Diff)
				}
			}
		}
		var series []report.ForestSeries
		for pi, p := range SweepPairs {
			series = append(series, report.ForestSeries{Name: p[0] + " − " + p[1], Color: report.ForestColors[pi], Shape: report.ForestShapes[pi], Values: vals[pi]})
		}
		panels = append(panels, report.ForestPanel{Title: metricLabel[met] + ", training clients", Rows: rows, Series: series,
			XLabel: "paired difference", MinHalfWidth: 0.01})
	}
	nrows := 0
	if len(panels) > 0 {
		nrows = len(panels[0].Rows)
	}
	return report.ForestPNG(sweepForestHeader(results), panels, 2, 420, 60+24*float64(nrows))
}

// sweepForestHeader is the forest plot's header, marked as a smoke test for
// the --quick sweep (as the control study's --quick figures are).
func sweepForestHeader(results []SweepResult) string {
	header := "Control regime sweep: paired differences, mean and 95 % t-interval over seeds (* interval excludes 0; a missing marker: no comparison)"
	if len(results) > 0 && results[0].Config.Preset == SweepBase(true).Preset {
		header = "SMOKE TEST (--quick): budgets too small to mean anything\n" + header
	}
	return header
}

// shortEnv drops the version suffix of a Gymnasium id.
func shortEnv(env string) string {
	name, _, _ := strings.Cut(env, "-v")
	return name
}
