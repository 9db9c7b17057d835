"""Loading a fedirl run folder (`fedirl reproduce ... --out DIR`, `fedirl sweep`, the examples) into plain
Python and numpy structures: no pandas needed (Table.to_pandas() converts when pandas is installed).

Every file kind a run folder holds is read: tables (.csv, .tsv) as Table, .json as parsed JSON, .jsonl as a
list of parsed lines, .md/.txt/.log as text, .npz as a dict of arrays, .npy as an array, config.yaml
through PyYAML (a clear error when it is absent), .png figures as Figure (path and bytes on demand).
"""
import csv
import json
import os

import numpy as np


class Table:
    """A CSV table: column names, rows (lists of strings) and columns as numpy arrays (float when every
    value parses as a number, else str)."""

    def __init__(self, header, rows, path=""):
        self.header = list(header)
        self.rows = [list(r) for r in rows]
        self.path = path
        for i, r in enumerate(self.rows):
            if len(r) != len(self.header):
                raise ValueError(f"{path}: row {i + 2} has {len(r)} fields, the header {len(self.header)}")

    def column(self, name):
        if name not in self.header:
            raise KeyError(f"{self.path}: no column {name!r} (columns: {', '.join(self.header)})")
        k = self.header.index(name)
        vals = [r[k] for r in self.rows]
        try:
            return np.array([float(v) if v != "" else np.nan for v in vals])
        except ValueError:
            return np.array(vals, dtype=str)

    def __getitem__(self, name):
        return self.column(name)

    def __len__(self):
        return len(self.rows)

    def records(self):
        """The rows as dicts keyed by column name."""
        return [dict(zip(self.header, r)) for r in self.rows]

    def to_pandas(self):
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("Table.to_pandas needs pandas (Debian: python3-pandas); Table.column gives numpy arrays") from e
        return pd.DataFrame({h: self.column(h) for h in self.header})


class Figure:
    """A figure file; its bytes are read on demand."""

    def __init__(self, path):
        self.path = path

    def read(self):
        with open(self.path, "rb") as f:
            return f.read()


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
    if ext == ".json":
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    if ext == ".jsonl":
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    if ext in (".md", ".txt", ".log"):
        with open(path, encoding="utf-8") as f:
            return f.read()
    if ext == ".npz":
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
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
    raise ValueError(f"{path}: unknown run-folder file kind {ext!r}")


class Run(dict):
    """A run folder: a dict from path relative to the folder (with / separators) to the loaded file."""

    def __init__(self, folder, files):
        super().__init__(files)
        self.folder = folder

    @property
    def config(self):
        """The resolved config (config.yaml), or an ImportError naming PyYAML when it is absent."""
        c = self.get("config.yaml")
        if c is None:
            raise KeyError(f"{self.folder}: no config.yaml")
        if isinstance(c, YAMLUnavailable):
            raise ImportError(c.message)
        return c

    def tables(self):
        return {k: v for k, v in self.items() if isinstance(v, Table)}


def load_run(folder, skip=(".tmp",)):
    """Loads every file under a run folder (recursively; partial files ending in .tmp are skipped)."""
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
                raise ValueError(f"loading run folder {folder}: {e}") from e
    return Run(folder, files)
