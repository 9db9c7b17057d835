"""Lattice tasks: the state-action lattice and the feature matrix Phi of a
fedirl "lattice" task, computed exactly as the Go server computes them.

A task's probe JSON (``fedirl server task create --spec``) carries:

    {"state":  [axis, ...],            # state axes, slowest first
     "action": [axis, ...],            # action axes
     "rbf": {...} | "phi": [[...]] | "phi_npy": "<base64 .npy>" | "phi_file": "phi.npy"}

with each axis one of
    {"n": 25, "lo": -1.2, "hi": 0.6}                      uniform, lo and hi included
    {"n": 16, "lo": -3.14, "hi": 3.14, "periodic": true}  n points lo + j(hi-lo)/n
    {"coords": [0.0, 0.5, 2.0]}                           explicit
    {"n": 3, "categorical": true}                         indices 0..n-1
and an optional "name" and cost "weight". Pairs are numbered s*A + a, points
row-major with the last axis fastest (as in pkg/lattice).
"""
import base64
import io
import math

import numpy as np


class Axis:
    """One lattice axis; build with Axis.uniform/periodic/explicit/categorical or from_json."""

    def __init__(self, coords, name="", period=0.0, categorical=False, spec=None):
        self.coords = np.asarray(coords, dtype=np.float64)
        self.name = name
        self.period = float(period)
        self.categorical = bool(categorical)
        self.spec = spec or {"coords": self.coords.tolist()}
        if name:
            self.spec = dict(self.spec, name=name)

    @classmethod
    def uniform(cls, n, lo, hi, name=""):
        """n evenly spaced points from lo to hi inclusive (lattice.RangeAxis)."""
        if n < 1 or not lo < hi:
            raise ValueError(f"axis {name!r}: need n >= 1 and lo < hi, got n={n}, lo={lo}, hi={hi}")
        if n == 1:
            c = np.array([(lo + hi) / 2])
        else:
            h = (hi - lo) / (n - 1)
            c = lo + np.arange(n) * h
            c[-1] = hi
        return cls(c, name, spec={"n": n, "lo": lo, "hi": hi})

    @classmethod
    def periodic(cls, n, lo, hi, name=""):
        """n points lo + j(hi-lo)/n on a circle of period hi-lo (lattice.PeriodicAxis)."""
        if n < 1 or not lo < hi:
            raise ValueError(f"axis {name!r}: need n >= 1 and lo < hi")
        c = np.arange(n) * ((hi - lo) / n) + lo
        return cls(c, name, period=hi - lo, spec={"n": n, "lo": lo, "hi": hi, "periodic": True})

    @classmethod
    def explicit(cls, coords, name=""):
        """Strictly increasing explicit coordinates."""
        c = [float(x) for x in coords]
        if not c or any(not b > a for a, b in zip(c, c[1:])):
            raise ValueError(f"axis {name!r}: coords must be non-empty and strictly increasing")
        return cls(c, name, spec={"coords": c})

    @classmethod
    def categorical_axis(cls, n, name=""):
        """n categories 0..n-1 with 0/1 distance."""
        if n < 1:
            raise ValueError(f"axis {name!r}: need n >= 1")
        return cls(np.arange(n, dtype=np.float64), name, categorical=True, spec={"n": n, "categorical": True})

    @classmethod
    def from_json(cls, d, where="axis"):
        """The axis described by a probe's axis object (see the module comment)."""
        name = d.get("name", "")
        known = {"name", "n", "lo", "hi", "periodic", "categorical", "coords", "weight"}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        if "coords" in d:
            if set(d) & {"n", "lo", "hi", "periodic", "categorical"}:
                raise ValueError(f"{where}: an explicit axis (coords) takes no n, lo, hi, periodic or categorical")
            a = cls.explicit(d["coords"], name)
        elif d.get("categorical"):
            a = cls.categorical_axis(int(d.get("n", 0)), name)
        elif d.get("periodic"):
            a = cls.periodic(int(d.get("n", 0)), float(d.get("lo", 0)), float(d.get("hi", 0)), name)
        else:
            a = cls.uniform(int(d.get("n", 0)), float(d.get("lo", 0)), float(d.get("hi", 0)), name)
        if "weight" in d:
            w = float(d["weight"])
            if not (w > 0 and math.isfinite(w)):
                raise ValueError(f"{where}: weight {w} must be a positive finite number (omit it for the default)")
            a.spec = dict(a.spec, weight=d["weight"])
        return a

    def __len__(self):
        return len(self.coords)

    def to_json(self):
        return dict(self.spec)

    def locate(self, x):
        """Multilinear interpolation on this axis: two point indices and weights for the coordinate x.

        Open axes clamp, periodic ones wrap, categorical ones take the nearest index with weight 1.
        """
        c = self.coords
        n = len(c)
        if self.categorical or n == 1:
            j = int(np.argmin(np.abs(c - x)))
            return (j, j), (1.0, 0.0)
        if self.period > 0:
            x = c[0] + (x - c[0]) % self.period
            j = int(np.searchsorted(c, x, side="right") - 1)
            if j == n - 1:
                lo, hi, nxt = c[-1], c[0] + self.period, 0
            else:
                lo, hi, nxt = c[j], c[j + 1], j + 1
            t = (x - lo) / (hi - lo)
            return (j, nxt), (1 - t, t)
        if x <= c[0]:
            return (0, 0), (1.0, 0.0)
        if x >= c[-1]:
            return (n - 1, n - 1), (1.0, 0.0)
        j = int(np.searchsorted(c, x, side="right") - 1)
        t = (x - c[j]) / (c[j + 1] - c[j])
        return (j, j + 1), (1 - t, t)

    def nearest(self, x):
        """The index of the point nearest to x (wrapped on a periodic axis)."""
        d = np.abs(self.coords - x)
        if self.period > 0:
            d = np.mod(d, self.period)
            d = np.minimum(d, self.period - d)
        return int(np.argmin(d))


