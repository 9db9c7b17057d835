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
	GridSize int  `json:"grid_size"`
	Clients  int  `json:"clients"`
	HeldOut  int  `json:"held_out_environments"`
	Seeds    int  `json:"seeds"`
	InDist   Cols `json:"in_distribution"`
	HeldOutS Cols `json:"held_out"`
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
		rows = append(rows, row)
	}
	return rows
}

// Table2Row is one weak fraction of Table 2.
type Table2Row struct {
	WeakFraction float64 `json:"weak_fraction"`
	WeakClients  int     `json:"weak_clients"`
	Seeds        int     `json:"seeds"`
	InDist       Cols    `json:"in_distribution"`
	HeldOutS     Cols    `json:"held_out"`
}

// Table2 averages each ablation seed's success over clients (in-distribution)
// or held-out environments, then reports mean ± sample std over seeds in %.
func (s *Study) Table2() []Table2Row {
	var rows []Table2Row
	K := s.Config.Ablation.NumberOfClients
	for pi, p := range s.Config.Ablation.WeakFractions {
		row := Table2Row{WeakFraction: p, WeakClients: int(math.Round(p * float64(K))), Seeds: len(s.Ablation)}
		for _, m := range []Method{Mean, Barycenter, Debiased} {
			var in, out []float64
			for _, fs := range s.Ablation {
				in = append(in, stat.Mean(fs[pi].InDist[m], nil))
				out = append(out, stat.Mean(fs[pi].HeldOut[m], nil))
			}
			row.InDist.set(m, newStat(in))
			row.HeldOutS.set(m, newStat(out))
		}
		rows = append(rows, row)
	}
	return rows
}

// Paper's Table 1 (percent), for side-by-side comparison.
var paperTable1 = map[int][5]string{
	20: {"73.7 ± 14.0", "73.5 ± 14.5", "76.4 ± 13.4", "75.3 ± 23.0", "81.4 ± 19.0"},
	10: {"80.9 ± 13.9", "81.6 ± 14.2", "89.1 ± 10.7", "76.1 ± 8.0", "80.3 ± 9.9"},
	5:  {"84.2 ± 12.6", "85.1 ± 11.9", "90.5 ± 9.8", "78.4 ± 7.3", "82.6 ± 8.1"},
}

// Paper's Table 2 (percent).
var paperTable2 = map[float64][4]string{
	0:    {"81.97 ± 3.10", "81.97 ± 1.97", "86.43 ± 1.86", "88.27 ± 2.21"},
	0.25: {"84.43 ± 3.35", "86.20 ± 3.15", "84.83 ± 2.76", "85.50 ± 3.02"},
	0.5:  {"80.17 ± 7.94", "85.27 ± 2.76", "82.13 ± 0.91", "85.67 ± 2.73"},
}

// Table1Markdown renders Table 1 with the paper's values beneath.
func (s *Study) Table1Markdown() []byte {
	var b bytes.Buffer
	rows := s.Table1()
	fmt.Fprintf(&b, "# Table 1: average success rates (%%), mean ± std\n\n")
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
	fmt.Fprintf(&b, "\nPaper (Millard & Baheri, Table 1):\n\n")
	fmt.Fprintf(&b, "| Environment | In: Local | In: Mean | In: Barycenter | Held-out: Local | Held-out: Mean | Held-out: Barycenter |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		if p, ok := paperTable1[r.GridSize]; ok {
			fmt.Fprintf(&b, "| %d×%d | %s | %s | %s | – | %s | %s |\n", r.GridSize, r.GridSize, p[0], p[1], p[2], p[3], p[4])
		}
	}
	return b.Bytes()
}

// Table2Markdown renders Table 2 with the paper's values beneath.
func (s *Study) Table2Markdown() []byte {
	var b bytes.Buffer
	rows := s.Table2()
	a := s.Config.Ablation
	fmt.Fprintf(&b, "# Table 2: ablation on the fraction of weak clients p (%d×%d, %d clients), success rate (%%), mean ± std over seeds\n\n", a.GridSize, a.GridSize, a.NumberOfClients)
	fmt.Fprintf(&b, "| p | Weak clients | Seeds | In: Mean | In: Barycenter | In: Debiased | Held-out: Mean | Held-out: Barycenter | Held-out: Debiased |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %.2f | %d | %d | %s | %s | %s | %s | %s | %s |\n", r.WeakFraction, r.WeakClients, r.Seeds,
			r.InDist.Mean.format(2), r.InDist.Barycenter.format(2), r.InDist.Debiased.format(2),
			r.HeldOutS.Mean.format(2), r.HeldOutS.Barycenter.format(2), r.HeldOutS.Debiased.format(2))
	}
	fmt.Fprintf(&b, "\nPaper (Table 2, three seeds):\n\n| p | In: Mean | In: Barycenter | Held-out: Mean | Held-out: Barycenter |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		if p, ok := paperTable2[r.WeakFraction]; ok {
			fmt.Fprintf(&b, "| %.2f | %s | %s | %s | %s |\n", r.WeakFraction, p[0], p[1], p[2], p[3])
		}
	}
	return b.Bytes()
}

func ff(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }

// Table1CSV renders Table 1 as CSV (one row per grid size and split).
func (s *Study) Table1CSV() []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	hdr := []string{"grid_size", "clients", "seeds", "split"}
	for m := range NumMethods {
		hdr = append(hdr, m.String()+"_mean", m.String()+"_std", m.String()+"_n")
	}
	_ = w.Write(hdr)
	for _, r := range s.Table1() {
		for _, sp := range []struct {
			name string
			c    Cols
		}{{"in_distribution", r.InDist}, {"held_out", r.HeldOutS}} {
			rec := []string{strconv.Itoa(r.GridSize), strconv.Itoa(r.Clients), strconv.Itoa(r.Seeds), sp.name}
			for m := range NumMethods {
				st := sp.c.get(m)
				if st.N == 0 {
					rec = append(rec, "", "", "0")
					continue
				}
				rec = append(rec, ff(st.Mean), ff(st.Std), strconv.Itoa(st.N))
			}
			_ = w.Write(rec)
		}
	}
	w.Flush()
	return b.Bytes()
}

// Table2CSV renders Table 2 as CSV.
func (s *Study) Table2CSV() []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"weak_fraction", "weak_clients", "seeds", "split", "Mean_mean", "Mean_std", "Barycenter_mean", "Barycenter_std", "Debiased_mean", "Debiased_std"})
	for _, r := range s.Table2() {
		for _, sp := range []struct {
			name string
			c    Cols
		}{{"in_distribution", r.InDist}, {"held_out", r.HeldOutS}} {
			_ = w.Write([]string{ff(r.WeakFraction), strconv.Itoa(r.WeakClients), strconv.Itoa(r.Seeds), sp.name,
				ff(sp.c.Mean.Mean), ff(sp.c.Mean.Std), ff(sp.c.Barycenter.Mean), ff(sp.c.Barycenter.Std),
				ff(sp.c.Debiased.Mean), ff(sp.c.Debiased.Std)})
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
