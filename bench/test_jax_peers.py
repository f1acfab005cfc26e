# test_jax_peers.py - tests of bench/jax_peers.py and jax_peer_run.py without cugym, JAX or
# PureJaxRL: the cugym commands for the peer's settings, a run folder's last returns, the peer's
# JSON line, medians and the table, the command shown with no path outside the repository, the
# run helpers against a stand-in `cugym` and a stand-in peer Python, and jax_peer_run.py's
# adaptations (gymnax's six step values as five, stand-in modules). Run from the repository root:
#   python3 -m pytest bench/test_jax_peers.py   (or python3 -m unittest bench/test_jax_peers.py)
import os
import stat
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax_peer_run  # noqa: E402
import jax_peers  # noqa: E402


def executable(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


# A stand-in `cugym train`: writes metrics.csv into each run folder it is asked for, the last row's
# return 100 + the seed.
FAKE_CUGYM = """#!/usr/bin/env python3
import os, sys
a = sys.argv[1:]
out = a[a.index("--out") + 1]
if "--seeds" in a:
    last = int(a[a.index("--seeds") + 1].split("-")[1])
    folders = [(os.path.join(out, f"seed_{s}"), s) for s in range(1, last + 1)]
else:
    folders = [(out, int(a[a.index("--seed") + 1]))]
for folder, seed in folders:
    os.makedirs(folder)
    with open(os.path.join(folder, "metrics.csv"), "w") as f:
        f.write("global_step,episodic_return\\n100,5\\n200,\\n300,%d\\n400,nan\\n" % (100 + seed))
"""

# A stand-in for the JAX Python running jax_peer_run.py: prints a line, then the result line.
FAKE_PEER = """#!/usr/bin/env python3
import json, sys
a = sys.argv[1:]
seeds = int(a[a.index("--seeds") + 1])
print("compiling")
print(json.dumps({"algo": a[a.index("--algo") + 1], "seeds": seeds, "compile_s": 4.0, "train_s": 2.0 * seeds,
                  "returns": [400.0] * seeds, "jax": "0.0"}))
"""


class CommandTest(unittest.TestCase):
    def test_one_seed_and_lockstep_seeds(self):
        one = jax_peers.cugym_command("cugym", "ppo", 1, 500000, "OUT")
        self.assertEqual(one[:4], ["cugym", "train", "--device", "cpu"])
        self.assertIn("algo=ppo", one)
        self.assertEqual(one[-4:], ["--seed", "1", "--out", "OUT"])
        for key in ("eval_episodes=0", "checkpoint_interval=0", "stop_at_threshold=false"):
            self.assertIn(key, one)
        self.assertEqual(one[one.index("--total-steps") + 1], "500000")
        many = jax_peers.cugym_command("cugym", "dqn", 8, 1000, "OUT")
        self.assertEqual(many[-6:], ["--seeds", "1-8", "--lockstep", "on", "--out", "OUT"])

    def test_pqn_takes_purejaxqls_settings(self):
        cmd = jax_peers.cugym_command("cugym", "pqn", 1, 500000, "OUT")
        sets = {cmd[i + 1].split("=")[0]: cmd[i + 1].split("=", 1)[1] for i, x in enumerate(cmd) if x == "--set"}
        # pqn_cartpole.yaml: 32 envs x 64 steps, 4 epochs x 16 minibatches, 256-256 layer norm.
        self.assertEqual(sets["algo"], "pqn")
        self.assertEqual((sets["num_envs"], sets["num_steps"]), ("32", "64"))
        self.assertEqual((sets["num_epochs"], sets["num_minibatches"]), ("4", "16"))
        self.assertEqual((sets["hidden_sizes"], sets["layer_norm"]), ("[256,256]", "true"))
        self.assertEqual((sets["q_lambda"], sets["reward_scale"], sets["end_e"]), ("0.95", "0.1", "0.2"))

    def test_dqn_takes_purejaxrls_settings(self):
        cmd = jax_peers.cugym_command("cugym", "dqn", 1, 500000, "OUT")
        sets = {cmd[i + 1].split("=")[0]: cmd[i + 1].split("=", 1)[1] for i, x in enumerate(cmd) if x == "--set"}
        # dqn.py: 10 envs, buffer 10,000, batch 128, update every 10 env steps, hard target every 500.
        self.assertEqual(sets["num_envs"], "10")
        self.assertEqual(sets["buffer_size"], "10000")
        self.assertEqual(sets["batch_size"], "128")
        self.assertEqual(sets["replay_ratio"], "0.1")
        self.assertEqual(sets["tau"], "1.0")
        self.assertEqual(sets["target_update_interval"], "500")
        self.assertEqual(sets["hidden_sizes"], "[120,84]")
        self.assertEqual(sets["prioritized_replay"], "false")


class ParsingTest(unittest.TestCase):
    def test_last_returns_skip_empty_and_nan_rows(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "metrics.csv"), "w") as f:
                f.write("global_step,episodic_return\n1,7.5\n2,\n3,nan\n")
            self.assertEqual(jax_peers.last_returns([d, os.path.join(d, "missing")]), [7.5, None])

    def test_peer_line_is_the_last_json_line(self):
        out = 'warming up\n{"train_s": 1.5, "compile_s": 2.0}\n'
        self.assertEqual(jax_peers.parse_peer(out)["train_s"], 1.5)
        with self.assertRaises(SystemExit):
            jax_peers.parse_peer("Traceback: something failed\n")

    def test_medians_spread_and_table(self):
        peer = [{"seconds": s, "compile_s": 5.0, "returns": [500.0]} for s in (3.0, 4.0, 9.0)]
        ours = [{"seconds": s, "compile_s": None, "returns": [480.0, None, float("nan")]} for s in (1.0, 2.0, 1.5)]
        cells = {("ppo", 1, "peer"): jax_peers.summarize(peer), ("ppo", 1, "cugym"): jax_peers.summarize(ours)}
        self.assertEqual(cells[("ppo", 1, "peer")]["seconds"], 4.0)
        self.assertEqual(cells[("ppo", 1, "peer")]["spread"], (3.0, 9.0))
        self.assertIsNone(cells[("ppo", 1, "cugym")]["compile_s"])
        self.assertEqual(cells[("ppo", 1, "cugym")]["returns"], 480.0)
        text = jax_peers.table(cells, 8)
        self.assertIn(
            "| PPO CartPole-v1 (PureJaxRL) | 1 | 4.00 (3.00-9.00), 5.0 | 1.50 (1.00-2.00) | 500.0 / 480.0 | 2.67x |",
            text,
        )
        self.assertNotIn("DQN", text)  # no cells, no row

    def test_command_shows_no_path_outside_the_repository(self):
        argv = ["--purejaxrl", "/tmp/elsewhere/purejaxrl", "--jax-python", "/opt/venv/bin/python", "--seeds", "8"]
        argv += ["--cugym", os.path.join(jax_peers.ROOT, "build", "cli", "cugym")]
        self.assertEqual(
            jax_peers.display_command(argv),
            "--purejaxrl PUREJAXRL --jax-python JAXPY --seeds 8 --cugym build/cli/cugym",
        )


