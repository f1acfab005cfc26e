"""cugym's SAC against CleanRL's on Pendulum-v1 within a budget of 2e4 env steps: a cugym config
given with --pendulum-config (`cugym train --config FILE --seeds S-T --jobs 1`) against CleanRL's
sac_continuous_action.py with --env-id Pendulum-v1 --total-timesteps 20000 and its other defaults, a
few seeds each, one run at a time, every process on one thread (OMP_NUM_THREADS=1 and
OPENBLAS_NUM_THREADS=1; CleanRL on the CPU, as its benchmark scripts run it).

Per seed: the final score, the seconds to the bar (-200) and the whole process's seconds (wall
time, with its CPU seconds beside it: on a busy machine the wall time is the larger).
- cugym: the final model's greedy mean over 100 episodes (eval.json); the training seconds
  (evaluations not counted) to the first evaluation (100 greedy episodes every eval_interval steps)
  at or above the bar (evals.csv); the process's seconds for all the seeds, divided by their number.
- CleanRL: sac_continuous_action.py has no --save-model, so bench/cleanrl_sac_eval.py runs it
  unchanged from its own file (runpy, as `python SCRIPT` would) and, once it has returned, saves the
  actor it trained; the final score is that actor's deterministic mean over 100 episodes (tanh of the
  mean, scaled to the Box; bench/peer_eval.py's seeded resets, as the other peers' evaluations),
  evaluated in a separate process. Its time to the bar comes from its printed episodes (the
  stochastic policy's training returns): the seconds from its first printed episode to the episode
  at which the mean of the last 10 episodes first reaches the bar. Not the 100-episode mean that
  bench/ppo_peers.py uses: 2e4 steps are only 100 Pendulum episodes, the first 25 of them random
  actions (learning_starts 5000), so a 100-episode training mean cannot reach -200 within the
  budget; --cleanrl-window changes the 10. The mean of the last 10 training episodes is shown beside
  the final score. Its process seconds run from the start of the process to its end (start-up,
  training, saving the actor; not the evaluation).

    python3 bench/sac_peers.py [--cugym build/cli/cugym] [--pendulum-config FILE.toml --pendulum-seeds 1-4]
        [--cleanrl-sac CLEANRL/cleanrl/sac_continuous_action.py --cleanrl-python PY --cleanrl-seeds 1 2
         --cleanrl-commit SHA --total-timesteps 20000 --cleanrl-save FILE.json | --cleanrl-load FILE.json]
        [--out DIR] [--write docs/benchmarks.md]

Either side may be left out: without --pendulum-config there is no cugym row (a config that does not
exist stops the script at once, with one line, before anything runs); --cleanrl-save keeps CleanRL's
measured row (with its versions, commit, CPU and date) in a JSON file, and --cleanrl-load puts such a
row in the table instead of running CleanRL again. The run folders go to --out (kept) or to a
temporary folder. Needs only the standard library here; the CleanRL side needs torch, gymnasium 0.29,
tyro and tensorboard in --cleanrl-python.
"""

import argparse
import ast
import datetime
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import ppo_peers
import sections
from bench_isa import cpu_name

ROOT = ppo_peers.ROOT
BENCH = os.path.join(ROOT, "bench")
SECTION = "sac-peers"
ENV = "Pendulum-v1"
BAR = -200.0
WINDOW = 10  # CleanRL's time to the bar: the mean training return over its last WINDOW episodes
TOTAL_TIMESTEPS = 20000
ONE_THREAD = ppo_peers.ONE_THREAD
# What the printed command shows for a path outside the repository, by option.
PLACEHOLDERS = {
    "--cugym": "CUGYM",
    "--pendulum-config": "PENDULUM.toml",
    "--cleanrl-sac": "CLEANRL/cleanrl/sac_continuous_action.py",
    "--cleanrl-python": "PYTHON",
    "--cleanrl-save": "CLEANRL.json",
    "--cleanrl-load": "CLEANRL.json",
    "--out": "OUT",
    "--write": "FILE.md",
}
# The CleanRL settings that matter for a SAC config, in the order the caption lists them.
DEFAULT_KEYS = (
    "learning_starts",
    "batch_size",
    "buffer_size",
    "gamma",
    "tau",
    "policy_lr",
    "q_lr",
    "policy_frequency",
    "target_network_frequency",
    "alpha",
    "autotune",
    "num_envs",
)
ARG_LINE = re.compile(r"^    (\w+): [\w\[\]., ]+ = (.+?)\s*(#.*)?$")

