"""cugym.sb3.CugymVecEnv against Stable-Baselines3's VecEnv contract, and SB3's DQN training on it.
Skipped where stable-baselines3 is not installed (CI's venv has neither it nor torch)."""

import numpy as np
import pytest

sb3 = pytest.importorskip("stable_baselines3")

import cugym  # noqa: E402
from cugym.sb3 import CugymVecEnv  # noqa: E402


def test_vec_env_contract():
    env = CugymVecEnv("CartPole-v1", num_envs=4)
    assert env.num_envs == 4 and env.observation_space.shape == (4,) and env.action_space.n == 2
    assert env.seed(3) == [3, 4, 5, 6]
    obs = env.reset()
    ref = cugym.make_vec("CartPole-v1", 4)
    np.testing.assert_array_equal(obs, ref.reset(seed=[3, 4, 5, 6])[0])  # SB3's seed + i, per env
    ended = 0
    for _ in range(300):
        env.step_async(np.ones(4, np.int64))
        obs, rewards, dones, infos = env.step_wait()
        ref_obs, ref_rewards, term, trunc, ref_infos = ref.step(np.ones(4, np.int64))
        np.testing.assert_array_equal(obs, ref_obs)
        np.testing.assert_array_equal(dones, term | trunc)
        assert rewards.dtype == np.float32 and dones.dtype == np.bool_ and len(infos) == 4
        for i in range(4):
            if dones[i]:
                ended += 1
                np.testing.assert_array_equal(infos[i]["terminal_observation"], ref_infos["final_obs"][i])
                assert infos[i]["TimeLimit.truncated"] == bool(trunc[i] and not term[i])
                assert infos[i]["episode"]["l"] == infos[i]["episode"]["r"] > 0  # CartPole: 1 per step
            else:
                assert infos[i] == {}
    assert ended > 10
    assert env.get_attr("env_id") == ["CartPole-v1"] * 4 and env.env_is_wrapped(object) == [False] * 4
    with pytest.raises(AttributeError):
        env.env_method("render")
    env.close()
    with pytest.raises(ValueError, match="SAME_STEP"):
        CugymVecEnv(cugym.make_vec("CartPole-v1", 2, autoreset_mode="NextStep"))


def test_sb3_dqn_trains_on_it():
    """A short DQN run: SB3 steps the env, fills its replay buffer, trains, and logs the episodes
    from the adapter's episode statistics; then its greedy policy acts on a cugym env."""
    env = CugymVecEnv("CartPole-v1", num_envs=4)
    model = sb3.DQN(
        "MlpPolicy",
        env,
        learning_starts=200,
        train_freq=4,
        target_update_interval=100,
        policy_kwargs={"net_arch": [32]},
        seed=1,
        verbose=0,
        device="cpu",
    )
    model.learn(3000)
    assert model.num_timesteps >= 3000
    assert len(model.ep_info_buffer) > 20 and all(e["l"] == e["r"] for e in model.ep_info_buffer)
    assert model.replay_buffer.size() > 0
    obs = env.reset()
    actions, _ = model.predict(obs, deterministic=True)
    assert actions.shape == (4,)
    env.close()
