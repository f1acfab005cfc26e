"""cugym's PPO against CleanRL's in the same run: CartPole-v1 (cugym's configs/cartpole_ppo.toml
against CleanRL's ppo.py, its defaults: the same settings and 500k-step budget) and Pendulum-v1 (a
cugym config given with --pendulum-config against CleanRL's ppo_continuous_action.py with
--env-id Pendulum-v1 --total-timesteps 100000 and its other defaults), a few seeds each, one run at a
time, every process on one thread (OMP_NUM_THREADS=1 and OPENBLAS_NUM_THREADS=1; CleanRL on the CPU,
as its benchmark scripts run it).

Per seed: the final score, the seconds to the bar (CartPole 475, Pendulum -200) and the whole
process's seconds.
- cugym (`cugym train --seeds ... --jobs 1`): the final model's greedy mean over 100 episodes
  (eval.json); the training seconds (evaluations not counted) to the first evaluation (100 greedy
  episodes every eval_interval steps) at or above the bar (evals.csv); the process's seconds for all
  the seeds, divided by their number.
- CleanRL: its scripts run as they are, from their path (--cleanrl-ppo, --cleanrl-ppo-continuous):
  ppo.py saves no model, so its score is the training return (the stochastic policy's episodes, as it
  prints them) averaged over its last 100 episodes, and its time to the bar the seconds from its first
  printed episode to the episode at which that 100-episode mean first reaches the bar (so without the
  Python, torch and env start-up). ppo_continuous_action.py runs with --save-model and is stopped at its
  "model saved to" line (its own evaluation records a video); the saved model is also evaluated
  greedily (bench/cleanrl_ppo_eval.py, 100 episodes). Its process seconds run to that line.

    python3 bench/ppo_peers.py [--cugym build/cli/cugym] [--cartpole-seeds 1-8] [--full-budget]
        [--pendulum-config FILE.toml --pendulum-seeds 1-4]
        [--cleanrl-ppo CLEANRL/cleanrl/ppo.py --cleanrl-ppo-continuous CLEANRL/cleanrl/ppo_continuous_action.py
         --cleanrl-python PY --cleanrl-seeds 1 2 3 --cleanrl-pendulum-seeds 1 2 --cleanrl-commit SHA]
        [--out DIR] [--write docs/benchmarks.md]

--full-budget adds a cugym CartPole row with stop_at_threshold=false: all 500k steps, as CleanRL's
run. The run folders go to --out (kept) or to a temporary folder. Needs only the standard library
here; the CleanRL side needs torch, gymnasium 0.29, tyro and tensorboard in --cleanrl-python.
"""

import argparse
import csv
import datetime
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import sections
from bench_isa import cpu_name

