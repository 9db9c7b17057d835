#!/usr/bin/python3
"""Golden trajectories for pkg/envs/classic, from a transcription of Gymnasium.

Gymnasium itself cannot be installed on the build machine (no PyPI), so this
script transcribes the step functions of Gymnasium's classic-control
environments into plain numpy, keeping the upstream code structure, expression
order and comments so that a reader can diff each method against upstream:

  gymnasium/envs/classic_control/pendulum.py  (Farama-Foundation/Gymnasium, read at
                                               commit 04b863db169ab72be8826010e966222632bc575a)
  gymnasium/envs/classic_control/cartpole.py  (commit 06e40df3caafb5eae0eeb98cd747d6f72fdab3a8)
  gymnasium/envs/classic_control/acrobot.py   (commit 076886ece8b0b369f0a0311f1dd0641814868df1)
  gymnasium/wrappers/common.py TimeLimit      (commit 08a16e7800a862970f8c67b6ad5407e516feac38)
  gymnasium/envs/__init__.py max_episode_steps: Pendulum-v1 200, CartPole-v1 500, Acrobot-v1 500

Lines marked "EXTENSION" add the paper's per-client parameters (Pendulum
torque scale and viscous damping, Acrobot torque scale and goal threshold
(dimensionless, like upstream's 1.0), all physical constants as attributes); with their default values they
leave Gymnasium's arithmetic unchanged (x * 1.0, x - 0.0 * y and 1.0 * cos(x)
are exact in IEEE arithmetic).

float32: Gymnasium returns observations as float32 (np.array(..., dtype=np.float32));
the simulated state is float64 in all three environments. fedirl simulates
and observes in float64, so OBS_DTYPE below is float64 and the golden
observations are the float64 values that Gymnasium then rounds to float32.
Acrobot's reset rounds the initial state to float32 (.astype(np.float32)); the
goldens start from explicit states set like env.unwrapped.state = s, so that
rounding does not arise here (the Go tests check it on Reset). Actions are
passed as float64 arrays (Pendulum) or ints (CartPole, Acrobot).

Initial states are set directly (no reset), and action sequences are fixed:
random (from numpy's seeded Generator), including Pendulum torques outside
[-2, 2] that get clipped, or produced by simple feedback controllers so that
episodes reach termination (CartPole out of bounds, Acrobot goal height) or the
TimeLimit truncation.

Run:  /usr/bin/python3 gymnasium_reference.py > gymnasium_golden.json
"""

import json
import math
import sys

import numpy as _numpy

OBS_DTYPE = _numpy.float64  # upstream: np.float32 (see module docstring)


class _Trig:
    """Switches the sin and cos that the transcribed code calls.

    Upstream calls numpy's np.sin/np.cos (Pendulum, Acrobot) and math.sin/
    math.cos (CartPole). numpy dispatches float64 sin/cos at run time: on CPUs
    with AVX512_SKX it uses SVML kernels (measured on this machine: 65% of
    results differ from the correctly rounded value, by up to 3 ulp), elsewhere
    the C library's, which is correctly rounded in nearly all cases. So
    Gymnasium's own trajectories differ between machines in the last bits, and
    chaotic ones (Acrobot, bang-bang CartPole) amplify that. The goldens use the
    portable C-library functions ("libm"); the "numpy" variant is replayed only
    to measure, per case, how many steps stay within 1e-9 of the golden
    (field reproducible_steps), i.e. how far Gymnasium agrees with itself.
    """

    mode = "libm"

    @staticmethod
    def sin(x):
        return math.sin(x) if _Trig.mode == "libm" else _numpy.sin(x)

    @staticmethod
    def cos(x):
        return math.cos(x) if _Trig.mode == "libm" else _numpy.cos(x)


class _NumpyWithTrig:
    """numpy, except that sin and cos go through _Trig."""

    sin = staticmethod(_Trig.sin)
    cos = staticmethod(_Trig.cos)

    def __getattr__(self, name):
        return getattr(_numpy, name)


