#!/usr/bin/env python3
# sb3_mountaincar.py - the peer for configs/mountain_car.toml: Stable-Baselines3's DQN with the
# RL Zoo's tuned MountainCar-v0 row (hyperparams/dqn.yml: 256-256, lr 4e-3, batch 128, buffer
# 10k, learning_starts 1000, gamma 0.98, target every 600 steps, 8 gradient steps per 16 env
# steps, epsilon to 0.07 over 20%, 120k steps), one env, PyTorch on one CPU thread. Per seed:
# training seconds, the step of the first training episode that reached the flag, and the mean
# greedy return over 100 episodes. Developer tool (pip install stable-baselines3), never a
# dependency of cugym.
#
#   python3 bench/sb3_mountaincar.py [--seeds 1 2 3]
import argparse
import time

import gymnasium as gym
import torch
from stable_baselines3 import DQN
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv


class FirstFlag(BaseCallback):
    """Remembers the env step at which a training episode first ended before the time limit."""

    def __init__(self):
        super().__init__()
        self.step = None

    def _on_step(self):
        for info in self.locals["infos"]:
            if self.step is None and "episode" in info and info["episode"]["r"] > -200:
                self.step = self.num_timesteps
        return True


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    a = p.parse_args()
    torch.set_num_threads(1)
    print("| seed | train time | first flag in training | greedy mean (100 ep.) |")
    print("|---:|---:|---:|---:|")
    for seed in a.seeds:
        model = DQN("MlpPolicy", Monitor(gym.make("MountainCar-v0")), learning_rate=4e-3, batch_size=128,
                    buffer_size=10000, learning_starts=1000, gamma=0.98, target_update_interval=600,
                    train_freq=16, gradient_steps=8, exploration_fraction=0.2, exploration_final_eps=0.07,
                    policy_kwargs=dict(net_arch=[256, 256]), seed=seed, verbose=0)
        flag = FirstFlag()
        start = time.perf_counter()
        model.learn(120000, callback=flag)
        seconds = time.perf_counter() - start
        evaluation = DummyVecEnv([lambda: Monitor(gym.make("MountainCar-v0"))])
        evaluation.seed(12345)  # the same 100 start states for every seed and run
        mean, _ = evaluate_policy(model, evaluation, n_eval_episodes=100, deterministic=True)
        first = f"step {flag.step:,}" if flag.step else "never"
        print(f"| {seed} | {seconds:.1f} s | {first} | {mean:.2f} |", flush=True)


if __name__ == "__main__":
    main()
