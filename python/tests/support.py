"""Shared helpers of the fedirl Python tests: the fedirl binary and optional modules."""
import atexit
import os
import shutil
import subprocess
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
_bin = None


def fedirl_binary():
    """$FEDIRL_BIN, or a binary built once from this checkout, or None (the caller skips)."""
    global _bin
    if _bin is not None:
        return _bin or None
    _bin = os.environ.get("FEDIRL_BIN", "")
    if not _bin and shutil.which("go"):
        tmp = tempfile.mkdtemp(prefix="fedirl-pytest-")
        atexit.register(shutil.rmtree, tmp, True)  # CI leaves no temporary folders behind
        out = os.path.join(tmp, "fedirl")
        p = subprocess.run(["go", "build", "-o", out, "./cmd/fedirl"], cwd=ROOT, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"go build ./cmd/fedirl failed:\n{p.stderr}")
        _bin = out
    return _bin or None


def have(*modules):
    """Whether every module imports."""
    try:
        for m in modules:
            __import__(m)
    except ImportError:
        return False
    return True