np = _NumpyWithTrig()
# acrobot.py: from numpy import cos, pi, sin
cos, pi, sin = _Trig.cos, _numpy.pi, _Trig.sin


# --------------------------------------------------------------------------
# pendulum.py
# --------------------------------------------------------------------------

class PendulumEnv:
    def __init__(self, g=10.0):
        self.max_speed = 8
        self.max_torque = 2.0
        self.dt = 0.05
        self.g = g
        self.m = 1.0
        self.l = 1.0
        self.torque_scale = 1.0  # EXTENSION
        self.damping = 0.0  # EXTENSION

    def step(self, u):
        th, thdot = self.state  # th := theta

        g = self.g
        m = self.m
        l = self.l
        dt = self.dt

        u = np.clip(u, -self.max_torque, self.max_torque)[0]
        u = self.torque_scale * u  # EXTENSION: applied torque
        self.last_u = u  # for rendering
        costs = angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * (u**2)

        # EXTENSION: (u - self.damping * thdot) instead of u
        newthdot = thdot + (3 * g / (2 * l) * np.sin(th) + 3.0 / (m * l**2) * (u - self.damping * thdot)) * dt
        newthdot = np.clip(newthdot, -self.max_speed, self.max_speed)
        newth = th + newthdot * dt

        self.state = np.array([newth, newthdot])

        return self._get_obs(), -costs, False, False, {}

    def _get_obs(self):
        theta, thetadot = self.state
        return np.array([np.cos(theta), np.sin(theta), thetadot], dtype=OBS_DTYPE)


def angle_normalize(x):
    return ((x + np.pi) % (2 * np.pi)) - np.pi


# --------------------------------------------------------------------------
# cartpole.py
# --------------------------------------------------------------------------

class CartPoleEnv:
    def __init__(self, **params):
        self.gravity = 9.8
        self.masscart = 1.0
        self.masspole = 0.1
        self.length = 0.5  # actually half the pole's length
        self.force_mag = 10.0
        self.tau = 0.02  # seconds between state updates
        self.kinematics_integrator = "euler"
        # Angle at which to fail the episode
        self.theta_threshold_radians = 12 * 2 * math.pi / 360
        self.x_threshold = 2.4
        for k, v in params.items():  # EXTENSION: named parameters
            if k == "semi_implicit":
                self.kinematics_integrator = "semi-implicit" if v else "euler"
            else:
                assert hasattr(self, k), k
                setattr(self, k, v)
        self.total_mass = self.masspole + self.masscart
        self.polemass_length = self.masspole * self.length
        self.steps_beyond_terminated = None

    def step(self, action):
        assert action in (0, 1), f"{action!r} ({type(action)}) invalid"
        assert self.state is not None, "Call reset before using step method."
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        costheta = math.cos(theta)
        sintheta = math.sin(theta)

        # For the interested reader:
        # https://coneural.org/florian/papers/05_cart_pole.pdf
        temp = (
            force + self.polemass_length * theta_dot**2 * sintheta
        ) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta**2 / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass

        if self.kinematics_integrator == "euler":
            x = x + self.tau * x_dot
            x_dot = x_dot + self.tau * xacc
            theta = theta + self.tau * theta_dot
            theta_dot = theta_dot + self.tau * thetaacc
        else:  # semi-implicit euler
            x_dot = x_dot + self.tau * xacc
            x = x + self.tau * x_dot
            theta_dot = theta_dot + self.tau * thetaacc
            theta = theta + self.tau * theta_dot

        self.state = (x, x_dot, theta, theta_dot)

        terminated = bool(
            x < -self.x_threshold
            or x > self.x_threshold
            or theta < -self.theta_threshold_radians
            or theta > self.theta_threshold_radians
        )

        if not terminated:
            reward = 1.0
        elif self.steps_beyond_terminated is None:
            # Pole just fell!
            self.steps_beyond_terminated = 0
            reward = 1.0
        else:
            self.steps_beyond_terminated += 1
            reward = 0.0

        return np.array(self.state, dtype=OBS_DTYPE), reward, terminated, False, {}


