#!/usr/bin/env python3
"""Summaries and verdicts for scripts/gpu-check.sh: reads what its parts wrote and prints
markdown to paste into docs/benchmarks.md.

  gpu_check_report.py card --out F [--name NAME] [--no-measure]
  gpu_check_report.py ctest LOG --build-seconds S --ctest-seconds S [--case REGEX ...] [--card F]
  gpu_check_report.py sanitizer LOG --seconds S [--limit S]
  gpu_check_report.py speed --env-jsonl F --nn-jsonl F [--card F]
  gpu_check_report.py dqn --dqn-dir D --limit S --bar GROUP:THRESHOLD:NEED ... --batch SPEC ... --lanes SPEC ...
      [--card F]

`card` measures the GPU's device-to-device copy bandwidth (CuPy, else PyTorch, where the image has
them) or looks it up by the card's name, and writes it with the name to F for the other summaries,
which label their figures with the card and state the goals for it (the goals were set on an
H200).

Exit status: `card` 0 (a card it cannot name or measure is written as such); `ctest` 2 when no
result line was found; `sanitizer` 2 when a tool reported an error
or a case failed under it (an unusable sanitizer and a run cut off are reported, not failed);
`speed` 3 when a benchmark failed or missed its goal; `dqn` 3 when a training crashed or fell back
from the CUDA graph (a lockstep batch included), a group reached its threshold in fewer than NEED
seeds (NEED 0: reported, not judged, and a run cut off at the time limit is no failure there), or
a batch missed what it is judged on (batch_summary, lanes_summary); else 0. Standard library only
(the GPU machine has no network), but for `card`'s measurement, which uses CuPy or PyTorch where
they import.
"""

import argparse
import csv
import json
import math
import os
import re
import statistics
import struct
import subprocess
import sys

GRAPH_FALLBACK = "CUDA graph capture failed"

# Device-to-device copy bandwidth (bytes read plus bytes written per second): the ceiling for an env
# step that reads and writes its state once. The goals were set on an H200, whose copy ran at 4.3e12
# (docs/benchmarks.md, docs/design-notes.md); an H100 (80 GB HBM3) copies at about 3.0e12. A card
# is measured where CuPy or PyTorch is there, else looked up here by its name (the first entry
# whose words all appear in it; none for other cards, an H100 PCIe or NVL among them).
GOAL_CARD = "H200"
GOAL_BYTES_PER_SECOND = 4.3e12
KNOWN_CARDS = ((("H200",), 4.3e12), (("H100", "HBM3"), 3.0e12), (("H100", "SXM"), 3.0e12))
COPY_BYTES = 1 << 30  # per copy in the measurement, 20 copies after a warm-up
COPY_REPEATS = 20


def looked_up_bandwidth(name):
    for words, bandwidth in KNOWN_CARDS:
        if all(w in name for w in words):
            return bandwidth
    return None


def measure_copy():
    """(GPU name, bytes per second, how) from CuPy or PyTorch, or None where neither sees a GPU."""
    errors = []
    try:
        import cupy as cp

        a = cp.empty(COPY_BYTES, dtype=cp.uint8)
        b = cp.empty_like(a)
        b.data.copy_from_device(a.data, COPY_BYTES)  # warm-up
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(COPY_REPEATS):
            b.data.copy_from_device_async(a.data, COPY_BYTES)
        end.record()
        end.synchronize()
        seconds = cp.cuda.get_elapsed_time(start, end) / 1e3
        name = cp.cuda.runtime.getDeviceProperties(0)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        return name, 2 * COPY_BYTES * COPY_REPEATS / seconds, "CuPy"
    except Exception as e:  # no CuPy, no GPU, a broken driver: try the next way
        errors.append(f"CuPy: {type(e).__name__}")
    try:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("no GPU")
        a = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda")
        b = torch.empty_like(a)
        b.copy_(a)  # warm-up
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(COPY_REPEATS):
            b.copy_(a)
        end.record()
        end.synchronize()
        seconds = start.elapsed_time(end) / 1e3
        return torch.cuda.get_device_name(0), 2 * COPY_BYTES * COPY_REPEATS / seconds, "PyTorch"
    except Exception as e:
        errors.append(f"PyTorch: {type(e).__name__}")
    return None, None, "; ".join(errors)


def smi_name():
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip().splitlines()[0].strip() if out.strip() else None


