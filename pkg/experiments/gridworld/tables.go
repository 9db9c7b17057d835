package gridworld

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/fusion"
	"gonum.org/v1/gonum/stat"
)

// Stat is a mean ± sample standard deviation (in percent) over N values.
type Stat report.Summary

// newStat summarizes success rates xs ∈ [0, 1] in percent.
func newStat(xs []float64) Stat {
	pct := make([]float64, len(xs))
	for i, x := range xs {
		pct[i] = 100 * x
	}
	return Stat(report.Summarize(pct))
}

func (s Stat) format(prec int) string {
	if s.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.*f ± %.*f", prec, s.Mean, prec, s.Std)
}

// Table1Row is one grid size of Table 1.
type Table1Row struct {
	GridSize      int        `json:"grid_size"`
	Clients       int        `json:"clients"`
	HeldOut       int        `json:"held_out_environments"`
	Seeds         int        `json:"seeds"`
	InDist        Cols       `json:"in_distribution"`
	HeldOutS      Cols       `json:"held_out"`
	InDistPaired  PairedCols `json:"in_distribution_paired"`
	HeldOutPaired PairedCols `json:"held_out_paired"`
	// InDistWorst and HeldOutWorst are, per column, the worst client's (or
	// held-out environment's) success in each seed, summarized over seeds;
	// the *WorstPaired are the declared pairs on those per-seed minima.
	InDistWorst        Cols       `json:"in_distribution_worst"`
	HeldOutWorst       Cols       `json:"held_out_worst"`
	InDistWorstPaired  PairedCols `json:"in_distribution_worst_paired"`
	HeldOutWorstPaired PairedCols `json:"held_out_worst_paired"`
}

// PairedCols are paired comparisons of columns over the same seeds, in
// percentage points, keyed by Pair.Key(): per seed, each column's success
// averaged over the seed's environments, then the difference of the pair's
// columns per seed, its mean and 95 % Student-t interval over seeds
// (report.PairedDiff). Pairs with ColLocal exist in distribution only.
type PairedCols map[string]report.Paired

// seedMeans returns, per fit, 100 × the mean of rates(f) (one value per seed).
func seedMeans(fits []*Fit, rates func(*Fit) []float64) []float64 {
	return seedReduce(fits, rates, func(x []float64) float64 { return stat.Mean(x, nil) })
}

// seedReduce returns, per fit, 100 × reduce(rates(f)) (one value per seed).
func seedReduce(fits []*Fit, rates func(*Fit) []float64, reduce func([]float64) float64) []float64 {
	out := make([]float64, len(fits))
	for i, f := range fits {
		out[i] = 100 * reduce(rates(f))
	}
	return out
}

// worst is the reducer of the worst-client columns.
func worst(x []float64) float64 { return slices.Min(x) }

// pairedCols compares the declared pairs among cols over fits (one per seed)
// on the in-distribution or held-out rates, each seed's averaged over its
// clients or environments.
func pairedCols(fits []*Fit, heldOut bool, cols []string) PairedCols {
	return pairedColsBy(fits, heldOut, cols, func(x []float64) float64 { return stat.Mean(x, nil) })
}

// pairedColsBy is pairedCols with each seed's rates reduced by reduce
// (their mean, or worst).
func pairedColsBy(fits []*Fit, heldOut bool, cols []string, reduce func([]float64) float64) PairedCols {
	m := func(col string) []float64 {
		return seedReduce(fits, func(f *Fit) []float64 {
			if heldOut {
				return f.HeldOut[col]
			}
			return f.InDist[col]
		}, reduce)
	}
	pc := PairedCols{}
	for _, p := range pairs(cols) {
		d, err := report.PairedDiff(m(p.A), m(p.B), 0.95)
		if err != nil {
			panic(err) // same seeds on both sides and finite rates: a programmer error
		}
		pc[p.Key()] = d
	}
	return pc
}

// get returns the pair's difference, nil when the study has no such pair.
func (pc PairedCols) get(p Pair) *report.Paired {
	if d, ok := pc[p.Key()]; ok {
		return &d
	}
	return nil
}

// round2 rounds to the two decimals shown, without a negative zero.
func round2(x float64) float64 {
	r := math.Round(x*100) / 100
	if r == 0 {
		return 0
	}
	return r
}

