# peer_eval.py - what the peer scripts (bench/cleanrl_cartpole.py, bench/sb3_zoo.py,
# bench/cleanrl_ppo_eval.py) share: the greedy evaluation and the per-seed report. Gymnasium only
# (0.29 or 1.x), so it runs in either peer's venv.
import json

import gymnasium as gym


def evaluate_greedy(env_id, act, episodes=100, seed=12345, wrap=None):
    """Returns of `episodes` episodes of act(observation) -> action. The first reset is seeded and
    the rest follow from it, as SB3's evaluate_policy on a DummyVecEnv seeded with `seed` does, so
    every peer and every training seed meets the same start states. wrap: an observation wrapper
    (e.g. gym.wrappers.NormalizeObservation) that the env goes in, the rewards staying the env's."""
    env = gym.make(env_id)
    if wrap is not None:
        env = wrap(env)
    returns = []
    obs, _ = env.reset(seed=seed)
    for _ in range(episodes):
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
        obs, _ = env.reset()
    env.close()
    return returns


def report(rows, threshold, json_path=None, extra_header=()):
    """Prints a markdown table (seed, train time, extra columns, greedy mean) and a line with the
    success count; rows are dicts with seed, train_seconds, greedy_mean and the extra keys."""
    print("| seed | train time | " + "".join(f"{h} | " for h, _ in extra_header) + "greedy mean (100 ep.) |")
    print("|---:|---:|" + "---:|" * len(extra_header) + "---:|")
    for r in rows:
        print(
            f"| {r['seed']} | {r['train_seconds']:.1f} s | "
            + "".join(f"{r[k]} | " for _, k in extra_header)
            + f"{r['greedy_mean']:.2f} |"
        )
    solved = sum(r["greedy_mean"] >= threshold for r in rows)
    times = sorted(r["train_seconds"] for r in rows)
    print(
        f"\n{solved} of {len(rows)} seeds >= {threshold:g}; train time median {times[len(times) // 2]:.1f} s "
        f"(min {times[0]:.1f}, max {times[-1]:.1f})"
    )
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"threshold": threshold, "runs": rows}, f, indent=1)