# --------------------------------------------------------------------------
# acrobot.py
# --------------------------------------------------------------------------

class AcrobotEnv:
    dt = 0.2

    LINK_LENGTH_1 = 1.0  # [m]
    LINK_LENGTH_2 = 1.0  # [m]
    LINK_MASS_1 = 1.0  #: [kg] mass of link 1
    LINK_MASS_2 = 1.0  #: [kg] mass of link 2
    LINK_COM_POS_1 = 0.5  #: [m] position of the center of mass of link 1
    LINK_COM_POS_2 = 0.5  #: [m] position of the center of mass of link 2
    LINK_MOI = 1.0  #: moments of inertia for both links

    MAX_VEL_1 = 4 * pi
    MAX_VEL_2 = 9 * pi

    AVAIL_TORQUE = [-1.0, 0.0, +1]

    torque_noise_max = 0.0

    #: use dynamics equations from the nips paper or the book
    book_or_nips = "book"

    G = 9.8  # EXTENSION: upstream hard-codes g = 9.8 in _dsdt
    TORQUE_SCALE = 1.0  # EXTENSION
    GOAL_HEIGHT = 1.0  # EXTENSION

    def step(self, a):
        s = self.state
        assert s is not None, "Call reset before using AcrobotEnv object."
        torque = self.AVAIL_TORQUE[a]
        torque = self.TORQUE_SCALE * torque  # EXTENSION

        # Now, augment the state with our force action so it can be passed to
        # _dsdt
        s_augmented = np.append(s, torque)

        ns = rk4(self._dsdt, s_augmented, [0, self.dt])

        ns[0] = wrap(ns[0], -pi, pi)
        ns[1] = wrap(ns[1], -pi, pi)
        ns[2] = bound(ns[2], -self.MAX_VEL_1, self.MAX_VEL_1)
        ns[3] = bound(ns[3], -self.MAX_VEL_2, self.MAX_VEL_2)
        self.state = ns
        terminated = self._terminal()
        reward = -1.0 if not terminated else 0.0

        return (self._get_ob(), reward, terminated, False, {})

    def _get_ob(self):
        s = self.state
        assert s is not None, "Call reset before using AcrobotEnv object."
        return np.array(
            [cos(s[0]), sin(s[0]), cos(s[1]), sin(s[1]), s[2], s[3]], dtype=OBS_DTYPE
        )

    def _terminal(self):
        s = self.state
        assert s is not None, "Call reset before using AcrobotEnv object."
        # EXTENSION: upstream is -cos(s[0]) - cos(s[1] + s[0]) > 1.0; the
        # threshold is the attribute GOAL_HEIGHT (1.0 by default). As upstream,
        # the link lengths do not enter the test.
        return bool(-cos(s[0]) - cos(s[1] + s[0]) > self.GOAL_HEIGHT)

    def _dsdt(self, s_augmented):
        m1 = self.LINK_MASS_1
        m2 = self.LINK_MASS_2
        l1 = self.LINK_LENGTH_1
        lc1 = self.LINK_COM_POS_1
        lc2 = self.LINK_COM_POS_2
        I1 = self.LINK_MOI
        I2 = self.LINK_MOI
        g = self.G  # upstream: g = 9.8
        a = s_augmented[-1]
        s = s_augmented[:-1]
        theta1 = s[0]
        theta2 = s[1]
        dtheta1 = s[2]
        dtheta2 = s[3]
        d1 = (
            m1 * lc1**2
            + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * cos(theta2))
            + I1
            + I2
        )
        d2 = m2 * (lc2**2 + l1 * lc2 * cos(theta2)) + I2
        phi2 = m2 * lc2 * g * cos(theta1 + theta2 - pi / 2.0)
        phi1 = (
            -m2 * l1 * lc2 * dtheta2**2 * sin(theta2)
            - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin(theta2)
            + (m1 * lc1 + m2 * l1) * g * cos(theta1 - pi / 2)
            + phi2
        )
        if self.book_or_nips == "nips":
            # the following line is consistent with the description in the
            # paper
            ddtheta2 = (a + d2 / d1 * phi1 - phi2) / (m2 * lc2**2 + I2 - d2**2 / d1)
        else:
            # the following line is consistent with the java implementation and the
            # book
            ddtheta2 = (
                a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * sin(theta2) - phi2
            ) / (m2 * lc2**2 + I2 - d2**2 / d1)
        ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
        return dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0