// formatPaired renders a paired difference as "+0.12 [−0.30, +0.54]", with a
// star when the interval excludes 0.
func formatPaired(p *report.Paired) string {
	if p == nil || p.N == 0 {
		return "–"
	}
	if p.N < 2 {
		return fmt.Sprintf("%+.2f", round2(p.Mean))
	}
	star := ""
	if p.Excludes0() {
		star = " *"
	}
	return fmt.Sprintf("%+.2f [%+.2f, %+.2f]%s", round2(p.Mean), round2(p.Lo), round2(p.Hi), star)
}

// Cols holds one Stat per column, keyed by column name.
type Cols map[string]Stat

// inCols are the in-distribution columns of a study: ColLocal, the fusion
// methods and, with expert, ColExpert; heldCols the same without ColLocal.
func (c Config) inCols(expert bool) []string {
	return append(c.clientCols(), c.heldCols(expert)...)
}

func (c Config) heldCols(expert bool) []string {
	out := c.fusedCols()
	if expert {
		out = append(out, ColExpert)
	}
	return out
}

// Table1 pools success rates over seeds and clients (in-distribution) or
// seeds and held-out environments (held-out), as mean ± sample std in %.
func (s *Study) Table1() []Table1Row {
	var rows []Table1Row
	for k, e := range s.Config.Environments {
		row := Table1Row{GridSize: e.GridSize, Clients: e.NumberOfClients, HeldOut: heldOutCount(e), Seeds: len(s.Cells[k]),
			InDist: Cols{}, HeldOutS: Cols{}}
		for _, m := range s.Config.inCols(true) {
			var in, out []float64
			for _, f := range s.Cells[k] {
				in = append(in, f.InDist[m]...)
				out = append(out, f.HeldOut[m]...)
			}
			row.InDist[m] = newStat(in)
			if !slices.Contains(s.Config.clientCols(), m) {
				row.HeldOutS[m] = newStat(out)
			}
		}
		row.InDistPaired = pairedCols(s.Cells[k], false, s.Config.inCols(false))
		row.HeldOutPaired = pairedCols(s.Cells[k], true, s.Config.heldCols(false))
		row.InDistWorst, row.HeldOutWorst = Cols{}, Cols{}
		for _, m := range s.Config.inCols(true) {
			row.InDistWorst[m] = Stat(report.Summarize(seedReduce(s.Cells[k], func(f *Fit) []float64 { return f.InDist[m] }, worst)))
		}
		for _, m := range s.Config.heldCols(true) {
			row.HeldOutWorst[m] = Stat(report.Summarize(seedReduce(s.Cells[k], func(f *Fit) []float64 { return f.HeldOut[m] }, worst)))
		}
		row.InDistWorstPaired = pairedColsBy(s.Cells[k], false, s.Config.inCols(false), worst)
		row.HeldOutWorstPaired = pairedColsBy(s.Cells[k], true, s.Config.heldCols(false), worst)
		rows = append(rows, row)
	}
	return rows
}

// Table2Row is one weak fraction of Table 2.
type Table2Row struct {
	WeakFraction float64 `json:"weak_fraction"`
	WeakClients  int     `json:"weak_clients"`
	// HeldOut is the number of held-out environments per seed.
	HeldOut       int        `json:"held_out_environments"`
	Seeds         int        `json:"seeds"`
	InDist        Cols       `json:"in_distribution"`
	HeldOutS      Cols       `json:"held_out"`
	InDistPaired  PairedCols `json:"in_distribution_paired"`
	HeldOutPaired PairedCols `json:"held_out_paired"`
	// LocalWeak and LocalFull pool the local success (own environment) of the
	// weak and of the full-budget clients over seeds × clients.
	LocalWeak Stat `json:"local_weak"`
	LocalFull Stat `json:"local_full"`
	// FullMinusWeak is the paired per-seed difference of the full clients'
	// mean local success and the weak clients' (percentage points; N = 0
	// when a seed has no weak or no full client).
	FullMinusWeak report.Paired `json:"local_full_minus_weak"`
}

