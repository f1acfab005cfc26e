"""PQN against DQN in the same run: each env's shipped DQN and PQN configs trained for the same
unseen seeds with `cugym train --seeds` (one process per config, one run at a time so the wall
times are one core's), summarized as the multi-run summary does (seeds solved by the final model,
IQM and mean with 95% bootstrap intervals) plus the median training time to the threshold and to
the end of the run (the last metrics.csv row's wall_time: training seconds, evaluations not
counted). Optionally CleanRL's pqn.py (its defaults, CPU, OMP_NUM_THREADS=1 as CleanRL's
benchmark/pqn.sh) on CartPole beside them: its training return over its last 100 episodes and its
wall time, from its own output (pqn.py saves no model).

    python bench/pqn_vs_dqn.py [--cugym build/cli/cugym] [--seeds 1-32] [--envs CartPole-v1 Acrobot-v1]
        [--cleanrl-pqn PATH/TO/cleanrl/pqn.py --cleanrl-python PY --cleanrl-seeds 1 2 3]
        [--out DIR] [--write docs/benchmarks.md]

The run folders go to --out (kept, for `python -m cugym.report DIR/<env>_<agent>` curves) or to a
temporary folder.

Needs nothing beyond the standard library (the cugym binary computes the statistics).
"""

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import sections
from bench_isa import cpu_name

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTION = "pqn-vs-dqn"
CONFIGS = {
    "CartPole-v1": ("configs/cartpole.toml", "configs/cartpole_pqn.toml"),
    "Acrobot-v1": ("configs/acrobot.toml", "configs/acrobot_pqn.toml"),
}


def last_wall_time(run_dir):
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        rows = [line.split(",") for line in f.read().split("\n")[1:] if line]
    return float(rows[-1][1])


def train_seeds(cugym, config, seeds, out):
    t0 = time.perf_counter()
    cmd = [cugym, "train", "--device", "cpu", "--config", os.path.join(ROOT, config)]
    cmd += ["--seeds", seeds, "--jobs", "1", "--out", out]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    with open(os.path.join(out, "summary.json")) as f:
        point = json.load(f)["points"][0]
    runs = point["runs"]
    train_times = [last_wall_time(r["run_dir"]) for r in runs]
    to_threshold = [r["threshold_seconds"] for r in runs if r["threshold_seconds"] is not None]
    return {
        "config": config,
        "seeds": point["seeds"],
        "solved": point["solved_final"],
        "iqm": point["final_iqm"],
        "iqm_ci": point["final_iqm_ci"],
        "mean": point["final_mean"],
        "mean_ci": point["final_mean_ci"],
        "reached": point["reached_threshold"],
        "median_to_threshold": statistics.median(to_threshold) if to_threshold else None,
        "median_train": statistics.median(train_times),
        "max_train": max(train_times),
        "process_seconds": seconds,
    }


def cleanrl_pqn(python, script, seed, work):
    """One run of CleanRL's pqn.py with its defaults on the CPU: (last-100 training return, seconds
    from its first episode line to its end, total steps)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    t0 = time.perf_counter()
    p = subprocess.run(
        [python, script, "--seed", str(seed), "--no-cuda"], cwd=work, env=env, capture_output=True, text=True
    )
    total = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"pqn.py seed {seed} failed:\n{p.stderr[-2000:]}")
    returns = [float(m) for m in re.findall(r"episodic_return=\[?([-0-9.e]+)", p.stdout)]
    return {"seed": seed, "last100": statistics.mean(returns[-100:]), "seconds": total, "episodes": len(returns)}


def fmt(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cugym", default=os.path.join(ROOT, "build", "cli", "cugym"))
    ap.add_argument("--seeds", default="1-32")
    ap.add_argument("--envs", nargs="+", default=list(CONFIGS))
    ap.add_argument("--cleanrl-pqn", help="CleanRL's cleanrl/pqn.py")
    ap.add_argument("--cleanrl-python", default=sys.executable)
    ap.add_argument("--cleanrl-seeds", nargs="+", type=int, default=[1, 2, 3])
    ap.add_argument("--out", help="keep the run folders here (a new or empty folder)")
    ap.add_argument("--write", help="markdown file whose pqn-vs-dqn section gets the table")
    a = ap.parse_args()

    rows = []
    with tempfile.TemporaryDirectory(prefix="cugym_pqn_vs_dqn_") as tmp:
        scratch = a.out or tmp
        os.makedirs(scratch, exist_ok=True)
        for env_id in a.envs:
            for algo, config in zip(("DQN", "PQN"), CONFIGS[env_id]):
                r = train_seeds(a.cugym, config, a.seeds, os.path.join(scratch, f"{env_id}_{algo}"))
                r.update(env=env_id, algo=algo)
                rows.append(r)
                print(json.dumps(r), flush=True)
        cleanrl = []
        if a.cleanrl_pqn:
            for seed in a.cleanrl_seeds:
                c = cleanrl_pqn(a.cleanrl_python, os.path.abspath(a.cleanrl_pqn), seed, scratch)
                cleanrl.append(c)
                print(json.dumps(c), flush=True)

    lines = [
        f"{cpu_name()}, {os.cpu_count()} cores, "
        f"{datetime.date.today().isoformat()}; one run at a time (`--jobs 1`), seeds {a.seeds} (not tuned on). "
        "Solved: the final model's greedy mean over 100 episodes reaches the threshold. Times are "
        "training seconds (evaluations not counted): to the first evaluation at the threshold, and to "
        "the end of the run (the configs stop at the threshold with a margin of two standard errors).",
        "",
        "| env | agent, config | solved (final) | final IQM [95% CI] | median s to threshold | "
        "median s to the end (max) |",
        "| --- | --- | ---: | --- | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['env']} | {r['algo']}, `{r['config']}` | {r['solved']}/{r['seeds']} | "
            f"{fmt(r['iqm'])} [{fmt(r['iqm_ci'][0])}, {fmt(r['iqm_ci'][1])}] | {fmt(r['median_to_threshold'], 2)} | "
            f"{fmt(r['median_train'], 2)} ({fmt(r['max_train'], 2)}) |"
        )
    if cleanrl:
        c_ret = statistics.median(c["last100"] for c in cleanrl)
        c_sec = statistics.median(c["seconds"] for c in cleanrl)
        lines.append(
            f"| CartPole-v1 | CleanRL `pqn.py`, its defaults (500k steps), seeds "
            f"{' '.join(str(c['seed']) for c in cleanrl)} | training return(100) at the end: median {c_ret:.1f} "
            f"| - | - | {c_sec:.1f} (process) |"
        )
    lines += ["", "```", "python3 bench/pqn_vs_dqn.py " + " ".join(sys.argv[1:]), "```"]
    body = "\n".join(lines)
    print(body)
    if a.write:
        sections.write_section(a.write, SECTION, body, heading="PQN against DQN")


if __name__ == "__main__":
    main()
