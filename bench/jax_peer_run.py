"""One PureJaxRL (or purejaxql) run, timed: run by bench/jax_peers.py with the Python that has JAX (it is not
imported by anything else). Loads the peer's script from its checkout as it is, builds its
`make_train(config)` with the config its own `__main__` uses, compiles the train function apart
from running it (`jax.jit(...).lower(...).compile()`), runs it once with `jax.block_until_ready`,
and prints one JSON line: the seconds to compile and to train, and each seed's final returns.

    PY bench/jax_peer_run.py --script PUREJAXRL/purejaxrl/ppo.py --algo ppo --seeds 8

Adapted around the peer, never inside it:
- gymnax 1.0's `step` returns six values (obs, state, reward, terminated, truncated, info) where
  PureJaxRL unpacks five, done = terminated or truncated: for ppo.py (PureJaxRL's own wrappers)
  the envs of `gymnax.make` return five, for dqn.py and pqn_gymnax.py (gymnax's own wrappers,
  which want six) the outermost wrapper, gymnax's LogWrapper, does.
- PureJaxRL's wrappers.py imports brax and navix at the top for wrappers these runs do not use,
  dqn.py imports wandb, and purejaxql's pqn_gymnax.py hydra, omegaconf and safetensors for its
  command line and saving: where they are missing, empty modules stand in for them.
- jax 0.10 removed `jax.tree_map`, which dqn.py calls: it is set to `jax.tree.map`.
- The config is the one the script runs with (PPO: ppo.py's CartPole config with DEBUG off; DQN:
  dqn.py's; PQN: purejaxql's pqn_cartpole.yaml, its testing during training off); --total-steps
  changes its TOTAL_TIMESTEPS (and PQN's decay horizon with it) only.
"""

import argparse
import importlib.util
import json
import os
import sys
import time
import types

PPO_CONFIG = {  # purejaxrl/ppo.py's __main__, DEBUG off (it prints every episode from the device)
    "LR": 2.5e-4,
    "NUM_ENVS": 4,
    "NUM_STEPS": 128,
    "TOTAL_TIMESTEPS": 5e5,
    "UPDATE_EPOCHS": 4,
    "NUM_MINIBATCHES": 4,
    "GAMMA": 0.99,
    "GAE_LAMBDA": 0.95,
    "CLIP_EPS": 0.2,
    "ENT_COEF": 0.01,
    "VF_COEF": 0.5,
    "MAX_GRAD_NORM": 0.5,
    "ACTIVATION": "tanh",
    "ENV_NAME": "CartPole-v1",
    "ANNEAL_LR": True,
    "DEBUG": False,
}
DQN_CONFIG = {  # purejaxrl/dqn.py's main()
    "NUM_ENVS": 10,
    "BUFFER_SIZE": 10000,
    "BUFFER_BATCH_SIZE": 128,
    "TOTAL_TIMESTEPS": 5e5,
    "EPSILON_START": 1.0,
    "EPSILON_FINISH": 0.05,
    "EPSILON_ANNEAL_TIME": 25e4,
    "TARGET_UPDATE_INTERVAL": 500,
    "LR": 2.5e-4,
    "LEARNING_STARTS": 10000,
    "TRAINING_INTERVAL": 10,
    "LR_LINEAR_DECAY": False,
    "GAMMA": 0.99,
    "TAU": 1.0,
    "ENV_NAME": "CartPole-v1",
    "SEED": 0,
    "NUM_SEEDS": 1,
    "WANDB_MODE": "disabled",
    "ENTITY": "",
    "PROJECT": "",
}
PQN_CONFIG = {  # purejaxql's config/alg/pqn_cartpole.yaml and config.yaml, testing during training off
    "ALG_NAME": "pqn",
    "TOTAL_TIMESTEPS": 5e5,
    "TOTAL_TIMESTEPS_DECAY": 5e5,
    "NUM_ENVS": 32,
    "NUM_STEPS": 64,
    "EPS_START": 1.0,
    "EPS_FINISH": 0.2,
    "EPS_DECAY": 0.2,
    "NUM_MINIBATCHES": 16,
    "NUM_EPOCHS": 4,
    "NORM_INPUT": False,
    "HIDDEN_SIZE": 256,
    "NUM_LAYERS": 2,
    "NORM_TYPE": "layer_norm",
    "LR": 0.0001,
    "MAX_GRAD_NORM": 10,
    "LR_LINEAR_DECAY": True,
    "REW_SCALE": 0.1,
    "GAMMA": 0.99,
    "LAMBDA": 0.95,
    "ENV_NAME": "CartPole-v1",
    "ENV_KWARGS": {},
    "TEST_DURING_TRAINING": False,
    "TEST_INTERVAL": 0.05,
    "TEST_NUM_ENVS": 128,
    "EPS_TEST": 0.0,
    "NUM_SEEDS": 1,
    "SEED": 0,
    "HYP_TUNE": False,
    "WANDB_MODE": "disabled",
    "ENTITY": "",
    "PROJECT": "",
    "WANDB_LOG_ALL_SEEDS": False,
}
CONFIGS = {"ppo": PPO_CONFIG, "dqn": DQN_CONFIG, "pqn": PQN_CONFIG}


