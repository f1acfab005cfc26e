"""One cugym env as a ``gymnasium.Env`` (``gymnasium.make("cugym/CartPole-v1")``): a batch of one
on the CPU with autoreset off, for code and checkers written for single envs. Batched code
should use the vector env, which is where cugym's speed is."""

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from .vector import VectorEnv


class SingleEnv(gymnasium.Env):
    # Read by gymnasium.make before the env exists (its render_mode check); render_fps is per env.
    metadata = {"render_modes": ["rgb_array"], "render_fps": None}

    def __init__(self, env_id, render_mode=None, **options):
        """``options``: the env's boolean options, e.g. ``full_action_space=True`` (VectorEnv)."""
        self._vec = VectorEnv(
            env_id,
            1,
            device="cpu",
            autoreset_mode=AutoresetMode.DISABLED,
            render_mode=render_mode,
            render_envs=1,
            **options,
        )
        self.observation_space = self._vec.single_observation_space
        self.action_space = self._vec.single_action_space
        self.render_mode = render_mode
        self.metadata = {"render_modes": ["rgb_array"], "render_fps": self._vec.metadata["render_fps"]}
        self._seed = None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is None:  # Gymnasium's single envs draw fresh seeds from their np_random
            seed = int(self.np_random.integers(0, 2**63))
        obs, _ = self._vec.reset(seed=seed)
        return obs[0], {}

    def step(self, action):
        if self._vec._env.has_ended:
            raise RuntimeError(f"{self._vec.env_id}: the episode has ended; call reset()")
        a = np.asarray(action)
        if self._vec._discrete:
            if a.shape != () or a.dtype.kind not in "iu":
                raise TypeError(f"{self._vec.env_id} takes one integer action in {self.action_space}, got {action!r}")
            a = a.reshape(1)
        else:
            a = a.reshape((1,) + self.action_space.shape)
        obs, reward, terminated, truncated, _ = self._vec.step(a)
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), {}

    def render(self):
        frames = self._vec.render()
        return None if frames is None else frames[0]

    def close(self):
        self._vec.close()
        super().close()


def make(env_id, **kwargs):
    """``gymnasium.make("cugym/<env_id>", **kwargs)``."""
    if not env_id.startswith("cugym/"):
        env_id = "cugym/" + env_id
    return gymnasium.make(env_id, **kwargs)
