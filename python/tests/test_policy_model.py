"""PPO policy model files (docs/ppo.md, "Model files") in Python.

The files here are written with the `safetensors` package from the format the docs give (the
tensors SaveMlp names, log_std, the normalizer's float64 statistics as int64 bit patterns, the
cugym.* metadata; the C++ tests check that SavePolicyModel writes exactly that), so they also show
that a file made by another tool loads. cugym.load_policy acts on them: float32 (n, action_dim)
actions within the Box on a Box env, int32 (n,) on a Discrete one. The actor rebuilt from the file
in NumPy (and in PyTorch where it is installed), as the docs describe it, gives load_policy's
actions to within 1e-5. So do the docs' own PyTorch snippets (docs/ppo.md, docs/sac.md), run on
models that cugym.train wrote.
"""

import pathlib
import re

import cugym
import numpy as np
import pytest

safetensors = pytest.importorskip("safetensors")
from safetensors import safe_open  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402


def write_policy_file(path, env_id, sizes, gaussian, squash=False, normalize=False, clip=10.0, gain=1.0, seed=0):
    """A PPO policy model file of a random tanh actor, as SavePolicyModel lays it out."""
    rng = np.random.default_rng(seed)
    tensors = {}
    for layer in range(len(sizes) - 1):
        fan_in = sizes[layer]
        scale = gain if layer == len(sizes) - 2 else 1.0
        weight = rng.standard_normal((sizes[layer + 1], fan_in)) * scale / np.sqrt(fan_in)
        tensors[f"{2 * layer}.weight"] = weight.astype(np.float32)
        tensors[f"{2 * layer}.bias"] = (0.1 * rng.standard_normal(sizes[layer + 1])).astype(np.float32)
    if gaussian:
        tensors["log_std"] = np.full(sizes[-1], -0.5, dtype=np.float32)
    if normalize:
        tensors["norm.obs_mean"] = (0.5 * rng.standard_normal(sizes[0])).view(np.int64)
        tensors["norm.obs_var"] = (0.25 + rng.random(sizes[0])).view(np.int64)
    metadata = {
        "cugym.kind": "policy",
        "cugym.algo": "ppo",
        "cugym.policy": "gaussian" if gaussian else "categorical",
        "cugym.squash": "true" if squash else "false",
        "cugym.norm.obs_clip": repr(clip),
        "cugym.env_id": env_id,
        "cugym.global_step": "1000",
        "cugym.layers": ",".join(str(s) for s in sizes),
        "cugym.activation": "tanh",
    }
    save_file(tensors, str(path), metadata=metadata)
    return str(path)


def numpy_actor(path):
    """The deterministic policy of a PPO model file rebuilt in NumPy (float64): normalize (frozen),
    Linear -> tanh -> ... -> Linear, then the argmax, or the mean clipped to the Box (tanh rescaled
    with cugym.squash)."""
    tensors = load_file(path)
    with safe_open(path, framework="np") as f:
        meta = f.metadata()
    sizes = [int(s) for s in meta["cugym.layers"].split(",")]
    space = cugym._cugym.env_spec(meta["cugym.env_id"])["action_space"]

    def act(obs):
        x = np.asarray(obs, dtype=np.float64).reshape(len(obs), -1)
        if "norm.obs_mean" in tensors:
            mean, var = tensors["norm.obs_mean"].view(np.float64), tensors["norm.obs_var"].view(np.float64)
            clip = float(meta["cugym.norm.obs_clip"])
            x = np.clip((x - mean) / np.sqrt(var + 1e-8), -clip, clip)
        for layer in range(len(sizes) - 1):
            x = x @ tensors[f"{2 * layer}.weight"].astype(np.float64).T + tensors[f"{2 * layer}.bias"]
            if layer < len(sizes) - 2:
                x = np.tanh(x)
        if meta["cugym.policy"] == "categorical":
            return x
        low, high = np.array(space["low"]), np.array(space["high"])
        if meta["cugym.squash"] == "true":
            return low + (np.tanh(x) + 1.0) * 0.5 * (high - low)
        return np.clip(x, low, high)

    return act


