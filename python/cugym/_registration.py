"""Gymnasium registration of cugym's envs under the ``cugym/`` namespace."""

import gymnasium

from . import _cugym

NAMESPACE = "cugym"


def env_ids():
    """Ids of every env cugym knows (built-in and loaded from plugins), without the namespace."""
    return list(_cugym.env_ids())


def register_envs(ids):
    """Registers ``cugym/<id>`` for each id: make_vec builds a cugym VectorEnv, make a SingleEnv."""
    for env_id in ids:
        spec = _cugym.env_spec(env_id)
        name = f"{NAMESPACE}/{env_id}"
        if name in gymnasium.registry:
            continue
        gymnasium.register(
            id=name,
            entry_point="cugym.single:SingleEnv",
            vector_entry_point="cugym.vector:VectorEnv",
            max_episode_steps=None,  # the env truncates by itself at its own limit
            reward_threshold=spec["reward_threshold"],
            disable_env_checker=False,
            kwargs={"env_id": env_id},
        )


def register_missing_envs(missing):
    """Registers ``cugym/<id>`` for each (id, reason) of an env this build leaves out, so that
    making one raises DependencyNotInstalled with the reason (what to install), not NameNotFound."""
    for env_id, _reason in missing:
        name = f"{NAMESPACE}/{env_id}"
        if name not in gymnasium.registry:
            gymnasium.register(
                id=name,
                entry_point="cugym.single:SingleEnv",
                vector_entry_point="cugym.vector:VectorEnv",
                kwargs={"env_id": env_id},
            )


def load_plugin(path):
    """Loads a cugym env plugin (a shared library built with cugym_add_env_plugin) and registers
    its envs as ``cugym/<id>``. Returns the ids it added. Raises ValueError with the reason when
    the file is missing, not a cugym plugin, built against another cugym, or adds a duplicate id."""
    added = list(_cugym.load_plugin(str(path)))
    register_envs(added)
    return added