class Lattice:
    """A product of axes; points numbered row-major, the last axis fastest."""

    def __init__(self, axes):
        self.axes = list(axes)
        self.shape = tuple(len(a) for a in self.axes)

    def __len__(self):
        return int(np.prod(self.shape)) if self.axes else 0

    def points(self):
        """All points as an (n, len(axes)) array in point order."""
        grids = np.meshgrid(*[a.coords for a in self.axes], indexing="ij")
        return np.stack([g.ravel() for g in grids], axis=1)

    def point(self, i):
        return np.array([a.coords[j] for a, j in zip(self.axes, np.unravel_index(i, self.shape))])

    def snap(self, x):
        """The index of the point nearest to x, axis by axis."""
        return int(np.ravel_multi_index(tuple(a.nearest(v) for a, v in zip(self.axes, x)), self.shape))

    def interp(self, x):
        """Multilinear interpolation: (indices, weights) of the up to 2^D corner points around x."""
        parts = [a.locate(v) for a, v in zip(self.axes, x)]
        idx, w = [0], [1.0]
        for (js, ts), n in zip(parts, self.shape):
            idx = [i * n + j for i in idx for j in js]
            w = [p * t for p in w for t in ts]
        out = {}
        for i, p in zip(idx, w):
            if p > 0:
                out[i] = out.get(i, 0.0) + p
        return list(out.keys()), list(out.values())


