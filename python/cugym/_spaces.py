"""Gymnasium spaces from a cugym env spec."""

import numpy as np
from gymnasium import spaces


def single_spaces(spec):
    """(observation_space, action_space) of one env."""
    o = spec["observation_space"]
    obs = spaces.Box(
        np.asarray(o["low"], np.float32).reshape(o["shape"]),
        np.asarray(o["high"], np.float32).reshape(o["shape"]),
        dtype=np.float32,
    )
    a = spec["action_space"]
    if a["kind"] == "discrete":
        act = spaces.Discrete(a["n"])
    else:
        act = spaces.Box(
            np.asarray(a["low"], np.float32).reshape(a["shape"]),
            np.asarray(a["high"], np.float32).reshape(a["shape"]),
            dtype=np.float32,
        )
    return obs, act
