package gridworld

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/fusion"
	"github.com/fedirl/fedirl/pkg/privacy"
	"gonum.org/v1/gonum/floats"
)

// DefaultRegimes is the pre-declared regime list of `fedirl sweep gridworld`
// (regimes.yaml beside this file; `fedirl sweep gridworld` copies the list it
// ran into its output folder).
//
//go:embed regimes.yaml
var DefaultRegimes []byte

// Regime is one pre-declared study variant of a sweep (report.Regime, the
// format every study's sweep shares).
type Regime = report.Regime

// LoadRegimes parses a regimes file (a YAML document with a `regimes` list)
// named src in errors. Every regime needs a unique file-system-safe name, a
// rationale and overrides that decode into a valid Config.
func LoadRegimes(data []byte, src string, base Config) ([]Regime, error) {
	return report.LoadRegimes(data, src, func(r Regime) error {
		_, err := ApplyRegime(r, base)
		return err
	})
}

// ApplyRegime returns base with the regime's overrides decoded over it (keys
// replace base's values, lists replace lists), validated. Errors name the
// regime and the key.
func ApplyRegime(r Regime, base Config) (Config, error) {
	c := base
	if err := r.Decode(&c, nameKeys); err != nil {
		return base, err
	}
	if err := c.Validate(); err != nil {
		return base, fmt.Errorf("regime %q: overrides: %w", r.Name, err)
	}
	return c, nil
}

// SweepRow is one (regime, table row) of a sweep: each column's success in
// distribution, the declared pairs' paired differences (percentage points,
// 95 % t-interval over seeds) in distribution and held out, and the largest
// marginal error of the barycenter solver over the row's cells.
type SweepRow struct {
	Regime string `json:"regime"`
	// Table is "table1" (one row per grid size) or "table2" (one per weak fraction).
	Table        string  `json:"table"`
	GridSize     int     `json:"grid_size"`
	WeakFraction float64 `json:"weak_fraction"`
	Seeds        int     `json:"seeds"`
	// InSuccess is each column's success (%) in distribution (local and
	// every fusion method), mean over seeds.
	InSuccess map[string]float64 `json:"in_success"`
	// In and HeldOut are the declared pairs' paired differences in
	// distribution and held out, keyed by Pair.Key() (mean − local: In only).
	In      map[string]report.Paired `json:"in_paired"`
	HeldOut map[string]report.Paired `json:"held_out_paired"`
	// MarginalError is max over the row's cells of the barycenter's marginal error.
	MarginalError float64 `json:"barycenter_marginal_error"`
	// NoiseStd is the standard deviation σ·2C of each component of the
	// clients' privacy noise (0 without privacy).
	NoiseStd float64 `json:"noise_std"`
	// ThetaNorm is the mean ‖θ_i‖₂ of the learned (un-noised) θ_i and
	// SentError the mean ‖θ̃_i − θ_i‖₂ of what was sent instead (0 without
	// privacy), over the row's cells and clients.
	ThetaNorm float64 `json:"theta_norm"`
	SentError float64 `json:"sent_error"`
	// Theorem2 is Theorem 2 on the row's first seed, with the ε_i of the θ
	// the server fused (Table 1 rows; nil for Table 2, which has no bounds).
	Theorem2 *Theorem2Row `json:"theorem2,omitempty"`
}

// Theorem2Row summarises Theorem 2 (eqs. perf-core and perf-explicit) on one
// cell for the deployed barycentric θ: the largest achieved return gap over
// the clients, the largest per-client right-hand side 2/(1−γ)‖r* − s‖∞,
// whether every client's inequality holds, Σα_iε_i and the explicit
// right-hand side of eq. (perf-explicit).
type Theorem2Row struct {
	MaxGap      float64 `json:"max_gap"`
	MaxCoreRHS  float64 `json:"max_core_rhs"`
	Holds       bool    `json:"holds"`
	WeightedEps float64 `json:"weighted_eps"`
	ExplicitRHS float64 `json:"explicit_rhs"`
}

