"""The Python client against a real `fedirl server` with lattice tasks created by `fedirl server task create
--spec`: Phi through the task (RBF spec, and an explicit Phi given as phi_file), local learning with
`fedirl irl` and the task's irl settings, submission and the fused theta."""
import json
import os
import subprocess
import tempfile
import time
import unittest

import numpy as np

import support
from fedirl import Axis, LatticeTask, sample_mdp, uniform_rbf, write_demos_jsonl
from test_model import Line


@unittest.skipUnless(support.have("grpc", "grpc_tools"), "grpcio and grpcio-tools are not installed "
                     "(Debian: python3-grpcio python3-grpc-tools)")
class FederationTest(unittest.TestCase):
    def setUp(self):
        self.bin = support.fedirl_binary()
        if not self.bin:
            self.skipTest("no fedirl binary (set FEDIRL_BIN or put go on PATH)")
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.server = None

    def tearDown(self):
        if self.server:
            self.server.kill()
            self.server.wait()
        self.tmp.cleanup()

    def fedirl(self, *args):
        p = subprocess.run([self.bin, *args], capture_output=True, text=True)
        if p.returncode != 0:
            self.fail(f"fedirl {' '.join(args)}: {p.stderr}")
        return p

    def start_server(self, store, *extra):
        addr_file = os.path.join(self.dir, "addr")
        self.server = subprocess.Popen([self.bin, "server", "--store", store, "--listen", "127.0.0.1:0", "--insecure",
                                        "--addr-file", addr_file, *extra], stderr=subprocess.DEVNULL)
        for _ in range(400):
            if os.path.exists(addr_file) and open(addr_file).read().strip():
                return open(addr_file).read().strip()
            time.sleep(0.025)
        self.fail("server did not start")

    def test_learn_submit_fuse(self):
        from fedirl import client as fc
        task = LatticeTask([Axis.uniform(5, 0, 4, "x")], [Axis.categorical_axis(3, "a")],
                           rbf=uniform_rbf([("x", 2, 0, 4), ("a", "categorical", [0, 1, 2])]))
        phi_file = os.path.join(self.dir, "phi.npy")
        rng = np.random.default_rng(5)
        explicit = rng.normal(size=(15, 4))
        np.save(phi_file, explicit)
        store = os.path.join(self.dir, "fed.db")
        specs = {
            "rbf": {"id": "line", "env_family": "lattice", "probe": task.probe(), "theta_dim": task.dim,
                    "irl": {"max_iter": 150, "learning_rate": 0.05, "optimizer": "adam"}, "fusion": {"method": "mean"},
                    "quorum": 2},
            "file": {"id": "explicit", "env_family": "lattice", "theta_dim": 4, "quorum": 2,
                     "probe": {"state": task.probe()["state"], "action": task.probe()["action"], "phi_file": "phi.npy"}},
        }
        for name, spec in specs.items():
            path = os.path.join(self.dir, f"task-{name}.json")
            with open(path, "w") as f:
                json.dump(spec, f)
            self.fedirl("server", "task", "create", "--store", store, "--spec", path, "--clients", "py1,py2",
                        "--tokens-out", os.path.join(self.dir, f"tokens-{name}.json"))
        addr = self.start_server(store)
        tok = lambda name, c: fc.read_token(os.path.join(self.dir, f"tokens-{name}.json"), c)  # noqa: E731
        c1 = fc.Client(addr, "py1", tok("rbf", "py1"), insecure=True)
        c2 = fc.Client(addr, "py2", tok("rbf", "py2"), insecure=True)

        # The explicit Phi reaches the clients bit for bit (phi_file inlined as phi_npy by task create).
        e = fc.Client(addr, "py1", tok("file", "py1"), insecure=True)
        got = LatticeTask.from_probe(e.get_task("explicit")["spec"]["probe"])
        np.testing.assert_array_equal(got.phi(), explicit)
        e.close()

        info = c1.get_task("line")
        t = LatticeTask.from_probe(info["spec"]["probe"])
        np.testing.assert_array_equal(t.phi(), task.phi())
        sim = Line(1.0)
        mdp = sample_mdp(sim, t, gamma=0.9)
        q = mdp.value_iteration(-np.ones((5, 3)))
        trajs = []
        for s0 in range(4):
            states, acts = [s0], []
            while states[-1] != 5:
                a = int(np.argmax(q[states[-1]]))
                acts.append(a)
                states.append(5 if states[-1] + a - 1 >= 4 else max(states[-1] + a - 1, 0))
            trajs.append((states, acts))
        spec_path, demos_path = os.path.join(self.dir, "mdp.json"), os.path.join(self.dir, "demos.jsonl")
        mdp.write_spec(spec_path, mdp.features(t))
        write_demos_jsonl(demos_path, trajs)
        res = fc.run_irl(spec_path, demos_path, irl=info["spec"]["irl"], fedirl=self.bin)
        self.assertTrue(1 <= res["iterations"] <= 150, res["iterations"])  # the task's max_iter bounds it
        theta1 = np.array(res["theta"])
        # The learned reward teaches the demonstrated behaviour: move right everywhere.
        ql = mdp.value_iteration(t.reward(theta1))
        self.assertEqual([int(np.argmax(ql[s])) for s in range(4)], [2, 2, 2, 2])

        theta2 = np.linspace(-1, 1, t.dim)
        r1, _ = c1.submit("line", theta1, demo_count=len(trajs), iterations=res["iterations"])
        r2, _ = c2.submit("line", theta2, demo_count=3)
        self.assertEqual((r1, r2), (1, 1))
        f1, f2 = c1.fetch_fused("line", 1, timeout=30), c2.fetch_fused("line", 1, timeout=30)
        self.assertEqual(f1["theta"], f2["theta"])
        self.assertEqual(f1["method"], "mean")
        np.testing.assert_allclose(f1["theta"], (theta1 + theta2) / 2, rtol=1e-15, atol=1e-15)
        with self.assertRaisesRegex(fc.FedirlError, "theta_dim 7"):
            c1.submit("line", np.ones(3))
        c1.close()
        c2.close()

    def test_submit_reward_fuses_with_theta(self):
        """A client submits the values of its own reward model (a callable on the probe points) instead of
        theta: the mean task fuses (Phi theta_1 + r_2)/2 on the points and fits theta by least squares; a
        median task refuses the reward, naming the methods that take one."""
        import grpc
        from fedirl import client as fc
        task = LatticeTask([Axis.uniform(5, 0, 4, "x")], [Axis.categorical_axis(3, "a")],
                           rbf=uniform_rbf([("x", 2, 0, 4), ("a", "categorical", [0, 1, 2])]))
        store = os.path.join(self.dir, "fed.db")
        for method in ("mean", "median"):
            path = os.path.join(self.dir, f"task-{method}.json")
            with open(path, "w") as f:
                json.dump({"id": f"r-{method}", "env_family": "lattice", "probe": task.probe(), "theta_dim": task.dim,
                           "fusion": {"method": method}, "quorum": 2}, f)
            self.fedirl("server", "task", "create", "--store", store, "--spec", path, "--clients", "py1,py2",
                        "--tokens-out", os.path.join(self.dir, f"tokens-{method}.json"))
        addr = self.start_server(store)
        tok = lambda m, c: fc.read_token(os.path.join(self.dir, f"tokens-{m}.json"), c)  # noqa: E731
        c1 = fc.Client(addr, "py1", tok("mean", "py1"), insecure=True)
        c2 = fc.Client(addr, "py2", tok("mean", "py2"), insecure=True)
        spec = c2.get_task("r-mean")["spec"]
        points = fc.probe_points(spec)
        np.testing.assert_array_equal(points, task.pair_points())
        self.assertEqual(points.shape, (15, 2))
        model = lambda pts: np.sin(pts[:, 0]) + 0.5 * pts[:, 1]  # noqa: E731  any model of the point coordinates
        with self.assertRaisesRegex(fc.FedirlError, "14 values, task r-mean's probe has 15 points"):
            c2.submit_reward("r-mean", np.zeros(14))
        with self.assertRaisesRegex(fc.FedirlError, r"reward\[3\] = nan"):
            c2.submit_reward("r-mean", np.where(np.arange(15) == 3, np.nan, 0.0))
        theta1 = np.linspace(-1, 1, task.dim)
        c1.submit("r-mean", theta1)
        rnd, msg = c2.submit_reward("r-mean", model)
        self.assertEqual(rnd, 1)
        self.assertIn("accepted 2/2", msg)
        f1, f2 = c1.fetch_fused("r-mean", 1, timeout=30), c2.fetch_fused("r-mean", 1, timeout=30)
        self.assertEqual(f1, f2)
        want = (task.phi() @ theta1 + model(points)) / 2
        np.testing.assert_allclose(f1["reward"], want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(f1["theta"], np.linalg.lstsq(task.phi(), want, rcond=None)[0], rtol=1e-9, atol=1e-9)
        self.assertEqual(f1["reward_clients"], ["py2"])
        m = fc.Client(addr, "py1", tok("median", "py1"), insecure=True)
        with self.assertRaises(grpc.RpcError) as e:
            m.submit_reward("r-median", model)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn('fusion method "median"', e.exception.details())
        self.assertIn("normalized-mean", e.exception.details())
        for c in (c1, c2, m):
            c.close()

    def test_tls_against_plaintext_server_names_the_fix(self):
        from fedirl import client as fc
        addr = self.start_server(os.path.join(self.dir, "fed.db"), "--init")
        c = fc.Client(addr, "c0", "no-token")  # TLS by default; the server is plaintext
        start = time.monotonic()
        with self.assertRaisesRegex(fc.FedirlError, "insecure=True"):
            c.get_task("t")
        # At once: a handshake, not the call's 30 s deadline (5 s bounds it on an idle machine; 15 s leaves
        # room for a loaded CI runner).
        self.assertLess(time.monotonic() - start, 15)
        c.close()
        # The Go client: the same mistake fails at once, naming --insecure.
        p = subprocess.run([self.bin, "server", "status", "--server", addr, "--admin-token-file", self.admin_file()],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--insecure", p.stderr)
        self.assertIn("plaintext", p.stderr)

    def admin_file(self):
        path = os.path.join(self.dir, "admin-token")
        with open(path, "w") as f:
            f.write("not-a-real-token\n")
        return path

    def test_refusals(self):
        from fedirl import client as fc
        pts = fc.probe_points({"env_family": "gridworld", "probe": {"size": 3}})
        self.assertEqual(pts.shape, (36, 3))
        np.testing.assert_array_equal(pts[(1 * 3 + 2) * 4 + 3], [1, 2, 3])  # cell (row 1, col 2), action 3
        with self.assertRaisesRegex(fc.FedirlError, "family 'control'"):
            fc.probe_points({"id": "c", "env_family": "control", "probe": {}})
        with self.assertRaisesRegex(fc.FedirlError, "loopback"):
            fc.Client("10.1.2.3:7443", "x", "t", insecure=True)
        with self.assertRaisesRegex(fc.FedirlError, "irl.beta1 = 0.5"):
            fc.irl_flags({"beta1": 0.5})
        self.assertEqual(fc.irl_flags({"learning_rate": 0.05, "max_iter": 0, "init_from_mdp": True}),
                         ["--init-from-mdp", "--lr", "0.05"])


if __name__ == "__main__":
    unittest.main()