// Table2 averages each ablation seed's success over clients (in-distribution)
// or held-out environments, then reports mean ± sample std over seeds in %.
func (s *Study) Table2() []Table2Row {
	var rows []Table2Row
	K := s.Config.Ablation.NumberOfClients
	for pi, p := range s.Config.Ablation.WeakFractions {
		row := Table2Row{WeakFraction: p, WeakClients: int(math.Round(p * float64(K))), HeldOut: heldOutCount(s.Config.ablationEnv()), Seeds: len(s.Ablation),
			InDist: Cols{}, HeldOutS: Cols{}}
		for _, m := range s.Config.inCols(false) {
			var in, out []float64
			for _, fs := range s.Ablation {
				in = append(in, stat.Mean(fs[pi].InDist[m], nil))
				if !slices.Contains(s.Config.clientCols(), m) {
					out = append(out, stat.Mean(fs[pi].HeldOut[m], nil))
				}
			}
			row.InDist[m] = newStat(in)
			if !slices.Contains(s.Config.clientCols(), m) {
				row.HeldOutS[m] = newStat(out)
			}
		}
		var weak, full, seedWeak, seedFull []float64
		for _, fs := range s.Ablation {
			f := fs[pi]
			var w, fl []float64
			for i, b := range f.Budgets {
				if b != s.Config.IRL.IRLIterations {
					w = append(w, f.InDist[ColLocal][i])
				} else {
					fl = append(fl, f.InDist[ColLocal][i])
				}
			}
			weak, full = append(weak, w...), append(full, fl...)
			if len(w) > 0 && len(fl) > 0 {
				seedWeak = append(seedWeak, 100*stat.Mean(w, nil))
				seedFull = append(seedFull, 100*stat.Mean(fl, nil))
			}
		}
		row.LocalWeak, row.LocalFull = newStat(weak), newStat(full)
		if len(seedWeak) > 0 {
			d, err := report.PairedDiff(seedFull, seedWeak, 0.95)
			if err != nil {
				panic(err) // equal lengths and finite rates: a programmer error
			}
			row.FullMinusWeak = d
		}
		fits := make([]*Fit, len(s.Ablation))
		for i, fs := range s.Ablation {
			fits[i] = fs[pi]
		}
		row.InDistPaired = pairedCols(fits, false, s.Config.inCols(false))
		row.HeldOutPaired = pairedCols(fits, true, s.Config.heldCols(false))
		rows = append(rows, row)
	}
	return rows
}

// paperStat is a mean ± std (percent) as the paper reports it.
type paperStat struct{ Mean, Std float64 }

func (p paperStat) format(prec int) string {
	return fmt.Sprintf("%.*f ± %.*f", prec, p.Mean, prec, p.Std)
}

// paperDiff renders the difference of two of the paper's means, the only
// comparison its tables allow (no per-seed values are given).
func paperDiff(a, b paperStat, prec int) string {
	return fmt.Sprintf("%+.*f", prec, a.Mean-b.Mean)
}

// Paper's Table 1 (percent): in-distribution Local, Mean, Barycenter;
// held-out Mean, Barycenter.
var paperTable1 = map[int][5]paperStat{
	20: {{73.7, 14.0}, {73.5, 14.5}, {76.4, 13.4}, {75.3, 23.0}, {81.4, 19.0}},
	10: {{80.9, 13.9}, {81.6, 14.2}, {89.1, 10.7}, {76.1, 8.0}, {80.3, 9.9}},
	5:  {{84.2, 12.6}, {85.1, 11.9}, {90.5, 9.8}, {78.4, 7.3}, {82.6, 8.1}},
}

// Paper's Table 2 (percent): in-distribution Mean, Barycenter; held-out
// Mean, Barycenter.
var paperTable2 = map[float64][4]paperStat{
	0:    {{81.97, 3.10}, {81.97, 1.97}, {86.43, 1.86}, {88.27, 2.21}},
	0.25: {{84.43, 3.35}, {86.20, 3.15}, {84.83, 2.76}, {85.50, 3.02}},
	0.5:  {{80.17, 7.94}, {85.27, 2.76}, {82.13, 0.91}, {85.67, 2.73}},
}

