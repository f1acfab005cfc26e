"""cugym's VectorEnv against Gymnasium 1.x's documented vector API: spaces, dtypes, autoreset
modes and info layouts, seeding, fresh arrays, bad input."""

import cugym
import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

ALL_IDS = cugym.env_ids()
# cugym's fast mode, one keyword away from Gymnasium's defaults: same-step resets, statistics in the info.
SAME = {"autoreset_mode": AutoresetMode.SAME_STEP, "episode_statistics": True}


@pytest.mark.parametrize("env_id", [i for i in ALL_IDS if not i.startswith("MinAtar-")])  # those: test_minatar.py
def test_registered_and_spaces(env_id):
    try:
        ref = gymnasium.make(env_id)
    except gymnasium.error.DependencyNotInstalled as e:  # LunarLander: Gymnasium's needs box2d, pygame
        pytest.skip(f"Gymnasium's {env_id} cannot be made here: {e}")
    envs = gymnasium.make_vec(f"cugym/{env_id}", num_envs=5)
    assert envs.single_observation_space == ref.observation_space
    assert envs.single_action_space == ref.action_space
    assert envs.observation_space == gymnasium.vector.utils.batch_space(ref.observation_space, 5)
    assert envs.action_space == gymnasium.vector.utils.batch_space(ref.action_space, 5)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP  # Gymnasium's make_vec default
    obs, info = envs.reset(seed=0)
    assert obs.shape == (5,) + ref.observation_space.shape and obs.dtype == np.float32 and info == {}
    assert obs in envs.observation_space
    envs.action_space.seed(0)
    obs, rew, term, trunc, _ = envs.step(envs.action_space.sample())
    assert rew.shape == (5,) and rew.dtype == np.float32
    assert term.dtype == np.bool_ and trunc.dtype == np.bool_
    assert obs in envs.observation_space
    envs.close()


def test_acceptance_line():
    e = gymnasium.make_vec("cugym/CartPole-v1", num_envs=8)
    assert e.reset(seed=0)[0].shape == (8, 4)


def run_until_done(envs, actions, limit=600):
    for t in range(limit):
        out = envs.step(actions)
        if (out[2] | out[3]).any():
            return t, out
    raise AssertionError("no episode ended")


def test_same_step_layout_matches_gymnasium():
    n = 6
    envs = cugym.make_vec("CartPole-v1", n, **SAME)
    envs.reset(seed=3)
    _, (obs, rew, term, trunc, infos) = run_until_done(envs, np.ones(n, np.int32))
    done = term | trunc
    assert set(infos) == {"final_obs", "_final_obs", "final_info", "_final_info"}
    assert infos["final_obs"].dtype == object and infos["_final_obs"].dtype == np.bool_
    np.testing.assert_array_equal(infos["_final_obs"], done)
    for i in range(n):
        if done[i]:
            fo = infos["final_obs"][i]
            assert fo.shape == (4,) and fo.dtype == np.float32
            assert abs(fo[2]) > 0.2094 or abs(fo[0]) > 2.4  # the pole fell: the last obs, not a reset one
            assert np.all(np.abs(obs[i]) <= 0.05)  # the new episode's first obs
        else:
            assert infos["final_obs"][i] is None
    ep = infos["final_info"]["episode"]
    np.testing.assert_array_equal(infos["final_info"]["_episode"], done)
    assert ep["r"].dtype == np.float64 and ep["l"].dtype == np.int64 and ep["t"].dtype == np.float64
    np.testing.assert_array_equal(ep["l"][done], ep["r"][done])  # CartPole: reward 1 per step
    assert np.all(ep["r"][~done] == 0)