def wrap(x, m, M):
    diff = M - m
    while x > M:
        x = x - diff
    while x < m:
        x = x + diff
    return x


def bound(x, m, M=None):
    if M is None:
        M = m[1]
        m = m[0]
    # bound x between min (m) and Max (M)
    return min(max(x, m), M)


def rk4(derivs, y0, t):
    try:
        Ny = len(y0)
    except TypeError:
        yout = np.zeros((len(t),), np.float64)  # upstream: np.float_ (removed in numpy 2)
    else:
        yout = np.zeros((len(t), Ny), np.float64)

    yout[0] = y0

    for i in np.arange(len(t) - 1):

        this = t[i]
        dt = t[i + 1] - this
        dt2 = dt / 2.0
        y0 = yout[i]

        k1 = np.asarray(derivs(y0))
        k2 = np.asarray(derivs(y0 + dt2 * k1))
        k3 = np.asarray(derivs(y0 + dt2 * k2))
        k4 = np.asarray(derivs(y0 + dt * k3))
        yout[i + 1] = y0 + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    # We only care about the final timestep and we cleave off action value which will be zero
    return yout[-1][:4]


# --------------------------------------------------------------------------
# Builders with fedirl's parameter names (see pkg/envs/classic List()).
# --------------------------------------------------------------------------

def make_pendulum(p):
    env = PendulumEnv(g=p.get("g", 10.0))
    for k in ("m", "l", "dt", "max_speed", "max_torque", "torque_scale", "damping"):
        if k in p:
            setattr(env, k, p[k])
    return env


ACROBOT_NAMES = {
    "link_length_1": "LINK_LENGTH_1", "link_length_2": "LINK_LENGTH_2",
    "link_mass_1": "LINK_MASS_1", "link_mass_2": "LINK_MASS_2",
    "link_com_pos_1": "LINK_COM_POS_1", "link_com_pos_2": "LINK_COM_POS_2",
    "link_moi": "LINK_MOI", "g": "G", "dt": "dt",
    "max_vel_1": "MAX_VEL_1", "max_vel_2": "MAX_VEL_2",
    "torque_scale": "TORQUE_SCALE", "goal_height": "GOAL_HEIGHT",
}


def make_acrobot(p):
    env = AcrobotEnv()
    for k, v in p.items():
        setattr(env, ACROBOT_NAMES[k], v)
    return env


def client_params(name, i):
    """The paper's client i, as in pkg/envs/classic (ClientParams), noise omitted."""
    if name == "Pendulum-v1":
        return {"torque_scale": 1.0 + 0.1 * i, "damping": 0.2 * (1.0 + 0.05 * i), "g": 9.81 + 0.2 * i}
    if name == "CartPole-v1":
        s = 1.0 + 0.05 * i
        return {"force_mag": 10.0 * (1.0 + 0.1 * i), "gravity": 9.8 * (1.0 + 0.005 * i),
                "masscart": 1.0 * s, "masspole": 0.1 * s, "length": 0.5 * s}
    if name == "Acrobot-v1":
        s = 1.0 + 0.05 * i
        return {"link_mass_1": 1.0 * s, "link_mass_2": 1.0 * s, "link_length_1": 1.0 * s,
                "link_length_2": 1.0 * s, "link_com_pos_1": 0.5 * s, "link_com_pos_2": 0.5 * s,
                "link_moi": 1.0 * (s * s * s), "torque_scale": 1.0 * (s * s)}
    raise ValueError(name)


