#!/usr/bin/env python3
"""Load a fedirl run folder's tables, JSON files and arrays into Python.

Every fedirl run folder (reproduce gridworld / control, sweep, ppo train /
study, gridworld export) holds its tables as CSV (with .md and .json twins),
other results as JSON, demonstrations and arrays as .npz / .npy, and its
resolved config as config.yaml or config.json. load() reads them all:

    import fedirl_runs
    run = fedirl_runs.load("runs/gridworld-seed1-n5")
    run.tables["table1"]        # pandas.DataFrame, or a numpy structured array without pandas
    run.json["bounds"]          # the parsed JSON
    run.arrays["units/ab12/demos"]["obs"]   # numpy arrays of a .npz (or the array of a .npy)
    run.config                  # config.yaml (needs PyYAML) or config.json, as a dict

Keys are paths relative to the folder without the extension. An empty CSV
field (e.g. an evaluation that did not run at that step) becomes NaN. Needs
numpy; pandas and PyYAML are used when installed (Debian: python3-numpy,
python3-pandas, python3-yaml).

    python3 examples/python/fedirl_runs.py runs/gridworld-seed1-n5   # lists what it loaded
"""
import json
import os
import sys

import numpy as np

try:
    import pandas as pd
except ImportError:  # pandas is optional
    pd = None


class Run:
    """The contents of one run folder."""

    def __init__(self, path):
        self.path = path
        self.tables = {}
        self.json = {}
        self.arrays = {}
        self.config = None

    def __repr__(self):
        return (f"Run({self.path!r}: tables {sorted(self.tables)}, json {sorted(self.json)}, "
                f"arrays {len(self.arrays)}, config {'yes' if self.config is not None else 'no'})")


def read_csv(path):
    """A CSV table as a pandas.DataFrame, or as a numpy structured array
    (one named field per column, numbers as float or int, text as str)."""
    if pd is not None:
        return pd.read_csv(path)
    with open(path, encoding="utf-8") as f:
        if not f.readline().strip():
            return np.zeros(0)
    return np.atleast_1d(np.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding="utf-8",
                                       missing_values="", filling_values=np.nan, deletechars="", autostrip=True))


def load(path):
    """Reads every .csv, .json, .npz and .npy below path, and its config."""
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{path}: not a run folder")
    run = Run(path)
    for root, _, files in os.walk(path):
        for name in sorted(files):
            full = os.path.join(root, name)
            key, ext = os.path.splitext(os.path.relpath(full, path))
            key = key.replace(os.sep, "/")
            try:
                if ext == ".csv":
                    run.tables[key] = read_csv(full)
                elif ext == ".json":
                    with open(full, encoding="utf-8") as f:
                        run.json[key] = json.load(f)
                elif ext == ".npz":
                    with np.load(full, allow_pickle=False) as z:
                        run.arrays[key] = {k: z[k] for k in z.files}
                elif ext == ".npy":
                    run.arrays[key] = np.load(full, allow_pickle=False)
            except (OSError, ValueError) as e:
                raise ValueError(f"{full}: {e}") from e
    if "config" in run.json:
        run.config = run.json["config"]
    cfg = os.path.join(path, "config.yaml")
    if os.path.exists(cfg):
        try:
            import yaml
        except ImportError:
            yaml = None
        if yaml is not None:
            with open(cfg, encoding="utf-8") as f:
                run.config = yaml.safe_load(f)
    return run


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fedirl_runs.py RUN_FOLDER")
    try:
        run = load(sys.argv[1])
    except (OSError, ValueError) as e:
        sys.exit(f"fedirl_runs: {e}")
    for k, t in sorted(run.tables.items()):
        print(f"table {k}: {len(t)} rows, columns {list(t.columns) if pd is not None else list(t.dtype.names or [])}")
    for k in sorted(run.json):
        print(f"json {k}")
    for k, a in sorted(run.arrays.items()):
        shapes = {n: v.shape for n, v in a.items()} if isinstance(a, dict) else a.shape
        print(f"arrays {k}: {shapes}")
    print("config:", "loaded" if run.config is not None else "none")


if __name__ == "__main__":
    main()
