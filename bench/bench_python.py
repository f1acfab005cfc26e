#!/usr/bin/env python3
# bench_python.py - Python-side env steps per second of cugym's Gymnasium vector env (CartPole-v1,
# CPU) beside `cugym bench` (C++), EnvPool's Python API and Gymnasium's own vector CartPole, all
# measured in the same run. cugym's Python loop is measured in three forms: SAME_STEP with its full
# info dict (Gymnasium's layout: one final_obs array per ended env, final_info, episode
# statistics), NEXT_STEP with the episode statistics (the mode EnvPool and Gymnasium's vector
# CartPole use: no per-env arrays), and NEXT_STEP without statistics (an empty or one-mask info).
# C++ is timed in mode step (random actions drawn inside the step, `cugym bench`'s default) and
# mode actions (an action array handed to each Step call, as the Python loop does); the second
# table gives each Python loop's ratio to both. Developer tool only.
#
#   python bench/bench_python.py [--cugym build/cli/cugym] [--sizes 16,1024,65536] [--write docs/benchmarks.md]
#
# Needs the cugym package installed (pip install .) and gymnasium; EnvPool is measured when it
# imports (pip install envpool). Every Python loop steps with a fixed pool of pre-generated random
# int32 action arrays, so env stepping is timed, not sampling. This VM's speed drifts by tens of
# percent over minutes, so everything is timed in rounds: in each, every Python loop and then
# `cugym bench` in both modes, back to back. Rates are medians over the rounds, and a ratio is the
# median of the rounds' ratios, so it compares figures taken seconds apart.
# --write replaces the python-cpu section of the file (bench/sections.py).
import argparse
import datetime
import json
import os
import platform
import subprocess
import time
from statistics import median

import numpy as np
import sections

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTION = "python-cpu"
LOOPS = ("SAME_STEP", "NEXT_STEP", "no info")  # cugym's Python loops (the peers' names in main)


def timed_rate(step, n, seconds, actions):
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(8):
            step(actions[steps % len(actions)])
            steps += 1
    return n * steps / (time.perf_counter() - start)


