#!/usr/bin/env python3
"""DQN gradient updates per second on the CPU: cugym's nn (bench/bench_nn.cpp) against PyTorch
doing the same update, measured in the same run, written into the nn-updates section of
docs/benchmarks.md (bench/sections.py).

    python3 bench/compare_torch_nn.py [--bench build/bench/cugym_bench_nn] [--write docs/benchmarks.md]

One update: targets = max_a Q_target(next_obs) (no grad), q = Q(obs).gather(actions), loss
(MSE without clipping as CleanRL's DQN, or Huber = smooth_l1 with clip_grad_norm_(10) as
Stable-Baselines3's), zero_grad, backward, Adam(lr=1e-4) step. Same nets, batch and random data
shapes on both sides; torch.set_num_threads(os.cpu_count()). Needs `pip install torch` and a
Release build of cugym_bench_nn.
"""

import argparse
import copy
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import sections

NETS = ["4-120-84-2", "8-256-256-4"]
LOSSES = [("mse", 0.0), ("huber", 10.0)]
SECTION = "nn-updates"


def cugym_rates(bench, batch, seconds):
    out = subprocess.run(
        [
            bench,
            "--device",
            "cpu",
            "--json",
            "--batch",
            str(batch),
            "--seconds",
            str(seconds),
            "--nets",
            ",".join(NETS),
            "--losses",
            ",".join(loss for loss, _ in LOSSES),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rates, hardware = {}, ""
    for line in out.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            rates[(r["net"], r["loss"])] = r["updates_per_second"]
            hardware = r["hardware"]
    return rates, hardware


def torch_rate(torch, net_name, batch, loss, clip, seconds):
    nn, F = torch.nn, torch.nn.functional
    sizes = [int(s) for s in net_name.split("-")]
    torch.manual_seed(0)
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    net = nn.Sequential(*layers[:-1])
    target = copy.deepcopy(net)
    opt = torch.optim.Adam(net.parameters(), lr=1e-4)
    obs = torch.rand(batch, sizes[0]) * 2 - 1
    next_obs = torch.rand(batch, sizes[0]) * 2 - 1
    actions = torch.randint(0, sizes[-1], (batch,))
    loss_fn = F.mse_loss if loss == "mse" else F.smooth_l1_loss

    def update():
        with torch.no_grad():
            targets = target(next_obs).max(dim=1).values
        q = net(obs).gather(1, actions.unsqueeze(1)).squeeze(1)
        value = loss_fn(q, targets)
        opt.zero_grad()
        value.backward()
        if clip > 0:
            nn.utils.clip_grad_norm_(net.parameters(), clip)
        opt.step()

    def run(n):
        for _ in range(n):
            update()

    run(10)  # warm-up
    t0 = time.perf_counter()
    run(20)
    per = max(1e-7, (time.perf_counter() - t0) / 20)
    n = max(10, int(seconds / 5 / per))
    rates = []
    for _ in range(5):
        t0 = time.perf_counter()
        run(n)
        rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates)


def cpu_busy(interval=0.5):
    """Fraction of all CPU time spent busy over `interval` seconds (from /proc/stat)."""

    def sample():
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields), idle

    t0, i0 = sample()
    time.sleep(interval)
    t1, i1 = sample()
    return 1.0 - (i1 - i0) / max(1, t1 - t0)


def wait_idle(max_wait):
    """Waits (up to max_wait seconds) until other processes leave the CPUs alone: on a shared
    machine a concurrent build halves one side's figure and not the other's."""
    deadline = time.time() + max_wait
    while time.time() < deadline:
        try:
            if cpu_busy() < 0.15:
                return True
        except OSError:
            return True
    return False


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", default=os.path.join(root, "build", "bench", "cugym_bench_nn"))
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--seconds", type=float, default=1.0, help="timed seconds per figure and run")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each side, alternating; the best is reported")
    parser.add_argument("--max-wait", type=float, default=300, help="seconds to wait for idle CPUs before each run")
    parser.add_argument("--write", metavar="MD", help="replace the nn-updates section of this Markdown file")
    args = parser.parse_args()

    try:
        import torch
    except ImportError:
        sys.exit("compare_torch_nn: PyTorch is not installed (pip install torch)")
    threads = os.cpu_count()
    torch.set_num_threads(threads)

    cugym_runs, torch_runs, hardware, busy_waits = [], [], "", 0
    for r in range(args.rounds):
        busy_waits += not wait_idle(args.max_wait)
        rates, hardware = cugym_rates(args.bench, args.batch, args.seconds)
        cugym_runs.append(rates)
        rates = {}
        for net in NETS:
            for loss, clip in LOSSES:
                busy_waits += not wait_idle(args.max_wait)
                rates[(net, loss)] = torch_rate(torch, net, args.batch, loss, clip, args.seconds)
        torch_runs.append(rates)
        print(f"round {r + 1}: cugym {cugym_runs[-1]}\n         torch {torch_runs[-1]}", file=sys.stderr)

    rows = [
        "| net | batch | loss | cugym CPU updates/s | PyTorch CPU updates/s | ratio |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for net in NETS:
        for loss, clip in LOSSES:
            c = max(run[(net, loss)] for run in cugym_runs)
            t = max(run[(net, loss)] for run in torch_runs)
            label = "MSE" if loss == "mse" else f"Huber, clip {clip:g}"
            rows.append(f"| {net} | {args.batch} | {label} | {c:,.0f} | {t:,.0f} | {c / t:.1f}x |")
    blas = re.sub(r"^cpu \((.*)\)$", r"\1", hardware)
    footer = (
        f"\nMachine: {cpu_model()}, {threads} logical cores; {blas}. Python {platform.python_version()}, "
        f"PyTorch {torch.__version__} (CPU, torch.set_num_threads({threads})); {datetime.date.today().isoformat()}.\n\n"
        f"Best of {args.rounds} alternating runs per side (the machine is shared: each run starts once the CPUs "
        f"are idle{'' if busy_waits == 0 else f', except {busy_waits} that waited in vain'}), each run's figure the "
        f"median of 5 timed repeats (about {args.seconds:g} s) after a warm-up. Command: `python3 "
        f"bench/compare_torch_nn.py --write docs/benchmarks.md` (cugym side: `cugym_bench_nn --device cpu --json`)."
    )
    table = "\n".join(rows) + "\n" + footer
    print(table)

    if args.write:
        sections.write_section(
            args.write, SECTION, table, heading="nn: DQN gradient updates on the CPU, against PyTorch"
        )
        print(f"wrote {args.write}", file=sys.stderr)


if __name__ == "__main__":
    main()
