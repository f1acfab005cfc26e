"""Statistical conformance of cugym's LunarLander-v3 and LunarLanderContinuous-v3 with Gymnasium's
(the oracle, run here on pybox2d's Box2D 2.3; cugym runs on Box2D 2.4, docs/benchmarks.md,
LunarLander). The two use different random streams, so episodes are compared as samples:

- uniform random actions, 2000 episodes per side: the return distributions by a two-sample
  Kolmogorov-Smirnov test (p > 0.01), their means within 3 standard errors, and the mean |angle|
  one step before the end (the observation the last step started from) within 0.03 rad or 3
  standard errors of the difference, whichever is larger. That standard error is about 0.025 rad
  at 2000 episodes a side (|angle| has a std of about 0.78 rad), so 0.03 alone would fail by
  chance; the gap this guards against was 0.15 rad (Box2D 2.4's own joint limits, issue 27).
- Gymnasium's heuristic() (cugym's side: the same formulas vectorized, checked against it below),
  300 Gymnasium and 600 cugym episodes: means within 3 standard errors.

With Box2D 2.4's own joint limits (cugym before issue 27) the LunarLander-v3 random test fails:
means 4.3 standard errors apart, KS p 0.006, angle gap 0.126 rad against a bound of 0.086.
Seeds are fixed on both sides, so a run is deterministic. Gymnasium's side (22 s of each random
test's 26 s on a 2-core EPYC) is recorded in tests/fixtures/lunar_lander/gymnasium_episodes.csv,
written by this file run as a script (--record); every run replays the first episodes of each
recorded sample in Gymnasium and requires the same figures, so a Gymnasium that moved on, or a
stale file, fails here rather than being compared against.
"""

import argparse
import csv
import math
import sys
from pathlib import Path

import numpy as np
import pytest

box2d = pytest.importorskip("Box2D")
gymnasium = pytest.importorskip("gymnasium")
cugym = pytest.importorskip("cugym")
lunar_lander = pytest.importorskip("gymnasium.envs.box2d.lunar_lander")
if "LunarLander-v3" not in cugym.env_ids():
    pytest.skip("cugym was built without Box2D (CUGYM_BOX2D=OFF)", allow_module_level=True)

IDS = ["LunarLander-v3", "LunarLanderContinuous-v3"]
RANDOM_EPISODES = 2000
HEURISTIC_EPISODES = {"Gymnasium": 300, "cugym": 600}
CUGYM_ENVS = 50
RECORDED = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "lunar_lander" / "gymnasium_episodes.csv"
REPLAYED = 10  # episodes of each recorded sample replayed in Gymnasium by every run


def heuristic_batch(s, continuous):
    """Gymnasium's heuristic() (lunar_lander.py) on an (N, 8) float32 batch, in float32 as NumPy 2
    computes it on one float32 observation."""
    f = np.float32
    angle_targ = np.clip(s[:, 0] * f(0.5) + s[:, 2] * f(1.0), f(-0.4), f(0.4))
    hover_targ = f(0.55) * np.abs(s[:, 0])
    angle_todo = (angle_targ - s[:, 4]) * f(0.5) - s[:, 5] * f(1.0)
    hover_todo = (hover_targ - s[:, 1]) * f(0.5) - s[:, 3] * f(0.5)
    contact = (s[:, 6] != 0) | (s[:, 7] != 0)
    angle_todo = np.where(contact, f(0), angle_todo)
    hover_todo = np.where(contact, -s[:, 3] * f(0.5), hover_todo)
    if continuous:
        return np.clip(np.stack([hover_todo * f(20) - f(1), -angle_todo * f(20)], axis=1), f(-1), f(1))
    a = np.zeros(len(s), np.int32)
    a[angle_todo > 0.05] = 1
    a[angle_todo < -0.05] = 3
    a[(hover_todo > np.abs(angle_todo)) & (hover_todo > 0.05)] = 2
    return a


def random_actions(continuous, n, rng):
    if continuous:
        return rng.uniform(-1, 1, size=(n, 2)).astype(np.float32)
    return rng.integers(0, 4, size=n).astype(np.int32)


