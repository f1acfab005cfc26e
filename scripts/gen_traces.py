#!/usr/bin/env python3
# gen_traces.py - generate per-step reference traces with Gymnasium itself, for
# the conformance tests of cugym's C++/CUDA envs. Developer tool only: nothing in
# cugym imports or runs this at build or run time.
#
# Regenerate (from the repository root; needs `pip install gymnasium numpy`):
#   python3 scripts/gen_traces.py --all                      # every env below
#   python3 scripts/gen_traces.py --env CartPole-v1 \
#       --out tests/fixtures/traces/CartPole-v1.csv [--seed 0] \
#       [--rollout-steps N] [--box-samples M]
# Default N/M are per env (EnvSpec.default_rows: 600/400 for the 2-D-state envs,
# 360/300 for CartPole, 300/260 for Acrobot, 540/360 for MountainCarContinuous
# and Pendulum) so each full-precision fixture stays below ~165 KB.
# The output is deterministic for a given seed, Gymnasium/NumPy version and CPU
# (NumPy's float64 sin/cos can differ by 1 ulp between CPUs, numpy/numpy#23523;
# Pendulum and MountainCarContinuous also depend on the NumPy major version: under
# NumPy 2's promotion rules, NEP 50, float32 op Python float stays float32, where
# NumPy 1 gave float64).
#
# CSV format: one header row, then one row per transition (one env.step call on
# the UNWRAPPED env: no TimeLimit truncation, no passive checker). Columns:
#   state_0..state_{S-1}      env.unwrapped.state before the step (Gymnasium's order)
#   action                    Discrete action space: an integer
#   action_0..action_{A-1}    ... or, for a Box action space, the float32 action
#   reward                    float
#   terminated                0 or 1
#   next_state_0..{S-1}       env.unwrapped.state after the step
#   next_obs_0..{O-1}         the (float32) observation returned by step
# Floats are written with repr(), the shortest text that round-trips the exact
# float64 value (float32 values are written as their exact float64 widening).
# Every row is an independent transition: a test sets the state, applies the
# action and compares. Rows come from two sources:
#   1. rollouts: reset(seed=seed+k) for episode k, then uniformly random actions
#      (numpy Generator seeded from --seed) until terminated or a per-env step
#      cap; episodes are chained until --rollout-steps rows have been written.
#   2. "wide box" samples: the state is set directly to a random point of a box
#      around the termination thresholds and one random action is applied.
# Rows whose termination flag (or a wrap/clip discontinuity) is ambiguous at
# float32 precision are skipped, because cugym steps in float32 while Gymnasium
# steps in float64: near a threshold the two may legitimately disagree.
#
# To add an env: add an EnvSpec entry to SPECS (state dimension, wide box,
# action sampler, optional ambiguity filter / pre-step hook).

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

try:
    import gymnasium as gym
except ImportError:  # pragma: no cover
    sys.exit("gen_traces.py needs gymnasium: pip install gymnasium numpy")

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DIR = os.path.join("tests", "fixtures", "traces")

# Distance to a threshold below which float32 stepping may flip the outcome.
AMBIGUITY_EPS = 1e-5


@dataclass(frozen=True)
class EnvSpec:
    env_id: str
    state_dim: int
    box_low: Sequence[float]  # wide box the state is drawn from (uniform per dim)
    box_high: Sequence[float]
    # sample_action(rng, env) -> int (Discrete) or float32 ndarray (Box)
    sample_action: Callable[[np.random.Generator, gym.Env], object]
    # ambiguous(state, action, next_state) -> True to skip the row
    ambiguous: Callable[[np.ndarray, object, np.ndarray], bool] | None = None
    # called on the unwrapped env right before each box step
    before_box_step: Callable[[gym.Env], None] | None = None
    rollout_cap: int = 200  # max steps per rollout episode
    # default (rollout rows, box rows): sized so the fixture stays ~150-165 KB
    # (a full-precision CartPole row is ~250 bytes, an Acrobot row ~280)
    default_rows: tuple = (600, 400)
    box_state_float32: bool = False  # box state is a float32 array (env stores f32 state)


def discrete_action(rng, env):
    return int(rng.integers(env.action_space.n))


def box_action(low, high):
    def sample(rng, env):
        shape = env.action_space.shape
        return rng.uniform(low, high, size=shape).astype(np.float32)

    return sample


def near(value, threshold):
    return abs(value - threshold) < AMBIGUITY_EPS


# --- CartPole-v1 ---------------------------------------------------------------
CARTPOLE_X_THRESHOLD = 2.4
CARTPOLE_THETA_THRESHOLD = 12 * 2 * math.pi / 360


def cartpole_ambiguous(state, action, ns):
    # terminated = |x| > 2.4 or |theta| > 12 deg, evaluated on the float64 state.
    # A float32 implementation may land on the other side if within ~1e-5.
    return near(abs(ns[0]), CARTPOLE_X_THRESHOLD) or near(abs(ns[2]), CARTPOLE_THETA_THRESHOLD)


