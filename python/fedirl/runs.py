"""Loading a fedirl run folder (`fedirl reproduce ... --out DIR`, `fedirl sweep`, the examples) into plain
Python and numpy structures: no pandas needed (Table.to_pandas() converts when pandas is installed).

Every file kind a run folder holds is read: tables (.csv, .tsv) as Table, .json as parsed JSON, .jsonl as a
list of parsed lines, .md/.txt/.log as text, .npz as a dict of arrays, .npy as an array, config.yaml
through PyYAML (a clear error when it is absent), .png figures as Figure (path and bytes on demand), a
notebook (.ipynb) as parsed JSON; any other file (NOTES, a script) as Other (path and bytes on demand), so a
folder that holds your own files beside the results still loads.

    import fedirl
    run = fedirl.load_run("runs/gridworld-seed1-n5")
    run["table1.csv"]["barycenter_mean"] # by file name: a Table, its columns as numpy arrays
    run.tables["table1"]                 # the same Table, by name without the extension
    run.json["bounds"], run.arrays["units/ab12/demos"]["obs"], run.config

Arrays pickled by NumPy (imitation's `infos`, an object array of dicts) are not unpickled while loading:
they load as Pickled, whose .load() unpickles on request (only for files you trust).
"""
import csv
import json
import os

import numpy as np


