"""cugym envs as a Gymnasium 1.x ``VectorEnv``.

The C++ step writes each step's observations, rewards and flags straight into new arrays
(NumPy on the CPU, DLPack device arrays on CUDA), so results are never views of a buffer the
next step overwrites, and nothing is copied after the step. Autoreset modes:

- NEXT_STEP (the default on the CPU, as Gymnasium's own ``make_vec``): the ending step returns the
  true last observation; the next step resets those envs (their actions are ignored, reward 0,
  flags False).
- SAME_STEP (cugym's native mode, the fastest, and the default on CUDA): an env that ends is reset
  inside the step; ``infos["final_obs"]`` (object array) and ``infos["final_info"]`` hold the last
  observation and (with ``episode_statistics=True``) the statistics.
- DISABLED: ended envs stay ended until ``reset(options={"reset_mask": mask})``.

By default the info dict has no ``episode`` key, as Gymnasium's envs (so that Gymnasium's
``RecordEpisodeStatistics`` can add it); ``episode_statistics=True`` has the C++ step add it.
"""

import warnings

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from . import _cugym
from ._spaces import single_spaces

_MODES = {m.value.lower(): m for m in AutoresetMode}
_MODES.update({m.name.lower(): m for m in AutoresetMode})
_DEFAULT_RENDER_ENVS = 16
_NATIVE_MODES = {
    AutoresetMode.SAME_STEP: "same_step",
    AutoresetMode.NEXT_STEP: "next_step",
    AutoresetMode.DISABLED: "disabled",
}


def _autoreset_mode(mode):
    if isinstance(mode, AutoresetMode):
        return mode
    key = str(mode).lower()
    if key not in _MODES:
        raise ValueError(
            f"autoreset_mode must be a gymnasium.vector.AutoresetMode or one of "
            f"{sorted({m.value for m in AutoresetMode})}, got {mode!r}"
        )
    return _MODES[key]


def _resolve_env_id(env_id, options):
    """The registry id of ``env_id`` with the boolean ``options`` (keywords such as
    ``full_action_space=True``): ``"ID:OPTION"`` for an option that is on (core/registry.h's
    variants). An old id that still loads (``MinAtar-Breakout-v0``) is resolved with a one-line
    FutureWarning saying what it is now. Raises DependencyNotInstalled, UnregisteredEnv or
    TypeError with the reason."""
    if isinstance(env_id, str) and env_id.startswith("cugym/"):
        env_id = env_id[len("cugym/") :]
    missing = dict(_cugym.missing_envs())  # left out of this build: say what it needs
    if env_id in missing:
        raise gymnasium.error.DependencyNotInstalled(f"{env_id} {missing[env_id]}")
    aliases = {old: (new, note) for old, new, note in _cugym.env_aliases()}
    if env_id in aliases:
        env_id, note = aliases[env_id]
        warnings.warn(note, FutureWarning, stacklevel=4)
    base, _, option = env_id.partition(":")
    known = _cugym.env_ids()
    if base not in known:
        raise gymnasium.error.UnregisteredEnv(
            f"cugym has no env {env_id!r}; known: {', '.join(known)} (plugins: cugym.load_plugin(path))"
        )
    on = [option] if option else []
    allowed = _cugym.env_options(base)
    for name, value in options.items():
        if name not in allowed:
            has = f"its options: {', '.join(allowed)}" if allowed else "it has none"
            raise TypeError(
                f"unexpected keyword {name!r}: neither a cugym.VectorEnv keyword nor an option of {base} ({has})"
            )
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{base}: option {name} must be True or False, got {value!r}")
        if value and name not in on:
            on.append(name)
        elif not value and name in on:
            on.remove(name)
    if len(on) > 1:
        raise ValueError(f"{base}: options {', '.join(on)} cannot be combined (cugym has no such variant)")
    resolved = f"{base}:{on[0]}" if on else base
    if on and on[0] not in allowed:
        _cugym.env_spec(resolved)  # ValueError: the env has no such option, and which it has
    return resolved


def _random_seed():
    return int(np.random.SeedSequence().generate_state(1, np.uint64)[0])


def _mixed(seed, count):
    """The seed (an int, or a tuple per env) of the count-th unseeded reset after `seed`:
    splitmix64's increment."""
    if isinstance(seed, int):
        return (seed + count * 0x9E3779B97F4A7C15) % (1 << 64)
    return tuple((s + count * 0x9E3779B97F4A7C15) % (1 << 64) for s in seed)


