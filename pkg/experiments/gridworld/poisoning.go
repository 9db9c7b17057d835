package gridworld

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot/vg/draw"
	"gopkg.in/yaml.v3"

	"github.com/fedirl/fedirl/pkg/experiments/report"
	"github.com/fedirl/fedirl/pkg/fusion"
)

// DefaultPoisoning is the pre-declared poisoning benchmark of `fedirl sweep
// poisoning` (poisoning.yaml in this directory, committed before its first
// run).
//
//go:embed poisoning.yaml
var DefaultPoisoning []byte

// Attack kinds (Attack.Kind).
const (
	// AttackScale: each attacker learns its own θ honestly on its own
	// environment and sends scale·θ (a negative scale flips the sign).
	AttackScale = "scale"
	// AttackFlipMean: each attacker sends −scale · (mean of the honest
	// clients' θ), an omniscient sign-flip attack.
	AttackFlipMean = "flip-mean"
	// AttackSpike: each attacker learns its own θ honestly, then puts
	// scale times that reward's total mass Σ_x |Φθ(x)| on the probe on one
	// cell (the probe cell farthest from the probe's goal, spread evenly
	// over the cell's actions) and sends the θ whose reward best fits that
	// spike: the least-squares solution on the probe's Φ (attack.SpikeTheta). The
	// grid world's features are two distances, not one-hot, so what reaches
	// the fusion is the spike's projection onto span(Φ), not the spike.
	AttackSpike = "spike"
	// AttackGaussian: each attacker sends θ ~ N(0, I), drawn from its own
	// seeded stream, scaled to scale times the norm of the honest clients'
	// mean θ (attack.GaussianTheta).
	AttackGaussian = "gaussian"
)

// attackKinds lists the attack kinds in the order errors name them.
var attackKinds = []string{AttackScale, AttackFlipMean, AttackSpike, AttackGaussian}

// Attack is one declared poisoning regime: Clients attackers join the K
// honest clients of every cell and send what Kind and Scale say.
type Attack struct {
	Name      string  `yaml:"name" json:"name"`
	Rationale string  `yaml:"rationale" json:"rationale"`
	Kind      string  `yaml:"kind" json:"kind"`
	Scale     float64 `yaml:"scale" json:"scale"`
	Clients   int     `yaml:"clients" json:"clients"`
}

// Poisoning is a poisoning benchmark: a study config (the grid-world study's
// keys, applied over the defaults; its first environments entry gives the
// grid size and the K honest clients) and the attacks, each compared with
// the honest-only federation of the same clients, method by method.
type Poisoning struct {
	// Tolerance is the declared criterion in percentage points: a method
	// "holds" under an attack when its mean paired success difference to its
	// honest-only fusion is within ±Tolerance, in distribution and held out.
	Tolerance float64  `yaml:"tolerance" json:"tolerance"`
	Study     Config   `yaml:"-" json:"study"`
	Attacks   []Attack `yaml:"attacks" json:"attacks"`
}

