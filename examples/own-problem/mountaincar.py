"""MountainCar's dynamics (Gymnasium's MountainCar-v0) in a few lines of numpy, with per-client physics.

Not part of fedirl: this stands for "your own simulator". It has what fedirl.sample_mdp needs (set_state,
get_state, step returning Gymnasium's 5-tuple) and reset for rollouts.
"""
import numpy as np

MIN_POS, MAX_POS, MAX_SPEED, GOAL = -1.2, 0.6, 0.07, 0.5


class MountainCar:
    """A car in a valley; actions 0 (push left), 1 (none), 2 (push right); reward -1 per step until the
    car reaches position 0.5. force and gravity are this client's physics (Gymnasium: 0.001, 0.0025)."""

    def __init__(self, force=0.001, gravity=0.0025, max_steps=200):
        self.force, self.gravity, self.max_steps = force, gravity, max_steps
        self.state = np.zeros(2)
        self.t = 0

    def reset(self, rng):
        self.state = np.array([rng.uniform(-0.6, -0.4), 0.0])
        self.t = 0
        return self.state.copy(), {}

    def set_state(self, x):
        self.state = np.array(x, dtype=np.float64)
        self.t = 0

    def get_state(self):
        return self.state.copy()

    def step(self, action):
        p, v = self.state
        v += (int(action) - 1) * self.force + np.cos(3 * p) * (-self.gravity)
        v = min(max(v, -MAX_SPEED), MAX_SPEED)
        p = min(max(p + v, MIN_POS), MAX_POS)
        if p == MIN_POS and v < 0:
            v = 0.0
        self.state = np.array([p, v])
        self.t += 1
        terminated = bool(p >= GOAL and v >= 0)
        return self.state.copy(), -1.0, terminated, self.t >= self.max_steps, {}
