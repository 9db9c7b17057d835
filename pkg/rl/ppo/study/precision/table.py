#!/usr/bin/env python3
"""Prints the float32-vs-float64 table of README.md from the studies' summary.csv files.

usage: table.py <float32 summary.csv>... -- <float64 summary.csv>...
(each side may list several summaries, e.g. the classic-control study and the LunarLander one).
"""
import csv
import statistics
import sys


def load(paths):
    rows = {}
    for p in paths:
        with open(p) as f:
            for r in csv.DictReader(f):
                rows.setdefault(r["env"], []).append(r)
    return rows


def fmt_steps(hits):
    got = [h for h in hits if h >= 0]
    if not got:
        return "—"
    return "%dk (%dk–%dk)" % (statistics.median(got) / 1000, min(got) / 1000, max(got) / 1000)


def summary(rows):
    fe = [float(r["final_eval"]) for r in rows]
    ft = [float(r["final_train_mean"]) for r in rows]
    hits = [int(r["first_eval_hit"]) for r in rows]
    thits = [int(r["first_train_hit"]) for r in rows]
    reached = sum(r["reached"] == "true" for r in rows)
    return {
        "n": len(rows),
        "final_eval": "%.1f ± %.1f" % (statistics.mean(fe), statistics.stdev(fe) if len(fe) > 1 else 0),
        "final_train": "%.1f ± %.1f" % (statistics.mean(ft), statistics.stdev(ft) if len(ft) > 1 else 0),
        "reached": "%d / %d" % (reached, len(rows)),
        "eval_hit": fmt_steps(hits),
        "train_hit": "%s, %d / %d" % (fmt_steps(thits), sum(h >= 0 for h in thits), len(rows)),
        "threshold": rows[0]["threshold"],
        "budget": rows[0]["steps"],
    }


def main():
    args = sys.argv[1:]
    cut = args.index("--")
    f32, f64 = load(args[:cut]), load(args[cut + 1:])
    print("| env (target, budget) | precision | seeds reaching target (eval) | first eval ≥ target: median (min–max) steps "
          "| first 100-episode train mean ≥ target: median (min–max), seeds | final eval, mean ± sd | final train mean, mean ± sd |")
    print("|---|---|---|---|---|---|---|")
    for env in f32:
        for name, rows in (("float32", f32[env]), ("float64", f64.get(env, []))):
            if not rows:
                continue
            s = summary(rows)
            print("| %s (%s, %s) | %s | %s | %s | %s | %s | %s |" % (env, s["threshold"], s["budget"], name, s["reached"],
                  s["eval_hit"], s["train_hit"], s["final_eval"], s["final_train"]))


if __name__ == "__main__":
    main()
