"""Client MDPs built from a simulator or from logged transitions, against hand-computed transitions, and
value iteration against closed-form values."""
import json
import os
import tempfile
import unittest

import numpy as np

from fedirl import Axis, GymnasiumState, LatticeMDP, LatticeTask, mdp_from_transitions, sample_mdp, uniform_rbf
from fedirl.model import write_demos_imitation, write_demos_jsonl
import imitation_layout


class Line:
    """A point on [0, 4] that moves by action - 1 times `step` (actions 0, 1, 2); reaching 4 terminates."""

    def __init__(self, step=1.0):
        self.step_size, self.x = step, np.zeros(1)

    def set_state(self, x):
        self.x = np.array(x, dtype=float)

    def step(self, a):
        self.x = np.clip(self.x + (int(a) - 1) * self.step_size, 0, 4)
        return self.x.copy(), -1.0, bool(self.x[0] >= 4), False, {}


def line_task():
    return LatticeTask([Axis.uniform(5, 0, 4, "x")], [Axis.categorical_axis(3, "a")],
                       rbf=uniform_rbf([("x", 2, 0, 4), ("a", "categorical", [0, 1, 2])]))


def dense(m):
    p = np.zeros((m.num_states * m.num_actions, m.num_states))
    for k in range(m.num_states * m.num_actions):
        for i in range(m.row_ptr[k], m.row_ptr[k + 1]):
            p[k, m.next[i]] += m.prob[i]
    return p


class SampleTest(unittest.TestCase):
    def test_deterministic_steps_on_points(self):
        task = line_task()
        m = sample_mdp(Line(1.0), task, gamma=0.9)
        self.assertEqual((m.num_states, m.num_actions, m.terminal), (6, 3, [5]))
        p = dense(m)
        for s in range(5):
            for a in range(3):
                row = np.zeros(6)
                nxt = min(max(s + a - 1, 0), 4)
                row[5 if nxt == 4 else nxt] = 1
                np.testing.assert_array_equal(p[s * 3 + a], row, err_msg=f"state {s} action {a}")
        np.testing.assert_array_equal(p[15:], 0)  # the terminal state's rows are empty

    def test_interpolated_successor_splits_linearly(self):
        m = sample_mdp(Line(0.25), line_task(), gamma=0.9)
        p = dense(m)
        np.testing.assert_allclose(p[2 * 3 + 2, [2, 3]], [0.75, 0.25])  # 2 + 0.25
        np.testing.assert_allclose(p[2 * 3 + 0, [1, 2]], [0.25, 0.75])  # 2 - 0.25
        m = sample_mdp(Line(0.25), line_task(), gamma=0.9, interpolate=False)
        self.assertEqual(dense(m)[2 * 3 + 2, 2], 1.0)

    def test_jittered_samples_are_seeded_and_stochastic(self):
        a = sample_mdp(Line(0.5), line_task(), gamma=0.9, samples=8, seed=3)
        b = sample_mdp(Line(0.5), line_task(), gamma=0.9, samples=8, seed=3)
        np.testing.assert_array_equal(a.prob, b.prob)
        np.testing.assert_allclose(dense(a)[:15].sum(axis=1), 1.0)

    def test_from_logged_transitions(self):
        task = line_task()
        states = [[0.1], [0.2], [1.0], [3.2]]
        m = mdp_from_transitions(task, states, [2, 2, 0, 2], [[1.1], [0.9], [0.0], [4.0]], [False, False, False, True], 0.9)
        p = dense(m)
        self.assertEqual(p[0 * 3 + 2, 1], 1.0)  # both logged steps from point 0 with a=2 reach point 1
        self.assertEqual(p[1 * 3 + 0, 0], 1.0)
        self.assertEqual(p[3 * 3 + 2, 5], 1.0)  # terminated
        self.assertEqual(p[4 * 3 + 1, 4], 1.0)  # never observed: stays
        with self.assertRaisesRegex(ValueError, "action 3"):
            mdp_from_transitions(task, [[0]], [3], [[0]], [False], 0.9)


class PlanTest(unittest.TestCase):
    def test_value_iteration_closed_form(self):
        # Line with unit steps and reward -1 per step: V(s) = -(1 - g^d) / (1 - g), d = steps to reach 4.
        task, g = line_task(), 0.9
        m = sample_mdp(Line(1.0), task, gamma=g)
        q = m.value_iteration(-np.ones((5, 3)), tol=1e-12)
        for s in range(4):
            d = 4 - s
            self.assertAlmostEqual(q[s].max(), -(1 - g ** d) / (1 - g), places=9)
            self.assertEqual(int(np.argmax(q[s])), 2)
        np.testing.assert_array_equal(q[5], 0)


