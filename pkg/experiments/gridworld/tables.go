package gridworld

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/fedirl/fedirl/pkg/experiments/report"
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
}

// PairedCols are paired comparisons of methods over the same seeds, in
// percentage points: per seed, each method's success averaged over the
// seed's environments, then the difference of two methods per seed, its mean
// and 95 % Student-t interval over seeds (report.PairedDiff).
type PairedCols struct {
	BarycenterMinusMean report.Paired `json:"barycenter_minus_mean"`
	DebiasedMinusMean   report.Paired `json:"debiased_minus_mean"`
	// MeanMinusLocal is nil where Local is not evaluated (held-out).
	MeanMinusLocal *report.Paired `json:"mean_minus_local,omitempty"`
}

// seedMeans returns, per fit, 100 × the mean of rates(f) (one value per seed).
func seedMeans(fits []*Fit, rates func(*Fit) []float64) []float64 {
	out := make([]float64, len(fits))
	for i, f := range fits {
		out[i] = 100 * stat.Mean(rates(f), nil)
	}
	return out
}

// pairedCols compares the methods of fits (one per seed) on the in-distribution
// or held-out rates, with Mean − Local where withLocal.
func pairedCols(fits []*Fit, heldOut, withLocal bool) PairedCols {
	m := func(meth Method) []float64 {
		return seedMeans(fits, func(f *Fit) []float64 {
			if heldOut {
				return f.HeldOut[meth]
			}
			return f.InDist[meth]
		})
	}
	diff := func(a, b Method) report.Paired {
		p, err := report.PairedDiff(m(a), m(b), 0.95)
		if err != nil {
			panic(err) // same seeds on both sides and finite rates: a programmer error
		}
		return p
	}
	pc := PairedCols{BarycenterMinusMean: diff(Barycenter, Mean), DebiasedMinusMean: diff(Debiased, Mean)}
	if withLocal {
		p := diff(Mean, Local)
		pc.MeanMinusLocal = &p
	}
	return pc
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

// Cols holds one Stat per method (Local is empty for held-out).
type Cols struct {
	Local      Stat `json:"local"`
	Mean       Stat `json:"mean"`
	Barycenter Stat `json:"barycenter"`
	Debiased   Stat `json:"debiased"`
	Expert     Stat `json:"expert"`
}

func (c *Cols) set(m Method, s Stat) {
	switch m {
	case Local:
		c.Local = s
	case Mean:
		c.Mean = s
	case Barycenter:
		c.Barycenter = s
	case Debiased:
		c.Debiased = s
	case Expert:
		c.Expert = s
	}
}

func (c Cols) get(m Method) Stat {
	return [...]Stat{c.Local, c.Mean, c.Barycenter, c.Debiased, c.Expert}[m]
}

// Table1 pools success rates over seeds and clients (in-distribution) or
// seeds and held-out environments (held-out), as mean ± sample std in %.
func (s *Study) Table1() []Table1Row {
	var rows []Table1Row
	for k, e := range s.Config.Environments {
		row := Table1Row{GridSize: e.GridSize, Clients: e.NumberOfClients, HeldOut: heldOutCount(e), Seeds: len(s.Cells[k])}
		for m := range NumMethods {
			var in, out []float64
			for _, f := range s.Cells[k] {
				in = append(in, f.InDist[m]...)
				out = append(out, f.HeldOut[m]...)
			}
			row.InDist.set(m, newStat(in))
			row.HeldOutS.set(m, newStat(out))
		}
		row.InDistPaired = pairedCols(s.Cells[k], false, true)
		row.HeldOutPaired = pairedCols(s.Cells[k], true, false)
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
		row := Table2Row{WeakFraction: p, WeakClients: int(math.Round(p * float64(K))), HeldOut: heldOutCount(s.Config.ablationEnv()), Seeds: len(s.Ablation)}
		for _, m := range []Method{Local, Mean, Barycenter, Debiased} {
			var in, out []float64
			for _, fs := range s.Ablation {
				in = append(in, stat.Mean(fs[pi].InDist[m], nil))
				if m != Local {
					out = append(out, stat.Mean(fs[pi].HeldOut[m], nil))
				}
			}
			row.InDist.set(m, newStat(in))
			row.HeldOutS.set(m, newStat(out))
		}
		var weak, full, seedWeak, seedFull []float64
		for _, fs := range s.Ablation {
			f := fs[pi]
			var w, fl []float64
			for i, b := range f.Budgets {
				if b != s.Config.IRL.IRLIterations {
					w = append(w, f.InDist[Local][i])
				} else {
					fl = append(fl, f.InDist[Local][i])
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
		row.InDistPaired = pairedCols(fits, false, true)
		row.HeldOutPaired = pairedCols(fits, true, false)
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
	fmt.Fprintf(&b, "# Table 1: average success rates (%%), mean ± std\n\nEvaluation: %s.\n\n", s.Config.evaluationText())
	fmt.Fprintf(&b, "In-distribution: pooled over seeds × clients; held-out: pooled over seeds × held-out environments. ")
	fmt.Fprintf(&b, "Debiased and Expert (θ*) are extra reference columns, not in the paper.\n\n")
	fmt.Fprintf(&b, "| Environment | Clients | Seeds | In: Local | In: Mean | In: Barycenter | In: Debiased | In: Expert | Held-out: Local | Held-out: Mean | Held-out: Barycenter | Held-out: Debiased | Held-out: Expert |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d×%d | %d | %d |", r.GridSize, r.GridSize, r.Clients, r.Seeds)
		for m := range NumMethods {
			fmt.Fprintf(&b, " %s |", r.InDist.get(m).format(1))
		}
		for m := range NumMethods {
			fmt.Fprintf(&b, " %s |", r.HeldOutS.get(m).format(1))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nPaired differences in percentage points over the same seeds (per seed: mean over the seed's clients or held-out environments; mean [95 %% t-interval]; * = interval excludes 0):\n\n")
	fmt.Fprintf(&b, "| Environment | Seeds | In: Barycenter − Mean | In: Debiased − Mean | In: Mean − Local | Held-out: Barycenter − Mean | Held-out: Debiased − Mean |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d×%d | %d | %s | %s | %s | %s | %s |\n", r.GridSize, r.GridSize, r.Seeds,
			formatPaired(&r.InDistPaired.BarycenterMinusMean), formatPaired(&r.InDistPaired.DebiasedMinusMean),
			formatPaired(r.InDistPaired.MeanMinusLocal), formatPaired(&r.HeldOutPaired.BarycenterMinusMean),
			formatPaired(&r.HeldOutPaired.DebiasedMinusMean))
	}
	fmt.Fprintf(&b, "\nOurs beside the paper (Millard & Baheri, Table 1), ours / paper; for Barycenter − Mean ours is the paired difference above, the paper's the difference of its means (it reports no per-seed values):\n\n")
	fmt.Fprintf(&b, "| Environment | In: Local | In: Mean | In: Barycenter | In: Barycenter − Mean | In: Mean − Local | Held-out: Mean | Held-out: Barycenter | Held-out: Barycenter − Mean |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		p, ok := paperTable1[r.GridSize]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "| %d×%d | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s |\n", r.GridSize, r.GridSize,
			r.InDist.Local.format(1), p[0].format(1), r.InDist.Mean.format(1), p[1].format(1), r.InDist.Barycenter.format(1), p[2].format(1),
			formatPaired(&r.InDistPaired.BarycenterMinusMean), paperDiff(p[2], p[1], 1),
			formatPaired(r.InDistPaired.MeanMinusLocal), paperDiff(p[1], p[0], 1),
			r.HeldOutS.Mean.format(1), p[3].format(1), r.HeldOutS.Barycenter.format(1), p[4].format(1),
			formatPaired(&r.HeldOutPaired.BarycenterMinusMean), paperDiff(p[4], p[3], 1))
	}
	return b.Bytes()
}

// Table2Markdown renders Table 2, the paired differences and, beside the
// paper's values, ours.
func (s *Study) Table2Markdown() []byte {
	var b bytes.Buffer
	rows := s.Table2()
	a := s.Config.Ablation
	fmt.Fprintf(&b, "# Table 2: ablation on the fraction of weak clients p (%d×%d, %d clients, %d held-out environments), success rate (%%), mean ± std over seeds\n\nEvaluation: %s.\n\n",
		a.GridSize, a.GridSize, a.NumberOfClients, heldOutCount(s.Config.ablationEnv()), s.Config.evaluationText())
	fmt.Fprintf(&b, "Per seed: success averaged over the clients' own environments (In) or the held-out ones; Local: weak and full-budget clients pooled over seeds × clients.\n\n")
	fmt.Fprintf(&b, "| p | Weak clients | Seeds | Local: weak clients | Local: full clients | Local: full − weak (paired) | In: Local | In: Mean | In: Barycenter | In: Debiased | Held-out: Mean | Held-out: Barycenter | Held-out: Debiased |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %.2f | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.WeakFraction, r.WeakClients, r.Seeds,
			r.LocalWeak.format(2), r.LocalFull.format(2), formatPaired(&r.FullMinusWeak), r.InDist.Local.format(2), r.InDist.Mean.format(2), r.InDist.Barycenter.format(2), r.InDist.Debiased.format(2),
			r.HeldOutS.Mean.format(2), r.HeldOutS.Barycenter.format(2), r.HeldOutS.Debiased.format(2))
	}
	fmt.Fprintf(&b, "\nPaired differences in percentage points over the same seeds (mean [95 %% t-interval]; * = interval excludes 0):\n\n")
	fmt.Fprintf(&b, "| p | Seeds | In: Barycenter − Mean | In: Debiased − Mean | In: Mean − Local | Held-out: Barycenter − Mean | Held-out: Debiased − Mean |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %.2f | %d | %s | %s | %s | %s | %s |\n", r.WeakFraction, r.Seeds,
			formatPaired(&r.InDistPaired.BarycenterMinusMean), formatPaired(&r.InDistPaired.DebiasedMinusMean),
			formatPaired(r.InDistPaired.MeanMinusLocal),
			formatPaired(&r.HeldOutPaired.BarycenterMinusMean), formatPaired(&r.HeldOutPaired.DebiasedMinusMean))
	}
	fmt.Fprintf(&b, "\nOurs beside the paper (Table 2, three seeds), ours / paper; for Barycenter − Mean ours is the paired difference above, the paper's the difference of its means:\n\n")
	fmt.Fprintf(&b, "| p | In: Mean | In: Barycenter | In: Barycenter − Mean | Held-out: Mean | Held-out: Barycenter | Held-out: Barycenter − Mean |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		p, ok := paperTable2[r.WeakFraction]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "| %.2f | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s |\n", r.WeakFraction,
			r.InDist.Mean.format(2), p[0].format(2), r.InDist.Barycenter.format(2), p[1].format(2),
			formatPaired(&r.InDistPaired.BarycenterMinusMean), paperDiff(p[1], p[0], 2),
			r.HeldOutS.Mean.format(2), p[2].format(2), r.HeldOutS.Barycenter.format(2), p[3].format(2),
			formatPaired(&r.HeldOutPaired.BarycenterMinusMean), paperDiff(p[3], p[2], 2))
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
// (percentage points; empty where not defined).
var pairedCSVHeader = []string{
	"barycenter_minus_mean", "barycenter_minus_mean_lo", "barycenter_minus_mean_hi",
	"debiased_minus_mean", "debiased_minus_mean_lo", "debiased_minus_mean_hi",
	"mean_minus_local", "mean_minus_local_lo", "mean_minus_local_hi",
}

// csv renders the paired differences as the pairedCSVHeader columns.
func (pc PairedCols) csv() []string {
	var out []string
	for _, p := range []*report.Paired{&pc.BarycenterMinusMean, &pc.DebiasedMinusMean, pc.MeanMinusLocal} {
		if p == nil || p.N == 0 {
			out = append(out, "", "", "")
			continue
		}
		cell := func(x float64) string {
			if math.IsNaN(x) {
				return ""
			}
			return ff(x)
		}
		out = append(out, ff(p.Mean), cell(p.Lo), cell(p.Hi))
	}
	return out
}

// Table1CSV renders Table 1 as CSV (one row per grid size and split).
func (s *Study) Table1CSV() []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	hdr := []string{"grid_size", "clients", "seeds", "split"}
	for m := range NumMethods {
		hdr = append(hdr, m.String()+"_mean", m.String()+"_std", m.String()+"_n")
	}
	_ = w.Write(append(hdr, pairedCSVHeader...))
	for _, r := range s.Table1() {
		for _, sp := range []struct {
			name string
			c    Cols
			p    PairedCols
		}{{"in_distribution", r.InDist, r.InDistPaired}, {"held_out", r.HeldOutS, r.HeldOutPaired}} {
			rec := []string{strconv.Itoa(r.GridSize), strconv.Itoa(r.Clients), strconv.Itoa(r.Seeds), sp.name}
			for m := range NumMethods {
				st := sp.c.get(m)
				if st.N == 0 {
					rec = append(rec, "", "", "0")
					continue
				}
				rec = append(rec, ff(st.Mean), ff(st.Std), strconv.Itoa(st.N))
			}
			_ = w.Write(append(rec, sp.p.csv()...))
		}
	}
	w.Flush()
	return b.Bytes()
}

// Table2CSV renders Table 2 as CSV.
func (s *Study) Table2CSV() []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(append([]string{"weak_fraction", "weak_clients", "held_out_environments", "seeds", "split",
		"Local_mean", "Local_std", "Mean_mean", "Mean_std", "Barycenter_mean", "Barycenter_std", "Debiased_mean", "Debiased_std"},
		append(pairedCSVHeader, "local_weak_mean", "local_full_mean", "local_full_minus_weak", "local_full_minus_weak_lo", "local_full_minus_weak_hi")...))
	for _, r := range s.Table2() {
		for _, sp := range []struct {
			name string
			c    Cols
			p    PairedCols
		}{{"in_distribution", r.InDist, r.InDistPaired}, {"held_out", r.HeldOutS, r.HeldOutPaired}} {
			rec := []string{ff(r.WeakFraction), strconv.Itoa(r.WeakClients), strconv.Itoa(r.HeldOut), strconv.Itoa(r.Seeds), sp.name}
			for _, m := range []Method{Local, Mean, Barycenter, Debiased} {
				if st := sp.c.get(m); st.N > 0 {
					rec = append(rec, ff(st.Mean), ff(st.Std))
				} else {
					rec = append(rec, "", "")
				}
			}
			rec = append(rec, sp.p.csv()...)
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
