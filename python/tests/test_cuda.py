"""cugym's vector env and policy on the GPU: results as DLPack device arrays read by PyTorch, CuPy
and JAX without a host round trip, actions from any of them, the CPU back end's bits, stream
ordering, device-side agent loops and bad input. Every test skips without a usable GPU (and each
framework's tests without that framework); with CUGYM_REQUIRE_GPU=1 (scripts/gpu-check.sh's python part)
every such skip is a failure instead: a missing GPU, and a framework that is absent or cannot
see it (test_gpu_required.py shows it). With CUGYM_CUDA_TESTS_ON_CPU=1 (scripts/test.sh) the same
tests run on the CPU back end with NumPy as the framework, less the checks of device-only behaviour, so
CI runs their logic on every change."""

import importlib
import os

import cugym
import numpy as np
import pytest

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX must leave the GPU's memory to the others

REHEARSE = os.environ.get("CUGYM_CUDA_TESTS_ON_CPU") == "1"
REQUIRED = os.environ.get("CUGYM_REQUIRE_GPU") == "1"
DEVICE = "cpu" if REHEARSE else "cuda"
KDL_DEVICE = 1 if REHEARSE else 2  # DLPack's device type of host memory / CUDA memory


def make_vec(env_id, num_envs, **kwargs):
    """cugym.make_vec in the mode these tests compare the back ends in: SAME_STEP with episode
    statistics (the default on CUDA; on the CPU, where NEXT_STEP is the default, it is asked for)."""
    kwargs.setdefault("autoreset_mode", "SameStep")
    kwargs.setdefault("episode_statistics", True)
    return cugym.make_vec(env_id, num_envs, **kwargs)


def test_the_default_mode_is_same_step_on_cuda_next_step_on_the_cpu():
    from gymnasium.vector import AutoresetMode

    envs = cugym.make_vec("CartPole-v1", 2, device=DEVICE)
    want = AutoresetMode.NEXT_STEP if REHEARSE else AutoresetMode.SAME_STEP
    assert envs.metadata["autoreset_mode"] is want
    envs.close()


