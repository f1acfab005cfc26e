#!/usr/bin/env python3
# lunar_lander_gymnasium.py - LunarLander episode statistics, cugym (the Python package,
# cugym.make_vec) beside Gymnasium 1.4.0 in the same run: the table of docs/benchmarks.md's
# LunarLander section (and of issue 27). Developer tool only.
#
#   python3 -m venv /tmp/gym && /tmp/gym/bin/pip install "gymnasium[box2d]==1.4.0" numpy
#   CUGYM_BOX2D=ON CUGYM_CUDA=OFF /tmp/gym/bin/pip install .
#   /tmp/gym/bin/python bench/lunar_lander_gymnasium.py [--episodes 1000] [--runs 2]
#
# Gymnasium: gym.make(id) with its 1000-step TimeLimit; run r, episode k from reset(seed=
# 100000 r + k); uniform random actions from default_rng(r) (or its heuristic()). cugym: 250 envs,
# reset(seed=r), each env's first episodes (so that short episodes are not over-sampled), the
# same random actions distribution; the heuristic vectorized (lunar_lander_heuristic below, checked
# against Gymnasium's by python/tests/test_lunar_lander_gymnasium.py). "One step before the end"
# is the observation the last step started from.
import argparse
import time

import numpy as np

IDS = ["LunarLander-v3", "LunarLanderContinuous-v3"]


def lunar_lander_heuristic(s, continuous):
    """Gymnasium's heuristic() on a (N, 8) float32 batch, in float32 as NumPy 2 computes it."""
    s = np.asarray(s, np.float32)
    angle_targ = np.clip(s[:, 0] * np.float32(0.5) + s[:, 2] * np.float32(1.0), -0.4, 0.4).astype(np.float32)
    hover_targ = np.float32(0.55) * np.abs(s[:, 0])
    angle_todo = (angle_targ - s[:, 4]) * np.float32(0.5) - s[:, 5] * np.float32(1.0)
    hover_todo = (hover_targ - s[:, 1]) * np.float32(0.5) - s[:, 3] * np.float32(0.5)
    contact = (s[:, 6] != 0) | (s[:, 7] != 0)
    angle_todo = np.where(contact, np.float32(0), angle_todo)
    hover_todo = np.where(contact, -s[:, 3] * np.float32(0.5), hover_todo)
    if continuous:
        a = np.stack([hover_todo * np.float32(20) - np.float32(1), -angle_todo * np.float32(20)], axis=1)
        return np.clip(a, -1, 1).astype(np.float32)
    a = np.zeros(len(s), np.int32)
    a[angle_todo > 0.05] = 1
    a[angle_todo < -0.05] = 3
    a[(hover_todo > np.abs(angle_todo)) & (hover_todo > 0.05)] = 2
    return a


def random_actions(continuous, n, rng):
    if continuous:
        return rng.uniform(-1, 1, size=(n, 2)).astype(np.float32)
    return rng.integers(0, 4, size=n).astype(np.int32)


class Episodes:
    """Per-episode figures: return, length, last reward, the observation one step before the end,
    and the reward of the first 40 steps."""

    def __init__(self):
        self.returns, self.lengths, self.last, self.before_end, self.first40 = [], [], [], [], []

    def add(self, ret, length, last, before_end, first40):
        self.returns.append(ret)
        self.lengths.append(length)
        self.last.append(last)
        self.before_end.append(np.array(before_end, np.float64))
        self.first40.append(first40)

    def arrays(self):
        return {
            "returns": np.array(self.returns),
            "lengths": np.array(self.lengths),
            "last": np.array(self.last),
            "before_end": np.array(self.before_end).reshape(-1, 8),
            "first40": np.array(self.first40),
        }


def gymnasium_episodes(env_id, policy, count, run):
    import gymnasium as gym
    from gymnasium.envs.box2d.lunar_lander import heuristic

    env = gym.make(env_id)
    continuous = env_id != "LunarLander-v3"
    rng = np.random.default_rng(run)
    out = Episodes()
    for k in range(count):
        obs, _ = env.reset(seed=100000 * run + k)
        ret, length, first40, done = 0.0, 0, 0.0, False
        while not done:
            before = obs
            action = heuristic(env, obs) if policy == "heuristic" else random_actions(continuous, 1, rng)[0]
            obs, reward, terminated, truncated, _ = env.step(action)
            ret += reward
            first40 += reward if length < 40 else 0.0
            length += 1
            done = terminated or truncated
        out.add(ret, length, reward, before, first40)
    return out.arrays()


