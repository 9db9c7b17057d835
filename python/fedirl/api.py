"""fedirl's main verbs as Python functions, NumPy in and out: barycenter and EPIC on arrays, MaxEnt IRL on an
MDP, fusion by any registry method, and a whole federation of K clients in one process (`simulate`, Flower's
`run_simulation` for fedirl).

Each function runs the `fedirl` binary (`binary()`: the one built into the installed wheel, else $FEDIRL_BIN,
else `fedirl` on PATH) on files in a temporary folder that is removed afterwards, and raises FedirlError with
the command's own message when it fails.
"""
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# Where the wheel's build backend (python/_build/backend.py) puts the binary it built with `go build`.
PACKAGED_BINARY = os.path.join(HERE, "bin", "fedirl.exe" if os.name == "nt" else "fedirl")


class FedirlError(RuntimeError):
    """A fedirl command failed; the message is the command's own."""


def binary():
    """The fedirl binary: $FEDIRL_BIN when set, else the one installed with this package (`pip install ./python`
    builds it into the wheel), else `fedirl` on PATH."""
    env = os.environ.get("FEDIRL_BIN")
    if env:
        return env
    if os.path.exists(PACKAGED_BINARY):
        return PACKAGED_BINARY
    found = shutil.which("fedirl")
    if found:
        return found
    raise FedirlError("no fedirl binary: install the package with `pip install ./python` (it builds one into the "
                      "wheel; needs Go), or set $FEDIRL_BIN, or put fedirl on PATH")


def run(args, stdin=None):
    """Runs `fedirl ARGS...` and returns its stdout; FedirlError (with stderr) on a non-zero exit."""
    cmd = [binary()] + [str(a) for a in args]
    p = subprocess.run(cmd, capture_output=True, text=True, input=stdin)
    if p.returncode != 0:
        raise FedirlError(f"fedirl {' '.join(cmd[1:3])}: {p.stderr.strip()}")
    return p.stdout


def _json_out(args):
    with tempfile.TemporaryDirectory(prefix="fedirl-") as tmp:
        out = os.path.join(tmp, "out.json")
        run(list(args) + ["--out", out])
        with open(out, encoding="utf-8") as f:
            return json.load(f)


def _save(tmp, name, array):
    path = os.path.join(tmp, name)
    np.save(path, np.ascontiguousarray(np.asarray(array, dtype=np.float64)))
    return path


def _write_json(tmp, name, obj):
    path = os.path.join(tmp, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, allow_nan=False)
    return path


def _mdp_file(tmp, mdp, name="mdp.json", features=None):
    """A path for --spec/--mdp: a path as given, a dict (the JSON spec) written, a LatticeMDP with features."""
    if isinstance(mdp, (str, os.PathLike)):
        return os.fspath(mdp)
    if isinstance(mdp, dict):
        return _write_json(tmp, name, mdp)
    if hasattr(mdp, "spec"):
        if features is None:
            raise ValueError("a LatticeMDP needs its features (features=mdp.features(task))")
        return _write_json(tmp, name, mdp.spec(features))
    raise TypeError(f"mdp: want a file path, a JSON spec dict or a LatticeMDP, not {type(mdp).__name__}")


def _demos_file(tmp, demos, name="demos.jsonl"):
    """A path for --demos: a path as given, or trajectories [(states, actions), ...] written as JSON Lines."""
    if isinstance(demos, (str, os.PathLike)):
        return os.fspath(demos)
    path = os.path.join(tmp, name)
    with open(path, "w", encoding="utf-8") as f:
        for t in demos:
            states, actions = (t["states"], t["actions"]) if isinstance(t, dict) else t
            f.write(json.dumps({"states": [int(s) for s in states], "actions": [int(a) for a in actions]}) + "\n")
    return path


def _arrays(info, keys):
    for k in keys:
        if info.get(k) is not None:
            info[k] = np.asarray(info[k], dtype=np.float64)
    return info