def rbf_matrix(rbf, points):
    """Phi of a features.RBFSpec at the given points (one coordinate per RBF axis), as Go computes it.

    Feature j is the product over axes of exp(-1/2 (d/sigma)^2) (an indicator of the nearest centre on a
    categorical axis), centres row-major with the last axis fastest, then a constant 1 if "bias".
    """
    axes = rbf["axes"]
    points = np.asarray(points, dtype=np.float64)
    if points.shape[1] != len(axes):
        raise ValueError(f"rbf has {len(axes)} axes, the points {points.shape[1]} coordinates")
    prod = np.ones((len(points), 1))
    for k, ax in enumerate(axes):
        c = np.asarray(ax["centres"], dtype=np.float64)
        x = points[:, k:k + 1]
        if ax.get("categorical"):
            g = np.zeros((len(points), len(c)))
            g[np.arange(len(points)), np.argmin(np.abs(x - c[None, :]), axis=1)] = 1.0
        else:
            d = x - c[None, :]
            p = float(ax.get("period", 0) or 0)
            if p > 0:
                q = d / p
                d = d - p * (np.sign(q) * np.floor(np.abs(q) + 0.5))  # Go's math.Round: half away from zero
            u = d * (1.0 / float(ax["bandwidth"]))
            g = np.exp(-0.5 * u * u)
        # Same multiplication order as Go: ((1·g_0)·g_1)·…, last axis fastest.
        prod = (prod[:, :, None] * g[:, None, :]).reshape(len(points), -1)
    if rbf.get("bias"):
        prod = np.concatenate([prod, np.ones((len(points), 1))], axis=1)
    return prod


class LatticeTask:
    """The lattice and feature map of a fedirl "lattice" task."""

    def __init__(self, state, action, rbf=None, phi=None):
        self.state = Lattice(state)
        self.action = Lattice(action)
        self.rbf = rbf
        self._phi = None if phi is None else np.asarray(phi, dtype=np.float64)
        if (rbf is None) == (phi is None):
            raise ValueError("give exactly one of rbf and phi")
        if rbf is not None and len(rbf["axes"]) != len(self.state.axes) + len(self.action.axes):
            raise ValueError(f"rbf has {len(rbf['axes'])} axes, the lattice {len(self.state.axes)} state "
                             f"and {len(self.action.axes)} action axes")
        if self._phi is not None and self._phi.shape[0] != self.num_pairs:
            raise ValueError(f"phi has {self._phi.shape[0]} rows, the lattice {self.num_pairs} pairs")

    @classmethod
    def from_probe(cls, probe, base_dir="."):
        """The task of a probe (a dict, JSON text or bytes as in TaskSpec.probe)."""
        if isinstance(probe, (bytes, str)):
            import json
            probe = json.loads(probe)
        known = {"state", "action", "rbf", "phi", "phi_npy", "phi_file"}
        if set(probe) - known:
            raise ValueError(f"lattice probe: unknown keys {sorted(set(probe) - known)}")
        state = [Axis.from_json(a, f"state[{k}]") for k, a in enumerate(probe.get("state", []))]
        action = [Axis.from_json(a, f"action[{k}]") for k, a in enumerate(probe.get("action", []))]
        phi = None
        if "phi" in probe:
            phi = np.array(probe["phi"], dtype=np.float64)
        elif "phi_npy" in probe:
            phi = np.load(io.BytesIO(base64.b64decode(probe["phi_npy"])), allow_pickle=False)
        elif "phi_file" in probe:
            import os
            phi = np.load(os.path.join(base_dir, probe["phi_file"]), allow_pickle=False)
        return cls(state, action, rbf=probe.get("rbf"), phi=phi)

    @property
    def num_states(self):
        """Lattice states (an MDP may append terminal states after them)."""
        return len(self.state)

    @property
    def num_actions(self):
        return len(self.action)

    @property
    def num_pairs(self):
        return self.num_states * self.num_actions

    def pair_points(self):
        """The (S*A, state dims + action dims) coordinates of every pair, row s*A + a."""
        s, a = self.state.points(), self.action.points()
        return np.concatenate([np.repeat(s, len(a), axis=0), np.tile(a, (len(s), 1))], axis=1)

    def phi(self):
        """The task's feature matrix Phi, one row per pair s*A + a."""
        if self._phi is None:
            self._phi = rbf_matrix(self.rbf, self.pair_points())
        return self._phi

    @property
    def dim(self):
        return self.phi().shape[1]

    def probe(self, inline_phi="npy"):
        """The probe JSON object of this task; an explicit Phi inline as .npy bytes ("npy") or rows ("rows")."""
        p = {"state": [a.to_json() for a in self.state.axes], "action": [a.to_json() for a in self.action.axes]}
        if self.rbf is not None:
            p["rbf"] = self.rbf
        elif inline_phi == "rows":
            p["phi"] = self._phi.tolist()
        else:
            buf = io.BytesIO()
            np.save(buf, np.ascontiguousarray(self._phi, dtype="<f8"), allow_pickle=False)
            p["phi_npy"] = base64.b64encode(buf.getvalue()).decode("ascii")
        return p

    def reward(self, theta):
        """r = Phi theta on the lattice pairs, shape (S, A)."""
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.dim,):
            raise ValueError(f"theta has shape {theta.shape}, the task {self.dim} features")
        return (self.phi() @ theta).reshape(self.num_states, self.num_actions)

    def action_value(self, a):
        """The action coordinates of action point a (a scalar for a single action axis)."""
        p = self.action.point(a)
        return p[0] if len(p) == 1 else p


