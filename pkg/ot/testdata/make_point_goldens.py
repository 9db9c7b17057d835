#!/usr/bin/python3
"""Generate pkg/ot point-cloud barycenter goldens with POT (Debian's python3-pot 0.8.2).

Run from this directory:  nice -n 19 /usr/bin/python3 make_point_goldens.py
Writes point_goldens.json, read by TestPointBarycenterMatchesPOT (golden_test.go).

Each case is a scattered point cloud (a fixed numpy seed; uniform points or
Gaussian clusters), per-coordinate cost weights, K measures on the points and
barycenter weights. The cost is built here with numpy, independently of the
Go code, from its definition C(x, y) = sum_k w_k (x_k - y_k)^2, and POT's
ot.bregman.barycenter(A, M, reg, weights, method=...) is the golden:
'sinkhorn' (Go IBP) and 'sinkhorn_log' (Go Stabilized). reg is POT's
regularization, equal to the Go kernel's absolute epsilon (AbsoluteEps); it is
chosen per case as a round multiple of the cloud's median nearest-neighbour
cost, which is stored as "cost_unit" so that the Go test also checks
PointCloud.CostUnit against this independent computation.

What is stored, and why it is exact: coordinates are rounded to 3 or 4
decimals and cost weights to 3, measures to 6 significant digits
(unnormalized; POT gets them divided by their sums, as the Go workspace
normalizes them), and POT runs on those rounded values, so Go parses exactly
the floats POT used. The barycenter is stored to 13 significant digits.
Only the largest case (n = 2000, d = 28: about 330 KB of coordinates) makes the
file large; it keeps its full points because the test must run the Go solver
on the same support, and a summary would not test every entry.

POT 0.8.2's scaling-domain method='sinkhorn' starts from the *unweighted*
geometric mean, so with non-uniform weights it converges to another point
than IBP started from P_k = K (3% relative on a 60-point test); as in
make_goldens.py, its cases use uniform weights, and the 'sinkhorn_log' cases
use non-uniform weights.
"""
import json
import sys
import time

import numpy as np
import ot

rng = np.random.default_rng(20261203)

CASES = [
    # name, n, d, K, layout, method, reg in units of the median NN cost, decimals
    ("n50_d2_k2", 50, 2, 2, "uniform", "sinkhorn", 2.0, 4),
    ("n120_d3_k3", 120, 3, 3, "clusters", "sinkhorn_log", 30.0, 4),
    ("n300_d8_k4", 300, 8, 4, "uniform", "sinkhorn", 1.0, 4),
    ("n500_d12_k5", 500, 12, 5, "clusters", "sinkhorn_log", 6.0, 4),
    ("n2000_d2_k3", 2000, 2, 3, "uniform", "sinkhorn_log", 200.0, 4),
    ("n2000_d28_k5", 2000, 28, 5, "uniform", "sinkhorn", 0.5, 3),
]
ITERS = 5000
STOP = 1e-15


def points(n, d, layout, dec):
    if layout == "uniform":
        x = rng.random((n, d))
    else:
        c = rng.random((5, d))
        x = c[rng.integers(0, 5, n)] + 0.08 * rng.standard_normal((n, d))
    return np.round(x, dec)


def cost(x, w):
    # Coordinate by coordinate, as the definition reads.
    M = np.zeros((x.shape[0], x.shape[0]))
    for k in range(x.shape[1]):
        diff = x[:, k][:, None] - x[:, k][None, :]
        M += w[k] * diff * diff
    return M


def median_nn(M):
    P = np.where(M > 0, M, np.inf)
    nn = P.min(axis=1)
    nn = nn[np.isfinite(nn)]
    return float(np.median(nn))


def sig(v, digits):
    return float(f"{v:.{digits}g}")


cases = []
only = set(sys.argv[1:])  # a trial run of some cases; writes nothing
for name, n, d, K, layout, method, mult, dec in CASES:
    t0 = time.time()
    x = points(n, d, layout, dec)
    w = np.round(rng.uniform(0.5, 2.0, d), 3)
    M = cost(x, w)
    unit = median_nn(M)
    reg = sig(mult * unit, 3)
    raw = []
    for _ in range(K):
        c = rng.integers(0, n)
        s = 0.5 * np.median(M[c])
        m = np.exp(-M[c] / s) + 1e-3 + 0.1 * rng.random(n)
        raw.append([sig(v, 6) for v in m])
    A = np.array(raw).T
    A = A / A.sum(axis=0)
    if method == "sinkhorn":
        wts = np.ones(K) / K
    else:
        wts = rng.random(K) + 0.2
        wts = wts / wts.sum()
    if only and name not in only:
        continue
    bar, log = ot.bregman.barycenter(A, M, reg, wts, method=method, numItermax=ITERS,
                                     stopThr=STOP, log=True, warn=False)
    print(f"{name}: reg {reg} ({mult} x unit {unit:.4g}), {log['niter']} iterations, err {log['err'][-1]:.2g}, "
          f"max bar {bar.max():.3g}, min K {np.exp(-M.max() / reg):.2g}, {time.time() - t0:.1f} s")
    cases.append({"name": name, "method": method, "eps": reg, "cost_unit": unit,
                  "cost_weights": w.tolist(), "points": x.tolist(), "measures": raw,
                  "weights": wts.tolist(), "iterations": int(log["niter"]),
                  "want": [sig(v, 13) for v in bar]})

if only:
    sys.exit(0)
with open("point_goldens.json", "w") as f:
    json.dump({"generator": "make_point_goldens.py with POT " + ot.__version__, "cases": cases}, f,
              separators=(",", ":"))
print(len(cases), "cases")
