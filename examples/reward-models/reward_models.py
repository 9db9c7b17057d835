#!/usr/bin/env python3
"""Clients that bring their own reward model: MountainCar with per-client physics (examples/own-problem's
simulator) federated by three clients whose rewards have nothing in common but the task's probe points.

  client0  MaxEnt IRL on its own 9 x 9 Gaussian RBF map (narrow), with `fedirl client --submit-reward`
  client1  MaxEnt IRL on its own 3 x 3 Gaussian RBF map (wide), with `fedirl client --submit-reward`
  client2  a small neural network in numpy (2 -> 16 tanh -> 3 actions) trained by behaviour cloning on its
           demonstrations, reward r(s, a) = log(0.9 pi(a|s) + 0.1/3), submitted from Python (this file's
           `client` step, fedirl.client.Client.submit_reward with the network as a callable)

Each client sends its reward's values on the task's probe points (the lattice's state-action pairs), never
theta; the server fuses them in reward space (one task per method: mean of the reward vectors,
normalized-mean, barycenter) and returns the fused reward on the probe points and its least-squares theta on
the task's RBF features.

  prepare   the task specs and, for client0 and client1, their own lattice MDP with their own features (.npz)
            and demonstrations (JSONL); client2 gets demonstrations only
  client    a neural-network client (any lattice task: it learns from --demos and evaluates itself on the
            task's probe points)
  evaluate  plans in every client's own lattice MDP with its local reward and each fused reward and rolls the
            greedy policy in its own simulator; prints the returns

run.sh runs all three around a real `fedirl server` on loopback.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "own-problem"))

import fedirl  # noqa: E402
from own_problem import GAMMA, IRL, PHYSICS, client_model, make_task, rollouts  # noqa: E402

CLIENTS = ["client0", "client1", "client2"]
METHODS = ["mean", "normalized-mean", "barycenter"]
# The two RBF clients' own feature maps: n x n Gaussians over (position, velocity), bandwidth one cell.
OWN_RBF = {0: 9, 1: 3}


def own_task(task, n):
    """The task's lattice with client c's own feature map: n x n RBFs + bias (not the task's Phi)."""
    rbf = fedirl.uniform_rbf([("position", n, -1.2, 0.6), ("velocity", n, -0.07, 0.07), ("push", "categorical", [1])])
    return fedirl.LatticeTask(task.state.axes, task.action.axes, rbf=rbf)


def prepare(args):
    task = make_task(args.n)
    os.makedirs(args.out, exist_ok=True)
    for method in METHODS:
        spec = {"id": f"rm-{method}", "description": f"MountainCar, clients with their own reward models, {method}",
                "env_family": "lattice", "probe": task.probe(), "theta_dim": task.dim, "irl": IRL,
                "fusion": {"method": method}, "quorum": len(CLIENTS)}
        with open(os.path.join(args.out, f"task-{method}.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f, indent=1)
    for c in range(len(CLIENTS)):
        d = os.path.join(args.out, CLIENTS[c])
        os.makedirs(d, exist_ok=True)
        sim, mdp, q = client_model(c, task)
        _, trajs = rollouts(sim, task, q, seed=100 + c, episodes=args.episodes)
        fedirl.write_demos_jsonl(os.path.join(d, "demos.jsonl"), trajs)
        if c in OWN_RBF:
            mdp.write_npz(os.path.join(d, "mdp.npz"), mdp.features(own_task(task, OWN_RBF[c])))
    print(f"prepared {args.out}: {task.num_states} lattice states x {task.num_actions} actions "
          f"({task.num_pairs} probe points), {args.episodes} demonstrations per client", file=sys.stderr)


def read_demos(path):
    """(state, action) index pairs of every step of the JSON Lines demonstrations."""
    states, actions = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                t = json.loads(line)
                states += t["states"][:len(t["actions"])]
                actions += t["actions"]
    return np.array(states, dtype=np.int64), np.array(actions, dtype=np.int64)


class PolicyNet:
    """A one-hidden-layer tanh network from state coordinates (scaled to [-1, 1] by the lattice's bounds) to
    action logits, trained by full-batch Adam on the cross-entropy of the demonstrated actions (seeded)."""

    def __init__(self, lo, hi, num_actions, hidden=16, seed=0):
        rng = np.random.default_rng(seed)
        self.lo, self.span = np.asarray(lo, float), np.maximum(np.asarray(hi, float) - lo, 1e-12)
        d = len(self.lo)
        self.params = [rng.normal(0, 1 / np.sqrt(d), (d, hidden)), np.zeros(hidden),
                       rng.normal(0, 1 / np.sqrt(hidden), (hidden, num_actions)), np.zeros(num_actions)]

    def _forward(self, x):
        z = 2 * (np.asarray(x, float) - self.lo) / self.span - 1
        w1, b1, w2, b2 = self.params
        h = np.tanh(z @ w1 + b1)
        logits = h @ w2 + b2
        logits -= logits.max(axis=1, keepdims=True)
        logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        return z, h, logp

    def log_policy(self, x):
        return self._forward(x)[2]

    def fit(self, x, a, weight, steps=3000, lr=0.02):
        """Minimizes the weighted mean cross-entropy of actions a at states x; returns it."""
        weight = np.asarray(weight, float) / np.sum(weight)
        m = [np.zeros_like(p) for p in self.params]
        v = [np.zeros_like(p) for p in self.params]
        for t in range(1, steps + 1):
            z, h, logp = self._forward(x)
            g = np.exp(logp)
            g[np.arange(len(a)), a] -= 1
            g *= weight[:, None]  # d(weighted mean cross-entropy)/d logits
            w2 = self.params[2]
            dh = (g @ w2.T) * (1 - h * h)
            grads = [z.T @ dh, dh.sum(0), h.T @ g, g.sum(0)]
            for k, gk in enumerate(grads):
                m[k] = 0.9 * m[k] + 0.1 * gk
                v[k] = 0.999 * v[k] + 0.001 * gk * gk
                self.params[k] -= lr * (m[k] / (1 - 0.9 ** t)) / (np.sqrt(v[k] / (1 - 0.999 ** t)) + 1e-8)
        return -float(np.dot(weight, self.log_policy(x)[np.arange(len(a)), a]))


def nn_reward(task, demos, hidden, seed):
    """The neural client's reward model as a callable on probe points: r(s, a) = log(0.9 pi(a|s) + 0.1/A) of a
    behaviour-cloned policy network (bounded below by log(0.1/A)); and the training loss."""
    states, actions = read_demos(demos)
    pts = task.state.points()
    if len(states) == 0 or states.max() >= len(pts):
        raise SystemExit(f"{demos}: demonstrations must visit lattice states 0..{len(pts) - 1}")
    # Each distinct (state, action) pair once, weighted by how often it was demonstrated.
    pairs, counts = np.unique(np.stack([states, actions], axis=1), axis=0, return_counts=True)
    net = PolicyNet(pts.min(axis=0), pts.max(axis=0), task.num_actions, hidden=hidden, seed=seed)
    loss = net.fit(pts[pairs[:, 0]], pairs[:, 1], counts)
    ds, A = pts.shape[1], task.num_actions

    def reward(points):
        logp = net.log_policy(points[:, :ds])
        pi = np.exp(logp[np.arange(len(points)), np.arange(len(points)) % A])
        return np.log(0.9 * pi + 0.1 / A)
    return reward, loss


def nn_client(args):
    from fedirl import client as fc
    if len(args.task) != len(args.token_file):
        raise SystemExit("give one --token-file per --task, in the same order")
    out = {"client_id": args.id}
    conns, rounds = {}, {}
    for task_id, tok in zip(args.task, args.token_file):
        conns[task_id] = fc.Client(args.server, args.id, fc.read_token(tok, args.id), insecure=args.insecure,
                                   ca=args.ca)
        info = conns[task_id].get_task(task_id)
        spec = info["spec"]
        if spec["env_family"] != "lattice":
            raise SystemExit(f"task {task_id} is of family {spec['env_family']}, not lattice")
        if "local_reward" not in out:  # the tasks share one probe: learn once
            task = fedirl.LatticeTask.from_probe(spec["probe"])
            reward, loss = nn_reward(task, args.demos, args.hidden, args.seed)
            out["local_reward"], out["bc_loss"] = reward(fc.probe_points(spec)).tolist(), loss
        rounds[task_id], msg = conns[task_id].submit_reward(task_id, reward, task=info)
        print(f"{args.id} (python, neural reward): {task_id}: {msg}", file=sys.stderr)
    for task_id, conn in conns.items():
        out[task_id] = conn.fetch_fused(task_id, rounds[task_id], timeout=args.timeout)
        print(f"{args.id} (python, neural reward): {task_id}: fused reward from {len(out[task_id]['clients'])} "
              f"clients by {out[task_id]['method']}", file=sys.stderr)
        conn.close()
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)


def evaluate(args):
    with open(os.path.join(args.out, f"task-{METHODS[0]}.json"), encoding="utf-8") as f:
        task = fedirl.LatticeTask.from_probe(json.load(f)["probe"])
    S, A = task.num_states, task.num_actions
    local, fused = {}, {}
    with open(os.path.join(args.out, CLIENTS[2], "result.json"), encoding="utf-8") as f:
        r2 = json.load(f)
    local[2] = np.array(r2["local_reward"])
    for m in METHODS:
        fused[m] = np.array(r2[f"rm-{m}"]["reward"])
    for c in OWN_RBF:
        for m in METHODS:
            with open(os.path.join(args.out, CLIENTS[c], f"{m}.json"), encoding="utf-8") as f:
                rep = json.load(f)
            if not np.array_equal(np.array(rep["final"]["reward"]), fused[m]):
                raise SystemExit(f"{CLIENTS[c]} received a different fused reward for {m} than {CLIENTS[2]}")
            local[c] = np.array(rep["rounds"][0]["local"]["reward"])
    rows = []
    for c in range(len(CLIENTS)):
        sim, mdp, q_true = client_model(c, task)
        row = {"client": CLIENTS[c], "model": ["rbf 9x9", "rbf 3x3", "neural net"][c],
               "force": PHYSICS[c][0], "gravity": PHYSICS[c][1]}
        rewards = {"expert": None, "local": local[c], **fused}
        for name, r in rewards.items():
            q = q_true if r is None else mdp.value_iteration(r.reshape(S, A), tol=1e-6)
            rets, _ = rollouts(sim, task, q, seed=7, episodes=args.eval_episodes)
            row[name] = float(rets.mean())
        rows.append(row)
    with open(os.path.join(args.out, "returns.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)
    head = (f"{'client':8} {'model':10} | {'expert':>7} {'local':>7} " + " ".join(f"{m:>15}" for m in METHODS))
    lines = [f"planner return in each client's own simulator with each reward on the probe points (mean of "
             f"{args.eval_episodes} episodes from the same seeded starts; -1 per step, -200 = goal not reached)",
             head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['client']:8} {r['model']:10} | {r['expert']:7.1f} {r['local']:7.1f} " +
                     " ".join(f"{r[m]:15.1f}" for m in METHODS))
    text = "\n".join(lines)
    with open(os.path.join(args.out, "returns.txt"), "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=["prepare", "client", "evaluate"])
    ap.add_argument("--out", required=True, help="prepare/evaluate: the example's folder; client: the result JSON")
    ap.add_argument("--n", type=int, default=31, help="lattice points per state axis")
    ap.add_argument("--episodes", type=int, default=20, help="expert demonstrations per client")
    ap.add_argument("--eval-episodes", type=int, default=50, help="evaluation rollouts per client and reward")
    ap.add_argument("--server", default="127.0.0.1:7443", help="server address (client step)")
    ap.add_argument("--insecure", action="store_true", help="plaintext gRPC (loopback only)")
    ap.add_argument("--ca", help="CA bundle PEM of the server's certificate")
    ap.add_argument("--task", action="append", default=[], help="task id (client step; repeat for several)")
    ap.add_argument("--token-file", action="append", default=[], help="token file, one per --task")
    ap.add_argument("--id", default=CLIENTS[2], help="client id (client step)")
    ap.add_argument("--demos", help="the client's demonstrations, JSON Lines of lattice indices (client step)")
    ap.add_argument("--hidden", type=int, default=16, help="hidden units of the policy network")
    ap.add_argument("--seed", type=int, default=0, help="seed of the network's initial weights")
    ap.add_argument("--timeout", type=float, default=120, help="seconds to wait for a fusion (client step)")
    args = ap.parse_args()
    if args.step == "client" and (not args.task or not args.demos):
        ap.error("the client step needs --task, --token-file and --demos")
    {"prepare": prepare, "client": nn_client, "evaluate": evaluate}[args.step](args)


if __name__ == "__main__":
    main()