// theorem2Row summarises a bounds report (nil when there is none).
func theorem2Row(b *BoundsReport) *Theorem2Row {
	if b == nil {
		return nil
	}
	t := &Theorem2Row{Holds: true, WeightedEps: b.WeightedEps, ExplicitRHS: b.PerfExplicit}
	for _, q := range b.Perf {
		t.MaxGap, t.MaxCoreRHS = max(t.MaxGap, q.LHS), max(t.MaxCoreRHS, q.RHS)
		t.Holds = t.Holds && q.Holds
	}
	return t
}

// Label is the row's name in tables and plots.
func (r SweepRow) Label() string {
	if r.Table == "table2" {
		return fmt.Sprintf("T2 p=%.2f", r.WeakFraction)
	}
	return fmt.Sprintf("%d×%d", r.GridSize, r.GridSize)
}

// SweepResult is one regime's rows, with the resolved config it ran.
type SweepResult struct {
	Regime    string     `json:"regime"`
	Rationale string     `json:"rationale"`
	Config    Config     `json:"config"`
	Rows      []SweepRow `json:"rows"`
}

// sweepRows turns a finished study into the regime's rows.
func sweepRows(name string, s *Study) []SweepRow {
	row := func(r SweepRow, in Cols, inP, outP PairedCols, fits []*Fit) SweepRow {
		r.Regime = name
		r.InSuccess = map[string]float64{}
		for m, st := range in {
			if m != ColExpert {
				r.InSuccess[m] = st.Mean
			}
		}
		r.In, r.HeldOut = inP, outP
		for _, f := range fits {
			r.MarginalError = max(r.MarginalError, f.Info[fusion.MethodBarycenter].MarginalError)
		}
		n := 0
		for _, f := range fits {
			for i, th := range f.Local {
				r.ThetaNorm += floats.Norm(th, 2)
				if f.Sent != nil {
					r.SentError += floats.Distance(f.Sent[i], th, 2)
				}
				n++
			}
		}
		if n > 0 {
			r.ThetaNorm /= float64(n)
			r.SentError /= float64(n)
		}
		if p := s.Config.Privacy; p.enabled() {
			if m, err := privacy.New(p.params()); err == nil {
				r.NoiseStd = m.Declaration().NoiseStd()
			}
		}
		if len(fits) > 0 && fits[0] != nil {
			r.Theorem2 = theorem2Row(fits[0].Bounds)
		}
		return r
	}
	var out []SweepRow
	for k, r := range s.Table1() {
		out = append(out, row(SweepRow{Table: "table1", GridSize: r.GridSize, Seeds: r.Seeds},
			r.InDist, r.InDistPaired, r.HeldOutPaired, s.Cells[k]))
	}
	for pi, r := range s.Table2() {
		fits := make([]*Fit, len(s.Ablation))
		for i, fs := range s.Ablation {
			fits[i] = fs[pi]
		}
		out = append(out, row(SweepRow{Table: "table2", GridSize: s.Config.Ablation.GridSize, WeakFraction: r.WeakFraction, Seeds: r.Seeds},
			r.InDist, r.InDistPaired, r.HeldOutPaired, fits))
	}
	return out
}

// SweepProgress is told when a regime starts and ends (cached: reused from
// an earlier run of the same folder).
type SweepProgress interface {
	Regime(i, n int, name string, cached bool)
	Progress
}

