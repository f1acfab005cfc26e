#!/usr/bin/env python3
# cleanrl_cartpole.py - the CleanRL peer: CleanRL's dqn.py with its defaults (CartPole-v1, 500k
# env steps, one env, 1 gradient step per 10 env steps) for each seed, with --save-model; the
# saved Q network (dqn.py's own QNetwork class) is then evaluated over 100 greedy episodes
# (bench/peer_eval.py). Per seed: the training loop's wall time (from dqn.py's first episode line
# to its "model saved" line, so without the Python and torch start-up), the process time, and
# the greedy mean. Once the model is saved the run is stopped: dqn.py's own evaluation (10
# episodes at epsilon 0.05, recording a video) is not needed. CPU only, OMP_NUM_THREADS=1 as in
# CleanRL's benchmark/dqn.sh. With --envs cugym, the same dqn.py runs with only its env
# construction changed: the `envs = gym.vector.SyncVectorEnv(...)` statement becomes
# `envs = cugym_gym029.make_vec(args.env_id, args.num_envs, seed=args.seed)` (bench/cugym_gym029.py:
# cugym's CartPole behind Gymnasium 0.29's vector API), in a patched copy that the script prints
# as a diff; the model is still evaluated on Gymnasium's CartPole-v1. That needs the cugym
# package in the same venv: `/tmp/cleanrl/bin/pip install --no-deps .` from the repository root.
# Developer tool in a venv of its own, never a dependency of cugym;
# the cleanrl 1.2.0 wheel needs Python < 3.11, and its pinned dependencies (gym 0.23, SB3 1.2,
# wandb, ...) are its poetry project's, not dqn.py's, so it goes in with --no-deps:
#
#   python3.10 -m venv /tmp/cleanrl
#   /tmp/cleanrl/bin/pip install torch "numpy<2" gymnasium==0.29.1 stable-baselines3 tensorboard
#   /tmp/cleanrl/bin/pip install --no-deps cleanrl==1.2.0
#   /tmp/cleanrl/bin/python bench/cleanrl_cartpole.py [--seeds 1 2 3] [--total-timesteps 500000]
#                           [--envs gymnasium|cugym] [--script path/to/cleanrl/dqn.py] [--json FILE]
import argparse
import difflib
import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import gymnasium as gym
import peer_eval
import torch

BENCH = os.path.dirname(os.path.abspath(__file__))
# dqn.py's env construction (cleanrl 1.2.0 and CleanRL's main branch alike), and what replaces it.
SYNC_VECTOR_ENV = re.compile(r"^( *)envs = gym\.vector\.SyncVectorEnv\(\n.*?^\1\)\n", re.S | re.M)
CUGYM_ENVS = (
    "{0}import cugym_gym029  # cugym: the only change, env construction\n"
    "{0}envs = cugym_gym029.make_vec(args.env_id, args.num_envs, seed=args.seed)\n"
)


def dqn_source(script):
    """Path of the dqn.py to run: --script, or the installed cleanrl package's."""
    return script or importlib.util.find_spec("cleanrl.dqn").origin


def with_cugym_envs(source_path, work):
    """A copy of dqn.py in `work` whose env construction is cugym's; prints the change as a diff."""
    text = open(source_path).read()
    patched, count = SYNC_VECTOR_ENV.subn(lambda m: CUGYM_ENVS.format(m.group(1)), text)
    if count != 1:
        raise RuntimeError(f"{source_path}: expected one `envs = gym.vector.SyncVectorEnv(...)`, found {count}")
    path = os.path.join(work, "dqn_cugym.py")
    with open(path, "w") as f:
        f.write(patched)
    diff = difflib.unified_diff(text.splitlines(True), patched.splitlines(True), source_path, path, n=0)
    print("".join(diff), file=sys.stderr)
    return path


def train(script, seed, total_steps, threads, envs="gymnasium"):
    """Runs dqn.py; returns (path of the saved model, loop seconds, process seconds, work dir)."""
    work = tempfile.mkdtemp(prefix="cleanrl-")
    paths = []
    if envs == "cugym":
        script_path = with_cugym_envs(dqn_source(script), work)
        paths.append(BENCH)
        cmd = [sys.executable, script_path]
    else:
        cmd = [sys.executable, script] if script else [sys.executable, "-m", "cleanrl.dqn"]
    cmd += ["--seed", str(seed), "--total-timesteps", str(total_steps), "--save-model"]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONUNBUFFERED="1", CUDA_VISIBLE_DEVICES="")
    if script:  # a checkout: its cleanrl_utils package sits beside cleanrl/
        paths.append(os.path.dirname(os.path.dirname(os.path.abspath(script))))
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    start = time.perf_counter()
    first = model = None
    tail = []
    with subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
        for line in p.stdout:
            now = time.perf_counter()
            tail = (tail + [line.strip()])[-5:]
            if first is None and line.startswith("global_step="):
                first = now
            if line.startswith("model saved to"):
                model, saved = os.path.join(work, line.split("model saved to", 1)[1].strip()), now
                p.terminate()
                break
    if model is None:
        raise RuntimeError(f"{' '.join(cmd)} saved no model: {' / '.join(tail)}")
    return model, saved - first, saved - start, work


def q_network_class(script):
    if script:
        spec = importlib.util.spec_from_file_location("cleanrl_dqn", script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.QNetwork
    return importlib.import_module("cleanrl.dqn").QNetwork


def evaluate(script, model_path, env_id="CartPole-v1"):
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(env_id)])  # QNetwork reads its spaces
    q = q_network_class(script)(envs)
    q.load_state_dict(torch.load(model_path, map_location="cpu"))
    q.eval()

    def act(obs):
        with torch.no_grad():
            return int(q(torch.as_tensor(obs, dtype=torch.float32)[None]).argmax(dim=1))

    returns = peer_eval.evaluate_greedy(env_id, act)
    return sum(returns) / len(returns)


def main():
    p = argparse.ArgumentParser(description="CleanRL's dqn.py (its defaults) per seed, then 100 greedy episodes.")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--total-timesteps", type=int, default=500000)
    p.add_argument("--script", help="a dqn.py to run instead of the installed cleanrl.dqn")
    p.add_argument(
        "--envs",
        choices=["gymnasium", "cugym"],
        default="gymnasium",
        help="cugym: dqn.py with only its env construction changed to cugym's (bench/cugym_gym029.py)",
    )
    p.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS for the run")
    p.add_argument("--json", help="also write the rows here")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    rows = []
    for seed in a.seeds:
        model, loop, process, work = train(a.script, seed, a.total_timesteps, a.threads, a.envs)
        rows.append(
            {
                "seed": seed,
                "train_seconds": loop,
                "process_seconds": process,
                "process": f"{process:.1f} s",
                "greedy_mean": evaluate(a.script, model),
            }
        )
        print(f"seed {seed}: {rows[-1]}", file=sys.stderr, flush=True)
        shutil.rmtree(work)
    peer_eval.report(rows, 475.0, a.json, extra_header=[("process time", "process")])


if __name__ == "__main__":
    main()
