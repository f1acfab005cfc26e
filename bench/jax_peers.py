"""cugym against PureJaxRL and purejaxql on the same CPU, in one run: PPO on CartPole-v1
(PureJaxRL's ppo.py config, which is CleanRL's and cugym's configs/cartpole_ppo.toml: 4 envs x 128
steps, 4 epochs x 4 minibatches, 64-64 tanh, 5e5 env steps) and DQN on CartPole-v1 (PureJaxRL's
dqn.py config: 10 envs, buffer 10,000, batch 128, one update per 10 env steps, hard target update
every 500 steps, ReLU 120-84, MSE, Adam 2.5e-4, 5e5 env steps, cugym set to the same) and, with
--purejaxql, PQN on CartPole-v1 (purejaxql's pqn_cartpole.yaml: 32 envs x 64 steps, 4 epochs x 16
minibatches, 256-256 with layer norm, Adam 1e-4 annealed, Q(0.95), rewards x 0.1, epsilon 1 ->
0.2 over a fifth of the run, 5e5 env steps, cugym set to the same), each for one seed and for
--seeds seeds (the peer: `jax.vmap` of its train function; cugym: `--seeds 1-K --lockstep on`).

The sides alternate, --repeats times each, and the table gives medians:
- PureJaxRL and purejaxql (bench/jax_peer_run.py with --jax-python, the peers' scripts as they
  are, from their checkouts given by --purejaxrl and --purejaxql): the seconds to train (the
  compiled program's run) and apart from them the seconds to compile it; their returns are the
  finished training episodes of the last update that ended any (PPO) or the last 100 updates'
  logged mean return (DQN, PQN), averaged over the seeds.
- cugym (`cugym train --device cpu`, no evaluation, no checkpoints, all the steps): the whole
  process's seconds (start-up included; there is nothing to compile); its returns are the last
  metrics.csv row's training episodes, averaged over the seeds.

    python3 bench/jax_peers.py --purejaxrl PUREJAXRL --jax-python JAXPY [--purejaxql PUREJAXQL]
        [--cugym build/cli/cugym] [--seeds 8] [--repeats 5] [--total-steps 500000]
        [--only ppo|dqn|pqn] [--write docs/benchmarks.md]

--only writes its own section (jax-peers-ALGO), so one work can be measured again alone.

Needs only the standard library here; --jax-python needs jax[cpu], flax, optax, distrax, gymnax,
flashbax, and for PQN hydra-core, omegaconf and safetensors (docs/benchmarks.md names the versions
measured).
"""

import argparse
import csv
import datetime
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import ppo_peers
import sections
from bench_isa import cpu_name
from ppo_peers import fmt

