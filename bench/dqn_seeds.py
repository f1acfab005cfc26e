#!/usr/bin/env python3
# dqn_seeds.py - trains a cugym DQN config for many seeds, in parallel where the cores allow, and
# summarizes them as Agarwal et al. 2021 recommend: success rate of the final model (greedy mean
# >= the env's threshold), IQM and mean of the final returns with 95% bootstrap intervals, the
# same for best.safetensors, the spread of training time and of time to threshold, and a
# learning-curve PNG (eval return vs env steps, IQM over seeds with a 95% bootstrap band).
# --ablate KEY=VALUE (repeatable) runs the same seeds again with that key overridden, side by side.
#
#   python3 bench/dqn_seeds.py [--config configs/cartpole.toml] [--seeds 1 2 3 | --seeds 101-132]
#       [--jobs N] [--out DIR] [--ablate n_step=1 ...] [--set KEY=VALUE ...] [--threshold T]
#       [--write docs/benchmarks.md --marker M] [--figure docs/media/M.png] [--note TEXT]
#       [--cleanrl /path/to/cleanrl/dqn.py --cleanrl-python PY]
# Needs numpy, matplotlib and the cugym package (its statistics, cugym.stats, are summary.json's), in
# a venv of your own: `pip install . numpy matplotlib`. Run
# folders stay in --out (checkpoints removed): an existing finished one is read, not retrained,
# so an interrupted sweep continues and a summary can be remade. Files read: bench/run_folder.py.
import argparse
import concurrent.futures
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

import numpy as np
import run_folder
import sections
from cugym import stats

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def seed_list(tokens):
    """--seeds 1 2 3 or 101-132 (inclusive ranges) or both."""
    seeds = []
    for t in tokens:
        first, _, last = t.partition("-")
        seeds += list(range(int(first), int(last) + 1)) if last else [int(first)]
    return seeds


