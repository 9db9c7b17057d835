"""imitation's trajectory .npz loader, restated for tests (imitation is not a dependency).

imitation.data.serialize.load (imitation 0.3-0.4, the .npz branch) reads a file written by np.savez as:

    data = np.load(path, allow_pickle=True)
    num_trajs = len(data["indices"])
    fields = [np.split(data["obs"], data["indices"] + np.arange(num_trajs) + 1),
              np.split(data["acts"], data["indices"]),
              np.split(data["infos"], data["indices"]),
              data["terminal"]]
    if "rews" in data:
        fields = [*fields, np.split(data["rews"], data["indices"])]
        return [types.TrajectoryWithRew(*args) for args in zip(*fields)]

and types.Trajectory checks len(obs) == len(acts) + 1 and len(infos) == len(acts). load_trajectories below
does the same splits and checks and returns dicts with the Trajectory's fields.
"""
import numpy as np

FIELDS = ("obs", "acts", "infos", "terminal", "rews", "indices")


def load_trajectories(path):
    data = np.load(path, allow_pickle=True)
    num_trajs = len(data["indices"])
    obs = np.split(data["obs"], data["indices"] + np.arange(num_trajs) + 1)
    acts = np.split(data["acts"], data["indices"])
    infos = np.split(data["infos"], data["indices"])  # KeyError when a writer leaves infos out
    rews = np.split(data["rews"], data["indices"])
    terminal = data["terminal"]
    out = []
    for o, a, i, t, r in zip(obs, acts, infos, terminal, rews):
        if len(o) != len(a) + 1:
            raise ValueError(f"{path}: {len(o)} observations for {len(a)} actions, want T+1")
        if len(i) != len(a) or len(r) != len(a):
            raise ValueError(f"{path}: {len(i)} infos and {len(r)} rewards for {len(a)} actions")
        out.append({"obs": o, "acts": a, "infos": i, "terminal": bool(t), "rews": r})
    if len(out) != num_trajs + 1 or len(terminal) != num_trajs + 1:
        raise ValueError(f"{path}: {len(out)} trajectories, {len(terminal)} terminal flags, want {num_trajs + 1}")
    return out
