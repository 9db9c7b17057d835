package control

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fedirl/fedirl/pkg/experiments/report"
)

// fixed formats x with d decimals, "–" for NaN, and without a negative zero
// (values that round to 0 print as 0).
func fixed(x float64, d int) string {
	if math.IsNaN(x) {
		return "–"
	}
	if math.Abs(x) < 0.5*math.Pow(10, -float64(d)) {
		x = 0
	}
	return strconv.FormatFloat(x, 'f', d, 64)
}

func fmtNum(x float64) string { return fixed(x, 1) }
func fmt2(x float64) string   { return fixed(x, 2) }
func fmt3(x float64) string   { return fixed(x, 3) }

func fmtPtr(x *float64) string {
	if x == nil {
		return "n/a"
	}
	return fmt2(*x)
}

func fmtG(x *float64) string {
	if x == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*x, 'g', 3, 64)
}

// Markdown renders the summary tables: the ladder first.
func (s *Summary) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Control study (protocol: %s)\n\n", s.Protocol)
	b.WriteString("## Validation ladder (per environment and lattice, before any fusion verdict)\n\n")
	b.WriteString("(a) true-reward lattice planner in the real simulator, (b) PPO on the true reward projected onto the features, (c) local IRL fit (reported, not judged); returns normalized as (R − R_random)/(R_anchor − R_random). A lattice is valid when (a) and (b) pass their thresholds (config key ladder).\n\n")
	for _, v := range s.Validation {
		if v.Lattice == LatticePoints {
			b.WriteString("On a point probe (lattice points: steps of a reference policy's rollouts in the nominal simulator) rung (a) does not apply (n/a: no lattice model to plan on) and validity is judged on (b), whose projection is of the client's true step reward at the probe's points; the fits are sample-based (gap ± its SE) and the EPIC columns below are sample-based estimates (SampleFidelity).\n\n")
			break
		}
	}
	b.WriteString("| env | lattice | (a) planner, normalized | (b) projected, normalized | projection R² | (c) feature gap | bias μ_D − μ_π (θ = 0 → final) | fits converged | valid |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, v := range s.Validation {
		valid := "yes"
		if !v.Valid {
			valid = "**no**: " + strings.Join(v.Reasons, "; ")
		}
		gap := fmtG(v.FeatureGap)
		if v.FeatureGapSE != nil { // sample-based fits: the gap with its standard error
			gap += " ± " + fmtG(v.FeatureGapSE) + " (sample)"
		}
		planner := fmtPtr(v.PlannerTrueNormalized)
		if len(v.NotApplicable) > 0 {
			planner = "n/a"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s → %s | %d/%d | %s |\n", v.Env, v.Lattice, planner,
			fmtPtr(v.ProjectedTrueNormalized), fmtPtr(v.ProjectionR2), gap, fmtG(v.BiasGap0), fmtG(v.BiasGap), v.FitsConverged, v.Fits, valid)
	}
	s.writeVerdicts(&b)
	b.WriteString("\n## PPO on each reward (mean ± std over seeds; per seed the mean over clients)\n\n")
	b.WriteString("Normalized return: (R − R_random)/(R_anchor − R_random) per client and seed, R_anchor the config's normalization_anchor (best: the better of the client's expert and PPO on the true reward). EPIC to the true lattice reward under three coverages (irl.Coverage): model (states uniform over the cells, the model's transitions), uniform (evaluating-rewards' default: uniform over all (s, a, s′)), demonstrations (the state visits of the client's expert demonstrations, held-out clients' experts included); – where undefined.\n\n")
	b.WriteString("| env | lattice | pairs | method | clients | normalized return | EPIC model | EPIC uniform | EPIC demonstrations | final true return | seeds |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range s.Rows {
		pairs := "–"
		if r.Pairs > 0 {
			pairs = fmt.Sprint(r.Pairs)
		}
		ep := func(cov string) string {
			if e, ok := r.EPICToTrue[cov]; ok {
				return fmt3(e.Mean) + " ± " + fmt3(e.Std)
			}
			return "–"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s ± %s | %s | %s | %s | %s ± %s | %d |\n", r.Env, r.Lattice, pairs, r.Method, r.Group,
			fmt2(r.NormalizedReturn.Mean), fmt2(r.NormalizedReturn.Std), ep(EPICCoverages[MetricEPICModel]), ep(EPICCoverages[MetricEPICUniform]), ep(EPICCoverages[MetricEPICDemos]),
			fmtNum(r.Final.Mean), fmtNum(r.Final.Std), r.Final.N)
	}
	b.WriteString("\n## Paired differences across seeds (95% t-interval)\n\n")
	b.WriteString("**Bold**: the 95 % interval excludes 0. †: the Bonferroni-corrected interval (declared pairs only; level 1 − 0.05/m, m the summary's comparisons of those pairs in the metric) excludes 0.\n\n")
	b.WriteString("| env | lattice | clients | metric | difference | mean | 95% CI | seeds |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range s.Comparisons {
		f := metricFormat(c.Metric)
		ci := fmt.Sprintf("[%s, %s]", f(c.Diff.Lo), f(c.Diff.Hi))
		if c.Diff.Excludes0() {
			ci = "**" + ci + "**"
		}
		if c.Bonferroni != nil && c.Bonferroni.Excludes0() {
			ci += " †"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s − %s | %s | %s | %d |\n", c.Env, c.Lattice, c.Group, c.Metric, c.A, c.B, f(c.Diff.Mean), ci, c.Diff.N)
	}
	s.writeClientSections(&b)
	b.WriteString("\n## Experts (mode policy, 20 episodes), random policy, demonstrations and the normalization anchor\n\n| env | seed | client | held out | expert return | true-reward PPO return | anchor | random return | demonstration mean return |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, e := range s.Experts {
		demo, tr := "–", "–"
		if e.DemoReturn != nil {
			demo = fmtNum(*e.DemoReturn)
		}
		if e.TrueReturn != nil {
			tr = fmtNum(*e.TrueReturn)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %v | %s | %s | %s | %s | %s |\n", e.Env, e.Seed, e.Client, e.HeldOut, fmtNum(e.EvalReturn), tr, fmtNum(e.AnchorReturn), fmtNum(e.RandomReturn), demo)
	}
	b.WriteString("\n## Local MaxEnt IRL convergence\n\n(log-likelihood in reward units: θᵀμ_D − E V_θ(s₀), see package irl)\n\n")
	lat, smp := splitIRL(s.IRL)
	if n := unconverged(lat); n > 0 {
		fmt.Fprintf(&b, "**Warning: %d of %d local fits did not converge** (‖∇‖ > irl.grad_tol; irl_diagnostics.csv says why).\n\n", n, len(lat))
	}
	b.WriteString("| env | lattice | seed | client | horizon | iterations | converged | ‖∇‖ at θ=0 | final ‖∇‖ | feature gap | bias gap θ=0 → final | log-lik θ=0 | final log-lik |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range lat {
		h := "∞"
		if f.Horizon > 0 {
			h = fmt.Sprint(f.Horizon)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %d | %v | %.3g | %.3g | %.3g | %.3g → %.3g | %.4g | %.4g |\n", f.Env, f.Lattice, f.Seed, f.Client, h,
			f.Iterations, f.Converged, f.GradNorm0, f.GradNorm, f.FeatureGap, f.BiasGap0, f.BiasGap, f.LogLik0, f.LogLik)
	}
	if len(smp) > 0 {
		b.WriteString("\n## Sample-based local IRL convergence (env.<id>.local_irl: sample)\n\n(converged: ‖μ_D − μ̂_π‖ ≤ z·SE of μ̂_π, z = sample_irl.tolerance; sample_irl_diagnostics.csv has every iteration)\n\n")
		if n := unconverged(smp); n > 0 {
			fmt.Fprintf(&b, "**Warning: %d of %d sample-based fits did not converge** (iteration cap reached).\n\n", n, len(smp))
		}
		b.WriteString("| env | lattice | seed | client | iterations | converged | ‖μ_D − μ̂_π‖ | SE | z | relative gap | PPO steps |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, f := range smp {
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %v | %.3g | %.3g | %g | %.3g | %d |\n", f.Env, f.Lattice, f.Seed, f.Client,
				f.Iterations, f.Converged, f.Sample.Gap, f.Sample.GapSE, f.Sample.Tolerance, f.FeatureGap, f.Sample.EnvSteps)
		}
	}
	return b.String()
}