// Sweep runs every regime's study (Table 1 and Table 2, with the bounds
// on the first seed of each grid size, as GridWorld) over base and returns their rows in regime order. When dir is not
// empty each regime's run folder is written to dir/regimes/<name>/ with a
// result.json; a regime whose result.json holds the same resolved config is
// reused instead of rerun, so a killed sweep resumes where it stopped.
func Sweep(ctx context.Context, base Config, regimes []Regime, dir string, prog SweepProgress) ([]SweepResult, error) {
	out := make([]SweepResult, len(regimes))
	for i, r := range regimes {
		c, err := ApplyRegime(r, base)
		if err != nil {
			return nil, err
		}
		c = c.Resolved()
		res := SweepResult{Regime: r.Name, Rationale: r.Rationale, Config: c}
		folder := ""
		if dir != "" {
			folder = filepath.Join(dir, "regimes", r.Name)
			if old, ok := loadSweepResult(filepath.Join(folder, "result.json"), res); ok {
				if prog != nil {
					prog.Regime(i, len(regimes), r.Name, true)
				}
				out[i] = old
				continue
			}
		}
		if prog != nil {
			prog.Regime(i, len(regimes), r.Name, false)
		}
		s, err := GridWorld(ctx, c, prog)
		if err != nil {
			return nil, fmt.Errorf("regime %q: %w", r.Name, err)
		}
		res.Rows = sweepRows(r.Name, s)
		if folder != "" {
			if err := s.WriteRun(folder); err != nil {
				return nil, fmt.Errorf("regime %q: %w", r.Name, err)
			}
			if err := report.WriteJSON(filepath.Join(folder, "result.json"), res); err != nil {
				return nil, err
			}
		}
		out[i] = res
	}
	return out, nil
}

// loadSweepResult returns the result stored at path if it is readable and
// ran want's regime with want's config (compared as JSON).
func loadSweepResult(path string, want SweepResult) (SweepResult, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return SweepResult{}, false
	}
	var got SweepResult
	if json.Unmarshal(data, &got) != nil || got.Regime != want.Regime {
		return SweepResult{}, false
	}
	a, errA := json.Marshal(got.Config)
	b, errB := json.Marshal(want.Config)
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		return SweepResult{}, false
	}
	// Recompute the intervals from the stored per-seed differences (JSON
	// keeps them exactly; null bounds do not survive decoding).
	for i := range got.Rows {
		r := &got.Rows[i]
		for _, m := range []map[string]report.Paired{r.In, r.HeldOut} {
			for k, p := range m {
				if p.N == 0 {
					m[k] = report.Paired{}
					continue
				}
				q, err := p.AtLevel(p.Level)
				if err != nil {
					return SweepResult{}, false
				}
				m[k] = q
			}
		}
	}
	got.Rationale = want.Rationale
	return got, true
}

// sweepColumns returns the fusion methods and the declared pairs (in
// distribution, held out) present in any regime, in declaration order.
func sweepColumns(results []SweepResult) (methods []string, in, held []Pair) {
	for _, res := range results {
		for _, m := range res.Config.methods() {
			if !slices.Contains(methods, m) {
				methods = append(methods, m)
			}
		}
	}
	return methods, pairs(append([]string{ColLocal}, methods...)), pairs(methods)
}

// SweepMarkdown is sweep.md: one table per grid size and for Table 2's
// weak fractions, a row per regime.
func SweepMarkdown(results []SweepResult) []byte {
	var b bytes.Buffer
	methods, inPairs, heldPairs := sweepColumns(results)
	fmt.Fprintf(&b, "# Grid-world regime sweep: paired success differences (percentage points)\n\n")
	fmt.Fprintf(&b, "Mean over seeds of the per-seed difference, [95 %% t-interval]; * = the interval excludes 0. In = the clients' own environments, held-out = unseen ones. Method columns (fusion registry names): success (%%) in distribution, mean over seeds. Marginal error: the barycenter solver's largest over the row's cells.\n\n")
	fmt.Fprintf(&b, "## Regimes\n\n| Regime | Rationale |\n|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s |\n", r.Regime, r.Rationale)
	}
	for _, label := range sweepLabels(results) {
		fmt.Fprintf(&b, "\n## %s\n\n", label)
		b.WriteString("| Regime | Seeds |")
		for _, m := range methods {
			fmt.Fprintf(&b, " In: %s |", m)
		}
		b.WriteString(pairHeader(inPairs, heldPairs))
		b.WriteString(" Marginal error | Noise σΔ: ‖θ̃−θ‖ / ‖θ‖ | Thm 2 (first seed): max gap ≤ max RHS; Σαε; explicit RHS |\n")
		b.WriteString(strings.Repeat("|---", 5+len(methods)+len(inPairs)+len(heldPairs)) + "|\n")
		for _, res := range results {
			for _, r := range res.Rows {
				if r.Label() != label {
					continue
				}
				fmt.Fprintf(&b, "| %s | %d |", res.Regime, r.Seeds)
				for _, m := range methods {
					if v, ok := r.InSuccess[m]; ok {
						fmt.Fprintf(&b, " %.2f |", v)
					} else {
						b.WriteString(" – |")
					}
				}
				b.WriteString(pairCells(r.In, inPairs, r.HeldOut, heldPairs))
				fmt.Fprintf(&b, " %.1e | %s | %s |\n", r.MarginalError, noiseText(r), theorem2Text(r.Theorem2))
			}
		}
	}
	return b.Bytes()
}

