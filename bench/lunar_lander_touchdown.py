#!/usr/bin/env python3
# lunar_lander_touchdown.py - record Gymnasium 1.4.0's LunarLander-v3 (pybox2d, Box2D 2.3) from
# a state just before a touchdown, so cugym (Box2D 2.4) can start from the same state and the two
# engines can be compared step by step through the contact (tests/envs/test_lunar_lander.cpp,
# TouchdownFromTheSameState). Developer tool only: nothing in cugym runs it.
#
#   python3 -m venv /tmp/gym && /tmp/gym/bin/pip install "gymnasium[box2d]==1.4.0"
#   /tmp/gym/bin/python bench/lunar_lander_touchdown.py \
#       --out tests/fixtures/lunar_lander/gymnasium_touchdown.csv
#
# Episode k: reset(seed=k), uniform random discrete actions from default_rng(10000 + k), until the
# step after which a leg or the hull first touches the moon (step c). The state after step c - 3
# (the bodies, nothing in contact yet) is the snapshot. Gymnasium is then restarted from it the way
# cugym's LunarLanderWorld::FromFlat does (a fresh world: same terrain, the bodies set to the
# snapshot, the joints created anew so no warm-start impulse carries over) and stepped on with the
# same actions and the same dispersion draws for up to --steps steps.
#
# One row per step; row step=0 is the snapshot (its per-step columns are the snapshot's values).
#   episode, step, smooth_y_0..10 (step 0 only, else nan), prev_shaping, action, disp_0, disp_1
#   (U(-1, 1) before the division by SCALE), reward, terminated, then for the hull and the two
#   legs x, y, angle, vx, vy, omega (Box2D's values), joint_0, joint_1 (the legs' revolute joint
#   angles), contact_0, contact_1, game_over, and the normal impulses of the last solve summed over
#   the touching contacts of the hull, leg 0, leg 1 (impulse_hull, impulse_0, impulse_1) with their
#   manifold point counts (points_hull, points_0, points_1).
import argparse
import csv

import gymnasium as gym
import numpy as np
from Box2D.b2 import revoluteJointDef
from gymnasium.envs.box2d import lunar_lander as ll

BODY = ["x", "y", "angle", "vx", "vy", "omega"]


class RecordingRng:
    """Gymnasium's np_random with every uniform draw logged (the dispersions)."""

    def __init__(self, generator):
        self.generator = generator
        self.log = []

    def uniform(self, low, high, size=None):
        value = self.generator.uniform(low, high, size)
        self.log.append(value)
        return value


def num(v):
    """Box2D's float32 values (and what is computed from them) to 9 significant digits."""
    return f"{v:.9g}"


def body_state(b):
    return [b.position.x, b.position.y, b.angle, b.linearVelocity.x, b.linearVelocity.y, b.angularVelocity]


def contact_impulses(body):
    total, points = 0.0, 0
    for edge in body.contacts:
        c = edge.contact
        if not c.touching:
            continue
        m = c.manifold
        points += m.pointCount
        total += sum(m.points[k].normalImpulse for k in range(m.pointCount))
    return total, points


def diagnostics(u):
    bodies = [u.lander, *u.legs]
    values = [v for b in bodies for v in body_state(b)]
    values += [u.legs[0].joint.angle, u.legs[1].joint.angle]
    values += [int(u.legs[0].ground_contact), int(u.legs[1].ground_contact), int(u.game_over)]
    impulses = [contact_impulses(b) for b in bodies]
    return values + [i for i, _ in impulses] + [p for _, p in impulses]


