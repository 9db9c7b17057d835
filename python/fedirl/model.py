"""A client's own lattice MDP: built from its simulator or from logged transitions, written in the formats
`fedirl irl` and `fedirl client` read (JSON spec or .npz of sparse transitions), and solved by value iteration
to plan with a reward.

States 0..S-1 are the task's lattice states; state S is an absorbing terminal state (zero features) that a
step which terminates the episode leads to. Row k = s*A + a of the transitions and of the features is the pair
(state s, action a).
"""
import json

import numpy as np


class LatticeMDP:
    """A sparse tabular MDP on a task's lattice plus one terminal state (CSR transitions as in pkg/mdp)."""

    def __init__(self, num_states, num_actions, gamma, row_ptr, nxt, prob, terminal, init=None, horizon=0):
        self.num_states = int(num_states)
        self.num_actions = int(num_actions)
        self.gamma = float(gamma)
        self.row_ptr = np.asarray(row_ptr, dtype=np.int64)
        self.next = np.asarray(nxt, dtype=np.int64)
        self.prob = np.asarray(prob, dtype=np.float64)
        self.terminal = sorted(int(t) for t in terminal)
        self.init = None if init is None else np.asarray(init, dtype=np.float64)
        self.horizon = int(horizon)
        if len(self.row_ptr) != self.num_states * self.num_actions + 1:
            raise ValueError(f"row_ptr has {len(self.row_ptr)} entries, want states*actions+1")

    @classmethod
    def from_rows(cls, num_states, num_actions, gamma, rows, terminal, init=None):
        """From a dict {(s, a): {s2: p}} (rows of terminal states are left empty)."""
        row_ptr, nxt, prob = [0], [], []
        for s in range(num_states):
            for a in range(num_actions):
                for s2, p in sorted(rows.get((s, a), {}).items()):
                    nxt.append(s2)
                    prob.append(p)
                row_ptr.append(len(nxt))
        return cls(num_states, num_actions, gamma, row_ptr, nxt, prob, terminal, init)

    def features(self, task):
        """The client's feature matrix: the task's Phi, zero rows for the terminal state(s) after the lattice."""
        phi = task.phi()
        out = np.zeros((self.num_states * self.num_actions, phi.shape[1]))
        out[:phi.shape[0]] = phi
        return out

    def spec(self, features):
        """The `fedirl irl` JSON spec as a dict (csr form)."""
        features = np.asarray(features, dtype=np.float64)
        d = {"states": self.num_states, "actions": self.num_actions, "gamma": self.gamma,
             "terminal": self.terminal,
             "csr": {"row_ptr": self.row_ptr.tolist(), "next": self.next.tolist(), "prob": self.prob.tolist()},
             "features": features.tolist()}
        if self.init is not None:
            d["init"] = self.init.tolist()
        if self.horizon:
            d["horizon"] = self.horizon
        return d

    def write_spec(self, path, features):
        """Writes the JSON spec read by `fedirl irl --spec` and `fedirl client --mdp`."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.spec(features), f)

    def write_npz(self, path, features):
        """Writes the .npz of sparse transitions read by `fedirl irl --spec` and `fedirl client --mdp`."""
        arrays = dict(num_states=np.int64(self.num_states), num_actions=np.int64(self.num_actions),
                      gamma=np.float64(self.gamma), row_ptr=self.row_ptr, next=self.next, prob=self.prob,
                      features=np.ascontiguousarray(features, dtype=np.float64),
                      terminal=np.asarray(self.terminal, dtype=np.int64), horizon=np.int64(self.horizon))
        if self.init is not None:
            arrays["init"] = self.init
        np.savez(path, **arrays)

    def q_values(self, reward, v):
        """Q[s, a] = r[s, a] + gamma * sum_s2 P(s2|s,a) v[s2] (terminal rows: 0)."""
        sa = self.num_states * self.num_actions
        rows = np.repeat(np.arange(sa), np.diff(self.row_ptr))
        ev = np.bincount(rows, weights=self.prob * v[self.next], minlength=sa)
        r = np.zeros(sa)
        r[:reward.size] = np.ravel(reward)
        q = (r + self.gamma * ev).reshape(self.num_states, self.num_actions)
        q[self.terminal] = 0.0
        return q

    def value_iteration(self, reward, tol=1e-8, max_iter=100000):
        """Optimal Q for a reward on the lattice pairs (shape (S_lattice, A) or flat), terminal value 0."""
        v = np.zeros(self.num_states)
        for _ in range(max_iter):
            q = self.q_values(reward, v)
            v2 = q.max(axis=1)
            v2[self.terminal] = 0.0
            if np.max(np.abs(v2 - v)) <= tol:
                return self.q_values(reward, v2)
            v = v2
        raise RuntimeError(f"value iteration did not reach tol {tol} in {max_iter} sweeps")


def _step(sim, action):
    """sim.step(action) as (next_state, terminated) for Gymnasium's 5-tuple or gym's 4-tuple."""
    out = sim.step(action)
    if len(out) == 5:
        obs, _, terminated, _, _ = out
    else:
        obs, _, terminated, _ = out
    state = sim.get_state() if hasattr(sim, "get_state") else obs
    return np.asarray(state, dtype=np.float64), bool(terminated)


class GymnasiumState:
    """Adapts a Gymnasium environment to what sample_mdp needs (set_state, get_state, step) when its simulator
    keeps its state in an attribute, as Gymnasium's classic-control environments do: CartPole-v1,
    Pendulum-v1, Acrobot-v1, MountainCar-v0 and MountainCarContinuous-v0 hold it in env.unwrapped.state
    (Pendulum's is (theta, theta_dot), not its cos/sin observation).

        import gymnasium as gym, fedirl
        sim = fedirl.GymnasiumState(gym.make("CartPole-v1"))
        mdp = fedirl.sample_mdp(sim, task, gamma=0.99)   # task's state axes: x, x_dot, theta, theta_dot

    Steps go to env.unwrapped, so wrappers (TimeLimit, OrderEnforcing, the passive checker) neither truncate
    nor refuse the single steps sample_mdp takes from states it sets. A Discrete action space gets int
    actions, a Box space arrays of its dtype and shape. An environment without such an attribute is refused
    with a message; give it set_state/get_state yourself (see examples/own-problem/mountaincar.py)."""

    def __init__(self, env, attr="state", seed=0):
        env.reset(seed=seed)
        self.env = getattr(env, "unwrapped", env)
        self.attr = attr
        name = type(self.env).__name__
        if getattr(self.env, attr, None) is None:
            raise TypeError(f"{name} keeps no state in .{attr} after reset: pass attr= the attribute that "
                            "holds its state, or give your simulator set_state/get_state (see sample_mdp)")
        self.shape = np.shape(getattr(self.env, attr))
        space = getattr(self.env, "action_space", None)
        self._discrete = space is not None and hasattr(space, "n")
        self._box = None if self._discrete or space is None else (space.dtype, space.shape)

    def set_state(self, x):
        x = np.asarray(x, dtype=np.float64)
        if x.shape != self.shape:
            raise ValueError(f"state {x.tolist()} has shape {x.shape}, {type(self.env).__name__}.{self.attr} "
                             f"has shape {self.shape}: the task's state axes must be the simulator's state")
        cur = getattr(self.env, self.attr)
        setattr(self.env, self.attr, tuple(x.tolist()) if isinstance(cur, tuple) else x.copy())
        if hasattr(self.env, "steps_beyond_terminated"):  # CartPole warns when stepped after termination
            self.env.steps_beyond_terminated = None

    def get_state(self):
        return np.array(getattr(self.env, self.attr), dtype=np.float64)

    def step(self, action):
        if self._discrete:
            action = int(round(float(np.ravel(action)[0])))
        elif self._box is not None:
            dtype, shape = self._box
            action = np.asarray(action, dtype=dtype).reshape(shape)
        return self.env.step(action)


def sample_mdp(sim, task, gamma, samples=1, seed=0, interpolate=True):
    """Builds a client's lattice MDP from its own simulator.

    sim is any object with set_state(x) (x: the state coordinates of a lattice point) and step(action)
    (a Gymnasium classic-control environment through GymnasiumState(env))
    returning Gymnasium's (obs, reward, terminated, truncated, info) or gym's 4-tuple; the next state is
    sim.get_state() if it has one, else the observation. For every lattice state s and action a the simulator
    is set to `samples` states (the point itself, then points drawn uniformly in its cell, seeded) and stepped
    once; each successor credits its multilinear interpolation weights on the lattice (interpolate=True) or its
    nearest point, and a terminating step credits the terminal state S.
    """
    rng = np.random.default_rng(seed)
    S, A = task.num_states, task.num_actions
    pts = task.state.points()
    half = []
    for ax in task.state.axes:
        c = ax.coords
        if ax.categorical or len(c) == 1:
            half.append(0.0)
        else:
            half.append(float(np.min(np.diff(c))) / 2)
    half = np.array(half)
    rows = {}
    for s in range(S):
        for a in range(A):
            row = {}
            for k in range(samples):
                x = pts[s].copy()
                if k > 0:
                    x = x + rng.uniform(-half, half)
                sim.set_state(x)
                x2, term = _step(sim, task.action_value(a))
                if term:
                    row[S] = row.get(S, 0.0) + 1.0 / samples
                    continue
                idx, w = task.state.interp(x2) if interpolate else ([task.state.snap(x2)], [1.0])
                for i, p in zip(idx, w):
                    row[i] = row.get(i, 0.0) + p / samples
            rows[(s, a)] = row
    return LatticeMDP.from_rows(S + 1, A, gamma, rows, terminal=[S])


def mdp_from_transitions(task, states, actions, next_states, terminated, gamma):
    """Builds a client's lattice MDP from logged transitions (arrays of states, action indices, next states
    and terminated flags): each transition's state snaps to its nearest lattice point and its successor
    credits that point's row with the successor's nearest point (or the terminal state); pairs never
    observed stay in place (a self-loop, "no information", as discretize.Counter does)."""
    S, A = task.num_states, task.num_actions
    counts = {}
    for x, a, x2, term in zip(states, actions, next_states, terminated):
        s = task.state.snap(np.asarray(x, dtype=np.float64))
        a = int(a)
        if not 0 <= a < A:
            raise ValueError(f"logged action {a} is not an action index in [0, {A})")
        s2 = S if term else task.state.snap(np.asarray(x2, dtype=np.float64))
        row = counts.setdefault((s, a), {})
        row[s2] = row.get(s2, 0) + 1
    rows = {}
    for s in range(S):
        for a in range(A):
            c = counts.get((s, a))
            if not c:
                rows[(s, a)] = {s: 1.0}
            else:
                n = sum(c.values())
                rows[(s, a)] = {k: v / n for k, v in c.items()}
    return LatticeMDP.from_rows(S + 1, A, gamma, rows, terminal=[S])


def write_demos_jsonl(path, trajectories):
    """Writes demonstrations [(states, actions), ...] (lattice state indices, action indices) as JSON Lines."""
    with open(path, "w", encoding="utf-8") as f:
        for states, actions in trajectories:
            f.write(json.dumps({"states": [int(s) for s in states], "actions": [int(a) for a in actions]}) + "\n")


def write_demos_imitation(path, trajectories):
    """Writes demonstrations in imitation's trajectory .npz layout (obs = T+1 state indices per episode), with
    every field imitation.data.serialize.load splits: obs, acts, infos (empty dicts, as imitation writes
    trajectories without infos), terminal, rews (zeros) and indices."""
    obs = np.concatenate([np.asarray(s, dtype=np.int64) for s, _ in trajectories])
    acts = np.concatenate([np.asarray(a, dtype=np.int64) for _, a in trajectories])
    if any(len(s) != len(a) + 1 for s, a in trajectories):
        raise ValueError("imitation's layout needs T+1 states per episode of T actions")
    indices = np.cumsum([len(a) for _, a in trajectories[:-1]]).astype(np.int64)
    np.savez(path, obs=obs, acts=acts, indices=indices, rews=np.zeros(len(acts)),
             terminal=np.ones(len(trajectories), dtype=bool), infos=np.full(len(acts), {}))