def test_load_policy_acts_on_a_pendulum_file_with_float_actions_in_the_box(tmp_path):
    path = write_policy_file(
        tmp_path / "p.safetensors", "Pendulum-v1", [3, 32, 32, 1], True, normalize=True, clip=2.0, gain=6.0
    )
    policy = cugym.load_policy(path)
    assert policy.env_id == "Pendulum-v1" and policy.continuous
    reference = numpy_actor(path)
    envs = cugym.make_vec("Pendulum-v1", 16)
    obs, _ = envs.reset(seed=5)
    seen_clipped = seen_inside = False
    for _ in range(40):
        actions = policy(obs)
        assert actions.dtype == np.float32 and actions.shape == (16, 1)
        assert np.all(np.abs(actions) <= 2.0)
        np.testing.assert_allclose(actions, reference(obs), rtol=0, atol=1e-5)
        seen_clipped |= bool(np.any(np.abs(actions) == 2.0))
        seen_inside |= bool(np.any(np.abs(actions) < 1.9))
        obs, *_ = envs.step(actions)
    assert seen_clipped and seen_inside, "the clip to the Box went untested"
    one = policy(obs[0])  # one observation: one action
    assert one.shape == (1,) and one.dtype == np.float32
    np.testing.assert_array_equal(one, policy(obs)[0])


@pytest.mark.parametrize("squash", [False, True])
def test_numpy_rebuilt_actor_matches_load_policy_on_a_box_env(tmp_path, squash):
    path = write_policy_file(
        tmp_path / "g.safetensors",
        "Pendulum-v1",
        [3, 64, 64, 1],
        True,
        squash=squash,
        normalize=not squash,
        gain=3.0,
        seed=2,
    )
    obs = np.random.default_rng(3).uniform(-3.0, 3.0, size=(300, 3)).astype(np.float32)
    actions = cugym.load_policy(path)(obs)
    np.testing.assert_allclose(actions, numpy_actor(path)(obs), rtol=0, atol=1e-5)
    if squash:
        assert np.all(np.abs(actions) < 2.0)


def test_numpy_rebuilt_actor_matches_load_policy_on_a_discrete_env(tmp_path):
    path = write_policy_file(tmp_path / "c.safetensors", "CartPole-v1", [4, 64, 64, 2], False, normalize=True, seed=4)
    obs = np.random.default_rng(5).normal(size=(400, 4)).astype(np.float32)
    policy = cugym.load_policy(path)
    assert not policy.continuous
    actions = policy(obs)
    assert actions.dtype == np.int32 and actions.shape == (400,)
    logits = numpy_actor(path)(obs)
    clear = np.abs(logits[:, 1] - logits[:, 0]) > 1e-5  # a near tie may go either way in float32
    assert clear.sum() > 390
    np.testing.assert_array_equal(actions[clear], np.argmax(logits, axis=1)[clear])
    assert 0 < actions.sum() < 400


def test_pytorch_rebuilt_actor_matches_load_policy(tmp_path, torch):
    from safetensors.torch import load_file as torch_load_file

    path = write_policy_file(
        tmp_path / "t.safetensors", "Pendulum-v1", [3, 64, 64, 1], True, normalize=True, gain=3.0, seed=6
    )
    state = torch_load_file(path)
    actor = torch.nn.Sequential(
        torch.nn.Linear(3, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1)
    )
    actor.load_state_dict({k: v for k, v in state.items() if k[0].isdigit()})
    mean, var = state["norm.obs_mean"].view(torch.float64), state["norm.obs_var"].view(torch.float64)
    obs = np.random.default_rng(7).uniform(-3.0, 3.0, size=(200, 3)).astype(np.float32)
    x = ((torch.from_numpy(obs).double() - mean) / torch.sqrt(var + 1e-8)).clamp(-10.0, 10.0).float()
    with torch.no_grad():
        rebuilt = actor(x).clamp(-2.0, 2.0).numpy()
    np.testing.assert_allclose(cugym.load_policy(path)(obs), rebuilt, rtol=0, atol=1e-5)


