# cleanrl_sac_eval.py - CleanRL's sac_continuous_action.py for bench/sac_peers.py, which runs this
# file with the peer's Python (torch, Gymnasium 0.29, tyro, tensorboard). The script has no
# --save-model, so this file does two things, as two commands:
#
#   run: runs the script unchanged from its own file (runpy, as `python SCRIPT ARGS...` would, its
#     folder first on sys.path and the checkout above it next, for cleanrl_utils), and once its
#     training has ended (envs and writer closed) saves the state of the `actor` it trained to MODEL
#     and prints `model saved to MODEL`. Nothing of the script is copied or changed: only its
#     globals are read after it returns.
#   eval: the deterministic evaluation of such a model: the Actor class is the script's own (its
#     training sits under `if __name__ == "__main__"`), the action tanh(mean) scaled to the Box
#     (what the script's get_action returns as its third value); 100 episodes from peer_eval's
#     seeded resets; the returns are the env's own rewards. Prints one JSON object:
#     {"mean": ..., "returns": [...]}.
#
#   PY bench/cleanrl_sac_eval.py run --model FILE -- CLEANRL/cleanrl/sac_continuous_action.py [ARGS...]
#   PY bench/cleanrl_sac_eval.py eval --script CLEANRL/cleanrl/sac_continuous_action.py --model FILE
#      [--env-id Pendulum-v1] [--episodes 100]
import argparse
import importlib.util
import json
import os
import runpy
import sys


def script_paths(script):
    """The folders the script needs first on sys.path: its own (as `python SCRIPT` puts it) and the
    checkout root above it (cleanrl_utils, which CleanRL's own setup installs as a package)."""
    here = os.path.dirname(os.path.abspath(script))
    return [here, os.path.dirname(here)]


def run(model, argv):
    script = argv[0]
    sys.argv = [script, *argv[1:]]
    sys.path[:0] = script_paths(script)
    done = runpy.run_path(script, run_name="__main__")
    import torch

    torch.save(done["actor"].state_dict(), model)
    print(f"model saved to {model}", flush=True)


def actor_class(script):
    sys.path[:0] = script_paths(script)
    spec = importlib.util.spec_from_file_location("cleanrl_sac_continuous_action", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Actor


def evaluate(script, model, env_id, episodes):
    import gymnasium as gym
    import numpy as np
    import peer_eval
    import torch

    torch.set_num_threads(1)
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(env_id)])  # Actor reads its spaces
    actor = actor_class(script)(envs)
    actor.load_state_dict(torch.load(model, map_location="cpu"))
    actor.eval()

    def act(obs):
        with torch.no_grad():
            mean, _ = actor(torch.as_tensor(obs, dtype=torch.float32)[None])
            action = torch.tanh(mean) * actor.action_scale + actor.action_bias
        return action[0].numpy().astype(np.float32)

    returns = peer_eval.evaluate_greedy(env_id, act, episodes)
    print(json.dumps({"mean": sum(returns) / len(returns), "returns": returns}))


def main():
    p = argparse.ArgumentParser(description="Run CleanRL's sac_continuous_action.py and evaluate its actor.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run the script unchanged, then save its actor")
    r.add_argument("--model", required=True)
    r.add_argument("argv", nargs=argparse.REMAINDER, help="-- SCRIPT [its arguments]")
    e = sub.add_parser("eval", help="the deterministic evaluation of a saved actor")
    e.add_argument("--script", required=True)
    e.add_argument("--model", required=True)
    e.add_argument("--env-id", default="Pendulum-v1")
    e.add_argument("--episodes", type=int, default=100)
    a = p.parse_args()
    if a.command == "run":
        argv = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
        if not argv:
            p.error("run: give the script after --")
        run(os.path.abspath(a.model), argv)
    else:
        evaluate(a.script, a.model, a.env_id, a.episodes)


if __name__ == "__main__":
    main()
