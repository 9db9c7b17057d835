"""The lattice and Phi of a lattice task against closed forms and properties (the Go implementation is the
other side of pkg/tasks' TestPythonLatticeMatchesGo)."""
import base64
import io
import math
import unittest

import numpy as np

import fedirl
from fedirl.lattice import Axis, Lattice, LatticeTask, check_client_features, rbf_matrix, uniform_rbf


class AxisTest(unittest.TestCase):
    def test_kinds(self):
        np.testing.assert_array_equal(Axis.uniform(5, 0, 4).coords, [0, 1, 2, 3, 4])
        np.testing.assert_array_equal(Axis.uniform(1, 0, 4).coords, [2])
        p = Axis.periodic(4, -math.pi, math.pi)
        np.testing.assert_allclose(p.coords, [-math.pi, -math.pi / 2, 0, math.pi / 2], atol=1e-15)
        self.assertEqual(p.period, 2 * math.pi)
        c = Axis.from_json({"n": 3, "categorical": True, "name": "a"})
        self.assertTrue(c.categorical)
        self.assertEqual(c.to_json(), {"n": 3, "categorical": True, "name": "a"})
        e = Axis.from_json({"coords": [0, 0.5, 2], "weight": 4})
        self.assertEqual(e.to_json(), {"coords": [0.0, 0.5, 2.0], "weight": 4})

    def test_bad_axes_name_the_problem(self):
        for spec, msg in [({"n": 3, "lo": 1, "hi": 1}, "lo < hi"), ({"coords": [0, 1, 1]}, "strictly increasing"),
                          ({"n": 0, "categorical": True}, "n >= 1"), ({"n": 2, "lo": 0, "hi": 1, "step": 1}, "unknown keys"),
                          ({"coords": [0, 1], "n": 2}, "takes no n"), ({"n": 2, "lo": 0, "hi": 1, "weight": 0}, "weight 0.0 must be")]:
            with self.assertRaisesRegex(ValueError, msg):
                Axis.from_json(spec)

    def test_interp_reproduces_linear_functions(self):
        lat = Lattice([Axis.uniform(5, -1, 1), Axis.explicit([0, 0.1, 0.5, 2]), Axis.periodic(6, 0, 6)])
        pts = lat.points()
        f = pts @ np.array([0.3, -2.0, 0.0]) + 1.5  # linear in the open axes
        rng = np.random.default_rng(1)
        for _ in range(50):
            x = np.array([rng.uniform(-1, 1), rng.uniform(0, 2), rng.uniform(0, 6)])
            idx, w = lat.interp(x)
            self.assertAlmostEqual(sum(w), 1.0, places=14)
            self.assertAlmostEqual(float(np.dot(w, f[idx])), 0.3 * x[0] - 2 * x[1] + 1.5, places=12)

    def test_periodic_wrap_and_clamp(self):
        a = Axis.periodic(4, 0, 4)  # points 0, 1, 2, 3; 3.5 lies between 3 and 0 (= 4)
        self.assertEqual(a.locate(3.5), ((3, 0), (0.5, 0.5)))
        self.assertEqual(a.locate(-0.25), a.locate(3.75))
        self.assertEqual(a.nearest(3.9), 0)
        u = Axis.uniform(3, 0, 2)
        self.assertEqual(u.locate(-5), ((0, 0), (1.0, 0.0)))
        self.assertEqual(u.locate(7), ((2, 2), (1.0, 0.0)))

    def test_snap_and_numbering(self):
        lat = Lattice([Axis.uniform(3, 0, 2), Axis.uniform(4, 0, 3)])
        self.assertEqual(lat.snap([1.1, 2.6]), 1 * 4 + 3)
        np.testing.assert_array_equal(lat.point(7), [1, 3])
        np.testing.assert_array_equal(lat.points()[7], [1, 3])


