"""Training and trained models from Python: the same DQN runs as ``cugym train`` (the run folder,
metrics.csv, checkpoints, Ctrl-C, resuming are all the C++ trainer's), greedy policies from model
files, and metrics.csv read without pandas."""

import csv
import math
import os
import sys
import time

import numpy as np

from . import _cugym


def train(
    config=None,
    out=None,
    *,
    env_id=None,
    device="auto",
    resume=None,
    save_replay=None,
    progress=True,
    on_log=None,
    on_eval=None,
    **overrides,
):
    """Trains DQN as ``cugym train`` does and returns the run's summary (a dict: run_dir, model,
    checkpoint, global_step, interrupted, eval with the greedy evaluation, metrics, config, and
    from the evaluations during training best_model, best_step, best_mean_return,
    threshold_step and threshold_seconds, None where there were none).

    Args:
        config: a TOML file (``configs/cartpole.toml``), a dict of config keys over the defaults,
            or None for the config shipped for ``env_id`` (or the defaults). Keys: docs/dqn.md.
        out: the run folder (new or empty); default ``runs/<env>_<seed>_<time>``.
        env_id: overrides the config's env_id.
        device: ``"auto"``, ``"cpu"`` or ``"cuda"``.
        resume: a run folder to continue from its last checkpoint (its own config; overrides apply).
        save_replay: whether checkpoints hold the replay memory (None: the config's ``save_replay``,
            true by default, which makes a resumed run exactly the uninterrupted one).
        progress: print cugym train's progress line (to stdout, every 3 s and at the end).
        on_log: called with each metrics row as a dict.
        on_eval: called with each evaluation during training as a dict (global_step, wall_time,
            eval_seconds, mean_return, std_return, min_return, max_return, episodes), once its
            files are written; a true result ends the run as Ctrl-C does (a checkpoint, then
            ``interrupted=True``), and ``train(resume=...)`` continues it exactly.
        **overrides: config keys, e.g. ``total_steps=20000, seed=3``.

    Ctrl-C writes a checkpoint and returns with ``interrupted=True``; resume with
    ``train(resume=summary["run_dir"])``.
    """
    config_path, table = "", None
    if isinstance(config, dict):
        table = dict(config)
    elif config is not None:
        config_path = os.fspath(config)
    if resume is not None and (config is not None or out is not None or env_id is not None):
        raise ValueError("train(resume=...) takes the run's own config and folder; pass only overrides")
    if save_replay is not None:
        overrides["save_replay"] = bool(save_replay)
    last_print = [-math.inf]

    def log(row):
        if progress:
            now = time.monotonic()
            if row["global_step"] >= row["total_steps"] or now - last_print[0] >= 3.0:
                last_print[0] = now
                print(row["line"], flush=True)
        if on_log is not None:
            on_log(row)

    stop_asked = [False]  # on_eval ended the run: no "interrupted" note

    def evaluated(row):
        stop = bool(on_eval(row))
        stop_asked[0] = stop_asked[0] or stop
        return stop

    def write(text):
        sys.stderr.write(text)
        sys.stderr.flush()

    summary = _cugym.train(
        "" if resume is None else os.fspath(resume),
        config_path,
        table,
        env_id or "",
        overrides,
        "" if out is None else os.fspath(out),
        device,
        log,
        None if on_eval is None else evaluated,
        write,
    )
    if summary["interrupted"] and not stop_asked[0]:
        write(
            f"interrupted at step {summary['global_step']}: checkpoint {summary['checkpoint']}; continue with "
            f"cugym.train(resume={summary['run_dir']!r})\n"
        )
    return summary


class Policy:
    """A trained Q network acting greedily: ``policy(obs)`` gives ``argmax_a Q(obs, a)`` for a batch
    of observations (NumPy float32 ``(n, obs_dim)`` on the CPU; a device array on CUDA)."""

    def __init__(self, path, env_id=None, device="cpu"):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no model file {os.fspath(path)!r}")
        self._policy = _cugym._Policy(os.fspath(path), env_id or "", device)
        self.env_id = self._policy.env_id
        self.device = self._policy.device

    def __call__(self, obs):
        if self.device == "cpu":
            obs = np.asarray(obs, dtype=np.float32)
            if obs.ndim == 1:
                return self._policy.act(np.ascontiguousarray(obs[None]))[0]
            obs = np.ascontiguousarray(obs)
            if obs.ndim != 2:
                raise ValueError(f"observations must have shape (n, {self._policy.obs_dim}), got {obs.shape}")
        return self._policy.act(obs)

    act = __call__


def load_policy(path, env_id=None, device="cpu"):
    """The greedy policy of a model file (``model.safetensors`` of a run, or a checkpoint); the env
    comes from the file unless ``env_id`` is given. Raises FileNotFoundError for a missing file,
    ValueError for a damaged one or one that does not fit the env."""
    return Policy(path, env_id, device)


def read_metrics(path):
    """A run's metrics.csv (or the run folder) as a dict of float64 NumPy columns (empty cells are
    NaN)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, "metrics.csv")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise ValueError(f"{path} is empty")
    header, body = rows[0], rows[1:]
    return {
        name: np.array([float(r[k]) if r[k] != "" else math.nan for r in body], dtype=np.float64)
        for k, name in enumerate(header)
    }