def restart(env_id, seed, snapshot, rng_state):
    """A fresh Gymnasium world on seed's terrain with the bodies set to snapshot, as FromFlat."""
    env = gym.make(env_id)
    env.reset(seed=seed)
    u = env.unwrapped
    for b, s in zip([u.lander, *u.legs], snapshot["bodies"]):
        b.position = (s[0], s[1])
        b.angle = s[2]
        b.linearVelocity = (s[3], s[4])
        b.angularVelocity = s[5]
        b.awake = True
    for leg, i in zip(u.legs, (-1, +1)):
        u.world.DestroyJoint(leg.joint)
        joint = revoluteJointDef(
            bodyA=u.lander,
            bodyB=leg,
            localAnchorA=(0, 0),
            localAnchorB=(i * ll.LEG_AWAY / ll.SCALE, ll.LEG_DOWN / ll.SCALE),
            enableMotor=True,
            enableLimit=True,
            maxMotorTorque=ll.LEG_SPRING_TORQUE,
            motorSpeed=+0.3 * i,
        )
        joint.referenceAngle = i * 0.05  # what pybox2d set at reset (leg angle - hull angle then)
        joint.lowerAngle, joint.upperAngle = (0.4, 0.9) if i == -1 else (-0.9, -0.4)
        leg.joint = u.world.CreateJoint(joint)
    # A new fixture makes the next Step look for new contact pairs first, as in a fresh world.
    u.moon.DestroyFixture(u.moon.CreateEdgeFixture(vertices=[(-50, -50), (-49, -50)], maskBits=0))
    u.prev_shaping = snapshot["prev_shaping"]
    generator = np.random.default_rng()
    generator.bit_generator.state = rng_state
    u.np_random = RecordingRng(generator)
    return env, u


def record(writer, episode, seed, steps, env_id="LunarLander-v3"):
    env = gym.make(env_id)
    env.reset(seed=seed)
    u = env.unwrapped
    actions = np.random.default_rng(10000 + seed).integers(0, 4, size=1000)
    history = []  # (state after step t, rng state after step t)
    contact_step = None
    for t in range(1, 1001):
        history.append(
            {
                "bodies": [body_state(b) for b in [u.lander, *u.legs]],
                "prev_shaping": u.prev_shaping,
                "rng": u.np_random.bit_generator.state,
            }
        )
        _, _, terminated, truncated, _ = env.step(int(actions[t - 1]))
        if u.game_over or u.legs[0].ground_contact or u.legs[1].ground_contact:
            contact_step = t
            break
        if terminated or truncated:
            break
    env.close()
    if contact_step is None or contact_step < 4:
        return False
    start = contact_step - 3  # the snapshot is the state after step `start`
    snapshot = history[start]  # history[t] is the state after step t (history[0] after reset)
    env, u = restart(env_id, seed, snapshot, snapshot["rng"])
    smooth_y = [p[0][1] for p in u.sky_polys] + [u.sky_polys[-1][1][1]]
    writer.writerow(
        [episode, 0, *map(num, smooth_y), num(u.prev_shaping), -1, "nan", "nan", 0, 0, *map(num, diagnostics(u))]
    )
    for t in range(1, steps + 1):
        action = int(actions[start + t - 1])
        u.np_random.log.clear()
        _, reward, terminated, truncated, _ = env.step(action)
        disp = u.np_random.log
        row = [episode, t, *["nan"] * 11, num(u.prev_shaping), action, *map(repr, disp), num(reward), int(terminated)]
        writer.writerow(row + [num(v) for v in diagnostics(u)])
        if terminated or truncated:
            break
    env.close()
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--episodes", type=int, default=60, help="touchdowns recorded")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=12, help="steps after the snapshot")
    args = parser.parse_args()
    names = [f"{part}_{k}" for part in ("hull", "leg0", "leg1") for k in BODY]
    with open(args.out, "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(
            [
                "episode",
                "step",
                *[f"smooth_y_{k}" for k in range(11)],
                "prev_shaping",
                "action",
                "disp_0",
                "disp_1",
                "reward",
                "terminated",
                *names,
                "joint_0",
                "joint_1",
                "contact_0",
                "contact_1",
                "game_over",
                "impulse_hull",
                "impulse_0",
                "impulse_1",
                "points_hull",
                "points_0",
                "points_1",
            ]
        )
        episode, seed = 0, args.first_seed
        while episode < args.episodes:
            episode += record(writer, episode, seed, args.steps)
            seed += 1


if __name__ == "__main__":
    main()
