"""Gymnasium registration of cugym's envs under the ``cugym/`` namespace."""

import re
import warnings

import gymnasium
from gymnasium.envs.registration import VectorizeMode

from . import _cugym

NAMESPACE = "cugym"


class _SpecKwargs(dict):
    """The ``kwargs`` of a cugym env spec, which let ``gymnasium.make_vec(id, vector_kwargs=...)``
    reach cugym's VectorEnv as Gymnasium documents ``vector_kwargs``: the arguments of the vector
    env's constructor (``SyncVectorEnv(..., **vector_kwargs)``). Gymnasium 1.x refuses
    ``vector_kwargs`` for an env with a vector entry point (Farama-Foundation/Gymnasium PR 952: pass
    them as keywords), but for cugym the vector entry point *is* the vectorizer, so
    ``vector_kwargs={"autoreset_mode": ...}`` means the same as the keyword. ``make_vec`` pops
    ``vectorization_mode`` and then ``vector_kwargs`` from the spec's kwargs with the caller's
    values as defaults; where the mode is the vector entry point, this dict takes the caller's
    vector_kwargs in as keywords and hands Gymnasium an empty one. ``sync`` and ``async`` get theirs
    untouched. A keyword given both ways is an error."""

    def pop(self, key, *default):
        if key == "vectorization_mode" and key not in self:
            self._mode = default[0] if default else None
        elif key == "vector_kwargs" and key not in self and default and default[0]:
            mode = getattr(self, "_mode", None)
            if mode is None or mode in (VectorizeMode.VECTOR_ENTRY_POINT, VectorizeMode.VECTOR_ENTRY_POINT.value):
                self._moved = dict(default[0])
                super().update(self._moved)
                return {}
        return super().pop(key, *default)

    def update(self, *args, **kwargs):
        other = dict(*args, **kwargs)
        twice = sorted(set(getattr(self, "_moved", {})) & set(other))
        if twice:
            raise TypeError(f"make_vec: {', '.join(twice)} given both as a keyword and in vector_kwargs")
        super().update(other)


def env_ids():
    """Ids of every env cugym knows (built-in and loaded from plugins), without the namespace."""
    return list(_cugym.env_ids())


def env_options(env_id):
    """The boolean options env ``env_id`` takes as keywords, e.g. ``["full_action_space"]`` for
    ``MinAtar-Breakout-v1`` (``gymnasium.make("cugym/MinAtar-Breakout-v1", full_action_space=True)``)."""
    if env_id.startswith(f"{NAMESPACE}/"):
        env_id = env_id[len(NAMESPACE) + 1 :]
    return list(_cugym.env_options(env_id))


def plugins():
    """The loaded plugins: a dict per plugin with its ``path``, the ``license`` it declares (an SPDX
    expression; ``None`` when it declares none) and the env ``ids`` it added."""
    return [
        {"path": path, "license": spdx or None, "ids": [i for i in ids if ":" not in i]}
        for path, spdx, ids in _cugym.plugins()
    ]


def _register(name, env_id, **keys):
    """``cugym/...`` as Gymnasium sees it: make_vec builds a cugym VectorEnv, make a SingleEnv."""
    gymnasium.register(
        id=name,
        entry_point="cugym.single:SingleEnv",
        vector_entry_point="cugym.vector:VectorEnv",
        kwargs=_SpecKwargs(env_id=env_id),
        **keys,
    )


def register_envs(ids):
    """Registers ``cugym/<id>`` for each id: make_vec builds a cugym VectorEnv, make a SingleEnv."""
    for env_id in ids:
        spec = _cugym.env_spec(env_id)
        name = f"{NAMESPACE}/{env_id}"
        if name in gymnasium.registry:
            continue
        _register(
            name,
            env_id,
            max_episode_steps=None,  # the env truncates by itself at its own limit
            reward_threshold=spec["reward_threshold"],
            disable_env_checker=False,
        )
    _register_old_ids()


def _register_old_ids():
    """Registers the old ids that still load (``cugym/MinAtar-Breakout-v0``, now
    ``MinAtar-Breakout-v1`` with ``full_action_space=True``): making one warns once with what it
    is now (cugym's note, a FutureWarning), in place of Gymnasium's "out of date, upgrade to v1",
    which would name the minimal action set."""
    for old_id, _new_id, _note in _cugym.env_aliases():
        name = f"{NAMESPACE}/{old_id}"
        if name in gymnasium.registry:
            continue
        _register(name, old_id, max_episode_steps=None, disable_env_checker=False)
        warnings.filterwarnings(
            "ignore", message=rf".*The environment {re.escape(name)} is out of date", category=DeprecationWarning
        )


def register_missing_envs(missing):
    """Registers ``cugym/<id>`` for each (id, reason) of an env this build leaves out, so that
    making one raises DependencyNotInstalled with the reason (what to install), not NameNotFound."""
    for env_id, _reason in missing:
        name = f"{NAMESPACE}/{env_id}"
        if name not in gymnasium.registry:
            _register(name, env_id)


def load_plugin(path):
    """Loads a cugym env plugin (a shared library built with cugym_add_env_plugin) and registers
    its envs as ``cugym/<id>``. Returns the ids it added. Raises ValueError with the reason when
    the file is missing, not a cugym plugin, built against another cugym, or adds a duplicate id."""
    added = list(_cugym.load_plugin(str(path)))
    register_envs(added)
    return added