def barycenter(measures, eps=0.5, method="ibp", weights=None, spacing=None, periodic=(), categorical=(),
               iters=None, tol=1e-9, absolute_eps=False, log=False):
    """The entropic 2-Wasserstein barycenter of K measures on one product lattice (`fedirl barycenter`).

    measures: K arrays of one shape (the lattice's, slowest axis first) or a (K, ...) array; each is normalized
    to mass 1. eps is in units of the squared smallest spacing (absolute_eps=True: raw cost units, POT's reg);
    method is ibp, stabilized, debiased or paper. Returns the barycenter as an array of the measures' shape; with
    log=True also the command's output (iterations, marginal_error, converged, weights, ...), as POT's log.
    """
    ms = [np.asarray(m, dtype=np.float64) for m in measures]
    if not ms or any(m.shape != ms[0].shape for m in ms):
        raise ValueError("barycenter: want at least one measure, all of one shape")
    shape = ms[0].shape or (1,)
    with tempfile.TemporaryDirectory(prefix="fedirl-") as tmp:
        files = [_save(tmp, f"m{i}.npy", m.reshape(shape)) for i, m in enumerate(ms)]
        args = ["barycenter", "--shape", ",".join(str(n) for n in shape), "--eps", repr(float(eps)),
                "--method", method, "--tol", repr(float(tol))]
        if weights is not None:
            args += ["--weights", ",".join(repr(float(w)) for w in weights)]
        if spacing is not None:
            args += ["--spacing", ",".join(repr(float(h)) for h in np.atleast_1d(spacing))]
        if periodic:
            args += ["--periodic", ",".join(str(int(k)) for k in periodic)]
        if categorical:
            args += ["--categorical", ",".join(str(int(k)) for k in categorical)]
        if iters is not None:
            args += ["--iters", str(int(iters))]
        if absolute_eps:
            args.append("--abs-eps")
        out = _json_out(args + files)
    bar = np.asarray(out.pop("barycenter"), dtype=np.float64).reshape(shape if ms[0].shape else ())
    return (bar, out) if log else bar


def epic(mdp, reward_a, reward_b, coverage="model", demos=None, features=None):
    """The EPIC distance between two rewards on one tabular MDP (`fedirl reward distance`), exact.

    mdp: the `fedirl irl` JSON spec (a path or a dict) or a LatticeMDP with features=; each reward is θ (one
    value per feature) or a reward per state-action pair (S*A values, or an (S, A) array). coverage is model,
    uniform, demonstrations (needs demos) or all. Returns the distance (a float; None where EPIC is undefined);
    with coverage="all", a dict coverage -> distance.
    """
    with tempfile.TemporaryDirectory(prefix="fedirl-") as tmp:
        args = ["reward", "distance", "--spec", _mdp_file(tmp, mdp, features=features), "--coverage", coverage]
        if demos is not None:
            args += ["--demos", _demos_file(tmp, demos)]
        args += [_save(tmp, "a.npy", reward_a), _save(tmp, "b.npy", reward_b)]
        out = _json_out(args)
    if coverage == "all":
        return {name: r["epic"] for name, r in out.items()}
    return out["epic"]


def irl(mdp, demos, features=None, **settings):
    """MaxEnt IRL (`fedirl irl`) on an MDP and demonstrations; returns the command's output as a dict with
    "theta" (and the learning curves) as NumPy arrays.

    mdp: the JSON spec (path or dict), an .npz path, or a LatticeMDP with features=; demos: a path (JSON Lines or
    .npz) or trajectories [(states, actions), ...]. settings are a task's irl keys (optimizer, max_iter,
    learning_rate, l2, temperature, grad_tol, ...), e.g. irl(mdp, demos, optimizer="newton", l2=1e-3).
    """
    from .client import irl_flags
    with tempfile.TemporaryDirectory(prefix="fedirl-") as tmp:
        out = _json_out(["irl", "--spec", _mdp_file(tmp, mdp, features=features), "--demos", _demos_file(tmp, demos)]
                        + irl_flags(settings))
    return _arrays(out, ["theta", "grad_norm", "loglik", "objective", "empirical_features", "expected_features"])