def cartpole_before_box_step(env):
    # Forget an earlier termination so the step returns reward 1.0 (no warning).
    env.steps_beyond_terminated = None


# --- MountainCar-v0 / MountainCarContinuous-v0 -----------------------------------
def mountain_car_ambiguous(goal, velocity_delta):
    def ambiguous(state, action, ns):
        # terminated = position >= goal and velocity >= 0
        pos, vel = float(ns[0]), float(ns[1])
        if near(pos, goal) and vel >= -AMBIGUITY_EPS:
            return True
        if pos >= goal - AMBIGUITY_EPS and near(vel, 0.0):
            return True
        # Left wall: the position clip at -1.2 (and the velocity reset to 0 that
        # follows) is a discontinuity; recompute the unclipped position.
        v = float(state[1]) + velocity_delta(action) - 0.0025 * math.cos(3 * float(state[0]))
        v = min(max(v, -0.07), 0.07)
        return near(float(state[0]) + v, -1.2)

    return ambiguous


# --- Acrobot-v1 ------------------------------------------------------------------
def acrobot_ambiguous(state, action, ns):
    t1, t2 = float(ns[0]), float(ns[1])
    if near(-math.cos(t1) - math.cos(t2 + t1), 1.0):
        return True
    # Angles are wrapped into [-pi, pi]: near +-pi the state may jump by 2*pi.
    return near(abs(t1), math.pi) or near(abs(t2), math.pi)


# --- Pendulum-v1 -----------------------------------------------------------------
# Never terminates. Its reward uses angle_normalize(th) on the pre-step angle,
# which is continuous in |.|, so nothing is ambiguous.

SPECS = {
    s.env_id: s
    for s in [
        EnvSpec(
            env_id="CartPole-v1",
            state_dim=4,
            # x, x_dot, theta, theta_dot: straddles x = +-2.4 and theta = +-0.2094
            box_low=(-2.6, -3.0, -0.25, -3.5),
            box_high=(2.6, 3.0, 0.25, 3.5),
            sample_action=discrete_action,
            ambiguous=cartpole_ambiguous,
            before_box_step=cartpole_before_box_step,
            rollout_cap=500,
            default_rows=(360, 300),
        ),
        EnvSpec(
            env_id="MountainCar-v0",
            state_dim=2,
            # position, velocity: the whole valid domain (goal at 0.5)
            box_low=(-1.2, -0.07),
            box_high=(0.6, 0.07),
            sample_action=discrete_action,
            ambiguous=mountain_car_ambiguous(0.5, lambda a: (a - 1) * 0.001),
            rollout_cap=200,
        ),
        EnvSpec(
            env_id="MountainCarContinuous-v0",
            state_dim=2,
            box_low=(-1.2, -0.07),
            box_high=(0.6, 0.07),
            # slightly wider than the action space: the env clips the force but
            # its reward penalty uses the unclipped action
            sample_action=box_action(-1.1, 1.1),
            ambiguous=mountain_car_ambiguous(0.45, lambda a: min(max(float(a[0]), -1.0), 1.0) * 0.0015),
            rollout_cap=200,
            box_state_float32=True,  # the env stores its state as float32 after a step
            default_rows=(540, 360),
        ),
        EnvSpec(
            env_id="Acrobot-v1",
            state_dim=4,
            # theta1, theta2, dtheta1, dtheta2: all angles, full velocity bounds
            box_low=(-math.pi, -math.pi, -4 * math.pi, -9 * math.pi),
            box_high=(math.pi, math.pi, 4 * math.pi, 9 * math.pi),
            sample_action=discrete_action,
            ambiguous=acrobot_ambiguous,
            rollout_cap=200,
            default_rows=(300, 260),
        ),
        EnvSpec(
            env_id="Pendulum-v1",
            state_dim=2,
            # theta beyond +-pi exercises angle_normalize; thetadot up to the clip
            box_low=(-1.5 * math.pi, -8.0),
            box_high=(1.5 * math.pi, 8.0),
            sample_action=box_action(-2.2, 2.2),  # a little beyond +-2 to hit the clip
            rollout_cap=200,
            default_rows=(540, 360),
        ),
    ]
}


def fmt(x):
    return repr(float(x))