// noiseText is the noise column: σΔ, then the mean ‖θ̃_i − θ_i‖ and ‖θ_i‖.
func noiseText(r SweepRow) string {
	if r.NoiseStd == 0 {
		return fmt.Sprintf("none (‖θ‖ %.3g)", r.ThetaNorm)
	}
	return fmt.Sprintf("%.3g: %.3g / %.3g", r.NoiseStd, r.SentError, r.ThetaNorm)
}

// theorem2Text is the Theorem 2 column.
func theorem2Text(t *Theorem2Row) string {
	if t == nil {
		return "–"
	}
	holds := "holds"
	if !t.Holds {
		holds = "FAILS"
	}
	return fmt.Sprintf("%.3g ≤ %.3g (%s); %.3g; %.3g", t.MaxGap, t.MaxCoreRHS, holds, t.WeightedEps, t.ExplicitRHS)
}

// sweepLabels lists the row labels in first-seen order.
func sweepLabels(results []SweepResult) []string {
	var labels []string
	for _, res := range results {
		for _, r := range res.Rows {
			if !slices.Contains(labels, r.Label()) {
				labels = append(labels, r.Label())
			}
		}
	}
	return labels
}

// SweepCSV is sweep.csv: one line per (regime, row).
func SweepCSV(results []SweepResult) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	methods, inPairs, heldPairs := sweepColumns(results)
	head := []string{"regime", "table", "grid_size", "weak_fraction", "seeds"}
	for _, m := range methods {
		head = append(head, "in_"+m)
	}
	for _, p := range inPairs {
		head = append(head, "in_"+p.Key(), "in_"+p.Key()+"_lo", "in_"+p.Key()+"_hi")
	}
	for _, p := range heldPairs {
		head = append(head, "held_out_"+p.Key(), "held_out_"+p.Key()+"_lo", "held_out_"+p.Key()+"_hi")
	}
	_ = w.Write(append(head, "barycenter_marginal_error", "noise_std", "theta_norm", "sent_error",
		"theorem2_max_gap", "theorem2_max_core_rhs", "theorem2_holds", "theorem2_weighted_eps", "theorem2_explicit_rhs"))
	for _, res := range results {
		for _, r := range res.Rows {
			rec := []string{res.Regime, r.Table, fmt.Sprint(r.GridSize), ff(r.WeakFraction), fmt.Sprint(r.Seeds)}
			for _, m := range methods {
				if v, ok := r.InSuccess[m]; ok {
					rec = append(rec, ff(v))
				} else {
					rec = append(rec, "")
				}
			}
			rec = append(rec, PairedCols(r.In).csv(inPairs)...)
			rec = append(rec, PairedCols(r.HeldOut).csv(heldPairs)...)
			rec = append(rec, fmt.Sprintf("%.3e", r.MarginalError), ff(r.NoiseStd), ff(r.ThetaNorm), ff(r.SentError))
			if t := r.Theorem2; t != nil {
				rec = append(rec, ff(t.MaxGap), ff(t.MaxCoreRHS), fmt.Sprint(t.Holds), ff(t.WeightedEps), ff(t.ExplicitRHS))
			} else {
				rec = append(rec, "", "", "", "", "")
			}
			_ = w.Write(rec)
		}
	}
	w.Flush()
	return b.Bytes()
}