def _spec_file(tmp, spec):
    if isinstance(spec, (str, os.PathLike)):
        return os.fspath(spec)
    return _write_json(tmp, "task.json", spec)


def fuse(thetas, spec, method=None, demo_counts=None, log=False):
    """Fuses clients' θ (a (K, d) array or K vectors) by any fusion-registry method on a task's probe
    (`fedirl fuse`), as the server would. spec is a task spec (path or dict: env_family, theta_dim, probe,
    fusion; the JSON of `fedirl server task create --spec`); method overrides its fusion method. Returns the
    fused θ; with log=True also the output (method, weights, marginal_error, outlier_scores, ...)."""
    ts = [np.asarray(t, dtype=np.float64).ravel() for t in thetas]
    with tempfile.TemporaryDirectory(prefix="fedirl-") as tmp:
        args = ["fuse", "--spec", _spec_file(tmp, spec)]
        if method is not None:
            args += ["--method", method]
        if demo_counts is not None:
            args += ["--demo-counts", ",".join(str(int(c)) for c in demo_counts)]
        out = _json_out(args + [_save(tmp, f"theta{i}.npy", t) for i, t in enumerate(ts)])
    out = _arrays(out, ["theta", "weights", "outlier_scores"])
    return (out["theta"], out) if log else out["theta"]


def joint_eval(spec, mdp, demos, theta, features=None, solver="newton"):
    """A client's answer to one round of a joint task (fusion method joint) at the trial theta, computed by
    `fedirl client eval`: the same learner, solver and code as the Go client (`fedirl client`), so the numbers
    are the ones it would send. Returns a dict: "value" (its MaxEnt objective, log-likelihood minus the task's
    (l2/2)||theta||^2), "grad" (d,), "hess" (d, d), and "demo_count"; with the task's update fedavg or
    fedprox "update" (theta after the task's local Newton steps) and no "hess".

    spec: the task spec (path or dict, as fuse(); get_task()["spec"] of the gRPC client); mdp and demos as for
    irl(); theta: the round's trial theta.
    """
    th = np.asarray(theta, dtype=np.float64).ravel()
    if not np.all(np.isfinite(th)):
        raise FedirlError("theta holds non-finite values")
    with tempfile.TemporaryDirectory(prefix="fedirl-") as tmp:
        out = _json_out(["client", "eval", "--spec", _spec_file(tmp, spec),
                         "--mdp", _mdp_file(tmp, mdp, features=features), "--demos", _demos_file(tmp, demos),
                         "--theta", _write_json(tmp, "theta.json", th.tolist()), "--solver", solver])
    out = _arrays(out, ["theta", "grad", "update"])
    if out.get("hess") is not None:
        d = len(out["grad"])
        out["hess"] = np.asarray(out["hess"], dtype=np.float64).reshape(d, d)
    return out


def simulate(spec, clients, solver="newton"):
    """Runs a whole federation in one process (`fedirl simulate`: the server's coordinator and K clients, each
    learning θ_i with MaxEnt IRL on its own MDP and demonstrations, fused every round by the task's method).

    spec: a task spec (path or dict; a missing quorum is K); clients: {client id: (mdp, demos)} with mdp and
    demos as for irl() (a LatticeMDP as (mdp, demos, features)). Returns a dict: "fused" (one result per round,
    "theta" a NumPy array), "clients" (each client's report) and "theta" (the last round's fused θ).
    """
    with tempfile.TemporaryDirectory(prefix="fedirl-") as tmp:
        args = ["simulate", "--spec", _spec_file(tmp, spec), "--solver", solver, "--quiet"]
        for i, (cid, c) in enumerate(clients.items()):
            m, d, *feat = c
            mf = _mdp_file(tmp, m, name=f"mdp{i}.json", features=feat[0] if feat else None)
            args += ["--client", f"{cid}={mf},{_demos_file(tmp, d, name=f'demos{i}.jsonl')}"]
        out = _json_out(args)
    for f in out["fused"]:
        _arrays(f, ["theta", "weights", "reward"])
    out["theta"] = out["fused"][-1]["theta"] if out["fused"] else None
    return out