// splitIRL separates the lattice fits from the sample-based ones (those
// with their diagnostics), each in order.
func splitIRL(fs []IRLFile) (lattice, sample []IRLFile) {
	for _, f := range fs {
		if f.learner() == LocalIRLSample && f.Sample != nil {
			sample = append(sample, f)
		} else {
			lattice = append(lattice, f)
		}
	}
	return lattice, sample
}

// sampleIRLCSV is sample_irl_diagnostics.csv: one line per iteration of
// every sample-based fit.
func sampleIRLCSV(fs []IRLFile) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"env", "lattice", "seed", "client", "iterations", "converged", "gap", "gap_se", "tolerance", "demo_se", "feature_gap",
		"env_steps", "eval_steps", "iteration", "iteration_gap", "iteration_gap_se", "stop_reason"})
	for _, f := range fs {
		for i := range f.Sample.GapHistory {
			w.Write([]string{f.Env, f.Lattice, fmt.Sprint(f.Seed), fmt.Sprint(f.Client), fmt.Sprint(f.Iterations), fmt.Sprint(f.Converged),
				num(f.Sample.Gap), num(f.Sample.GapSE), num(f.Sample.Tolerance), num(f.Sample.DemoSE), num(f.FeatureGap),
				fmt.Sprint(f.Sample.EnvSteps), fmt.Sprint(f.Sample.EvalSteps), fmt.Sprint(i + 1), num(f.Sample.GapHistory[i]),
				num(f.Sample.GapSEHistory[i]), f.StopReason})
		}
	}
	w.Flush()
	return buf.Bytes()
}

