"""Many seeds of one config: `cugym train --seeds 1-K` (one process, the runs spread over the cores)
against the same K seeds as solo `cugym train --seed S` processes, as many at a time as there are
cores. Interleaved rounds on the CPU; wall time of the whole set and how many seeds reach the
env's threshold with the final model.

    python bench/bench_multi_run.py [--cugym build/cli/cugym] [--seeds 32] [--rounds 2] [--write docs/benchmarks.md]
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import sections

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTION = "multi-run"


def solved(folders):
    n = 0
    for folder in folders:
        with open(os.path.join(folder, "eval.json")) as f:
            e = json.load(f)
        n += e["threshold"] is not None and e["mean_return"] >= e["threshold"]
    return n


def solo(cugym, config, seeds, jobs, scratch):
    """Every seed as its own process, `jobs` at a time; returns (seconds, solved)."""
    folders = [os.path.join(scratch, f"solo_{s}") for s in seeds]
    pending = list(zip(seeds, folders))
    running = []
    t0 = time.perf_counter()
    while pending or running:
        while pending and len(running) < jobs:
            seed, folder = pending.pop(0)
            cmd = [cugym, "train", "--config", config, "--seed", str(seed), "--device", "cpu", "--out", folder]
            running.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for p in running:
            if p.poll() is not None:
                running.remove(p)
                if p.returncode != 0:
                    sys.exit(f"bench_multi_run: {' '.join(p.args)} failed")
                break
        else:
            time.sleep(0.01)
    return time.perf_counter() - t0, solved(folders)


def batch(cugym, config, seeds, jobs, scratch):
    folder = os.path.join(scratch, "batch")
    seed_list = ",".join(map(str, seeds))
    cmd = [cugym, "train", "--config", config, "--seeds", seed_list, "--jobs", str(jobs), "--device", "cpu"]
    t0 = time.perf_counter()
    subprocess.run(cmd + ["--out", folder], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    return seconds, solved([os.path.join(folder, f"seed_{s}") for s in seeds])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cugym", default=os.path.join(ROOT, "build", "cli", "cugym"))
    p.add_argument("--config", default=os.path.join(ROOT, "configs", "cartpole.toml"))
    p.add_argument("--seeds", type=int, default=32)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    p.add_argument("--write", metavar="FILE", help="put the table into FILE's section " + SECTION)
    a = p.parse_args()
    seeds = list(range(a.first_seed, a.first_seed + a.seeds))
    times = {"solo": [], "batch": []}
    counts = {"solo": [], "batch": []}
    for r in range(a.rounds):
        for kind in ("solo", "batch") if r % 2 == 0 else ("batch", "solo"):
            with tempfile.TemporaryDirectory() as scratch:
                seconds, n = (solo if kind == "solo" else batch)(a.cugym, a.config, seeds, a.jobs, scratch)
            times[kind].append(seconds)
            counts[kind].append(n)
            print(f"round {r + 1} {kind}: {seconds:.1f} s, {n}/{len(seeds)} solved", file=sys.stderr)
    s, b = statistics.median(times["solo"]), statistics.median(times["batch"])
    config = os.path.relpath(a.config, ROOT)
    body = "\n".join(
        [
            f"{a.seeds} seeds ({seeds[0]}-{seeds[-1]}) of `{config}` on the CPU, {a.jobs} at a time, "
            f"{datetime.date.today()}, `python bench/bench_multi_run.py --seeds {a.seeds} --rounds {a.rounds}`; "
            f"median wall time of {a.rounds} interleaved rounds (each: train, then the final 100-episode evaluation):",
            "",
            "| how | wall time | seeds solved (final model) |",
            "| --- | ---: | ---: |",
            f"| solo processes (`cugym train --seed S`), {a.jobs} at a time | {s:.1f} s | "
            f"{', '.join(str(n) for n in counts['solo'])} of {a.seeds} |",
            f"| one process (`cugym train --seeds {seeds[0]}-{seeds[-1]} --jobs {a.jobs}`) | {b:.1f} s | "
            f"{', '.join(str(n) for n in counts['batch'])} of {a.seeds} |",
            "",
            f"One process / solo processes: {s / b:.2f}x faster.",
        ]
    )
    print(body)
    if a.write:
        sections.write_section(a.write, SECTION, body, heading="Many seeds in one process")


if __name__ == "__main__":
    main()
