"""Statistics over independent training runs (seeds), after Agarwal et al. 2021, "Deep RL at the
Edge of the Statistical Precipice": the interquartile mean (IQM), the mean, their 95%
percentile-bootstrap intervals over runs, and the five-number spread of times.

These are the figures a batch's summary.json holds (``cugym train --seeds``), computed by the same
C++ code (agents/run/run_stats.h): the same runs give the same intervals here, in summary.json,
``python -m cugym.report`` and the benchmarks.

    from cugym import stats
    stats.estimate([480.1, 500.0, 212.3, 499.0])   # {"runs": 4, "iqm": ..., "iqm_ci": [lo, hi], ...}
    low, high = stats.bootstrap_ci(curves, stats.iqm)   # curves [runs, points]: one interval per point
"""

import numpy as np

from . import _cugym

REPS = 2000  # bootstrap resamples (fixed in agents/run/run_stats.cpp)


def _along(function, scores, axis):
    x = np.asarray(scores, dtype=float)
    if x.ndim == 1:
        return function(x.tolist())
    return np.apply_along_axis(lambda v: function(v.tolist()), axis, x)


def iqm(scores, axis=-1):
    """Interquartile mean: the mean of the middle 50% of runs, floor(n / 4) runs cut from each end
    (scipy.stats.trim_mean(x, 0.25), which rliable uses), along ``axis``."""
    return _along(_cugym.iqm, scores, axis)


def mean(scores, axis=-1):
    return _along(_cugym.mean, scores, axis)


def bootstrap_ci(scores, statistic=iqm):
    """95% percentile-bootstrap interval of ``statistic`` (:func:`iqm` or :func:`mean`) over runs.

    scores: [runs] or [runs, points] (a learning curve per run: one interval per point, the same
    resampled runs at every point). Returns (low, high): floats, or arrays of one per point."""
    names = {iqm: "iqm", mean: "mean"}
    if statistic not in names:
        raise ValueError("statistic must be cugym.stats.iqm or cugym.stats.mean")
    x = np.asarray(scores, dtype=float)
    if x.ndim not in (1, 2) or len(x) == 0:
        raise ValueError(f"scores must be [runs] or [runs, points] with at least one run, got shape {x.shape}")
    runs = x[:, None] if x.ndim == 1 else x
    low, high = _cugym.bootstrap_band(runs.tolist(), names[statistic])
    if x.ndim == 1:
        return low[0], high[0]
    return np.array(low), np.array(high)


def estimate(scores):
    """IQM and mean of per-run scores, each with its 95% interval; None for no scores."""
    if len(scores) == 0:
        return None
    out = {"runs": len(scores)}
    for name, statistic in (("iqm", iqm), ("mean", mean)):
        low, high = bootstrap_ci(scores, statistic)
        out[name] = float(statistic(scores))
        out[name + "_ci"] = [float(low), float(high)]
    return out


def spread(values):
    """min, quartiles and max of the values that are not None (numpy.percentile's interpolation);
    None when there are none."""
    x = [float(v) for v in values if v is not None]
    if not x:
        return None
    names = ("min", "q1", "median", "q3", "max")
    return {"count": len(x), **{k: _cugym.percentile(x, q) for k, q in zip(names, (0, 25, 50, 75, 100))}}
