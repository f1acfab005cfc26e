# run_folder.py - reads what one `cugym train --out DIR` run left (docs/dqn.md, "The run folder"):
# the final and best greedy evaluations and the time to threshold (eval.json), the evaluations
# during training (evals.csv) and the training log (metrics.csv). Builds without evals.csv or the
# newer eval.json fields still read: the curve then comes from metrics.csv's training episodes and
# the time to threshold from evals.csv or not at all; the caller fills what is missing.
import json
import math
import os

import cugym

# Gymnasium's reward_threshold (gymnasium/envs/__init__.py), for eval.json files without one.
THRESHOLDS = {
    "CartPole-v1": 475.0,
    "CartPole-v0": 195.0,
    "Acrobot-v1": -100.0,
    "MountainCar-v0": -110.0,
    "LunarLander-v3": 200.0,
}


def read_rows(path):
    """CSV rows as dicts of floats, None for an empty cell; [] for a missing file. Read by cugym's
    own reader (cugym.read_metrics), as cugym.report and cugym.tune read them."""
    if not os.path.exists(path):
        return []
    columns = cugym.read_metrics(path)
    return [{k: None if math.isnan(v) else float(v) for k, v in zip(columns, row)} for row in zip(*columns.values())]


def read_json(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def learning_curve(run_dir):
    """(steps, returns, source): greedy evaluations from evals.csv, else the training episodes'
    mean return per metrics.csv row (epsilon-greedy; rows without a finished episode skipped),
    else ([], [], None)."""
    evals = read_rows(os.path.join(run_dir, "evals.csv"))
    if evals:
        return [r["global_step"] for r in evals], [r["mean_return"] for r in evals], "evals.csv"
    rows = [r for r in read_rows(os.path.join(run_dir, "metrics.csv")) if r.get("episodic_return") is not None]
    if rows:
        return [r["global_step"] for r in rows], [r["episodic_return"] for r in rows], "metrics.csv"
    return [], [], None


def first_reaching(evals, threshold):
    """(global_step, wall_time) of the first evals.csv row whose mean reaches threshold, or None."""
    for r in evals:
        if r["mean_return"] is not None and r["mean_return"] >= threshold:
            return r["global_step"], r["wall_time"]
    return None


def read_run(run_dir, threshold=None):
    """One run's figures. threshold: None takes eval.json's, else Gymnasium's for the env.
    Missing pieces are None: final (no eval.json), best (no best evaluation), threshold_step and
    threshold_seconds (never reached, or not recorded)."""
    ev = read_json(os.path.join(run_dir, "eval.json")) or {}
    metrics = read_rows(os.path.join(run_dir, "metrics.csv"))
    evals = read_rows(os.path.join(run_dir, "evals.csv"))
    if threshold is None:
        threshold = ev.get("threshold")
    if threshold is None:
        threshold = THRESHOLDS.get(ev.get("env"))
    best = ev.get("best")
    recorded = ev.get("threshold") == threshold  # eval.json's threshold_step is for its own threshold
    run = {
        "env": ev.get("env"),
        "threshold": threshold,
        "final": ev.get("mean_return"),
        "final_std": ev.get("std_return"),
        "episodes": ev.get("episodes"),
        "best": best["mean_return"] if best else None,
        "best_step": best["global_step"] if best else None,
        "best_episodes": best["episodes"] if best else None,
        "has_best_model": os.path.exists(os.path.join(run_dir, "best.safetensors")),
        "steps": metrics[-1]["global_step"] if metrics else ev.get("global_step"),
        "train_seconds": metrics[-1]["wall_time"] if metrics else None,
        "threshold_step": ev.get("threshold_step") if recorded else None,
        "threshold_seconds": ev.get("threshold_seconds") if recorded else None,
        "threshold_source": "eval.json" if recorded and ev.get("threshold_step") is not None else None,
    }
    if run["threshold_step"] is None and threshold is not None and first_reaching(evals, threshold):
        run["threshold_step"], run["threshold_seconds"] = first_reaching(evals, threshold)
        run["threshold_source"] = "evals.csv"
    run["curve_steps"], run["curve_returns"], run["curve_source"] = learning_curve(run_dir)
    return run


def wall_time_at(run_dir, step):
    """metrics.csv's wall_time at the last row at or before step (None without such a row)."""
    rows = [r for r in read_rows(os.path.join(run_dir, "metrics.csv")) if r["global_step"] <= step]
    return rows[-1]["wall_time"] if rows else None


def success(value, threshold):
    return value is not None and threshold is not None and value >= threshold
