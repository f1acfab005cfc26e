"""Training and trained models from Python: the same DQN runs as ``cugym train`` (the run folder,
metrics.csv, checkpoints, Ctrl-C, resuming are all the C++ trainer's), greedy policies from model
files, and metrics.csv read without pandas."""

import csv
import json
import math
import operator
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
    seeds=None,
    sweep=None,
    jobs=0,
    lockstep=None,
    **overrides,
):
    """Trains DQN, PQN, PPO or SAC (the config's ``algo``, or ``algo="ppo"`` or ``"sac"``) as
    ``cugym train`` does and returns the run's summary (a dict: run_dir, model, checkpoint,
    global_step, interrupted, eval with the greedy evaluation, metrics, config, and from the
    evaluations during training best_model, best_step, best_mean_return, threshold_step and
    threshold_seconds, None where there were none).

    Args:
        config: a TOML file (``configs/cartpole.toml``), a dict of config keys over the defaults,
            or None for the config shipped for ``env_id`` (or the defaults). Keys: docs/dqn.md,
            docs/pqn.md, docs/ppo.md, docs/sac.md.
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
        seeds: many runs in one process (``cugym train --seeds``): an iterable of seeds (integers
            in [0, 2**64)), e.g. ``range(1, 33)``; ``out`` is then the batch folder (required), each
            seed's run folder ``out/seed_S`` (or ``out/POINT/seed_S``) is the one ``seed=S`` alone
            gives, bit for bit, and the result is summary.json's dict (per grid point: the seeds
            that reach the env's threshold, IQM and mean return with 95% bootstrap intervals, time
            to threshold, and every run) plus ``batch_dir`` and ``interrupted``. ``resume`` continues a batch, its
            overrides reaching every run (``total_steps=`` extends them all).
        sweep: with ``seeds``: a dict of config keys to lists of values (one value needs no list),
            crossed with each other and the seeds, e.g. ``{"learning_rate": [1e-3, 2.3e-3]}`` (keys
            that change array shapes are refused: run those separately or on Ray Tune,
            docs/sweeps.md).
        jobs: runs (or lockstep batches) trained at once on the CPU (0: one per hardware thread).
        lockstep: with ``seeds``: train each grid point's seeds in lockstep as one batched
            network (``cugym train --lockstep``); None: on CUDA where the config allows, True
            refuses a config that cannot be batched, False trains every seed as a run of its own.
        **overrides: config keys, e.g. ``total_steps=20000, seed=3``.

    Ctrl-C writes a checkpoint and returns with ``interrupted=True``; resume with
    ``train(resume=summary["run_dir"])``.
    """
    if seeds is not None or sweep is not None or (resume is not None and _is_batch(resume)):
        if on_log is not None or on_eval is not None:
            raise ValueError("train(seeds=...) runs many runs at once: on_log and on_eval are for one run")
        return _train_many(config, out, env_id, device, resume, seeds, sweep, jobs, lockstep, progress, overrides)
    config_path, table = _config_source(config)
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
        _write_notes,
    )
    if summary["interrupted"] and not stop_asked[0]:
        _write_notes(
            f"interrupted at step {summary['global_step']}: checkpoint {summary['checkpoint']}; continue with "
            f"cugym.train(resume={summary['run_dir']!r})\n"
        )
    return summary


def _config_source(config):
    """(config_path, table) for the extension: a TOML file, or a dict of keys, or neither."""
    if isinstance(config, dict):
        return "", dict(config)
    return ("" if config is None else os.fspath(config)), None


def _write_notes(text):
    """The trainer's notes, as cugym train prints them: on stderr."""
    sys.stderr.write(text)
    sys.stderr.flush()


def _is_batch(folder):
    return os.path.isfile(os.path.join(os.fspath(folder), "batch.toml"))


def _train_many(config, out, env_id, device, resume, seeds, sweep, jobs, lockstep, progress, overrides):
    """train(seeds=..., sweep=...): agents/run/multi_run.h through the extension."""
    config_path, table = _config_source(config)
    if resume is not None:
        if config is not None or out is not None or env_id is not None or seeds is not None or sweep is not None:
            raise ValueError("train(resume=BATCH) takes the batch's own config, seeds and sweep")
    elif out is None:
        raise ValueError("train(seeds=...) needs out= for the batch folder")
    if "seed" in overrides:
        raise ValueError("seed= and seeds= do not go together (give seeds=[S])")
    seeds = [1] if seeds is None else _seed_list(seeds)
    sweep = [(str(k), _sweep_values(v)) for k, v in (sweep or {}).items()]
    last_print = [-math.inf]

    def show(p):
        now = time.monotonic()
        if progress and (p["done"] + p["interrupted"] == p["total"] or now - last_print[0] >= 3.0):
            last_print[0] = now
            line = f"runs: {p['done']}/{p['total']} done, {p['running']} training"
            if p["interrupted"]:
                line += f", {p['interrupted']} interrupted"
            if not math.isnan(p["best_eval"]):
                line += f"  latest evaluations: best {p['best_eval']:.1f}, worst {p['worst_eval']:.1f}"
            print(line, flush=True)

    result = _cugym.train_many(
        "" if resume is None else os.fspath(resume),
        config_path,
        table,
        env_id or "",
        overrides,
        seeds,
        sweep,
        "" if out is None else os.fspath(out),
        device,
        operator.index(jobs),
        None if lockstep is None else bool(lockstep),
        show,
        _write_notes,
    )
    summary = {}
    if result["summary_json"]:
        with open(result["summary_json"]) as f:
            summary = json.load(f)
    else:
        _write_notes(f"interrupted: continue with cugym.train(resume={result['batch_dir']!r})\n")
    summary.update(batch_dir=result["batch_dir"], interrupted=result["interrupted"])
    return summary


