"""Joint tasks (fusion method joint) answered from Python: fedirl.joint_eval (`fedirl client eval`) gives the
Go client's evaluation (value, gradient, Hessian) at a trial theta, bit for bit, checked through a real server
against what `fedirl client` sent and by finite differences; Client.run_joint answers a server's rounds, and a
federation of Python and Go clients reaches the theta of the same federation of Go clients only."""
import json
import os
import subprocess
import tempfile
import threading
import time
import unittest

import numpy as np

import support
import fedirl


def rel(a, b):
    """Largest |a - b| relative to max(|b|_inf, 1e-300)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


class JointBase(unittest.TestCase):
    def setUp(self):
        self.bin = support.fedirl_binary()
        if not self.bin:
            self.skipTest("no fedirl binary (set FEDIRL_BIN or put go on PATH)")
        self._old_bin = os.environ.get("FEDIRL_BIN")
        os.environ["FEDIRL_BIN"] = self.bin
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.procs = []
        self.clients = {}
        for k in range(3):  # three clients of the 5x5 grid world, each with its own slip
            out = os.path.join(self.dir, f"gw{k}")
            self.fedirl("gridworld", "export", "--size", "5", "--client", str(k), "--seed", "1", "--out", out)
            self.clients[k] = (os.path.join(out, "mdp.json"), os.path.join(out, "demos.jsonl"))
        with open(os.path.join(self.dir, "gw0", "task.json")) as f:
            self.base_spec = json.load(f)

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        if self._old_bin is None:
            os.environ.pop("FEDIRL_BIN", None)
        else:
            os.environ["FEDIRL_BIN"] = self._old_bin
        self.tmp.cleanup()

    def fedirl(self, *args):
        p = subprocess.run([self.bin, *args], capture_output=True, text=True)
        if p.returncode != 0:
            self.fail(f"fedirl {' '.join(args)}: {p.stderr}")
        return p

    def spec(self, task_id, **fusion):
        s = dict(self.base_spec, id=task_id, fusion=dict({"method": "joint"}, **fusion))
        s["irl"] = dict(s["irl"], temperature=0.05)  # a curved objective: a few Newton rounds
        return s


class JointEvalTest(JointBase):
    def test_finite_differences(self):
        spec, (mdp, demos) = self.spec("fd"), self.clients[1]
        theta = np.array([-0.3, 0.2])
        ev = fedirl.joint_eval(spec, mdp, demos, theta)
        d = len(theta)
        self.assertEqual(ev["grad"].shape, (d,))
        self.assertEqual(ev["hess"].shape, (d, d))
        self.assertEqual(ev["demo_count"], 20)
        np.testing.assert_allclose(ev["hess"], ev["hess"].T, rtol=0, atol=1e-9 * np.max(np.abs(ev["hess"])))
        h = 1e-5
        fd_grad, fd_hess = np.zeros(d), np.zeros((d, d))
        for j in range(d):
            e = np.zeros(d)
            e[j] = h
            hi, lo = fedirl.joint_eval(spec, mdp, demos, theta + e), fedirl.joint_eval(spec, mdp, demos, theta - e)
            fd_grad[j] = (hi["value"] - lo["value"]) / (2 * h)
            fd_hess[:, j] = (hi["grad"] - lo["grad"]) / (2 * h)
        self.assertLess(rel(ev["grad"], fd_grad), 1e-6, f"gradient {ev['grad']} vs finite differences {fd_grad}")
        self.assertLess(rel(ev["hess"], fd_hess), 1e-5, f"Hessian {ev['hess']} vs finite differences {fd_hess}")
        # Deterministic: the same theta gives the same bits (a restarted client's re-send is a duplicate).
        again = fedirl.joint_eval(spec, mdp, demos, theta)
        self.assertEqual(again["value"], ev["value"])
        np.testing.assert_array_equal(again["hess"], ev["hess"])

    def test_local_update(self):
        spec, (mdp, demos) = self.spec("fedavg", update="fedavg", local_steps=2), self.clients[0]
        ev = fedirl.joint_eval(spec, mdp, demos, [0.0, 0.0])
        self.assertNotIn("hess", ev)
        self.assertEqual(ev["update"].shape, (2,))
        newton = fedirl.joint_eval(self.spec("newton"), mdp, demos, [0.0, 0.0])
        self.assertEqual(ev["value"], newton["value"])  # the value and gradient at theta, as a Newton round's
        np.testing.assert_array_equal(ev["grad"], newton["grad"])
        self.assertGreater(np.linalg.norm(ev["update"]), 0)

    def test_refuses_one_shot_task(self):
        mdp, demos = self.clients[0]
        with self.assertRaisesRegex(fedirl.FedirlError, "not joint"):
            fedirl.joint_eval(dict(self.base_spec, fusion={"method": "mean"}), mdp, demos, [0.0, 0.0])


@unittest.skipUnless(support.have("grpc", "grpc_tools"), "grpcio and grpcio-tools are not installed "
                     "(Debian: python3-grpcio python3-grpc-tools)")
class JointFederationTest(JointBase):
    def create(self, store, spec, clients):
        path = os.path.join(self.dir, f"task-{spec['id']}.json")
        with open(path, "w") as f:
            json.dump(spec, f)
        tokens = os.path.join(self.dir, f"tokens-{spec['id']}.json")
        self.fedirl("server", "task", "create", "--store", store, "--spec", path, "--clients", ",".join(clients),
                    "--tokens-out", tokens)
        return tokens

    def start_server(self, store):
        addr_file = os.path.join(self.dir, "addr")
        if os.path.exists(addr_file):
            os.unlink(addr_file)
        p = subprocess.Popen([self.bin, "server", "--store", store, "--listen", "127.0.0.1:0", "--insecure",
                              "--addr-file", addr_file], stderr=subprocess.DEVNULL)
        self.procs.append(p)
        for _ in range(400):
            if os.path.exists(addr_file):
                with open(addr_file) as f:
                    addr = f.read().strip()
                if addr:
                    return p, addr
            time.sleep(0.025)
        self.fail("server did not start")

    def stop(self, p):
        p.terminate()
        p.wait(timeout=30)

    def go_client(self, addr, task_id, cid, tokens, k):
        mdp, demos = self.clients[k]
        out = os.path.join(self.dir, f"{task_id}-{cid}.json")
        p = subprocess.Popen([self.bin, "client", "--server", addr, "--insecure", "--task", task_id, "--id", cid,
                              "--token-file", tokens, "--mdp", mdp, "--demos", demos, "--out", out, "--quiet"],
                             stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p, out

    def wait_go(self, p):
        _, err = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 0, err)

    def py_clients(self, addr, task_id, tokens, ids):
        """Runs run_joint for {client id: gridworld client k} in threads; returns {id: report}."""
        from fedirl import client as fc
        reports, errors = {}, []

        def run(cid, k):
            c = fc.Client(addr, cid, fc.read_token(tokens, cid), insecure=True)
            try:
                reports[cid] = c.run_joint(task_id, *self.clients[k], timeout=120)
            except Exception as e:  # noqa: BLE001  (reported by the test thread)
                errors.append(f"{cid}: {e!r}")
            finally:
                c.close()
        threads = [threading.Thread(target=run, args=(cid, k)) for cid, k in ids.items()]
        for t in threads:
            t.start()
        return threads, reports, errors

    def fused_rounds(self, store, task_id):
        p = self.fedirl("server", "status", "--store", store, "--task", task_id)
        return json.loads(p.stdout)["tasks"][0]["fused"]

    def test_eval_equals_go_clients(self):
        """A one-client joint task answered by `fedirl client`: each round's summed evaluation (weight 1, the
        Go client's own, stored by the server) at the iterate equals joint_eval there, bit for bit."""
        store = os.path.join(self.dir, "one.db")
        tokens = self.create(store, self.spec("one"), ["go"])
        srv, addr = self.start_server(store)
        self.wait_go(self.go_client(addr, "one", "go", tokens, 2)[0])
        self.stop(srv)
        mdp, demos = self.clients[2]
        worst, checked = 0.0, 0
        for fr in self.fused_rounds(store, "one"):
            st = fr["joint"].get("state") or {}
            if not st.get("have"):
                continue
            base = st["base"]
            ev = fedirl.joint_eval(self.spec("one"), mdp, demos, st["theta"])
            for got, want in ((ev["value"], base["value"]), (ev["grad"], base["grad"]),
                              (ev["hess"].ravel(), base["hess"])):
                worst = max(worst, rel(got, want))
            checked += 1
        self.assertGreater(checked, 2)
        print(f"\njoint_eval vs the Go client's evaluations: {checked} rounds, max relative difference {worst:.3g}")
        self.assertLess(worst, 1e-10)

    def test_python_and_go_clients_reach_go_only_theta(self):
        """Two Python clients and a Go client answer a joint task; the same task with three Go clients is the
        reference: the fused theta agree to 1e-8 relative, and both satisfy the pooled optimality condition
        (the summed gradient's norm below the task's tolerance). Newton rounds and FedAvg local updates."""
        for name, fusion in (("newton", {}), ("fedavg", {"update": "fedavg", "local_steps": 2, "max_rounds": 8})):
            with self.subTest(update=name):
                store = os.path.join(self.dir, f"{name}.db")
                mixed_spec, go_spec = self.spec(f"mixed-{name}", **fusion), self.spec(f"go-{name}", **fusion)
                tm = self.create(store, mixed_spec, ["py0", "py1", "go2"])
                tg = self.create(store, go_spec, ["go0", "go1", "go2"])
                srv, addr = self.start_server(store)
                threads, reports, errors = self.py_clients(addr, mixed_spec["id"], tm, {"py0": 0, "py1": 1})
                g, _ = self.go_client(addr, mixed_spec["id"], "go2", tm, 2)
                gos = [self.go_client(addr, go_spec["id"], f"go{k}", tg, k) for k in range(3)]
                self.wait_go(g)
                for t in threads:
                    t.join(timeout=300)
                for p, _ in gos:
                    self.wait_go(p)
                self.assertEqual(errors, [])
                with open(gos[0][1]) as f:
                    go_final = json.load(f)["final"]
                final = reports["py0"]["final"]
                self.assertEqual(final["theta"], reports["py1"]["final"]["theta"])
                self.assertEqual(final["joint"]["done"], True)
                if name == "newton":
                    self.assertEqual(final["joint"]["reason"], "converged")
                r = rel(final["theta"], go_final["theta"])
                print(f"\n{name}: Python+Go theta {final['theta']} vs Go-only {go_final['theta']}: relative "
                      f"difference {r:.3g} after {final['joint']['rounds']} rounds")
                self.assertLess(r, 1e-8)
                self.assertEqual(final["joint"]["rounds"], go_final["joint"]["rounds"])
                self.assertGreater(len(reports["py0"]["rounds"]), 1)
                self.stop(srv)

    def test_refuses_private_task(self):
        from fedirl import client as fc
        store = os.path.join(self.dir, "dp.db")
        spec = dict(self.spec("dp"), privacy={"max_epsilon": 8, "max_delta": 1e-5, "clip": 10})
        tokens = self.create(store, spec, ["py0"])
        srv, addr = self.start_server(store)
        c = fc.Client(addr, "py0", fc.read_token(tokens, "py0"), insecure=True)
        try:
            with self.assertRaisesRegex(fedirl.FedirlError, "requires differential privacy"):
                c.run_joint("dp", *self.clients[0])
            one_shot = c.get_task("dp")
            self.assertTrue(one_shot["joint"])
        finally:
            c.close()
        self.stop(srv)


if __name__ == "__main__":
    unittest.main()