def card_probe(args):
    """Writes {"name", "bytes_per_second", "source"} to args.out and prints it in one line."""
    name, measured, how = (None, None, "--no-measure")
    if not args.no_measure:
        name, measured, how = measure_copy()
    name = args.name or name or smi_name()
    table = looked_up_bandwidth(name) if name else None
    if measured and 1e11 <= measured <= 2e13:
        bandwidth = measured
        source = f"measured with {how} ({COPY_REPEATS} copies of {COPY_BYTES >> 20} MiB)"
        if table:
            source += f"; the table has {table / 1e12:.1f} TB/s for this card"
    elif table:
        bandwidth, source = table, f"looked up by name ({how})"
        if measured:
            source += f"; measured {measured / 1e12:.2f} TB/s, out of range, not used"
    else:
        bandwidth, source = None, f"unknown: neither measured nor in the table ({how})"
    card = {"name": name or "none (no GPU seen)", "bytes_per_second": bandwidth, "source": source}
    with open(args.out, "w") as f:
        json.dump(card, f)
        f.write("\n")
    print(f"card: {card_label(card)}")
    return 0


def load_card(path):
    try:
        with open(path) as f:
            card = json.load(f)
        return {"name": str(card["name"]), "bytes_per_second": card.get("bytes_per_second"), "source": card["source"]}
    except (OSError, ValueError, KeyError, TypeError):
        return {"name": "unknown card", "bytes_per_second": None, "source": "no card measured"}


def card_label(card):
    bw = card["bytes_per_second"]
    return f"{card['name']}, copy bandwidth {bw / 1e12:.2f} TB/s ({card['source']})" if bw else f"{card['name']}"


def rate_scale(card):
    """A memory-bound rate goal set on the H200, scaled to this card by the copy bandwidths (1 where
    the card's bandwidth is unknown)."""
    bw = card["bytes_per_second"]
    return bw / GOAL_BYTES_PER_SECOND if bw else 1.0


def time_goal_note(card):
    """How a time goal set on the H200 carries over: the H100 has the H200's chip (GH100: the same
    SMs and clocks), and the batches the time goals are about are launch-bound, not memory-bound."""
    name = card["name"]
    if GOAL_CARD in name:
        return "set on this card"
    if "H100" in name:
        return f"the {GOAL_CARD}'s: the same GH100 chip and clocks, and the batch is launch-bound"
    return f"the {GOAL_CARD}'s, unscaled: no basis for this card"


def ctest_summary(args):
    """Every ctest run in the log (the build part runs a second over the slow tests among the CUDA
    cases), summed; each --case pattern's tests counted, one that matches none reported."""
    text = open(args.log, errors="replace").read()
    results = re.findall(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)", text)
    total = sum(int(m[2]) for m in results)
    failed = sum(int(m[1]) for m in results)
    skipped = sorted(set(re.findall(r"^\s*\d+ - (\S+).*\(Skipped\)\s*$", text, re.M)))
    failure = r"Failed|Timeout|SEGFAULT|Subprocess aborted|Exception|Not Run"
    failed_names = sorted(set(re.findall(rf"^\s*\d+ - (\S+).*\((?:{failure})\)\s*$", text, re.M)))
    card = load_card(args.card)
    print(f"build part on {card['name']}: configure + build {args.build_seconds} s, ctest {args.ctest_seconds} s")
    print(f"ctest: {total} tests, {total - failed - len(skipped)} passed, {failed} failed, {len(skipped)} skipped")
    for name in failed_names:
        print(f"  failed: {name}")
    for name in skipped[:10]:
        print(f"  skipped: {name}")
    if len(skipped) > 10:
        print(f"  ... and {len(skipped) - 10} more skipped")
    if args.case:
        # "  12/725 Test  #34: NAME .....   Passed    0.05 sec" (or "***Failed", "***Skipped", ...)
        ran = dict(re.findall(r"Test\s+#\d+: (\S+) \.*\s*(?:\*+)?(\w+)", text))
        counts = []
        for pattern in args.case:
            names = [n for n in ran if re.search(pattern, n)]
            passed = sum(1 for n in names if ran[n] == "Passed")
            counts.append(
                f"{pattern}: {passed} of {len(names)} passed"
                if names
                else f"{pattern}: none (no test has the name yet)"
            )
        print("CUDA cases by name: " + "; ".join(counts))
    if not results:
        print("ctest: no result line found (did ctest run?)")
        return 2
    return 0


def read_jsonl(path):
    rows = []
    if not os.path.exists(path):
        return rows
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            rows.append(json.loads(line))
    return rows


def fmt(x, spec):
    return format(x, spec) if isinstance(x, (int, float)) and math.isfinite(x) else "-"


# Speed goals of the issues, set on an H200 and judged on the GPU at N >= 1M (steps/s) in the mode
# named: a run below its goal is a problem; the env's rows in other modes are reported beside it.
# MinAtar Breakout's goal is the fused mode's (the env stepped and observed in one pass: the way an
# agent steps it), not step's, where each thread writes its 400-float observation uncoalesced after
# the step. The rates are memory-bound: on another card the goal is scaled by its copy bandwidth.
CUDA_GOALS = {"MinAtar-Breakout-v1": (1e9, "fused")}