class FilesTest(unittest.TestCase):
    def test_spec_npz_and_demos(self):
        task = line_task()
        m = sample_mdp(Line(0.5), task, gamma=0.9)
        phi = m.features(task)
        self.assertEqual(phi.shape, (18, task.dim))
        np.testing.assert_array_equal(phi[15:], 0)
        with tempfile.TemporaryDirectory() as d:
            m.write_spec(os.path.join(d, "mdp.json"), phi)
            with open(os.path.join(d, "mdp.json")) as f:
                spec = json.load(f)
            self.assertEqual((spec["states"], spec["actions"], spec["terminal"]), (6, 3, [5]))
            self.assertEqual(len(spec["csr"]["row_ptr"]), 19)
            m.write_npz(os.path.join(d, "mdp.npz"), phi)
            z = np.load(os.path.join(d, "mdp.npz"))
            self.assertEqual(int(z["num_states"]), 6)
            np.testing.assert_array_equal(z["features"], phi)
            trajs = [([0, 1, 2], [2, 2]), ([3, 5], [2])]
            write_demos_jsonl(os.path.join(d, "d.jsonl"), trajs)
            with open(os.path.join(d, "d.jsonl")) as f:
                self.assertEqual([json.loads(x) for x in f], [{"states": [0, 1, 2], "actions": [2, 2]},
                                                             {"states": [3, 5], "actions": [2]}])
            write_demos_imitation(os.path.join(d, "d.npz"), trajs)
            z = np.load(os.path.join(d, "d.npz"))
            np.testing.assert_array_equal(z["obs"], [0, 1, 2, 3, 5])
            np.testing.assert_array_equal(z["acts"], [2, 2, 2])
            np.testing.assert_array_equal(z["indices"], [2])
            # imitation's loader splits every field it needs, infos included.
            got = imitation_layout.load_trajectories(os.path.join(d, "d.npz"))
            self.assertEqual([list(t["obs"]) for t in got], [[0, 1, 2], [3, 5]])
            self.assertEqual([list(t["infos"]) for t in got], [[{}, {}], [{}]])

    def test_gymnasium_adapter_matches_a_set_state_simulator(self):
        # Shaped like Gymnasium's classic control: wrappers around env.unwrapped, whose .state (a tuple, as
        # older CartPole keeps it) the step reads; a Discrete action space that wants int actions; a
        # TimeLimit that would truncate after one step.
        class Discrete:
            n = 3

        class LineEnv:
            action_space = Discrete()

            def __init__(self):
                self.state = None

            def reset(self, seed=None):
                self.state = (0.0,)
                return np.array(self.state), {}

            def step(self, a):
                if not isinstance(a, int):
                    raise AssertionError(f"action {a!r} is not an int")
                x = min(max(self.state[0] + (a - 1) * 0.5, 0), 4)
                self.state = (x,)
                return np.array([x, 99.0]), -1.0, x >= 4, False, {}  # the observation is not the state

        class TimeLimit:
            def __init__(self, env):
                self.unwrapped = env

            def reset(self, seed=None):
                return self.unwrapped.reset(seed=seed)

            def step(self, a):
                raise AssertionError("the adapter must step env.unwrapped")

        task = line_task()
        want = sample_mdp(Line(0.5), task, gamma=0.9)
        got = sample_mdp(GymnasiumState(TimeLimit(LineEnv())), task, gamma=0.9)
        np.testing.assert_array_equal(dense(got), dense(want))
        sim = GymnasiumState(LineEnv())
        with self.assertRaisesRegex(ValueError, "shape"):
            sim.set_state([1.0, 2.0])

        class Stateless:
            def reset(self, seed=None):
                return np.zeros(1), {}
        with self.assertRaisesRegex(TypeError, "keeps no state in .state"):
            GymnasiumState(Stateless())

    @unittest.skipUnless(__import__("support").have("gymnasium"), "gymnasium is not installed")
    def test_gymnasium_cartpole(self):
        import gymnasium as gym
        env = gym.make("CartPole-v1")
        sim = GymnasiumState(env)
        sim.set_state([0.1, 0.0, 0.05, 0.0])
        obs, _, _, _, _ = sim.step(1)
        np.testing.assert_array_equal(sim.get_state(), obs)

    def test_row_ptr_length_checked(self):
        with self.assertRaisesRegex(ValueError, "row_ptr"):
            LatticeMDP(2, 2, 0.9, [0, 0], [], [], [])


if __name__ == "__main__":
    unittest.main()