// Table1Markdown renders Table 1, the paired differences and, beside the
// paper's values, ours.
func (s *Study) Table1Markdown() []byte {
	var b bytes.Buffer
	rows := s.Table1()
	in, held := s.Config.inCols(true), s.Config.heldCols(true)
	inPairs, heldPairs := pairs(s.Config.inCols(false)), pairs(s.Config.heldCols(false))
	fmt.Fprintf(&b, "# Table 1: average success rates (%%), mean ± std\n\nEvaluation: %s.\n\n", s.Config.evaluationText())
	fmt.Fprintf(&b, "In-distribution: pooled over seeds × clients; held-out: pooled over seeds × held-out environments. ")
	fmt.Fprintf(&b, "Columns are fusion methods by their registry names (fusion_methods); the paper has local, mean and barycenter, the others (and expert, θ*) are extra reference columns.\n\n")
	colsTable(&b, rows, true, in, held, func(r Table1Row) (Cols, Cols) { return r.InDist, r.HeldOutS })
	fmt.Fprintf(&b, "\nPaired differences in percentage points over the same seeds (per seed: mean over the seed's clients or held-out environments; mean [95 %% t-interval]; * = interval excludes 0):\n\n")
	b.WriteString("| Environment | Seeds |" + pairHeader(inPairs, heldPairs) + "\n" + strings.Repeat("|---", 2+len(inPairs)+len(heldPairs)) + "|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d×%d | %d |%s\n", r.GridSize, r.GridSize, r.Seeds, pairCells(r.InDistPaired, inPairs, r.HeldOutPaired, heldPairs))
	}
	fmt.Fprintf(&b, "\nThe worst client: per seed, the lowest success among the seed's clients (in) or held-out environments (held-out), mean ± std over seeds (%%):\n\n")
	colsTable(&b, rows, false, in, held, func(r Table1Row) (Cols, Cols) { return r.InDistWorst, r.HeldOutWorst })
	fmt.Fprintf(&b, "\nPaired differences of the worst client's success (percentage points; per seed the two columns' minima; mean [95 %% t-interval]):\n\n")
	b.WriteString("| Environment | Seeds |" + pairHeader(inPairs, heldPairs) + "\n" + strings.Repeat("|---", 2+len(inPairs)+len(heldPairs)) + "|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d×%d | %d |%s\n", r.GridSize, r.GridSize, r.Seeds, pairCells(r.InDistWorstPaired, inPairs, r.HeldOutWorstPaired, heldPairs))
	}
	s.jointMarkdown(&b)
	bm, ml := DeclaredPairs[0], Pair{fusion.MethodMean, ColLocal}
	if !slices.Contains(inPairs, bm) {
		return b.Bytes()
	}
	fmt.Fprintf(&b, "\nOurs beside the paper (Millard & Baheri, Table 1), ours / paper; for barycenter − mean ours is the paired difference above, the paper's the difference of its means (it reports no per-seed values):\n\n")
	fmt.Fprintf(&b, "| Environment | In: local | In: mean | In: barycenter | In: barycenter − mean | In: mean − local | Held-out: mean | Held-out: barycenter | Held-out: barycenter − mean |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		p, ok := paperTable1[r.GridSize]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "| %d×%d | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s |\n", r.GridSize, r.GridSize,
			r.InDist[ColLocal].format(1), p[0].format(1), r.InDist[fusion.MethodMean].format(1), p[1].format(1), r.InDist[fusion.MethodBarycenter].format(1), p[2].format(1),
			formatPaired(r.InDistPaired.get(bm)), paperDiff(p[2], p[1], 1),
			formatPaired(r.InDistPaired.get(ml)), paperDiff(p[1], p[0], 1),
			r.HeldOutS[fusion.MethodMean].format(1), p[3].format(1), r.HeldOutS[fusion.MethodBarycenter].format(1), p[4].format(1),
			formatPaired(r.HeldOutPaired.get(bm)), paperDiff(p[4], p[3], 1))
	}
	return b.Bytes()
}

// colsTable writes one row per grid size of the in-distribution columns in
// and held-out columns held of the Cols that get picks from each row, with
// the clients column when withClients.
func colsTable(b *bytes.Buffer, rows []Table1Row, withClients bool, in, held []string, get func(Table1Row) (Cols, Cols)) {
	lead := 2
	b.WriteString("| Environment |")
	if withClients {
		b.WriteString(" Clients |")
		lead++
	}
	b.WriteString(" Seeds |")
	for _, m := range in {
		fmt.Fprintf(b, " In: %s |", m)
	}
	for _, m := range held {
		fmt.Fprintf(b, " Held-out: %s |", m)
	}
	b.WriteString("\n" + strings.Repeat("|---", lead+len(in)+len(held)) + "|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %d×%d |", r.GridSize, r.GridSize)
		if withClients {
			fmt.Fprintf(b, " %d |", r.Clients)
		}
		fmt.Fprintf(b, " %d |", r.Seeds)
		inC, heldC := get(r)
		for _, m := range in {
			fmt.Fprintf(b, " %s |", inC[m].format(1))
		}
		for _, m := range held {
			fmt.Fprintf(b, " %s |", heldC[m].format(1))
		}
		b.WriteString("\n")
	}
}

