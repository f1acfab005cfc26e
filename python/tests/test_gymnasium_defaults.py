"""cugym's vector envs with Gymnasium's defaults: gymnasium.make_vec("cugym/...") behaves as
Gymnasium's own make_vec (autoreset mode NEXT_STEP, no ``episode`` key in the info), so that
Gymnasium's vector wrappers run on it unchanged; cugym's faster mode (SAME_STEP) and its own episode
statistics are one keyword away, given as a keyword or through ``vector_kwargs``."""

import cugym
import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers import vector as vw


def _run(envs, steps, seed=0):
    """Steps `envs` with random actions; returns the infos of the steps where an episode ended."""
    envs.reset(seed=seed)
    envs.action_space.seed(seed)
    ended = []
    for _ in range(steps):
        _, _, term, trunc, infos = envs.step(envs.action_space.sample())
        if (term | trunc).any():
            ended.append(infos)
    return ended


def test_the_defaults_are_gymnasiums():
    ours = gymnasium.make_vec("cugym/CartPole-v1", num_envs=4)
    theirs = gymnasium.make_vec("CartPole-v1", num_envs=4)  # Gymnasium's own vector env
    assert ours.metadata["autoreset_mode"] is theirs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert cugym.make_vec("CartPole-v1", 4).metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    ended = _run(ours, 300)
    assert ended, "no CartPole episode ended in 300 random steps"
    for infos in ended:
        assert "episode" not in infos and "final_info" not in infos and "final_obs" not in infos


def test_continuous_wrapper_chain_runs_with_no_extra_keywords():
    """CleanRL's continuous-control chain, at the vector level, on Pendulum (truncated at 200)."""
    envs = gymnasium.make_vec("cugym/Pendulum-v1", num_envs=8)
    envs = vw.RecordEpisodeStatistics(envs)
    envs = vw.ClipAction(envs)
    envs = vw.NormalizeObservation(envs)
    envs = vw.NormalizeReward(envs, gamma=0.99)
    ended = _run(envs, 450)
    assert len(ended) == 2  # steps 200 and 401: every env truncates together
    for infos in ended:
        assert infos["_episode"].all()
        np.testing.assert_array_equal(infos["episode"]["l"], 200)
        assert (infos["episode"]["r"] < 0).all()  # Pendulum's rewards are all <= 0
    assert len(envs.env.env.env.return_queue) == 16  # RecordEpisodeStatistics, under the other three
    obs, *_ = envs.step(np.zeros((8, 1), np.float32))
    assert abs(float(np.mean(obs))) < 3  # normalized


def test_discrete_wrapper_chain_runs_with_no_extra_keywords():
    envs = vw.NormalizeObservation(
        vw.RecordEpisodeStatistics(gymnasium.make_vec("cugym/CartPole-v1", num_envs=8), buffer_length=1000)
    )
    ended = _run(envs, 300)
    lengths = [length for infos in ended for length in infos["episode"]["l"][infos["_episode"]]]
    assert len(lengths) > 20 and min(lengths) > 0
    assert len(envs.env.length_queue) == len(lengths)


def test_vector_kwargs_reach_the_vector_env():
    """vector_kwargs as Gymnasium documents them (the vector env's constructor arguments): Gymnasium
    1.x refuses them for a vector entry point, cugym's registration takes them in."""
    envs = gymnasium.make_vec(
        "cugym/CartPole-v1",
        num_envs=8,
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP, "episode_statistics": True},
    )
    assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    ended = _run(envs, 300)
    assert ended and all("episode" in infos["final_info"] for infos in ended)
    # the registered spec is untouched: the next make_vec has the defaults again
    assert gymnasium.make_vec("cugym/CartPole-v1", num_envs=2).metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    envs = gymnasium.make_vec("cugym/CartPole-v1", num_envs=2, vector_kwargs={"autoreset_mode": "SameStep"})
    assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    # sync: Gymnasium's SyncVectorEnv over cugym's single envs gets its vector_kwargs as before
    sync = gymnasium.make_vec(
        "cugym/CartPole-v1",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
    )
    assert isinstance(sync, gymnasium.vector.SyncVectorEnv)
    assert sync.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    with pytest.raises(TypeError, match="autoreset_mode given both as a keyword and in vector_kwargs"):
        gymnasium.make_vec(
            "cugym/CartPole-v1", num_envs=2, autoreset_mode="SameStep", vector_kwargs={"autoreset_mode": "NextStep"}
        )
    with pytest.raises(TypeError, match="'no_such_keyword'"):
        gymnasium.make_vec("cugym/CartPole-v1", num_envs=2, vector_kwargs={"no_such_keyword": 1})


def test_the_fast_mode_and_cugyms_statistics_are_one_keyword_away():
    envs = cugym.make_vec("CartPole-v1", 8, autoreset_mode="SameStep", episode_statistics=True)
    ended = _run(envs, 300)
    for infos in ended:
        assert set(infos) == {"final_obs", "_final_obs", "final_info", "_final_info"}
        assert set(infos["final_info"]) == {"episode", "_episode"}
    next_step = gymnasium.make_vec("cugym/CartPole-v1", num_envs=8, episode_statistics=True)
    ended = _run(next_step, 300)
    assert ended and all("episode" in infos for infos in ended)
    assert cugym.make_vec("CartPole-v1", 2, autoreset_mode=AutoresetMode.SAME_STEP).metadata["autoreset_mode"] is (
        AutoresetMode.SAME_STEP
    )