// CSV renders the summary as one long table with fixed columns: a "row"
// line per method and metric (mean, std, n over seeds) and a "difference"
// line per comparison (a − b: mean, 95 % interval lo/hi, Bonferroni-level
// interval where declared, n seeds); a column a line kind does not use is
// empty.
func (s *Summary) CSV() []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"kind", "env", "lattice", "pairs", "clients", "metric", "method", "a", "b", "mean", "std", "ci95_lo", "ci95_hi",
		"bonferroni_lo", "bonferroni_hi", "n"})
	for _, r := range s.Rows {
		row := func(metric string, v report.Summary) {
			w.Write([]string{"row", r.Env, r.Lattice, fmt.Sprint(r.Pairs), r.Group, metric, r.Method, "", "", num(v.Mean), num(v.Std), "", "", "", "", fmt.Sprint(v.N)})
		}
		row(MetricFinalReturn, r.Final)
		row(MetricNormalizedReturn, r.NormalizedReturn)
		for _, met := range []string{MetricEPICModel, MetricEPICUniform, MetricEPICDemos} {
			if e, ok := r.EPICToTrue[EPICCoverages[met]]; ok {
				row(met, e)
			}
		}
	}
	for _, c := range s.Comparisons {
		blo, bhi := "", ""
		if c.Bonferroni != nil {
			blo, bhi = num(c.Bonferroni.Lo), num(c.Bonferroni.Hi)
		}
		w.Write([]string{"difference", c.Env, c.Lattice, "", c.Group, c.Metric, "", c.A, c.B, num(c.Diff.Mean), "", num(c.Diff.Lo), num(c.Diff.Hi), blo, bhi, fmt.Sprint(c.Diff.N)})
	}
	w.Flush()
	return buf.Bytes()
}

// metricFormat returns the formatter of a metric's values in tables.
func metricFormat(metric string) func(float64) string {
	switch metric {
	case MetricFinalReturn:
		return fmtNum
	case MetricNormalizedReturn:
		return fmt2
	}
	return fmt3
}

