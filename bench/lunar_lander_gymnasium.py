#!/usr/bin/env python3
# lunar_lander_gymnasium.py - LunarLander conformance figures, cugym beside Gymnasium 1.4.0 in the
# same run (docs/benchmarks.md). Developer tool only.
#
#   python3 -m venv /tmp/gym && /tmp/gym/bin/pip install "gymnasium[box2d]==1.4.0"
#   /tmp/gym/bin/python bench/lunar_lander_gymnasium.py --tests build/tests/cugym_tests
#
# Gymnasium: gym.make(id) with its 1000-step TimeLimit, episode k from reset(seed=k), k < 1000;
# Gymnasium's heuristic (gymnasium.envs.box2d.lunar_lander.heuristic) for both ids, and uniformly
# random discrete actions (action_space.seed(12345)), as shared/reference/lunarlander.md §2.
# cugym: the tests that compute the same figures (tests/envs/test_lunar_lander.cpp, 100 envs x 10
# episodes each, cugym's own RNG) print them in lines starting with "[lunar]".
import argparse
import subprocess
import time

import gymnasium as gym
import numpy as np
from gymnasium.envs.box2d.lunar_lander import heuristic


def episodes(env_id, policy, count):
    env = gym.make(env_id)
    env.action_space.seed(12345)
    returns, lengths = [], []
    for k in range(count):
        obs, _ = env.reset(seed=k)
        total, steps, done = 0.0, 0, False
        while not done:
            action = heuristic(env, obs) if policy == "heuristic" else env.action_space.sample()
            obs, reward, terminated, truncated, _ = env.step(action)
            total += reward
            steps += 1
            done = terminated or truncated
        returns.append(total)
        lengths.append(steps)
    r = np.array(returns)
    return (
        f"[gymnasium] {env_id} {policy}: {count} episodes, return mean {r.mean():.2f} std {r.std():.2f}, "
        f">= 200 in {100 * np.mean(r >= 200):.1f} %, length mean {np.mean(lengths):.1f}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tests", required=True, help="cugym_tests binary (built with Box2D)")
    parser.add_argument("--episodes", type=int, default=1000)
    args = parser.parse_args()
    start = time.time()
    cugym = subprocess.run(
        [args.tests, "--gtest_filter=LunarLanderStatistics.*:LunarLanderGymnasium.*"], capture_output=True, text=True
    )
    for line in cugym.stdout.splitlines():
        if line.startswith("[lunar]") or "FAILED" in line:
            print(line)
    for env_id, policy in [
        ("LunarLander-v3", "heuristic"),
        ("LunarLanderContinuous-v3", "heuristic"),
        ("LunarLander-v3", "random"),
    ]:
        print(episodes(env_id, policy, args.episodes), flush=True)
    print(f"gymnasium {gym.__version__}, numpy {np.__version__}; {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
