# cleanrl_ppo_eval.py - the greedy evaluation of a model that CleanRL's ppo_continuous_action.py saved
# (--save-model), for bench/ppo_peers.py, which runs it with the peer's Python (torch, Gymnasium
# 0.29). The Agent class is the script's own. Its saved state holds the networks only, not the
# NormalizeObservation statistics that lived in its training envs, so, as CleanRL's own
# cleanrl_utils/evals/ppo_eval.py does, the observations go through a NormalizeObservation started
# afresh and updated as the evaluation runs (then clipped to +-10, as in training); the action is the
# actor's mean (not a draw), clipped to the Box. 100 episodes from peer_eval's seeded resets; the
# returns are the env's own rewards. Prints one JSON object: {"mean": ..., "returns": [...]}.
#
#   PY bench/cleanrl_ppo_eval.py --script CLEANRL/cleanrl/ppo_continuous_action.py --model FILE
#      [--env-id Pendulum-v1] [--episodes 100]
import argparse
import importlib.util
import json

import gymnasium as gym
import numpy as np
import peer_eval
import torch


def agent_class(script):
    spec = importlib.util.spec_from_file_location("cleanrl_ppo_continuous_action", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # its training sits under `if __name__ == "__main__"`
    return module.Agent


def main():
    p = argparse.ArgumentParser(description="Greedy evaluation of a ppo_continuous_action.py model.")
    p.add_argument("--script", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--env-id", default="Pendulum-v1")
    p.add_argument("--episodes", type=int, default=100)
    a = p.parse_args()
    torch.set_num_threads(1)
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(a.env_id)])  # Agent reads its spaces
    agent = agent_class(a.script)(envs)
    agent.load_state_dict(torch.load(a.model, map_location="cpu"))
    agent.eval()
    low, high = envs.single_action_space.low, envs.single_action_space.high

    def act(obs):
        with torch.no_grad():
            mean = agent.actor_mean(torch.as_tensor(np.clip(obs, -10, 10), dtype=torch.float32)[None])
        return np.clip(mean[0].numpy(), low, high)

    returns = peer_eval.evaluate_greedy(a.env_id, act, a.episodes, wrap=gym.wrappers.NormalizeObservation)
    print(json.dumps({"mean": sum(returns) / len(returns), "returns": returns}))


if __name__ == "__main__":
    main()
