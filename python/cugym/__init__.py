"""cugym: batched classic-control environments on the CPU and GPU as Gymnasium 1.x vector envs,
and cugym's DQN trainer, from Python.

    import cugym, gymnasium
    envs = gymnasium.make_vec("cugym/CartPole-v1", num_envs=1024)   # or cugym.make_vec(...)

Every built-in env is registered as ``cugym/<id>`` on import; ``cugym.load_plugin(path)``
registers the envs of a plugin the same way. See docs/python.md.
"""

import os as _os
import warnings as _warnings

from . import _cugym, stats
from ._registration import env_ids, env_options, load_plugin, plugins, register_envs, register_missing_envs
from .single import SingleEnv, make
from .training import Policy, load_policy, read_evals, read_metrics, train
from .vector import VectorEnv, make_vec

__version__ = _cugym.__version__  # project(cugym VERSION ...) in CMakeLists.txt, the one source
cuda_built = _cugym.cuda_built
cuda_available = _cugym.cuda_available

# The plugins shipped in the package (MinAtar, in cugym/plugins/) and those CUGYM_PLUGIN_PATH names.
for _skipped in _cugym.load_default_plugins(_os.path.join(_os.path.dirname(__file__), "plugins")):
    _warnings.warn(_skipped, stacklevel=2)
register_envs(_cugym.env_ids())
register_missing_envs(_cugym.missing_envs())

__all__ = [
    "VectorEnv",
    "SingleEnv",
    "Policy",
    "make_vec",
    "make",
    "train",
    "load_policy",
    "read_metrics",
    "read_evals",
    "stats",
    "load_plugin",
    "env_ids",
    "env_options",
    "plugins",
    "cuda_built",
    "cuda_available",
]