def unavailable(reason):
    """Skips the current test for `reason`, or fails it under CUGYM_REQUIRE_GPU=1: on the GPU
    machine a case that cannot run is a broken check, not a pass."""
    if REQUIRED:
        pytest.fail(f"CUGYM_REQUIRE_GPU=1, but this case cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def framework_module(name):
    try:
        return importlib.import_module(name)
    except ImportError as e:
        unavailable(f"{name} cannot be imported: {e}")


@pytest.fixture(autouse=True)
def gpu():
    if not REHEARSE and not cugym.cuda_available():
        unavailable("no usable GPU (or a CPU-only build): " + cugym._cugym.cuda_unavailable_reason())


class Torch:
    name = "torch"

    def __init__(self):
        self.torch = framework_module("torch")
        if not self.torch.cuda.is_available():
            unavailable("torch sees no GPU")

    def to_device(self, a):
        return self.torch.from_numpy(np.ascontiguousarray(a)).cuda()

    def from_dlpack(self, x):
        return self.torch.from_dlpack(x)

    def to_host(self, x):
        return x.cpu().numpy()

    def address(self, x):
        return x.data_ptr()


class CuPy:
    name = "cupy"

    def __init__(self):
        self.cp = framework_module("cupy")
        try:
            self.cp.cuda.runtime.getDeviceCount()
        except Exception as e:  # noqa: BLE001 - any CUDA error means no GPU for CuPy
            unavailable(f"cupy sees no GPU: {e}")

    def to_device(self, a):
        return self.cp.asarray(np.ascontiguousarray(a))

    def from_dlpack(self, x):
        return self.cp.from_dlpack(x)

    def to_host(self, x):
        return self.cp.asnumpy(x)

    def address(self, x):
        return x.data.ptr


class Jax:
    name = "jax"

    def __init__(self):
        self.jax = framework_module("jax")
        import jax.numpy as jnp

        self.jnp = jnp
        if not any(d.platform == "gpu" for d in self.jax.devices()):
            unavailable("jax sees no GPU")
        self.gpu = next(d for d in self.jax.devices() if d.platform == "gpu")

    def to_device(self, a):
        return self.jax.device_put(np.ascontiguousarray(a), self.gpu)

    def from_dlpack(self, x):
        return self.jax.dlpack.from_dlpack(x)

    def to_host(self, x):
        return np.asarray(x)

    def address(self, x):
        return x.unsafe_buffer_pointer()


class NumPy:  # the rehearsal's framework: the CPU back end's arrays are NumPy's
    name = "numpy"

    def to_device(self, a):
        return np.array(a)

    def from_dlpack(self, x):
        return np.from_dlpack(x)

    def to_host(self, x):
        return np.asarray(x)

    def address(self, x):
        return x.ctypes.data


FRAMEWORKS = [NumPy] if REHEARSE else [Torch, CuPy, Jax]


def any_framework():
    for f in FRAMEWORKS:
        try:
            return f()
        except pytest.skip.Exception:
            continue
    unavailable("none of torch, cupy, jax can use the GPU")


def actions_for(env_id, n, steps, seed=0):
    rng = np.random.default_rng(seed)
    spec = cugym._cugym.env_spec(env_id)["action_space"]
    if spec["kind"] == "discrete":
        return [rng.integers(0, spec["n"], n).astype(np.int32) for _ in range(steps)]
    low, high = np.asarray(spec["low"], np.float32), np.asarray(spec["high"], np.float32)
    return [rng.uniform(low, high, (n, low.size)).astype(np.float32) for _ in range(steps)]


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "MountainCarContinuous-v0", "Acrobot-v1"])
def test_outputs_are_cuda_arrays_with_the_cpu_bits(env_id):
    """Observations, rewards and flags come back as CUDA DLPack arrays holding exactly the CPU back
    end's values, step after step, autoresets included."""
    fw = any_framework()
    n, steps = 64, 520  # past Acrobot's and Pendulum's time limits: every env resets on the way
    gpu = make_vec(env_id, n, device=DEVICE)
    cpu = make_vec(env_id, n, device="cpu")
    assert gpu.device == DEVICE
    obs_g, _ = gpu.reset(seed=7)
    obs_c, _ = cpu.reset(seed=7)
    assert obs_g.__dlpack_device__()[0] == KDL_DEVICE
    np.testing.assert_array_equal(fw.to_host(fw.from_dlpack(obs_g)), obs_c)
    ended = 0
    for a in actions_for(env_id, n, steps):
        out_g = gpu.step(fw.to_device(a))
        out_c = cpu.step(a)
        for x, want in zip(out_g[:4], out_c[:4]):
            assert x.__dlpack_device__()[0] == KDL_DEVICE
            got = fw.to_host(fw.from_dlpack(x))
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
        assert REHEARSE or out_g[4] == {}  # the info dict stays empty on CUDA (docs/python.md)
        ended += int((out_c[2] | out_c[3]).sum())
    assert ended > 0 or env_id == "MountainCarContinuous-v0"
    gpu.close()
    cpu.close()


@pytest.mark.parametrize("framework", FRAMEWORKS, ids=lambda f: f.name)
def test_actions_and_results_in_each_framework(framework):
    """Each framework's device arrays step the env, and each reads the results in place: no
    copy (two imports of one result share its memory) and no host round trip."""
    fw = framework()
    n = 32
    gpu = make_vec("CartPole-v1", n, device=DEVICE)
    cpu = make_vec("CartPole-v1", n, device="cpu")
    gpu.reset(seed=1)
    cpu.reset(seed=1)
    for a in actions_for("CartPole-v1", n, 60, seed=3):
        obs_g, rew_g, term_g, trunc_g, _ = gpu.step(fw.to_device(a))
        obs_c, rew_c, term_c, trunc_c, _ = cpu.step(a)
        np.testing.assert_array_equal(fw.to_host(fw.from_dlpack(obs_g)), obs_c)
        np.testing.assert_array_equal(
            fw.to_host(fw.from_dlpack(term_g)) | fw.to_host(fw.from_dlpack(trunc_g)), term_c | trunc_c
        )
    first, again = fw.from_dlpack(obs_g), fw.from_dlpack(obs_g)
    assert fw.address(first) == fw.address(again)


def test_results_are_new_arrays_each_step():
    """A step's results are new device memory: what a caller keeps never changes."""
    fw = any_framework()
    n = 16
    envs = make_vec("CartPole-v1", n, device=DEVICE)
    first = fw.from_dlpack(envs.reset(seed=0)[0])
    kept, copies = [first], [fw.to_host(first).copy()]
    for a in actions_for("CartPole-v1", n, 30):
        obs = fw.from_dlpack(envs.step(fw.to_device(a))[0])
        assert all(fw.address(obs) != fw.address(k) for k in kept)
        kept.append(obs)
        copies.append(fw.to_host(obs).copy())
    for k, c in zip(kept, copies):
        np.testing.assert_array_equal(fw.to_host(k), c)