// LoadPoisoning parses a poisoning file (keys `study`, config overrides over
// base; `tolerance`; `attacks`) named src in errors.
func LoadPoisoning(data []byte, src string, base Config) (Poisoning, error) {
	var doc struct {
		Study     yaml.Node `yaml:"study"`
		Tolerance float64   `yaml:"tolerance"`
		Attacks   []Attack  `yaml:"attacks"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return Poisoning{}, fmt.Errorf("poisoning %s: %w", src, err)
	}
	c, err := ApplyRegime(Regime{Name: "study", Overrides: doc.Study}, base)
	if err != nil {
		return Poisoning{}, fmt.Errorf("poisoning %s: %w", src, err)
	}
	p := Poisoning{Tolerance: doc.Tolerance, Study: c.Resolved(), Attacks: doc.Attacks}
	if !(p.Tolerance > 0) || math.IsInf(p.Tolerance, 0) {
		return Poisoning{}, fmt.Errorf("poisoning %s: tolerance = %v, want a finite number of percentage points > 0", src, p.Tolerance)
	}
	if len(c.Environments) == 0 {
		return Poisoning{}, fmt.Errorf("poisoning %s: study.environments is empty", src)
	}
	if len(p.Attacks) == 0 {
		return Poisoning{}, fmt.Errorf("poisoning %s: no attacks", src)
	}
	seen := map[string]bool{}
	for i, a := range p.Attacks {
		switch {
		case !report.ValidName(a.Name) || seen[a.Name]:
			return Poisoning{}, fmt.Errorf("poisoning %s: attacks[%d].name = %q: want a unique lower-case name", src, i, a.Name)
		case strings.TrimSpace(a.Rationale) == "":
			return Poisoning{}, fmt.Errorf("poisoning %s: attack %q has no rationale", src, a.Name)
		case !slices.Contains(attackKinds, a.Kind):
			return Poisoning{}, fmt.Errorf("poisoning %s: attacks[%d].kind = %q, want one of %s", src, i, a.Kind, strings.Join(attackKinds, ", "))
		case a.Scale == 0 || math.IsNaN(a.Scale) || math.IsInf(a.Scale, 0):
			return Poisoning{}, fmt.Errorf("poisoning %s: attacks[%d].scale = %v, want a finite non-zero number", src, i, a.Scale)
		case (a.Kind == AttackSpike || a.Kind == AttackGaussian) && a.Scale < 0:
			return Poisoning{}, fmt.Errorf("poisoning %s: attacks[%d].scale = %v: a %s attack's scale is a multiple of a mass or norm, want > 0", src, i, a.Scale, a.Kind)
		case a.Clients < 1:
			return Poisoning{}, fmt.Errorf("poisoning %s: attacks[%d].clients = %d, want ≥ 1", src, i, a.Clients)
		}
		seen[a.Name] = true
	}
	return p, nil
}

// PoisoningRow compares one method under one attack with the same method's
// honest-only fusion of the same honest clients (success in %, per seed the
// mean over the K honest clients' environments or the held-out ones; paired
// over seeds).
type PoisoningRow struct {
	Attack string `json:"attack"`
	Method string `json:"method"`
	Seeds  int    `json:"seeds"`
	// HonestIn and AttackedIn are the success in distribution, mean ± std
	// over seeds; DiffIn is attacked − honest-only, paired over seeds.
	HonestIn   Stat          `json:"honest_in"`
	AttackedIn Stat          `json:"attacked_in"`
	DiffIn     report.Paired `json:"attacked_minus_honest_in"`
	// The same on the held-out environments.
	HonestHeld   Stat          `json:"honest_held_out"`
	AttackedHeld Stat          `json:"attacked_held_out"`
	DiffHeld     report.Paired `json:"attacked_minus_honest_held_out"`
	// Holds is |DiffIn.Mean| ≤ tolerance and |DiffHeld.Mean| ≤ tolerance.
	Holds bool `json:"holds"`
	// AttackerFlagged is the fraction of seeds in which the attackers have
	// the largest outlier scores of the attacked fusion.
	AttackerFlagged float64 `json:"attackers_flagged"`
}

// PoisoningResult is a benchmark's outcome: the resolved benchmark and its
// rows (attack-major, methods in fusion_methods order).
type PoisoningResult struct {
	Poisoning Poisoning      `json:"poisoning"`
	Rows      []PoisoningRow `json:"rows"`
}

// RunPoisoning runs the benchmark: for every seed, the K honest clients of
// the study's first grid size learn once; the honest-only federation and,
// per attack, the federation with the attackers appended (clients K, K+1, …,
// each with its own environment and demonstrations, learning like the
// others before it attacks) fuse with every method; each fused θ is
// evaluated exactly on the honest clients' environments and the held-out
// ones. prog, if not nil, counts seeds.
func RunPoisoning(ctx context.Context, p Poisoning, prog Progress) (*PoisoningResult, error) {
	c := p.Study
	e := c.Environments[0]
	methods := c.methods()
	type cell struct{ honest, attacked []*Fit }
	cells := make([]cell, c.NumberOfSeeds)
	for s := range c.NumberOfSeeds {
		seed := c.Seed + uint64(s)
		st, err := c.buildSetup(e, seed)
		if err != nil {
			return nil, err
		}
		honest := c.studyClients(st)
		f := &Fit{GridSize: e.GridSize, Seed: seed}
		if err := c.federate(ctx, fmt.Sprintf("poison-s%d-honest", seed), f, st, honest, purposePrivacy); err != nil {
			return nil, fmt.Errorf("seed %d honest-only: %w", seed, err)
		}
		c.evaluate(f, st, methods)
		cells[s].honest = []*Fit{f}
		for _, a := range p.Attacks {
			fa, err := c.attacked(ctx, a, e, seed, st, honest, f.Local)
			if err != nil {
				return nil, fmt.Errorf("seed %d attack %s: %w", seed, a.Name, err)
			}
			cells[s].attacked = append(cells[s].attacked, fa)
		}
		if prog != nil {
			prog.Add(1)
		}
	}
	res := &PoisoningResult{Poisoning: p}
	for ai, a := range p.Attacks {
		for _, m := range methods {
			row := PoisoningRow{Attack: a.Name, Method: m, Seeds: len(cells)}
			var hi, ai2, hh, ah []float64
			flagged := 0
			for _, cl := range cells {
				h, at := cl.honest[0], cl.attacked[ai]
				hi, ai2 = append(hi, 100*stat.Mean(h.InDist[m], nil)), append(ai2, 100*stat.Mean(at.InDist[m], nil))
				hh, ah = append(hh, 100*stat.Mean(h.HeldOut[m], nil)), append(ah, 100*stat.Mean(at.HeldOut[m], nil))
				if attackersFlagged(at.OutlierScores[m], len(h.Local)) {
					flagged++
				}
			}
			row.HonestIn, row.AttackedIn = Stat(report.Summarize(hi)), Stat(report.Summarize(ai2))
			row.HonestHeld, row.AttackedHeld = Stat(report.Summarize(hh)), Stat(report.Summarize(ah))
			var err error
			if row.DiffIn, err = report.PairedDiff(ai2, hi, 0.95); err != nil {
				return nil, err
			}
			if row.DiffHeld, err = report.PairedDiff(ah, hh, 0.95); err != nil {
				return nil, err
			}
			row.Holds = math.Abs(row.DiffIn.Mean) <= p.Tolerance && math.Abs(row.DiffHeld.Mean) <= p.Tolerance
			row.AttackerFlagged = float64(flagged) / float64(len(cells))
			res.Rows = append(res.Rows, row)
		}
	}
	return res, nil
}

// attackersFlagged reports whether the clients from index k on (the
// attackers) have larger outlier scores than every honest client.
func attackersFlagged(scores []float64, k int) bool {
	if len(scores) <= k {
		return false
	}
	return slices.Min(scores[k:]) > slices.Max(scores[:k])
}

// attacked runs one attack on one seed's cell: the honest clients (already
// learned, their θ in honestTheta) plus a.Clients attackers, every method
// fused, evaluated on the honest environments only.
func (c Config) attacked(ctx context.Context, a Attack, e EnvConfig, seed uint64, st *setup, honest []*studyClient, honestTheta [][]float64) (*Fit, error) {
	fam := c.family(e)
	k := len(st.clients)
	all := *st
	all.clients = slices.Clone(st.clients)
	all.demos = slices.Clone(st.demos)
	all.demoSteps = slices.Clone(st.demoSteps)
	clients := slices.Clone(honest)
	meanTheta := make([]float64, len(c.Expert.TrueReward))
	for _, th := range honestTheta {
		for j, v := range th {
			meanTheta[j] += v / float64(len(honestTheta))
		}
	}
	if a.Kind == AttackSpike {
		n, _ := st.probe.Phi.Dims()
		if _, err := fusion.BackProject(st.probe.Phi, make([]float64, n)); err != nil {
			return nil, fmt.Errorf("spike attack on the probe's features: %w", err)
		}
	}
	for j := range a.Clients {
		spec, err := fam.Client(seed, k+j)
		if err != nil {
			return nil, err
		}
		env, err := NewEnv(spec, c.Expert.DiscountFactor)
		if err != nil {
			return nil, err
		}
		pol := env.GreedyPolicy(c.Expert.TrueReward)
		d, n := env.Demonstrations(stream(seed, e.GridSize, purposeDemo, k+j), pol, c.Expert.EpisodesPerClient)
		all.clients, all.demos, all.demoSteps = append(all.clients, env), append(all.demos, d), append(all.demoSteps, n)
		cl := &studyClient{env: env, demos: d, cfg: c.IRL, budget: c.IRL.IRLIterations, demoSteps: n}
		cl.send = attackSend(a, meanTheta, st.probe.Phi, spikeCell(st.probeSpec), stream(seed, e.GridSize, purposeAttack, k+j))
		clients = append(clients, cl)
	}
	f := &Fit{GridSize: e.GridSize, Seed: seed}
	if err := c.federate(ctx, fmt.Sprintf("poison-s%d-%s", seed, a.Name), f, &all, clients, purposePrivacy); err != nil {
		return nil, err
	}
	f.Local = f.Local[:k] // evaluate the honest clients only
	c.evaluate(f, st, c.methods())
	return f, nil
}

// PoisoningMarkdown is poisoning.md: one table per attack.
func PoisoningMarkdown(r *PoisoningResult) []byte {
	var b bytes.Buffer
	p := r.Poisoning
	e := p.Study.Environments[0]
	fmt.Fprintf(&b, "# Poisoning benchmark: %d×%d grid world, K = %d honest clients, %d seeds\n\n", e.GridSize, e.GridSize, e.NumberOfClients, p.Study.NumberOfSeeds)
	fmt.Fprintf(&b, "Evaluation: %s. Success (%%) per seed averaged over the honest clients' environments (In) or the held-out ones; ", p.Study.evaluationText())
	fmt.Fprintf(&b, "attacked − honest-only: the same method with and without the attackers, paired over seeds, mean [95 %% t-interval] (* = excludes 0). ")
	fmt.Fprintf(&b, "Holds: both mean differences within ±%g points (declared before the run). Flagged: fraction of seeds in which the attackers have the largest outlier scores (the server's: robust z-score of the reward on the probe against the median client, fusion.OutlierScores).\n", p.Tolerance)
	for _, a := range p.Attacks {
		fmt.Fprintf(&b, "\n## %s (%d attacker%s, kind %s, scale %g)\n\n%s\n\n", a.Name, a.Clients, map[bool]string{true: "s", false: ""}[a.Clients > 1], a.Kind, a.Scale, a.Rationale)
		b.WriteString("| Method | In: honest-only | In: attacked | In: attacked − honest-only | Held-out: honest-only | Held-out: attacked | Held-out: attacked − honest-only | Holds | Flagged |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, row := range r.Rows {
			if row.Attack != a.Name {
				continue
			}
			holds := "no"
			if row.Holds {
				holds = "yes"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %.0f %% |\n", row.Method,
				row.HonestIn.format(2), row.AttackedIn.format(2), formatPaired(&row.DiffIn),
				row.HonestHeld.format(2), row.AttackedHeld.format(2), formatPaired(&row.DiffHeld), holds, 100*row.AttackerFlagged)
		}
	}
	b.WriteString(breakdownMarkdown(r))
	return b.Bytes()
}

// BreakdownTolerance is the margin, in percentage points, of the breakdown
// table: the largest f a method survives is the largest number of attackers
// (with every smaller declared f also survived) under which both its mean
// paired differences to honest-only stay within ±5 points (issue 33's
// definition).
const BreakdownTolerance = 5.0

// breakdownMarkdown is the breakdown table of r: per attack family (kind and
// scale) declared with several f, and per method, the largest f survived.
func breakdownMarkdown(r *PoisoningResult) string {
	type family struct {
		kind  string
		scale float64
	}
	var fams []family
	fs := map[family][]Attack{}
	for _, a := range r.Poisoning.Attacks {
		k := family{a.Kind, a.Scale}
		if _, ok := fs[k]; !ok {
			fams = append(fams, k)
		}
		fs[k] = append(fs[k], a)
	}
	fams = slices.DeleteFunc(fams, func(k family) bool { return len(fs[k]) < 2 })
	if len(fams) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Breakdown\n\nLargest number of attackers f (of the declared ones, every smaller declared f also survived) under which a method stays within ±%g points of its honest-only fusion, in distribution and held out (0: not even the smallest).\n\n| Method |", BreakdownTolerance)
	for _, k := range fams {
		var ns []string
		for _, a := range fs[k] {
			ns = append(ns, fmt.Sprint(a.Clients))
		}
		fmt.Fprintf(&b, " %s ×%g (f = %s) |", k.kind, k.scale, strings.Join(ns, ", "))
	}
	b.WriteString("\n" + strings.Repeat("|---", 1+len(fams)) + "|\n")
	for _, m := range r.Poisoning.Study.methods() {
		fmt.Fprintf(&b, "| %s |", m)
		for _, k := range fams {
			as := slices.Clone(fs[k])
			slices.SortFunc(as, func(x, y Attack) int { return x.Clients - y.Clients })
			best := 0
			for _, a := range as {
				i := slices.IndexFunc(r.Rows, func(row PoisoningRow) bool { return row.Attack == a.Name && row.Method == m })
				if i < 0 || math.Abs(r.Rows[i].DiffIn.Mean) > BreakdownTolerance || math.Abs(r.Rows[i].DiffHeld.Mean) > BreakdownTolerance {
					break
				}
				best = a.Clients
			}
			fmt.Fprintf(&b, " %d |", best)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// PoisoningCSV is poisoning.csv: one line per (attack, method).
func PoisoningCSV(r *PoisoningResult) []byte {
	var b bytes.Buffer
	b.WriteString("attack,method,seeds,honest_in,honest_in_std,attacked_in,attacked_in_std,diff_in,diff_in_lo,diff_in_hi,honest_held_out,attacked_held_out,diff_held_out,diff_held_out_lo,diff_held_out_hi,holds,attackers_flagged\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%t,%s\n", row.Attack, row.Method, row.Seeds,
			ff(row.HonestIn.Mean), ff(row.HonestIn.Std), ff(row.AttackedIn.Mean), ff(row.AttackedIn.Std),
			ff(row.DiffIn.Mean), ffNaN(row.DiffIn.Lo), ffNaN(row.DiffIn.Hi),
			ff(row.HonestHeld.Mean), ff(row.AttackedHeld.Mean), ff(row.DiffHeld.Mean), ffNaN(row.DiffHeld.Lo), ffNaN(row.DiffHeld.Hi),
			row.Holds, ff(row.AttackerFlagged))
	}
	return b.Bytes()
}

// PoisoningForestPNG is forest.png: one panel per attack, one row per
// method, the paired attacked − honest-only difference in distribution and
// held out.
func PoisoningForestPNG(r *PoisoningResult) ([]byte, error) {
	var panels []report.ForestPanel
	in := columnStyle{color.RGBA{31, 119, 180, 255}, draw.CircleGlyph{}}
	held := columnStyle{color.RGBA{255, 127, 14, 255}, draw.TriangleGlyph{}}
	for _, a := range r.Poisoning.Attacks {
		var rows []string
		var di, dh []report.Paired
		for _, row := range r.Rows {
			if row.Attack == a.Name {
				rows, di, dh = append(rows, row.Method), append(di, row.DiffIn), append(dh, row.DiffHeld)
			}
		}
		panels = append(panels, report.ForestPanel{Title: a.Name, Rows: rows, Series: []report.ForestSeries{
			{Name: "in distribution", Color: in.Color, Shape: in.Shape, Values: di},
			{Name: "held out", Color: held.Color, Shape: held.Shape, Values: dh},
		}})
	}
	if len(panels) == 0 {
		return nil, errors.New("poisoning forest plot: no attacks")
	}
	return report.ForestPNG("Poisoning: attacked − honest-only success of each method, mean and 95 % t-interval over seeds (* interval excludes 0)",
		panels, min(3, len(panels)), 420, 70+24*float64(len(panels[0].Rows)))
}

// WritePoisoning writes poisoning.yaml (the benchmark as read), poisoning.md,
// poisoning.csv, poisoning.json and forest.png into dir.
func WritePoisoning(dir string, file []byte, r *PoisoningResult) error {
	png, err := PoisoningForestPNG(r)
	if err != nil {
		return err
	}
	js, err := report.JSON(r)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"poisoning.yaml", file}, {"poisoning.md", PoisoningMarkdown(r)}, {"poisoning.csv", PoisoningCSV(r)}, {"poisoning.json", js}, {"forest.png", png}} {
		if err := report.WriteFile(filepath.Join(dir, f.name), f.data); err != nil {
			return err
		}
	}
	return nil
}