MAX_EPISODE_STEPS = {"Pendulum-v1": 200, "CartPole-v1": 500, "Acrobot-v1": 500}


def rollout(name, params, state0, policy, max_steps=None):
    physical = {k: v for k, v in params.items() if k != "max_episode_steps"}
    """Steps from state0 under TimeLimit semantics until terminated or truncated.

    policy(state, t) returns the action; the actions taken are recorded so the
    Go test replays them open loop.
    """
    if name == "Pendulum-v1":
        env = make_pendulum(physical)
        env.state = np.array(state0, dtype=_numpy.float64)
    elif name == "CartPole-v1":
        env = CartPoleEnv(**physical)
        env.state = tuple(float(v) for v in state0)
    else:
        env = make_acrobot(physical)
        env.state = np.array(state0, dtype=_numpy.float64)
    # TimeLimit(max_episode_steps); fedirl's parameter max_episode_steps overrides it
    limit = max_steps or int(params.get("max_episode_steps", MAX_EPISODE_STEPS[name]))
    elapsed = 0  # TimeLimit._elapsed_steps
    actions, steps = [], []
    while True:
        a = policy(np.array(env.state, dtype=_numpy.float64), elapsed)
        if name == "Pendulum-v1":
            obs, r, term, trunc, _ = env.step(np.array([a], dtype=_numpy.float64))
            actions.append(float(a))
        else:
            obs, r, term, trunc, _ = env.step(int(a))
            actions.append(int(a))
        # TimeLimit.step
        elapsed += 1
        if elapsed >= limit:
            trunc = True
        steps.append({
            "obs": [float(v) for v in obs],
            "reward": float(r),
            "terminated": bool(term),
            "truncated": bool(trunc),
            "state": [float(v) for v in env.state],
        })
        if term or trunc:
            break
    return {"env": name, "params": params, "state0": [float(v) for v in state0],
            "actions": actions, "steps": steps}