def test_same_step_agrees_with_gymnasium_layout_of_record_episode_statistics():
    """The keys and nesting that Gymnasium's SyncVectorEnv gives with RecordEpisodeStatistics inside."""

    def thunk():
        return gymnasium.wrappers.RecordEpisodeStatistics(gymnasium.make("CartPole-v1"))

    ref = gymnasium.vector.SyncVectorEnv([thunk] * 3, autoreset_mode=AutoresetMode.SAME_STEP)
    ref.reset(seed=0)
    _, (_, _, _, _, ref_infos) = run_until_done(ref, np.ones(3, np.int64))
    envs = cugym.make_vec("CartPole-v1", 3, **SAME)
    envs.reset(seed=0)
    _, (_, _, _, _, infos) = run_until_done(envs, np.ones(3, np.int64))
    assert set(infos) == set(ref_infos)
    assert set(infos["final_info"]) == set(ref_infos["final_info"])
    assert set(infos["final_info"]["episode"]) == set(ref_infos["final_info"]["episode"])
    for k, v in ref_infos["final_info"]["episode"].items():
        assert infos["final_info"]["episode"][k].dtype == v.dtype, k


def test_next_step_mode():
    n = 4
    envs = cugym.make_vec("CartPole-v1", n, autoreset_mode="NextStep", episode_statistics=True)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    envs.reset(seed=1)
    a = np.ones(n, np.int32)
    _, (obs, rew, term, trunc, infos) = run_until_done(envs, a)
    done = term | trunc
    assert np.all(np.abs(obs[done][:, 2]) > 0.2094) or np.all(np.abs(obs[done][:, 0]) > 2.4)  # true last obs
    assert "final_obs" not in infos
    np.testing.assert_array_equal(infos["_episode"], done)
    assert np.all(infos["episode"]["l"][done] > 0)
    obs2, rew2, term2, trunc2, _ = envs.step(a)
    assert np.all(rew2[done] == 0) and not term2[done].any() and not trunc2[done].any()
    assert np.all(np.abs(obs2[done]) <= 0.05)  # reset observations


def test_next_step_with_record_episode_statistics():
    envs = gymnasium.wrappers.vector.RecordEpisodeStatistics(
        cugym.make_vec("CartPole-v1", 8, autoreset_mode=AutoresetMode.NEXT_STEP, episode_statistics=False)
    )
    envs.reset(seed=0)
    lengths = []
    for _ in range(200):
        _, _, _, _, infos = envs.step(np.random.default_rng(0).integers(0, 2, 8))
        if "episode" in infos:
            lengths += list(infos["episode"]["l"][infos["_episode"]])
    assert len(lengths) > 0 and len(envs.length_queue) > 0


def test_disabled_mode_and_reset_mask():
    n = 3
    envs = cugym.make_vec("CartPole-v1", n, autoreset_mode=AutoresetMode.DISABLED)
    obs0, _ = envs.reset(seed=2)
    _, (obs, _, term, trunc, infos) = run_until_done(envs, np.ones(n, np.int32))
    done = term | trunc
    with pytest.raises(RuntimeError, match="reset_mask"):
        envs.step(np.ones(n, np.int32))
    with pytest.raises(ValueError, match="bool array"):
        envs.reset(options={"reset_mask": np.ones(n, np.int32)})
    new_obs, info = envs.reset(options={"reset_mask": done})
    np.testing.assert_array_equal(new_obs[~done], obs[~done])
    assert np.all(np.abs(new_obs[done]) <= 0.05)
    envs.step(np.ones(n, np.int32))  # all running again


def test_fresh_arrays_every_step():
    envs = cugym.make_vec("CartPole-v1", 16)
    first = envs.reset(seed=0)[0]
    kept = [first]
    for _ in range(50):
        out = envs.step(np.zeros(16, np.int32))
        for prev in kept[-3:]:
            for x in out[:4]:
                assert not np.shares_memory(prev, x)
        kept.append(out[0])
    assert not np.shares_memory(kept[1], kept[2])
    before = kept[5].copy()
    envs.step(np.zeros(16, np.int32))
    np.testing.assert_array_equal(before, kept[5])  # a kept array never changes