ROOT = os.path.dirname(os.path.abspath(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")
SECTION = "ppo-peers"
BARS = {"CartPole-v1": 475.0, "Pendulum-v1": -200.0}
WINDOW = 100  # CleanRL's score: the mean training return over its last WINDOW episodes
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
# What the printed command shows for a path outside the repository, by option.
PLACEHOLDERS = {
    "--cugym": "CUGYM",
    "--pendulum-config": "PENDULUM.toml",
    "--cleanrl-ppo": "CLEANRL/cleanrl/ppo.py",
    "--cleanrl-ppo-continuous": "CLEANRL/cleanrl/ppo_continuous_action.py",
    "--cleanrl-python": "PYTHON",
    "--out": "OUT",
    "--write": "FILE.md",
}
EPISODE_LINE = re.compile(r"^global_step=(\d+), episodic_return=\[?\s*([-+0-9.eE]+|nan)")


# ---- parsing (pure) ----


def read_csv(path):
    """A CSV file's rows as dicts of floats (None for an empty cell); [] for a missing file."""
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return [{k: float(v) if v not in ("", None) else None for k, v in row.items()} for row in csv.DictReader(f)]


def first_at_bar(evals, bar):
    """(global_step, wall_time) of the first evals.csv row whose mean_return reaches bar, or None."""
    for r in evals:
        if r.get("mean_return") is not None and r["mean_return"] >= bar:
            return r["global_step"], r["wall_time"]
    return None


def parse_episodes(timed_lines):
    """CleanRL's episode lines, `global_step=S, episodic_return=[R]`, from (seconds, line) pairs:
    a list of (seconds, step, return) in the order printed."""
    episodes = []
    for t, line in timed_lines:
        m = EPISODE_LINE.match(line.strip())
        if m:
            episodes.append((t, int(m[1]), float(m[2])))
    return episodes


def window_means(episodes, window=WINDOW):
    """(seconds, step, mean of the last `window` returns) at each episode from the window-th on."""
    out, total = [], 0.0
    for i, (t, step, ret) in enumerate(episodes):
        total += ret
        if i >= window:
            total -= episodes[i - window][2]
        if i >= window - 1:
            out.append((t, step, total / window))
    return out


def first_window_at_bar(episodes, bar, window=WINDOW):
    """(seconds, step) of the first episode at which the mean of the last `window` returns reaches
    bar, or None."""
    for t, step, mean in window_means(episodes, window):
        if mean >= bar - 1e-9:
            return t, step
    return None


def final_window(episodes, window=WINDOW):
    """The mean of the last `window` returns (of all of them when fewer), None without any."""
    last = [r for _, _, r in episodes[-window:]]
    return sum(last) / len(last) if last else None


# ---- formatting (pure) ----


def median_time(times):
    """Median of per-seed seconds where None (never reached) counts as longer than any: None when
    that median is a never."""
    if not times:
        return None
    m = statistics.median(math.inf if t is None else t for t in times)
    return None if math.isinf(m) else m


def fmt(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def per_seed(values, digits):
    return ", ".join("never" if v is None else f"{v:.{digits}f}" for v in values)


def ratio(slow, fast):
    return None if slow is None or fast is None or fast <= 0 else slow / fast


def table_row(r):
    """One markdown row from a run dict (bench's own, see cugym_runs and cleanrl_runs)."""
    reached = sum(t is not None for t in r["to_bar"])
    final = f"{per_seed(r['final'], 1)}"
    if r.get("greedy"):
        final += f" (greedy: {per_seed(r['greedy'], 1)})"
    final_median = fmt(statistics.median(r["final"]))
    if r.get("greedy"):
        final_median += f" ({fmt(statistics.median(r['greedy']))})"
    med = median_time(r["to_bar"])
    return (
        f"| {r['env']} | {r['run']} | {r['seeds_text']} | {final} | {final_median} | "
        f"{per_seed(r['to_bar'], 2)} ({reached}/{len(r['to_bar'])}) | {'never' if med is None else f'{med:.2f}'} | "
        f"{fmt(statistics.median(r['process']))} |"
    )


def speedups(rows, env):
    """For env: (CleanRL's median s to the bar / cugym's, CleanRL's median process s / cugym's, the
    same for cugym's full-budget row), from its first cugym row, its full-budget cugym row (None
    without one) and its CleanRL row; None where a side has no number."""
    ours = next((r for r in rows if r["env"] == env and r["peer"] == "cugym" and not r.get("full")), None)
    full = next((r for r in rows if r["env"] == env and r["peer"] == "cugym" and r.get("full")), None)
    theirs = next((r for r in rows if r["env"] == env and r["peer"] == "cleanrl"), None)
    if not ours or not theirs:
        return None, None, None
    process = statistics.median(theirs["process"])
    return (
        ratio(median_time(theirs["to_bar"]), median_time(ours["to_bar"])),
        ratio(process, statistics.median(ours["process"])),
        ratio(process, statistics.median(full["process"])) if full else None,
    )


def speedup_line(env, to_bar, process, full_process, goal=None):
    """The sentence under the table for env, from speedups()."""
    if to_bar is None:
        text = f"{env}: no ratio to the bar (a side's median never reached it)"
    else:
        text = f"{env}: cugym reaches the bar {to_bar:.1f}x as fast as CleanRL (median seconds)"
    if goal is not None:
        text += f"; goal {goal:g}x {'met' if to_bar is not None and to_bar >= goal else 'missed'}"
    if process is not None:
        text += f"; whole process per seed {process:.1f}x"
    if full_process is not None:
        text += f", {full_process:.1f}x with all the steps (`stop_at_threshold=false`)"
    return text + "."


def display_command(argv, root=ROOT, placeholders=PLACEHOLDERS):
    """The command line as the docs show it: a path inside the repository relative to it, one
    outside it (a CleanRL checkout, a venv, a scratch folder) as its option's placeholder."""
    out, i = [], 0
    while i < len(argv):
        arg = argv[i]
        opt, eq, val = arg.partition("=")
        if eq and opt in placeholders:
            out.append(f"{opt}={_show_path(val, root, placeholders[opt])}")
        elif arg in placeholders and i + 1 < len(argv):
            out += [arg, _show_path(argv[i + 1], root, placeholders[arg])]
            i += 1
        else:
            out.append(arg)
        i += 1
    return " ".join(out)


def _show_path(path, root, placeholder):
    full = os.path.abspath(path)
    if full == root or full.startswith(root.rstrip(os.sep) + os.sep):
        return os.path.relpath(full, root)
    return placeholder


# ---- running ----


def cugym_runs(cugym, run_args, seeds, out, env_id, label, full=False):
    """`cugym train ... --seeds SEEDS --jobs 1 --out OUT` (one process), read back per seed."""
    cmd = [cugym, "train", "--device", "cpu", *run_args, "--seeds", seeds, "--jobs", "1", "--out", out]
    t0 = time.perf_counter()
    subprocess.run(
        cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, **ONE_THREAD)
    )
    seconds = time.perf_counter() - t0
    with open(os.path.join(out, "summary.json")) as f:
        runs = json.load(f)["points"][0]["runs"]
    bar = BARS[env_id]
    final, to_bar, steps, version = [], [], [], None
    for r in runs:
        with open(os.path.join(r["run_dir"], "eval.json")) as f:
            ev = json.load(f)
        version = ev.get("version")
        final.append(ev["mean_return"])
        steps.append(ev["global_step"])
        hit = first_at_bar(read_csv(os.path.join(r["run_dir"], "evals.csv")), bar)
        to_bar.append(hit[1] if hit else None)
    return {
        "env": env_id,
        "peer": "cugym",
        "run": label,
        "seeds": [r["seed"] for r in runs],
        "seeds_text": seeds,
        "final": final,
        "to_bar": to_bar,
        "steps": steps,
        "process": [seconds / len(runs)] * len(runs),
        "process_total": seconds,
        "version": version,
        "full": full,
    }


def cleanrl_run(python, script, seed, extra, work, save_model=False):
    """One run of a CleanRL script on the CPU: its episodes as (seconds since the process started,
    step, return), the process's seconds, and the saved model's path (save_model)."""
    cmd = [python, script, "--seed", str(seed), "--no-cuda", *extra] + (["--save-model"] if save_model else [])
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONUNBUFFERED="1", **ONE_THREAD)
    timed, model, tail = [], None, []
    t0 = time.perf_counter()
    with subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
        for line in p.stdout:
            now = time.perf_counter() - t0
            timed.append((now, line))
            tail = (tail + [line.strip()])[-5:]
            if save_model and line.startswith("model saved to"):
                model = os.path.join(work, line.split("model saved to", 1)[1].strip())
                p.terminate()  # what follows is its own 10-episode evaluation, with a video
                break
        p.wait()
    seconds = time.perf_counter() - t0
    if (save_model and model is None) or (not save_model and p.returncode != 0):
        raise SystemExit(f"{' '.join(cmd)} failed: {' / '.join(tail)}")
    return parse_episodes(timed), seconds, model


def cleanrl_runs(python, script, seeds, extra, scratch, env_id, label, greedy=False):
    bar = BARS[env_id]
    final, to_bar, from_start, process, greedy_means = [], [], [], [], []
    for seed in seeds:
        work = tempfile.mkdtemp(prefix=f"cleanrl_{os.path.basename(script)[:-3]}_{seed}_", dir=scratch)
        episodes, seconds, model = cleanrl_run(python, script, seed, extra, work, save_model=greedy)
        hit = first_window_at_bar(episodes, bar)
        final.append(final_window(episodes))
        to_bar.append(hit[0] - episodes[0][0] if hit else None)
        from_start.append(hit[0] if hit else None)
        process.append(seconds)
        if greedy:
            p = subprocess.run(
                [python, os.path.join(BENCH, "cleanrl_ppo_eval.py"), "--script", script, "--model", model]
                + ["--env-id", env_id],
                capture_output=True,
                text=True,
                env=dict(os.environ, CUDA_VISIBLE_DEVICES="", **ONE_THREAD),
            )
            if p.returncode != 0:
                raise SystemExit(f"cleanrl_ppo_eval.py failed:\n{p.stderr[-2000:]}")
            greedy_means.append(json.loads(p.stdout.strip().splitlines()[-1])["mean"])
        print(
            json.dumps({"env": env_id, "seed": seed, "final": final[-1], "to_bar": to_bar[-1], "process": seconds}),
            flush=True,
        )
    return {
        "env": env_id,
        "peer": "cleanrl",
        "run": label,
        "seeds": list(seeds),
        "seeds_text": " ".join(str(s) for s in seeds),
        "final": final,
        "greedy": greedy_means or None,
        "to_bar": to_bar,
        "to_bar_from_start": from_start,
        "process": process,
    }


def peer_versions(python):
    code = (
        "import platform, torch, gymnasium, numpy, tyro;"
        "print(f'Python {platform.python_version()}, torch {torch.__version__}, gymnasium {gymnasium.__version__}, "
        "numpy {numpy.__version__}, tyro {tyro.__version__}')"
    )
    p = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else "versions unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cugym", default=os.path.join(ROOT, "build", "cli", "cugym"))
    ap.add_argument("--cartpole-seeds", default="1-8")
    ap.add_argument("--full-budget", action="store_true", help="also cugym on CartPole without the stop")
    ap.add_argument("--pendulum-config", help="cugym's PPO config for Pendulum-v1 (no Pendulum row without it)")
    ap.add_argument("--pendulum-seeds", default="1-4")
    ap.add_argument("--cleanrl-ppo", help="CleanRL's cleanrl/ppo.py")
    ap.add_argument("--cleanrl-ppo-continuous", help="CleanRL's cleanrl/ppo_continuous_action.py")
    ap.add_argument("--cleanrl-python", default=sys.executable)
    ap.add_argument("--cleanrl-seeds", nargs="+", type=int, default=[1, 2, 3])
    ap.add_argument("--cleanrl-pendulum-seeds", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--cleanrl-commit", help="the CleanRL commit the scripts are from, for the caption")
    ap.add_argument("--out", help="keep the run folders here (a new or empty folder)")
    ap.add_argument("--write", help="markdown file whose ppo-peers section gets the table")
    a = ap.parse_args()

    load = os.getloadavg()[0]
    rows = []
    pendulum_toml = None
    with tempfile.TemporaryDirectory(prefix="cugym_ppo_peers_") as tmp:
        scratch = a.out or tmp
        os.makedirs(scratch, exist_ok=True)
        rows.append(
            cugym_runs(
                a.cugym,
                ["--env", "CartPole-v1", "--set", "algo=ppo"],
                a.cartpole_seeds,
                os.path.join(scratch, "cartpole_cugym"),
                "CartPole-v1",
                "cugym PPO, `configs/cartpole_ppo.toml` (stops at the bar, 2 s.e. margin)",
            )
        )
        print(json.dumps(rows[-1]), flush=True)
        if a.full_budget:
            rows.append(
                cugym_runs(
                    a.cugym,
                    ["--env", "CartPole-v1", "--set", "algo=ppo", "--set", "stop_at_threshold=false"],
                    a.cartpole_seeds,
                    os.path.join(scratch, "cartpole_cugym_full"),
                    "CartPole-v1",
                    "cugym PPO, the same with `stop_at_threshold=false` (all 500k steps)",
                    full=True,
                )
            )
            print(json.dumps(rows[-1]), flush=True)
        if a.cleanrl_ppo:
            rows.append(
                cleanrl_runs(
                    a.cleanrl_python,
                    os.path.abspath(a.cleanrl_ppo),
                    a.cleanrl_seeds,
                    [],
                    scratch,
                    "CartPole-v1",
                    "CleanRL `ppo.py`, its defaults (500k steps)",
                )
            )
        if a.pendulum_config:
            with open(a.pendulum_config) as f:
                pendulum_toml = f.read().strip()
            rows.append(
                cugym_runs(
                    a.cugym,
                    ["--config", os.path.abspath(a.pendulum_config)],
                    a.pendulum_seeds,
                    os.path.join(scratch, "pendulum_cugym"),
                    "Pendulum-v1",
                    "cugym PPO, `PENDULUM.toml` (below)",
                )
            )
            print(json.dumps(rows[-1]), flush=True)
        if a.cleanrl_ppo_continuous:
            rows.append(
                cleanrl_runs(
                    a.cleanrl_python,
                    os.path.abspath(a.cleanrl_ppo_continuous),
                    a.cleanrl_pendulum_seeds,
                    ["--env-id", "Pendulum-v1", "--total-timesteps", "100000"],
                    scratch,
                    "Pendulum-v1",
                    "CleanRL `ppo_continuous_action.py --env-id Pendulum-v1 --total-timesteps 100000`",
                    greedy=True,
                )
            )

    body = section_body(a, rows, load, pendulum_toml, sys.argv[1:])
    print(body)
    if a.write:
        sections.write_section(a.write, SECTION, body, heading="PPO against CleanRL's")


def section_body(a, rows, load, pendulum_toml, argv):
    cugym_version = next((r["version"] for r in rows if r.get("version")), "unknown")
    peers = peer_versions(a.cleanrl_python) if any(r["peer"] == "cleanrl" for r in rows) else None
    commit = f" at {a.cleanrl_commit}" if a.cleanrl_commit else ""
    lines = [
        f"{cpu_name()}, {os.cpu_count()} cores (load average {load:.1f} at the start), "
        f"{datetime.date.today().isoformat()}; cugym {cugym_version}"
        + (f"; CleanRL{commit} with {peers}" if peers else "")
        + ". One run at a time, each process on one thread (OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1), "
        "CleanRL on the CPU. Bars: CartPole-v1 475, Pendulum-v1 -200.",
        "",
        "What is compared. cugym: the final score is the final model's greedy mean over 100 episodes "
        "(eval.json); the time to the bar is training seconds (evaluations not counted) to the first "
        "evaluation (100 greedy episodes every 10240 steps) at or above the bar (evals.csv). CleanRL: "
        f"the final score is the training return (its stochastic policy's episodes) averaged over its last "
        f"{WINDOW} episodes, and the time to the bar is the seconds from its first printed episode to the "
        f"episode at which that {WINDOW}-episode mean first reaches the bar: training-return based, as "
        "`ppo.py` saves no model; `ppo_continuous_action.py` runs with `--save-model` and its model's greedy "
        "mean over 100 episodes (the actor's mean action; the observation normalizer, which the model file "
        "does not hold, started afresh as CleanRL's own `ppo_eval.py` does) is in brackets. Process: the "
        "whole process's wall seconds per seed (cugym: one process for all its seeds, divided by their "
        "number; it includes the evaluations; CleanRL: to the end of training, its start-up included).",
        "",
        "| env | run | seeds | final score per seed | median | s to the bar per seed (reached) | median | "
        "process s per seed (median) |",
        "| --- | --- | --- | --- | ---: | --- | ---: | ---: |",
    ]
    lines += [table_row(r) for r in rows]
    lines.append("")
    for env in BARS:
        to_bar, process, full_process = speedups(rows, env)
        if process is not None:
            goal = 50 if env == "CartPole-v1" else None
            lines += [speedup_line(env, to_bar, process, full_process, goal), ""]
    if pendulum_toml:
        lines += ["`PENDULUM.toml`:", "", "```toml", pendulum_toml, "```", ""]
    lines += ["```", "python3 bench/ppo_peers.py " + display_command(argv), "```"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