// pairHeader is the header cells of the in-distribution and held-out pairs.
func pairHeader(in, held []Pair) string {
	var b strings.Builder
	for _, p := range in {
		fmt.Fprintf(&b, " In: %s |", p.Label())
	}
	for _, p := range held {
		fmt.Fprintf(&b, " Held-out: %s |", p.Label())
	}
	return b.String()
}

// pairCells is the cells of pairHeader for one row.
func pairCells(in PairedCols, inPairs []Pair, held PairedCols, heldPairs []Pair) string {
	var b strings.Builder
	for _, p := range inPairs {
		fmt.Fprintf(&b, " %s |", formatPaired(in.get(p)))
	}
	for _, p := range heldPairs {
		fmt.Fprintf(&b, " %s |", formatPaired(held.get(p)))
	}
	return b.String()
}

// Table2Markdown renders Table 2, the paired differences and, beside the
// paper's values, ours.
func (s *Study) Table2Markdown() []byte {
	var b bytes.Buffer
	rows := s.Table2()
	a := s.Config.Ablation
	in, held := s.Config.inCols(false), s.Config.heldCols(false)
	inPairs, heldPairs := pairs(in), pairs(held)
	fmt.Fprintf(&b, "# Table 2: ablation on the fraction of weak clients p (%d×%d, %d clients, %d held-out environments), success rate (%%), mean ± std over seeds\n\nEvaluation: %s.\n\n",
		a.GridSize, a.GridSize, a.NumberOfClients, heldOutCount(s.Config.ablationEnv()), s.Config.evaluationText())
	fmt.Fprintf(&b, "Per seed: success averaged over the clients' own environments (In) or the held-out ones; Local: weak and full-budget clients pooled over seeds × clients.\n\n")
	b.WriteString("| p | Weak clients | Seeds | Local: weak clients | Local: full clients | Local: full − weak (paired) |")
	for _, m := range in {
		fmt.Fprintf(&b, " In: %s |", m)
	}
	for _, m := range held {
		fmt.Fprintf(&b, " Held-out: %s |", m)
	}
	b.WriteString("\n" + strings.Repeat("|---", 6+len(in)+len(held)) + "|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %.2f | %d | %d | %s | %s | %s |", r.WeakFraction, r.WeakClients, r.Seeds,
			r.LocalWeak.format(2), r.LocalFull.format(2), formatPaired(&r.FullMinusWeak))
		for _, m := range in {
			fmt.Fprintf(&b, " %s |", r.InDist[m].format(2))
		}
		for _, m := range held {
			fmt.Fprintf(&b, " %s |", r.HeldOutS[m].format(2))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nPaired differences in percentage points over the same seeds (mean [95 %% t-interval]; * = interval excludes 0):\n\n")
	b.WriteString("| p | Seeds |" + pairHeader(inPairs, heldPairs) + "\n" + strings.Repeat("|---", 2+len(inPairs)+len(heldPairs)) + "|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %.2f | %d |%s\n", r.WeakFraction, r.Seeds, pairCells(r.InDistPaired, inPairs, r.HeldOutPaired, heldPairs))
	}
	bm := DeclaredPairs[0]
	if !slices.Contains(inPairs, bm) {
		return b.Bytes()
	}
	fmt.Fprintf(&b, "\nOurs beside the paper (Table 2, three seeds), ours / paper; for barycenter − mean ours is the paired difference above, the paper's the difference of its means:\n\n")
	fmt.Fprintf(&b, "| p | In: mean | In: barycenter | In: barycenter − mean | Held-out: mean | Held-out: barycenter | Held-out: barycenter − mean |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		p, ok := paperTable2[r.WeakFraction]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "| %.2f | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s |\n", r.WeakFraction,
			r.InDist[fusion.MethodMean].format(2), p[0].format(2), r.InDist[fusion.MethodBarycenter].format(2), p[1].format(2),
			formatPaired(r.InDistPaired.get(bm)), paperDiff(p[1], p[0], 2),
			r.HeldOutS[fusion.MethodMean].format(2), p[2].format(2), r.HeldOutS[fusion.MethodBarycenter].format(2), p[3].format(2),
			formatPaired(r.HeldOutPaired.get(bm)), paperDiff(p[3], p[2], 2))
	}
	return b.Bytes()
}

// ff formats a table value with 4 decimals, without a negative zero.
func ff(x float64) string {
	s := strconv.FormatFloat(x, 'f', 4, 64)
	if s == "-0.0000" {
		return "0.0000"
	}
	return s
}

