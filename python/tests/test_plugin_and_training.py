"""Plugins, training from Python (the same run folder as cugym train), policies, metrics."""

import json
import os

import cugym
import gymnasium
import numpy as np
import pytest


def read_tensors(path):
    """A safetensors file's F32 tensors by name, read with NumPy alone (the GPU image has no
    safetensors package): an 8-byte header length, the JSON header, the raw little-endian data."""
    raw = open(path, "rb").read()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    data = raw[8 + size :]
    return {
        name: np.frombuffer(data[t["data_offsets"][0] : t["data_offsets"][1]], dtype="<f4").reshape(t["shape"])
        for name, t in header.items()
        if name != "__metadata__" and t["dtype"] == "F32"
    }


def test_plugin_envs_are_registered(plugin_path):
    added = cugym.load_plugin(plugin_path) if "Catch-v0" not in cugym.env_ids() else ["Catch-v0"]
    assert added == ["Catch-v0"]
    assert cugym._cugym.env_license("Catch-v0") == "MIT"  # CUGYM_PLUGIN_LICENSE in examples/custom_env
    assert [p["license"] for p in cugym.plugins() if p["ids"] == ["Catch-v0"]] == ["MIT"]
    envs = gymnasium.make_vec("cugym/Catch-v0", num_envs=4)
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (4, 3)
    envs.step(np.zeros(4, np.int32))


def test_bad_plugin_paths():
    with pytest.raises(ValueError, match="no such file"):
        cugym.load_plugin("/nonexistent/libnothing.so")
    with pytest.raises(ValueError):
        cugym.load_plugin(__file__)


def test_train_writes_the_cli_run_folder(tmp_path):
    run = tmp_path / "run"
    rows = []
    summary = cugym.train(
        env_id="CartPole-v1",
        out=run,
        device="cpu",
        total_steps=3000,
        learning_starts=500,
        log_interval=1000,
        eval_episodes=2,
        eval_interval=1000,
        stop_at_threshold=False,
        progress=False,
        on_log=rows.append,
    )
    assert summary["global_step"] == 3000 and not summary["interrupted"]
    for name in ("config.toml", "metrics.csv", "evals.csv", "best.safetensors", "model.safetensors", "eval.json"):
        assert (run / name).is_file(), name
    # Evaluations during training: every 1000 env steps, the best one's network kept.
    assert summary["best_step"] in (1000, 2000, 3000) and summary["best_model"] == str(run / "best.safetensors")
    assert rows[-1]["eval_return"] <= summary["best_mean_return"]
    assert summary["eval"]["episodes"] == 2
    assert json.loads((run / "eval.json").read_text())["episodes"] == 2
    metrics = cugym.read_metrics(run)
    np.testing.assert_array_equal(metrics["global_step"], [r["global_step"] for r in rows])
    policy = cugym.load_policy(summary["model"])
    assert policy.env_id == "CartPole-v1"
    actions = policy(np.zeros((5, 4), np.float32))
    assert actions.shape == (5,) and actions.dtype == np.int32 and set(actions) <= {0, 1}
    assert policy(np.zeros((3000, 4), np.float32)).shape == (3000,)  # a bigger batch
    with pytest.raises(ValueError, match="exists and is not empty"):
        cugym.train(env_id="CartPole-v1", out=run, total_steps=100, progress=False)
    # The device is left at "auto": on a GPU machine this resumes the CPU run's checkpoint on CUDA,
    # so nothing here compares bits with the CPU.
    resumed = cugym.train(resume=run, total_steps=4000, eval_episodes=0, progress=False)
    assert resumed["resumed"] and resumed["global_step"] == 4000


