#!/usr/bin/env python3
"""Federate your own problem: MountainCar (numpy dynamics, per-client physics) served as a fedirl "lattice" task.

  prepare   writes the two task specs (mean and barycentric fusion) and, for clients 1 and 2, their own
            lattice MDP (sampled from their simulator) and expert demonstrations, in the files `fedirl client`
            reads: client1 an .npz MDP and JSONL demos, client2 a JSON MDP and imitation's trajectory .npz
  client    client0, in Python: fetches the task, computes Phi from the task's probe, builds its own MDP, learns
            theta_0 with `fedirl irl` and the task's irl settings, submits it to both tasks, fetches both fused theta
  evaluate  plans in every client's own lattice MDP (value iteration) with its local, the mean and the
            barycentric reward and rolls the greedy policy in its own simulator; prints the returns

run.sh runs all three around a real `fedirl server` on loopback.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)

import fedirl  # noqa: E402
from mountaincar import MountainCar  # noqa: E402

# Per-client physics: Gymnasium's car, a weaker engine, and a stronger engine on steeper hills.
PHYSICS = [(0.001, 0.0025), (0.0008, 0.0025), (0.0012, 0.003)]
CLIENTS = [f"client{c}" for c in range(len(PHYSICS))]
GAMMA = 0.99
IRL = {"optimizer": "newton", "temperature": 1, "l2": 1e-3, "max_iter": 100}


def make_task(n):
    """The task: an n x n lattice over (position, velocity), 3 push actions, 5 x 5 Gaussian RBFs + bias."""
    return fedirl.LatticeTask(
        [fedirl.Axis.uniform(n, -1.2, 0.6, "position"), fedirl.Axis.uniform(n, -0.07, 0.07, "velocity")],
        [fedirl.Axis.categorical_axis(3, "push")],
        rbf=fedirl.uniform_rbf([("position", 5, -1.2, 0.6), ("velocity", 5, -0.07, 0.07), ("push", "categorical", [1])]))


def q_at(task, q, x):
    """Q at a continuous state by multilinear interpolation of the lattice's Q."""
    idx, w = task.state.interp(x)
    return np.asarray(w) @ q[idx]


def rollouts(sim, task, q, seed, episodes):
    """Greedy rollouts of Q in the simulator from seeded starts: (returns, lattice trajectories)."""
    rng = np.random.default_rng(seed)
    rets, trajs = [], []
    for _ in range(episodes):
        x, _ = sim.reset(rng)
        states, acts, ret = [task.state.snap(x)], [], 0.0
        while True:
            a = int(np.argmax(q_at(task, q, x)))
            x, r, term, trunc, _ = sim.step(a)
            ret += r
            acts.append(a)
            states.append(task.num_states if term else task.state.snap(x))
            if term or trunc:
                break
        rets.append(ret)
        trajs.append((states, acts))
    return np.array(rets), trajs


def client_model(c, task):
    """Client c's simulator, its lattice MDP, and its expert's Q (value iteration on the true reward -1/step)."""
    sim = MountainCar(*PHYSICS[c])
    mdp = fedirl.sample_mdp(sim, task, gamma=GAMMA)
    q = mdp.value_iteration(-np.ones((task.num_states, task.num_actions)), tol=1e-6)
    return sim, mdp, q


