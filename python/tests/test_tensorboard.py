"""TensorBoard event files of a training run, read by TensorBoard's own reader (EventAccumulator,
from the ``tensorboard`` package that scripts/test.sh installs into the test venv): every scalar
equals metrics.csv's and evals.csv's, also after a SIGKILL and a resume. The reader silently stops
at a bad record, so the counts are checked exactly."""

import csv
import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import cugym
import pytest

if os.environ.get("CUGYM_REQUIRE_TENSORBOARD") == "1":
    from tensorboard.backend.event_processing import event_accumulator as ea
else:
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")

METRIC_TAGS = {
    "episodic_return": "charts/episodic_return",
    "episodic_length": "charts/episodic_length",
    "td_loss": "losses/td_loss",
    "q_values": "losses/q_values",
    "epsilon": "charts/epsilon",
    "sps": "charts/SPS",
}
EVAL_TAGS = {"mean_return": "eval/mean_return", "std_return": "eval/std_return"}
# PPO's columns and CleanRL ppo.py's tags for them.
SAC_TAGS = {
    "episodic_return": "charts/episodic_return",
    "episodic_length": "charts/episodic_length",
    "qf1_loss": "losses/qf1_loss",
    "qf2_loss": "losses/qf2_loss",
    "qf1_values": "losses/qf1_values",
    "actor_loss": "losses/actor_loss",
    "alpha": "losses/alpha",
    "alpha_loss": "losses/alpha_loss",
    "sps": "charts/SPS",
}
PPO_TAGS = {
    "episodic_return": "charts/episodic_return",
    "episodic_length": "charts/episodic_length",
    "policy_loss": "losses/policy_loss",
    "value_loss": "losses/value_loss",
    "entropy": "losses/entropy",
    "approx_kl": "losses/approx_kl",
    "clipfrac": "losses/clipfrac",
    "explained_variance": "losses/explained_variance",
    "learning_rate": "charts/learning_rate",
    "sps": "charts/SPS",
}


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def scalars(run_dir):
    """{tag: [(step, value), ...]} over every event file of the run, in file order."""
    acc = ea.EventAccumulator(os.fspath(run_dir), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def expected(run_dir, metric_tags=METRIC_TAGS):
    """What the event files must hold, from metrics.csv and evals.csv: the CSV logs' non-empty
    fields under their tags (metrics.csv has six significant digits, evals.csv exact text)."""
    want = {}
    for row in read_csv(os.path.join(run_dir, "metrics.csv")):
        for column, tag in metric_tags.items():
            if row[column] != "":
                want.setdefault(tag, []).append((int(row["global_step"]), float(row[column])))
    for row in read_csv(os.path.join(run_dir, "evals.csv")):
        for column, tag in EVAL_TAGS.items():
            want.setdefault(tag, []).append((int(row["global_step"]), float(row[column])))
    return want


def assert_pairs(got, want, tag):
    assert [s for s, _ in got] == [s for s, _ in want], tag  # every step once, in order
    for (step, a), (_, b) in zip(got, want):
        assert a == pytest.approx(b, rel=1e-5, abs=1e-30), (tag, step)


def assert_same(got, want, tags):
    for tag in tags:
        assert_pairs(got.get(tag, []), want.get(tag, []), tag)


def test_event_files_hold_the_csv_logs(tmp_path):
    run = tmp_path / "run"
    # The shipped CartPole config reaches the threshold for nearly every seed by 20k-30k steps.
    summary = cugym.train(
        env_id="CartPole-v1",
        out=run,
        total_steps=40000,
        eval_interval=5000,
        eval_episodes=20,
        stop_at_threshold=False,
        progress=False,
    )
    files = [name for name in os.listdir(run) if "tfevents" in name]
    assert len(files) == 1 and files[0].startswith("events.out.tfevents.")
    got = scalars(run)
    want = expected(run)
    assert set(METRIC_TAGS.values()) | set(EVAL_TAGS.values()) <= set(got)
    assert_same(got, want, list(METRIC_TAGS.values()) + list(EVAL_TAGS.values()))
    assert len(got["charts/SPS"]) == 40000 // 2000
    # The first evaluation at the threshold gives the seconds of training it took, once.
    if summary["threshold_step"] is None:
        assert "eval/time_to_threshold" not in got
    else:
        ((step, seconds),) = got["eval/time_to_threshold"]
        assert step == summary["threshold_step"]
        assert seconds == pytest.approx(summary["threshold_seconds"], rel=1e-6)


def test_ppo_event_files_hold_its_csv_columns_under_cleanrls_tags(tmp_path):
    run = tmp_path / "ppo"
    cugym.train(
        env_id="CartPole-v1",
        algo="ppo",
        out=run,
        total_steps=8192,
        log_interval=1024,
        eval_interval=4096,
        eval_episodes=5,
        stop_at_threshold=False,
        device="cpu",
        progress=False,
    )
    got = scalars(run)
    want = expected(run, PPO_TAGS)
    assert set(PPO_TAGS.values()) | set(EVAL_TAGS.values()) <= set(got)
    assert not {"losses/td_loss", "charts/epsilon"} & set(got)
    assert_same(got, want, list(PPO_TAGS.values()) + list(EVAL_TAGS.values()))


def test_sac_event_files_hold_its_csv_columns_under_cleanrls_tags(tmp_path):
    run = tmp_path / "sac"
    cugym.train(
        env_id="Pendulum-v1",
        algo="sac",
        out=run,
        num_envs=4,
        hidden_sizes=[16, 16],
        batch_size=32,
        learning_starts=200,
        total_steps=1600,
        log_interval=400,
        eval_interval=800,
        eval_episodes=2,
        device="cpu",
        progress=False,
    )
    got = scalars(run)
    want = expected(run, SAC_TAGS)
    assert set(SAC_TAGS.values()) | set(EVAL_TAGS.values()) <= set(got)
    assert not {"losses/td_loss", "losses/policy_loss"} & set(got)
    assert_same(got, want, list(SAC_TAGS.values()) + list(EVAL_TAGS.values()))


def test_tensorboard_off_writes_no_event_file(tmp_path):
    cugym.train(
        env_id="CartPole-v1", out=tmp_path, total_steps=2000, eval_episodes=0, tensorboard=False, progress=False
    )
    assert not [name for name in os.listdir(tmp_path) if "tfevents" in name]
    assert (tmp_path / "metrics.csv").is_file()


def test_a_killed_run_is_readable_and_resumes_without_duplicates(tmp_path):
    run = tmp_path / "run"
    script = textwrap.dedent(f"""
        import cugym
        cugym.train(env_id="CartPole-v1", out={os.fspath(run)!r}, device="cpu", total_steps=10**8,
                    log_interval=500, checkpoint_interval=4000, eval_interval=3000, eval_episodes=5,
                    progress=False)
    """)
    child = subprocess.Popen([sys.executable, "-c", script])
    checkpoints = run / "checkpoints"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            done = sorted(p for p in checkpoints.glob("step_*.safetensors") if ".replay." not in p.name)
            if len(done) >= 2:  # past two checkpoints: logged rows after the last one
                break
            time.sleep(0.05)
        time.sleep(0.3)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL, "the run ended before it was killed"

    # Killed at any moment: the reader takes every whole record, which is metrics.csv's rows (the
    # last row may have been logged and the process killed before its event was written).
    killed = scalars(run)
    want = expected(run)
    sps = killed["charts/SPS"]
    assert len(want["charts/SPS"]) - 1 <= len(sps) <= len(want["charts/SPS"])
    assert_pairs(sps, want["charts/SPS"][: len(sps)], "charts/SPS")

    last = max(p for p in checkpoints.glob("step_*.safetensors") if ".replay." not in p.name)
    checkpoint_step = int(last.name[len("step_") :].split(".")[0])
    summary = cugym.train(resume=run, total_steps=checkpoint_step + 4000, eval_episodes=5, progress=False)
    assert summary["global_step"] == checkpoint_step + 4000 and not summary["interrupted"]
    assert len([name for name in os.listdir(run) if "tfevents" in name]) == 2
    got = scalars(run)
    want = expected(run)
    assert_same(got, want, list(METRIC_TAGS.values()) + list(EVAL_TAGS.values()))
    steps = [s for s, _ in got["charts/SPS"]]
    assert steps == sorted(set(steps)) and steps[-1] == checkpoint_step + 4000
    assert not math.isnan(got["charts/epsilon"][-1][1])
