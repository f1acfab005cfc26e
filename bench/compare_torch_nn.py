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

Also MinAtar's network (10x10x4c16-128-6: Conv2d(4, 16, 3) + ReLU on 10 x 10 x 4 images, then
1024-128-6) at its batch of 32, and greedy action selection (forward + argmax) at batch 1 and
128. The PyTorch side is CugymConvQNet: cugym's layout (NHWC input, the convolution's output
flattened in (y, x, c) order) and tensor names, so a cugym model file loads into it with
load_state_dict and gives the same numbers.
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
MINATAR_NET = "10x10x4c16-128-6"  # cugym_bench_nn's name: HxWxC images, K channels (cK), then the MLP
MINATAR_BATCH = 32
ACT_BATCHES = [1, 128]
SECTION = "nn-updates"


def run_bench(bench, seconds, batch, nets, losses, parts="update"):
    """Rates of cugym_bench_nn's JSON rows, keyed (net, loss, part, batch), and its hardware line."""
    out = subprocess.run(
        [bench, "--device", "cpu", "--json", "--batch", str(batch), "--seconds", str(seconds)]
        + ["--nets", ",".join(nets), "--losses", ",".join(losses), "--parts", parts]
        + ["--act-batches", ",".join(str(b) for b in ACT_BATCHES)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rates, hardware = {}, ""
    for line in out.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            part = r["bench"].removeprefix("nn_")
            rates[(r["net"], r["loss"], part, r["batch"])] = r["updates_per_second"]
            hardware = r["hardware"]
    return rates, hardware


def cugym_rates(bench, batch, seconds):
    rates, hardware = run_bench(bench, seconds, batch, NETS, [loss for loss, _ in LOSSES])
    minatar, _ = run_bench(bench, seconds, MINATAR_BATCH, [MINATAR_NET], ["mse"], "update,act")
    rates.update(minatar)
    return rates, hardware


def make_conv_qnet_class(torch):
    nn = torch.nn

    class CugymConvQNet(nn.Module):
        """cugym's Mlp with a convolution in front, in cugym's layout: NHWC images in, the
        convolution's output flattened in (y, x, c) order (PyTorch flattens NCHW as (c, y, x)),
        tensors named as cugym's model files name them (conv.weight, conv.bias, 0.weight, 0.bias,
        2.weight, ...), so net.load_state_dict(safetensors.torch.load_file(path)) loads one."""

        def __init__(self, height, width, in_channels, channels, sizes):
            super().__init__()
            self.image = (height, width, in_channels)
            self.conv = nn.Conv2d(in_channels, channels, 3)
            widths = [(height - 2) * (width - 2) * channels] + sizes
            self.names = []
            for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
                self.add_module(str(2 * i), nn.Linear(a, b))
                self.names.append(str(2 * i))

        def forward(self, x):
            x = x.view(-1, *self.image).permute(0, 3, 1, 2)  # NHWC -> NCHW for Conv2d
            x = torch.relu(self.conv(x)).permute(0, 2, 3, 1).flatten(1)  # flattened (y, x, c)
            for i, name in enumerate(self.names):
                x = getattr(self, name)(x)
                if i + 1 < len(self.names):
                    x = torch.relu(x)
            return x

    return CugymConvQNet


def make_net(torch, net_name):
    """The network cugym_bench_nn calls net_name ("4-120-84-2" or "10x10x4c16-128-6") and its input width."""
    nn = torch.nn
    if "c" in net_name:
        image, rest = net_name.split("c", 1)
        height, width, in_channels = (int(v) for v in image.split("x"))
        channels, *sizes = (int(v) for v in rest.split("-"))
        net = make_conv_qnet_class(torch)(height, width, in_channels, channels, sizes)
        return net, height * width * in_channels, sizes[-1]
    sizes = [int(s) for s in net_name.split("-")]
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1]), sizes[0], sizes[-1]


def torch_rate(torch, net_name, batch, loss, clip, seconds, part="update"):
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    net, in_features, out_features = make_net(torch, net_name)
    target = copy.deepcopy(net)
    opt = torch.optim.Adam(net.parameters(), lr=1e-4)
    obs = torch.rand(batch, in_features) * 2 - 1
    next_obs = torch.rand(batch, in_features) * 2 - 1
    actions = torch.randint(0, out_features, (batch,))
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

    def act():
        with torch.no_grad():
            net(obs).argmax(dim=1)

    call = update if part == "update" else act

    def run(n):
        for _ in range(n):
            call()

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
                rates[(net, loss, "update", args.batch)] = torch_rate(torch, net, args.batch, loss, clip, args.seconds)
        busy_waits += not wait_idle(args.max_wait)
        rates[(MINATAR_NET, "mse", "update", MINATAR_BATCH)] = torch_rate(
            torch, MINATAR_NET, MINATAR_BATCH, "mse", 0.0, args.seconds
        )
        for b in ACT_BATCHES:
            rates[(MINATAR_NET, "-", "act", b)] = torch_rate(torch, MINATAR_NET, b, "mse", 0.0, args.seconds, "act")
        torch_runs.append(rates)
        print(f"round {r + 1}: cugym {cugym_runs[-1]}\n         torch {torch_runs[-1]}", file=sys.stderr)

    rows = [
        "| net | batch | loss | cugym CPU calls/s | PyTorch CPU calls/s | ratio |",
        "|---|---:|---|---:|---:|---:|",
    ]
    cases = [(net, loss, "update", args.batch, clip) for net in NETS for loss, clip in LOSSES]
    cases.append((MINATAR_NET, "mse", "update", MINATAR_BATCH, 0.0))
    cases += [(MINATAR_NET, "-", "act", b, 0.0) for b in ACT_BATCHES]
    for net, loss, part, batch, clip in cases:
        key = (net, loss, part, batch)
        c = max(run[key] for run in cugym_runs)
        t = max(run[key] for run in torch_runs)
        label = "act (forward + argmax)" if part == "act" else "MSE" if loss == "mse" else f"Huber, clip {clip:g}"
        rows.append(f"| {net} | {batch} | {label} | {c:,.0f} | {t:,.0f} | {c / t:.1f}x |")
    blas = re.sub(r"^cpu \((.*)\)$", r"\1", hardware)
    footer = (
        f"\nMachine: {cpu_model()}, {threads} logical cores; {blas}. Python {platform.python_version()}, "
        f"PyTorch {torch.__version__} (CPU, torch.set_num_threads({threads})); {datetime.date.today().isoformat()}.\n\n"
        f"Best of {args.rounds} alternating runs per side (the machine is shared: each run starts once the CPUs "
        f"are idle{'' if busy_waits == 0 else f', except {busy_waits} that waited in vain'}), each run's figure the "
        f"median of 5 timed repeats (about {args.seconds:g} s) after a warm-up. {MINATAR_NET}: MinAtar's network, "
        f"a 3 x 3 convolution with 16 channels on 10 x 10 x 4 images, then 1024-128-6; act rows time greedy "
        f"action selection alone. Command: `python3 "
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
