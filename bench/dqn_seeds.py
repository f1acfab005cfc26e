#!/usr/bin/env python3
# dqn_seeds.py - DQN acceptance benchmark: train with a config for several seeds, evaluate each
# model over 100 greedy episodes, and report per seed the wall time until a checkpoint first
# evaluates at the env's threshold or more, the total training time and the final greedy return.
# Optionally runs CleanRL's dqn.py (its own hyperparameters) on the same machine for comparison.
#
#   python3 bench/dqn_seeds.py [--config configs/cartpole.toml] [--seeds 1 2 3 4 5] [--device cpu]
#                              [--cleanrl /path/to/cleanrl/dqn.py --cleanrl-python PY] [--write docs/benchmarks.md]
# CleanRL's dqn.py (fe8d8a0) reads infos["final_observation"], which Gymnasium 1.x renamed: run it
# with a python whose gymnasium is 0.29 (a venv with --system-site-packages for torch, plus
# `pip install gymnasium==0.29.1 "numpy<2"`).
#
# Time to threshold: checkpoints every --checkpoint-every env steps are evaluated after the run
# (100 greedy episodes each); the time is metrics.csv's wall_time at that checkpoint's step.
import argparse
import csv
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, check=True, **kw)


def evaluate(cugym, model, device, episodes=100):
    out = run([cugym, "eval", "--model", model, "--episodes", str(episodes), "--device", device, "--json"]).stdout
    return json.loads(out.strip().splitlines()[-1])["mean_return"]


def train_seed(cugym, config, seed, device, every, threshold, extra):
    work = tempfile.mkdtemp(prefix="cugym-dqn-")
    out = os.path.join(work, "run")
    cmd = [cugym, "train", "--config", config, "--seed", str(seed), "--device", device, "--out", out,
           "--set", f"checkpoint_interval={every}", "--set", "keep_checkpoints=1000", "--set", "eval_episodes=0"]
    for kv in extra:
        cmd += ["--set", kv]
    start = time.perf_counter()
    run(cmd)
    total = time.perf_counter() - start
    with open(os.path.join(out, "metrics.csv")) as f:
        wall = {int(r["global_step"]): float(r["wall_time"]) for r in csv.DictReader(f)}
    first = None
    ckpts = sorted(os.listdir(os.path.join(out, "checkpoints")))
    for name in ckpts:
        step = int(re.search(r"step_(\d+)", name).group(1))
        if evaluate(cugym, os.path.join(out, "checkpoints", name), device) >= threshold:
            first = (step, wall.get(step, max(v for k, v in wall.items() if k <= step)))
            break
    final = evaluate(cugym, os.path.join(out, "model.safetensors"), device)
    steps = max(wall)
    shutil.rmtree(work)
    return {"seed": seed, "first": first, "train_seconds": wall[steps], "process_seconds": total,
            "final": final, "steps": steps}


def cleanrl(python, script, seed, total_steps):
    env = dict(os.environ, OMP_NUM_THREADS=str(os.cpu_count()),
               PYTHONPATH=os.path.dirname(os.path.abspath(script)))  # its cleanrl_utils package
    work = tempfile.mkdtemp(prefix="cleanrl-")
    start = time.perf_counter()
    p = subprocess.run([python, script, "--seed", str(seed), "--total-timesteps", str(total_steps),
                        "--no-cuda", "--save-model"], cwd=work, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    shutil.rmtree(work)
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"}
    # CleanRL prints "eval_episode=i, episodic_return=R" for its 10 end-of-training episodes.
    returns = [float(x) for x in re.findall(r"episodic_return=\[?([-0-9.]+)", p.stdout + p.stderr)][-10:]
    return {"seconds": seconds, "eval": sum(returns) / len(returns) if returns else float("nan")}


def write_section(path, marker, body):
    begin, end = f"<!-- BEGIN {marker} -->", f"<!-- END {marker} -->"
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    b, e = text.find(begin), text.find(end)
    block = f"{begin}\n{body.rstrip()}\n{end}\n"
    text = text[:b] + block + text[e + len(end):].lstrip("\n") if 0 <= b < e else text.rstrip("\n") + "\n\n" + block
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--cugym", default=os.path.join(ROOT, "build", "cli", "cugym"))
    p.add_argument("--config", default=os.path.join(ROOT, "configs", "cartpole.toml"))
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    p.add_argument("--device", default="cpu")
    p.add_argument("--threshold", type=float, default=475.0)
    p.add_argument("--checkpoint-every", type=int, default=5000)
    p.add_argument("--set", action="append", default=[], help="extra --set for every run")
    p.add_argument("--cleanrl", help="path to CleanRL's dqn.py to run once (seed 1) for comparison")
    p.add_argument("--cleanrl-steps", type=int, default=500000)
    p.add_argument("--cleanrl-python", default=sys.executable,
                   help="python with torch, tyro, stable-baselines3 and a gymnasium dqn.py supports (0.29)")
    p.add_argument("--marker", default="dqn-cartpole")
    p.add_argument("--write", metavar="FILE")
    a = p.parse_args()
    rows = ["| seed | first greedy eval >= %g | train time | final greedy mean (100 ep.) |" % a.threshold,
            "|---:|---|---:|---:|"]
    solved = 0
    for seed in a.seeds:
        r = train_seed(a.cugym, a.config, seed, a.device, a.checkpoint_every, a.threshold, a.set)
        first = f"{r['first'][1]:.2f} s (step {r['first'][0]:,})" if r["first"] else "never"
        solved += r["final"] >= a.threshold
        rows.append(f"| {seed} | {first} | {r['train_seconds']:.2f} s ({r['steps']:,} steps) | {r['final']:.1f} |")
        print(rows[-1], flush=True)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    info = ["", f"{solved} of {len(a.seeds)} seeds reach {a.threshold:g} in greedy evaluation. "
            f"`cugym train --config {os.path.relpath(a.config, ROOT)} --seed S --device {a.device}`; "
            f"checkpoints every {a.checkpoint_every:,} env steps evaluated over 100 greedy episodes; times are "
            f"the training loop's wall time (metrics.csv), without process start-up or evaluation. "
            f"Machine: {cpu}, {os.cpu_count()} cores; {datetime.date.today().isoformat()}."]
    if a.cleanrl:
        c = cleanrl(a.cleanrl_python, a.cleanrl, 1, a.cleanrl_steps)
        if "error" in c:
            info.append(f"CleanRL dqn.py failed here: {c['error']}")
        else:
            info.append(f"CleanRL dqn.py (its defaults, {a.cleanrl_steps:,} steps, seed 1, CPU, same machine, "
                        f"same run): {c['seconds']:.1f} s in all, final 10-episode eval at end_e {c['eval']:.1f}.")
    body = "\n".join(rows + info)
    print(body)
    if a.write:
        write_section(a.write, a.marker, body)


if __name__ == "__main__":
    main()
