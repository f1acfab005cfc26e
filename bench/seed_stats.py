# seed_stats.py - statistics over independent training runs (seeds), after Agarwal et al. 2021,
# "Deep RL at the Edge of the Statistical Precipice": IQM and mean with percentile-bootstrap 95%
# confidence intervals over runs, and a five-number spread for times. numpy only (no rliable).
#
# With one task the stratified bootstrap of the paper is a plain bootstrap over runs: resample n
# runs with replacement, recompute the statistic, take the 2.5th and 97.5th percentiles.
import numpy as np

REPS = 2000  # bootstrap resamples


def iqm(scores, axis=-1):
    """Interquartile mean: the mean of the middle 50% of runs, cutting floor(n / 4) runs from
    each end (scipy.stats.trim_mean(x, 0.25), which rliable uses)."""
    x = np.sort(np.asarray(scores, dtype=float), axis=axis)
    n = x.shape[axis]
    cut = int(0.25 * n)
    return np.take(x, np.arange(cut, n - cut), axis=axis).mean(axis=axis)


def mean(scores, axis=-1):
    return np.asarray(scores, dtype=float).mean(axis=axis)


def bootstrap_ci(scores, statistic, reps=REPS, confidence=0.95, seed=0):
    """Percentile-bootstrap interval of statistic(scores) over runs.

    scores: [runs] or [runs, points] (a learning curve per run: one interval per point, the same
    resampled runs for every point). statistic takes an array and an axis, like iqm and mean.
    Returns (low, high), scalars or arrays of length points."""
    x = np.asarray(scores, dtype=float)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(x), size=(reps, len(x)))
    stats = statistic(np.moveaxis(x[picks], 1, -1), axis=-1)  # [reps] or [reps, points]
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(stats, [tail, 100 - tail], axis=0)
    return low, high


def estimate(scores, reps=REPS, seed=0):
    """IQM and mean of per-run scores, each with its 95% interval; None for no scores."""
    if len(scores) == 0:
        return None
    out = {"runs": len(scores)}
    for name, statistic in (("iqm", iqm), ("mean", mean)):
        low, high = bootstrap_ci(scores, statistic, reps=reps, seed=seed)
        out[name] = float(statistic(scores))
        out[name + "_ci"] = [float(low), float(high)]
    return out


def spread(values):
    """min, quartiles and max of the values that are not None; None when there are none."""
    x = np.array([v for v in values if v is not None], dtype=float)
    if len(x) == 0:
        return None
    q = np.percentile(x, [0, 25, 50, 75, 100])
    return {"count": len(x), **{k: float(v) for k, v in zip(("min", "q1", "median", "q3", "max"), q)}}