def main():
    rng = _numpy.random.default_rng(20261121)
    cases = []

    def add(case_name, case):
        case["name"] = case_name
        # Replay the same actions with numpy's run-time dispatched sin/cos and
        # count the steps over which both variants agree to 1e-9.
        _Trig.mode = "numpy"
        acts = case["actions"]
        shadow = rollout(case["env"], case["params"], case["state0"], lambda _s, t: acts[t], max_steps=len(acts))
        _Trig.mode = "libm"
        agree = 0
        for a, b in zip(case["steps"], shadow["steps"]):
            if max(abs(u - v) for u, v in zip(a["state"], b["state"])) > 1e-9:
                break
            agree += 1
        case["reproducible_steps"] = agree
        cases.append(case)

    # ---- Pendulum-v1: never terminates, truncated at 200. ----
    def rand_torque(_s, _t):
        return rng.uniform(-3.0, 3.0)  # beyond [-2, 2] on purpose: clipped
    for j, s0 in enumerate([[0.3, -0.5], [math.pi - 0.01, 0.9], [-2.5, 0.0]]):
        add(f"pendulum_default_random_{j}", rollout("Pendulum-v1", {}, s0, rand_torque))
    # Bang-bang energy pumping saturates |thdot| at max_speed (velocity clipping)
    # and wraps the angle many times (angle_normalize).
    pump = lambda s, _t: 5.0 if s[1] >= 0 else -5.0  # noqa: E731
    add("pendulum_default_pump_speedclip", rollout("Pendulum-v1", {}, [3.0, 7.5], pump))
    add("pendulum_g11.81", rollout("Pendulum-v1", {"g": 11.81}, [1.0, -0.3], rand_torque))
    for i in (0, 3, 5):
        add(f"pendulum_client{i}", rollout("Pendulum-v1", client_params("Pendulum-v1", i), [-1.2, 0.7], rand_torque))

    # ---- CartPole-v1: terminates out of bounds, truncated at 500. ----
    rand_push = lambda _s, _t: int(rng.integers(0, 2))  # noqa: E731
    for j, s0 in enumerate([[0.01, -0.02, 0.03, 0.04], [-0.04, 0.03, -0.01, 0.02]]):
        add(f"cartpole_default_random_{j}", rollout("CartPole-v1", {}, s0, rand_push))
    # A stabilizing controller that lets the cart drift: long episode ending at
    # |x| > 2.4 or the 500-step truncation.
    def balance(s, _t):
        return 1 if (s[2] + 0.3 * s[3] + 0.01 * s[0] + 0.02 * s[1]) > 0 else 0
    def balance_drift(s, t):
        return 1 if (s[2] + 0.3 * s[3] - 0.002) > 0 else 0
    add("cartpole_default_balance_truncate", rollout("CartPole-v1", {}, [0.0, 0.0, 0.02, 0.0], balance))
    add("cartpole_default_drift_out_of_bounds", rollout("CartPole-v1", {}, [1.5, 0.5, 0.0, 0.0], balance_drift))
    add("cartpole_default_push_right_x_bound", rollout("CartPole-v1", {}, [2.35, 2.0, 0.0, 0.0], lambda s, t: 1))
    add("cartpole_semi_implicit", rollout("CartPole-v1", {"semi_implicit": 1}, [0.01, 0.0, -0.03, 0.0], balance))
    for i in (0, 2, 5):
        add(f"cartpole_client{i}", rollout("CartPole-v1", client_params("CartPole-v1", i), [0.02, -0.01, 0.04, -0.03], balance))

    # ---- Acrobot-v1: terminates at goal height, truncated at 500. ----
    rand_acro = lambda _s, _t: int(rng.integers(0, 3))  # noqa: E731
    add("acrobot_default_random_0", rollout("Acrobot-v1", {}, [0.05, -0.03, 0.02, 0.08], rand_acro, max_steps=None))
    # Energy pumping: torque in the direction of the second joint's motion (or
    # against the first link's) reaches the goal height: termination with reward 0.
    pump_acro = lambda s, _t: 2 if s[3] >= 0 else 0  # noqa: E731
    add("acrobot_default_pump_goal", rollout("Acrobot-v1", {}, [0.1, 0.0, 0.0, 0.0], pump_acro))
    pump_acro2 = lambda s, _t: 0 if s[2] >= 0 else 2  # noqa: E731
    add("acrobot_default_pump_goal_2", rollout("Acrobot-v1", {}, [0.1, 0.0, 0.0, 0.0], pump_acro2))
    # Goal moved out of reach (goal_height 10 > 2, the largest possible value), started spinning beyond the
    # velocity limits: angles wrap and both velocities get clipped. This motion
    # is strongly chaotic (Gymnasium with numpy's SIMD sin/cos leaves the
    # libm trajectory by 1e-9 after about 95 steps), so the episode is cut at
    # 60 steps with a custom TimeLimit.
    spin = lambda s, _t: 2  # noqa: E731
    add("acrobot_spin_velclip", rollout("Acrobot-v1", {"goal_height": 10.0, "max_episode_steps": 60}, [3.0, 0.5, 14.0, -30.0], spin))
    for i in (0, 3, 5):
        add(f"acrobot_client{i}", rollout("Acrobot-v1", client_params("Acrobot-v1", i), [0.08, -0.05, -0.02, 0.01], pump_acro))

    json.dump({
        "generator": "pkg/envs/classic/testdata/gymnasium_reference.py",
        "numpy": _numpy.__version__,
        "trig": "libm (see _Trig)",
        "python": sys.version.split()[0],
        "note": "float64 observations (Gymnasium casts to float32); params use fedirl names",
        "cases": cases,
    }, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
