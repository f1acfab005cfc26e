"""Sweeps on Ray Tune: ``cugym.tune.trainable`` runs cugym's DQN trainer as a Tune trial.

    from ray import tune
    import cugym.tune

    tuner = tune.Tuner(
        cugym.tune.trainable,
        param_space={"env_id": "CartPole-v1", "learning_rate": tune.loguniform(5e-4, 5e-3),
                     "seed": tune.grid_search([1, 2, 3])},
        tune_config=tune.TuneConfig(metric="mean_return", mode="max", scheduler=ASHAScheduler(...)),
    )
    best = tuner.fit().get_best_result()

Ray is an optional extra (``pip install .[ray]``); the rest of cugym never imports it. A trial's
config holds cugym config keys (docs/dqn.md) plus, optionally, ``config`` (a TOML file the keys
go over; without it the config shipped for ``env_id``, as ``cugym train --env``) and ``device``
("cpu", "cuda" or "auto", the default).

The trial reports once per evaluation during training (the env's greedy evaluation every
``eval_interval`` env steps) and once at the end, and each report carries cugym's exact-resume
checkpoint: the whole run folder, stopped at that evaluation. So ASHA can stop a trial at any
report, and a trial retried after a failure, or moved to another node, continues from its last
report to the same model bits as a run that never stopped. Reported metrics:

- ``mean_return``, ``std_return``, ``std_error`` (std / sqrt(episodes)), ``episodes``: the
  evaluation (at the end: the final model's evaluation, eval.json);
- ``env_steps``: the env step of the evaluation (use ``time_attr="env_steps"`` for ASHA rungs in
  env steps);
- ``threshold_reached`` and ``time_to_threshold``: whether an evaluation so far reached the env's
  reward threshold, and the seconds of training it took (NaN until then);
- ``final``: true for the report after training; ``node_id``: the Ray node that ran it.
"""

import math
import os
import shutil

from . import training

RESERVED = ("config", "device")


def _evaluations(run_dir):
    """The rows of evals.csv as dicts of floats (empty before the first evaluation)."""
    if not os.path.exists(os.path.join(run_dir, "evals.csv")):
        return []
    columns = training.read_evals(run_dir)
    return [dict(zip(columns, map(float, row))) for row in zip(*columns.values())]


def _threshold(run_dir, env_id):
    """(reached, seconds) for the first evaluation of the run at the env's reward threshold."""
    from . import _cugym

    threshold = _cugym.env_spec(env_id)["reward_threshold"]
    if threshold is None:
        return False, math.nan
    for row in _evaluations(run_dir):
        if row["mean_return"] >= threshold:
            return True, row["wall_time"]
    return False, math.nan


def _metrics(evaluation, run_dir, env_id, final):
    reached, seconds = _threshold(run_dir, env_id)
    episodes = int(evaluation["episodes"])
    return {
        "mean_return": float(evaluation["mean_return"]),
        "std_return": float(evaluation["std_return"]),
        "std_error": float(evaluation["std_return"]) / math.sqrt(max(episodes, 1)),
        "episodes": episodes,
        "env_steps": int(evaluation["global_step"]),
        "threshold_reached": reached,
        "time_to_threshold": seconds,
        "final": final,
    }


def trainable(config):
    """A Ray Tune function trainable: trains cugym DQN with the trial's ``config`` (see the module
    docstring), reporting and checkpointing once per evaluation."""
    import ray
    from ray import tune

    keys = {k: v for k, v in config.items() if k not in RESERVED}
    device = config.get("device", "auto")
    node_id = ray.get_runtime_context().get_node_id()
    run_dir = os.path.join(tune.get_context().get_trial_dir(), "run")
    # A retried or moved trial starts from its last report's run folder; anything else left in
    # the working folder (a crash before the first report) starts again from nothing.
    shutil.rmtree(run_dir, ignore_errors=True)
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as saved:
            shutil.copytree(saved, run_dir)

    while True:
        evaluated = []

        def stop_after(evaluation, evaluated=evaluated):
            evaluated.append(evaluation)
            return True  # a checkpoint now, then report it

        if os.path.isdir(os.path.join(run_dir, "checkpoints")):
            summary = training.train(resume=run_dir, device=device, on_eval=stop_after, progress=False)
        else:
            summary = training.train(
                config=config.get("config"), out=run_dir, device=device, on_eval=stop_after, progress=False, **keys
            )
        env_id = summary["env_id"]
        if summary["interrupted"] and not evaluated:  # Ctrl-C, or Tune stopping the trial
            return
        final = not summary["interrupted"]
        if final:
            evaluation = dict(summary["eval"] or {}, global_step=summary["global_step"])
            if not summary["eval"]:  # eval_episodes = 0: no evaluation to report
                evaluation.update(mean_return=math.nan, std_return=math.nan, episodes=0)
        else:
            evaluation = evaluated[-1]
        metrics = dict(_metrics(evaluation, run_dir, env_id, final), node_id=node_id)
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(run_dir))
        if final:
            return
