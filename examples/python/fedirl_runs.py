#!/usr/bin/env python3
"""Lists what a fedirl run folder holds, loaded with the fedirl package's one loader, fedirl.load_run.

    python3 examples/python/fedirl_runs.py runs/gridworld-seed1-n5

In your own code (after `pip install ./python`, see python/README.md):

    import fedirl
    run = fedirl.load_run("runs/gridworld-seed1-n5")
    run.tables["table1"]["success_mean"]   # a CSV's columns as numpy arrays; run["table1.csv"] is the same Table
    run.json["bounds"]                     # parsed JSON, by path without the extension
    run.arrays["units/ab12/demos"]["obs"]  # .npz as a dict of arrays (.npy as an array)
    run.config                             # config.yaml (needs PyYAML) or config.json

Without installing, this script finds the package in the checkout's python/ folder.
"""
import os
import sys

try:
    import fedirl
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import fedirl


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fedirl_runs.py RUN_FOLDER")
    try:
        run = fedirl.load_run(sys.argv[1])
    except (OSError, ValueError) as e:
        sys.exit(f"fedirl_runs: {e}")
    for k, t in sorted(run.tables.items()):
        print(f"table {k}: {len(t)} rows, columns {t.header}")
    for k in sorted(run.json):
        print(f"json {k}")
    for k, a in sorted(run.arrays.items()):
        shapes = {n: getattr(v, "shape", "pickled") for n, v in a.items()} if isinstance(a, dict) else a.shape
        print(f"arrays {k}: {shapes}")
    for k in sorted(run.figures):
        print(f"figure {k}")
    try:
        run.config
        print("config: loaded")
    except (KeyError, ImportError) as e:
        print(f"config: {e}")


if __name__ == "__main__":
    main()
