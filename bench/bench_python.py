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
# int32 action arrays, so env stepping is timed, not sampling. The Python loops are timed in
# alternating rounds (this VM's speed drifts by tens of percent over minutes) and each figure is
# the median over the rounds; the C++ figures are the better of one run before and one after.
# --write replaces the block between <!-- BEGIN python-cpu --> and <!-- END python-cpu -->.
import argparse
import datetime
import json
import os
import platform
import subprocess
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- BEGIN python-cpu -->", "<!-- END python-cpu -->"


def timed_rate(step, n, seconds, actions):
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(8):
            step(actions[steps % len(actions)])
            steps += 1
    return n * steps / (time.perf_counter() - start)


def python_rates(peers, n, seconds, repeats):
    """Median steps/s of each peer over `repeats` rounds, the peers taking turns in each round."""
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 2, n).astype(np.int32) for _ in range(max(2, min(64, 2**22 // n)))]
    envs = {name: make(n) for name, make in peers.items()}
    for env in envs.values():
        env.reset(seed=0)
        for t in range(3):
            env.step(actions[t % len(actions)])
    rates = {name: [] for name in envs}
    for _ in range(repeats):
        for name, env in envs.items():
            rates[name].append(timed_rate(env.step, n, seconds, actions))
    for env in envs.values():
        env.close()
    return {name: sorted(r)[len(r) // 2] for name, r in rates.items()}


def cpp_rate(binary, n, mode):
    steps = max(100, int(2e8 // n))
    out = subprocess.run([binary, "bench", "--env", "CartPole-v1", "--num-envs", str(n), "--steps", str(steps),
                          "--device", "cpu", "--mode", mode, "--json"], capture_output=True, text=True,
                         check=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["steps_per_second"])


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--cugym", default=os.path.join(ROOT, "build", "cli", "cugym"))
    p.add_argument("--sizes", default="16,1024,65536")
    p.add_argument("--seconds", type=float, default=0.3)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--write")
    args = p.parse_args()

    import gymnasium
    import cugym
    try:
        import envpool
    except ImportError:
        envpool = None

    peers = {
        "SAME_STEP": lambda n: cugym.make_vec("CartPole-v1", n, device="cpu"),
        "NEXT_STEP": lambda n: cugym.make_vec("CartPole-v1", n, device="cpu", autoreset_mode="NextStep"),
        "no info": lambda n: cugym.make_vec("CartPole-v1", n, device="cpu", autoreset_mode="NextStep",
                                            episode_statistics=False),
        "Gymnasium": lambda n: gymnasium.make_vec("CartPole-v1", num_envs=n),
    }
    if envpool is not None:
        peers["EnvPool"] = lambda n: envpool.make_gymnasium("CartPole-v1", num_envs=n, seed=0)
    load_before = os.getloadavg()
    rows = []
    for n in [int(x) for x in args.sizes.split(",")]:
        before = {m: cpp_rate(args.cugym, n, m) for m in ("step", "actions")}
        row = {"n": n, **python_rates(peers, n, args.seconds, args.repeats)}
        for m in ("step", "actions"):
            row["C++ " + m] = max(before[m], cpp_rate(args.cugym, n, m))
        rows.append(row)
        print(json.dumps(row), flush=True)

    others = (["EnvPool"] if envpool is not None else []) + ["Gymnasium"]
    loops = ("SAME_STEP", "NEXT_STEP", "no info")
    lines = ["| N | C++ `cugym bench` | C++ `--mode actions` | Python SAME_STEP, full info | "
             "Python NEXT_STEP, episode statistics | Python NEXT_STEP, no info | " + " | ".join(others) + " |",
             "|---:|---:|---:|---:|---:|---:|" + "---:|" * len(others)]
    for r in rows:
        cells = [f"{r['n']:,}"] + [f"{r[x]:,.0f}" for x in ("C++ step", "C++ actions", *loops, *others)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| N | " + " | ".join(f"{x} / C++ step | {x} / C++ actions" for x in loops) + " | " +
              " | ".join(f"SAME_STEP / {x} | NEXT_STEP / {x}" for x in others) + " |",
              "|---:|" + "---:|---:|" * (len(loops) + len(others))]
    for r in rows:
        cells = [f"{r['n']:,}"]
        for x in loops:
            cells += [f"{r[x] / r['C++ step']:.2f}", f"{r[x] / r['C++ actions']:.2f}"]
        for x in others:
            cells += [f"{r['SAME_STEP'] / r[x]:.1f}x", f"{r['NEXT_STEP'] / r[x]:.1f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    versions = f"Python {platform.python_version()}, numpy {np.__version__}, gymnasium {gymnasium.__version__}"
    if envpool is not None:
        versions += f", envpool {envpool.__version__}"
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    load = f"load average {load_before[0]:.1f} before the run, {os.getloadavg()[0]:.1f} after (1-minute)"
    lines += ["", f"Machine: {cpu}, {os.cpu_count()} logical cores, {load}; {versions}; {datetime.date.today()}.",
              f"Command: `python bench/bench_python.py --write docs/benchmarks.md` (Python: median of {args.repeats} "
              f"alternating rounds of ~{args.seconds} s each; C++: `cugym bench --env CartPole-v1 --num-envs N "
              f"--steps max(100, 2e8/N) --device cpu --mode step|actions`, the better of a run before and "
              f"one after the Python rounds, each the median of 5 repeats)."]
    table = "\n".join(lines)
    print(table)
    if args.write:
        text = open(args.write).read()
        block = f"{BEGIN}\n{table}\n{END}"
        b, e = text.find(BEGIN), text.find(END)
        text = text[:b] + block + text[e + len(END):] if b >= 0 and e > b else text.rstrip() + "\n\n" + block + "\n"
        open(args.write, "w").write(text)


if __name__ == "__main__":
    main()