def _checked_seed(seed, num_envs):
    """An int seed, or a tuple of num_envs int seeds (None entries drawn at random); TypeError or
    ValueError with the reason otherwise."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        if seed < 0:
            raise ValueError(f"seed must be >= 0, got {seed}")
        if seed >= 1 << 64:
            raise ValueError(f"seed must be below 2**64, got {seed}")
        return int(seed)
    if isinstance(seed, (str, bytes, dict, set)) or not hasattr(seed, "__len__"):
        raise TypeError(f"seed must be an int, a list of {num_envs} ints (one per env) or None, got {seed!r}")
    seeds = list(seed.tolist() if isinstance(seed, np.ndarray) else seed)
    if len(seeds) != num_envs:
        raise ValueError(f"seed: expected {num_envs} seeds, one per env, got {len(seeds)}")
    for i, s in enumerate(seeds):
        if s is None:
            seeds[i] = _random_seed()
        elif isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"seed[{i}] must be an int or None, got {s!r}")
        elif s < 0 or s >= 1 << 64:
            raise ValueError(f"seed[{i}] must be in [0, 2**64), got {s}")
        else:
            seeds[i] = int(s)
    return tuple(seeds)


class VectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` copies of a cugym env stepped together on one device.

    Args:
        env_id: a cugym id such as ``"CartPole-v1"`` (``cugym.env_ids()``); the ``cugym/``
            namespace prefix is accepted.
        num_envs: envs stepped together.
        device: ``"cpu"``, ``"cuda"`` or ``"auto"`` (CUDA when a GPU is usable).
        seed: seed of the first ``reset()`` when it is given none (an int or one per env, as in
            ``reset``).
        autoreset_mode: ``AutoresetMode.NEXT_STEP``, ``SAME_STEP`` or ``DISABLED`` (or their
            string values). Default (None): NEXT_STEP, Gymnasium's default, on the CPU; SAME_STEP on
            CUDA, which runs no NEXT_STEP. SAME_STEP is cugym's native mode and the fastest (no
            step lost to resets): the one to pick for cugym's own loops and SB3.
        render_mode: ``None`` or ``"rgb_array"``.
        render_envs: how many envs ``render()`` draws (the first ones), or a list of indices;
            default the first 16.
        episode_statistics: add the finished episodes' ``{"r", "l", "t"}`` in Gymnasium's
            ``episode`` keys (computed by the C++ step, cheaper than a wrapper). Default False, as
            Gymnasium's envs: Gymnasium's own ``RecordEpisodeStatistics`` refuses an info that
            already has them.
        max_episode_steps: accepted for Gymnasium's ``make_vec``; must be the env's own limit.
        **options: the env's boolean options (``cugym.env_options(id)``), e.g.
            ``full_action_space=True`` for MinAtar's six actions (ALE's keyword).
    """

    def __init__(
        self,
        env_id,
        num_envs=1,
        device="cpu",
        seed=None,
        autoreset_mode=None,
        render_mode=None,
        render_envs=None,
        episode_statistics=False,
        max_episode_steps=None,
        **options,
    ):
        env_id = _resolve_env_id(env_id, options)
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        spec = _cugym.env_spec(env_id)
        if max_episode_steps is not None and max_episode_steps != spec["max_episode_steps"]:
            raise ValueError(
                f"{env_id} truncates at {spec['max_episode_steps']} steps; cugym cannot change "
                f"that (got max_episode_steps={max_episode_steps})"
            )
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self._env = _cugym._VectorEnv(env_id, int(num_envs), device)
        if autoreset_mode is None:  # Gymnasium's default where the device has it
            autoreset_mode = AutoresetMode.NEXT_STEP if self._env.device == "cpu" else AutoresetMode.SAME_STEP
        self._mode = _autoreset_mode(autoreset_mode)
        if self._env.device != "cpu" and self._mode == AutoresetMode.NEXT_STEP:
            raise ValueError(
                "autoreset_mode NEXT_STEP needs device='cpu' (its deferred resets are kept on the host); "
                "use SAME_STEP on CUDA"
            )
        self._env.configure(_NATIVE_MODES[self._mode], bool(episode_statistics))
        self.env_id = env_id
        self.device = self._env.device
        self.num_envs = int(num_envs)
        self.max_episode_steps = spec["max_episode_steps"]
        self.render_mode = render_mode
        self._render_envs = render_envs
        self.metadata = {"autoreset_mode": self._mode, "render_modes": ["rgb_array"], "render_fps": spec["render_fps"]}
        self.single_observation_space, self.single_action_space = single_spaces(spec)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._discrete = spec["action_space"]["kind"] == "discrete"
        self._base_seed = None if seed is None else _checked_seed(seed, self.num_envs)
        self._unseeded_resets = 0
        self._reset_done = False
        self._spec = spec
        self._episode_statistics = bool(episode_statistics)
        if type(self).step is VectorEnv.step:
            self.step = self._env.step  # the same call without this class's Python frame (see step)

    # -- reset and step -------------------------------------------------------------------------

    def reset(self, *, seed=None, options=None):
        """Starts new episodes and returns ``(obs, {})``.

        ``seed``: an int ``s`` or a list of ``num_envs`` ints (Gymnasium's convention: env i gets
        ``seed[i]``, and an int ``s`` means ``[s, s + 1, ..., s + num_envs - 1]``); a ``None`` entry
        gives that env a fresh random seed. Env i's trajectory then depends only on its seed and
        its index. Seeds must be >= 0. ``None``: the constructor's seed the first time (a random
        one if none was given), then seeds derived from the last ones. ``options={"reset_mask":
        mask}`` resets only the envs where the bool mask is True (``seed`` must then be None).
        """
        self._check_open()
        mask = None if options is None else options.get("reset_mask")
        if mask is not None:
            return self._reset_masked(mask, seed)
        if seed is None:
            if self._base_seed is None:
                self._base_seed = _random_seed()
            if self._reset_done:
                self._unseeded_resets += 1
            seed = _mixed(self._base_seed, self._unseeded_resets)
        else:
            self._base_seed, self._unseeded_resets = _checked_seed(seed, self.num_envs), 0
            seed = self._base_seed
        if isinstance(seed, int):
            obs = self._env.reset(seed)
        else:
            # env i draws from (key_i, i); key_i = seed_i - i makes [s, s+1, ...] the same as s.
            keys = (np.array(seed, np.uint64) - np.arange(self.num_envs, dtype=np.uint64)).astype(np.uint64)
            obs = self._env.reset_seeds(keys)
        self._np_random_seed = seed if isinstance(seed, int) else tuple(seed)
        self._reset_done = True
        return obs, {}

    def _reset_masked(self, mask, seed):
        if seed is not None:
            raise ValueError(
                "reset(seed=..., options={'reset_mask': ...}): cugym seeds the whole batch; "
                "reset the masked envs without a seed"
            )
        mask = np.asarray(mask)
        if mask.dtype != np.bool_ or mask.shape != (self.num_envs,):
            raise ValueError(
                f"reset_mask must be a bool array of shape ({self.num_envs},), got {mask.dtype} {mask.shape}"
            )
        if not mask.any():
            raise ValueError("reset_mask must have at least one True")
        return self._env.reset_masked(np.ascontiguousarray(mask)), {}

    def step(self, actions):
        """One step of every env: ``(obs, rewards, terminations, truncations, infos)``.

        The C++ step takes the actions as they come (a NumPy array as it is; lists, scalars and
        CPU tensors through ``np.asarray``; on CUDA any DLPack array on the device), checks them,
        steps, and builds the info dict of the autoreset mode (on the CPU). An env of this class
        binds ``step`` to that call directly, so a step costs one call from Python."""
        return self._env.step(actions)

    # -- rendering and the rest -----------------------------------------------------------------

    def render(self):
        """A tuple of (height, width, 3) uint8 frames, drawn by the env itself (its Canvas drawing,
        rasterized on the CPU; no window or SDL needed), one per rendered env."""
        self._check_open()
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; make the env with render_mode='rgb_array'")
            return None
        if not self._reset_done:
            raise RuntimeError("call reset() before render()")
        envs = self._render_envs
        if envs is None:
            envs = range(min(self.num_envs, _DEFAULT_RENDER_ENVS))
        elif isinstance(envs, (int, np.integer)):
            envs = range(min(self.num_envs, int(envs)))
        return tuple(self._env.render(int(i)) for i in envs)

    def close_extras(self, **kwargs):
        self._env.close()

    def _check_open(self):
        if self._env.closed:
            raise RuntimeError(f"this cugym {self.env_id} env is closed")

    def __repr__(self):
        return (
            f"cugym.VectorEnv({self.env_id!r}, num_envs={self.num_envs}, device={self.device!r}, "
            f"autoreset_mode={self._mode.name})"
        )


def make_vec(env_id, num_envs=1, device="cpu", seed=None, autoreset_mode=None, **kwargs):
    """``num_envs`` copies of cugym env ``env_id`` as a Gymnasium vector env (see VectorEnv); the
    defaults are Gymnasium's (NEXT_STEP on the CPU, no ``episode`` key in the info)."""
    return VectorEnv(env_id, num_envs, device=device, seed=seed, autoreset_mode=autoreset_mode, **kwargs)
