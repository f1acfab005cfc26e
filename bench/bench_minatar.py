#!/usr/bin/env python3
# bench_minatar.py - env steps per second of the five MinAtar games (the plugin in plugins/minatar,
# ids MinAtar-<Game>-v1) on cugym's CPU back end, beside the reference Python package `minatar`
# (1.0.15, the test oracle; one Environment stepped in a loop, as its own users run it) measured in
# the same run, and gymnax's published A100 figures (not measured here). Developer tool only.
#
#   python3 bench/bench_minatar.py [--cugym build/cli/cugym] [--write docs/benchmarks.md]
#
# cugym: `cugym bench --env ID --num-envs N --steps T --device cpu --repeats 3 --json` (mode step,
# random actions drawn by cugym; the median of the repeats). minatar: Environment(game) with its
# defaults (sticky actions 0.1, ramping), seed(0) and reset(), then act() with uniform random
# minimal-set actions drawn beforehand, reset on terminal, for about a second. --write replaces the
# minatar-cpu section of the file (bench/sections.py).
import argparse
import datetime
import json
import os
import platform
import subprocess
import time

import numpy as np
import sections

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTION = "minatar-cpu"
GAMES = [  # cugym id part, minatar name, gymnax's README figure on an A100 at 2k envs (steps/s)
    ("Asterix", "asterix", 1.1e6),
    ("Breakout", "breakout", 5.3e6),
    ("Freeway", "freeway", 1.15e6),
    ("Seaquest", "seaquest", None),
    ("SpaceInvaders", "space_invaders", 3.0e6),
]


def cugym_rate(binary, env_id, n, total):
    steps = max(20, int(total // n))
    cmd = [binary, "bench", "--env", env_id, "--num-envs", str(n), "--steps", str(steps), "--device", "cpu"]
    out = subprocess.run(cmd + ["--repeats", "3", "--json"], capture_output=True, text=True, check=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["steps_per_second"])


def minatar_rate(game, seconds):
    from minatar import Environment

    env = Environment(game)
    env.seed(0)
    env.reset()
    actions = env.minimal_action_set()
    draws = np.random.default_rng(0).integers(len(actions), size=200_000)
    acts, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for k in range(1000):
            _, terminal = env.act(actions[draws[(acts + k) % len(draws)]])
            if terminal:
                env.reset()
        acts += 1000
    return acts / (time.perf_counter() - start)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--cugym", default=os.path.join(ROOT, "build", "cli", "cugym"))
    p.add_argument("--write", help="markdown file whose minatar-cpu section gets the table")
    p.add_argument("--seconds", type=float, default=1.0, help="seconds of minatar stepping per game")
    a = p.parse_args()
    try:
        import minatar

        version = getattr(minatar, "__version__", "1.0.15")
    except ImportError:
        raise SystemExit("bench_minatar: pip install minatar==1.0.15 (the reference) first") from None
    rows = [
        "| game | cugym N = 1,024 | cugym N = 65,536 | minatar (1 env) | cugym / minatar | gymnax A100 (published) |"
    ]
    rows.append("|---|---:|---:|---:|---:|---:|")
    for name, game, gymnax in GAMES:
        env_id = f"MinAtar-{name}-v1"
        small = cugym_rate(a.cugym, env_id, 1024, 2e7)
        large = cugym_rate(a.cugym, env_id, 65536, 2e7)
        ref = minatar_rate(game, a.seconds)
        best = max(small, large)
        gx = f"{gymnax:,.0f}" if gymnax else "-"
        rows.append(f"| {env_id} | {small:,.0f} | {large:,.0f} | {ref:,.0f} | {best / ref:,.0f}x | {gx} |")
        print(rows[-1], flush=True)
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    body = "\n".join(rows) + (
        f"\n\nMachine: {cpu}, {os.cpu_count()} cores; minatar {version}, Python {platform.python_version()}; "
        f"{datetime.date.today()}.\ncugym: `cugym bench --env ID --num-envs N --device cpu --repeats 3` (mode step, "
        "median). minatar: one `Environment(game)` (sticky 0.1, ramping) stepped with random minimal-set actions "
        "for about a second. gymnax: its README's A100 figures at 2k envs (no sticky actions), not measured here."
    )
    if a.write:
        sections.write_section(a.write, SECTION, body, heading="MinAtar on the CPU, against the reference package")
    else:
        print(body)


if __name__ == "__main__":
    main()
