"""Where each agent's CPU training time goes: `perf record` of one `cugym train --device cpu` run
per agent (DQN with PureJaxRL dqn.py's settings on CartPole-v1, PQN and PPO with their shipped
CartPole-v1 configs, PPO and SAC with their shipped Pendulum-v1 configs), one thread
(OPENBLAS_NUM_THREADS=1), no evaluation or checkpoints, and the top symbols of each (self time,
`perf report --no-children --sort symbol`). The math work is measured against these: what is not
arithmetic and takes more than 5% is a target.

    python3 bench/profile_agents.py [--cugym build/cli/cugym] [--top 5] [--only ppo_cartpole ...]
        [--write docs/benchmarks.md]

Needs `perf` (linux-perf) with kernel.perf_event_paranoid <= 2 for a process of one's own.
"""

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile

import sections
from bench_isa import cpu_name
from jax_peers import CUGYM_SETTINGS
from ppo_peers import display_command

ROOT = os.path.dirname(os.path.abspath(os.path.dirname(os.path.abspath(__file__))))
SECTION = "agent-profiles"
NO_EXTRAS = ["--set", "eval_episodes=0", "--set", "checkpoint_interval=0", "--set", "stop_at_threshold=false"]
# name: (what it is, the cugym train arguments, env steps)
RUNS = {
    "dqn_cartpole": ("DQN CartPole-v1, PureJaxRL dqn.py's settings", CUGYM_SETTINGS["dqn"], 200000),
    "pqn_cartpole": (
        "PQN CartPole-v1, configs/cartpole_pqn.toml",
        ["--env", "CartPole-v1", "--set", "algo=pqn"],
        200000,
    ),
    "ppo_cartpole": ("PPO CartPole-v1, configs/cartpole_ppo.toml", CUGYM_SETTINGS["ppo"], 200000),
    "ppo_pendulum": (
        "PPO Pendulum-v1, configs/pendulum_ppo.toml",
        ["--env", "Pendulum-v1", "--set", "algo=ppo"],
        100000,
    ),
    "sac_pendulum": ("SAC Pendulum-v1, configs/pendulum_sac.toml", ["--env", "Pendulum-v1", "--set", "algo=sac"], 8000),
}
SYMBOL_LINE = re.compile(r"^\s*([0-9.]+)%\s+\[[.kgu]\]\s+(.*?)(?:\s+-\s+-)?\s*$")


# ---- pure ----


def top_symbols(report, top):
    """The first `top` (percent, symbol) pairs of `perf report --no-children --sort symbol --stdio
    -g none` output, in its order (largest first)."""
    out = []
    for line in report.splitlines():
        if line.startswith("#"):
            continue
        m = SYMBOL_LINE.match(line)
        if m:
            out.append((float(m[1]), m[2].strip()))
            if len(out) == top:
                break
    return out


def short(symbol, width=70):
    """A symbol as the table shows it: namespaces and template arguments of cugym's own shortened."""
    s = symbol.replace("cugym::", "").replace("(anonymous namespace)::", "")
    return s if len(s) <= width else s[: width - 3] + "..."


def table(profiles):
    """A markdown table: a row per agent, its top symbols with their share of the samples."""
    lines = ["| run | seconds | top symbols (self time) |", "| --- | ---: | --- |"]
    for label, seconds, symbols in profiles.values():
        text = "; ".join(f"`{short(s)}` {p:.1f}%" for p, s in symbols) or "-"
        lines.append(f"| {label} | {seconds:.1f} | {text} |")
    return "\n".join(lines)


# ---- running ----


def profile(cugym, args, steps, scratch, top):
    data = os.path.join(scratch, "perf.data")
    out = os.path.join(scratch, "run")
    cmd = ["perf", "record", "-F", "999", "-o", data, "--", cugym, "train", "--device", "cpu", *args, *NO_EXTRAS]
    cmd += ["--total-steps", str(steps), "--seed", "1", "--out", out]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    t0 = datetime.datetime.now()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = (datetime.datetime.now() - t0).total_seconds()
    if p.returncode != 0:
        raise SystemExit(f"failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    report = subprocess.run(
        ["perf", "report", "-i", data, "--no-children", "--sort", "symbol", "--stdio", "-g", "none"],
        capture_output=True,
        text=True,
    )
    subprocess.run(["rm", "-rf", out, data])
    return seconds, top_symbols(report.stdout, top)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cugym", default=os.path.join(ROOT, "build", "cli", "cugym"))
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--only", nargs="+", choices=sorted(RUNS))
    ap.add_argument("--write", help="markdown file whose agent-profiles section gets the table")
    a = ap.parse_args()
    if not os.access(a.cugym, os.X_OK):
        ap.error(f"--cugym {a.cugym}: not an executable (build it first)")
    if subprocess.run(["perf", "--version"], capture_output=True).returncode != 0:
        ap.error("perf is not installed (Debian: apt-get install linux-perf)")
    profiles = {}
    with tempfile.TemporaryDirectory(prefix="cugym_profile_") as scratch:
        for name in a.only or RUNS:
            label, args, steps = RUNS[name]
            seconds, symbols = profile(a.cugym, args, steps, scratch, a.top)
            profiles[name] = (f"{label}, {steps} steps", seconds, symbols)
            print(name, f"{seconds:.1f} s", symbols, flush=True)
    version = subprocess.run([a.cugym, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    shown = display_command(sys.argv[1:], ROOT, {"--cugym": "CUGYM", "--write": "FILE.md"})
    body = "\n".join(
        [
            f"{cpu_name()}, {os.cpu_count()} cores, {datetime.date.today().isoformat()}; {version}. One thread "
            "(OPENBLAS_NUM_THREADS=1), no evaluation or checkpoints; `perf record -F 999`, self time by symbol. "
            "Seconds are the whole run under perf.",
            "",
            table(profiles),
            "",
            f"`python3 bench/profile_agents.py {shown}`",
        ]
    )
    print(body)
    if a.write:
        sections.write_section(a.write, SECTION, body, heading="Where each agent's CPU time goes")


if __name__ == "__main__":
    main()