def test_stream_ordering_with_torch_side_streams():
    """Actions written on a side stream just before the step are the ones stepped (the step waits
    for the producer's stream through __dlpack__), and results read on another stream right after
    it are complete (the step synchronizes before returning)."""
    fw = Torch()
    torch = fw.torch
    n = 4096
    gpu = make_vec("CartPole-v1", n, device=DEVICE)
    cpu = make_vec("CartPole-v1", n, device="cpu")
    gpu.reset(seed=5)
    cpu.reset(seed=5)
    big = torch.randn(4096, 4096, device=DEVICE)
    producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
    for t, a in enumerate(actions_for("CartPole-v1", n, 20, seed=9)):
        with torch.cuda.stream(producer):
            slow = big
            for _ in range(4):  # tens of milliseconds of work queued ahead of the actions
                slow = slow @ big / 64.0
            given = torch.from_numpy(a).to(DEVICE)
            actions = torch.where(torch.isfinite(slow[0, 0]), given, given)  # the same values, once `slow` is done
            out = gpu.step(actions)
        with torch.cuda.stream(consumer):
            obs = torch.from_dlpack(out[0]).clone()
        torch.cuda.synchronize()
        obs_c = cpu.step(a)[0]
        np.testing.assert_array_equal(obs.cpu().numpy(), obs_c, err_msg=f"step {t}")


def test_device_side_agent_loop_matches_the_cpu():
    """A whole agent loop on the device: the env's observations go straight into a cugym policy on
    CUDA, its actions straight back into the env, with the CPU loop's actions and observations."""
    import tempfile

    out = os.path.join(tempfile.mkdtemp(), "run")
    summary = cugym.train(
        env_id="CartPole-v1", out=out, device="cpu", total_steps=3000, eval_episodes=2, progress=False
    )
    fw = any_framework()
    policy_g = cugym.load_policy(summary["model"], device=DEVICE)
    policy_c = cugym.load_policy(summary["model"], device="cpu")
    n = 256
    gpu = make_vec("CartPole-v1", n, device=DEVICE)
    cpu = make_vec("CartPole-v1", n, device="cpu")
    obs_g, _ = gpu.reset(seed=2)
    obs_c, _ = cpu.reset(seed=2)
    differ = 0
    for _ in range(100):
        act_g = policy_g(obs_g)
        assert act_g.__dlpack_device__()[0] == KDL_DEVICE
        act = fw.to_host(fw.from_dlpack(act_g))
        differ += int((act != policy_c(obs_c)).sum())  # cuBLAS sums in another order: a near-tie may flip
        obs_g = gpu.step(act_g)[0]
        obs_c = cpu.step(act)[0]
        np.testing.assert_array_equal(fw.to_host(fw.from_dlpack(obs_g)), obs_c)
    assert differ <= n  # at most 1% of the 100 * n greedy actions


def test_disabled_mode_reset_mask_and_finished_rows_on_cuda():
    """DISABLED on CUDA: ended envs keep their last state until a masked reset; done_indices and
    finished copy only the rows of the envs that ended."""
    fw = any_framework()
    n = 8
    gpu = make_vec("CartPole-v1", n, device=DEVICE, autoreset_mode="Disabled")
    cpu = make_vec("CartPole-v1", n, device="cpu", autoreset_mode="Disabled")
    gpu.reset(seed=4)
    cpu.reset(seed=4)
    ones = np.ones(n, np.int32)
    for _ in range(200):
        obs_g, _, term_g, trunc_g, _ = gpu.step(fw.to_device(ones))
        obs_c, _, term_c, trunc_c, _ = cpu.step(ones)
        done = term_c | trunc_c
        if done.any():
            break
    assert done.any()
    np.testing.assert_array_equal(fw.to_host(fw.from_dlpack(term_g)) | fw.to_host(fw.from_dlpack(trunc_g)), done)
    idx = gpu._env.done_indices()
    np.testing.assert_array_equal(idx, np.flatnonzero(done))
    rows, returns, lengths = gpu._env.finished(idx)
    rows_c, returns_c, lengths_c = cpu._env.finished(idx)
    np.testing.assert_array_equal(rows, rows_c)
    np.testing.assert_array_equal(returns, returns_c)
    np.testing.assert_array_equal(lengths, lengths_c)
    new_g, _ = gpu.reset(options={"reset_mask": done})
    new_c, _ = cpu.reset(options={"reset_mask": done})
    np.testing.assert_array_equal(fw.to_host(fw.from_dlpack(new_g)), new_c)
    np.testing.assert_array_equal(fw.to_host(fw.from_dlpack(new_g))[~done], obs_c[~done])