def test_load_policy_refuses_a_policy_of_the_other_action_space(tmp_path):
    categorical = write_policy_file(tmp_path / "c.safetensors", "CartPole-v1", [3, 8, 2], False)
    with pytest.raises(ValueError, match=r"is a categorical policy \(discrete actions\), but Pendulum-v1 has Box"):
        cugym.load_policy(categorical, env_id="Pendulum-v1")
    gaussian = write_policy_file(tmp_path / "g.safetensors", "Pendulum-v1", [4, 8, 1], True)
    with pytest.raises(ValueError, match=r"is a gaussian policy \(continuous actions\), but CartPole-v1 has Disc"):
        cugym.load_policy(gaussian, env_id="CartPole-v1")


def docs_snippet(repo, page, first_line):
    """The ```python block of docs/<page> that starts with first_line (the docs' own code, run as
    users would copy it)."""
    text = (pathlib.Path(repo) / "docs" / page).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    found = [b for b in blocks if first_line in b]
    assert len(found) == 1, f"docs/{page}: no single python block with {first_line!r}"
    return found[0]


def swap(code, old, new):
    assert old in code, f"the docs' snippet no longer has {old!r}"
    return code.replace(old, new)


PPO_RUNS = {
    "categorical": dict(env_id="CartPole-v1", num_envs=4, num_steps=128),
    "gaussian": dict(env_id="Pendulum-v1", num_envs=4, num_steps=128, normalize_obs=True, normalize_reward=True),
    "squashed": dict(env_id="Pendulum-v1", num_envs=4, num_steps=128, squash=True, normalize_obs=True),
}


@pytest.mark.parametrize("kind", sorted(PPO_RUNS))
def test_docs_pytorch_rebuild_of_a_trained_ppo_model_acts_as_load_policy(tmp_path, repo, torch, kind):
    # A model cugym.train wrote (not one made here), rebuilt by docs/ppo.md's PyTorch code.
    run = cugym.train(
        out=tmp_path / kind,
        algo="ppo",
        total_steps=2048,
        hidden_sizes=[32, 32],
        eval_episodes=0,
        device="cpu",
        progress=False,
        **PPO_RUNS[kind],
    )
    path = run["model"]
    namespace = {}
    code = swap(docs_snippet(repo, "ppo.md", "def act(obs"), '"runs/pendulum/model.safetensors"', repr(path))
    exec(compile(code, "docs/ppo.md", "exec"), namespace)
    envs = cugym.make_vec(PPO_RUNS[kind]["env_id"], 64)
    obs, _ = envs.reset(seed=11)
    space = cugym._cugym.env_spec(PPO_RUNS[kind]["env_id"])["action_space"]
    bounds = {}
    if kind != "categorical":
        bounds = dict(low=torch.tensor(space["low"]), high=torch.tensor(space["high"]))
    policy = cugym.load_policy(path)
    for _ in range(20):
        actions = policy(obs)
        rebuilt = namespace["act"](obs, **bounds).numpy()
        if kind == "categorical":
            np.testing.assert_array_equal(actions, rebuilt)
        else:
            np.testing.assert_allclose(actions, rebuilt, rtol=0, atol=1e-5)
        obs, *_ = envs.step(actions)


def test_docs_pytorch_rebuild_of_a_trained_sac_model_acts_as_load_policy(tmp_path, repo, torch):
    run = cugym.train(
        out=tmp_path / "sac",
        algo="sac",
        env_id="Pendulum-v1",
        num_envs=2,
        hidden_sizes=[32, 32],
        buffer_size=2000,
        batch_size=32,
        learning_starts=100,
        total_steps=600,
        eval_episodes=0,
        device="cpu",
        progress=False,
    )
    obs = np.random.default_rng(12).uniform(-3.0, 3.0, size=(200, 3)).astype(np.float32)
    code = docs_snippet(repo, "sac.md", "low, high = -2.0, 2.0")
    code = swap(code, '"runs/pendulum/model.safetensors"', repr(run["model"]))
    code = swap(code, "obs = torch.tensor([[1.0, 0.0, 0.0]])", "obs = torch.from_numpy(given)")
    namespace = {"given": obs}
    with torch.no_grad():
        exec(compile(code, "docs/sac.md", "exec"), namespace)
    np.testing.assert_allclose(cugym.load_policy(run["model"])(obs), namespace["action"].numpy(), rtol=0, atol=1e-5)