def stand_in(name, **attrs):
    """An empty module `name` (and its parents) in sys.modules where the real one is missing."""
    try:
        importlib.import_module(name)
        return
    except ImportError:
        pass
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        sub = ".".join(parts[:i])
        if sub not in sys.modules:
            sys.modules[sub] = types.ModuleType(sub)
        if i > 1:
            setattr(sys.modules[".".join(parts[: i - 1])], parts[i - 1], sys.modules[sub])
    for k, v in attrs.items():
        setattr(sys.modules[name], k, v)


def five_values(out):
    """gymnax 1.0's six step values as PureJaxRL's five (done = terminated or truncated)."""
    if len(out) == 6:
        obs, state, reward, terminated, truncated, info = out
        return obs, state, reward, terminated | truncated, info
    return out


class FiveValueEnv:
    """A gymnax env whose step returns PureJaxRL's five values."""

    def __init__(self, env):
        self._env = env

    def __getattr__(self, name):
        return getattr(self._env, name)

    def step(self, key, state, action, params=None):
        return five_values(self._env.step(key, state, action, params))


def prepare(algo):
    """The adaptations listed in the module's docstring, before the peer's script is imported."""
    import gymnax
    import gymnax.wrappers.purerl as purerl
    import jax

    if not hasattr(jax, "tree_map"):
        jax.tree_map = jax.tree.map
    if algo == "ppo":
        make = gymnax.make

        def five_value_make(name, **kwargs):
            env, params = make(name, **kwargs)
            return FiveValueEnv(env), params

        gymnax.make = five_value_make
    else:

        class FiveValueLogWrapper(purerl.LogWrapper):
            def step(self, key, state, action, params=None):
                return five_values(super().step(key, state, action, params))

        purerl.LogWrapper = FiveValueLogWrapper

    class _Unused:
        def __init__(self, *a, **k):
            raise RuntimeError("a wrapper these benchmark runs do not use")

    stand_in("brax.envs.wrappers.training", EpisodeWrapper=_Unused, AutoResetWrapper=_Unused)
    stand_in("navix")
    stand_in("wandb", init=lambda *a, **k: None, log=lambda *a, **k: None)
    stand_in("hydra", main=lambda *a, **k: lambda f: f)
    stand_in("omegaconf", OmegaConf=None)
    stand_in("safetensors.flax", load_file=None, save_file=None)


def load(script):
    """The peer's script as a module, its folder first on sys.path (it imports wrappers.py)."""
    folder = os.path.dirname(os.path.abspath(script))
    sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("peer_" + os.path.basename(script)[:-3], script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def final_returns(algo, out, seeds):
    """Each seed's mean return at the end of training (PPO: the episodes that ended in the last
    update whose rollout ended any, as a 500-step CartPole episode can outlast one rollout; DQN:
    and PQN: the last 100 updates' logged mean returns); None for a PPO seed whose rollouts ended
    none."""
    import numpy as np

    metrics = out["metrics"]
    result = []
    for s in range(seeds):
        if algo == "ppo":
            returns = np.asarray(metrics["returned_episode_returns"][s])
            ended = np.asarray(metrics["returned_episode"][s])
            with_ends = [u for u in range(ended.shape[0]) if ended[u].any()]
            result.append(float(returns[with_ends[-1]][ended[with_ends[-1]]].mean()) if with_ends else None)
        else:
            key = "returns" if algo == "dqn" else "returned_episode_returns"
            result.append(float(np.asarray(metrics[key][s, -100:]).mean()))
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--script", required=True, help="PureJaxRL's ppo.py or dqn.py")
    p.add_argument("--algo", choices=sorted(CONFIGS), required=True)
    p.add_argument("--seeds", type=int, default=1, help="seeds, vmapped in one program")
    p.add_argument("--total-steps", type=float, default=None)
    a = p.parse_args()
    if a.seeds < 1:
        p.error("--seeds must be at least 1")
    prepare(a.algo)
    import jax

    peer = load(a.script)
    config = dict(CONFIGS[a.algo])
    if a.total_steps:
        config["TOTAL_TIMESTEPS"] = a.total_steps
        if "TOTAL_TIMESTEPS_DECAY" in config:
            config["TOTAL_TIMESTEPS_DECAY"] = a.total_steps
    train = jax.vmap(peer.make_train(config))
    rngs = jax.random.split(jax.random.PRNGKey(30), a.seeds)
    start = time.perf_counter()
    compiled = jax.jit(train).lower(rngs).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    out = jax.block_until_ready(compiled(rngs))
    train_s = time.perf_counter() - start
    print(
        json.dumps(
            {
                "algo": a.algo,
                "seeds": a.seeds,
                "compile_s": compile_s,
                "train_s": train_s,
                "returns": final_returns(a.algo, out, a.seeds),
                "jax": jax.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
