#!/usr/bin/env python3
# lunar_lander_speed.py - LunarLander throughput in env steps per second: `cugym bench` for both
# ids beside EnvPool (make_gymnasium, num_threads = cores, batch_size = num_envs) and Gymnasium's
# vector env (make_vec, sync), at each N, in the same run (docs/benchmarks.md). Developer tool only.
#
#   python3 -m venv /tmp/bench && /tmp/bench/bin/pip install "gymnasium[box2d]==1.4.0" envpool
#   /tmp/bench/bin/python bench/lunar_lander_speed.py --cugym build/cli/cugym [--num-envs 16 256 4096]
#
# Every peer steps uniformly random actions generated before the timed loop (cugym draws them on
# the device inside `bench`, one Step call per step); each figure is steps in about --seconds of
# stepping after a warm-up, median of --repeats.
import argparse
import json
import os
import statistics
import subprocess
import time

import numpy as np

IDS = ["LunarLander-v3", "LunarLanderContinuous-v3"]


def random_actions(env_id, n, steps, rng):
    if env_id == "LunarLander-v3":
        return rng.integers(0, 4, size=(steps, n)).astype(np.int32)
    return rng.uniform(-1, 1, size=(steps, n, 2)).astype(np.float32)


def timed(step, actions, seconds):
    """Steps with actions[t % len] for about `seconds`; returns steps per call per second."""
    for t in range(3):
        step(actions[t % len(actions)])
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step(actions[calls % len(actions)])
        calls += 1
    return calls / (time.perf_counter() - start)


def envpool_rate(env_id, n, threads, seconds, rng):
    import envpool

    env = envpool.make_gymnasium(env_id, num_envs=n, batch_size=n, num_threads=threads, seed=0)
    env.reset()
    return n * timed(env.step, random_actions(env_id, n, 64, rng), seconds)


def gymnasium_rate(env_id, n, seconds, rng):
    import gymnasium as gym

    env = gym.make_vec(env_id, num_envs=n, vectorization_mode="sync")
    env.reset(seed=0)
    return n * timed(env.step, random_actions(env_id, n, 16, rng), seconds)


def cugym_rate(cugym, env_id, n, seconds):
    steps = max(20, int(seconds * 150000 / n))  # about `seconds` at ~1.5e5 steps/s
    out = subprocess.run(
        [
            cugym,
            "bench",
            "--env",
            env_id,
            "--num-envs",
            str(n),
            "--steps",
            str(steps),
            "--repeats",
            "3",
            "--device",
            "cpu",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)["steps_per_second"]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cugym", required=True)
    parser.add_argument("--num-envs", type=int, nargs="+", default=[16, 256, 4096])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    threads = os.cpu_count()
    rng = np.random.default_rng(0)
    print(f"| env | N | cugym (cpu, {threads} threads) | EnvPool ({threads} threads) | Gymnasium make_vec (sync) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for env_id in IDS:
        for n in args.num_envs:
            med = lambda f: statistics.median(f() for _ in range(args.repeats))  # noqa: E731
            ours = med(lambda: cugym_rate(args.cugym, env_id, n, args.seconds))  # noqa: B023 - called here
            pool = med(lambda: envpool_rate(env_id, n, threads, args.seconds, rng))  # noqa: B023 - called here
            gym = gymnasium_rate(env_id, n, args.seconds, rng)  # one repeat: slowest by far
            print(f"| {env_id} | {n} | {ours:.3g} | {pool:.3g} | {gym:.3g} |", flush=True)


if __name__ == "__main__":
    main()