def test_determinism_by_seed_and_batch_size():
    a = cugym.make_vec("CartPole-v1", 7)
    b = cugym.make_vec("CartPole-v1", 3)
    oa, _ = a.reset(seed=42)
    ob, _ = b.reset(seed=42)
    np.testing.assert_array_equal(oa[:3], ob)
    rng = np.random.default_rng(0)
    for _ in range(100):
        act = rng.integers(0, 2, 7).astype(np.int32)
        oa, ra, *_ = a.step(act)
        ob, rb, *_ = b.step(act[:3])
        np.testing.assert_array_equal(oa[:3], ob)
    c = cugym.make_vec("CartPole-v1", 7)
    assert not np.array_equal(c.reset(seed=43)[0], a.reset(seed=42)[0])
    # unseeded resets after a seeded one give new starts, reproducibly
    a.reset(seed=5)
    c.reset(seed=5)
    np.testing.assert_array_equal(a.reset()[0], c.reset()[0])
    assert not np.array_equal(a.reset()[0], c.reset(seed=5)[0])


def test_box_actions():
    envs = cugym.make_vec("Pendulum-v1", 4)
    envs.reset(seed=0)
    obs, rew, *_ = envs.step(np.zeros((4, 1)))  # float64 converted
    assert obs.shape == (4, 3) and rew.dtype == np.float32
    with pytest.raises(ValueError, match=r"shape \(4, 1\) float32"):
        envs.step(np.zeros((4, 2), np.float32))


def test_bad_input_raises_clear_errors():
    with pytest.raises(gymnasium.error.Error, match="known: CartPole-v1"):
        cugym.make_vec("NoSuchEnv-v0", 2)
    with pytest.raises(gymnasium.error.Error):
        gymnasium.make_vec("cugym/NoSuchEnv-v0", num_envs=2)
    with pytest.raises(ValueError, match="num_envs"):
        cugym.make_vec("CartPole-v1", 0)
    with pytest.raises(ValueError, match="device"):
        cugym.make_vec("CartPole-v1", 2, device="tpu")
    with pytest.raises(ValueError, match="autoreset_mode"):
        cugym.make_vec("CartPole-v1", 2, autoreset_mode="sometimes")
    envs = cugym.make_vec("CartPole-v1", 4)
    with pytest.raises(RuntimeError, match="reset"):
        envs.step(np.zeros(4, np.int32))
    envs.reset(seed=0)
    with pytest.raises(TypeError, match=r"expected integers of shape \(4,\), got dtype float64"):
        envs.step(np.zeros(4))
    with pytest.raises(ValueError, match=r"shape \(4,\) int32, got shape \(5,\)"):
        envs.step(np.zeros(5, np.int32))
    with pytest.raises(ValueError, match="outside Discrete"):
        envs.step(np.full(4, -1, np.int32))
    with pytest.raises(ValueError, match="expected 4 seeds, one per env, got 3"):
        envs.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match=r"seed\[1\] must be in \[0, 2\*\*64\), got -2"):
        envs.reset(seed=[1, -2, 3, 4])
    with pytest.raises(ValueError, match="seed must be >= 0"):
        envs.reset(seed=-1)
    with pytest.raises(TypeError, match="seed"):
        envs.reset(seed=1.5)
    with pytest.raises(TypeError, match=r"seed\[0\] must be an int"):
        envs.reset(seed=[0.5, 1, 2, 3])
    envs.close()
    envs.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        envs.step(np.zeros(4, np.int32))
    with pytest.raises(RuntimeError, match="closed"):
        envs.reset()


def test_cuda_unavailable_is_a_clear_error():
    if cugym.cuda_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ValueError, match="(?i)cuda"):
        cugym.make_vec("CartPole-v1", 2, device="cuda")
    assert cugym.make_vec("CartPole-v1", 2, device="auto").device == "cpu"


