#!/usr/bin/env python3
"""Step-by-step conformance of the MinAtar plugin against the oracle, PyPI minatar 1.0.15.

For each game that `minatar_replay --list` names, and for each configuration in CONFIGS, this plays
the oracle's `minatar.Environment` (seed, then reset) for thousands of acts over many episodes with
a mix of random and game-aware policies, logs every value its shared RandomState hands out (the
sticky draw and the game's draws, in call order: minatar/environment.py's act() then the game's),
and writes
a trace: per reset and per act the draws, reward, terminal, the wrapper's last action and the
observation bits. `minatar_replay TRACE` then replays the trace through MinAtarEnv with the
recorded draws and compares everything after every act. Mid-episode resets and acts after the end
(the oracle's `(0, True)`) are in the traces too.

Exits 77 (a ctest skip) when the oracle cannot be imported.
usage: oracle_replay.py --replay BIN --out DIR [--games g1,g2] [--configs v1,v0] [--acts N]
"""

import argparse
import logging
import os
import subprocess
import sys
import time

try:
    import numpy as np

    # The oracle's display (matplotlib and seaborn: 3 s of its 3.1 s import) is never used here, and
    # MinAtar runs without it: its environment.py catches their ImportError (and logs a warning).
    sys.modules.setdefault("matplotlib", None)
    sys.modules.setdefault("seaborn", None)
    logging.disable(logging.WARNING)
    from minatar import Environment

    logging.disable(logging.NOTSET)
except ImportError as e:
    print(f"SKIP: the oracle is not importable ({e}); pip install minatar==1.0.15 into CUGYM_TEST_PYTHON")
    sys.exit(77)

# (tag, minimal action set, sticky_action_prob, difficulty_ramping, share of --acts)
CONFIGS = [
    ("v1", True, 0.1, True, 1.0),
    ("v0", False, 0.1, True, 1.0),
    ("v1-plain", True, 0.0, False, 0.25),
]


class LoggedRandom:
    """Hands out the wrapped RandomState's rand/randint values and logs each scalar drawn."""

    def __init__(self, rs):
        self._rs = rs
        self.log = []

    def rand(self, *size):
        v = self._rs.rand(*size)
        for x in np.ravel(v):
            self.log.append(f"u {float(x)!r}")
        return v

    def randint(self, low, high=None, size=None):
        v = self._rs.randint(low, high, size)
        lo, hi = (0, low) if high is None else (low, high)
        for x in np.ravel(v):
            self.log.append(f"i {int(lo)} {int(hi)} {int(x)}")
        return v

    def __getattr__(self, name):  # any other RandomState call would go unlogged
        raise AttributeError(f"the oracle called RandomState.{name}, which the trace cannot record")

    def take(self):
        out, self.log = self.log, []
        return out


def obs_hex(state):
    bits = np.asarray(state, dtype=np.uint8).reshape(-1)
    pad = (-len(bits)) % 4
    bits = np.concatenate([bits, np.zeros(pad, np.uint8)]).reshape(-1, 4)
    nibbles = bits[:, 0] * 8 + bits[:, 1] * 4 + bits[:, 2] * 2 + bits[:, 3]
    return "".join("0123456789abcdef"[n] for n in nibbles)


# Game-aware policies: full-set actions from the observation, so episodes run long enough to reach
# brick refills, many crossings, ramping waves. Games without one here play at random.
def breakout_policy(obs, rng):
    paddle = np.argmax(obs[9, :, 0])
    ball = np.argwhere(obs[:, :, 1])
    if len(ball) == 0:
        return 0
    bx = ball[0][1]
    return 1 if bx < paddle else 3 if bx > paddle else 0


def freeway_policy(obs, rng):
    return 2 if rng.random() < 0.8 else int(rng.choice([0, 4]))


