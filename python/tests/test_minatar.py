"""The MinAtar plugin (shipped in the package, loaded on import) from Python: the five Gymnasium ids
with full_action_space as a keyword (ALE's), the old -v0 ids still loading with a note,
observations in the env's (10, 10, C) shape on every path that hands them out, Gymnasium's env
checker, rendering in the oracle's palette, greedy policies on shaped observations, and the
random policy's mean return against the `minatar` oracle (skipped when it is not installed)."""

import math
import warnings

import cugym
import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

CHANNELS = {"Asterix": 4, "Breakout": 4, "Freeway": 7, "Seaquest": 10, "SpaceInvaders": 6}
ACTIONS = {"Asterix": 5, "Breakout": 3, "Freeway": 3, "Seaquest": 6, "SpaceInvaders": 4}
IDS = [(game, full) for game in CHANNELS for full in (False, True)]  # full: full_action_space=True

# The oracle's colours per channel (minatar 1.0.15 on PyPI, environment.py display_state: black,
# then seaborn's color_palette("cubehelix", C), here as 8-bit values); black where no channel is set.
PALETTE = {
    4: [(22, 61, 78), (84, 121, 47), (208, 126, 147), (193, 202, 243)],
    6: [(26, 36, 65), (27, 97, 69), (105, 123, 48), (200, 123, 124), (205, 162, 224), (198, 225, 241)],
    7: [(27, 30, 59), (22, 83, 76), (68, 119, 49), (161, 121, 74), (212, 132, 169), (198, 180, 238), (203, 232, 240)],
    10: [
        (25, 18, 43),
        (23, 52, 76),
        (24, 91, 72),
        (60, 118, 50),
        (126, 122, 54),
        (188, 121, 103),
        (212, 134, 175),
        (202, 169, 231),
        (194, 210, 243),
        (214, 240, 239),
    ],
}


def make_vec(game, full=False, num_envs=8, **kwargs):
    if full:
        kwargs["full_action_space"] = True
    return gymnasium.make_vec(f"cugym/MinAtar-{game}-v1", num_envs=num_envs, **kwargs)


def actions(rng, game, full, n):
    return rng.integers(0, 6 if full else ACTIONS[game], n).astype(np.int32)


def test_the_five_ids_are_registered_with_both_action_sets():
    for game, full in IDS:
        name = f"cugym/MinAtar-{game}-v1"
        assert name in gymnasium.registry, name
        envs = make_vec(game, full, num_envs=3)
        c = CHANNELS[game]
        assert envs.single_observation_space == gymnasium.spaces.Box(0.0, 1.0, (10, 10, c), np.float32)
        assert envs.observation_space.shape == (3, 10, 10, c)
        assert envs.single_action_space == gymnasium.spaces.Discrete(6 if full else ACTIONS[game])
        envs.close()


def test_no_cugym_id_warns_when_made():
    """gymnasium.make and make_vec of every cugym id, MinAtar's with either action set, warn of
    nothing: no "out of date" (Gymnasium reads -v0 and -v1 as versions of one env), no other."""
    for env_id in cugym.env_ids():
        for options in [{}] + [{name: True} for name in cugym.env_options(env_id)]:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                gymnasium.make(f"cugym/{env_id}", **options).close()
                gymnasium.make_vec(f"cugym/{env_id}", num_envs=2, **options).close()
            assert [str(w.message) for w in caught] == [], (env_id, options)


@pytest.mark.parametrize("game", list(CHANNELS))
def test_full_action_space_keyword_gives_all_six_actions(game):
    """full_action_space=True (ALE's keyword) gives the six actions, False or none the game's
    minimal set; both through gymnasium.make, make_vec and cugym.make_vec."""
    assert cugym.env_options(f"MinAtar-{game}-v1") == ["full_action_space"]
    full = gymnasium.make(f"cugym/MinAtar-{game}-v1", full_action_space=True)
    assert full.action_space == gymnasium.spaces.Discrete(6)
    full.close()
    minimal = gymnasium.make(f"cugym/MinAtar-{game}-v1", full_action_space=False)
    assert minimal.action_space == gymnasium.spaces.Discrete(ACTIONS[game])
    minimal.close()
    envs = cugym.make_vec(f"MinAtar-{game}-v1", 4, full_action_space=True)
    assert envs.single_action_space == gymnasium.spaces.Discrete(6)
    envs.reset(seed=0)
    envs.step(np.full(4, 5, np.int32))  # fire: only in the full set for most games
    envs.close()