def test_render_frames_from_the_canvas():
    envs = cugym.make_vec("CartPole-v1", 3, render_mode="rgb_array")
    envs.reset(seed=0)
    frames = envs.render()
    assert len(frames) == 3
    for f in frames:
        assert f.shape == (400, 600, 3) and f.dtype == np.uint8
    # the cart (black) and the pole (brown) are there, the rest is white
    colours = {tuple(c) for c in np.unique(frames[0].reshape(-1, 3), axis=0)}
    assert {(255, 255, 255), (0, 0, 0), (202, 152, 101)} <= colours
    assert cugym.make_vec("CartPole-v1", 2).render() is None  # no render_mode: a warning
    pytest.importorskip("pygame")
    ref = gymnasium.make("CartPole-v1", render_mode="rgb_array")
    ref.reset(seed=0)
    ref.unwrapped.state = np.array(envs._env.get_states(0, 1), np.float64)
    expected = ref.render()
    # the cart and pole, drawn as Gymnasium draws them, up to edge pixels (no anti-aliasing here)
    assert np.mean(np.any(frames[0] != expected, axis=2)) < 0.01


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_every_env_renders(env_id):
    envs = cugym.make_vec(env_id, 2, render_mode="rgb_array", render_envs=1)
    envs.reset(seed=0)
    (frame,) = envs.render()
    assert frame.ndim == 3 and frame.shape[2] == 3 and len(np.unique(frame.reshape(-1, 3), axis=0)) > 1


def test_lunar_lander_through_gymnasium_or_what_to_install():
    """With Box2D (scripts/test.sh builds the package with it): LunarLander steps and renders
    through Gymnasium's vector API. Without: making it says in one line what to install."""
    if "LunarLander-v3" not in ALL_IDS:
        for make in (
            lambda: gymnasium.make_vec("cugym/LunarLander-v3", num_envs=4),
            lambda: cugym.make("LunarLander-v3"),
        ):
            with pytest.raises(gymnasium.error.DependencyNotInstalled, match=r"needs Box2D.*libbox2d-dev.*pip install"):
                make()
        return
    envs = gymnasium.make_vec("cugym/LunarLander-v3", num_envs=4, render_mode="rgb_array")
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (4, 8)
    envs.action_space.seed(0)
    ended = 0
    for _ in range(400):
        obs, rew, term, trunc, _ = envs.step(envs.action_space.sample())
        ended += int((term | trunc).sum())
    assert ended > 0 and np.isfinite(obs).all() and np.isfinite(rew).all()
    frames = envs.render()
    assert len(frames) == 4 and all(f.shape == (400, 600, 3) and f.dtype == np.uint8 for f in frames)
    assert len(np.unique(frames[0].reshape(-1, 3), axis=0)) > 3  # sky, moon, lander, flags
    envs.close()


def test_single_env_view_passes_gymnasiums_checker():
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("cugym/CartPole-v1")
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4,)
    for _ in range(600):
        obs, r, term, trunc, _ = env.step(1)
        if term or trunc:
            break
    assert term
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_gymnasium_wrappers_numpy_to_torch(torch):
    envs = gymnasium.wrappers.vector.NumpyToTorch(cugym.make_vec("CartPole-v1", 4))
    obs, _ = envs.reset(seed=0)
    assert isinstance(obs, torch.Tensor)
    obs, rew, term, trunc, _ = envs.step(torch.ones(4, dtype=torch.int64))
    assert obs.shape == (4, 4)


def test_integer_action_dtypes_and_views_step_alike():
    """The C++ step converts any integer dtype (CleanRL passes int64) and non-contiguous arrays."""
    results = []
    for make_actions in (
        lambda a: a.astype(np.int32),
        lambda a: a.astype(np.int64),
        lambda a: a.astype(np.uint8),
        lambda a: np.repeat(a, 2)[::2],
        lambda a: np.repeat(a.astype(np.int32), 2)[::2],
        lambda a: a.astype(">i4"),
        lambda a: a.tolist(),
    ):
        envs = cugym.make_vec("CartPole-v1", 5)
        envs.reset(seed=9)
        rng = np.random.default_rng(1)
        trace = [envs.step(make_actions(rng.integers(0, 2, 5)))[0] for _ in range(40)]
        results.append(np.stack(trace))
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    envs = cugym.make_vec("CartPole-v1", 3)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="action 7 of env 1 is outside Discrete"):
        envs.step(np.array([0, 7, 1], np.int64))
    with pytest.raises(ValueError, match="outside Discrete"):
        envs.step(np.array([0, 1, 2**40], np.uint64))
    with pytest.raises(TypeError, match="got dtype bool"):
        envs.step(np.ones(3, bool))
    with pytest.raises(ValueError, match=r"shape \(3,\) int32, got shape \(\)"):
        envs.step(None)
    with pytest.raises(TypeError, match="got dtype <U1"):
        envs.step(["a", "b", "c"])