def space_invaders_policy(obs, rng):
    # Dodge bullets and low aliens, line up under the nearest column (ahead of the last few aliens,
    # which move every act or two) and fire: clears waves now and then, so ramping comes up.
    cannon = int(np.argmax(obs[9, :, 0]))

    def danger(x):
        return obs[6:9, x, 5].any() or obs[8:10, x, 1].any()

    if danger(cannon):
        for x in (cannon - 1, cannon + 1):
            if 0 <= x < 10 and not danger(x):
                return 1 if x < cannon else 3
    aliens = obs[:, :, 1]
    cols = np.flatnonzero(aliens.any(axis=0))
    if len(cols) == 0:
        return 5
    if aliens.sum() <= 3:
        cols = np.clip(cols + (-1 if obs[:, :, 2].any() else 1), 0, 9)
    target = cols[np.argmin(np.abs(cols - cannon))]
    if target == cannon or danger(cannon + (1 if target > cannon else -1)):
        return 5
    return 1 if target < cannon else 3


def _step(x, y, a):
    return {1: (x - 1, y), 2: (x, y - 1), 3: (x + 1, y), 4: (x, y + 1)}.get(a, (x, y))


def asterix_policy(obs, rng):
    # Stay off cells an enemy can reach next act (its own cell and the one ahead of it); go for gold.
    py, px = np.argwhere(obs[:, :, 0])[0]
    danger = np.zeros((10, 10), bool)
    for y, x in np.argwhere(obs[:, :, 1]):
        danger[y, x] = True
        for dx in (-1, 1):  # ahead = away from the trail
            if 0 <= x - dx <= 9 and obs[y, x - dx, 2]:
                if 0 <= x + dx <= 9:
                    danger[y, x + dx] = True
    gold = np.argwhere(obs[:, :, 3])
    moves = []
    for a in (0, 1, 2, 3, 4):
        x, y = _step(px, py, a)
        x, y = min(max(x, 0), 9), min(max(y, 1), 8)
        if danger[y, x]:
            continue
        d = min((abs(gy - y) + abs(gx - x) for gy, gx in gold), default=0)
        moves.append((d + rng.random() * 0.5, a))
    return min(moves)[1] if moves else int(rng.integers(5))


def seaquest_policy(obs, rng):
    # Pick up divers, surface with at least one when oxygen runs low or with six, shoot what is ahead,
    # and keep off cells an enemy, its bullet or the cell ahead of them occupy.
    sy, sx = np.argwhere(obs[:, :, 0])[0]
    facing_right = sx > 0 and obs[sy, sx - 1, 1]
    oxygen = int(obs[9, :, 7].sum())
    carried = int(obs[9, :, 8].sum())
    danger = np.zeros((10, 10), bool)
    for c in (4, 5, 6):
        for y, x in np.argwhere(obs[:, :, c]):
            danger[y, max(x - 1, 0) : x + 2] = True
    if carried > 0 and (oxygen <= 3 or carried == 6):
        target = (0, sx)
    else:
        divers = np.argwhere(obs[:, :, 9])
        if len(divers):
            target = tuple(min(divers, key=lambda d: abs(d[0] - sy) + abs(d[1] - sx)))
        else:
            target = (max(sy, 3), int(rng.integers(10)))
    ahead = obs[sy, sx + 1 :, 5:7].any() if facing_right else obs[sy, :sx, 5:7].any()
    if ahead and rng.random() < 0.7:
        return 5
    moves = []
    for a in (0, 1, 2, 3, 4):
        x, y = _step(sx, sy, a)
        x, y = min(max(x, 0), 9), min(max(y, 0), 8)
        if danger[y, x] or (y == 0 and carried == 0 and sy > 0):
            continue
        moves.append((abs(target[0] - y) + abs(target[1] - x) + rng.random() * 0.5, a))
    return min(moves)[1] if moves else 5


POLICIES = {
    "asterix": asterix_policy,
    "breakout": breakout_policy,
    "freeway": freeway_policy,
    "seaquest": seaquest_policy,
    "space_invaders": space_invaders_policy,
}


