#!/usr/bin/env python3
"""Writes empty_dicts_N.npy: np.save of np.full(N, {}) (an object array of empty dicts, as imitation writes the
infos of trajectories without info dicts), the golden files of TestEncodeEmptyDicts. Needs numpy.

  /usr/bin/python3 pkg/npy/testdata/make_empty_dicts.py
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
for n in (1, 2, 3, 255, 256, 1000, 1001, 2001):
    np.save(os.path.join(HERE, f"empty_dicts_{n}.npy"), np.full(n, {}), allow_pickle=True)
