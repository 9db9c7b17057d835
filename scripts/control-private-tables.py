#!/usr/bin/env python3
"""Prints README-control's tables of the private re-run (section "Private rewards in the continuous
study") from the committed summaries, standard library only:

    python3 scripts/control-private-tables.py [RESULTS_DIR]

EPIC is the distance to the true reward under the "model" coverage (the first runs' only EPIC; today's
summaries add "uniform" and "demonstrations", printed in a table of their own).

RESULTS_DIR (default pkg/experiments/control/results) holds private-eps{inf,32,8,2}/summary.json (the
3-seed runs) and private-eps{inf,32,8,2}-pendulum-10seeds/summary.json (the Pendulum follow-up); ε = ∞ is
the same study without privacy. Paired differences are the summaries' own (per-seed differences, 95 %
t-interval); the script recomputes every 95 % interval from the per-seed differences with its own t
quantile and stops if one disagrees with the summary, then widens the follow-up's intervals to the
declared Bonferroni level 1 − 0.05/12 (3 ε × 2 groups × 2 methods per measure). It also prints, per
pair of ε, the correlation of the per-seed barycenter − mean differences (the audit's measure of how
far the ε are separate looks).
"""
import json
import math
import os
import sys

EPSILONS = ["inf", "32", "8", "2"]
FUSIONS = ["mean", "barycenter", "debiased"]
PAIRS = [("barycenter", "mean"), ("debiased", "mean")]
BONFERRONI_M = 12


def betacf(a, b, x):
    """Continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)), -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            return h
    raise ArithmeticError("betacf did not converge")


def betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbt) * betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * betacf(b, a, 1 - x) / b


def t_cdf(t, nu):
    p = 0.5 * betainc(nu / 2, 0.5, nu / (nu + t * t))
    return 1 - p if t > 0 else p


def t_quantile(p, nu):
    """The p-quantile (p > 1/2) of Student's t with nu degrees of freedom, by bisection."""
    lo, hi = 0.0, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, nu) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def interval(diffs, level):
    n = len(diffs)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    h = t_quantile(1 - (1 - level) / 2, n - 1) * sd / math.sqrt(n)
    return mean, mean - h, mean + h


def load(results, name):
    path = os.path.join(results, name, "summary.json")
    with open(path) as f:
        s = json.load(f)
    for c in s["comparisons"]:
        d = c["diff"]
        if len(d["diffs"]) < 2:
            continue
        _, lo, hi = interval(d["diffs"], d["level"])
        if abs(lo - d["lo"]) > 1e-9 * (1 + abs(lo)) or abs(hi - d["hi"]) > 1e-9 * (1 + abs(hi)):
            sys.exit(f"{path}: {c['a']} − {c['b']} {c['metric']}: interval [{d['lo']}, {d['hi']}], recomputed [{lo}, {hi}]")
    return s


def epic(r):
    """The row's EPIC distance to the true reward under the model coverage (the first runs' only one)."""
    e = r["epic_to_true"]
    return e["model"]["mean"] if "model" in e else e["mean"]


def epic_metric(s, coverage="model"):
    """The comparisons' name of EPIC under a coverage: epic_<coverage> today, epic_to_true before."""
    names = {c["metric"] for c in s["comparisons"]}
    return f"epic_{coverage}" if f"epic_{coverage}" in names else "epic_to_true"


def row(s, env, method, group):
    for r in s["rows"]:
        if r["env"] == env and r["method"] == method and r["group"] == group:
            return r
    raise KeyError(f"no row {env} {method} {group}")


def comparison(s, env, group, metric, a, b):
    for c in s["comparisons"]:
        if (c["env"], c["group"], c["metric"], c["a"], c["b"]) == (env, group, metric, a, b):
            return c["diff"]
    raise KeyError(f"no comparison {env} {group} {metric} {a} − {b}")


def eps_label(e):
    return "∞" if e == "inf" else e


def signed(x, digits):
    s = f"{x:+.{digits}f}"
    return s.replace("-", "−")


def ci(d, digits, bonf=None):
    text = f"{signed(d['mean'], digits)} [{signed(d['lo'], digits)}, {signed(d['hi'], digits)}]"
    if d["lo"] > 0 or d["hi"] < 0:
        text = f"**{text}**"
        if bonf is not None:
            _, lo, hi = interval(d["diffs"], 1 - 0.05 / bonf)
            if lo > 0 or hi < 0:
                text += " ✓"
    return text


def mean_std(r, key):
    v = r[key]
    return f"{v['mean']:.2f} ± {v['std']:.2f}"