# Shared with bench/ppo_peers.py (pure functions, tested in bench/test_ppo_peers.py).
parse_episodes = ppo_peers.parse_episodes
first_window_at_bar = ppo_peers.first_window_at_bar
final_window = ppo_peers.final_window
median_time = ppo_peers.median_time
read_csv = ppo_peers.read_csv
first_at_bar = ppo_peers.first_at_bar
fmt = ppo_peers.fmt
per_seed = ppo_peers.per_seed
ratio = ppo_peers.ratio


# ---- parsing (pure) ----


def script_defaults(text):
    """The defaults of a CleanRL script's `class Args` dataclass, {name: value}: literals as Python
    values (`5e3` a float, `int(1e6)` an int), anything else as its source text."""
    out, inside = {}, False
    for line in text.splitlines():
        if line.startswith("class Args"):
            inside = True
            continue
        if inside and line and not line[0].isspace():
            break
        m = ARG_LINE.match(line) if inside else None
        if m:
            out[m[1]] = _literal(m[2])
    return out


def _literal(src):
    m = re.fullmatch(r"int\((.+)\)", src)
    try:
        return int(ast.literal_eval(m[1])) if m else ast.literal_eval(src)
    except (ValueError, SyntaxError):
        return src


def defaults_text(defaults, keys=DEFAULT_KEYS):
    """`name value` pairs for the caption, in keys' order, those the script has."""
    return ", ".join(f"{k} {_show(defaults[k])}" for k in keys if k in defaults)


def _show(v):
    return f"{v:g}" if isinstance(v, float) else str(v)


def last_json(stdout):
    """The JSON object on the last non-empty line of a peer evaluator's output."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        raise ValueError("no output")
    return json.loads(lines[-1])


def cleanrl_seed(seed, episodes, seconds, greedy, window=WINDOW, bar=BAR, cpu=None):
    """One CleanRL seed's figures from its episodes (seconds, step, return), its process seconds (and
    CPU seconds, cpu) and its actor's deterministic mean: to_bar from its first episode (None when
    never), the same from the process start, the step there, and the mean of its last `window`
    training returns."""
    hit = first_window_at_bar(episodes, bar, window)
    return {
        "seed": seed,
        "final": greedy,
        "train_last": final_window(episodes, window),
        "to_bar": hit[0] - episodes[0][0] if hit else None,
        "to_bar_from_start": hit[0] if hit else None,
        "step_at_bar": hit[1] if hit else None,
        "episodes": len(episodes),
        "steps": episodes[-1][1] + 1 if episodes else None,
        "process": seconds,
        "cpu": cpu,
    }


def cleanrl_row(seeds, label, meta):
    """The table's CleanRL row from cleanrl_seed() dicts; meta (versions, commit, CPU, date, ...) kept
    with it so that a saved row can be shown as measured."""
    return {
        "env": ENV,
        "peer": "cleanrl",
        "run": label,
        "seeds": [s["seed"] for s in seeds],
        "seeds_text": " ".join(str(s["seed"]) for s in seeds),
        "final": [s["final"] for s in seeds],
        "train_last": [s["train_last"] for s in seeds],
        "to_bar": [s["to_bar"] for s in seeds],
        "process": [s["process"] for s in seeds],
        "cpu": [s.get("cpu") for s in seeds],
        "per_seed": seeds,
        "meta": meta,
    }


def cugym_row(runs, seconds, bar=BAR, cpu=None):
    """The table's cugym row from summary.json's runs (seed, run_dir) and the process's seconds (and
    CPU seconds, cpu)."""
    final, to_bar, steps, version = [], [], [], None
    for r in runs:
        with open(os.path.join(r["run_dir"], "eval.json")) as f:
            ev = json.load(f)
        version = ev.get("version") or version
        final.append(ev["mean_return"])
        steps.append(ev.get("global_step"))
        hit = first_at_bar(read_csv(os.path.join(r["run_dir"], "evals.csv")), bar)
        to_bar.append(hit[1] if hit else None)
    return {
        "env": ENV,
        "peer": "cugym",
        "seeds": [r["seed"] for r in runs],
        "final": final,
        "to_bar": to_bar,
        "steps": steps,
        "process": [seconds / len(runs)] * len(runs),
        "process_total": seconds,
        "cpu": [None if cpu is None else cpu / len(runs)] * len(runs),
        "version": version,
    }


# ---- formatting (pure) ----


def table_row(r):
    """One markdown row from a cugym_row() or cleanrl_row() dict (with run and seeds_text)."""
    reached = sum(t is not None for t in r["to_bar"])
    final = per_seed(r["final"], 1)
    if r.get("train_last"):
        final += f" (training, last {r['meta'].get('window', WINDOW)}: {per_seed(r['train_last'], 1)})"
    med = median_time(r["to_bar"])
    return (
        f"| {r['run']} | {r['seeds_text']} | {final} | {fmt(statistics.median(r['final']))} | "
        f"{per_seed(r['to_bar'], 2)} ({reached}/{len(r['to_bar'])}) | {'never' if med is None else f'{med:.2f}'} | "
        f"{process_cell(r)} | {fmt(statistics.median(r['process']))} |"
    )


def process_cell(r):
    """The process seconds per seed, with their CPU seconds (user and system) in brackets where
    known: a wall time well above them means the process waited for a core."""
    text = per_seed(r["process"], 1)
    cpu = r.get("cpu") or []
    if cpu and None not in cpu:
        text += f" (CPU {per_seed(cpu, 1)})"
    return text


def speedups(ours, theirs):
    """(CleanRL's median s to the bar / cugym's, CleanRL's median process s / cugym's); None where
    a side is missing or its median never reached the bar."""
    if not ours or not theirs:
        return None, None
    return (
        ratio(median_time(theirs["to_bar"]), median_time(ours["to_bar"])),
        ratio(statistics.median(theirs["process"]), statistics.median(ours["process"])),
    )


def speedup_line(to_bar, process):
    """The sentence under the table, from speedups()."""
    if to_bar is None:
        text = "No ratio to the bar (a side's median never reached it)"
    else:
        text = f"cugym reaches the bar {to_bar:.1f}x as fast as CleanRL (median seconds)"
    if process is not None:
        text += f"; whole process per seed {process:.1f}x"
    return text + "."


def display_command(argv, root=ROOT):
    return ppo_peers.display_command(argv, root=root, placeholders=PLACEHOLDERS)


# ---- running ----


def check_config(path):
    """Stops with one line when cugym's SAC config is not there (it may not be written yet)."""
    if not os.path.isfile(path):
        raise SystemExit(f"sac_peers: no cugym SAC config at {path} (leave out --pendulum-config for CleanRL alone)")