func ffNaN(x float64) string {
	if x != x {
		return ""
	}
	return ff(x)
}

// SweepForestPNG is forest.png: for each row label (grid size, weak
// fraction) an in-distribution and a held-out panel with one row per regime
// and the intervals of the declared pairs of fusions (DeclaredPairs without
// mean − local).
func SweepForestPNG(results []SweepResult, labels []string) ([]byte, error) {
	_, _, fused := sweepColumns(results)
	var panels []report.ForestPanel
	for _, label := range labels {
		for split := range 2 {
			var names []string
			vals := make([][]report.Paired, len(fused))
			for _, res := range results {
				for _, r := range res.Rows {
					if r.Label() != label {
						continue
					}
					names = append(names, res.Regime)
					m := r.In
					if split == 1 {
						m = r.HeldOut
					}
					for k, p := range fused {
						vals[k] = append(vals[k], m[p.Key()])
					}
				}
			}
			if len(names) == 0 {
				continue
			}
			title := label + [...]string{": in-distribution", ": held-out"}[split]
			var series []report.ForestSeries
			for k, p := range fused {
				st := pairStyle(p)
				series = append(series, report.ForestSeries{Name: p.Label(), Color: st.Color, Shape: st.Shape, Values: vals[k]})
			}
			panels = append(panels, report.ForestPanel{Title: title, Rows: names, Series: series})
		}
	}
	if len(panels) == 0 {
		return nil, fmt.Errorf("sweep forest plot: no rows")
	}
	n := len(panels[0].Rows)
	return report.ForestPNG(sweepForestHeader(results, labels), panels, 2, 460, 70+22*float64(n))
}

// sweepForestHeader is forest.png's header: what is drawn and, when labels
// leaves rows out (Table 2's smaller weak fractions), which ones and where
// they are.
func sweepForestHeader(results []SweepResult, labels []string) string {
	h := "Regime sweep: paired success differences between fusions, mean and 95 % t-interval over seeds (* interval excludes 0)"
	var omitted []string
	for _, res := range results {
		for _, r := range res.Rows {
			if l := r.Label(); !slices.Contains(labels, l) && !slices.Contains(omitted, l) {
				omitted = append(omitted, l)
			}
		}
	}
	if len(omitted) > 0 {
		h += "\nNot drawn: " + strings.Join(omitted, "; ") + " (every row is in sweep.md and sweep.csv)"
	}
	return h
}

// ForestLabels picks the forest plot's rows: every Table-1 grid size and
// Table 2's largest weak fraction.
func ForestLabels(results []SweepResult) []string {
	var t1 []string
	var t2 string
	best := -1.0
	for _, res := range results {
		for _, r := range res.Rows {
			if r.Table == "table1" && !slices.Contains(t1, r.Label()) {
				t1 = append(t1, r.Label())
			}
			if r.Table == "table2" && r.WeakFraction > best {
				best, t2 = r.WeakFraction, r.Label()
			}
		}
	}
	if t2 != "" {
		t1 = append(t1, t2)
	}
	return t1
}

// WriteSweep writes sweep.md, sweep.csv, sweep.json, forest.png and the
// regimes file as read (regimes.yaml) into dir.
func WriteSweep(dir string, regimesFile []byte, results []SweepResult) error {
	png, err := SweepForestPNG(results, ForestLabels(results))
	if err != nil {
		return err
	}
	js, err := report.JSON(results)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"regimes.yaml", regimesFile}, {"sweep.md", SweepMarkdown(results)}, {"sweep.csv", SweepCSV(results)},
		{"sweep.json", js}, {"forest.png", png},
	} {
		if err := report.WriteFile(filepath.Join(dir, f.name), f.data); err != nil {
			return err
		}
	}
	return nil
}
