#!/usr/bin/env python3
"""Runs the fedirl Python package's tests and prints one count line; exits non-zero only on a failure.

  /usr/bin/python3 python/tests/run.py

Without numpy everything is skipped with a message (Debian: python3-numpy); tests that need grpcio and
grpcio-tools or the fedirl binary skip themselves. The fedirl binary is $FEDIRL_BIN, else built with `go build`
when go is on PATH. $FEDIRL_RUN_DIRS (os.pathsep-separated) names extra run folders for the loader test.
"""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("fedirl python tests: 0 passed, all skipped: numpy is not installed (Debian: python3-numpy)")
        return 0
    sys.path.insert(0, os.path.join(HERE, ".."))
    sys.path.insert(0, HERE)
    suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    res = unittest.TextTestRunner(verbosity=1 if "-q" in sys.argv else 2).run(suite)
    failed = len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
    skipped = len(res.skipped)
    passed = res.testsRun - failed - skipped
    for test, reason in res.skipped:
        print(f"skipped {test.id()}: {reason}")
    print(f"fedirl python tests: {passed} passed, {skipped} skipped, {failed} failed")
    return 1 if failed or res.testsRun == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