def gymnasium_episodes(env_id, policy, count):
    """Returns and |angle| one step before the end of episodes k = 0..count-1, reset(seed=10**6 + k)."""
    env = gymnasium.make(env_id)
    continuous = env_id != "LunarLander-v3"
    rng = np.random.default_rng(2027)
    returns, angles = np.zeros(count), np.zeros(count)
    for k in range(count):
        obs, _ = env.reset(seed=10**6 + k)
        done = False
        while not done:
            before = obs
            if policy == "heuristic":
                action = lunar_lander.heuristic(env, obs)
            else:
                action = random_actions(continuous, 1, rng)[0]
            obs, reward, terminated, truncated, _ = env.step(action)
            returns[k] += reward
            done = terminated or truncated
        angles[k] = abs(float(before[4]))
    env.close()
    return returns, angles


def recorded_versions():
    """The first line of the recording: '# gymnasium X, Box2D Y, ...'."""
    with open(RECORDED) as f:
        return f.readline().strip("# \n")


def recorded_episodes(env_id, policy):
    """Gymnasium's returns and |angle| as gymnasium_episodes gave them when the file was recorded."""
    returns, angles = [], []
    with open(RECORDED) as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            if row["env_id"] == env_id and row["policy"] == policy:
                assert int(row["episode"]) == len(returns), f"{RECORDED}: episodes out of order"
                returns.append(float(row["return"]))
                angles.append(float(row["abs_angle_before_end"]))
    return np.array(returns), np.array(angles)


def record(path):
    """Writes Gymnasium's episodes of every sample the tests compare against."""
    with open(path, "w", newline="") as f:
        f.write(f"# gymnasium {gymnasium.__version__}, Box2D {box2d.__version__}, numpy {np.__version__}; ")
        f.write("written by python/tests/test_lunar_lander_gymnasium.py --record\n")
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["env_id", "policy", "episode", "return", "abs_angle_before_end"])
        for env_id in IDS:
            for policy, count in (("random", RANDOM_EPISODES), ("heuristic", HEURISTIC_EPISODES["Gymnasium"])):
                returns, angles = gymnasium_episodes(env_id, policy, count)
                for k in range(count):
                    out.writerow([env_id, policy, k, f"{returns[k]:.12g}", f"{angles[k]:.9g}"])  # angles: float32


def cugym_episodes(env_id, policy, count):
    """The same figures for the first count / CUGYM_ENVS episodes of each of CUGYM_ENVS envs (the
    first ones, so that short episodes are not favoured)."""
    per_env = -(-count // CUGYM_ENVS)
    envs = cugym.make_vec(env_id, CUGYM_ENVS, autoreset_mode="SameStep")  # an episode per step that ends
    continuous = env_id != "LunarLander-v3"
    rng = np.random.default_rng(2027)
    obs, _ = envs.reset(seed=2027)
    running = np.zeros(CUGYM_ENVS)
    finished = np.zeros(CUGYM_ENVS, np.int64)
    returns, angles = [], []
    while (finished < per_env).any():
        before = obs
        if policy == "heuristic":
            action = heuristic_batch(obs, continuous)
        else:
            action = random_actions(continuous, CUGYM_ENVS, rng)
        obs, reward, terminated, truncated, _ = envs.step(action)
        running += reward
        for i in np.flatnonzero(terminated | truncated):
            if finished[i] < per_env:
                returns.append(running[i])
                angles.append(abs(float(before[i, 4])))
            finished[i] += 1
            running[i] = 0.0
    envs.close()
    return np.array(returns), np.array(angles)


def ks_two_sample(a, b):
    """Two-sample Kolmogorov-Smirnov statistic D and its asymptotic p-value: the Kolmogorov
    distribution Q(x) = 2 sum_k (-1)^(k-1) exp(-2 k^2 x^2) at x = (sqrt(m) + 0.12 + 0.11 /
    sqrt(m)) D, m = n_a n_b / (n_a + n_b) (Stephens' small-sample correction, as in Numerical
    Recipes' kstwo)."""
    a, b = np.sort(a), np.sort(b)
    values = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, values, side="right") / len(a)
    cdf_b = np.searchsorted(b, values, side="right") / len(b)
    d = float(np.max(np.abs(cdf_a - cdf_b)))
    m = len(a) * len(b) / (len(a) + len(b))
    x = (math.sqrt(m) + 0.12 + 0.11 / math.sqrt(m)) * d
    if x < 0.2:
        return d, 1.0
    p = 2 * sum((-1) ** (k - 1) * math.exp(-2 * k * k * x * x) for k in range(1, 101))
    return d, min(max(p, 0.0), 1.0)


def standard_error(a, b):
    """Standard error of the difference of the two sample means."""
    return math.sqrt(np.var(a, ddof=1) / len(a) + np.var(b, ddof=1) / len(b))


