# cugym_gym029.py - cugym's envs for code written against Gymnasium 0.29's vector API, which
# CleanRL's dqn.py pins: same-step autoreset with the 0.29 info keys `final_observation` (object
# array) and `final_info` (object array of per-env info dicts, with RecordEpisodeStatistics'
# {"episode": {"r", "l", "t"}} in them), masks `_final_observation` / `_final_info`.
#
# The cugym package itself needs Gymnasium 1.x (its VectorEnv subclasses 1.x's, with 1.x's info
# layout), so `import cugym` fails under 0.29. This module therefore loads only the package's
# compiled extension, cugym/_cugym*.so, by its path (without running cugym/__init__.py) and builds
# the 0.29 layout from the 1.x one that the extension's step returns; spaces are 0.29's own.
# Install the package into the 0.29 venv without its dependencies (it would pull gymnasium 1.x):
#
#   /tmp/cleanrl/bin/pip install --no-deps .        (from the repository root)
#
# Developer tool for bench/cleanrl_cartpole.py --envs cugym; not part of the package.
import glob
import importlib.machinery
import importlib.util
import os
import sys

import gymnasium
import numpy as np
from gymnasium.vector.utils import batch_space


def load_extension():
    """cugym._cugym, loaded from the installed package's folder without importing the package."""
    if "cugym._cugym" in sys.modules:
        return sys.modules["cugym._cugym"]
    spec = importlib.util.find_spec("cugym")  # finds the package; runs none of it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the cugym package is not installed in this venv (pip install --no-deps . from the repo)")
    paths = [p for d in spec.submodule_search_locations for p in glob.glob(os.path.join(d, "_cugym*.so"))]
    if not paths:
        raise ImportError(f"no compiled cugym extension (_cugym*.so) in {list(spec.submodule_search_locations)}")
    loader = importlib.machinery.ExtensionFileLoader("cugym._cugym", paths[0])
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("cugym._cugym", loader))
    loader.exec_module(module)
    sys.modules["cugym._cugym"] = module
    return module


def _spaces(spec):
    o, a = spec["observation_space"], spec["action_space"]
    obs = gymnasium.spaces.Box(
        np.asarray(o["low"], np.float32).reshape(o["shape"]),
        np.asarray(o["high"], np.float32).reshape(o["shape"]),
        dtype=np.float32,
    )
    if a["kind"] == "discrete":
        return obs, gymnasium.spaces.Discrete(a["n"])
    return obs, gymnasium.spaces.Box(
        np.asarray(a["low"], np.float32).reshape(a["shape"]),
        np.asarray(a["high"], np.float32).reshape(a["shape"]),
        dtype=np.float32,
    )


class VectorEnv029:
    """num_envs cugym envs on the CPU with Gymnasium 0.29's SyncVectorEnv interface (same-step
    autoreset, 0.29 info keys). `seed` seeds the single action space, as CleanRL's make_env does."""

    metadata = {"autoreset": True}
    is_vector_env = True

    def __init__(self, env_id, num_envs=1, seed=None):
        ext = load_extension()
        spec = ext.env_spec(env_id)
        self._env = ext._VectorEnv(env_id, int(num_envs), "cpu")
        self._env.configure("same_step", True)
        self.num_envs = int(num_envs)
        self.single_observation_space, self.single_action_space = _spaces(spec)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        if seed is not None:
            self.single_action_space.seed(seed)
            self.action_space.seed(seed)
        self._rng = np.random.default_rng(seed)
        self.closed = False

    def reset(self, seed=None, options=None):
        """seed: an int (env i then follows Gymnasium's seed + i convention) or None."""
        if seed is None:
            seed = int(self._rng.integers(0, 2**63))
        return self._env.reset(int(seed)), {}

    def step(self, actions):
        obs, rewards, terminated, truncated, infos = self._env.step(np.asarray(actions))
        if "final_obs" not in infos:
            return obs, rewards, terminated, truncated, {}
        ended = infos["_final_obs"]
        episode = infos["final_info"]["episode"]
        final_info = np.full(self.num_envs, None, dtype=object)
        for i in np.flatnonzero(ended):
            # 0.29's single-env RecordEpisodeStatistics gives one-element arrays.
            final_info[i] = {
                "episode": {
                    "r": np.array([episode["r"][i]], np.float32),
                    "l": np.array([episode["l"][i]], np.int32),
                    "t": np.array([episode["t"][i]], np.float32),
                }
            }
        return (
            obs,
            rewards,
            terminated,
            truncated,
            {
                "final_observation": infos["final_obs"],
                "_final_observation": ended,
                "final_info": final_info,
                "_final_info": ended,
            },
        )

    def close(self):
        if not self.closed:
            self._env.close()
            self.closed = True


def make_vec(env_id, num_envs=1, seed=None):
    """A VectorEnv029 of cugym's `env_id` (a Gymnasium id such as "CartPole-v1")."""
    return VectorEnv029(env_id, num_envs, seed=seed)
