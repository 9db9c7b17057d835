"""`pip install ./python` in fresh venvs, as README's Python section says, with and without build isolation:
the in-tree build backend (python/_build/backend.py, `requires = []`) builds a wheel holding the fedirl binary
with `go build`, with no setuptools, no wheel and no network. Then the installed package is used from outside
the checkout with no fedirl on PATH and no $FEDIRL_BIN: fedirl.barycenter, epic, irl, fuse and simulate, each
checked against a property or an independent path, and load_run on run folders. The checkout's python/ must be
left as it was (the build writes nothing there)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import support

PYTHON_DIR = os.path.join(support.ROOT, "python")

USE = r"""
import json, os, shutil, sys
import numpy as np
import fedirl
from fedirl import client
assert fedirl.__file__.startswith(sys.prefix), fedirl.__file__
assert shutil.which("fedirl") is None and "FEDIRL_BIN" not in os.environ
assert fedirl.binary().startswith(sys.prefix), fedirl.binary()
assert os.path.exists(os.path.join(client.DEFAULT_PROTO_DIR, "federation.proto")), client.DEFAULT_PROTO_DIR
work = sys.argv[1]

# barycenter: of two Diracs at the ends of a 1-D lattice, symmetric about its middle with equal weights;
# moved towards the heavier one with unequal weights; mass 1.
a, b = np.zeros(9), np.zeros(9)
a[0], b[8] = 1, 1
bar, log = fedirl.barycenter([a, b], eps=0.5, log=True)
assert bar.shape == (9,) and abs(bar.sum() - 1) < 1e-9 and log["converged"], (bar, log)
assert np.allclose(bar, bar[::-1], atol=1e-9), bar
skew = fedirl.barycenter(np.stack([a, b]), eps=0.5, weights=[3, 1])
assert (np.arange(9) * skew).sum() < 3.5, skew
grid = fedirl.barycenter([np.outer(a, b), np.outer(b, a)], eps=1.0)
assert grid.shape == (9, 9), grid.shape

# Two grid-world clients' files, written by the installed binary.
for i, c in enumerate(["alice", "bob"]):
    fedirl.api.run(["gridworld", "export", "--size", "5", "--client", i, "--seed", 1, "--out", os.path.join(work, c)])
mdp, demos = os.path.join(work, "alice", "mdp.json"), os.path.join(work, "alice", "demos.jsonl")
task = os.path.join(work, "alice", "task.json")

# irl: Newton's method converges; the same fit from trajectories given as Python lists.
res = fedirl.irl(mdp, demos, optimizer="newton", l2=1e-3)
assert res["converged"] and res["theta"].shape == (2,), res
trajs = [json.loads(l) for l in open(demos)]
res2 = fedirl.irl(mdp, [(t["states"], t["actions"]) for t in trajs], optimizer="newton", l2=1e-3)
assert np.array_equal(res["theta"], res2["theta"])

# epic: 0 between a reward and a positive multiple of it, 1 between it and its negation.
theta = res["theta"]
assert abs(fedirl.epic(mdp, theta, 2.5 * theta)) < 1e-9
assert abs(fedirl.epic(mdp, theta, -theta) - 1) < 1e-9
allc = fedirl.epic(mdp, theta, [-1, 0.5], coverage="all", demos=demos)
assert sorted(allc) == ["demonstrations", "model", "uniform"], allc

# simulate: a federation of both clients in one process; each local θ is what irl() learns on the client's
# files and the fused θ what fuse() makes of the local θ (the task's barycenter), and mean fusion of them is
# their arithmetic mean.
sim = fedirl.simulate(task, {c: (os.path.join(work, c, "mdp.json"), os.path.join(work, c, "demos.jsonl"))
                             for c in ["alice", "bob"]})
local = [np.asarray(r["rounds"][0]["local"]["theta"]) for r in sim["clients"]]
assert np.allclose(local[0], theta, rtol=1e-9, atol=1e-12), (local[0], theta)
fused, flog = fedirl.fuse(local, task, log=True)
assert flog["method"] == "barycenter" and np.allclose(fused, sim["theta"], rtol=1e-9, atol=1e-12), (fused, sim["theta"])
assert np.allclose(fedirl.fuse(local, task, method="mean"), (local[0] + local[1]) / 2, rtol=1e-12, atol=0)
try:
    fedirl.fuse(local, task, method="no-such-method")
    raise AssertionError("an unknown method was accepted")
except fedirl.FedirlError as e:
    assert "no-such-method" in str(e), e

for d in sys.argv[2:]:
    run = fedirl.load_run(d)
    print(d, len(run), sorted(run.tables)[:3])