def test_stopping_at_every_evaluation_and_resuming_gives_the_same_model(tmp_path):
    """on_eval: a true result stops the run with a checkpoint (what cugym.tune does to report
    each evaluation); resuming until the end gives the uninterrupted run's model, byte for byte."""
    keys = dict(
        env_id="CartPole-v1",
        device="cpu",
        total_steps=9000,
        learning_starts=500,
        eval_episodes=3,
        eval_interval=2000,
        stop_at_threshold=False,
        progress=False,
    )
    whole = cugym.train(out=tmp_path / "whole", **keys)
    assert not whole["interrupted"] and whole["global_step"] == 9000
    seen = []
    part = cugym.train(out=tmp_path / "parts", on_eval=lambda e: seen.append(e) or True, **keys)
    # Every resume names the device too: left at "auto", a GPU machine would train the parts with
    # cuBLAS and compare their bytes with the CPU's whole run.
    while part["interrupted"]:
        part = cugym.train(
            resume=tmp_path / "parts", on_eval=lambda e: seen.append(e) or True, progress=False, device="cpu"
        )
    assert [e["global_step"] for e in seen] == [2000, 4000, 6000, 8000]
    assert set(seen[0]) >= {"mean_return", "std_return", "episodes", "wall_time"} and seen[0]["episodes"] == 3
    assert (tmp_path / "parts/model.safetensors").read_bytes() == (tmp_path / "whole/model.safetensors").read_bytes()
    evals = (tmp_path / "whole/evals.csv").read_text().splitlines()
    columns = cugym.read_evals(tmp_path / "whole")
    assert list(columns["global_step"]) == [2000, 4000, 6000, 8000]
    assert list(columns["mean_return"]) == pytest.approx([e["mean_return"] for e in seen], rel=1e-6)
    assert [row.split(",")[2] for row in (tmp_path / "parts/evals.csv").read_text().splitlines()] == [
        row.split(",")[2] for row in evals
    ]
    # A callback that raises stops the run and the error reaches the caller.
    with pytest.raises(ZeroDivisionError):
        cugym.train(out=tmp_path / "raises", on_eval=lambda e: 1 / 0, **keys)