class Table:
    """A CSV table: column names, rows (lists of strings) and columns as numpy arrays (int64 when every value
    is a whole number written without a point, float64 when every value parses as a number, else str).

    fedirl's tables name a method's columns after the method (normalized-mean_mean) and paired differences
    with underscores (normalized_mean_minus_mean); a column is found under either spelling ("-" and "_" are
    the same in a name), and to_pandas() names every column with "_" only, so attribute access works."""

    def __init__(self, header, rows, path=""):
        self.header = list(header)
        self.rows = [list(r) for r in rows]
        self.path = path
        for i, r in enumerate(self.rows):
            if len(r) != len(self.header):
                raise ValueError(f"{path}: row {i + 2} has {len(r)} fields, the header {len(self.header)}")

    def _index(self, name):
        if name in self.header:
            return self.header.index(name)
        key = name.replace("-", "_")
        for k, h in enumerate(self.header):
            if h.replace("-", "_") == key:
                return k
        raise KeyError(f"{self.path}: no column {name!r} (columns: {', '.join(self.header)})")

    def column(self, name):
        vals = [r[self._index(name)] for r in self.rows]
        if vals and all(_is_int(v) for v in vals):
            return np.array([int(v) for v in vals], dtype=np.int64)
        try:
            return np.array([float(v) if v != "" else np.nan for v in vals])
        except ValueError:
            return np.array(vals, dtype=str)

    def __contains__(self, name):
        try:
            self._index(name)
            return True
        except KeyError:
            return False

    def __getitem__(self, name):
        return self.column(name)

    def __len__(self):
        return len(self.rows)

    def records(self):
        """The rows as dicts keyed by column name."""
        return [dict(zip(self.header, r)) for r in self.rows]

    def to_pandas(self, identifiers=True):
        """A pandas DataFrame of the table; with identifiers (the default) every "-" in a column name becomes
        "_" (df.normalized_mean_mean), else the names are the CSV's."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("Table.to_pandas needs pandas (Debian: python3-pandas); Table.column gives numpy arrays") from e
        return pd.DataFrame({(h.replace("-", "_") if identifiers else h): self.column(h) for h in self.header})


def _is_int(v):
    v = v[1:] if v[:1] in "+-" else v
    return v.isdigit() and v.isascii()


class Other:
    """A file of a kind the loader does not read (your notes, a script): its path, its bytes on demand."""

    def __init__(self, path):
        self.path = path

    def read(self):
        with open(self.path, "rb") as f:
            return f.read()

    def __repr__(self):
        return f"Other({self.path!r})"


class Figure:
    """A figure file; its bytes are read on demand."""

    def __init__(self, path):
        self.path = path

    def read(self):
        with open(self.path, "rb") as f:
            return f.read()


class Pickled:
    """An array of an .npz that NumPy stored pickled (dtype object); .load() unpickles it on request."""

    def __init__(self, path, key):
        self.path, self.key = path, key

    def load(self):
        with np.load(self.path, allow_pickle=True) as z:
            return z[self.key]

    def __repr__(self):
        return f"Pickled({self.path!r}, {self.key!r})"


def _load_npz(path):
    out = {}
    with np.load(path, allow_pickle=False) as z:
        for k in z.files:
            try:
                out[k] = z[k]
            except ValueError as e:
                if "allow_pickle" not in str(e):
                    raise
                out[k] = Pickled(path, k)
    return out


class YAMLUnavailable:
    """Stands for a YAML file when PyYAML is not installed: .text holds the file, any key access raises."""

    def __init__(self, path, text):
        self.path, self.text = path, text
        self.message = f"{path}: reading YAML needs PyYAML (Debian: python3-yaml, pip: pyyaml); the raw text is in .text"

    def __getitem__(self, key):
        raise ImportError(self.message)

    def __repr__(self):
        return f"YAMLUnavailable({self.message!r})"


def load_file(path):
    """One run-folder file by its extension (see the module comment)."""
    ext = os.path.splitext(path)[1].lower()
    if ext in (".csv", ".tsv"):
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f, delimiter="\t" if ext == ".tsv" else ","))
        if not rows:
            return Table([], [], path)
        return Table(rows[0], rows[1:], path)
    if ext in (".json", ".ipynb"):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    if ext == ".jsonl":
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    if ext in (".md", ".txt", ".log"):
        with open(path, encoding="utf-8") as f:
            return f.read()
    if ext == ".npz":
        return _load_npz(path)
    if ext == ".npy":
        return np.load(path, allow_pickle=False)
    if ext in (".yaml", ".yml"):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            import yaml
        except ImportError:
            return YAMLUnavailable(path, text)
        return yaml.safe_load(text)
    if ext in (".png", ".svg", ".pdf"):
        return Figure(path)
    return Other(path)


class Run(dict):
    """A run folder: a dict from path relative to the folder (with / separators) to the loaded file, with
    views by kind keyed by that path without its extension: .tables (CSV/TSV as Table), .json (parsed
    .json), .arrays (.npz as dicts, .npy as arrays), .figures, and .config (the resolved config)."""

    def __init__(self, folder, files):
        super().__init__(files)
        self.folder = folder

    def _kind(self, exts):
        names = [k for k in self if os.path.splitext(k)[1].lower() in exts]
        stems = [os.path.splitext(k)[0] for k in names]
        # Two files of one kind with the same stem (t.csv, t.tsv) keep their extensions.
        return {(stem if stems.count(stem) == 1 else k): self[k] for k, stem in zip(names, stems)}

    @property
    def tables(self):
        """CSV and TSV tables by path without extension, e.g. run.tables["table1"]["success_mean"]."""
        return self._kind((".csv", ".tsv"))

    @property
    def json(self):
        """Parsed .json files by path without extension."""
        return self._kind((".json",))

    @property
    def arrays(self):
        """.npz files (dicts of arrays) and .npy arrays by path without extension."""
        return self._kind((".npz", ".npy"))

    @property
    def figures(self):
        """.png/.svg/.pdf figures by path without extension."""
        return self._kind((".png", ".svg", ".pdf"))

    @property
    def config(self):
        """The resolved config: config.yaml (an ImportError naming PyYAML when it is absent) or config.json
        (what `ppo train` writes)."""
        c = self.get("config.yaml")
        if c is None:
            c = self.get("config.json")
        if c is None:
            raise KeyError(f"{self.folder}: no config.yaml or config.json")
        if isinstance(c, YAMLUnavailable):
            raise ImportError(c.message)
        return c

    @property
    def others(self):
        """Files of kinds the loader does not read (Other), by path."""
        return {k: v for k, v in self.items() if isinstance(v, Other)}

    def __repr__(self):
        return (f"Run({self.folder!r}: {len(self)} files; tables {sorted(self.tables)}, "
                f"json {sorted(self.json)}, arrays {len(self.arrays)}, figures {len(self.figures)})")


def load_run(folder, skip=(".tmp",)):
    """Loads every file under a run folder (recursively; partial files ending in .tmp are skipped; files of
    kinds the loader does not read are kept as Other, run.others)."""
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{folder} is not a folder")
    files = {}
    for root, _, names in os.walk(folder):
        for name in sorted(names):
            if name.endswith(tuple(skip)):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder).replace(os.sep, "/")
            try:
                files[rel] = load_file(path)
            except ValueError as e:
                where = "" if path in str(e) else f"{rel}: "
                raise ValueError(f"loading run folder {folder}: {where}{e}") from e
    return Run(folder, files)
