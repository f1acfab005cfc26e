#!/usr/bin/env python3
# bench_envs.py - env steps per second of every registered cugym env on the CPU, beside
# Gymnasium's own vector env for the same id (make_vec: CartPoleVectorEnv for CartPole,
# SyncVectorEnv for the others), measured in the same run. Developer tool only.
#
#   python3 bench/bench_envs.py [--cugym build/cli/cugym] [--write docs/benchmarks.md]
#
# cugym: `cugym bench --env ID --num-envs N --steps T --device cpu --json` (mode step, random
# actions drawn by cugym); Gymnasium: reset(seed=0) then T steps with actions sampled from the
# action space beforehand (outside the timed loop). --write replaces the envs-cpu section of the
# file (bench/sections.py).
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(key, None)

import numpy as np  # noqa: E402
import sections  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTION = "envs-cpu"


def cugym_rate(binary, env_id, n, total):
    steps = max(20, int(total // n))
    cmd = [binary, "bench", "--env", env_id, "--num-envs", str(n), "--steps", str(steps), "--device", "cpu", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["steps_per_second"])


def gymnasium_rate(env_id, n, seconds):
    import gymnasium as gym

    env = gym.make_vec(env_id, num_envs=n)
    env.reset(seed=0)
    env.action_space.seed(0)
    pool = [env.action_space.sample() for _ in range(64)]
    for t in range(3):
        env.step(pool[t])
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(8):
            env.step(pool[steps % len(pool)])
            steps += 1
    rate = n * steps / (time.perf_counter() - start)
    env.close()
    return rate


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--cugym", default=os.path.join(ROOT, "build", "cli", "cugym"))
    p.add_argument("--num-envs", type=int, nargs="+", default=[1024, 65536])
    p.add_argument("--cugym-total", type=float, default=5e7, help="cugym steps T = this // N")
    p.add_argument("--gym-seconds", type=float, default=1.0)
    p.add_argument("--write", metavar="FILE")
    a = p.parse_args()
    if not os.access(a.cugym, os.X_OK):
        sys.exit(f"cugym binary not found: {a.cugym} (build it first)")
    envs = json.loads(subprocess.run([a.cugym, "list", "--json"], capture_output=True, text=True, check=True).stdout)
    try:
        import gymnasium as gym

        gym_version = gym.__version__
    except ImportError:
        gym_version = None
    header = "| env | N | cugym CPU steps/s | Gymnasium steps/s | ratio |"
    rows = [header, "|---|---:|---:|---:|---:|"]
    for env in envs:
        env_id = env["id"]
        for n in a.num_envs:
            c = cugym_rate(a.cugym, env_id, n, a.cugym_total)
            g = gymnasium_rate(env_id, n, a.gym_seconds) if gym_version and n <= 1024 else None
            ratio = f"{c / g:.0f}x" if g else ""
            rows.append(f"| {env_id} | {n:,} | {c:,.0f} | {'' if g is None else f'{g:,.0f}'} | {ratio} |")
            print(rows[-1], flush=True)
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    info = [
        "",
        f"Machine: {cpu}, {os.cpu_count()} cores; gymnasium {gym_version}, numpy {np.__version__}, "
        f"Python {platform.python_version()}; {datetime.date.today().isoformat()}.",
        "cugym: `cugym bench --env ID --num-envs N --steps T --device cpu` (mode step, median of 5). Gymnasium: "
        "`gymnasium.make_vec(ID, num_envs=N)` stepped for ~1 s with pre-sampled actions, measured at N = 1,024 only.",
    ]
    body = "\n".join(rows + info)
    print(body)
    if a.write:
        sections.write_section(a.write, SECTION, body)
        print(f"wrote {a.write}")


if __name__ == "__main__":
    main()