def test_render_and_auto_device():
    envs = make_vec("CartPole-v1", 3, device="auto" if not REHEARSE else "cpu", render_mode="rgb_array")
    assert envs.device == DEVICE
    envs.reset(seed=0)
    frames = envs.render()
    assert len(frames) == 3 and frames[0].shape == (400, 600, 3) and frames[0].dtype == np.uint8
    cpu = make_vec("CartPole-v1", 3, device="cpu", render_mode="rgb_array")
    cpu.reset(seed=0)
    for a, b in zip(frames, cpu.render()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("framework", FRAMEWORKS, ids=lambda f: f.name)
def test_bad_device_input_raises_clear_errors(framework):
    fw = framework()
    n = 4
    envs = make_vec("CartPole-v1", n, device=DEVICE)
    envs.reset(seed=0)
    if not REHEARSE:  # what only a device env refuses
        with pytest.raises(ValueError, match="device"):
            envs.step(np.zeros(n, np.int32))  # host memory
        if fw.name != "jax":  # JAX makes int64 int32 (jax_enable_x64 off)
            with pytest.raises(TypeError, match="int32"):
                envs.step(fw.to_device(np.zeros(n, np.int64)))  # wrong dtype
        with pytest.raises(TypeError, match="int32"):
            envs.step(fw.to_device(np.zeros(n, np.float32)))
        if fw.name != "jax":  # a JAX slice is a new contiguous array
            with pytest.raises(ValueError, match="contiguous"):
                envs.step(fw.to_device(np.zeros(2 * n, np.int32))[::2])
        with pytest.raises(ValueError, match="NEXT_STEP"):
            make_vec("CartPole-v1", n, device=DEVICE, autoreset_mode="NextStep")
    with pytest.raises(ValueError, match="shape"):
        envs.step(fw.to_device(np.zeros(n + 1, np.int32)))
    with pytest.raises(ValueError, match="shape"):
        envs.step(fw.to_device(np.zeros((n, 1), np.int32)))
    box = make_vec("Pendulum-v1", n, device=DEVICE)
    box.reset(seed=0)
    if not REHEARSE and fw.name != "jax":
        with pytest.raises(TypeError, match="float32"):
            box.step(fw.to_device(np.zeros((n, 1), np.float64)))
    box.step(fw.to_device(np.zeros((n, 1), np.float32)))
    envs.step(fw.to_device(np.zeros(n, np.int32)))  # still fine after the errors
    envs.close()
    with pytest.raises(RuntimeError, match="closed"):
        envs.step(fw.to_device(np.zeros(n, np.int32)))


def test_a_cpu_tensor_on_a_cuda_env_is_refused():
    torch = Torch().torch
    envs = make_vec("CartPole-v1", 4, device=DEVICE)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="device"):
        envs.step(torch.zeros(4, dtype=torch.int32))


class _Recorder:
    """A framework's array seen through DLPack only, recording the `stream` each __dlpack__ call
    asks for (and NumPy's __array__, the CPU path's way in)."""

    def __init__(self, inner):
        self.inner, self.streams = inner, []

    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        self.streams.append(kwargs.get("stream"))
        return self.inner.__dlpack__(**kwargs)

    def __array__(self, *args, **kwargs):
        return np.asarray(self.inner)