def cugym_episodes(env_id, policy, count, run, num_envs=250):
    import cugym

    per_env = -(-count // num_envs)
    envs = cugym.make_vec(env_id, num_envs, autoreset_mode="SameStep")  # no reset step to count
    continuous = env_id != "LunarLander-v3"
    rng = np.random.default_rng(run)
    obs, _ = envs.reset(seed=run)
    ret, length, first40 = np.zeros(num_envs), np.zeros(num_envs, np.int64), np.zeros(num_envs)
    finished = np.zeros(num_envs, np.int64)
    out = Episodes()
    while (finished < per_env).any():
        before = obs
        action = (
            lunar_lander_heuristic(obs, continuous)
            if policy == "heuristic"
            else random_actions(continuous, num_envs, rng)
        )
        obs, reward, terminated, truncated, _ = envs.step(action)
        ret += reward
        first40 += np.where(length < 40, reward, 0.0)
        length += 1
        for i in np.flatnonzero(terminated | truncated):
            if finished[i] < per_env:
                out.add(ret[i], length[i], reward[i], before[i], first40[i])
            finished[i] += 1
            ret[i], length[i], first40[i] = 0.0, 0, 0.0
    envs.close()
    return out.arrays()


def summary(e):
    r, b = e["returns"], e["before_end"]
    terminated = np.abs(e["last"]) == 100
    speed = np.hypot(b[:, 2], b[:, 3])  # in observation units (s2 = 0.2 vx, s3 = 0.133 vy)
    return {
        "return mean": r.mean(),
        "return std": r.std(),
        "return p10/50/90": np.percentile(r, [10, 50, 90]),
        "return without the final +-100": (r - np.where(terminated, e["last"], 0.0)).mean(),
        "length p10/50/90": np.percentile(e["lengths"], [10, 50, 90]),
        "length mean": e["lengths"].mean(),
        "legs in contact one step before the end": np.mean((b[:, 6] > 0) | (b[:, 7] > 0)),
        "speed one step before the end, hypot(s2, s3)": speed.mean(),
        "mean |angle| one step before the end (rad)": np.abs(b[:, 4]).mean(),
        "first 40 steps: reward sum": e["first40"].mean(),
        "first 40 steps: std": e["first40"].std(),
        "landed (+100) / crashed (-100) / truncated": (
            np.mean(e["last"] == 100),
            np.mean(e["last"] == -100),
            np.mean(~terminated),
        ),
    }


def fmt(v):
    if isinstance(v, tuple):
        return " / ".join(f"{x:.3f}" for x in v)
    if isinstance(v, np.ndarray):
        return " / ".join(f"{x:.1f}" for x in v)
    return f"{v:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=1000, help="per run and side")
    parser.add_argument("--runs", type=int, default=2, help="runs (seeds) per side, pooled in the percentiles")
    parser.add_argument("--policies", nargs="+", default=["random", "heuristic"])
    parser.add_argument("--ids", nargs="+", default=IDS)
    args = parser.parse_args()
    for env_id in args.ids:
        for policy in args.policies:
            sides = {}
            for side, collect in (("Gymnasium", gymnasium_episodes), ("cugym", cugym_episodes)):
                start = time.time()
                runs = [collect(env_id, policy, args.episodes, run) for run in range(args.runs)]
                pooled = {k: np.concatenate([r[k] for r in runs]) for k in runs[0]}
                sides[side] = (runs, pooled, time.time() - start)
            print(f"\n## {env_id} {policy}: {args.runs} x {args.episodes} episodes per side")
            print("| | Gymnasium | cugym |\n| --- | ---: | ---: |")
            per_run = {s: " , ".join(f"{r['returns'].mean():.1f}" for r in runs) for s, (runs, _, _) in sides.items()}
            print(f"| return mean, per run | {per_run['Gymnasium']} | {per_run['cugym']} |")
            stats = {s: summary(pooled) for s, (_, pooled, _) in sides.items()}
            for key in stats["Gymnasium"]:
                print(f"| {key} | {fmt(stats['Gymnasium'][key])} | {fmt(stats['cugym'][key])} |")
            g, c = sides["Gymnasium"][1]["returns"], sides["cugym"][1]["returns"]
            z = (c.mean() - g.mean()) / np.sqrt(g.var() / len(g) + c.var() / len(c))
            print(f"| difference of the means in standard errors (z) | | {z:+.2f} |")
            print(f"({sides['Gymnasium'][2]:.1f} s Gymnasium, {sides['cugym'][2]:.1f} s cugym)", flush=True)


if __name__ == "__main__":
    main()