def test_seeds_and_a_sweep_in_one_process(tmp_path, capsys):
    keys = dict(env_id="CartPole-v1", device="cpu", total_steps=2000, learning_starts=500, eval_episodes=3)
    summary = cugym.train(
        out=tmp_path / "batch", seeds=[1, 2], sweep={"learning_rate": [1e-3, 2.3e-3]}, progress=False, **keys
    )
    assert not summary["interrupted"] and summary["env"] == "CartPole-v1"
    points = summary["points"]
    assert [p["point"] for p in points] == ["learning_rate=0.001", "learning_rate=0.0023"]
    assert all(p["seeds"] == 2 and len(p["runs"]) == 2 for p in points)
    run = points[1]["runs"][1]
    assert run["seed"] == 2 and run["run_dir"].endswith("learning_rate=0.0023/seed_2")
    # summary.json's statistics are cugym.stats' (one implementation, agents/run/run_stats.h); the file
    # holds 9 significant digits.
    for point in points:
        finals = [r["final_mean_return"] for r in point["runs"]]
        assert point["final_iqm"] == pytest.approx(cugym.stats.iqm(finals), rel=1e-8)
        assert point["final_mean_ci"] == pytest.approx(
            list(cugym.stats.bootstrap_ci(finals, cugym.stats.mean)), rel=1e-8
        )
    # The same bits as the run alone.
    solo = cugym.train(out=tmp_path / "solo", seed=2, learning_rate=2.3e-3, progress=False, **keys)
    assert (
        open(solo["model"], "rb").read()
        == (tmp_path / "batch/learning_rate=0.0023/seed_2/model.safetensors").read_bytes()
    )
    capsys.readouterr()
    assert cugym.train(resume=tmp_path / "batch", device="cpu")["points"][1]["runs"][1]["seed"] == 2
    assert "runs: 4/4 done, 0 training  latest evaluations: best " in capsys.readouterr().out
    # In lockstep (one batched network for the seeds of a point): the same bits again.
    cugym.train(out=tmp_path / "lockstep", seeds=[2, 3], lockstep=True, learning_rate=2.3e-3, progress=False, **keys)
    assert open(solo["model"], "rb").read() == (tmp_path / "lockstep/seed_2/model.safetensors").read_bytes()
    # PQN's seeds in lockstep share one rollout: each still gives its solo run's bits.
    pqn = dict(env_id="CartPole-v1", device="cpu", algo="pqn", total_steps=1024, eval_episodes=3, progress=False)
    cugym.train(out=tmp_path / "pqn_lockstep", seeds=[1, 2], lockstep=True, jobs=1, **pqn)
    alone = cugym.train(out=tmp_path / "pqn_solo", seed=2, **pqn)
    assert open(alone["model"], "rb").read() == (tmp_path / "pqn_lockstep/seed_2/model.safetensors").read_bytes()
    with pytest.raises(ValueError, match="cannot vary within one batch"):
        cugym.train(out=tmp_path / "b2", seeds=[1], sweep={"hidden_sizes": [[64]]}, progress=False)
    with pytest.raises(ValueError, match="sweep key 'gamma': value 0.9 is listed twice"):
        cugym.train(out=tmp_path / "b5", seeds=[1], sweep={"gamma": [0.9, 0.99, 0.9]}, progress=False)
    assert not (tmp_path / "b5").exists()
    with pytest.raises(ValueError, match="needs out="):
        cugym.train(seeds=[1], progress=False)
    with pytest.raises(ValueError, match="seed= and seeds="):
        cugym.train(out=tmp_path / "b3", seeds=[1], seed=2, progress=False)
    # A seed that is not a whole number >= 0 is refused, not truncated or wrapped.
    for bad, message in [
        (1.5, "seeds must be integers >= 0, got 1.5"),
        (-1, r"seeds must be integers in \[0, 2\*\*64\), got -1"),
        (2**64, "got 18446744073709551616"),
    ]:
        with pytest.raises(ValueError, match=message):
            cugym.train(out=tmp_path / "b6", seeds=[1, bad], progress=False)
    with pytest.raises(ValueError, match="seeds must be an iterable of integers"):
        cugym.train(out=tmp_path / "b6", seeds="1-4", progress=False)
    assert not (tmp_path / "b6").exists()
    # One value of a sweep key needs no list; a string is one value, not its characters.
    with pytest.raises(ValueError, match='sweep learning_rate="abc": learning_rate must be a number'):
        cugym.train(out=tmp_path / "b7", seeds=[1], sweep={"learning_rate": "abc"}, progress=False)


def test_train_config_forms(tmp_path, repo):
    s = cugym.train(
        os.path.join(repo, "configs", "cartpole.toml"),
        out=tmp_path / "a",
        total_steps=600,
        learning_starts=100,
        eval_episodes=0,
        progress=False,
        device="cpu",
    )
    assert s["model"] and s["eval"] is None
    s = cugym.train(
        {"env_id": "Acrobot-v1", "total_steps": 500, "learning_starts": 100, "eval_episodes": 0},
        out=tmp_path / "b",
        progress=False,
        device="cpu",
    )
    assert "Acrobot-v1" in open(s["config"]).read()
    with pytest.raises(ValueError, match="no_such_key"):
        cugym.train(out=tmp_path / "c", no_such_key=1, progress=False)
    with pytest.raises(ValueError, match="learning_rate"):
        cugym.train(out=tmp_path / "d", learning_rate=-1.0, progress=False)
    with pytest.raises(TypeError, match="hidden_sizes"):
        cugym.train(out=tmp_path / "e", hidden_sizes={"a": 1}, progress=False)


def test_pqn_trains_resumes_and_its_model_loads(tmp_path):
    # algo="pqn" without a config file picks the shipped configs/cartpole_pqn.toml (compiled in).
    s = cugym.train(
        env_id="CartPole-v1",
        algo="pqn",
        out=tmp_path / "pqn",
        total_steps=2048,
        eval_episodes=2,
        eval_interval=1024,
        stop_at_threshold=False,
        device="cpu",
        progress=False,
    )
    text = open(s["config"]).read()
    assert 'algo = "pqn"' in text and "num_steps = 32" in text and "layer_norm = true" in text
    assert s["global_step"] == 2048 and s["best_step"] in (1024, 2048)
    policy = cugym.load_policy(s["model"])
    assert policy(np.zeros((3, 4), np.float32)).shape == (3,)
    resumed = cugym.train(resume=tmp_path / "pqn", total_steps=4096, eval_episodes=0, progress=False, device="cpu")
    assert resumed["resumed"] and resumed["global_step"] == 4096


