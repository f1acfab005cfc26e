"""cugym.tune on a real two-node Ray cluster that talks over 127.0.0.1 and nothing else, and a real
fault: a node killed in the middle of a sweep.

scripts/test.sh runs this file on its own, in a network namespace of its own (`unshare -n`, only
loopback up), with Ray installed into the test venv; the main pytest run leaves it out. The
cluster is Ray's Python `Cluster` with node-IP detection held to 127.0.0.1
(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, set before Ray is imported; Ray 2.x then detects the node IP
as 127.0.0.1, as it does on macOS and Windows):
`ray start` would swap 127.0.0.1 for the machine's address. The test starts every process itself,
checks that every socket they listen on is on 127.0.0.1, stops them by their pids and checks that
none is left."""

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

for name, value in {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # node IP 127.0.0.1, as on macOS
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_memory_monitor_refresh_ms": "0",  # a shared 2-core machine: no OOM killer of Ray's own
    "TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S": "0",
    "RAY_DEDUP_LOGS": "0",
}.items():
    os.environ.setdefault(name, value)

if os.environ.get("CUGYM_REQUIRE_RAY") == "1":
    import ray
else:
    ray = pytest.importorskip("ray")
import cugym  # noqa: E402
import cugym.tune  # noqa: E402
from ray import tune  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

# Small CartPole runs: 4 evaluations of 3 episodes (4 reports and a final one).
KEYS = dict(
    env_id="CartPole-v1",
    device="cpu",
    total_steps=8000,
    learning_starts=500,
    log_interval=1000,
    eval_interval=2000,
    eval_episodes=3,
    stop_at_threshold=False,
)


def children():
    """{pid: ppid} of every process on the machine."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            parents[int(entry)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    return parents


def tree(roots):
    """The pids of `roots` and all their descendants."""
    parents = children()
    found, frontier = set(roots), list(roots)
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                found.add(child)
                frontier.append(child)
    return found


def node_pids(node):
    return {info.process.pid for infos in node.all_processes.values() for info in infos if info.process is not None}


def listening_addresses(pids):
    """The local addresses of the TCP sockets in LISTEN state that `pids` hold."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                    found.append(fields[1].split(":")[0])
    return found


LOOPBACK = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}


@pytest.fixture(scope="module")
def cluster():
    os.makedirs("/tmp/ray", exist_ok=True)  # Cluster writes /tmp/ray/ray_current_cluster
    temp = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Unix socket paths live in it
    c = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "node_ip_address": "127.0.0.1",
            "include_dashboard": False,
            "temp_dir": temp,
            "object_store_memory": 10**8,
            "resources": {"head": 1},
            # A dead node is noticed within about 2 s, not 30.
            "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 4},
        },
    )
    second = c.add_node(num_cpus=1, node_ip_address="127.0.0.1", resources={"second": 1}, object_store_memory=10**8)
    ray.init(address=c.address, log_to_driver=False)
    started = node_pids(c.head_node) | node_pids(second)
    try:
        yield c, second
    finally:
        everything = tree(started)
        ray.shutdown()
        c.shutdown()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and alive(everything):
            time.sleep(0.2)
        for pid in alive(everything):  # nothing of ours may outlive the test
            os.kill(pid, signal.SIGKILL)
        assert not alive(everything), "Ray processes outlived the cluster's shutdown"


def alive(pids):
    """The pids still running (zombies do not count)."""
    running = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] != "Z":
            running.add(pid)
    return running


def tuner(storage, name, seeds, **run):
    return tune.Tuner(
        tune.with_resources(cugym.tune.trainable, {"cpu": 1}),
        param_space=dict(KEYS, seed=tune.grid_search(seeds)),
        tune_config=tune.TuneConfig(metric="mean_return", mode="max", max_concurrent_trials=2),
        run_config=tune.RunConfig(name=name, storage_path=str(storage), verbose=0, **run),
    )


def test_a_sweep_runs_on_both_nodes_over_loopback_only(cluster, tmp_path):
    c, second = cluster
    t0 = time.monotonic()
    grid = tuner(tmp_path, "both", [1, 2]).fit()
    assert grid.num_errors == 0
    nodes = set()
    for result in grid:
        m = result.metrics
        assert m["final"] and m["env_steps"] == 8000 and m["training_iteration"] == 5  # 4 evaluations + the end
        assert m["episodes"] == 3 and m["std_error"] >= 0
        nodes.add(m["node_id"])
        assert os.path.isfile(os.path.join(result.checkpoint.path, "model.safetensors"))
    assert nodes == {c.head_node.node_id, second.node_id}, "one trial per node (one CPU each)"
    # Every socket any process of the cluster listens on (GCS, raylets, workers, agents) is on
    # 127.0.0.1; in the test's own network namespace there is no other address anyway.
    addresses = listening_addresses(tree(node_pids(c.head_node) | node_pids(second)))
    assert addresses and set(addresses) <= LOOPBACK, addresses
    assert time.monotonic() - t0 < 240