def test_step_is_the_native_call_unless_a_subclass_overrides_it():
    """make_vec's envs bind step to the C++ call; a subclass's own step is still the one called."""
    envs = cugym.make_vec("CartPole-v1", 2)
    assert "step" in vars(envs)

    class Counting(cugym.VectorEnv):
        calls = 0

        def step(self, actions):
            Counting.calls += 1
            return super().step(actions)

    envs = Counting("CartPole-v1", 2)
    assert "step" not in vars(envs)
    envs.reset(seed=0)
    obs = envs.step(np.zeros(2, np.int32))[0]
    assert Counting.calls == 1 and obs.shape == (2, 4)


def test_final_obs_entries_behave_as_none_and_infos_are_fresh():
    """final_obs holds None (NumPy reads the C++ step's empty entries as None) where an env did not
    end, in every way a user reads it; successive infos share no memory (Gymnasium's check)."""
    import copy
    import pickle

    envs = cugym.make_vec("CartPole-v1", 8, **SAME)
    envs.reset(seed=0)
    kept = []
    for _ in range(200):
        *_, infos = envs.step(np.ones(8, np.int32))
        if "final_obs" in infos:
            kept.append(infos)
    assert len(kept) >= 3
    for infos in kept:
        fo, ended = infos["final_obs"], infos["_final_obs"]
        assert not ended.all()
        for view in (fo, fo.copy(), copy.deepcopy(fo), pickle.loads(pickle.dumps(fo)), np.array(fo.tolist(), object)):
            assert all(view[i] is None for i in np.flatnonzero(~ended))
            assert all(isinstance(view[i], np.ndarray) for i in np.flatnonzero(ended))
        assert all(x is None for x in fo[~ended]) and sum(x is None for x in fo.tolist()) == (~ended).sum()
    for a, b in zip(kept, kept[1:]):
        ra = [x for x in a["final_obs"] if x is not None]
        rb = [x for x in b["final_obs"] if x is not None]
        assert not any(np.shares_memory(x, y) for x in ra for y in rb)
        for key in ("r", "l", "t"):
            assert not np.shares_memory(a["final_info"]["episode"][key], b["final_info"]["episode"][key])
    from gymnasium.utils.env_checker import data_equivalence

    assert data_equivalence(kept[0], copy.deepcopy(kept[0]))


def test_per_env_seed_lists():
    """Gymnasium's convention: a list gives env i seed[i], an int s means [s, s+1, ...]; env i's
    trajectory depends only on its own seed (and index); None entries draw fresh seeds."""
    n = 5
    rng = np.random.default_rng(3)
    actions = [rng.integers(0, 2, n) for _ in range(120)]

    def run(seed):
        envs = cugym.make_vec("CartPole-v1", n)
        first, _ = envs.reset(seed=seed)
        return np.stack([first] + [envs.step(a)[0] for a in actions])

    same = run(10)
    np.testing.assert_array_equal(run([10, 11, 12, 13, 14]), same)
    np.testing.assert_array_equal(run(np.arange(10, 15)), same)
    moved = run([10, 99, 12, 7, 14])  # envs 1 and 3 get other seeds: the rest are unchanged
    np.testing.assert_array_equal(moved[:, [0, 2, 4]], same[:, [0, 2, 4]])
    assert not np.array_equal(moved[:, 1], same[:, 1]) and not np.array_equal(moved[:, 3], same[:, 3])
    fresh = run([10, None, 12, None, 14])
    np.testing.assert_array_equal(fresh[:, [0, 2, 4]], same[:, [0, 2, 4]])
    # unseeded resets after a list go on reproducibly
    a, b = cugym.make_vec("CartPole-v1", n), cugym.make_vec("CartPole-v1", n)
    a.reset(seed=[4, 8, 15, 16, 23])
    b.reset(seed=[4, 8, 15, 16, 23])
    assert a.np_random_seed == (4, 8, 15, 16, 23)
    np.testing.assert_array_equal(a.reset()[0], b.reset()[0])


