#!/usr/bin/env python3
# sb3_zoo.py - the Stable-Baselines3 peer: SB3's DQN with the RL Zoo's tuned row for an env
# (rl-baselines3-zoo 2.x hyperparams/dqn.yml; docs/dqn.md), one env, PyTorch on one CPU
# thread. Per seed: the wall time of model.learn, optionally the step of the first training
# episode whose return exceeds --first-return (MountainCar's -200: the first time the flag was
# reached), and the mean greedy return over 100 episodes (bench/peer_eval.py; the same start
# states for every seed). Developer tool (pip install stable-baselines3 in a venv of its own),
# never a dependency of cugym. --envs cugym trains on cugym's env through cugym.sb3.CugymVecEnv
# (one env, as the zoo row; the cugym package installed in the same venv) instead of
# Monitor(gym.make(env)); the greedy evaluation stays on Gymnasium's env.
#
#   python3 bench/sb3_zoo.py [--env CartPole-v1] [--seeds 1 2 3] [--first-return -200] [--envs gymnasium|cugym]
#                            [--json FILE]
import argparse
import sys
import time

import gymnasium as gym
import peer_eval
import torch
from stable_baselines3 import DQN
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor

# hyperparams/dqn.yml at rl-baselines3-zoo 22e3ff2; every row uses MlpPolicy with net_arch [256, 256].
ZOO = {
    "CartPole-v1": dict(
        n_timesteps=50000,
        threshold=475.0,
        learning_rate=2.3e-3,
        batch_size=64,
        buffer_size=100000,
        learning_starts=1000,
        gamma=0.99,
        target_update_interval=10,
        train_freq=256,
        gradient_steps=128,
        exploration_fraction=0.16,
        exploration_final_eps=0.04,
    ),
    "MountainCar-v0": dict(
        n_timesteps=120000,
        threshold=-110.0,
        learning_rate=4e-3,
        batch_size=128,
        buffer_size=10000,
        learning_starts=1000,
        gamma=0.98,
        target_update_interval=600,
        train_freq=16,
        gradient_steps=8,
        exploration_fraction=0.2,
        exploration_final_eps=0.07,
    ),
    "Acrobot-v1": dict(
        n_timesteps=100000,
        threshold=-100.0,
        learning_rate=6.3e-4,
        batch_size=128,
        buffer_size=50000,
        learning_starts=0,
        gamma=0.99,
        target_update_interval=250,
        train_freq=4,
        gradient_steps=-1,
        exploration_fraction=0.12,
        exploration_final_eps=0.1,
    ),
}


class FirstEpisodeAbove(BaseCallback):
    """Remembers the env step at which a training episode's return first exceeded a bar."""

    def __init__(self, bar):
        super().__init__()
        self.bar = bar
        self.step = None

    def _on_step(self):
        for info in self.locals["infos"]:
            if self.step is None and "episode" in info and info["episode"]["r"] > self.bar:
                self.step = self.num_timesteps
        return True


def main():
    p = argparse.ArgumentParser(description="SB3 DQN with the RL Zoo's tuned row, per seed, then 100 greedy episodes.")
    p.add_argument("--env", default="CartPole-v1", choices=sorted(ZOO))
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--first-return", type=float, help="also report the first training episode above this return")
    p.add_argument(
        "--envs",
        choices=["gymnasium", "cugym"],
        default="gymnasium",
        help="cugym: train on cugym's env through cugym.sb3.CugymVecEnv",
    )
    p.add_argument("--json", help="also write the rows here")
    a = p.parse_args()
    torch.set_num_threads(1)
    if a.envs == "cugym":
        from cugym.sb3 import CugymVecEnv
    row = dict(ZOO[a.env])
    steps, threshold = row.pop("n_timesteps"), row.pop("threshold")
    rows = []
    for seed in a.seeds:
        env = CugymVecEnv(a.env, num_envs=1) if a.envs == "cugym" else Monitor(gym.make(a.env))
        model = DQN("MlpPolicy", env, policy_kwargs=dict(net_arch=[256, 256]), seed=seed, verbose=0, **row)
        first = FirstEpisodeAbove(a.first_return) if a.first_return is not None else None
        start = time.perf_counter()
        model.learn(steps, callback=first)
        seconds = time.perf_counter() - start
        greedy = lambda obs, model=model: int(model.predict(obs, deterministic=True)[0])
        returns = peer_eval.evaluate_greedy(a.env, greedy)
        rows.append({"seed": seed, "train_seconds": seconds, "greedy_mean": sum(returns) / len(returns)})
        if first:
            rows[-1]["first"] = f"step {first.step:,}" if first.step else "never"
        print(f"seed {seed}: {rows[-1]}", file=sys.stderr, flush=True)
    extra = [(f"first training episode > {a.first_return:g}", "first")] if a.first_return is not None else []
    peer_eval.report(rows, threshold, a.json, extra_header=extra)


if __name__ == "__main__":
    main()
