#!/usr/bin/python3
"""Writes the .npz MDP and imitation-layout fixtures read by npz_test.go.

Run with Debian's python3 and numpy:  /usr/bin/python3 make_mdp_npz.py
mdp.npz is format_test.go's tinySpec (3 states, 2 actions, state 2 terminal)
as sparse transitions (CSR rows k = s*A + a; the terminal state's rows are
empty); imitation.npz holds the demonstrations of demos.npz in imitation's
concatenated layout (obs: T_i+1 state indices per episode, acts, indices).
"""
import numpy as np

S, A = 3, 2
rows = {(0, 0): [(0, 1.0)], (0, 1): [(1, 0.9), (0, 0.1)], (1, 0): [(0, 1.0)], (1, 1): [(2, 1.0)]}
row_ptr, nxt, prob = [0], [], []
for s in range(S):
    for a in range(A):
        for n, p in rows.get((s, a), []):
            nxt.append(n)
            prob.append(p)
        row_ptr.append(len(nxt))
features = np.array([[1, 0], [0, 0], [0, 0], [0, 1], [0, 0], [0, 0]], dtype=np.float64)
good = dict(num_states=S, num_actions=A, gamma=0.9, terminal=np.array([2]), row_ptr=np.array(row_ptr),
            next=np.array(nxt), prob=np.array(prob), features=features)
np.savez("mdp.npz", **good)
np.savez_compressed("mdp_int32.npz", **{k: (v.astype(np.int32) if isinstance(v, np.ndarray) and v.dtype == np.int64 else v)
                                         for k, v in good.items()})
# Malformed variants: each names one array.
np.savez("bad_mdp_next.npz", **{**good, "next": np.array([0, 1, 0, 0, 5])})
np.savez("bad_mdp_gamma.npz", **{k: v for k, v in good.items() if k != "gamma"})
np.savez("bad_mdp_features.npz", **{**good, "features": features.ravel()})
np.savez("bad_mdp_prob.npz", **{**good, "prob": np.array([1, 1, 0, 1, 1])})
np.savez("bad_mdp_rowptr.npz", **{**good, "row_ptr": np.array(row_ptr[:-1])})
np.savez("bad_mdp_states.npz", **{**good, "num_states": 0})

# imitation's layout of demos.npz's three trajectories (the last ends without its final state in
# demos.npz; imitation always stores T+1 observations, so it gets one here).
eps = [([0, 1, 2], [1, 1]), ([0, 0, 1, 2], [0, 1, 1]), ([1, 0, 0], [0, 1])]
obs = np.concatenate([np.array(o) for o, _ in eps])
acts = np.concatenate([np.array(a) for _, a in eps])
indices = np.cumsum([len(a) for _, a in eps[:-1]])
np.savez("imitation.npz", obs=obs, acts=acts, indices=indices, rews=np.zeros(len(acts)),
         terminal=np.array([True, True, False]))
np.savez("bad_imitation_float.npz", obs=obs.astype(np.float64), acts=acts, indices=indices)
np.savez("bad_imitation_len.npz", obs=obs[:-1], acts=acts, indices=indices)
bad_range = obs.copy(); bad_range[4] = 9
np.savez("bad_imitation_range.npz", obs=bad_range, acts=acts, indices=indices)