def _trajectory(envs, actions, keep):
    """Steps `envs` through `actions` and returns copies of everything each step gave; `keep(out)`
    decides what of each step's results the caller holds on to (and may alter) meanwhile."""
    envs.reset(seed=11)
    copies, held = [], []
    for a in actions:
        out = envs.step(a)
        obs, rew, term, trunc, infos = out
        assert all(x.flags.writeable and x.flags.c_contiguous for x in out[:4])
        fo = infos.get("final_obs")
        copies.append(
            (
                obs.copy(),
                rew.copy(),
                term.copy(),
                trunc.copy(),
                None if fo is None else [None if x is None else x.copy() for x in fo],
                {k: v.copy() for k, v in infos.get("final_info", {}).get("episode", {}).items()},
            )
        )
        held.append(keep(out))
        del out, obs, rew, term, trunc, infos, fo
    return copies, held


@pytest.mark.parametrize("mode", ["SameStep", "NextStep"])
def test_recycled_results_never_change_what_a_caller_holds(mode):
    """Results are recycled once nothing refers to them (ArrayPool): whatever the caller keeps,
    alters or views, every step's results are the same values, a kept array never changes, and
    arrays changed in place (shape, dtype, flags, weak references) or entries put into final_obs
    never come back in later results."""
    import weakref

    n = 64
    rng = np.random.default_rng(5)
    actions = [rng.integers(0, 2, n).astype(np.int32) for _ in range(120)]
    reference, _ = _trajectory(
        cugym.make_vec("CartPole-v1", n, autoreset_mode=mode, episode_statistics=True), actions, lambda out: None
    )

    def meddle(out):
        obs, rew, term, trunc, infos = out
        t = len(meddle.calls)
        meddle.calls.append(t)
        kept = []
        if t % 5 == 0:
            kept.append((obs, obs.copy()))  # a whole array, checked below
        if t % 5 == 1:
            kept.append((obs[3:7, 1:], obs[3:7, 1:].copy()))  # only a view of one
        if t % 5 == 2:
            kept.append((memoryview(rew), rew.copy()))  # a buffer export
        if t % 5 == 4:
            obs.shape = (n * 4,)  # changed in place, then dropped
            rew.dtype = np.int32
            term.flags.writeable = False
            meddle.weak.append((weakref.ref(trunc), trunc.copy()))
        fo = infos.get("final_obs")
        if fo is not None and t % 3 == 0:
            ended = np.flatnonzero(infos["_final_obs"])
            kept.append((fo[ended[0]], fo[ended[0]].copy()))  # one row, not the dict
            fo[ended[-1]] = "not an array"  # the object array altered, then dropped
            if len(ended) > 2:
                fo[ended[1]].shape = (2, 2)  # a row changed in place
        if fo is None and t % 3 == 1:
            kept.append((infos, None))  # an info dict kept whole
        return kept

    meddle.calls, meddle.weak = [], []
    envs = cugym.make_vec("CartPole-v1", n, autoreset_mode=mode, episode_statistics=True)
    got, held = _trajectory(envs, actions, meddle)
    for ref, out in zip(reference, got):
        for a, b in zip(ref[:4], out[:4]):
            np.testing.assert_array_equal(a, b)
            assert a.dtype == b.dtype
        if ref[4] is None:
            assert out[4] is None
        else:
            assert [x is None for x in ref[4]] == [x is None for x in out[4]]
            for a, b in zip(ref[4], out[4]):
                if a is not None:
                    np.testing.assert_array_equal(a, b)
                    assert b.shape == (4,) and b.dtype == np.float32
        assert ref[5].keys() == out[5].keys()
        for k in ref[5]:
            if k == "t":  # wall time: zero where no episode ended
                np.testing.assert_array_equal(ref[5][k] == 0, out[5][k] == 0)
            else:
                np.testing.assert_array_equal(ref[5][k], out[5][k])
    for kept in held:
        for view, copy in kept:
            if copy is not None:
                np.testing.assert_array_equal(np.asarray(view), copy)
    for w, copy in meddle.weak:  # never recycled: freed, or alive and unchanged
        if w() is not None:
            np.testing.assert_array_equal(w(), copy)
    *_, infos = envs.step(actions[0])
    envs.close()
    for kept in held:  # the arrays outlive the env
        for view, copy in kept:
            if copy is not None:
                np.testing.assert_array_equal(np.asarray(view), copy)