def cpp_rate(binary, n, mode, seconds):
    """One `cugym bench` run of about `seconds` (after its warm-up repeat), in steps/s."""
    steps = max(100, int(seconds * 2e8 // n))
    out = subprocess.run(
        [
            binary,
            "bench",
            "--env",
            "CartPole-v1",
            "--num-envs",
            str(n),
            "--steps",
            str(steps),
            "--device",
            "cpu",
            "--mode",
            mode,
            "--repeats",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(json.loads(out.strip().splitlines()[-1])["steps_per_second"])


def rounds(peers, binary, n, seconds, repeats):
    """Steps/s of each Python peer and of C++ (modes step and actions) in `repeats` rounds, every
    one of them timed once per round, back to back: {name: [rate per round]}."""
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 2, n).astype(np.int32) for _ in range(max(2, min(64, 2**22 // n)))]
    envs = {name: make(n) for name, make in peers.items()}
    for env in envs.values():
        env.reset(seed=0)
        for t in range(3):
            env.step(actions[t % len(actions)])
    rates = {name: [] for name in [*envs, "C++ step", "C++ actions"]}
    for _ in range(repeats):
        for name, env in envs.items():
            rates[name].append(timed_rate(env.step, n, seconds, actions))
        for mode in ("step", "actions"):
            rates["C++ " + mode].append(cpp_rate(binary, n, mode, seconds))
    for env in envs.values():
        env.close()
    return rates


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--cugym", default=os.path.join(ROOT, "build", "cli", "cugym"))
    p.add_argument("--sizes", default="16,1024,65536")
    p.add_argument("--seconds", type=float, default=0.3)
    p.add_argument("--repeats", type=int, default=11)
    p.add_argument("--write")
    args = p.parse_args()

    import cugym
    import gymnasium

    try:
        import envpool
    except ImportError:
        envpool = None

    peers = {
        "SAME_STEP": lambda n: cugym.make_vec(
            "CartPole-v1", n, device="cpu", autoreset_mode="SameStep", episode_statistics=True
        ),
        "NEXT_STEP": lambda n: cugym.make_vec(
            "CartPole-v1", n, device="cpu", autoreset_mode="NextStep", episode_statistics=True
        ),
        "no info": lambda n: cugym.make_vec(
            "CartPole-v1", n, device="cpu", autoreset_mode="NextStep", episode_statistics=False
        ),
        "Gymnasium": lambda n: gymnasium.make_vec("CartPole-v1", num_envs=n),
    }
    if envpool is not None:
        peers["EnvPool"] = lambda n: envpool.make_gymnasium("CartPole-v1", num_envs=n, seed=0)
    load_before = os.getloadavg()
    rows = []
    for n in [int(x) for x in args.sizes.split(",")]:
        rates = rounds(peers, args.cugym, n, args.seconds, args.repeats)
        row = {"n": n, **{name: median(r) for name, r in rates.items()}}
        # Ratios: the median over rounds of each round's ratio (figures taken seconds apart).
        row["ratios"] = {
            f"{a} / {b}": median([x / y for x, y in zip(rates[a], rates[b])]) for a in LOOPS for b in rates if b != a
        }
        rows.append(row)
        print(json.dumps(row), flush=True)

    others = (["EnvPool"] if envpool is not None else []) + ["Gymnasium"]
    lines = [
        "| N | C++ `cugym bench` | C++ `--mode actions` | Python SAME_STEP, full info | "
        "Python NEXT_STEP, episode statistics | Python NEXT_STEP, no info | " + " | ".join(others) + " |",
        "|---:|---:|---:|---:|---:|---:|" + "---:|" * len(others),
    ]
    for r in rows:
        cells = [f"{r['n']:,}"] + [f"{r[x]:,.0f}" for x in ("C++ step", "C++ actions", *LOOPS, *others)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "| N | "
        + " | ".join(f"{x} / C++ step | {x} / C++ actions" for x in LOOPS)
        + " | "
        + " | ".join(f"SAME_STEP / {x} | NEXT_STEP / {x}" for x in others)
        + " |",
        "|---:|" + "---:|---:|" * (len(LOOPS) + len(others)),
    ]
    for r in rows:
        q = r["ratios"]
        cells = [f"{r['n']:,}"]
        for x in LOOPS:
            cells += [f"{q[x + ' / C++ step']:.2f}", f"{q[x + ' / C++ actions']:.2f}"]
        for x in others:
            cells += [f"{q['SAME_STEP / ' + x]:.1f}x", f"{q['NEXT_STEP / ' + x]:.1f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    versions = f"Python {platform.python_version()}, numpy {np.__version__}, gymnasium {gymnasium.__version__}"
    if envpool is not None:
        versions += f", envpool {envpool.__version__}"
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    load = f"load average {load_before[0]:.1f} before the run, {os.getloadavg()[0]:.1f} after (1-minute)"
    lines += [
        "",
        f"Machine: {cpu}, {os.cpu_count()} logical cores, {load}; {versions}; {datetime.date.today()}.",
        f"Command: `python bench/bench_python.py --write docs/benchmarks.md`: {args.repeats} rounds, in each "
        f"every Python loop for ~{args.seconds} s and then `cugym bench --env CartPole-v1 --num-envs N "
        f"--steps max(100, {args.seconds:g} * 2e8 / N) --device cpu --mode step|actions --repeats 1` "
        f"(after its warm-up repeat), back to back; rates are medians over the rounds, ratios the "
        f"medians of each round's ratio.",
    ]
    table = "\n".join(lines)
    print(table)
    if args.write:
        sections.write_section(args.write, SECTION, table)


if __name__ == "__main__":
    main()