def three_seed(results):
    runs = {e: load(results, f"private-eps{e}") for e in EPSILONS}
    print("| env | ε | clients | mean | barycenter | debiased | barycenter − mean | debiased − mean | EPIC mean / barycenter / debiased |")
    print("|---|---|---|---|---|---|---|---|---|")
    for env in ["Pendulum-v1", "CartPole-v1", "Acrobot-v1"]:
        for e in EPSILONS:
            s = runs[e]
            if not any(r["env"] == env for r in s["rows"]):
                continue
            for g in ["train", "held-out"]:
                cells = [mean_std(row(s, env, m, g), "normalized_return") for m in FUSIONS]
                cells += [ci(comparison(s, env, g, "normalized_return", a, b), 2) for a, b in PAIRS]
                cells.append(" / ".join(f"{epic(row(s, env, m, g)):.3f}" for m in FUSIONS))
                print(f"| {env} | {eps_label(e)} | {g} | " + " | ".join(cells) + " |")


def ten_seed(results):
    runs = {e: load(results, f"private-eps{e}-pendulum-10seeds") for e in EPSILONS}
    env = "Pendulum-v1"
    n = len(runs["inf"]["comparisons"][0]["diff"]["diffs"])
    print(f"Bonferroni: t_{n - 1} at 1 − 0.05/{2 * BONFERRONI_M} = {t_quantile(1 - 0.05 / (2 * BONFERRONI_M), n - 1):.2f}\n")
    print("| ε | clients | mean | barycenter | debiased | barycenter − mean | debiased − mean | EPIC barycenter − mean |")
    print("|---|---|---|---|---|---|---|---|")
    for e in EPSILONS:
        s = runs[e]
        for g in ["train", "held-out"]:
            cells = [mean_std(row(s, env, m, g), "normalized_return") for m in FUSIONS]
            cells += [ci(comparison(s, env, g, "normalized_return", a, b), 2, BONFERRONI_M) for a, b in PAIRS]
            cells.append(ci(comparison(s, env, g, epic_metric(s), "barycenter", "mean"), 3, BONFERRONI_M))
            print(f"| {eps_label(e)} | {g} | " + " | ".join(cells) + " |")
    if "normalized-mean" in {r["method"] for r in runs["inf"]["rows"]}:
        print("\nReported beside the rule: normalized-mean, and EPIC barycenter − mean under the three coverages (95 %):\n")
        print("| ε | clients | normalized-mean | normalized-mean − mean | barycenter − normalized-mean | EPIC model | EPIC uniform | EPIC demonstrations |")
        print("|---|---|---|---|---|---|---|---|")
        for e in EPSILONS:
            s = runs[e]
            for g in ["train", "held-out"]:
                cells = [mean_std(row(s, env, "normalized-mean", g), "normalized_return")]
                cells += [ci(comparison(s, env, g, "normalized_return", a, b), 2) for a, b in [("normalized-mean", "mean"), ("barycenter", "normalized-mean")]]
                for cov in ["model", "uniform", "demonstrations"]:
                    try:
                        cells.append(ci(comparison(s, env, g, epic_metric(s, cov), "barycenter", "mean"), 3))
                    except KeyError:
                        cells.append("–")
                print(f"| {eps_label(e)} | {g} | " + " | ".join(cells) + " |")
    print("\nCorrelation across seeds of the barycenter − mean differences (normalized return, train; EPIC):")
    for metric in ["normalized_return", "epic"]:
        d = {e: comparison(runs[e], env, "train", metric if metric != "epic" else epic_metric(runs[e]), "barycenter", "mean")["diffs"] for e in EPSILONS[1:]}
        out = []
        for i, a in enumerate(EPSILONS[1:]):
            for b in EPSILONS[i + 2:]:
                out.append(f"ε {a}–{b}: {pearson(d[a], d[b]):+.2f}")
        print(f"  {metric}: " + ", ".join(out))


def pearson(x, y):
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy)


def main():
    results = sys.argv[1] if len(sys.argv) > 1 else "pkg/experiments/control/results"
    # The t quantile against two textbook values before it is used.
    for p, nu, want in [(0.975, 2, 4.302653), (0.975, 9, 2.262157)]:
        if abs(t_quantile(p, nu) - want) > 1e-5:
            sys.exit(f"t quantile ({p}, {nu}) = {t_quantile(p, nu)}, want {want}")
    print("3 seeds (1–3):\n")
    three_seed(results)
    print("\nPendulum, 10 seeds (1–10):\n")
    ten_seed(results)


if __name__ == "__main__":
    main()
