#!/usr/bin/env python3
# gen_lunar_lander_fixture.py - record Gymnasium 1.4.0's LunarLander-v3 and
# LunarLanderContinuous-v3 with every random draw, so cugym's tests can inject the same initial
# condition (terrain heights, initial force) and the same per-step dispersions and compare the
# trajectories (tests/envs/test_lunar_lander.cpp). Developer tool only: nothing in cugym runs it.
#
#   python3 -m venv /tmp/gym && /tmp/gym/bin/pip install "gymnasium[box2d]==1.4.0"
#   /tmp/gym/bin/python scripts/gen_lunar_lander_fixture.py \
#       --out tests/fixtures/lunar_lander/gymnasium_draws.csv
#
# Gymnasium draws from np_random = default_rng(seed) (PCG64; reset() in gymnasium 1.4.0's
# gymnasium/envs/box2d/lunar_lander.py): 12 heights U(0, H/2), the initial force
# (2 x U(-1000, 1000)), then 2 x U(-1, 1) per step (the reset's internal step first).
# A twin default_rng(seed) replays that stream here.
#
# One row per step, up to 3 steps after the first contact; row step=0 is reset's internal step
# (its obs is reset's observation).
#   episode, continuous, step, h_0..h_11, force_x, force_y (step 0 only, else nan), disp_0, disp_1 (the U(-1, 1) values
#   before the division by SCALE), action_0, action_1 (discrete: action_0 only), obs_0..obs_7,
#   reward, terminated, contact (lander or a leg touches the moon after this step),
#   lander_x, lander_y, lander_angle, lander_vx, lander_vy, lander_omega (Box2D's values).
import argparse
import csv

import gymnasium as gym
import numpy as np

H = 400 / 30.0
DISCRETE_CYCLE = [0, 2, 1, 3, 0, 2, 3, 1]  # EnvPool's box2d_align_test cycle
CONTINUOUS_CYCLE = [(0.6, 0.0), (0.2, 0.8), (-0.5, -0.9), (0.9, 0.55)]


def record(writer, episode, continuous, seed, max_steps):
    env = gym.make("LunarLanderContinuous-v3" if continuous else "LunarLander-v3")
    twin = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    heights = twin.uniform(0, H / 2, size=(12,))
    force = [twin.uniform(-1000.0, 1000.0) for _ in range(2)]
    u = env.unwrapped
    assert np.allclose([0.33 * (heights[11] + heights[0] + heights[1])], [u.sky_polys[0][0][1]])

    def row(step, disp, action, obs, reward, terminated):
        contact = u.game_over or u.legs[0].ground_contact or u.legs[1].ground_contact
        a = list(action) if continuous else [action, 0]
        lander = u.lander
        start = [repr(float(x)) for x in [*heights, *force]] if step == 0 else ["nan"] * 14
        writer.writerow(
            [
                episode,
                int(continuous),
                step,
                *start,
                *(repr(float(x)) for x in disp),
                *(repr(float(x)) for x in a),
                *(repr(float(x)) for x in obs),
                repr(float(reward)),
                int(terminated),
                int(contact),
                repr(lander.position.x),
                repr(lander.position.y),
                repr(lander.angle),
                repr(lander.linearVelocity.x),
                repr(lander.linearVelocity.y),
                repr(lander.angularVelocity),
            ]
        )

    row(0, [twin.uniform(-1.0, 1.0) for _ in range(2)], (0.0, 0.0) if continuous else 0, obs, 0.0, False)
    contact_steps = 0
    for t in range(1, max_steps + 1):
        if continuous:
            action = np.array(CONTINUOUS_CYCLE[t % len(CONTINUOUS_CYCLE)], dtype=np.float32)
        else:
            action = DISCRETE_CYCLE[t % len(DISCRETE_CYCLE)]
        disp = [twin.uniform(-1.0, 1.0) for _ in range(2)]
        obs, reward, terminated, truncated, _ = env.step(action)
        row(t, disp, action, obs, reward, terminated)
        contact_steps += u.game_over or u.legs[0].ground_contact or u.legs[1].ground_contact
        if terminated or truncated or contact_steps > 2:  # the tests compare up to the first contact
            break
    env.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--episodes", type=int, default=3, help="per id; seeds 0..episodes-1")
    parser.add_argument("--max-steps", type=int, default=120)
    args = parser.parse_args()
    with open(args.out, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            [
                "episode",
                "continuous",
                "step",
                *[f"h_{k}" for k in range(12)],
                "force_x",
                "force_y",
                "disp_0",
                "disp_1",
                "action_0",
                "action_1",
                *[f"obs_{k}" for k in range(8)],
                "reward",
                "terminated",
                "contact",
                "lander_x",
                "lander_y",
                "lander_angle",
                "lander_vx",
                "lander_vy",
                "lander_omega",
            ]
        )
        episode = 0
        for continuous in (False, True):
            for seed in range(args.episodes):
                record(writer, episode, continuous, seed, args.max_steps)
                episode += 1


if __name__ == "__main__":
    main()