def test_results_dropped_by_the_caller_are_recycled():
    """A step whose results nobody kept gives their arrays to a later step instead of allocating
    new ones: the data of a few arrays cycles, even while the caller allocates arrays of the same
    size (which would take memory freed to the allocator)."""
    n = 256
    for mode in ("SameStep", "NextStep"):
        envs = cugym.make_vec("CartPole-v1", n, autoreset_mode=mode)
        envs.reset(seed=0)
        addresses, rows, blockers = set(), set(), []
        for _ in range(40):
            obs, rew, term, trunc, infos = envs.step(np.ones(n, np.int32))
            addresses.add(obs.ctypes.data)
            if "final_obs" in infos:
                rows.update(x.ctypes.data for x in infos["final_obs"] if x is not None)
            del obs, rew, term, trunc, infos
            blockers.append(np.empty((n, 4), np.float32))
            blockers.append(np.empty(4, np.float32))
        assert len(addresses) <= 4, (mode, len(addresses))
        if mode == "SameStep":
            assert 0 < len(rows) <= 2 * n
            assert len(rows) < 40 * 4
        envs.close()


def _ended_twice(envs, n):
    """Steps a DISABLED batch of CartPoles pushed one way until at least two envs have ended, keeping
    none of the results (so the arrays of later calls are recycled ones holding older contents);
    returns the last step's results."""
    for _ in range(200):
        out = envs.step(np.ones(n, np.int32))
        if (out[2] | out[3]).sum() >= 2:
            return out
        del out
    raise AssertionError("fewer than two episodes ended")


def test_masked_reset_keeps_the_other_envs_rewards_and_flags():
    """A masked reset writes new arrays for the env's outputs; the envs outside the mask keep their
    observation, reward and flags in them (VectorEnv::ResetMasked), so the ended envs that were
    not reset are still the ones done_indices reports, and the arrays from before are untouched."""
    n = 8
    envs = cugym.make_vec("CartPole-v1", n, autoreset_mode=AutoresetMode.DISABLED)
    envs.reset(seed=4)
    obs, rew, term, trunc, _ = _ended_twice(envs, n)
    held = [x.copy() for x in (obs, rew, term, trunc)]
    ended = np.flatnonzero(term | trunc)
    mask = np.zeros(n, bool)
    mask[ended[0]] = True
    new_obs, _ = envs.reset(options={"reset_mask": mask})
    np.testing.assert_array_equal(envs._env.done_indices(), ended[1:])
    np.testing.assert_array_equal(new_obs[~mask], obs[~mask])
    for x, copy in zip((obs, rew, term, trunc), held):
        np.testing.assert_array_equal(x, copy)
    assert envs._env.has_ended  # the others still wait for their reset
    envs.reset(options={"reset_mask": (term | trunc) & ~mask})
    assert len(envs._env.done_indices()) == 0 and not envs._env.has_ended
    envs.step(np.ones(n, np.int32))