class RunTest(unittest.TestCase):
    def test_runs_against_stand_ins(self):
        with tempfile.TemporaryDirectory() as d:
            cugym = executable(d, "cugym", FAKE_CUGYM)
            peer = executable(d, "python", FAKE_PEER)
            one = jax_peers.run_cugym(cugym, "ppo", 1, 1000, d)
            self.assertEqual(one["returns"], [101.0])
            many = jax_peers.run_cugym(cugym, "dqn", 3, 1000, d)
            self.assertEqual(many["returns"], [101.0, 102.0, 103.0])
            self.assertGreater(many["seconds"], 0)
            r = jax_peers.run_peer(peer, d, "ppo", 4, 1000)
            self.assertEqual((r["seconds"], r["compile_s"], r["returns"]), (8.0, 4.0, [400.0] * 4))

    def test_a_failing_side_stops_with_its_error(self):
        with tempfile.TemporaryDirectory() as d:
            broken = executable(d, "cugym", "#!/bin/sh\necho 'bad config' >&2\nexit 2\n")
            with self.assertRaises(SystemExit) as stop:
                jax_peers.run_cugym(broken, "ppo", 1, 1000, d)
            self.assertIn("bad config", str(stop.exception))


class AdaptationTest(unittest.TestCase):
    def test_six_step_values_become_five(self):
        class Env:
            def step(self, key, state, action, params=None):
                return "obs", "state", 1.0, True, False, {"k": 1}

        self.assertEqual(jax_peer_run.FiveValueEnv(Env()).step(0, "s", 1), ("obs", "state", 1.0, True, {"k": 1}))
        self.assertEqual(jax_peer_run.five_values((1, 2, 3, False, {})), (1, 2, 3, False, {}))

    def test_stand_in_modules_only_where_missing(self):
        name = "cugym_test_missing_pkg.sub.leaf"
        try:
            jax_peer_run.stand_in(name, Thing=42)
            self.assertEqual(sys.modules[name].Thing, 42)
            self.assertIs(sys.modules["cugym_test_missing_pkg"].sub.leaf, sys.modules[name])
            real = sys.modules["json"]
            jax_peer_run.stand_in("json")  # present: left alone
            self.assertIs(sys.modules["json"], real)
        finally:
            for k in [k for k in sys.modules if k.startswith("cugym_test_missing_pkg")]:
                del sys.modules[k]


if __name__ == "__main__":
    unittest.main()
