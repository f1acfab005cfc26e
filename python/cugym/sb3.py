"""cugym vector envs as a Stable-Baselines3 ``VecEnv``.

    from stable_baselines3 import DQN
    from cugym.sb3 import CugymVecEnv
    env = CugymVecEnv("CartPole-v1", num_envs=8, seed=0)
    DQN("MlpPolicy", env).learn(50_000)

SB3's vector envs reset the way Gymnasium's SAME_STEP mode does, so the adapter is thin: ``dones``
is terminated | truncated, and each ended env's info has ``terminal_observation``,
``TimeLimit.truncated`` (truncated and not terminated, which SB3 uses to bootstrap) and the
``episode`` statistics ``{"r", "l", "t"}`` that SB3's logger reads (as ``VecMonitor`` would add).
``seed(s)`` (or the constructor's ``seed``) seeds env i with ``s + i`` at the next reset, SB3's
convention, through cugym's per-env seeds. Needs ``stable-baselines3`` (not a dependency of cugym).
"""

import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from .vector import VectorEnv


class CugymVecEnv(VecEnv):
    """``num_envs`` copies of cugym env ``env_id`` (or an existing CPU ``cugym.VectorEnv`` in
    SAME_STEP mode with episode statistics) behind SB3's ``VecEnv`` interface."""

    def __init__(self, env_id_or_env, num_envs=1, seed=None, device="cpu"):
        if isinstance(env_id_or_env, VectorEnv):
            envs = env_id_or_env
        else:
            envs = VectorEnv(
                env_id_or_env, num_envs, device=device, autoreset_mode=AutoresetMode.SAME_STEP, episode_statistics=True
            )
        if envs.device != "cpu":
            raise ValueError("CugymVecEnv needs a CPU env: SB3 takes NumPy arrays")
        if envs.metadata["autoreset_mode"] != AutoresetMode.SAME_STEP or not envs._episode_statistics:
            raise ValueError(
                "CugymVecEnv needs a SAME_STEP env with episode_statistics=True, as SB3 resets in the step: "
                "cugym.make_vec(id, n, autoreset_mode='SameStep', episode_statistics=True)"
            )
        self.envs = envs
        super().__init__(envs.num_envs, envs.single_observation_space, envs.single_action_space)
        self._actions = None
        if seed is not None:
            self.seed(seed)

    def reset(self):
        seed = None if all(s is None for s in self._seeds) else list(self._seeds)
        obs, _ = self.envs.reset(seed=seed)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def step_async(self, actions):
        self._actions = actions

    def step_wait(self):
        obs, rewards, terminated, truncated, infos = self.envs.step(self._actions)
        dones = terminated | truncated
        out = [{} for _ in range(self.num_envs)]
        if "final_obs" in infos:
            episode = infos["final_info"]["episode"]
            for i in np.flatnonzero(dones):
                out[i] = {
                    "terminal_observation": infos["final_obs"][i],
                    "TimeLimit.truncated": bool(truncated[i] and not terminated[i]),
                    "episode": {"r": float(episode["r"][i]), "l": int(episode["l"][i]), "t": float(episode["t"][i])},
                }
        return obs, rewards, dones, out

    def close(self):
        self.envs.close()

    def get_attr(self, attr_name, indices=None):
        return [getattr(self.envs, attr_name)] * len(list(self._get_indices(indices)))

    def set_attr(self, attr_name, value, indices=None):
        raise AttributeError(f"cugym envs have no per-env attributes to set ({attr_name})")

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        raise AttributeError(f"cugym envs have no per-env methods to call ({method_name})")

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * len(list(self._get_indices(indices)))