def prepare(args):
    task = make_task(args.n)
    os.makedirs(args.out, exist_ok=True)
    for method in ("mean", "barycentric"):
        spec = {"id": f"mc-{method}", "description": f"MountainCar with per-client physics, {method} fusion",
                "env_family": "lattice", "probe": task.probe(), "theta_dim": task.dim, "irl": IRL,
                "fusion": {"method": method}, "quorum": len(CLIENTS)}
        with open(os.path.join(args.out, f"task-{method}.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f, indent=1)
    for c in (1, 2):
        d = os.path.join(args.out, CLIENTS[c])
        os.makedirs(d, exist_ok=True)
        sim, mdp, q = client_model(c, task)
        _, trajs = rollouts(sim, task, q, seed=100 + c, episodes=args.episodes)
        if c == 1:
            mdp.write_npz(os.path.join(d, "mdp.npz"), mdp.features(task))
            fedirl.write_demos_jsonl(os.path.join(d, "demos.jsonl"), trajs)
        else:
            mdp.write_spec(os.path.join(d, "mdp.json"), mdp.features(task))
            fedirl.write_demos_imitation(os.path.join(d, "demos.npz"), trajs)
    print(f"prepared {args.out}: {task.num_states} lattice states x {task.num_actions} actions, "
          f"{task.dim} features, {args.episodes} demonstrations per client", file=sys.stderr)


def python_client(args):
    from fedirl import client as fc
    c, d = 0, os.path.join(args.out, CLIENTS[0])
    os.makedirs(d, exist_ok=True)
    tasks = {m: f"mc-{m}" for m in ("mean", "barycentric")}
    conns = {m: fc.Client(args.server, CLIENTS[c], fc.read_token(os.path.join(args.out, f"tokens-{m}.json"), CLIENTS[c]),
                          insecure=True) for m in tasks}
    info = conns["mean"].get_task(tasks["mean"])
    spec = info["spec"]
    if spec["env_family"] != "lattice":
        raise SystemExit(f"task {tasks['mean']} is of family {spec['env_family']}, not lattice")
    task = fedirl.LatticeTask.from_probe(spec["probe"])  # Phi computed here, from the task's RBF spec
    sim = MountainCar(*PHYSICS[c])
    mdp = fedirl.sample_mdp(sim, task, gamma=GAMMA)
    phi = mdp.features(task)
    fedirl.check_client_features(task, mdp.num_states, mdp.num_actions, phi, mdp.terminal)
    q = mdp.value_iteration(-np.ones((task.num_states, task.num_actions)), tol=1e-6)
    _, trajs = rollouts(sim, task, q, seed=100 + c, episodes=args.episodes)
    spec_path, demos_path = os.path.join(d, "mdp.json"), os.path.join(d, "demos.jsonl")
    mdp.write_spec(spec_path, phi)
    fedirl.write_demos_jsonl(demos_path, trajs)
    res = fc.run_irl(spec_path, demos_path, irl=spec["irl"])
    out = {"client_id": CLIENTS[c], "local_theta": res["theta"], "iterations": res["iterations"]}
    rounds = {}
    for m, t in tasks.items():
        rounds[m], msg = conns[m].submit(t, res["theta"], demo_count=len(trajs), iterations=res["iterations"],
                                         grad_norm=res["grad_norm"][-1])
        print(f"{CLIENTS[c]} (python): {t}: {msg}", file=sys.stderr)
    for m, t in tasks.items():
        out[m] = conns[m].fetch_fused(t, rounds[m], timeout=args.timeout)
        print(f"{CLIENTS[c]} (python): {t}: fused theta from {len(out[m]['clients'])} clients by {out[m]['method']}",
              file=sys.stderr)
    with open(os.path.join(d, "result.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)


def evaluate(args):
    with open(os.path.join(args.out, "task-mean.json"), encoding="utf-8") as f:
        task = fedirl.LatticeTask.from_probe(json.load(f)["probe"])
    thetas, fused = {}, {}
    with open(os.path.join(args.out, CLIENTS[0], "result.json"), encoding="utf-8") as f:
        r0 = json.load(f)
    thetas[0] = np.array(r0["local_theta"])
    for m in ("mean", "barycentric"):
        fused[m] = np.array(r0[m]["theta"])
    for c in (1, 2):
        for m in ("mean", "barycentric"):
            with open(os.path.join(args.out, CLIENTS[c], f"{m}.json"), encoding="utf-8") as f:
                rep = json.load(f)
            if not np.array_equal(np.array(rep["final"]["theta"]), fused[m]):
                raise SystemExit(f"{CLIENTS[c]} received a different fused theta for {m} than {CLIENTS[0]}")
            thetas[c] = np.array(rep["rounds"][0]["local"]["theta"])
    rows = []
    for c in range(len(CLIENTS)):
        sim, mdp, q_true = client_model(c, task)
        row = {"client": CLIENTS[c], "force": PHYSICS[c][0], "gravity": PHYSICS[c][1]}
        rewards = {"expert": None, "local": thetas[c], "mean": fused["mean"], "barycentric": fused["barycentric"]}
        for name, theta in rewards.items():
            q = q_true if theta is None else mdp.value_iteration(task.reward(theta), tol=1e-6)
            rets, _ = rollouts(sim, task, q, seed=7, episodes=args.eval_episodes)
            row[name] = float(rets.mean())
            row[name + "_success"] = float(np.mean(rets > -sim.max_steps))
        rows.append(row)
    with open(os.path.join(args.out, "returns.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)
    head = f"{'client':8} {'force':>7} {'gravity':>7} | {'expert':>7} {'local':>7} {'mean':>7} {'barycentric':>11}"
    lines = [f"planner return in each client's own simulator (mean of {args.eval_episodes} episodes from the same "
             f"seeded starts; -1 per step, -200 = goal not reached)", head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['client']:8} {r['force']:7.4f} {r['gravity']:7.4f} | {r['expert']:7.1f} {r['local']:7.1f} "
                     f"{r['mean']:7.1f} {r['barycentric']:11.1f}")
    text = "\n".join(lines)
    with open(os.path.join(args.out, "returns.txt"), "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=["prepare", "client", "evaluate"])
    ap.add_argument("--out", required=True, help="the example's folder (specs, client files, results)")
    ap.add_argument("--n", type=int, default=31, help="lattice points per state axis")
    ap.add_argument("--episodes", type=int, default=20, help="expert demonstrations per client")
    ap.add_argument("--eval-episodes", type=int, default=50, help="evaluation rollouts per client and reward")
    ap.add_argument("--server", default="127.0.0.1:7443", help="server address (client step)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds to wait for a fusion (client step)")
    args = ap.parse_args()
    {"prepare": prepare, "client": python_client, "evaluate": evaluate}[args.step](args)


if __name__ == "__main__":
    main()
