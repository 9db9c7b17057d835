"""`pip install ./python` in a fresh venv over the system's numpy, as README's Python section says, then the
installed package used from outside the checkout: import, load_run on run folders, the proto file the client
needs. The checkout's python/ is copied first so that the build leaves nothing in it."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import support

PYTHON_DIR = os.path.join(support.ROOT, "python")


def can_make_venvs():
    return subprocess.run([sys.executable, "-c", "import ensurepip, venv"], capture_output=True).returncode == 0


@unittest.skipUnless(can_make_venvs(), "python3 -m venv is not available (Debian: python3-venv)")
class PipInstallTest(unittest.TestCase):
    def test_install_and_load_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "src")
            shutil.copytree(PYTHON_DIR, src, ignore=shutil.ignore_patterns("__pycache__", "tests", "build", "*.egg-info"))
            venv = os.path.join(tmp, "venv")
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True,
                           capture_output=True)
            py = os.path.join(venv, "bin", "python")
            env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONPATH="")
            p = subprocess.run([py, "-m", "pip", "install", "--no-deps", "--no-build-isolation", src],
                               capture_output=True, text=True, env=env, cwd=tmp)
            self.assertEqual(p.returncode, 0, f"pip install failed:\n{p.stdout}\n{p.stderr}")
            # A run folder of each kind the loader reads, and the real ones CI made ($FEDIRL_RUN_DIRS).
            run = os.path.join(tmp, "run")
            os.makedirs(run)
            with open(os.path.join(run, "table1.csv"), "w") as f:
                f.write("size,success_mean\n5,0.97\n")
            with open(os.path.join(run, "config.json"), "w") as f:
                f.write('{"env": "CartPole-v1"}')
            dirs = [run] + [d for d in os.environ.get("FEDIRL_RUN_DIRS", "").split(os.pathsep) if d]
            script = """import os, sys, fedirl
from fedirl import client
assert fedirl.__file__.startswith(sys.prefix), fedirl.__file__
assert os.path.exists(os.path.join(client.DEFAULT_PROTO_DIR, "federation.proto")), client.DEFAULT_PROTO_DIR
for d in sys.argv[1:]:
    run = fedirl.load_run(d)
    print(d, len(run), sorted(run.tables)[:3])
print(fedirl.load_run(sys.argv[1]).tables["table1"]["success_mean"][0])
"""
            p = subprocess.run([py, "-c", script, *dirs], capture_output=True, text=True, env=env, cwd=tmp)
            self.assertEqual(p.returncode, 0, f"installed package:\n{p.stdout}\n{p.stderr}")
            self.assertEqual(p.stdout.strip().splitlines()[-1], "0.97")


if __name__ == "__main__":
    unittest.main()