// writeVerdicts writes one verdict line per environment and lattice
// (training clients) by the declared rule: a difference counts only where
// its Bonferroni-corrected interval excludes 0, and "closer to the true
// reward" only where the three EPIC coverages agree.
func (s *Summary) writeVerdicts(b *strings.Builder) {
	b.WriteString("\n## Verdict (training clients; a difference counts where its Bonferroni-corrected interval excludes 0)\n\n")
	find := func(env, lattice, metric string, pair [2]string) *Comparison {
		for i := range s.Comparisons {
			c := &s.Comparisons[i]
			if c.Env == env && c.Lattice == lattice && c.Group == "train" && c.Metric == metric && c.A == pair[0] && c.B == pair[1] {
				return c
			}
		}
		return nil
	}
	for _, v := range s.Validation {
		var parts []string
		for _, p := range SweepPairs {
			c := find(v.Env, v.Lattice, MetricNormalizedReturn, p)
			if c == nil {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s − %s %s", p[0], p[1], verdictWord(c, "return")))
		}
		c := find(v.Env, v.Lattice, MetricNormalizedReturn, SweepPairs[0])
		if c == nil {
			continue
		}
		signs := map[string]int{}
		var epics []string
		for _, met := range []string{MetricEPICModel, MetricEPICUniform, MetricEPICDemos} {
			e := find(v.Env, v.Lattice, met, SweepPairs[0])
			if e == nil {
				epics = append(epics, EPICCoverages[met]+" undefined")
				continue
			}
			sgn := 0
			if e.Bonferroni != nil && e.Bonferroni.Excludes0() {
				sgn = 1
				if e.Diff.Mean < 0 {
					sgn = -1
				}
			}
			signs[met] = sgn
			epics = append(epics, fmt.Sprintf("%s %s", EPICCoverages[met], fmt3(e.Diff.Mean)))
		}
		agree := len(signs) == 3 && signs[MetricEPICModel] == signs[MetricEPICUniform] && signs[MetricEPICUniform] == signs[MetricEPICDemos]
		closer := "the coverages disagree or do not resolve it: no verdict on closeness"
		switch {
		case agree && signs[MetricEPICModel] < 0:
			closer = "the barycenter's reward is closer to the true one under all three coverages"
		case agree && signs[MetricEPICModel] > 0:
			closer = "the barycenter's reward is farther from the true one under all three coverages"
		}
		valid := ""
		if !v.Valid {
			valid = " (ladder: **not valid**, so no basis for comparing fusions)"
		}
		fmt.Fprintf(b, "- **%s %s**%s: normalized return %s. EPIC barycenter − mean (%s): %s.\n", v.Env, v.Lattice, valid,
			strings.Join(parts, "; "), strings.Join(epics, ", "), closer)
	}
}

// verdictWord prints a difference with its verdict.
func verdictWord(c *Comparison, what string) string {
	f := metricFormat(c.Metric)
	s := fmt.Sprintf("%s [%s, %s]", f(c.Diff.Mean), f(c.Diff.Lo), f(c.Diff.Hi))
	switch {
	case c.Bonferroni != nil && c.Bonferroni.Excludes0() && c.Diff.Mean > 0:
		return s + " (higher " + what + ", resolved)"
	case c.Bonferroni != nil && c.Bonferroni.Excludes0():
		return s + " (lower " + what + ", resolved)"
	}
	return s + " (not resolved)"
}

func irlCSV(fs []IRLFile) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"env", "lattice", "seed", "client", "pairs", "horizon", "iterations", "converged", "grad_norm_0", "grad_norm", "feature_gap",
		"bias_gap_0", "bias_gap", "absorbing_reward", "absorbing_gap", "loglik_0", "loglik", "demo_steps", "reachable_states", "stop_reason"})
	for _, f := range fs {
		w.Write([]string{f.Env, f.Lattice, fmt.Sprint(f.Seed), fmt.Sprint(f.Client), fmt.Sprint(f.Pairs), fmt.Sprint(f.Horizon), fmt.Sprint(f.Iterations),
			fmt.Sprint(f.Converged), num(f.GradNorm0), num(f.GradNorm), num(f.FeatureGap), num(f.BiasGap0), num(f.BiasGap),
			num(f.AbsorbingReward), num(f.AbsorbingGap), num(f.LogLik0), num(f.LogLik), fmt.Sprint(f.DemoSteps),
			fmt.Sprint(f.ReachableStates), f.StopReason})
	}
	w.Flush()
	return buf.Bytes()
}

// unconverged counts the fits that did not reach irl.grad_tol.
func unconverged(fs []IRLFile) int {
	n := 0
	for _, f := range fs {
		if !f.Converged {
			n++
		}
	}
	return n
}