def test_the_example_sweep_runs_on_the_cluster(cluster, tmp_path, repo):
    c, _ = cluster
    out = subprocess.run(
        [sys.executable, os.path.join(repo, "examples", "sweep_ray_tune.py"), "--address", c.address]
        + ["--samples", "1", "--seeds", "1", "--total-steps", "6000", "--eval-interval", "2000", "--eval-episodes", "3"]
        + ["--storage", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    # ASHA may stop the weaker of the two at its first rung; at least the better one trains to the end.
    assert re.search(r"^2 trials, [12] trained to the end, 0 failed", out.stdout, re.M), out.stdout
    assert "best: {'learning_rate': " in out.stdout and "its run folder" in out.stdout, out.stdout


def test_a_trial_on_a_killed_node_resumes_to_the_same_model(cluster, tmp_path):
    c, second = cluster
    keys = dict(KEYS, total_steps=24000)
    # The uninterrupted runs, here in the test's process.
    reference = {}
    for seed in (3, 4):
        run = tmp_path / f"reference_{seed}"
        cugym.train(
            out=run, seed=seed, device="cpu", progress=False, **{k: v for k, v in keys.items() if k != "device"}
        )
        reference[seed] = (run / "model.safetensors").read_bytes()

    storage = tmp_path / "ray"
    killed = {}

    def kill_second_node_mid_trial():
        # The trial on the second node is the one whose worker (a child of that node's raylet) runs
        # in a working folder named after the trial (.../kill/working_dirs/<trial>) and holds its
        # run folder's event file open. Once that run has evaluated twice (reported,
        # checkpointed), SIGKILL every process of that node: the pids its Cluster started and
        # their children.
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            pids = tree(node_pids(second))
            for pid in pids:
                try:
                    cwd = os.readlink(f"/proc/{pid}/cwd")
                    files = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
                except OSError:
                    continue
                trial = os.path.basename(cwd)
                runs = [os.path.dirname(f) for f in files if "tfevents" in os.path.basename(f)]
                evals = os.path.join(runs[0], "evals.csv") if runs else ""
                if os.path.basename(os.path.dirname(cwd)) == "working_dirs" and os.path.exists(evals):
                    with open(evals) as f:
                        if len(f.readlines()) >= 3:  # the header and two evaluations
                            for victim in pids:
                                try:
                                    os.kill(victim, signal.SIGKILL)
                                except ProcessLookupError:
                                    pass
                            killed.update(trial=trial, pids=pids)
                            return
            time.sleep(0.02)

    watcher = threading.Thread(target=kill_second_node_mid_trial)
    watcher.start()
    t0 = time.monotonic()
    grid = tune.Tuner(
        tune.with_resources(cugym.tune.trainable, {"cpu": 1}),
        param_space=dict(keys, seed=tune.grid_search([3, 4])),
        tune_config=tune.TuneConfig(metric="mean_return", mode="max", max_concurrent_trials=2),
        run_config=tune.RunConfig(
            name="kill", storage_path=str(storage), verbose=0, failure_config=tune.FailureConfig(max_failures=3)
        ),
    ).fit()
    watcher.join()
    c.remove_node(second, allow_graceful=False)  # the bookkeeping; its processes are gone already
    assert "trial" in killed, "the second node never ran a trial to kill"
    assert not alive(killed["pids"])
    # Every trial finished; the one that was killed was retried from its last report, on the head,
    # and ends with the model bits of the uninterrupted run.
    assert grid.num_errors == 0
    retried = 0
    for result in grid:
        assert result.metrics["final"] and result.metrics["env_steps"] == 24000
        model = open(os.path.join(result.checkpoint.path, "model.safetensors"), "rb").read()
        assert model == reference[result.config["seed"]], f"seed {result.config['seed']}"
        if os.path.basename(result.path) == killed["trial"]:
            retried += 1
            assert os.path.exists(os.path.join(result.path, "error.txt"))
            assert result.metrics["node_id"] == c.head_node.node_id
    assert retried == 1
    assert time.monotonic() - t0 < 300