def test_device_actions_are_taken_on_the_envs_stream():
    """On CUDA the step asks the producer for its actions with __dlpack__(stream=S), S the env's own
    stream as an integer (never None, -1 or the default streams 0, 1, 2), the same every step, so
    the producer orders its writes before the step's reads; the results are the CPU's. The CPU
    path reads host arrays through NumPy, as before, and asks for no stream."""
    fw = any_framework()
    n = 16
    gpu = make_vec("CartPole-v1", n, device=DEVICE)
    cpu = make_vec("CartPole-v1", n, device="cpu")
    gpu.reset(seed=3)
    cpu.reset(seed=3)
    streams = []
    for a in actions_for("CartPole-v1", n, 20, seed=4):
        actions = _Recorder(fw.to_device(a))
        obs_g = gpu.step(actions)[0]
        obs_c = cpu.step(a)[0]
        np.testing.assert_array_equal(fw.to_host(fw.from_dlpack(obs_g)), obs_c)
        streams += actions.streams
        if REHEARSE:
            assert actions.streams == []
        else:
            assert len(actions.streams) == 1
            assert isinstance(actions.streams[0], int) and actions.streams[0] not in (-1, 0, 1, 2)
    assert len(set(streams)) <= 1


def test_actions_on_another_gpu_are_refused_and_results_name_their_gpu():
    """Results carry the DLPack device id of the GPU the env lives on, and actions whose DLPack
    device is another GPU are refused before anything reads them, naming both devices. With two
    GPUs, an env made on the second stays there whatever device is current later."""
    import enum

    kind = enum.IntEnum("DLDeviceType", {"kDLCPU": 1, "kDLCUDA": 2})

    class Foreign:
        def __dlpack_device__(self):
            return (kind.kDLCUDA, 7)

        def __dlpack__(self, **kwargs):
            raise AssertionError("a refused array was read")

        def __array__(self, *args, **kwargs):
            raise AssertionError("a refused array was read")

    n = 4
    envs = make_vec("CartPole-v1", n, device=DEVICE)
    obs, _ = envs.reset(seed=0)
    where = obs.__dlpack_device__()
    assert where[0] == KDL_DEVICE
    mine = "cpu" if REHEARSE else f"cuda:{where[1]}"
    with pytest.raises(ValueError, match=rf"actions are on device cuda:7, but this env is on device {mine}"):
        envs.step(Foreign())
    fw = any_framework()
    envs.step(fw.to_device(np.zeros(n, np.int32)))  # still fine
    if REHEARSE:
        return
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available():
        return
    assert where[1] == torch.cuda.current_device()
    if torch.cuda.device_count() < 2:
        return
    with torch.cuda.device(1):
        second = make_vec("CartPole-v1", n, device=DEVICE)
        obs, _ = second.reset(seed=0)
    assert obs.__dlpack_device__()[1] == 1 and torch.from_dlpack(obs).device.index == 1
    with pytest.raises(ValueError, match="cuda:0.*cuda:1"):
        second.step(torch.zeros(n, dtype=torch.int32, device="cuda:0"))
    out = second.step(torch.zeros(n, dtype=torch.int32, device="cuda:1"))  # current device: 0
    assert torch.from_dlpack(out[0]).device.index == 1


def test_masked_reset_on_the_device_keeps_the_other_envs_flags():
    """DISABLED on the env's device: a masked reset of some of the ended envs leaves the others'
    flags set in the env's new arrays (done_indices reads them), and a refused mask changes
    neither the arrays a caller holds nor the envs."""
    fw = any_framework()
    n = 8
    envs = make_vec("CartPole-v1", n, device=DEVICE, autoreset_mode="Disabled")
    envs.reset(seed=4)
    ones = fw.to_device(np.ones(n, np.int32))
    for _ in range(200):
        out = envs.step(ones)
        done = fw.to_host(fw.from_dlpack(out[2])) | fw.to_host(fw.from_dlpack(out[3]))
        if done.sum() >= 2:
            break
    assert done.sum() >= 2
    held = [fw.to_host(fw.from_dlpack(x)).copy() for x in out[:4]]
    states = envs._env.get_states(0, n)
    with pytest.raises(ValueError):
        envs._env.reset_masked(done.astype(np.uint8))
    assert envs._env.get_states(0, n) == states
    np.testing.assert_array_equal(envs._env.done_indices(), np.flatnonzero(done))
    ended = np.flatnonzero(done)
    mask = np.zeros(n, bool)
    mask[ended[0]] = True
    new_obs, _ = envs.reset(options={"reset_mask": mask})
    np.testing.assert_array_equal(envs._env.done_indices(), ended[1:])
    np.testing.assert_array_equal(fw.to_host(fw.from_dlpack(new_obs))[~mask], held[0][~mask])
    for x, copy in zip(out[:4], held):
        np.testing.assert_array_equal(fw.to_host(fw.from_dlpack(x)), copy)