def uniform_rbf(axes_centres, bias=True):
    """An RBF spec from (name, n, lo, hi, period) tuples: n centres at the midpoints of n cells of [lo, hi]
    with bandwidth the cell width (features.UniformRBFAxis); ("name", "categorical", centres) for an indicator
    axis."""
    out = []
    for spec in axes_centres:
        if spec[1] == "categorical":
            out.append({"name": spec[0], "centres": [float(c) for c in spec[2]], "categorical": True})
            continue
        name, n, lo, hi = spec[:4]
        period = spec[4] if len(spec) > 4 else 0.0
        h = (hi - lo) / n
        ax = {"name": name, "centres": [lo + (i + 0.5) * h for i in range(n)], "bandwidth": h}
        if period:
            ax["period"] = period
        out.append(ax)
    return {"axes": out, "bias": bool(bias)}


def is_close_to_go(a, b):
    """The tolerance of tasks.PhiTolerance: |a - b| <= 1e-9 max(1, |b|)."""
    return np.abs(np.asarray(a) - np.asarray(b)) <= 1e-9 * np.maximum(1.0, np.abs(b))


def check_client_features(task, num_states, num_actions, features, terminal):
    """Checks a client's model against the task as `fedirl client` does: the task's actions, its lattice states
    first (any further states terminal with zero features), and features equal to the task's Phi within
    tasks.PhiTolerance. Raises ValueError naming the first mismatch."""
    S, A = task.num_states, task.num_actions
    phi = task.phi()
    features = np.asarray(features, dtype=np.float64)
    if num_actions != A:
        raise ValueError(f"client MDP: actions = {num_actions}, the task's lattice has {A} action points")
    if num_states < S:
        raise ValueError(f"client MDP: states = {num_states}, the task's lattice has {S} state points")
    if features.ndim != 2 or features.shape[1] != phi.shape[1]:
        raise ValueError(f"client features: shape {features.shape}, the task's Phi has {phi.shape[1]} columns")
    if features.shape[0] != num_states * num_actions:
        raise ValueError(f"client features: {features.shape[0]} rows for {num_states}x{num_actions} pairs")
    term = set(int(t) for t in terminal)
    for s in range(S, num_states):
        if s not in term:
            raise ValueError(f"client MDP: state {s} lies beyond the task's {S} lattice states and is not terminal")
    extra = features[S * A:]
    if np.any(extra != 0):
        k, j = np.argwhere(extra != 0)[0]
        raise ValueError(f"client features[{S * A + k}][{j}] = {extra[k, j]}: extra terminal states must have zero features")
    ok = is_close_to_go(features[:S * A], phi)
    if not ok.all():
        k, j = np.argwhere(~ok)[0]
        raise ValueError(f"client features[{k}][{j}] = {features[k, j]} (state {k // A}, action {k % A}, feature {j}), "
                         f"the task's Phi has {phi[k, j]}")


__all__ = ["Axis", "Lattice", "LatticeTask", "rbf_matrix", "uniform_rbf", "is_close_to_go", "check_client_features"]
