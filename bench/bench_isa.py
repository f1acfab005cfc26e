"""The CPU back end built for AVX2 (x86-64-v3) and for AVX-512 (x86-64-v4), measured on the same
CPU in the same run: `cugym bench --device cpu` for every classic-control env, interleaved rounds,
the median of each. Builds build-isa-x86-64-v3/ and build-isa-x86-64-v4/ (CPU only, the cugym
program only) from this source tree, so it takes a few minutes the first time.

    python bench/bench_isa.py [--num-envs 1024] [--rounds 7] [--write docs/benchmarks.md]

The AVX-512 build needs a CPU with AVX-512 (the script says so and stops otherwise)."""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

import sections

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTION = "isa"
LEVELS = {"x86-64-v3": "AVX2", "x86-64-v4": "AVX-512"}
ENVS = ["CartPole-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1", "Pendulum-v1"]
MODES = ["step", "actions"]


def build(level, jobs):
    """Configures and builds the cugym program for -march=`level`; returns its path."""
    d = os.path.join(ROOT, f"build-isa-{level}")
    if not os.path.exists(os.path.join(d, "CMakeCache.txt")):
        subprocess.run(
            ["cmake", "-S", ROOT, "-B", d, "-DCMAKE_BUILD_TYPE=Release", "-DCUGYM_CUDA=OFF", "-DCUGYM_SDL2=OFF"]
            + [
                "-DCUGYM_BOX2D=OFF",
                "-DCUGYM_NATIVE=OFF",
                "-DCUGYM_BUILD_TESTS=OFF",
                f"-DCMAKE_CXX_FLAGS=-march={level}",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    subprocess.run(["cmake", "--build", d, "-j", str(jobs), "--target", "cugym"], check=True, stdout=subprocess.DEVNULL)
    return os.path.join(d, "cli", "cugym")


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def bench(cugym, env, mode, num_envs, steps):
    out = subprocess.run(
        [cugym, "bench", "--env", env, "--num-envs", str(num_envs), "--steps", str(steps), "--repeats", "3"]
        + ["--device", "cpu", "--mode", mode, "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)["steps_per_second"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--num-envs", type=int, default=1024)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    p.add_argument("--write", metavar="FILE", help="put the table into FILE's section " + SECTION)
    a = p.parse_args()
    if not {"avx512f", "avx512vl", "avx512bw", "avx512dq"} <= cpu_flags():
        sys.exit("bench_isa: this CPU has no AVX-512, so the x86-64-v4 build cannot run here")
    programs = {level: build(level, a.jobs) for level in LEVELS}
    rates = {(env, mode, level): [] for env in ENVS for mode in MODES for level in LEVELS}
    for r in range(a.rounds):
        for env in ENVS:
            for mode in MODES:
                order = list(LEVELS) if r % 2 == 0 else list(reversed(LEVELS))
                for level in order:
                    rates[env, mode, level].append(bench(programs[level], env, mode, a.num_envs, a.steps))
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    threads = os.cpu_count()
    lines = [
        f"{cpu_name()}, {threads} threads, {datetime.date.today()}; GCC builds of this tree with "
        f"`-march=x86-64-v3` (AVX2) and `-march=x86-64-v4` (AVX-512), CPU only; "
        f"`cugym bench --device cpu --num-envs {a.num_envs} "
        f"--steps {a.steps} --repeats 3 --mode M`, median of {a.rounds} interleaved rounds "
        f"(`python bench/bench_isa.py --num-envs {a.num_envs} --rounds {a.rounds}`). Env steps per second:",
        "",
        "| env | mode | AVX2 | AVX-512 | AVX-512 / AVX2 |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    worst = 0.0
    for env in ENVS:
        for mode in MODES:
            v3 = statistics.median(rates[env, mode, "x86-64-v3"])
            v4 = statistics.median(rates[env, mode, "x86-64-v4"])
            worst = max(worst, v4 / v3)
            lines.append(f"| {env} | {mode} | {v3:.3g} | {v4:.3g} | {v4 / v3:.2f} |")
    lines += ["", f"Largest AVX-512 / AVX2 ratio: {worst:.2f}."]
    body = "\n".join(lines)
    print(body)
    if a.write:
        sections.write_section(a.write, SECTION, body, heading="The CPU back end on AVX2 and AVX-512")


if __name__ == "__main__":
    main()