ROOT = os.path.dirname(os.path.abspath(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")
SECTION = "jax-peers"
# cugym set to each peer's config (the keys not named keep the shipped config's values, which are
# the peer's already: configs/cartpole_ppo.toml is ppo.py's config).
CUGYM_SETTINGS = {
    "ppo": ["--env", "CartPole-v1", "--set", "algo=ppo"],
    "dqn": [
        "--env",
        "CartPole-v1",
        *(
            x
            for kv in (
                "num_envs=10",
                "buffer_size=10000",
                "batch_size=128",
                "start_e=1.0",
                "end_e=0.05",
                "exploration_fraction=0.5",
                "tau=1.0",
                "target_update_interval=500",
                "learning_rate=2.5e-4",
                "learning_starts=10000",
                "replay_ratio=0.1",
                'loss="mse"',
                "double_dqn=false",
                "dueling=false",
                "prioritized_replay=false",
                "max_grad_norm=0.0",
                "hidden_sizes=[120,84]",
            )
            for x in ("--set", kv)
        ),
    ],
}
CUGYM_SETTINGS["pqn"] = [
    "--env",
    "CartPole-v1",
    *(
        x
        for kv in (
            "algo=pqn",
            "num_envs=32",
            "num_steps=64",
            "num_epochs=4",
            "num_minibatches=16",
            "hidden_sizes=[256,256]",
            "layer_norm=true",
            'optimizer="adam"',
            "learning_rate=1e-4",
            "anneal_lr=true",
            "max_grad_norm=10.0",
            "reward_scale=0.1",
            "gamma=0.99",
            "q_lambda=0.95",
            "start_e=1.0",
            "end_e=0.2",
            "exploration_fraction=0.2",
        )
        for x in ("--set", kv)
    ),
]
WHOLE_RUN = ["--set", "eval_episodes=0", "--set", "checkpoint_interval=0", "--set", "stop_at_threshold=false"]
# algo: (its peer's checkout option, the script in that checkout)
PEER_SCRIPTS = {
    "ppo": ("purejaxrl", os.path.join("purejaxrl", "ppo.py")),
    "dqn": ("purejaxrl", os.path.join("purejaxrl", "dqn.py")),
    "pqn": ("purejaxql", os.path.join("purejaxql", "pqn_gymnax.py")),
}
NAMES = {"ppo": "PPO CartPole-v1", "dqn": "DQN CartPole-v1", "pqn": "PQN CartPole-v1"}
PEERS = {"purejaxrl": "PureJaxRL", "purejaxql": "purejaxql"}
PLACEHOLDERS = {
    "--purejaxrl": "PUREJAXRL",
    "--purejaxql": "PUREJAXQL",
    "--jax-python": "JAXPY",
    "--cugym": "CUGYM",
    "--write": "FILE.md",
}


# ---- pure ----


def cugym_command(cugym, algo, seeds, total_steps, out):
    """The `cugym train` command of one timed cugym run of `algo` with `seeds` seeds."""
    cmd = [cugym, "train", "--device", "cpu", *CUGYM_SETTINGS[algo], *WHOLE_RUN, "--total-steps", str(total_steps)]
    if seeds == 1:
        return cmd + ["--seed", "1", "--out", out]
    return cmd + ["--seeds", f"1-{seeds}", "--lockstep", "on", "--out", out]


def last_returns(run_dirs):
    """The episodic_return of the last metrics.csv row with one, per run folder (None where none)."""
    out = []
    for d in run_dirs:
        last = None
        path = os.path.join(d, "metrics.csv")
        if os.path.exists(path):
            with open(path, newline="") as f:
                for row in csv.DictReader(f):
                    if row.get("episodic_return") not in (None, "", "nan"):
                        last = float(row["episodic_return"])
        out.append(last)
    return out


def parse_peer(stdout):
    """The JSON line bench/jax_peer_run.py prints last; SystemExit naming what it printed otherwise."""
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise SystemExit("jax_peer_run.py printed no result:\n" + stdout[-2000:])


def mean(values):
    """The mean of the values that are numbers (not None, not NaN); None without any."""
    values = [v for v in values if v is not None and not math.isnan(v)]
    return sum(values) / len(values) if values else None


def summarize(runs):
    """Medians over a cell's repeated runs (dicts with seconds, compile_s and returns)."""
    return {
        "seconds": statistics.median(r["seconds"] for r in runs),
        "spread": (min(r["seconds"] for r in runs), max(r["seconds"] for r in runs)),
        "compile_s": statistics.median(r["compile_s"] for r in runs) if runs[0].get("compile_s") is not None else None,
        "returns": mean([mean(r["returns"]) for r in runs]),
        "repeats": len(runs),
    }


def table(cells, seeds):
    """The markdown table: a row per (algo, seeds) with both sides' medians and cugym's speed-up."""
    lines = [
        "| work | seeds | JAX peer: training s (spread), compile s | cugym: process s (spread) | "
        "returns (peer / cugym) | cugym faster by |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for algo in PEER_SCRIPTS:
        for k in (1, seeds):
            peer, ours = cells.get((algo, k, "peer")), cells.get((algo, k, "cugym"))
            if not peer or not ours:
                continue
            speedup = peer["seconds"] / ours["seconds"] if ours["seconds"] > 0 else None
            lines.append(
                f"| {NAMES[algo]} ({PEERS[PEER_SCRIPTS[algo][0]]}) | {k} | {fmt(peer['seconds'], 2)} "
                f"({fmt(peer['spread'][0], 2)}-"
                f"{fmt(peer['spread'][1], 2)}), {fmt(peer['compile_s'], 1)} | {fmt(ours['seconds'], 2)} "
                f"({fmt(ours['spread'][0], 2)}-{fmt(ours['spread'][1], 2)}) | {fmt(peer['returns'])} / "
                f"{fmt(ours['returns'])} | {fmt(speedup, 2)}x |"
            )
    return "\n".join(lines)


# The command line as the docs show it (ppo_peers' rule: paths outside the repository as placeholders).
display_command = functools.partial(ppo_peers.display_command, root=ROOT, placeholders=PLACEHOLDERS)


# ---- running ----


def run_peer(python, checkout, algo, seeds, total_steps):
    script = os.path.join(checkout, PEER_SCRIPTS[algo][1])
    cmd = [python, os.path.join(BENCH, "jax_peer_run.py"), "--script", script, "--algo", algo]
    cmd += ["--seeds", str(seeds), "--total-steps", str(total_steps)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"the JAX peer's {algo} failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
    r = parse_peer(p.stdout)
    return {"seconds": r["train_s"], "compile_s": r["compile_s"], "returns": r["returns"], "jax": r["jax"]}


def run_cugym(cugym, algo, seeds, total_steps, scratch):
    out = tempfile.mkdtemp(prefix=f"{algo}_{seeds}_", dir=scratch)
    os.rmdir(out)  # cugym makes the run folder itself
    cmd = cugym_command(cugym, algo, seeds, total_steps, out)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"cugym {algo} failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stderr[-3000:]}")
    dirs = [out] if seeds == 1 else [os.path.join(out, f"seed_{s}") for s in range(1, seeds + 1)]
    return {"seconds": seconds, "compile_s": None, "returns": last_returns(dirs)}


def cugym_version(cugym):
    p = subprocess.run([cugym, "--version"], capture_output=True, text=True)
    return p.stdout.strip().splitlines()[0] if p.returncode == 0 and p.stdout.strip() else "unknown"


def peer_versions(python):
    code = (
        "import importlib.metadata as m;"
        "print(', '.join(f'{n} {m.version(n)}' for n in "
        "('jax', 'jaxlib', 'flax', 'optax', 'distrax', 'gymnax', 'flashbax')))"
    )
    p = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else "versions unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--purejaxrl", help="a checkout of github.com/luchris429/purejaxrl (PPO's and DQN's rows)")
    ap.add_argument("--purejaxrl-commit", help="its commit, for the caption")
    ap.add_argument("--purejaxql", help="a checkout of github.com/mttga/purejaxql (PQN's rows)")
    ap.add_argument("--purejaxql-commit", help="its commit, for the caption")
    ap.add_argument("--jax-python", required=True, help="a Python with jax[cpu], flax, optax, distrax, gymnax")
    ap.add_argument("--cugym", default=os.path.join(ROOT, "build", "cli", "cugym"))
    ap.add_argument("--seeds", type=int, default=8, help="the many-seeds rows' seeds (and the one-seed rows)")
    ap.add_argument("--repeats", type=int, default=5, help="alternating runs per cell; the table gives medians")
    ap.add_argument("--total-steps", type=int, default=500000)
    ap.add_argument("--only", choices=sorted(PEER_SCRIPTS), help="one of the two works")
    ap.add_argument("--write", help="markdown file whose jax-peers section gets the table")
    a = ap.parse_args()
    if a.seeds < 2 or a.repeats < 1 or a.total_steps < 1:
        ap.error("--seeds must be at least 2, --repeats and --total-steps at least 1")
    algos = [a.only] if a.only else [x for x in PEER_SCRIPTS if getattr(a, PEER_SCRIPTS[x][0])]
    for algo in algos:
        option, script = PEER_SCRIPTS[algo]
        checkout = getattr(a, option)
        if not checkout or not os.path.isfile(os.path.join(checkout, script)):
            ap.error(f"--{option} {checkout}: no {script} there (a checkout of {option}, for {algo})")
    if not os.access(a.cugym, os.X_OK):
        ap.error(f"--cugym {a.cugym}: not an executable (build it first)")

    load = os.getloadavg()[0]
    runs = {}
    with tempfile.TemporaryDirectory(prefix="cugym_jax_peers_") as scratch:
        for _ in range(a.repeats):
            for algo in algos:
                for k in (1, a.seeds):
                    peer = run_peer(a.jax_python, getattr(a, PEER_SCRIPTS[algo][0]), algo, k, a.total_steps)
                    ours = run_cugym(a.cugym, algo, k, a.total_steps, scratch)
                    runs.setdefault((algo, k, "peer"), []).append(peer)
                    runs.setdefault((algo, k, "cugym"), []).append(ours)
                    print(json.dumps({"algo": algo, "seeds": k, "peer": peer, "cugym": ours}), flush=True)
    cells = {key: summarize(v) for key, v in runs.items()}
    body = section_body(a, cells, load, sys.argv[1:])
    print(body)
    if a.write:
        section = f"{SECTION}-{a.only}" if a.only else SECTION
        sections.write_section(a.write, section, body, heading=f"Against the JAX peers on the same CPU ({section})")


def section_body(a, cells, load, argv):
    peers = []
    for option in PEERS:
        if getattr(a, option) and any(PEER_SCRIPTS[algo][0] == option for algo, _, _ in cells):
            commit = getattr(a, f"{option}_commit")
            peers.append(PEERS[option] + (f" at {commit}" if commit else ""))
    return "\n".join(
        [
            f"{cpu_name()}, {os.cpu_count()} cores (load average {load:.1f} at the start), "
            f"{datetime.date.today().isoformat()}; {cugym_version(a.cugym)}; {' and '.join(peers)} "
            f"with {peer_versions(a.jax_python)}. {a.total_steps} env steps per seed; medians of "
            f"{a.repeats} alternating runs per cell, their range in brackets.",
            "",
            table(cells, a.seeds),
            "",
            "The peer's seconds are its compiled program's run (compile time apart); cugym's are its "
            "whole `cugym train` process (there is nothing to compile). Returns are training returns at "
            "the end (PureJaxRL PPO: the finished episodes of the last update that ended any; DQN and "
            "PQN: the last 100 updates' logged means; cugym: the last metrics.csv row), averaged over "
            "the seeds.",
            "",
            f"`python3 bench/jax_peers.py {display_command(argv)}`",
        ]
    )


if __name__ == "__main__":
    main()