// pairedCSVHeader names the paired-difference columns of the CSV tables
// (percentage points; empty where not defined): key, key_lo, key_hi per pair.
func pairedCSVHeader(ps []Pair) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Key(), p.Key()+"_lo", p.Key()+"_hi")
	}
	return out
}

// csv renders the paired differences of ps as the pairedCSVHeader columns.
func (pc PairedCols) csv(ps []Pair) []string {
	var out []string
	for _, pr := range ps {
		p := pc.get(pr)
		if p == nil || p.N == 0 {
			out = append(out, "", "", "")
			continue
		}
		out = append(out, ff(p.Mean), ffNaN(p.Lo), ffNaN(p.Hi))
	}
	return out
}

// Table1CSV renders Table 1 as CSV (one row per grid size and split).
func (s *Study) Table1CSV() []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	cols, ps := s.Config.inCols(true), pairs(s.Config.inCols(false))
	hdr := []string{"grid_size", "clients", "seeds", "split"}
	for _, m := range cols {
		hdr = append(hdr, m+"_mean", m+"_std", m+"_n")
	}
	_ = w.Write(append(hdr, pairedCSVHeader(ps)...))
	for _, r := range s.Table1() {
		for _, sp := range []struct {
			name string
			c    Cols
			p    PairedCols
		}{{"in_distribution", r.InDist, r.InDistPaired}, {"held_out", r.HeldOutS, r.HeldOutPaired}} {
			rec := []string{strconv.Itoa(r.GridSize), strconv.Itoa(r.Clients), strconv.Itoa(r.Seeds), sp.name}
			for _, m := range cols {
				st := sp.c[m]
				if st.N == 0 {
					rec = append(rec, "", "", "0")
					continue
				}
				rec = append(rec, ff(st.Mean), ff(st.Std), strconv.Itoa(st.N))
			}
			_ = w.Write(append(rec, sp.p.csv(ps)...))
		}
	}
	w.Flush()
	return b.Bytes()
}

// Table2CSV renders Table 2 as CSV.
func (s *Study) Table2CSV() []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	cols, ps := s.Config.inCols(false), pairs(s.Config.inCols(false))
	hdr := []string{"weak_fraction", "weak_clients", "held_out_environments", "seeds", "split"}
	for _, m := range cols {
		hdr = append(hdr, m+"_mean", m+"_std")
	}
	_ = w.Write(append(append(hdr, pairedCSVHeader(ps)...), "local_weak_mean", "local_full_mean", "local_full_minus_weak", "local_full_minus_weak_lo", "local_full_minus_weak_hi"))
	for _, r := range s.Table2() {
		for _, sp := range []struct {
			name string
			c    Cols
			p    PairedCols
		}{{"in_distribution", r.InDist, r.InDistPaired}, {"held_out", r.HeldOutS, r.HeldOutPaired}} {
			rec := []string{ff(r.WeakFraction), strconv.Itoa(r.WeakClients), strconv.Itoa(r.HeldOut), strconv.Itoa(r.Seeds), sp.name}
			for _, m := range cols {
				if st := sp.c[m]; st.N > 0 {
					rec = append(rec, ff(st.Mean), ff(st.Std))
				} else {
					rec = append(rec, "", "")
				}
			}
			rec = append(rec, sp.p.csv(ps)...)
			if d := r.FullMinusWeak; sp.name == "in_distribution" && d.N > 0 {
				rec = append(rec, ff(r.LocalWeak.Mean), ff(r.LocalFull.Mean), ff(d.Mean), ff(d.Lo), ff(d.Hi))
			} else {
				rec = append(rec, "", "", "", "", "")
			}
			_ = w.Write(rec)
		}
	}
	w.Flush()
	return b.Bytes()
}

func marshal(v any) []byte {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // only plain data types: a failure is a programmer error
	}
	return append(data, '\n')
}

// Table1JSON returns Table 1 with the per-cell raw results (θ's, per-env
// success rates, fusion diagnostics and bounds).
func (s *Study) Table1JSON() []byte {
	return marshal(struct {
		Rows  []Table1Row `json:"rows"`
		Cells [][]*Fit    `json:"cells"`
	}{s.Table1(), s.Cells})
}

// Table2JSON returns Table 2 with the raw per-seed results.
func (s *Study) Table2JSON() []byte {
	return marshal(struct {
		Rows  []Table2Row `json:"rows"`
		Cells [][]*Fit    `json:"cells"`
	}{s.Table2(), s.Ablation})
}