def env_table(rows, card):
    bw = card["bytes_per_second"]
    bound_head = f"bound steps/s ({bw / 1e12:.2f} TB/s)" if bw else "bound steps/s (bandwidth unknown)"
    print(f"| env | device | N | mode | env steps/s | traffic GB/s | {bound_head} | % of bound |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    bad = 0
    below, notes = [], []
    scale = rate_scale(card)
    for r in rows:
        if "card" in r:  # gpu-check.sh's own row: the card the file was measured on
            continue
        if "failed" in r:
            bad += 1
            print(f"| {r['env']} | {r['device']} | {r['num_envs']} | {r['mode']} | FAILED ({r['failed']}) | | | |")
            continue
        device = f"{r['device']} ({r['hardware']})"
        bound = pct = "-"
        if r["device"] == "cuda" and r.get("bytes_per_step") and bw:
            b = bw / r["bytes_per_step"]
            bound, pct = f"{b:.3e}", f"{100 * r['steps_per_second'] / b:.0f}%"
        print(
            f"| {r['env']} | {device} | {r['num_envs']} | {r['mode']} | {r['steps_per_second']:.3e} | "
            f"{fmt(r.get('model_gbytes_per_second'), '.1f')} | {bound} | {pct} |"
        )
        goal_h200, mode = CUDA_GOALS.get(r["env"], (None, None))
        if goal_h200 and r["device"] == "cuda" and r["num_envs"] >= 1 << 20:
            goal = goal_h200 * scale
            line = f"{r['env']} {r['mode']} at N = {r['num_envs']} on {card['name']}: {r['steps_per_second']:.3e}"
            if r["mode"] != mode:
                notes.append(f"{line} (reported: its goal, {goal:.3g}, is judged in mode {mode})")
            elif r["steps_per_second"] < goal:
                below.append(f"{line} < goal {goal:.3g}")
            else:
                notes.append(f"{line} >= goal {goal:.3g}")
    for env, (goal_h200, mode) in CUDA_GOALS.items():
        print(
            f"\ngoal on {card['name']}: {env} {goal_h200 * scale:.3g} steps/s at 1M envs in mode {mode} "
            f"(the {GOAL_CARD}'s {goal_h200:.3g}"
            + (f" x {scale:.2f}, this card's copy bandwidth over the {GOAL_CARD}'s)" if scale != 1.0 else ")")
        )
    for line in notes:
        print(f"\ngoal: {line}")
    for line in below:
        print(f"\nbelow its goal: {line}")
    return bad + len(below)


def nn_table(rows):
    # K: networks updated per call (cugym_bench_nn --replicas); per net/s = calls/s x K.
    print("| net | part | batch | K | loss | clip | device | mode | calls/s | us/call | per net/s |")
    print("|---|---|---:|---:|---|---:|---|---|---:|---:|---:|")
    bad = 0
    for r in rows:
        if "failed" in r:
            bad += 1
            print(f"| FAILED: {r['failed']} | | | | | | | | | | |")
            continue
        k = r.get("replicas", 1)
        net = r["net"] + (" with LayerNorm" if r.get("layer_norm") else "")
        part = r.get("bench", "nn_update").removeprefix("nn_")
        head = f"| {net} | {part} | {r['batch']} | {k} | {r['loss']} | {r['max_grad_norm']} | {r['device']} |"
        head += f" {r['mode']} |"
        ups = r.get("updates_per_second")
        if ups is None:  # a device this machine lacks (the note says why)
            if r.get("device") == "cuda" and os.environ.get("CUGYM_REHEARSE") != "1":
                bad += 1
            print(f"{head} - ({r.get('note', '')}) | - | - |")
            continue
        print(f"{head} {ups:.0f} | {1e6 / ups:.1f} | {ups * k:.0f} |")
    return bad


def last_wall_time(metrics):
    if not os.path.exists(metrics):
        return math.nan
    with open(metrics) as f:
        rows = list(csv.DictReader(f))
    return float(rows[-1]["wall_time"]) if rows and rows[-1]["wall_time"] else math.nan


TIMEOUT_EXIT = 124  # timeout(1)'s status for a command it cut off


def exit_status(path):
    try:
        return int(open(path).read().strip())
    except (OSError, ValueError):
        return None


def dqn_runs(dqn_dir, group):
    """(seed, eval mean return or None, train seconds, problem or None, cut off) for each run of a
    group; a run cut off at the time limit has no problem unless something else went wrong."""
    runs = []
    pattern = re.compile(re.escape(group) + r"-(\d+)\.log$")
    for name in sorted(os.listdir(dqn_dir) if os.path.isdir(dqn_dir) else []):
        m = pattern.fullmatch(name)
        if not m:
            continue
        seed = int(m.group(1))
        run = os.path.join(dqn_dir, name[: -len(".log")])
        log = open(os.path.join(dqn_dir, name), errors="replace").read()
        problem = None
        ret = None
        status = exit_status(os.path.join(dqn_dir, name[: -len(".log")] + ".rc"))
        cut_off = status == TIMEOUT_EXIT
        if GRAPH_FALLBACK in log:
            problem = "fell back from the CUDA graph"
        elif status not in (None, 0, TIMEOUT_EXIT):
            tail = log.strip().splitlines()[-1:] or ["no output"]
            problem = f"exit {status} ({tail[0][:120]})"
        try:
            ret = json.load(open(os.path.join(run, "eval.json")))["mean_return"]
        except (OSError, ValueError, KeyError):
            if not cut_off:
                tail = log.strip().splitlines()[-1:] or ["no output"]
                problem = problem or f"no eval.json ({tail[0][:120]})"
        runs.append((seed, ret, last_wall_time(os.path.join(run, "metrics.csv")), problem, cut_off))
    return sorted(runs)


def speed_summary(args):
    bad = 0
    card = load_card(args.card)
    print(f"Card: {card_label(card)}\n")
    print(f"Env steps per second on {card['name']}, random actions (cugym bench; the bound is the card's copy")
    print("bandwidth over the bytes an env step must read and write):\n")
    bad += env_table(read_jsonl(args.env_jsonl), card)
    print(f"\nDQN gradient updates per second on {card['name']} (cugym_bench_nn; the CPU rows: this machine's):\n")
    bad += nn_table(read_jsonl(args.nn_jsonl))
    print(f"\nspeed verdict on {card['name']}: {'FAIL' if bad else 'pass'} ({bad} problem(s))")
    return 3 if bad else 0


def dqn_summary(args):
    bad = 0
    card = load_card(args.card)
    print(f"Card: {card_label(card)}\n")
    print(
        f"Shipped configs on {card['name']} (greedy evaluation over 100 episodes at the end of training; each run "
        f"cut off at {args.limit} s):\n"
    )
    print("| run | seeds | reached | bar | eval mean returns by seed | median train s | verdict |")
    print("|---|---:|---:|---|---|---:|---|")
    for bar in args.bar:
        group, threshold, need = bar.rsplit(":", 2)
        threshold, need = float(threshold), int(need)
        runs = dqn_runs(args.dqn_dir, group)
        reached = sum(1 for _, r, _, p, _ in runs if r is not None and r >= threshold and p is None)
        problems = [f"seed {s}: {p}" for s, _, _, p, _ in runs if p]
        cut = [s for s, _, _, p, c in runs if c and not p]
        times = [t for _, _, t, _, _ in runs if math.isfinite(t)]
        returns = ", ".join(f"{s}: {'cut off' if c and r is None else fmt(r, '.1f')}" for s, r, _, _, c in runs)
        verdict = "reported"
        if not runs:
            verdict = "FAIL (no runs)"
        elif problems:
            verdict = "FAIL (" + "; ".join(problems) + ")"
        elif need > 0:
            verdict = "pass" if reached >= need else f"FAIL (fewer than {need})"
        if cut and not verdict.startswith("FAIL"):
            verdict += f" ({len(cut)} cut off at {args.limit} s)"
        if verdict.startswith("FAIL"):
            bad += 1
        bar_text = f">= {threshold:g} in {need}" if need > 0 else f">= {threshold:g}, not judged"
        print(
            f"| {group} | {len(runs)} | {reached} | {bar_text} | {returns} | "
            f"{fmt(statistics.median(times) if times else math.nan, '.1f')} | {verdict} |"
        )
    for spec in args.batch:
        bad += batch_summary(args.dqn_dir, spec, card)
    for spec in args.lanes:
        bad += lanes_summary(args.dqn_dir, spec, card, args.tolerance)
    print(f"\ndqn verdict on {card['name']}: {'FAIL' if bad else 'pass'} ({bad} problem(s))")
    return 3 if bad else 0


def batch_summary(dqn_dir, spec, card):
    """One `cugym train --seeds` batch (BATCH:SOLO_GROUP[:lockstep[:GOAL]]): its runs solved, its
    wall time, and whether each seed's model has the bytes of the solo run of that seed (issue 23's
    contract, on the same device; seeds without a solo run are not compared). Runs apart must keep
    the bytes. A lockstep batch (one batched network: on CUDA cuBLAS's strided-batched GEMM, which
    may round otherwise than the single GEMM of a solo run) that does not is judged on its success
    rate instead, 95% of its seeds solved (the goal's rate), and the bytes are a finding for
    docs/nn.md. A fallback from the CUDA graph fails it. GOAL: the batch must end within GOAL seconds
    with 95% of its seeds solved (issue 23's speed goal), a goal set on the H200 and stated for the card
    it ran on (time_goal_note). 1 when something is wrong, else 0."""
    batch, solo, *mode = spec.split(":")
    lockstep = mode[:1] == ["lockstep"]
    # GOAL "report": an env without a threshold (Pendulum): its time and exit reported, not its rate.
    report_only = mode[1:2] == ["report"]
    goal = float(mode[1]) if len(mode) > 1 and not report_only else None  # seconds, with 95% of the seeds solved
    folder = os.path.join(dqn_dir, batch)
    status = exit_status(folder + ".rc")
    try:
        seconds = float(open(folder + ".seconds").read().strip())
    except (OSError, ValueError):
        seconds = None
    wall = "-" if seconds is None else f"{seconds:.1f}"
    try:
        point = json.load(open(os.path.join(folder, "summary.json")))["points"][0]
    except (OSError, ValueError, KeyError, IndexError):
        point = None
    try:
        log = open(folder + ".log", errors="replace").read()
    except OSError:
        log = ""
    same, differ, missing = [], [], []
    for run in point["runs"] if point else []:
        mine = os.path.join(run["run_dir"], "model.safetensors")
        theirs = os.path.join(dqn_dir, f"{solo}-{run['seed']}", "model.safetensors")
        if not os.path.exists(theirs):
            continue
        if not os.path.exists(mine):
            missing.append(run["seed"])
        elif open(mine, "rb").read() == open(theirs, "rb").read():
            same.append(run["seed"])
        else:
            differ.append(run["seed"])
    solved = point["solved_final"] / point["seeds"] if point and point["seeds"] else 0.0
    verdict = "pass"
    if GRAPH_FALLBACK in log:
        verdict = "FAIL (fell back from the CUDA graph)"
    elif status == TIMEOUT_EXIT:
        verdict = "cut off (reported)"
    elif status != 0 or point is None:
        verdict = f"FAIL (exit {status}, {'no summary.json' if point is None else 'see the log'})"
    elif report_only:
        verdict = "reported (no threshold: time and exit only)"
    elif differ and not lockstep:
        verdict = f"FAIL (seeds {differ}: other model bytes than the solo runs)"
    elif differ and solved < 0.95:
        verdict = f"FAIL (other model bytes than the solo runs, and {solved:.0%} solved: the goal's rate is 95%)"
    elif differ:
        verdict = (
            f"pass on the rate ({solved:.0%} solved, >= 95%); finding: the batched GEMM rounds otherwise than one "
            "network's (record it in docs/nn.md)"
        )
    if goal is not None and not verdict.startswith("FAIL"):
        if seconds is None or status == TIMEOUT_EXIT or seconds > goal or solved < 0.95:
            verdict = f"FAIL (goal: {goal:g} s with 95% solved; {wall} s, {solved:.0%})"
        else:
            verdict += f"; goal met ({goal:g} s with 95% solved)"
    if goal is not None:
        print(f"\ngoal on {card['name']}: {batch} within {goal:g} s with 95% solved ({time_goal_note(card)})")
    print(
        f"\nbatch {batch} on {card['name']} (`cugym train --seeds`{', lockstep' if lockstep else ''}, one process): "
        f"{point['seeds'] if point else '-'} runs, solved (final) {point['solved_final'] if point else '-'}, "
        f"wall {wall} s; the solo run's model bytes: seeds {same or '-'} the same"
        + (f", {differ} other" if differ else "")
        + (f", {missing} not compared (a run missing)" if missing else "")
        + f": {verdict}"
    )
    # Where its time went (the driver's last note, agents/run/trainer.h), to see what the next change should cut.
    for line in re.findall(r"^cugym train: (a batch of \d+ agents took .*)$", log, flags=re.M):
        print(f"  {line}")
    return 1 if verdict.startswith("FAIL") else 0


def read_safetensors(path):
    """{name: (dtype, values or raw bytes)} of a .safetensors file: F32 and F64 as floats, every
    other dtype as its bytes (compared exactly). None where it cannot be read."""
    try:
        data = open(path, "rb").read()
        size = struct.unpack("<Q", data[:8])[0]
        header = json.loads(data[8 : 8 + size])
    except (OSError, ValueError, struct.error):
        return None
    body = data[8 + size :]
    tensors = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        raw = body[begin:end]
        code = {"F32": "f", "F64": "d"}.get(t["dtype"])
        if code is None:
            tensors[name] = (t["dtype"], raw)
        else:
            tensors[name] = (t["dtype"], struct.unpack(f"<{len(raw) // struct.calcsize(code)}{code}", raw))
    return tensors


def models_difference(path_a, path_b):
    """The largest normwise relative difference ||a - b|| / ||b|| over the tensors of two model files
    (inf where their tensors, shapes or non-float values differ); None where one cannot be read."""
    a, b = read_safetensors(path_a), read_safetensors(path_b)
    if a is None or b is None:
        return None
    if a.keys() != b.keys():
        return math.inf
    worst = 0.0
    for name, (dtype, values) in b.items():
        other_dtype, other = a[name]
        if dtype != other_dtype or len(values) != len(other):
            return math.inf
        if dtype not in ("F32", "F64"):
            if values != other:
                return math.inf
            continue
        diff = math.sqrt(math.fsum((x - y) ** 2 for x, y in zip(other, values)))
        norm = math.sqrt(math.fsum(y * y for y in values))
        rel = diff / norm if norm > 0 else diff
        worst = max(worst, rel if math.isfinite(rel) else math.inf)
    return worst


def losses_problem(metrics, losses):
    """Why the loss columns of a run's metrics.csv are not finite, or None: a value that is not finite
    ("inf", "nan"), an empty cell after the column had values (the log writes NaN as nothing; before
    the first update a column is empty), or no value in the last row."""
    if not os.path.exists(metrics):
        return "no metrics.csv"
    with open(metrics) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return "no rows in metrics.csv"
    for column in losses:
        if column not in rows[0]:
            return f"no column {column}"
        seen = False
        for row in rows:
            cell = (row[column] or "").strip()
            if not cell:
                if seen:
                    return f"{column} NaN at step {row['global_step']}"
                continue
            try:
                value = float(cell)
            except ValueError:
                return f"{column} '{cell}' at step {row['global_step']}"
            if not math.isfinite(value):
                return f"{column} {cell} at step {row['global_step']}"
            seen = True
        if not seen:
            return f"{column} never logged"
    return None


def config_value(run_dir, key):
    """A number from a run folder's config.toml (the resolved config), or None."""
    try:
        text = open(os.path.join(run_dir, "config.toml")).read()
    except OSError:
        return None
    m = re.search(rf"^{key} = (.+)$", text, re.M)
    if not m:
        return None
    value = m.group(1).strip().strip('"')
    try:
        return float(value)
    except ValueError:
        return value


def sizing_note(lane, log, seconds, target=20.0):
    """The total_steps that would take `target` seconds at this batch's rate: its iterations' seconds
    (the batch's last note) per env step of a lane, the rest (setup, evaluations) kept as it was."""
    algo = config_value(lane, "algo") or "dqn"
    total, envs, steps = (config_value(lane, k) for k in ("total_steps", "num_envs", "num_steps"))
    m = re.search(
        r"^cugym train: a batch of \d+ agents took [\d.]+ s: setup [\d.]+ s, (\d+) iterations? ([\d.]+) s", log, re.M
    )
    if not (m and isinstance(total, float) and isinstance(envs, float) and seconds):
        return None
    iterations, spent = int(m.group(1)), float(m.group(2))
    per_iteration = envs * (steps if algo == "ppo" and isinstance(steps, float) else 1.0)
    if iterations == 0 or spent <= 0 or seconds - spent >= target:
        return None
    steps_for_target = (target - (seconds - spent)) / (spent / iterations) * per_iteration
    return (
        f"at this rate {target:g} s is about total_steps = {steps_for_target:.3g} (this run: total_steps "
        f"{total:.0f}, {iterations} iterations of {per_iteration:.0f} env steps a lane in {spent:.1f} s, the rest "
        f"{seconds - spent:.1f} s)"
    )


def lanes_summary(dqn_dir, spec, card, tolerance):
    """GROUP:SEED:LOSS[,LOSS...]: a lockstep batch (GROUP-batch) beside the solo run of one of its
    seeds with the same settings (GROUP-SEED). It passes when both completed (exit 0, a summary or a
    model; a run cut off did not), neither fell back from the CUDA graph, every lane's and the solo
    run's LOSS columns are finite, and the seed's lane has the solo run's model bytes, or, where the
    batched network rounds otherwise than a network of one (cuBLAS's strided-batched GEMMs against
    single GEMMs), the lane of the short pair gpu-check.sh then runs (GROUP-short-batch and
    GROUP-short-SEED: the first learning iterations only) agrees with its solo run within `tolerance`,
    normwise relative, tensor by tensor (tests/agents/solo_claim.h's kRoundingTolerance). 1 when
    something is wrong, else 0."""
    group, seed, losses = spec.split(":")
    seed, losses = int(seed), [c for c in losses.split(",") if c]
    folder, solo = os.path.join(dqn_dir, f"{group}-batch"), os.path.join(dqn_dir, f"{group}-{seed}")

    def read(path):
        try:
            return open(path, errors="replace").read()
        except OSError:
            return ""

    def lane_dir(batch_folder, run):
        mine = run.get("run_dir", "")
        return mine if os.path.isdir(mine) else os.path.join(batch_folder, f"seed_{run['seed']}")

    def summary_point(batch_folder):
        try:
            return json.load(open(os.path.join(batch_folder, "summary.json")))["points"][0]
        except (OSError, ValueError, KeyError, IndexError):
            return None

    problems = []
    status, solo_status = exit_status(folder + ".rc"), exit_status(solo + ".rc")
    log, solo_log = read(folder + ".log"), read(solo + ".log")
    try:
        seconds = float(read(folder + ".seconds").strip())
    except ValueError:
        seconds = None
    point = summary_point(folder)
    for what, st, text, done in (
        ("the batch", status, log, point is not None),
        (f"seed {seed} solo", solo_status, solo_log, os.path.exists(os.path.join(solo, "model.safetensors"))),
    ):
        if GRAPH_FALLBACK in text:
            problems.append(f"{what} fell back from the CUDA graph")
        if st == TIMEOUT_EXIT:
            problems.append(f"{what} was cut off (not a completed run)")
        elif st != 0 or not done:
            tail = text.strip().splitlines()[-1:] or ["no output"]
            problems.append(f"{what} exited {st} ({tail[0][:120]})")
    lanes = {run["seed"]: lane_dir(folder, run) for run in point["runs"]} if point else {}
    nonfinite = []
    for name, run_dir in sorted(lanes.items()) + [(f"{seed} solo", solo)]:
        why = losses_problem(os.path.join(run_dir, "metrics.csv"), losses)
        if why and os.path.isdir(run_dir):
            nonfinite.append(f"{name}: {why}")
    if nonfinite:
        problems.append(f"losses not finite in {len(nonfinite)} run(s) ({'; '.join(nonfinite[:3])})")
    claim = "-"
    lane = lanes.get(seed)
    mine, theirs = (os.path.join(lane or "", "model.safetensors"), os.path.join(solo, "model.safetensors"))
    if lane and os.path.exists(mine) and os.path.exists(theirs):
        if open(mine, "rb").read() == open(theirs, "rb").read():
            claim = f"seed {seed}: the solo run's model bytes"
        else:
            short = os.path.join(dqn_dir, f"{group}-short-batch")
            short_point = summary_point(short)
            short_lanes = {run["seed"]: lane_dir(short, run) for run in short_point["runs"]} if short_point else {}
            rel = None
            if seed in short_lanes:
                rel = models_difference(
                    os.path.join(short_lanes[seed], "model.safetensors"),
                    os.path.join(dqn_dir, f"{group}-short-{seed}", "model.safetensors"),
                )
            if rel is None:
                problems.append(f"seed {seed}: other model bytes than its solo run, and no short pair to compare")
                claim = f"seed {seed}: other bytes"
            elif rel > tolerance:
                problems.append(
                    f"seed {seed}: other model bytes, and its first learning iterations {rel:.1e} from the solo run's "
                    f"(> {tolerance:g})"
                )
                claim = f"seed {seed}: other bytes"
            else:
                claim = (
                    f"seed {seed}: other model bytes than its solo run (the batched network rounds otherwise than a "
                    f"network of one: a finding for docs/nn.md); its first learning iterations within {tolerance:g} "
                    f"({rel:.1e}, normwise relative)"
                )
    elif not problems:
        problems.append(f"seed {seed}: no model to compare (lane {'found' if lane else 'missing'})")
    wall = "-" if seconds is None else f"{seconds:.1f}"
    verdict = "FAIL (" + "; ".join(problems) + ")" if problems else "pass"
    print(
        f"\nlanes {group} on {card['name']} (`cugym train --seeds --lockstep on`, one process): "
        f"{point['seeds'] if point else '-'} runs, solved (final) {point['solved_final'] if point else '-'}, "
        f"wall {wall} s; losses ({', '.join(losses)}) {'finite' if not nonfinite else 'NOT finite'}; {claim}: {verdict}"
    )
    for line in re.findall(r"^cugym train: (a batch of \d+ agents took .*)$", log, flags=re.M):
        print(f"  {line}")
    note = sizing_note(lanes.get(seed, ""), log, seconds)
    if note:
        print(f"  sizing: {note}")
    return 1 if problems else 0


SANITIZER_UNUSABLE = re.compile(
    r"Device not supported|Unable to find injection library|not supported on this|"
    r"Target application terminated before first instrumented API call"
)


def sanitizer_summary(args):
    """Each run of sanitize() in gpu-check.sh is a '=== sanitizer-TOOL-NAME' block ending with
    'sanitizer exit N'."""
    text = open(args.log, errors="replace").read() if os.path.exists(args.log) else ""
    blocks = re.split(r"^=== ", text, flags=re.M)
    head, runs = blocks[0], blocks[1:]
    print(f"compute-sanitizer: {len(runs)} run(s), {args.seconds} s")
    if not runs:
        print("  " + (head.strip() or "sanitizer: not run"))
        return 0
    bad = 0
    for block in runs:
        name = block.splitlines()[0].strip().removeprefix("sanitizer-")
        m = re.search(r"^sanitizer exit (\d+)\s*$", block, re.M)
        status = int(m.group(1)) if m else None
        errors = re.search(r"ERROR SUMMARY: (\d+) errors?", block)
        # racecheck: "RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)": the errors count
        hazards = re.search(r"RACECHECK SUMMARY: (\d+) hazards? displayed(?: \((\d+) errors?)?", block)
        found = int(errors.group(1)) if errors else 0
        if hazards:
            found += int(hazards.group(2) if hazards.group(2) is not None else hazards.group(1))
        if status == 0 and found == 0:
            verdict = "pass"
        elif SANITIZER_UNUSABLE.search(block) and found == 0:
            verdict = "not usable here (" + SANITIZER_UNUSABLE.search(block).group(0) + ")"
        elif status == TIMEOUT_EXIT and found == 0:
            verdict = f"cut off at {args.limit} s, nothing found before"
        else:
            bad += 1
            why = f"{found} error(s)/hazard(s)" if found else f"exit {status}"
            verdict = f"FAIL ({why})"
        tests = re.search(r"\[  PASSED  \] (\d+) tests?", block)
        if tests and tests.group(1) == "0" and verdict == "pass":
            verdict = "pass, no case matched its filter (reported)"
            tests = None
        print(f"  {name}: {verdict}" + (f", {tests.group(1)} test(s) passed" if tests else ""))
    print(f"sanitizer verdict: {'FAIL' if bad else 'pass'} ({bad} problem(s))")
    return 2 if bad else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    card_help = "the card's JSON (`card --out F`): its name labels the figures, its bandwidth the bound and the goals"
    p = sub.add_parser("card")
    p.add_argument("--out", required=True)
    p.add_argument("--name", help="the card's name (default: CuPy's, PyTorch's or nvidia-smi's)")
    p.add_argument("--no-measure", action="store_true", help="look the bandwidth up by name only")
    p = sub.add_parser("ctest")
    p.add_argument("log")
    p.add_argument("--build-seconds", type=int, required=True)
    p.add_argument("--ctest-seconds", type=int, required=True)
    p.add_argument("--case", action="append", default=[], help="a regex of ctest names to count (CUDA cases)")
    p.add_argument("--card", default="", help=card_help)
    p = sub.add_parser("sanitizer")
    p.add_argument("log")
    p.add_argument("--seconds", type=int, required=True)
    p.add_argument("--limit", type=int, default=60, help="seconds after which a run was cut off")
    p = sub.add_parser("speed")
    p.add_argument("--env-jsonl", required=True)
    p.add_argument("--nn-jsonl", required=True)
    p.add_argument("--card", default="", help=card_help)
    p = sub.add_parser("dqn")
    p.add_argument("--dqn-dir", required=True)
    p.add_argument("--limit", type=int, required=True, help="seconds after which a run was cut off")
    p.add_argument("--bar", action="append", default=[], help="GROUP:THRESHOLD:NEED, e.g. cartpole-cuda:475:3")
    p.add_argument(
        "--batch",
        action="append",
        default=[],
        help="BATCH:SOLO_GROUP[:lockstep[:GOAL_SECONDS|report]], e.g. cartpole-cuda-batch:cartpole-cuda:lockstep:10",
    )
    p.add_argument(
        "--lanes",
        action="append",
        default=[],
        help="GROUP:SEED:LOSS[,LOSS...], e.g. cartpole_ppo_500k-cuda:1:policy_loss,value_loss (lanes_summary)",
    )
    p.add_argument(
        "--tolerance", type=float, default=1e-3, help="normwise relative, where a lane cannot give its solo run's bits"
    )
    p.add_argument("--card", default="", help=card_help)
    args = parser.parse_args()
    summaries = {
        "card": card_probe,
        "ctest": ctest_summary,
        "sanitizer": sanitizer_summary,
        "speed": speed_summary,
        "dqn": dqn_summary,
    }
    return summaries[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