class RBFTest(unittest.TestCase):
    def test_closed_form_and_layout(self):
        rbf = {"axes": [{"centres": [0.0, 1.0], "bandwidth": 0.5}, {"centres": [0, 1, 2], "categorical": True}],
               "bias": True}
        x = np.array([[0.3, 2.2], [0.9, -1]])
        phi = rbf_matrix(rbf, x)
        self.assertEqual(phi.shape, (2, 7))
        for i, (p, a) in enumerate(x):
            cat = int(np.argmin(np.abs(np.array([0, 1, 2]) - a)))
            for j in range(2):
                for k in range(3):
                    want = math.exp(-0.5 * ((p - j) / 0.5) ** 2) * (1.0 if k == cat else 0.0)
                    self.assertAlmostEqual(phi[i, j * 3 + k], want, places=15)
            self.assertEqual(phi[i, 6], 1.0)

    def test_periodic_distance_wraps(self):
        rbf = {"axes": [{"centres": [0.1], "bandwidth": 1.0, "period": 2 * math.pi}], "bias": False}
        a = rbf_matrix(rbf, [[0.1 + 0.3]])[0, 0]
        b = rbf_matrix(rbf, [[0.1 + 0.3 + 4 * math.pi]])[0, 0]
        c = rbf_matrix(rbf, [[0.1 - 0.3 + 2 * math.pi]])[0, 0]
        self.assertAlmostEqual(a, math.exp(-0.5 * 0.09), places=12)
        self.assertAlmostEqual(a, b, places=12)
        self.assertAlmostEqual(a, c, places=12)

    def test_uniform_rbf_matches_go_definition(self):
        spec = uniform_rbf([("x", 4, -2.0, 2.0), ("a", "categorical", [0, 1])])
        self.assertEqual(spec["axes"][0]["centres"], [-1.5, -0.5, 0.5, 1.5])
        self.assertEqual(spec["axes"][0]["bandwidth"], 1.0)
        self.assertTrue(spec["bias"])


class TaskTest(unittest.TestCase):
    def task(self):
        return LatticeTask([Axis.uniform(4, 0, 3, "x"), Axis.periodic(3, 0, 3, "angle")], [Axis.categorical_axis(2, "a")],
                           rbf=uniform_rbf([("x", 2, 0, 3), ("angle", 2, 0, 3, 3.0), ("a", "categorical", [0, 1])]))

    def test_probe_round_trip(self):
        t = self.task()
        t2 = LatticeTask.from_probe(t.probe())
        np.testing.assert_array_equal(t.phi(), t2.phi())
        self.assertEqual((t.num_states, t.num_actions, t.num_pairs, t.dim), (12, 2, 24, 9))
        # An explicit Phi travels as .npy bytes (bit-exact) or inline rows.
        e = LatticeTask(t.state.axes, t.action.axes, phi=t.phi())
        for how in ("npy", "rows"):
            p = e.probe(inline_phi=how)
            np.testing.assert_array_equal(LatticeTask.from_probe(p).phi(), t.phi())
        raw = base64.b64decode(e.probe()["phi_npy"])
        self.assertEqual(np.load(io.BytesIO(raw)).dtype, np.dtype("<f8"))

    def test_pairs_are_state_major(self):
        t = self.task()
        pp = t.pair_points()
        self.assertEqual(pp.shape, (24, 3))
        np.testing.assert_array_equal(pp[2 * 5 + 1], np.r_[t.state.point(5), 1])

    def test_reward_shape_and_errors(self):
        t = self.task()
        r = t.reward(np.arange(9.0))
        self.assertEqual(r.shape, (12, 2))
        np.testing.assert_allclose(r.ravel(), t.phi() @ np.arange(9.0))
        with self.assertRaisesRegex(ValueError, "9 features"):
            t.reward(np.ones(3))
        with self.assertRaisesRegex(ValueError, "exactly one of rbf and phi"):
            LatticeTask(t.state.axes, t.action.axes)

    def test_check_client_features_names_first_mismatch(self):
        t = self.task()
        phi = np.vstack([t.phi(), np.zeros((2, 9))])  # one terminal state after the lattice
        check_client_features(t, 13, 2, phi, [12])
        ok = phi.copy()
        ok[3, 4] *= 1 + 1e-13
        check_client_features(t, 13, 2, ok, [12])
        bad = phi.copy()
        bad[5, 2] += 0.25
        bad[9, 0] += 1
        with self.assertRaisesRegex(ValueError, r"client features\[5\]\[2\] = .* \(state 2, action 1, feature 2\)"):
            check_client_features(t, 13, 2, bad, [12])
        with self.assertRaisesRegex(ValueError, "not terminal"):
            check_client_features(t, 13, 2, phi, [])
        with self.assertRaisesRegex(ValueError, "actions = 3"):
            check_client_features(t, 13, 3, np.zeros((39, 9)), [12])
        nz = phi.copy()
        nz[25, 1] = 2
        with self.assertRaisesRegex(ValueError, r"features\[25\]\[1\] = 2.0: extra terminal"):
            check_client_features(t, 13, 2, nz, [12])


if __name__ == "__main__":
    unittest.main()