def cugym_json(cugym, *args):
    out = subprocess.run([cugym, *args], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def evaluate(cugym, model, device, episodes):
    return cugym_json(cugym, "eval", "--model", model, "--episodes", str(episodes), "--device", device, "--json")


def train(a, variant, seed, run_dir):
    """Trains one seed into run_dir unless a finished run is there; returns the process seconds
    (None when the run was read, not trained)."""
    if os.path.exists(os.path.join(run_dir, "model.safetensors")):
        return None
    if os.path.exists(run_dir):
        shutil.rmtree(run_dir)  # an unfinished run of an earlier sweep: cugym refuses a non-empty --out
    cmd = [a.cugym, "train", "--config", a.config, "--seed", str(seed), "--device", a.device, "--out", run_dir]
    for kv in a.set + variant["set"]:
        cmd += ["--set", kv]
    if a.checkpoint_every:
        cmd += ["--set", f"checkpoint_interval={a.checkpoint_every}", "--set", "keep_checkpoints=100000"]
    env = dict(os.environ)
    if a.threads:
        env.update(OPENBLAS_NUM_THREADS=str(a.threads), OMP_NUM_THREADS=str(a.threads))
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    with open(run_dir + ".log", "w") as f:
        f.write(shlex.join(cmd) + "\n" + p.stdout + p.stderr)
    if p.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return seconds


def complete(a, run, run_dir):
    """Fills what the run folder did not record, with `cugym eval`: the final evaluation without
    eval.json, best.safetensors over --best-episodes when eval.json has fewer (or none), and with
    --checkpoint-every the time to threshold from the first checkpoint that reaches it."""
    model, best = os.path.join(run_dir, "model.safetensors"), os.path.join(run_dir, "best.safetensors")
    if run["final"] is None and os.path.exists(model):
        r = evaluate(a.cugym, model, a.device, 100)
        run.update(env=r["env"], final=r["mean_return"], final_std=r["std_return"], episodes=r["episodes"])
        if run["threshold"] is None:
            run["threshold"] = run_folder.THRESHOLDS.get(r["env"])
    if run["has_best_model"] and (run["best_episodes"] or 0) < a.best_episodes:
        run.update(
            best=evaluate(a.cugym, best, a.device, a.best_episodes)["mean_return"], best_episodes=a.best_episodes
        )
    checkpoints = os.path.join(run_dir, "checkpoints")
    if run["threshold_step"] is None and a.checkpoint_every and os.path.isdir(checkpoints):
        for name in sorted(os.listdir(checkpoints)):
            step = int(re.search(r"step_(\d+)", name).group(1))
            if run_folder.success(
                evaluate(a.cugym, os.path.join(checkpoints, name), a.device, 100)["mean_return"], run["threshold"]
            ):
                run.update(
                    threshold_step=step,
                    threshold_seconds=run_folder.wall_time_at(run_dir, step),
                    threshold_source="checkpoints",
                )
                break
    if not a.keep_checkpoints and os.path.isdir(checkpoints):
        shutil.rmtree(checkpoints)
    return run


def summarize(runs, threshold):
    finals = [r["final"] for r in runs if r["final"] is not None]
    bests = [r["best"] for r in runs if r["best"] is not None]
    return {
        "runs": len(runs),
        "successes": sum(run_folder.success(r["final"], threshold) for r in runs),
        "success_rate": sum(run_folder.success(r["final"], threshold) for r in runs) / len(runs),
        "final": stats.estimate(finals),
        "best_successes": sum(run_folder.success(r["best"], threshold) for r in runs) if bests else None,
        "best": stats.estimate(bests),
        "train_seconds": stats.spread(r["train_seconds"] for r in runs),
        "threshold_seconds": stats.spread(r["threshold_seconds"] for r in runs),
        "threshold_step": stats.spread(r["threshold_step"] for r in runs),
    }


def common_curve(runs):
    """(grid, values [runs, points]): each run's last curve value at or before each step that
    some run logged, from the first step every run covers to the last any run logged. A run that
    ended sooner (stop_at_threshold) keeps its last value: its final model is what it left."""
    curves = [(np.array(r["curve_steps"]), np.array(r["curve_returns"])) for r in runs if r["curve_steps"]]
    if not curves:
        return None
    grid = np.unique(np.concatenate([s for s, _ in curves]))
    grid = grid[grid >= max(s[0] for s, _ in curves)]
    return grid, np.array([v[np.searchsorted(s, grid, side="right") - 1] for s, v in curves])


def plot(variants, threshold, title, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    sources = set()
    for v in variants:
        curve = common_curve(v["runs"])
        if curve is None:
            continue
        grid, values = curve
        low, high = stats.bootstrap_ci(values, stats.iqm)
        (line,) = ax.plot(grid, stats.iqm(values, axis=0), label=f"{v['name']} ({len(values)} seeds)")
        ax.fill_between(grid, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
        sources |= {r["curve_source"] for r in v["runs"] if r["curve_source"]}
    if threshold is not None:
        ax.axhline(threshold, color="gray", linestyle="--", linewidth=1, label=f"threshold {threshold:g}")
    what = (
        "greedy evaluation return (evals.csv)"
        if sources == {"evals.csv"}
        else "training episodes' return (metrics.csv: no evals.csv, epsilon-greedy)"
    )
    ax.set_title(f"{title}: IQM over seeds, 95% bootstrap band\n{what}", fontsize=9)
    ax.set_xlabel("env steps")
    ax.set_ylabel("return")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def fmt_estimate(e, name):
    if e is None:
        return "-"
    return f"{e[name]:.1f} [{e[name + '_ci'][0]:.1f}, {e[name + '_ci'][1]:.1f}]"


def fmt_spread(s, unit=" s", digits=2):
    if s is None:
        return "-"
    f = lambda x: f"{x:,.{digits}f}"
    return f"{f(s['median'])}{unit} ({f(s['min'])} / {f(s['q1'])} / {f(s['q3'])} / {f(s['max'])})"


def markdown(result):
    t = result["threshold"]
    lines = [
        f"| variant | final >= {t:g} | final IQM [95% CI] | final mean [95% CI] | best >= {t:g} | "
        f"best IQM [95% CI] | train time | time to {t:g} (reached) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for v in result["variants"]:
        s = v["summary"]
        best = f"{s['best_successes']}/{s['runs']}" if s["best_successes"] is not None else "-"
        reached = s["threshold_seconds"]["count"] if s["threshold_seconds"] else 0
        lines.append(
            f"| {v['name']} | {s['successes']}/{s['runs']} | {fmt_estimate(s['final'], 'iqm')} | "
            f"{fmt_estimate(s['final'], 'mean')} | {best} | {fmt_estimate(s['best'], 'iqm')} | "
            f"{fmt_spread(s['train_seconds'])} | {fmt_spread(s['threshold_seconds'])} ({reached}) |"
        )
    lines += [
        "",
        "| seed | " + " | ".join(f"{v['name']}: final, best, s to {t:g}" for v in result["variants"]) + " |",
        "|---:|" + "---:|" * len(result["variants"]),
    ]
    cell = lambda x, f: "-" if x is None else f.format(x)
    for i, seed in enumerate(result["seeds"]):
        runs = [v["runs"][i] for v in result["variants"]]
        lines.append(
            f"| {seed} | "
            + " | ".join(
                f"{cell(r['final'], '{:.1f}')}, {cell(r['best'], '{:.1f}')}, {cell(r['threshold_seconds'], '{:.2f}')}"
                for r in runs
            )
            + " |"
        )
    sources = sorted({r["curve_source"] or "none" for v in result["variants"] for r in v["runs"]})
    thresholds = sorted({r["threshold_source"] for v in result["variants"] for r in v["runs"]} - {None})
    threads = result["threads"]
    parallel = f"{result['jobs']} run{'s' if result['jobs'] > 1 else ''} at a time" + (
        f", each with OPENBLAS_NUM_THREADS={threads} OMP_NUM_THREADS={threads}" if threads else ""
    )
    best = (
        f"best.safetensors over {result['best_episodes']} greedy episodes"
        if any(r["best"] is not None for v in result["variants"] for r in v["runs"])
        else "none (no run has best.safetensors)"
    )
    to_threshold = (
        f"from {', '.join(thresholds)}"
        if thresholds
        else "not recorded (no run reached it in evals.csv, or the build writes no evals.csv: see --checkpoint-every)"
    )
    lines += [
        "",
        f"Command: `{result['command']}` ({parallel}). Each run: `{result['train_command']}`. "
        f"Final: model.safetensors over {result['final_episodes']} greedy episodes (eval.json); best: {best}. "
        f"IQM and mean with 95% percentile-bootstrap intervals over seeds ({stats.REPS} resamples, "
        f"Agarwal et al. 2021). Times are the training loop's wall time (metrics.csv), without process "
        f"start-up or the final evaluation: median (min / q1 / q3 / max); time to threshold {to_threshold}. "
        f"Learning curves from {', '.join(sources)}; a run that stopped early (stop_at_threshold) keeps its "
        f"last evaluation from there on.",
        f"cugym: {result['cugym_version']}; repository at {result['commit']}. Machine: {result['machine']}; "
        f"{result['date']}." + (f" {result['note']}" if result["note"] else ""),
    ]
    return "\n".join(lines)


def cugym_version(cugym):
    """`cugym --version` without the BLAS thread count, which --threads may have changed."""
    line = subprocess.run([cugym, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    return re.sub(r", \d+ BLAS threads", "", line)


def machine():
    with open("/proc/cpuinfo") as f:
        cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    return f"{cpu}, {os.cpu_count()} cores"


def commit():
    git = lambda *args: subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True).stdout.strip()
    return git("rev-parse", "--short", "HEAD") + (" (with uncommitted changes)" if git("status", "--porcelain") else "")


def cleanrl_table(a):
    """CleanRL's dqn.py on the first seed, through bench/cleanrl_cartpole.py in its own python."""
    p = subprocess.run(
        [
            a.cleanrl_python,
            os.path.join(ROOT, "bench", "cleanrl_cartpole.py"),
            "--script",
            a.cleanrl,
            "--seeds",
            str(a.seeds[0]),
            "--total-timesteps",
            str(a.cleanrl_steps),
        ],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        return f"CleanRL dqn.py failed here: {(p.stderr.strip().splitlines() or ['?'])[-1]}"
    return (
        f"CleanRL dqn.py with its defaults ({a.cleanrl_steps:,} env steps, seed {a.seeds[0]}), same machine, "
        f"same run (bench/cleanrl_cartpole.py):\n\n" + p.stdout.strip()
    )


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Train a cugym DQN config over many seeds and summarize the runs.")
    p.add_argument("--cugym", default=os.path.join(ROOT, "build", "cli", "cugym"))
    p.add_argument("--config", default=os.path.join(ROOT, "configs", "cartpole.toml"))
    p.add_argument("--seeds", nargs="+", default=["1-5"], help="seeds and inclusive ranges: 1 2 3, 101-132")
    p.add_argument("--device", default="cpu")
    p.add_argument("--jobs", type=int, default=os.cpu_count(), help="runs at a time (default: cores)")
    p.add_argument(
        "--threads",
        type=int,
        help="OPENBLAS_NUM_THREADS and OMP_NUM_THREADS of each run "
        "(default: 1 when --jobs > 1, else cugym's own choice)",
    )
    p.add_argument("--out", help="folder for the runs and summaries (default runs/dqn_seeds/<config>-<time>)")
    p.add_argument("--threshold", type=float, help="success bar (default: eval.json's, else Gymnasium's)")
    p.add_argument("--set", action="append", default=[], help="KEY=VALUE for every run")
    p.add_argument(
        "--ablate",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="also run the seeds with this override (repeatable: one variant each)",
    )
    p.add_argument(
        "--best-episodes",
        type=int,
        default=100,
        help="evaluate best.safetensors over this many episodes when eval.json's best has fewer",
    )
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=0,
        help="for builds without evals.csv: checkpoint every N env steps and take the time to threshold "
        "from the first checkpoint that reaches it (100 greedy episodes each)",
    )
    p.add_argument("--keep-checkpoints", action="store_true")
    p.add_argument("--note", default="", help="sentence appended to the markdown (e.g. that the machine was shared)")
    p.add_argument("--marker", default="dqn-cartpole")
    p.add_argument("--write", metavar="FILE", help="put the markdown between this marker's comments in FILE")
    p.add_argument("--figure", metavar="PNG", help="also copy the learning-curve PNG here (linked from --write)")
    p.add_argument("--cleanrl", help="CleanRL's dqn.py to run on the first seed for comparison")
    p.add_argument("--cleanrl-steps", type=int, default=500000)
    p.add_argument(
        "--cleanrl-python",
        default=sys.executable,
        help="python with torch, stable-baselines3, tensorboard and gymnasium 0.29 (bench/cleanrl_cartpole.py)",
    )
    a = p.parse_args(argv)
    a.seeds = seed_list(a.seeds)
    a.config = os.path.abspath(a.config)
    a.jobs = max(1, a.jobs)
    if a.threads is None and a.jobs > 1:  # parallel runs must not oversubscribe the cores
        a.threads = 1
    if a.out is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        a.out = os.path.join(ROOT, "runs", "dqn_seeds", f"{os.path.splitext(os.path.basename(a.config))[0]}-{stamp}")
    return a


def main(argv=None):
    a = parse_args(argv)
    variants = [{"name": " ".join([os.path.basename(a.config)] + a.set), "set": []}]
    variants += [{"name": kv, "set": [kv]} for kv in a.ablate]
    jobs = [(v, i, seed) for v in variants for i, seed in enumerate(a.seeds)]
    for v in variants:
        v["dir"] = os.path.join(a.out, re.sub(r"[^A-Za-z0-9_.=-]", "_", v["name"]))
        v["runs"] = [None] * len(a.seeds)
        os.makedirs(v["dir"], exist_ok=True)

    def one(job):
        v, i, seed = job
        run_dir = os.path.join(v["dir"], f"seed_{seed}")
        seconds = train(a, v, seed, run_dir)
        run = complete(a, run_folder.read_run(run_dir, a.threshold), run_dir)
        run.update(seed=seed, process_seconds=seconds, dir=run_dir)
        return run

    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = {pool.submit(one, job): job for job in jobs}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            v, i, seed = futures[future]
            r = v["runs"][i] = future.result()
            print(
                f"[{done}/{len(jobs)}] {v['name']} seed {seed}: final {r['final']}, best {r['best']}, "
                f"train {r['train_seconds']} s, to threshold {r['threshold_seconds']} s",
                flush=True,
            )

    threshold = a.threshold if a.threshold is not None else variants[0]["runs"][0]["threshold"]
    if threshold is None:
        sys.exit("dqn_seeds: no threshold for this env (eval.json has none): pass --threshold")
    env = variants[0]["runs"][0]["env"] or "?"
    for v in variants:
        v["summary"] = summarize(v["runs"], threshold)
    relconfig = os.path.relpath(a.config, ROOT)
    result = {
        "env": env,
        "config": relconfig,
        "threshold": threshold,
        "seeds": a.seeds,
        "jobs": a.jobs,
        "threads": a.threads,
        "command": "python3 bench/dqn_seeds.py " + shlex.join(argv if argv is not None else sys.argv[1:]),
        "train_command": f"cugym train --config {relconfig} --seed S --device {a.device} --out DIR"
        + "".join(f" --set {kv}" for kv in a.set)
        + (
            f" --set checkpoint_interval={a.checkpoint_every} --set keep_checkpoints=100000"
            if a.checkpoint_every
            else ""
        ),
        "final_episodes": variants[0]["runs"][0]["episodes"],
        "best_episodes": a.best_episodes,
        "cugym_version": cugym_version(a.cugym),
        "commit": commit(),
        "machine": machine(),
        "date": datetime.date.today().isoformat(),
        "note": a.note,
        "variants": [{k: v[k] for k in ("name", "set", "summary", "runs")} for v in variants],
    }
    png = os.path.join(a.out, "curves.png")
    plot(variants, threshold, f"{env}, {relconfig}", png)
    body = markdown(result)
    if a.figure:
        shutil.copyfile(png, a.figure)
        link = os.path.relpath(a.figure, os.path.dirname(os.path.abspath(a.write))) if a.write else a.figure
        body += f"\n\n![{env} learning curves, {relconfig}]({link})"
    if a.cleanrl:
        body += "\n\n" + cleanrl_table(a)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(body + "\n")
    print(body)
    print(f"\nsummary.json, summary.md and curves.png in {a.out}")
    if a.write:
        sections.write_section(a.write, a.marker, body)


if __name__ == "__main__":
    main()
