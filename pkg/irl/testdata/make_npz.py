#!/usr/bin/python3
"""Writes the .npz demonstration fixtures read by format_test.go (TestReadTrajectoriesNPZ).

Run with Debian's python3 and numpy:  /usr/bin/python3 make_npz.py
Layout: "states" (N x Ls) and "actions" (N x La) integer arrays, each row
padded with -1 after the trajectory ends; Ls is La or La+1.
"""
import numpy as np

states = np.array([[0, 1, 2, -1], [0, 0, 1, 2], [1, 0, -1, -1]], dtype=np.int64)
actions = np.array([[1, 1, -1], [0, 1, 1], [0, -1, -1]], dtype=np.int64)
np.savez("demos.npz", states=states, actions=actions)
np.savez_compressed("demos_int32.npz", states=states.astype(np.int32), actions=actions.astype(np.int32))
# Malformed variants.
np.savez("bad_float.npz", states=states.astype(np.float64), actions=actions)
np.savez("bad_missing.npz", states=states)
np.savez("bad_1d.npz", states=states[0], actions=actions[0])
np.savez("bad_rows.npz", states=states[:2], actions=actions)
gap = actions.copy(); gap[1, 1] = -1
np.savez("bad_gap.npz", states=states, actions=gap)
rng = states.copy(); rng[2, 1] = 7
np.savez("bad_range.npz", states=rng, actions=actions)