class TraceWriter:
    def __init__(self, env, spec):
        self.env = env
        self.spec = spec
        self.rows = []
        self.skipped = 0
        self.discrete = isinstance(env.action_space, gym.spaces.Discrete)
        self.obs_dim = int(np.prod(env.observation_space.shape))
        self.act_dim = None if self.discrete else int(np.prod(env.action_space.shape))

    def header(self):
        s, o = self.spec.state_dim, self.obs_dim
        cols = [f"state_{i}" for i in range(s)]
        cols += ["action"] if self.discrete else [f"action_{i}" for i in range(self.act_dim)]
        cols += ["reward", "terminated"]
        cols += [f"next_state_{i}" for i in range(s)]
        cols += [f"next_obs_{i}" for i in range(o)]
        return ",".join(cols)

    def get_state(self):
        st = np.array(self.env.state, dtype=np.float64).reshape(-1)
        assert st.shape == (self.spec.state_dim,), st.shape
        return st

    def step(self, action):
        """Step the env once; record the row unless ambiguous. Returns terminated."""
        state = self.get_state()
        obs, reward, terminated, truncated, _ = self.env.step(action)
        next_state = self.get_state()
        if self.spec.ambiguous is not None and self.spec.ambiguous(state, action, next_state):
            self.skipped += 1
            return bool(terminated)
        obs = np.asarray(obs).reshape(-1)
        assert obs.shape == (self.obs_dim,)
        cells = [fmt(v) for v in state]
        if self.discrete:
            cells.append(str(int(action)))
        else:
            cells += [fmt(v) for v in np.asarray(action).reshape(-1)]
        cells.append(fmt(reward))
        cells.append("1" if terminated else "0")
        cells += [fmt(v) for v in next_state]
        cells += [fmt(v) for v in obs]
        self.rows.append(",".join(cells))
        return bool(terminated)


def generate(spec, seed, rollout_steps, box_samples):
    env = gym.make(spec.env_id).unwrapped
    env.action_space.seed(seed)  # unused (actions come from rng), but deterministic
    rollout_ss, box_ss = np.random.SeedSequence(seed).spawn(2)
    w = TraceWriter(env, spec)

    # 1. rollouts
    rng = np.random.default_rng(rollout_ss)
    episode = 0
    while len(w.rows) < rollout_steps:
        env.reset(seed=seed + episode)
        episode += 1
        for _ in range(spec.rollout_cap):
            if len(w.rows) >= rollout_steps:
                break
            if w.step(spec.sample_action(rng, env)):
                break
    n_rollout = len(w.rows)

    # 2. wide box
    rng = np.random.default_rng(box_ss)
    low = np.asarray(spec.box_low, dtype=np.float64)
    high = np.asarray(spec.box_high, dtype=np.float64)
    while len(w.rows) < n_rollout + box_samples:
        st = rng.uniform(low, high)
        # Same dtype as the env's own state after a step (it changes the
        # arithmetic under NumPy 2 for MountainCarContinuous).
        env.state = st.astype(np.float32 if spec.box_state_float32 else np.float64)
        if spec.before_box_step is not None:
            spec.before_box_step(env)
        w.step(spec.sample_action(rng, env))
    env.close()
    return w, n_rollout, episode


def write_fixture(spec, out, seed, rollout_steps, box_samples):
    w, n_rollout, episodes = generate(spec, seed, rollout_steps, box_samples)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", newline="\n") as f:
        f.write(w.header() + "\n")
        for r in w.rows:
            f.write(r + "\n")
    n_term = sum(1 for r in w.rows if r.split(",")[w.header().split(",").index("terminated")] == "1")
    print(
        f"{spec.env_id}: {len(w.rows)} rows ({n_rollout} rollout from {episodes} episodes, "
        f"{len(w.rows) - n_rollout} box; {n_term} terminated; {w.skipped} ambiguous skipped), "
        f"{os.path.getsize(out)} bytes -> {out}"
    )


def main(argv=None):
    p = argparse.ArgumentParser(description="Generate Gymnasium reference traces (CSV) for cugym tests.")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--env", choices=sorted(SPECS), help="env id")
    g.add_argument("--all", action="store_true", help=f"regenerate every known env into {DEFAULT_DIR}/<id>.csv")
    p.add_argument("--out", help=f"output CSV (default {DEFAULT_DIR}/<id>.csv under the repo root)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rollout-steps", type=int, help="rollout rows (default: per env, 600 for most)")
    p.add_argument("--box-samples", type=int, help="wide-box rows (default: per env, 400 for most)")
    a = p.parse_args(argv)
    if a.all and a.out:
        p.error("--out cannot be used with --all")
    if a.seed < 0:
        p.error("--seed must be >= 0")

    print(f"gymnasium {gym.__version__}, numpy {np.__version__}")
    ids = sorted(SPECS) if a.all else [a.env]
    for env_id in ids:
        out = a.out or os.path.join(REPO_ROOT, DEFAULT_DIR, f"{env_id}.csv")
        spec = SPECS[env_id]
        rollout = spec.default_rows[0] if a.rollout_steps is None else a.rollout_steps
        box = spec.default_rows[1] if a.box_samples is None else a.box_samples
        write_fixture(spec, out, a.seed, rollout, box)


if __name__ == "__main__":
    main()