def test_ppo_trains_on_a_box_env_logs_its_losses_and_resumes(tmp_path):
    # algo="ppo" on Pendulum (a Box of actions): the Gaussian policy, both normalizers.
    keys = dict(
        env_id="Pendulum-v1",
        algo="ppo",
        num_envs=4,
        num_steps=64,
        num_minibatches=4,
        num_epochs=2,
        hidden_sizes=[16, 16],
        normalize_obs=True,
        normalize_reward=True,
        anneal_lr=False,  # its schedule spans total_steps, which the resume below extends
        eval_episodes=2,
        eval_interval=512,
        device="cpu",
        progress=False,
    )
    rows = []
    s = cugym.train(out=tmp_path / "ppo", total_steps=1024, on_log=rows.append, log_interval=512, **keys)
    assert s["global_step"] == 1024 and rows
    assert all(k in rows[-1] for k in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac"))
    assert np.isfinite(rows[-1]["value_loss"]) and rows[-1]["learning_rate"] > 0
    header = open(tmp_path / "ppo" / "metrics.csv").readline().strip().split(",")
    assert header[4:11] == [
        "policy_loss",
        "value_loss",
        "entropy",
        "approx_kl",
        "clipfrac",
        "explained_variance",
        "learning_rate",
    ]
    policy = cugym.load_policy(s["model"])
    actions = policy(np.zeros((3, 3), np.float32))
    assert actions.shape == (3, 1) and actions.dtype == np.float32 and np.all(np.abs(actions) <= 2.0)
    # Resumed to 2048 steps, it gives the model of a run that went to 2048 at once.
    cugym.train(resume=tmp_path / "ppo", total_steps=2048, device="cpu", progress=False)
    whole = cugym.train(out=tmp_path / "whole", total_steps=2048, log_interval=512, **keys)
    assert open(whole["model"], "rb").read() == (tmp_path / "ppo" / "model.safetensors").read_bytes()
    # Its seeds in lockstep give each its solo run's model.
    cugym.train(out=tmp_path / "lockstep", seeds=[2, 3], lockstep=True, jobs=1, total_steps=512, **keys)
    alone = cugym.train(out=tmp_path / "solo", seed=3, total_steps=512, **keys)
    assert open(alone["model"], "rb").read() == (tmp_path / "lockstep/seed_3/model.safetensors").read_bytes()
    with pytest.raises(ValueError, match="clip_coef is a PPO key"):
        cugym.train(out=tmp_path / "bad", env_id="CartPole-v1", clip_coef=0.1, progress=False)


def test_sac_trains_logs_its_losses_resumes_and_its_model_rebuilds_in_numpy(tmp_path):
    # algo="sac" on Pendulum: the squashed Gaussian actor, twin critics, the learned temperature.
    keys = dict(
        env_id="Pendulum-v1",
        algo="sac",
        num_envs=2,
        hidden_sizes=[16, 16],
        buffer_size=2000,
        batch_size=32,
        learning_starts=100,
        eval_episodes=2,
        eval_interval=200,
        device="cpu",
        progress=False,
    )
    rows = []
    s = cugym.train(out=tmp_path / "sac", total_steps=400, on_log=rows.append, log_interval=200, **keys)
    assert s["global_step"] == 400 and rows
    assert all(np.isfinite(rows[-1][k]) for k in ("qf1_loss", "qf2_loss", "qf1_values", "actor_loss", "alpha"))
    header = open(tmp_path / "sac" / "metrics.csv").readline().strip().split(",")
    assert header[4:11] == ["qf1_loss", "qf2_loss", "qf1_values", "actor_loss", "alpha", "alpha_loss", "entropy"]
    # The model file: the actor's means then raw log-stds; the action is tanh of the means,
    # rescaled to the Box, which a NumPy rebuild (ReLU layers) gives too.
    policy = cugym.load_policy(s["model"])
    obs = np.random.default_rng(1).uniform(-3.0, 3.0, size=(50, 3)).astype(np.float32)
    actions = policy(obs)
    assert actions.shape == (50, 1) and actions.dtype == np.float32 and np.all(np.abs(actions) < 2.0)
    t = read_tensors(s["model"])
    x = obs.astype(np.float64)
    for layer in range(3):
        x = x @ t[f"{2 * layer}.weight"].astype(np.float64).T + t[f"{2 * layer}.bias"]
        x = np.maximum(x, 0.0) if layer < 2 else x
    assert x.shape == (50, 2)
    np.testing.assert_allclose(actions, -2.0 + (np.tanh(x[:, :1]) + 1.0) * 2.0, rtol=0, atol=1e-5)
    # Resumed to 800 steps, it gives the model of a run that went to 800 at once.
    cugym.train(resume=tmp_path / "sac", total_steps=800, device="cpu", progress=False)
    whole = cugym.train(out=tmp_path / "whole", total_steps=800, log_interval=200, **keys)
    assert open(whole["model"], "rb").read() == (tmp_path / "sac" / "model.safetensors").read_bytes()
    # Its seeds in lockstep give each its solo run's model.
    cugym.train(out=tmp_path / "lockstep", seeds=[2, 3], lockstep=True, jobs=1, total_steps=300, **keys)
    alone = cugym.train(out=tmp_path / "solo", seed=3, total_steps=300, **keys)
    assert open(alone["model"], "rb").read() == (tmp_path / "lockstep/seed_3/model.safetensors").read_bytes()
    with pytest.raises(ValueError, match="alpha is a SAC key"):
        cugym.train(out=tmp_path / "bad", env_id="CartPole-v1", alpha=0.1, progress=False)
    with pytest.raises(ValueError, match="SAC needs a flat Box of actions"):
        cugym.train(out=tmp_path / "bad2", env_id="CartPole-v1", algo="sac", progress=False, device="cpu")


def test_load_policy_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no model file"):
        cugym.load_policy(tmp_path / "missing.safetensors")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
    with pytest.raises(ValueError):
        cugym.load_policy(bad)


def test_report_draws_the_learning_curves_of_a_batch(tmp_path):
    from cugym import report

    keys = dict(env_id="CartPole-v1", device="cpu", total_steps=3000, learning_starts=500, eval_episodes=3)
    cugym.train(
        out=tmp_path / "b",
        seeds=[1, 2, 3, 4],
        sweep={"gamma": [0.98, 0.99]},
        eval_interval=1000,
        progress=False,
        **keys,
    )
    data, threshold, env = report.curves(tmp_path / "b")
    assert env == "CartPole-v1" and threshold == 475
    assert sorted(data) == ["gamma=0.98", "gamma=0.99"]
    steps, centre, low, high, seeds = data["gamma=0.99"]
    assert list(steps) == [1000, 2000, 3000] and seeds == 4
    assert np.all(low <= centre + 1e-9) and np.all(centre <= high + 1e-9)
    # The IQM of four runs is the mean of the middle two.
    evals = [
        np.loadtxt(tmp_path / f"b/gamma=0.99/seed_{s}/evals.csv", delimiter=",", skiprows=1)[:, 2] for s in (1, 2, 3, 4)
    ]
    np.testing.assert_allclose(centre, np.sort(evals, axis=0)[1:3].mean(axis=0))
    pytest.importorskip("matplotlib")
    report.main([str(tmp_path / "b")])
    assert (tmp_path / "b/curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Several batches in one figure (DQN's and PQN's, say).
    report.main([str(tmp_path / "b"), str(tmp_path / "b"), "--out", str(tmp_path / "both.png")])
    assert (tmp_path / "both.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit, match="no summary.json"):
        report.main([str(tmp_path)])
