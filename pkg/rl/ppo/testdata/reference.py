#!/usr/bin/python3
"""Reference reader of fedirl PPO checkpoints ("fedirl-ppo-policy/1"), written
from the format documentation in policy.go, independent of the Go code.

It evaluates each policy-*.json here on fixed observations and writes
expected.json: the actor outputs (logits or Gaussian means), the greedy
action and the critic value per observation. ppo's TestCheckpointMatchesPython
compares the Go policy with it. Regenerate with:
    /usr/bin/python3 reference.py
"""
import json
import glob
import numpy as np

ACT = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0), "identity": lambda x: x}


def net(spec, x):
    p = np.asarray(spec["params"], dtype=np.float64)
    off = 0
    for l, a in enumerate(spec["activations"]):
        i, o = spec["sizes"][l], spec["sizes"][l + 1]
        W = p[off:off + o * i].reshape(o, i)
        off += o * i
        b = p[off:off + o]
        off += o
        x = ACT[a](W @ x + b)
    assert off == len(p)
    return x


def main():
    out = {}
    for path in sorted(glob.glob("policy-*.json")):
        c = json.load(open(path))
        assert c["format"] == "fedirl-ppo-policy/1"
        d = c["obs_dim"]
        rng = np.random.default_rng(0)
        rows = []
        for _ in range(5):
            obs = rng.normal(size=d) * 2.0
            x = obs
            n = c.get("obs_norm")
            if n:
                x = np.clip((obs - np.asarray(n["mean"])) / np.sqrt(np.asarray(n["var"]) + n["epsilon"]), -n["clip"], n["clip"])
            a = net(c["actor"], x)
            v = net(c["critic"], x)[0]
            if "n" in c["action"]:
                greedy = [float(np.argmax(a))]
            else:
                greedy = list(np.clip(a, c["action"]["low"], c["action"]["high"]))
            rows.append({"obs": list(obs), "actor": list(a), "greedy": greedy, "value": float(v)})
        out[path] = rows
    json.dump(out, open("expected.json", "w"), indent=1)


if __name__ == "__main__":
    main()