@pytest.mark.parametrize("game", list(CHANNELS))
def test_old_v0_ids_load_the_full_set_with_one_note(game):
    """MinAtar-<Game>-v0 (the full action set before the keyword) still loads, with cugym's one-line
    note naming what it is now, in place of Gymnasium's "out of date, upgrade to v1"."""
    for make in (
        lambda: gymnasium.make(f"cugym/MinAtar-{game}-v0"),
        lambda: gymnasium.make_vec(f"cugym/MinAtar-{game}-v0", num_envs=2),
        lambda: cugym.make_vec(f"MinAtar-{game}-v0", 2),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.filterwarnings("ignore", message=".*is out of date", category=DeprecationWarning)
            env = make()
        notes = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
        assert notes == [
            f"MinAtar-{game}-v0 (all six actions) is now MinAtar-{game}-v1 with full_action_space: name it "
            f"MinAtar-{game}-v1:full_action_space (CLI, configs) or pass full_action_space=True (Python)"
        ]
        assert "\n" not in notes[0]
        space = env.single_action_space if hasattr(env, "single_action_space") else env.action_space
        assert space == gymnasium.spaces.Discrete(6)
        env.close()


def test_unknown_options_are_one_clear_error():
    with pytest.raises(
        TypeError, match=r"'full_action_spaces'.*MinAtar-Breakout-v1 \(its options: full_action_space\)"
    ):
        gymnasium.make("cugym/MinAtar-Breakout-v1", full_action_spaces=True)
    with pytest.raises(TypeError, match=r"'full_action_space'.*CartPole-v1 \(it has none\)"):
        gymnasium.make_vec("cugym/CartPole-v1", num_envs=2, full_action_space=True)
    with pytest.raises(TypeError, match="must be True or False"):
        cugym.make_vec("MinAtar-Breakout-v1", 2, full_action_space="yes")
    with pytest.raises(ValueError, match="has no option 'nope'"):
        cugym.make_vec("MinAtar-Breakout-v1:nope", 2)


@pytest.mark.parametrize("game", list(CHANNELS))
def test_observations_have_the_grid_shape_in_same_step_mode(game):
    """reset and step obs are (n, 10, 10, C) float32 0/1 arrays in the batched space, and each
    SAME_STEP final_obs is one (10, 10, C) grid (Freeway ends after exactly 2501 steps)."""
    n, shape = 8, (10, 10, CHANNELS[game])
    envs = make_vec(game, num_envs=n, autoreset_mode=AutoresetMode.SAME_STEP)
    obs, _ = envs.reset(seed=1)
    assert obs.shape == (n, *shape) and obs.dtype == np.float32 and obs.flags.c_contiguous
    assert envs.observation_space.contains(obs)
    rng = np.random.default_rng(0)
    finals = 0
    for _ in range(2600):
        obs, _, term, trunc, infos = envs.step(actions(rng, game, False, n))
        assert obs.shape == (n, *shape) and obs.dtype == np.float32
        if "final_obs" in infos:
            assert infos["final_obs"].shape == (n,)
            for i in np.flatnonzero(term | trunc):
                row = infos["final_obs"][i]
                assert row.shape == shape and row.dtype == np.float32
                assert envs.single_observation_space.contains(row)
                finals += 1
            break
    assert finals > 0
    assert envs.observation_space.contains(obs)
    envs.close()


@pytest.mark.parametrize("game", ["Breakout", "Seaquest"])
def test_next_step_and_finished_rows_have_the_grid_shape(game):
    """NEXT_STEP: the ending step's obs rows are the envs' last grids, the C++ finished() rows have
    the grid's shape and hold the same values, and the next step restarts those envs."""
    n, shape = 16, (10, 10, CHANNELS[game])
    envs = make_vec(game, num_envs=n, autoreset_mode=AutoresetMode.NEXT_STEP)
    obs, _ = envs.reset(seed=2)
    rng = np.random.default_rng(1)
    for _ in range(2000):
        obs, _, term, trunc, _ = envs.step(actions(rng, game, False, n))
        assert obs.shape == (n, *shape)
        if (term | trunc).any():
            break
    idx = envs.unwrapped._env.done_indices()
    assert len(idx) > 0
    rows, returns, lengths = envs.unwrapped._env.finished(idx)
    assert rows.shape == (len(idx), *shape) and rows.dtype == np.float32
    np.testing.assert_array_equal(rows, obs[idx])
    assert returns.shape == lengths.shape == (len(idx),)
    obs, rewards, term, _, _ = envs.step(actions(rng, game, False, n))
    assert obs.shape == (n, *shape) and (rewards[idx] == 0).all() and not term[idx].any()
    envs.close()


@pytest.mark.skipif(not cugym.cuda_available(), reason="no usable GPU (or a CPU-only build)")
def test_device_observations_have_the_grid_shape(tmp_path):
    """On CUDA the DLPack observations are (n, 10, 10, C) too, with the CPU back end's values, and
    a policy on the device takes them as they come, acting as on the CPU."""
    torch = pytest.importorskip("torch")
    n = 16
    gpu = cugym.make_vec("MinAtar-Seaquest-v1", n, device="cuda", autoreset_mode="SameStep")
    cpu = cugym.make_vec("MinAtar-Seaquest-v1", n, device="cpu", autoreset_mode="SameStep")
    obs_g, _ = gpu.reset(seed=3)
    obs_c, _ = cpu.reset(seed=3)
    rng = np.random.default_rng(2)
    for _ in range(50):
        got = torch.from_dlpack(obs_g)
        assert tuple(got.shape) == (n, 10, 10, 10) and got.is_cuda
        np.testing.assert_array_equal(got.cpu().numpy(), obs_c)
        a = actions(rng, "Seaquest", False, n)
        obs_g = gpu.step(torch.from_numpy(a).cuda())[0]
        obs_c = cpu.step(a)[0]
    model = tiny_model(tmp_path, "MinAtar-Seaquest-v1")
    on_gpu = torch.from_dlpack(cugym.load_policy(model, device="cuda")(obs_g)).cpu().numpy()
    assert on_gpu.shape == (n,)
    assert (on_gpu != cugym.load_policy(model)(obs_c)).sum() <= 2  # cuBLAS's sum order may flip a near-tie
    gpu.close()
    cpu.close()


def test_single_env_passes_gymnasiums_checker():
    """gymnasium.make gives (10, 10, C) observations in the space, passes check_env with its
    render check, and no render_mode warning comes from the registration (as for CartPole)."""
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gymnasium.make("cugym/MinAtar-Seaquest-v1", render_mode="rgb_array")
        check_env(env.unwrapped)
        obs, _ = env.reset(seed=0)
        assert obs.shape == (10, 10, 10) and env.observation_space.contains(obs)
        obs, reward, term, trunc, _ = env.step(env.action_space.sample())
        assert obs.shape == (10, 10, 10) and isinstance(reward, float)
        env.close()
        gymnasium.make("cugym/CartPole-v1", render_mode="rgb_array").close()


def expected_frame(obs):
    """The oracle's picture of one (10, 10, C) grid: each cell in the colour of its highest set
    channel, 32 x 32 pixels per cell."""
    palette = np.array([(0, 0, 0)] + PALETTE[obs.shape[-1]], np.uint8)
    index = np.max((np.arange(obs.shape[-1]) + 1) * (obs != 0), axis=-1)
    return np.repeat(np.repeat(palette[index], 32, axis=0), 32, axis=1)


def test_render_draws_the_cells_in_the_oracles_palette():
    # Breakout at reset: bricks in rows 1-3 (the ball in row 3 sits under a brick, and the brick's
    # channel is the higher one), the paddle at (9, 4), the rest black.
    env = gymnasium.make("cugym/MinAtar-Breakout-v1", render_mode="rgb_array")
    env.reset(seed=3)
    frame = env.render()
    assert frame.shape == (320, 320, 3) and frame.dtype == np.uint8
    cells = frame[16::32, 16::32]  # each cell's centre pixel
    want = np.zeros((10, 10, 3), np.uint8)
    want[1:4] = PALETTE[4][3]
    want[9, 4] = PALETTE[4][0]
    np.testing.assert_array_equal(cells, want)
    env.close()
    # Space Invaders at reset: aliens in rows 0-3, columns 2-7, moving left (channel 2 over 1),
    # the cannon at (9, 5).
    env = gymnasium.make("cugym/MinAtar-SpaceInvaders-v1", render_mode="rgb_array")
    env.reset(seed=0)
    want = np.zeros((10, 10, 3), np.uint8)
    want[0:4, 2:8] = PALETTE[6][2]
    want[9, 5] = PALETTE[6][0]
    np.testing.assert_array_equal(env.render()[16::32, 16::32], want)
    env.close()
    # Every pixel, over a few steps of games with 7 and 10 channels.
    rng = np.random.default_rng(4)
    for game in ("Freeway", "Seaquest", "Asterix"):
        env = gymnasium.make(f"cugym/MinAtar-{game}-v1", render_mode="rgb_array")
        obs, _ = env.reset(seed=5)
        for _ in range(40):
            np.testing.assert_array_equal(env.render(), expected_frame(obs))
            obs, _, term, _, _ = env.step(int(rng.integers(ACTIONS[game])))
            if term:
                obs, _ = env.reset()
        env.close()


def tiny_model(tmp_path, env_id):
    """The model file of a few dozen training steps on the CPU (a conv front, as for MinAtar)."""
    summary = cugym.train(
        env_id=env_id,
        out=tmp_path / "run",
        device="cpu",
        total_steps=64,
        num_envs=4,
        learning_starts=32,
        conv_channels=4,
        hidden_sizes=[8],
        batch_size=8,
        buffer_size=64,
        eval_episodes=0,
        progress=False,
    )
    return summary["model"]


def test_policy_takes_grid_shaped_and_flat_observations(tmp_path):
    policy = cugym.load_policy(tiny_model(tmp_path, "MinAtar-Breakout-v1"))
    envs = make_vec("Breakout", num_envs=32)
    obs, _ = envs.reset(seed=0)
    a = policy(obs)
    assert a.shape == (32,) and a.dtype == np.int32 and set(a) <= {0, 1, 2}
    np.testing.assert_array_equal(policy(obs.reshape(32, 400)), a)
    assert policy(obs[5]) == a[5]  # one grid
    with pytest.raises(ValueError, match=r"\(n, 400\) or \(n, 10, 10, 4\)"):
        policy(np.zeros((2, 10, 10, 3), np.float32))
    envs.close()


def test_random_policy_return_matches_the_oracle():
    """Breakout-v1's random-policy return and length over 1024 episodes (the first of each of 1024
    envs) against 1000 oracle episodes (seed k, then reset; uniform minimal actions): the means
    agree within 4 combined standard errors (minatar.md section 7's protocol)."""
    minatar = pytest.importorskip("minatar")
    n = 1024
    envs = make_vec("Breakout", num_envs=n, autoreset_mode=AutoresetMode.SAME_STEP, episode_statistics=True)
    envs.reset(seed=0)
    rng = np.random.default_rng(12345)
    returns, lengths = np.full(n, np.nan), np.zeros(n)
    for _ in range(10_000):
        _, _, term, trunc, infos = envs.step(actions(rng, "Breakout", False, n))
        if "final_info" in infos:
            first = (term | trunc) & np.isnan(returns)
            returns[first] = infos["final_info"]["episode"]["r"][first]
            lengths[first] = infos["final_info"]["episode"]["l"][first]
        if not np.isnan(returns).any():
            break
    assert not np.isnan(returns).any()
    envs.close()

    oracle = minatar.Environment("breakout")
    action_set = oracle.minimal_action_set()
    rng = np.random.default_rng(12345)
    ref_returns, ref_lengths = [], []
    for k in range(1000):
        oracle.seed(k)
        oracle.reset()
        total, steps, done = 0.0, 0, False
        while not done:
            reward, done = oracle.act(action_set[rng.integers(len(action_set))])
            total, steps = total + reward, steps + 1
        ref_returns.append(total)
        ref_lengths.append(steps)

    for ours, ref in ((returns, np.array(ref_returns)), (lengths, np.array(ref_lengths))):
        se = math.hypot(ours.std(ddof=1) / math.sqrt(len(ours)), ref.std(ddof=1) / math.sqrt(len(ref)))
        assert abs(ours.mean() - ref.mean()) < 4 * se, (ours.mean(), ref.mean(), se)