def cugym_runs(cugym, config, seeds, out, device="cpu"):
    """`cugym train --config CONFIG --seeds SEEDS --jobs 1 --out OUT` (one process), read back per
    seed; a failure stops the script with cugym's last line of error output."""
    cmd = [cugym, "train", "--device", device, "--config", config, "--seeds", seeds, "--jobs", "1", "--out", out]
    t0, cpu0 = time.perf_counter(), children_cpu()
    try:
        p = subprocess.run(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=dict(os.environ, **ONE_THREAD)
        )
    except OSError as e:
        raise SystemExit(f"sac_peers: cannot run {cugym}: {e}") from None
    seconds, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    if p.returncode != 0:
        last = next((line for line in reversed(p.stderr.splitlines()) if line.strip()), "no error output")
        raise SystemExit(f"sac_peers: cugym train --config {config} failed (exit {p.returncode}): {last.strip()}")
    with open(os.path.join(out, "summary.json")) as f:
        runs = json.load(f)["points"][0]["runs"]
    return cugym_row(runs, seconds, cpu=cpu)


def children_cpu():
    """User and system CPU seconds of the waited-for child processes so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cleanrl_run(python, script, seed, extra, work):
    """One run of CleanRL's script on the CPU through cleanrl_sac_eval.py: its episodes as (seconds
    since the process started, step, return), the process's wall and CPU seconds and the saved
    actor's path. The output is kept in work/stdout.txt."""
    model = os.path.join(work, "actor.pt")
    cmd = [python, os.path.join(BENCH, "cleanrl_sac_eval.py"), "run", "--model", model, "--"]
    cmd += [script, "--seed", str(seed), "--no-cuda", *extra]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONUNBUFFERED="1", **ONE_THREAD)
    timed, saved, tail = [], False, []
    t0, cpu0 = time.perf_counter(), children_cpu()
    with (
        open(os.path.join(work, "stdout.txt"), "w") as log,
        subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p,
    ):
        for line in p.stdout:
            timed.append((time.perf_counter() - t0, line))
            log.write(f"{timed[-1][0]:.3f} {line}")
            tail = (tail + [line.strip()])[-5:]
            saved = saved or line.startswith("model saved to")
        p.wait()
    seconds, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    if p.returncode != 0 or not saved:
        raise SystemExit(f"{' '.join(cmd)} failed: {' / '.join(tail)}")
    return parse_episodes(timed), seconds, cpu, model