print(fedirl.load_run(sys.argv[2]).tables["table1"]["success_mean"][0])
"""


def can_make_venvs():
    return subprocess.run([sys.executable, "-c", "import ensurepip, venv"], capture_output=True).returncode == 0


def tree(path):
    out = set()
    for root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d != "__pycache__"]  # bytecode of the tests' own imports
        for f in files:
            out.add(os.path.relpath(os.path.join(root, f), path))
    return out


@unittest.skipUnless(can_make_venvs(), "python3 -m venv is not available (Debian: python3-venv)")
@unittest.skipUnless(shutil.which("go") or os.path.exists("/usr/local/go/bin/go"), "no Go toolchain to build the wheel's binary")
class PipInstallTest(unittest.TestCase):
    def test_install_with_and_without_build_isolation(self):
        before = tree(PYTHON_DIR)
        with tempfile.TemporaryDirectory() as tmp:
            # PATH without any fedirl (the checkout's or an installed one), with go for the build.
            go = shutil.which("go") or "/usr/local/go/bin/go"
            path = os.pathsep.join([os.path.dirname(go), "/usr/bin", "/bin"])
            env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONPATH="", PATH=path)
            env.pop("FEDIRL_BIN", None)
            for isolation in (True, False):
                with self.subTest(build_isolation=isolation):
                    venv = os.path.join(tmp, f"venv-{isolation}")
                    # With build isolation: a venv of its own, without the system's packages (so without wheel:
                    # asserted below), numpy made importable by a .pth naming a folder that holds only it. Without
                    # build isolation: over the system's packages, as README's install line.
                    subprocess.run([sys.executable, "-m", "venv", venv] + ([] if isolation else ["--system-site-packages"]),
                                   check=True, capture_output=True)
                    py = os.path.join(venv, "bin", "python")
                    if isolation:
                        import numpy
                        only = os.path.join(tmp, "numpy-only")
                        os.makedirs(only)
                        os.symlink(os.path.dirname(numpy.__file__), os.path.join(only, "numpy"))
                        site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                              capture_output=True, text=True, check=True).stdout.strip()
                        with open(os.path.join(site, "numpy-only.pth"), "w") as f:
                            f.write(only + "\n")
                        for mod in ("wheel", "fedirl"):
                            r = subprocess.run([py, "-c", f"import {mod}"], capture_output=True, env=env, cwd=tmp)
                            self.assertNotEqual(r.returncode, 0, f"the fresh venv already has {mod}")
                    args = [py, "-m", "pip", "install", "--no-deps"] + ([] if isolation else ["--no-build-isolation"])
                    p = subprocess.run(args + [PYTHON_DIR], capture_output=True, text=True, env=env, cwd=tmp)
                    self.assertEqual(p.returncode, 0, f"pip install failed:\n{p.stdout}\n{p.stderr}")
            # A run folder of each kind the loader reads, and the real ones CI made ($FEDIRL_RUN_DIRS).
            run = os.path.join(tmp, "run")
            os.makedirs(run)
            with open(os.path.join(run, "table1.csv"), "w") as f:
                f.write("size,success_mean\n5,0.97\n")
            with open(os.path.join(run, "config.json"), "w") as f:
                f.write('{"env": "CartPole-v1"}')
            dirs = [run] + [d for d in os.environ.get("FEDIRL_RUN_DIRS", "").split(os.pathsep) if d]
            work = os.path.join(tmp, "work")
            os.makedirs(work)
            for isolation in (True, False):
                py = os.path.join(tmp, f"venv-{isolation}", "bin", "python")
                p = subprocess.run([py, "-c", USE, work if isolation else os.path.join(tmp, "w2"), *dirs],
                                   capture_output=True, text=True, env=dict(env, PATH="/usr/bin:/bin"), cwd=tmp)
                self.assertEqual(p.returncode, 0, f"installed package (build isolation {isolation}):\n{p.stdout}\n{p.stderr}")
                self.assertEqual(p.stdout.strip().splitlines()[-1], "0.97")
        self.assertEqual(tree(PYTHON_DIR) - before, set(), "the install wrote into the checkout's python/")



class BackendTest(unittest.TestCase):
    def test_pyproject_reader_without_tomllib(self):
        """The backend's own TOML reader (for Python < 3.11, without tomllib) reads pyproject.toml as tomllib
        does, so the wheel's metadata is the same on every Python."""
        try:
            import tomllib
        except ImportError:
            self.skipTest("no tomllib to compare with (Python < 3.11)")
        import builtins
        import importlib.util
        spec = importlib.util.spec_from_file_location("fedirl_backend", os.path.join(PYTHON_DIR, "_build", "backend.py"))
        backend = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(backend)
        with open(os.path.join(PYTHON_DIR, "pyproject.toml"), "rb") as f:
            want = tomllib.load(f)["project"]
        real = builtins.__import__

        def no_tomllib(name, *args, **kwargs):
            if name == "tomllib":
                raise ImportError(name)
            return real(name, *args, **kwargs)
        builtins.__import__ = no_tomllib
        try:
            got = backend._pyproject()
        finally:
            builtins.__import__ = real
        self.assertEqual(got, want)


if __name__ == "__main__":
    unittest.main()
