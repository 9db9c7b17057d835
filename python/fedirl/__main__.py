"""`python -m fedirl ARGS...` runs the fedirl command line built into the package (fedirl.binary())."""
import os
import subprocess
import sys

from .api import FedirlError, binary


def main():
    try:
        exe = binary()
    except FedirlError as e:
        print(f"python -m fedirl: {e}", file=sys.stderr)
        return 1
    if os.name != "nt":
        os.execv(exe, [exe] + sys.argv[1:])
    return subprocess.call([exe] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