def cleanrl_eval(python, script, model):
    p = subprocess.run(
        [python, os.path.join(BENCH, "cleanrl_sac_eval.py"), "eval", "--script", script, "--model", model]
        + ["--env-id", ENV],
        capture_output=True,
        text=True,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES="", **ONE_THREAD),
    )
    if p.returncode != 0:
        raise SystemExit(f"cleanrl_sac_eval.py eval failed:\n{p.stderr[-2000:]}")
    return last_json(p.stdout)["mean"]


def cleanrl_runs(python, script, seeds, total_timesteps, scratch, window, meta):
    extra = ["--env-id", ENV, "--total-timesteps", str(total_timesteps)]
    done = []
    for seed in seeds:
        work = tempfile.mkdtemp(prefix=f"cleanrl_sac_{seed}_", dir=scratch)
        episodes, seconds, cpu, model = cleanrl_run(python, script, seed, extra, work)
        done.append(cleanrl_seed(seed, episodes, seconds, cleanrl_eval(python, script, model), window, cpu=cpu))
        print(json.dumps(done[-1]), flush=True)
    label = f"CleanRL `sac_continuous_action.py --env-id {ENV} --total-timesteps {total_timesteps}`"
    return cleanrl_row(done, label, meta)


def cleanrl_meta(a, script, load):
    with open(script) as f:
        defaults = script_defaults(f.read())
    return {
        "commit": a.cleanrl_commit,
        "versions": ppo_peers.peer_versions(a.cleanrl_python),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "load": load,
        "date": datetime.date.today().isoformat(),
        "total_timesteps": a.total_timesteps,
        "window": a.cleanrl_window,
        "defaults": defaults,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cugym", default=os.path.join(ROOT, "build", "cli", "cugym"))
    ap.add_argument("--cugym-device", default="cpu", help="cugym train --device (default cpu, as CleanRL runs)")
    ap.add_argument("--pendulum-config", help="cugym's SAC config for Pendulum-v1 (no cugym row without it)")
    ap.add_argument("--pendulum-seeds", default="1-4")
    ap.add_argument("--cleanrl-sac", help="CleanRL's cleanrl/sac_continuous_action.py (runs it)")
    ap.add_argument("--cleanrl-python", default=sys.executable)
    ap.add_argument("--cleanrl-seeds", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--cleanrl-commit", help="the CleanRL commit the script is from, for the caption")
    ap.add_argument("--total-timesteps", type=int, default=TOTAL_TIMESTEPS, help="CleanRL's budget")
    ap.add_argument("--cleanrl-window", type=int, default=WINDOW, help="episodes in CleanRL's training mean")
    ap.add_argument("--cleanrl-save", help="write CleanRL's row (and how it was measured) to this JSON file")
    ap.add_argument("--cleanrl-load", help="CleanRL's row from a --cleanrl-save file instead of running it")
    ap.add_argument("--out", help="keep the run folders here (a new or empty folder)")
    ap.add_argument("--write", help="markdown file whose sac-peers section gets the table")
    a = ap.parse_args()
    if a.cleanrl_sac and a.cleanrl_load:
        ap.error("--cleanrl-sac runs CleanRL, --cleanrl-load reuses a run: give one of them")
    if not (a.pendulum_config or a.cleanrl_sac or a.cleanrl_load):
        ap.error("nothing to run: give --pendulum-config, --cleanrl-sac or --cleanrl-load")
    if a.pendulum_config:
        check_config(a.pendulum_config)

    load = os.getloadavg()[0]
    ours = theirs = pendulum_toml = None
    if a.cleanrl_load:
        with open(a.cleanrl_load) as f:
            theirs = json.load(f)
    with tempfile.TemporaryDirectory(prefix="cugym_sac_peers_") as tmp:
        scratch = a.out or tmp
        os.makedirs(scratch, exist_ok=True)
        if a.pendulum_config:
            with open(a.pendulum_config) as f:
                pendulum_toml = f.read().strip()
            ours = cugym_runs(
                a.cugym,
                os.path.abspath(a.pendulum_config),
                a.pendulum_seeds,
                os.path.join(scratch, "pendulum_cugym"),
                a.cugym_device,
            )
            ours.update(run="cugym SAC, `PENDULUM.toml` (below)", seeds_text=a.pendulum_seeds)
            print(json.dumps(ours), flush=True)
        if a.cleanrl_sac:
            script = os.path.abspath(a.cleanrl_sac)
            meta = cleanrl_meta(a, script, os.getloadavg()[0])
            theirs = cleanrl_runs(
                a.cleanrl_python, script, a.cleanrl_seeds, a.total_timesteps, scratch, a.cleanrl_window, meta
            )
            theirs["meta"]["load_end"] = os.getloadavg()[0]
            if a.cleanrl_save:
                with open(a.cleanrl_save, "w") as f:
                    json.dump(theirs, f, indent=1)

    body = section_body(ours, theirs, load, pendulum_toml, sys.argv[1:], a.cugym_device)
    print(body)
    if a.write:
        sections.write_section(a.write, SECTION, body, heading="SAC against CleanRL's")


def section_body(ours, theirs, load, pendulum_toml, argv, device="cpu"):
    today = datetime.date.today().isoformat()
    head = f"{cpu_name()}, {os.cpu_count()} cores (load average {load:.1f} at the start), {today}"
    if ours:
        head += f"; cugym {ours.get('version') or 'unknown'} (`--device {device}`)"
    if theirs:
        m = theirs["meta"]
        commit = f" at {m['commit']}" if m.get("commit") else ""
        head += f"; CleanRL{commit} with {m['versions']}"
        if ours and (m.get("date"), m.get("cpu")) != (today, cpu_name()):
            head += f" (its row measured on {m['date']}, {m['cpu']}, {m['cores']} cores)"
        if m.get("load_end") is not None:
            head += f" (load average {m['load']:.1f} before its runs, {m['load_end']:.1f} after)"
    window = theirs["meta"].get("window", WINDOW) if theirs else WINDOW
    lines = [
        head + ". One run at a time, each process on one thread (OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1), "
        f"CleanRL on the CPU. Bar: {ENV} {BAR:g}.",
        "",
        "What is compared. cugym: the final score is the final model's greedy mean over 100 episodes "
        "(eval.json); the time to the bar is training seconds (evaluations not counted) to the first "
        "evaluation (100 greedy episodes every eval_interval steps) at or above the bar (evals.csv). CleanRL: "
        "`sac_continuous_action.py` has no `--save-model`, so `bench/cleanrl_sac_eval.py` runs it unchanged "
        "from its own file and saves the actor it trained once it returns; the final score is that actor's "
        "deterministic mean over 100 episodes (tanh of the mean, scaled to the Box; `bench/peer_eval.py`'s "
        f"seeded resets), with the mean of its last {window} training episodes (the stochastic policy's) in "
        f"brackets; its time to the bar is the seconds from its first printed episode to the episode at "
        f"which the mean of the last {window} training returns first reaches the bar ({window}, not 100: "
        "the budget holds only 100 episodes, the first learning_starts steps' random). Process: the whole "
        "process's wall seconds per seed, its CPU seconds (user and system) in brackets (cugym: one process "
        "for all its seeds, divided by their number; it includes the evaluations; CleanRL: start-up, "
        "training and saving the actor, not the evaluation).",
        "",
    ]
    if theirs and theirs["meta"].get("defaults"):
        lines += [f"CleanRL's SAC defaults: {defaults_text(theirs['meta']['defaults'])}.", ""]
    lines += [
        "| run | seeds | final score per seed | median | s to the bar per seed (reached) | median | "
        "process s per seed | median |",
        "| --- | --- | --- | ---: | --- | ---: | --- | ---: |",
    ]
    lines += [table_row(r) for r in (ours, theirs) if r]
    lines.append("")
    to_bar, process = speedups(ours, theirs)
    if process is not None:
        lines += [speedup_line(to_bar, process), ""]
    if pendulum_toml:
        lines += ["`PENDULUM.toml`:", "", "```toml", pendulum_toml, "```", ""]
    lines += ["```", "python3 bench/sac_peers.py " + display_command(argv), "```"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
