"""Learning curves of a batch of runs (``cugym train --seeds ... --out DIR``):

    python -m cugym.report DIR [DIR ...] [--out DIR/curves.png]

draws, for every grid point of the batch (of each batch, in one figure: DQN's and PQN's, say),
the interquartile mean (IQM) over seeds of the greedy evaluations during training (evals.csv)
against env steps, with its 95% percentile-bootstrap band, and the env's reward threshold. Needs
matplotlib (not a dependency of cugym: ``pip install matplotlib``); ``curves(DIR)`` gives the
numbers without it.
"""

import argparse
import json
import os
import sys

import numpy as np

from .stats import bootstrap_ci, iqm
from .training import read_evals


def _evaluations(run_dir):
    evals = read_evals(run_dir)
    return [int(step) for step in evals["global_step"]], [float(r) for r in evals["mean_return"]]


def curves(batch_dir):
    """{point: (steps, iqm, low, high, seeds)} from the batch's summary.json and evals.csv files,
    and the env's threshold and id. A run that stopped early (stop_at_threshold) keeps its last
    evaluation for the steps it did not train."""
    with open(os.path.join(batch_dir, "summary.json")) as f:
        summary = json.load(f)
    out = {}
    for point in summary["points"]:
        series = [_evaluations(run["run_dir"]) for run in point["runs"]]
        steps = max((s for s, _ in series), key=len)
        if not steps or any(not r for _, r in series):
            continue
        returns = np.array([r + [r[-1]] * (len(steps) - len(r)) for _, r in series])
        low, high = bootstrap_ci(returns, iqm)
        out[point["point"] or "(config)"] = (np.array(steps), iqm(returns, axis=0), low, high, len(series))
    return out, summary.get("threshold"), summary.get("env")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m cugym.report", description=__doc__.split("\n\n")[0])
    p.add_argument("batch_dirs", nargs="+", metavar="batch_dir", help="the folder of cugym train --seeds ... --out DIR")
    p.add_argument("--out", help="image file (default: the first BATCH_DIR/curves.png)")
    a = p.parse_args(argv)
    for batch_dir in a.batch_dirs:
        if not os.path.isfile(os.path.join(batch_dir, "summary.json")):
            sys.exit(f"cugym.report: {batch_dir} has no summary.json (not a finished cugym batch)")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("cugym.report: needs matplotlib (pip install matplotlib)")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    envs = []
    for batch_dir in a.batch_dirs:
        data, threshold, env = curves(batch_dir)
        envs.append(env or "")
        for name, (steps, centre, low, high, seeds) in data.items():
            label = name if len(a.batch_dirs) == 1 else f"{os.path.basename(os.path.normpath(batch_dir))} {name}"
            line = ax.plot(steps, centre, label=f"{label} ({seeds} seeds)")[0]
            ax.fill_between(steps, low, high, color=line.get_color(), alpha=0.2)
    if threshold is not None:
        ax.axhline(threshold, color="black", linestyle="--", linewidth=1, label=f"threshold {threshold:g}")
    ax.set_xlabel("env steps")
    ax.set_ylabel("greedy evaluation return (IQM, 95% CI)")
    ax.set_title(", ".join(dict.fromkeys(envs)))
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = a.out or os.path.join(a.batch_dirs[0], "curves.png")
    fig.savefig(out, dpi=120)
    print(out)


if __name__ == "__main__":
    main()
