"""The run-folder loader on real fedirl run folders (a grid-world --quick run made here; more from
$FEDIRL_RUN_DIRS, e.g. CI's control --quick run) and on every file kind the studies write."""
import builtins
import json
import os
import subprocess
import tempfile
import unittest

import numpy as np

from fedirl import load_run
from fedirl.runs import Figure, Pickled, Table, YAMLUnavailable

import imitation_layout
import support

# The file kinds pkg/experiments and cmd/fedirl write into run folders.
KINDS = {".csv", ".tsv", ".json", ".jsonl", ".md", ".txt", ".npz", ".npy", ".yaml", ".png"}


def run_folders():
    dirs = [d for d in os.environ.get("FEDIRL_RUN_DIRS", "").split(os.pathsep) if d]
    return dirs


class RealRunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dirs = list(run_folders())
        fedirl = support.fedirl_binary()
        if fedirl:
            out = os.path.join(cls.tmp.name, "gridworld")
            p = subprocess.run([fedirl, "reproduce", "gridworld", "--quick", "--out", out], capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError(f"fedirl reproduce gridworld --quick: {p.stderr}")
            cls.dirs.append(out)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_file_loads(self):
        if not self.dirs:
            self.skipTest("no fedirl binary (set FEDIRL_BIN or put go on PATH) and no $FEDIRL_RUN_DIRS")
        for d in self.dirs:
            run = load_run(d)
            on_disk = []
            for root, _, names in os.walk(d):
                on_disk += [os.path.relpath(os.path.join(root, n), d).replace(os.sep, "/") for n in names]
            self.assertEqual(sorted(run), sorted(on_disk), d)
            for name, value in run.items():
                self.assertIn(os.path.splitext(name)[1], KINDS, f"{d}: unexpected file {name}")
                if name.endswith(".csv"):
                    self.assertIsInstance(value, Table)
                    self.assertGreater(len(value.header), 0, name)
                    for h in value.header:
                        self.assertEqual(len(value[h]), len(value), f"{name} column {h}")
                if name.endswith(".png"):
                    self.assertEqual(value.read()[:8], b"\x89PNG\r\n\x1a\n")
            if support.have("yaml"):
                self.assertIn("seed", run.config, d)
            # The views by kind cover the same files.
            self.assertEqual(len(run.tables) + len(run.json) + len(run.arrays) + len(run.figures),
                             sum(os.path.splitext(k)[1] in (".csv", ".tsv", ".json", ".npz", ".npy", ".png") for k in run))
            # Demonstrations (the control study's units) read as imitation's loader reads them.
            for name in run:
                if name.endswith(".npz") and "demos" in name:
                    trajs = imitation_layout.load_trajectories(os.path.join(d, name))
                    self.assertGreater(len(trajs), 0, name)
                    self.assertIsInstance(run[name]["infos"], Pickled)


class KindsTest(unittest.TestCase):
    def test_each_kind(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "units"))
            with open(os.path.join(d, "t.csv"), "w") as f:
                f.write("method,return\nmean,-1.5\nbarycentric,\n")
            with open(os.path.join(d, "t.tsv"), "w") as f:
                f.write("a\tb\nx\t2\n")
            with open(os.path.join(d, "t.json"), "w") as f:
                json.dump({"rows": [1, 2]}, f)
            with open(os.path.join(d, "units", "l.jsonl"), "w") as f:
                f.write('{"a": 1}\n\n{"a": 2}\n')
            with open(os.path.join(d, "summary.md"), "w") as f:
                f.write("# hi\n")
            np.savez(os.path.join(d, "units", "demos.npz"), obs=np.arange(6.0).reshape(3, 2), acts=np.arange(2),
                     infos=np.full(2, {}))
            np.save(os.path.join(d, "theta.npy"), np.array([0.5, -1.0]))
            with open(os.path.join(d, "config.yaml"), "w") as f:
                f.write("seed: 3\nirl:\n  optimizer: adam\n")
            with open(os.path.join(d, "x.png"), "wb") as f:
                f.write(b"\x89PNG\r\n\x1a\n")
            with open(os.path.join(d, "partial.json.tmp"), "w") as f:
                f.write("{")
            run = load_run(d)
            self.assertNotIn("partial.json.tmp", run)
            t = run["t.csv"]
            np.testing.assert_array_equal(t["return"][:1], [-1.5])
            self.assertTrue(np.isnan(t["return"][1]))
            self.assertEqual(list(t["method"]), ["mean", "barycentric"])
            self.assertEqual(t.records()[0], {"method": "mean", "return": "-1.5"})
            with self.assertRaisesRegex(KeyError, "no column 'x'"):
                t["x"]
            self.assertEqual(run["t.tsv"]["b"][0], 2.0)
            self.assertEqual(run["units/l.jsonl"], [{"a": 1}, {"a": 2}])
            self.assertEqual(run["summary.md"], "# hi\n")
            np.testing.assert_array_equal(run["units/demos.npz"]["obs"], np.arange(6.0).reshape(3, 2))
            self.assertEqual(list(run["units/demos.npz"]["infos"].load()), [{}, {}])  # unpickled on request only
            # The views by kind, keyed without the extension (the examples' idiom).
            self.assertIs(run.tables["t.csv"], run["t.csv"])  # t.tsv too: same stem, so extensions kept
            self.assertIs(run.tables["t.tsv"], run["t.tsv"])
            self.assertEqual(run.json["t"], {"rows": [1, 2]})
            np.testing.assert_array_equal(run.arrays["theta"], [0.5, -1.0])
            self.assertIn("units/demos", run.arrays)
            self.assertIn("x", run.figures)
            np.testing.assert_array_equal(run["theta.npy"], [0.5, -1.0])
            self.assertIsInstance(run["x.png"], Figure)
            if support.have("yaml"):
                self.assertEqual(run.config, {"seed": 3, "irl": {"optimizer": "adam"}})
            if support.have("pandas"):
                self.assertEqual(list(t.to_pandas().columns), ["method", "return"])
            else:
                with self.assertRaisesRegex(ImportError, "pandas"):
                    t.to_pandas()

            # Without PyYAML: the file still loads, as text with a clear message on use.
            real_import = builtins.__import__

            def no_yaml(name, *args, **kw):
                if name == "yaml":
                    raise ImportError("No module named 'yaml'")
                return real_import(name, *args, **kw)

            builtins.__import__ = no_yaml
            try:
                run = load_run(d)
            finally:
                builtins.__import__ = real_import
            self.assertIsInstance(run["config.yaml"], YAMLUnavailable)
            self.assertIn("seed: 3", run["config.yaml"].text)
            with self.assertRaisesRegex(ImportError, "PyYAML"):
                run.config

            # ppo train's folder has config.json, no config.yaml.
            os.remove(os.path.join(d, "config.yaml"))
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump({"env": "CartPole-v1"}, f)
            self.assertEqual(load_run(d).config, {"env": "CartPole-v1"})

            # Your own files beside the results (issue 54): a notebook loads as JSON, the rest as Other.
            with open(os.path.join(d, "weird.bin"), "w") as f:
                f.write("?")
            with open(os.path.join(d, "NOTES"), "w") as f:
                f.write("seed 3 looked odd")
            with open(os.path.join(d, "analysis.ipynb"), "w") as f:
                json.dump({"cells": [], "nbformat": 4}, f)
            run = load_run(d)
            self.assertEqual(sorted(run.others), ["NOTES", "weird.bin"])
            self.assertEqual(run["NOTES"].read(), b"seed 3 looked odd")
            self.assertEqual(run["analysis.ipynb"]["nbformat"], 4)
            # A damaged known kind is still an error.
            with open(os.path.join(d, "bad.json"), "w") as f:
                f.write("{")
            with self.assertRaisesRegex(ValueError, "bad.json"):
                load_run(d)

    def test_column_spellings_and_integer_columns(self):
        from fedirl.runs import Table
        t = Table(["grid_size", "split", "normalized-mean_mean", "normalized_mean_minus_mean", "n"],
                  [["5", "in", "97.5", "0.25", "10"], ["20", "out", "96", "-1e-3", "-3"]], "t.csv")
        self.assertEqual(t["grid_size"].dtype, np.int64)
        self.assertEqual(t["n"].tolist(), [10, -3])
        self.assertEqual(t["normalized-mean_mean"].dtype, np.float64)  # "96" beside "97.5": float
        np.testing.assert_array_equal(t["normalized_mean_mean"], [97.5, 96.0])  # either spelling
        np.testing.assert_array_equal(t["normalized-mean-minus-mean"], [0.25, -1e-3])
        self.assertTrue("normalized_mean_mean" in t and "nope" not in t)
        with self.assertRaisesRegex(KeyError, "no column 'nope'"):
            t["nope"]
        if support.have("pandas"):
            df = t.to_pandas()
            self.assertEqual(list(df.columns), ["grid_size", "split", "normalized_mean_mean", "normalized_mean_minus_mean", "n"])
            self.assertEqual(str(df.dtypes["grid_size"]), "int64")
            self.assertEqual(df.normalized_mean_mean.tolist(), [97.5, 96.0])
            self.assertEqual(list(t.to_pandas(identifiers=False).columns)[2], "normalized-mean_mean")


if __name__ == "__main__":
    unittest.main()
