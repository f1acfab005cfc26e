#!/usr/bin/env python3
# bench_python.py - Python-side env steps per second of cugym's Gymnasium vector env (CartPole-v1,
# CPU, SAME_STEP with its full info dict), beside `cugym bench` (C++, mode step), EnvPool's Python
# API and Gymnasium's own vector CartPole, all measured in the same run. Also cugym's loop without
# per-env info objects (NEXT_STEP, episode_statistics=False: the info is empty or one mask), which
# shows what Gymnasium's SAME_STEP layout (one array per ended env) costs. Developer tool only.
#
#   python bench/bench_python.py [--cugym build/cli/cugym] [--sizes 16,1024,65536] [--write docs/benchmarks.md]
#
# Needs the cugym package installed (pip install .) and gymnasium; EnvPool is measured when it
# imports (pip install envpool, in its own venv with cugym installed too). Every Python loop
# steps with a fixed pool of pre-generated random int32 action arrays, so env stepping is timed,
# not sampling. --write replaces the block between <!-- BEGIN python-cpu --> and
# <!-- END python-cpu -->.
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


def loop_rate(env, n, seconds, actions):
    env.reset(seed=0)
    for t in range(3):
        env.step(actions[t % len(actions)])
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(8):
            env.step(actions[steps % len(actions)])
            steps += 1
    return n * steps / (time.perf_counter() - start)


def median_rate(make, n, seconds, repeats):
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 2, n).astype(np.int32) for _ in range(max(2, min(64, 2**22 // n)))]
    env = make(n)
    rates = sorted(loop_rate(env, n, seconds, actions) for _ in range(repeats))
    env.close()
    return rates[len(rates) // 2]


def cpp_rate(binary, n):
    steps = max(100, int(2e8 // n))
    out = subprocess.run([binary, "bench", "--env", "CartPole-v1", "--num-envs", str(n), "--steps", str(steps),
                          "--device", "cpu", "--json"], capture_output=True, text=True, check=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["steps_per_second"])


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--cugym", default=os.path.join(ROOT, "build", "cli", "cugym"))
    p.add_argument("--sizes", default="16,1024,65536")
    p.add_argument("--seconds", type=float, default=0.8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--write")
    args = p.parse_args()

    import gymnasium
    import cugym
    try:
        import envpool
    except ImportError:
        envpool = None

    peers = {
        "cugym Python": lambda n: cugym.make_vec("CartPole-v1", n, device="cpu"),
        "no info": lambda n: cugym.make_vec("CartPole-v1", n, device="cpu", autoreset_mode="NextStep",
                                            episode_statistics=False),
        "Gymnasium": lambda n: gymnasium.make_vec("CartPole-v1", num_envs=n),
    }
    if envpool is not None:
        peers["EnvPool"] = lambda n: envpool.make_gymnasium("CartPole-v1", num_envs=n, seed=0)
    load_before = os.getloadavg()
    rows = []
    for n in [int(x) for x in args.sizes.split(",")]:
        row = {"n": n, "C++": cpp_rate(args.cugym, n)}
        for name, make in peers.items():
            row[name] = median_rate(make, n, args.seconds, args.repeats)
        rows.append(row)
        print(json.dumps(row), flush=True)

    names = ["C++", "cugym Python"] + (["EnvPool"] if envpool is not None else []) + ["Gymnasium"]
    lines = ["| N | cugym C++ (`cugym bench`) | cugym Python | Python / C++ | cugym Python, no info | "
             "no info / C++ | " + " | ".join(f"{x} | cugym Python / {x}" for x in names[2:]) + " |",
             "|---:|---:|---:|---:|---:|---:|" + "---:|---:|" * (len(names) - 2)]
    for r in rows:
        cells = [f"{r['n']:,}", f"{r['C++']:,.0f}", f"{r['cugym Python']:,.0f}",
                 f"{r['cugym Python'] / r['C++']:.2f}", f"{r['no info']:,.0f}", f"{r['no info'] / r['C++']:.2f}"]
        for x in names[2:]:
            cells += [f"{r[x]:,.0f}", f"{r['cugym Python'] / r[x]:.1f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    versions = f"Python {platform.python_version()}, numpy {np.__version__}, gymnasium {gymnasium.__version__}"
    if envpool is not None:
        versions += f", envpool {envpool.__version__}"
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    load = f"load average {load_before[0]:.1f} before the run, {os.getloadavg()[0]:.1f} after (1-minute)"
    lines += ["", f"Machine: {cpu}, {os.cpu_count()} logical cores, {load}; {versions}; {datetime.date.today()}.",
              f"Command: `python bench/bench_python.py --write docs/benchmarks.md` (median of {args.repeats} runs of "
              f"~{args.seconds} s each; C++: `cugym bench --env CartPole-v1 --num-envs N --steps max(100, 2e8/N) "
              f"--device cpu`, mode step)."]
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