def mean_z(a, b):
    """Difference of the means in standard errors of that difference."""
    return (np.mean(b) - np.mean(a)) / standard_error(a, b)


def test_ks_statistic_and_p_value():
    rng = np.random.default_rng(0)
    same = ks_two_sample(rng.normal(size=2000), rng.normal(size=2000))
    shifted = ks_two_sample(rng.normal(size=2000), rng.normal(0.2, 1, size=2000))
    assert same[1] > 0.05 and shifted[1] < 1e-6
    # Hand-checked: {1, 2, 3} against {2.5, 4}: the empirical CDFs differ by 2/3 at x = 2..2.5.
    d, p = ks_two_sample(np.array([1.0, 2.0, 3.0]), np.array([2.5, 4.0]))
    assert d == pytest.approx(2 / 3)
    assert 0 < p < 1


def test_heuristic_batch_is_gymnasiums():
    rng = np.random.default_rng(1)
    obs = rng.uniform(-1.5, 1.5, size=(500, 8)).astype(np.float32)
    obs[:, 6:] = rng.integers(0, 2, size=(500, 2)) * (rng.random((500, 1)) < 0.3)
    for env_id in IDS:
        env = gymnasium.make(env_id)
        ours = heuristic_batch(obs, env_id != "LunarLander-v3")
        theirs = np.array([lunar_lander.heuristic(env, o) for o in obs])
        np.testing.assert_array_equal(ours, theirs.astype(ours.dtype))


@pytest.mark.parametrize("policy", ["random", "heuristic"])
@pytest.mark.parametrize("env_id", IDS)
def test_the_recorded_episodes_are_what_gymnasium_gives(env_id, policy):
    returns, angles = recorded_episodes(env_id, policy)
    want = RANDOM_EPISODES if policy == "random" else HEURISTIC_EPISODES["Gymnasium"]
    assert len(returns) == want, f"{RECORDED} holds {len(returns)} {env_id} {policy} episodes, not {want}"
    live_returns, live_angles = gymnasium_episodes(env_id, policy, REPLAYED)
    hint = (
        f"Gymnasium {gymnasium.__version__} with Box2D {box2d.__version__} gives other episodes than the recording "
        f"({recorded_versions()}): record again with `python {Path(__file__).name} --record`"
    )
    np.testing.assert_allclose(live_returns, returns[:REPLAYED], rtol=1e-9, atol=1e-9, err_msg=hint)
    # The angles are float32 observations, recorded to the 9 digits that give back the same float32.
    np.testing.assert_array_equal(live_angles.astype(np.float32), angles[:REPLAYED].astype(np.float32), err_msg=hint)


@pytest.mark.parametrize("env_id", IDS)
def test_random_policy_returns_match_gymnasium(env_id):
    g_returns, g_angles = recorded_episodes(env_id, "random")
    c_returns, c_angles = cugym_episodes(env_id, "random", RANDOM_EPISODES)
    d, p = ks_two_sample(g_returns, c_returns)
    z = mean_z(g_returns, c_returns)
    angle_bound = max(0.03, 3 * standard_error(g_angles, c_angles))
    print(
        f"{env_id} random: return mean Gymnasium {g_returns.mean():.2f} cugym {c_returns.mean():.2f} "
        f"(z {z:+.2f}); KS D {d:.4f} p {p:.3f}; mean |angle| one step before the end "
        f"{g_angles.mean():.3f} / {c_angles.mean():.3f} rad (bound {angle_bound:.3f})"
    )
    assert len(g_returns) >= 2000 and len(c_returns) >= 2000
    assert p > 0.01
    assert abs(z) < 3
    assert abs(c_angles.mean() - g_angles.mean()) < angle_bound


@pytest.mark.parametrize("env_id", IDS)
def test_heuristic_returns_match_gymnasium(env_id):
    g_returns, _ = recorded_episodes(env_id, "heuristic")
    c_returns, _ = cugym_episodes(env_id, "heuristic", HEURISTIC_EPISODES["cugym"])
    z = mean_z(g_returns, c_returns)
    print(f"{env_id} heuristic: return mean Gymnasium {g_returns.mean():.2f} cugym {c_returns.mean():.2f} (z {z:+.2f})")
    assert abs(z) < 3


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Records Gymnasium's side of these tests (a few minutes).")
    parser.add_argument("--record", action="store_true", help=f"write {RECORDED}")
    if not parser.parse_args().record:
        parser.error("nothing to do: run it with --record, or run the tests with pytest")
    record(RECORDED)
    print(f"wrote {RECORDED}")
    sys.exit(0)
