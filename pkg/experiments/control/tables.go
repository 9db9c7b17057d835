package control

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"strconv"
	"strings"
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
	b.WriteString("(a) true-reward lattice planner in the real simulator, (b) PPO on the true reward projected onto the features, (c) local IRL fit (reported, not judged); returns normalized as (R − R_random)/(R_expert − R_random). A lattice is valid when (a) and (b) pass their thresholds (config key ladder).\n\n")
	b.WriteString("| env | lattice | (a) planner, normalized | (b) projected, normalized | projection R² | (c) feature gap | bias μ_D − μ_π (θ = 0 → final) | fits converged | valid |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, v := range s.Validation {
		valid := "yes"
		if !v.Valid {
			valid = "**no**: " + strings.Join(v.Reasons, "; ")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s → %s | %d/%d | %s |\n", v.Env, v.Lattice, fmtPtr(v.PlannerTrueNormalized),
			fmtPtr(v.ProjectedTrueNormalized), fmtPtr(v.ProjectionR2), fmtG(v.FeatureGap), fmtG(v.BiasGap0), fmtG(v.BiasGap), v.FitsConverged, v.Fits, valid)
	}
	b.WriteString("\n## PPO on each reward (mean ± std over seeds; per seed the mean over clients)\n\n")
	b.WriteString("| env | lattice | pairs | method | clients | normalized return | EPIC to true | final true return | seeds |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range s.Rows {
		pairs := "–"
		if r.Pairs > 0 {
			pairs = fmt.Sprint(r.Pairs)
		}
		ep := "–"
		if r.EPICToTrue != nil {
			ep = fmt3(r.EPICToTrue.Mean) + " ± " + fmt3(r.EPICToTrue.Std)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s ± %s | %s | %s ± %s | %d |\n", r.Env, r.Lattice, pairs, r.Method, r.Group,
			fmt2(r.NormalizedReturn.Mean), fmt2(r.NormalizedReturn.Std), ep, fmtNum(r.Final.Mean), fmtNum(r.Final.Std), r.Final.N)
	}
	b.WriteString("\n## Paired differences across seeds (95% t-interval)\n\n")
	b.WriteString("| env | lattice | clients | metric | difference | mean | 95% CI | seeds |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range s.Comparisons {
		f := fmt2
		switch c.Metric {
		case "final_true_return":
			f = fmtNum
		case "epic_to_true":
			f = fmt3
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s − %s | %s | [%s, %s] | %d |\n", c.Env, c.Lattice, c.Group, c.Metric, c.A, c.B, f(c.Diff.Mean), f(c.Diff.Lo), f(c.Diff.Hi), c.Diff.N)
	}
	b.WriteString("\n## Experts (mode policy, 20 episodes), random policy and demonstrations\n\n| env | seed | client | held out | expert return | random return | demonstration mean return |\n|---|---|---|---|---|---|---|\n")
	for _, e := range s.Experts {
		demo := "–"
		if e.DemoReturn != nil {
			demo = fmtNum(*e.DemoReturn)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %v | %s | %s | %s |\n", e.Env, e.Seed, e.Client, e.HeldOut, fmtNum(e.EvalReturn), fmtNum(e.RandomReturn), demo)
	}
	b.WriteString("\n## Local MaxEnt IRL convergence\n\n(log-likelihood in reward units: θᵀμ_D − E V_θ(s₀), see package irl)\n\n")
	if n := unconverged(s.IRL); n > 0 {
		fmt.Fprintf(&b, "**Warning: %d of %d local fits did not converge** (‖∇‖ > irl.grad_tol; irl_diagnostics.csv says why).\n\n", n, len(s.IRL))
	}
	b.WriteString("| env | lattice | seed | client | horizon | iterations | converged | ‖∇‖ at θ=0 | final ‖∇‖ | feature gap | bias gap θ=0 → final | log-lik θ=0 | final log-lik |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range s.IRL {
		h := "∞"
		if f.Horizon > 0 {
			h = fmt.Sprint(f.Horizon)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %d | %v | %.3g | %.3g | %.3g | %.3g → %.3g | %.4g | %.4g |\n", f.Env, f.Lattice, f.Seed, f.Client, h,
			f.Iterations, f.Converged, f.GradNorm0, f.GradNorm, f.FeatureGap, f.BiasGap0, f.BiasGap, f.LogLik0, f.LogLik)
	}
	return b.String()
}

// CSV renders the summary rows and comparisons as one long table.
func (s *Summary) CSV() []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"env", "lattice", "pairs", "method", "clients", "metric", "mean", "std_or_lo", "n_or_hi", "seeds"})
	for _, r := range s.Rows {
		w.Write([]string{r.Env, r.Lattice, fmt.Sprint(r.Pairs), r.Method, r.Group, "final_true_return", num(r.Final.Mean), num(r.Final.Std), "", fmt.Sprint(r.Final.N)})
		w.Write([]string{r.Env, r.Lattice, fmt.Sprint(r.Pairs), r.Method, r.Group, "normalized_return", num(r.NormalizedReturn.Mean), num(r.NormalizedReturn.Std), "", fmt.Sprint(r.NormalizedReturn.N)})
		if r.EPICToTrue != nil {
			w.Write([]string{r.Env, r.Lattice, fmt.Sprint(r.Pairs), r.Method, r.Group, "epic_to_true", num(r.EPICToTrue.Mean), num(r.EPICToTrue.Std), "", fmt.Sprint(r.EPICToTrue.N)})
		}
	}
	for _, c := range s.Comparisons {
		w.Write([]string{c.Env, c.Lattice, "", c.A + "-" + c.B, c.Group, c.Metric, num(c.Diff.Mean), num(c.Diff.Lo), num(c.Diff.Hi), fmt.Sprint(c.Diff.N)})
	}
	w.Flush()
	return buf.Bytes()
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
