"""Extract NumPy draws recorded by Gymnasium into draws.json (run from this folder).

Usage: python3 extract.py /path/to/shared/reference/bipedalwalker
Reads the random-policy BipedalWalker reference episodes (recorded with numpy 1.24.2 by
record.py there) and writes, per file, the seed and every draw that reset made
from default_rng-equivalent seeding (fn, args, value, in order), plus the
random files' first 8 actions, which are np.random.default_rng(seed).uniform(-1, 1,
size=(N, 4)).astype(np.float32).
"""
import json
import os
import sys

src = sys.argv[1]
out = []
for name in sorted(os.listdir(src)):
    if not (name.endswith(".json") and name.startswith("random-")):
        continue  # the heuristic files of a seed hold the same reset draws
    with open(os.path.join(src, name)) as f:
        d = json.load(f)
    draws = [dict(fn=r["fn"], args=r["args"], value=r["value"]) for r in d["steps"][0]["rng_draws"]]
    item = dict(file=name, seed=d["reset_seed"], draws=draws)
    if d["actions_from"].startswith("np.random.default_rng"):
        item["actions_f32"] = d["actions"][:8]
    out.append(item)
with open("draws.json", "w") as f:
    json.dump(out, f, separators=(",", ":"))
    f.write("\n")