def write_trace(path, game, minimal, sticky, ramping, acts, seed):
    env = Environment(game, sticky_action_prob=sticky, difficulty_ramping=ramping)
    env.seed(seed)
    rand = LoggedRandom(env.random)
    env.random = rand
    env.env.random = rand
    action_set = list(env.minimal_action_set()) if minimal else list(range(6))
    rng = np.random.default_rng(seed + 1)
    policy = POLICIES.get(game)
    lines = [f"game {game} minimal {int(minimal)} sticky {sticky!r} ramping {int(ramping)}"]

    def reset():
        env.reset()
        draws = rand.take()
        lines.append(f"R {env.last_action} {len(draws)} {' '.join(draws)} {obs_hex(env.state())}".replace("  ", " "))

    reset()
    episodes, ended, after_end, eps, longest, t_len = 1, False, 0, 1.0, 0, 0
    for _ in range(acts):
        if ended:
            # Sometimes act on after the end (the oracle answers (0, True)), then start over.
            if after_end < 2 and rng.random() < 0.1:
                after_end += 1
            else:
                reset()
                episodes += 1
                ended, after_end, t_len = False, 0, 0
                eps = 1.0 if episodes % 2 == 1 or policy is None else 0.05
        elif episodes % 5 == 0 and t_len > 5 and rng.random() < 0.01:  # as VectorEnv.ResetMasked can
            reset()
            episodes += 1
            t_len = 0
        if policy is not None and rng.random() >= eps:
            full = policy(env.state(), rng)
            a = action_set.index(full) if full in action_set else 0
        else:
            a = int(rng.integers(len(action_set)))
        reward, terminal = env.act(action_set[a])
        t_len += 1
        longest = max(longest, t_len)
        draws = rand.take()
        body = f"A {a} {int(reward)} {int(bool(terminal))} {env.last_action} {len(draws)} {' '.join(draws)}"
        lines.append(f"{body.rstrip()} {obs_hex(env.state())}")
        ended = ended or bool(terminal)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return episodes, longest


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replay", required=True, help="the minatar_replay program")
    parser.add_argument("--out", required=True, help="folder for the traces")
    parser.add_argument("--games", default="", help="comma-separated subset of the games minatar_replay knows")
    parser.add_argument("--acts", type=int, default=6000, help="acts per game and configuration")
    parser.add_argument("--configs", default="", help="comma-separated subset of " + ",".join(c[0] for c in CONFIGS))
    args = parser.parse_args()
    known = subprocess.run([args.replay, "--list"], check=True, capture_output=True, text=True).stdout.split()
    games = [g for g in args.games.split(",") if g] or known
    for g in games:
        if g not in known:
            print(f"minatar_replay does not know the game '{g}' (it knows: {' '.join(known)})")
            return 2
    os.makedirs(args.out, exist_ok=True)
    tags = [t for t in args.configs.split(",") if t] or [c[0] for c in CONFIGS]
    configs = [(k, c) for k, c in enumerate(CONFIGS) if c[0] in tags]
    if len(configs) != len(tags):
        print(f"unknown configuration in '{args.configs}' (known: {' '.join(c[0] for c in CONFIGS)})")
        return 2
    failed = 0
    for g in games:
        for k, (tag, minimal, sticky, ramping, share) in configs:
            t0 = time.time()
            path = os.path.join(args.out, f"{g}-{tag}.trace")
            episodes, longest = write_trace(path, g, minimal, sticky, ramping, int(args.acts * share), 1000 + k)
            result = subprocess.run([args.replay, path], capture_output=True, text=True)
            status = "ok" if result.returncode == 0 else "MISMATCH"
            print(
                f"{g} {tag}: {episodes} episodes (longest {longest} acts), {status} "
                f"({time.time() - t0:.1f} s) {result.stdout.strip()}"
            )
            if result.returncode != 0:
                print(result.stderr)
                failed += 1
    print(f"{failed} of {len(games) * len(configs)} traces disagree with the oracle")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