def _seed_list(seeds):
    """train(seeds=...)'s seeds as ints, each an integer in [0, 2**64): a float or a negative
    number is an error, never a truncated or wrapped seed."""
    if isinstance(seeds, (str, bytes)):
        raise ValueError(f"seeds must be an iterable of integers, e.g. range(1, 33), got {seeds!r}")
    out = []
    for s in seeds:
        try:
            seed = operator.index(s)
        except TypeError:
            raise ValueError(f"seeds must be integers >= 0, got {s!r}") from None
        if not 0 <= seed < 2**64:
            raise ValueError(f"seeds must be integers in [0, 2**64), got {seed}")
        out.append(seed)
    return out


def _sweep_values(values):
    """A sweep key's values as a list: a string or a number is one value, not its characters."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        return [values]
    return list(values)


class Policy:
    """A trained model acting greedily: ``policy(obs)`` gives the actions for a batch of observations
    (NumPy float32 ``(n, *shape)`` as the env gives them, or ``(n, obs_dim)``, on the CPU; a device
    array of either shape on CUDA), or for one observation on the CPU. A Q model (DQN, PQN) gives
    ``argmax_a Q(obs, a)``; a PPO or SAC policy file acts deterministically: the most likely action
    of a categorical policy, the mean of a Gaussian one clipped to the env's Box (or with ``squash``,
    as SAC's always, tanh rescaled to it), after the file's observation normalizer. Actions are int32 ``(n,)`` for a
    Discrete env and float32 ``(n, action_dim)`` for a Box env (``continuous`` is True), which the
    env's ``step`` takes as they are."""

    def __init__(self, path, env_id=None, device="cpu"):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no model file {os.fspath(path)!r}")
        self._policy = _cugym._Policy(os.fspath(path), env_id or "", device)
        self.env_id = self._policy.env_id
        self.device = self._policy.device
        self.continuous = self._policy.continuous
        self._obs_shape = tuple(_cugym.env_spec(self.env_id)["observation_space"]["shape"])

    def __call__(self, obs):
        if self.device == "cpu":
            obs = np.asarray(obs, dtype=np.float32)
            if obs.ndim == 1 or obs.shape == self._obs_shape:  # one observation
                return self._policy.act(np.ascontiguousarray(obs[None]))[0]
            obs = np.ascontiguousarray(obs)
        return self._policy.act(obs)  # checks the shape: (n, obs_dim) or (n, *shape)

    act = __call__


def load_policy(path, env_id=None, device="cpu"):
    """The greedy policy of a model file (``model.safetensors`` of a run, or a checkpoint): a DQN or
    PQN Q model, or a PPO or SAC policy file (docs/ppo.md and docs/sac.md, "Model files"), whose
    ``act(obs)`` gives int32 actions ``(n,)`` for a Discrete env and float32 actions
    ``(n, action_dim)`` within the Box for a Box env (see Policy). The env comes from the file
    unless ``env_id`` is given. Raises FileNotFoundError for a missing file, ValueError for a
    damaged one or one that does not fit the env (its sizes, or its kind of action space)."""
    return Policy(path, env_id, device)


def read_metrics(path):
    """A run's metrics.csv (or the run folder) as a dict of float64 NumPy columns (empty cells are
    NaN). Any of a run's CSV logs reads this way when given by its path (evals.csv: read_evals)."""
    return _read_log(path, "metrics.csv")


def read_evals(path):
    """A run's evals.csv (or the run folder): its greedy evaluations during training as a dict of
    float64 NumPy columns (global_step, wall_time, mean_return, std_return, min_return, max_return,
    episodes, eval_seconds), each empty before the first evaluation."""
    return _read_log(path, "evals.csv")


def _read_log(path, name):
    """The one reader of the run folder's CSV logs (the C++ side's is EvalTracker's on a resume)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, name)
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise ValueError(f"{path} is empty")
    header, body = rows[0], rows[1:]
    return {
        name: np.array([float(r[k]) if r[k] != "" else math.nan for r in body], dtype=np.float64)
        for k, name in enumerate(header)
    }