def test_a_refused_reset_mask_changes_nothing():
    """Every refused reset_mask (wrong dtype, shape, layout, no True, a seed with it) leaves the
    arrays a caller holds, the envs' states, their flags and the ended-env bookkeeping as they were:
    the env then runs on exactly as a twin that never saw the refused calls."""
    n = 8
    envs = cugym.make_vec("CartPole-v1", n, autoreset_mode=AutoresetMode.DISABLED)
    twin = cugym.make_vec("CartPole-v1", n, autoreset_mode=AutoresetMode.DISABLED)
    envs.reset(seed=6)
    twin.reset(seed=6)
    out = _ended_twice(envs, n)
    _ended_twice(twin, n)
    held = [x.copy() for x in out[:4]]
    done = out[2] | out[3]
    states, indices = envs._env.get_states(0, n), envs._env.done_indices()
    refusals = [
        (ValueError, lambda: envs.reset(options={"reset_mask": done.astype(np.int32)})),
        (ValueError, lambda: envs.reset(options={"reset_mask": np.ones(n + 1, bool)})),
        (ValueError, lambda: envs.reset(options={"reset_mask": np.zeros(n, bool)})),
        (ValueError, lambda: envs.reset(seed=1, options={"reset_mask": done})),
        (ValueError, lambda: envs._env.reset_masked(done.astype(np.uint8))),
        (ValueError, lambda: envs._env.reset_masked(np.repeat(done, 2)[::2])),
        (ValueError, lambda: envs._env.reset_masked(done[:, None])),
        (TypeError, lambda: envs._env.reset_masked(list(done))),
    ]
    for error, call in refusals:
        with pytest.raises(error):
            call()
        for x, copy in zip(out[:4], held):
            np.testing.assert_array_equal(x, copy)
        assert envs._env.get_states(0, n) == states
        np.testing.assert_array_equal(envs._env.done_indices(), indices)
        assert envs._env.has_ended
    obs, _ = envs.reset(options={"reset_mask": done})
    twin_obs, _ = twin.reset(options={"reset_mask": done})
    np.testing.assert_array_equal(obs, twin_obs)
    actions = np.random.default_rng(1).integers(0, 2, (20, n)).astype(np.int32)
    for a in actions:
        if envs._env.has_ended:  # both end alike: reset the same envs
            mask = np.zeros(n, bool)
            mask[envs._env.done_indices()] = True
            envs.reset(options={"reset_mask": mask})
            twin.reset(options={"reset_mask": mask})
        for x, y in zip(envs.step(a)[:4], twin.step(a)[:4]):
            np.testing.assert_array_equal(x, y)


class _ForeignArray:
    """An array-like whose DLPack device is `device` (DLPack's (device type, device id); the type an
    IntEnum, as PyTorch gives it) and which must never be read."""

    def __init__(self, device):
        import enum

        kind = enum.IntEnum("DLDeviceType", {"kDLCPU": 1, "kDLCUDA": 2, "kDLVPI": 9})
        self.device = (kind(device[0]), device[1])

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, **kwargs):
        raise AssertionError("a refused array was read")

    def __array__(self, *args, **kwargs):
        raise AssertionError("a refused array was read")


def test_actions_on_another_device_are_refused_naming_both():
    """Actions whose DLPack device is not the env's are refused before anything reads them, with a
    ValueError that names both devices; host arrays other than NumPy's still step."""
    envs = cugym.make_vec("CartPole-v1", 4)
    twin = cugym.make_vec("CartPole-v1", 4)
    envs.reset(seed=0)
    twin.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions are on device cuda:1, but this env is on device cpu"):
        envs.step(_ForeignArray((2, 1)))
    with pytest.raises(ValueError, match=r"device DLPack device type 9 id 0.*device cpu"):
        envs.step(_ForeignArray((9, 0)))

    class HostArray(_ForeignArray):  # host memory (kDLCPU): read through NumPy as before
        def __array__(self, *args, **kwargs):
            return np.array([0, 1, 1, 0], np.int32)

    got = envs.step(HostArray((1, 0)))
    want = twin.step(np.array([0, 1, 1, 0], np.int32))
    for x, y in zip(got[:4], want[:4]):
        np.testing.assert_array_equal(x, y)
