# test_sac_peers.py - tests of bench/sac_peers.py (and cleanrl_sac_eval.py's run) without cugym,
# torch or CleanRL: CleanRL's Args defaults read from a script's text, a seed's figures from its
# episode lines, the table, the speedup sentence and the command shown with no path outside the
# repository, the missing config's one line, and the run helpers against a stand-in `cugym`, a
# stand-in peer Python and a stand-in CleanRL script. Run from the repository root:
#   python3 -m pytest bench/test_sac_peers.py   (or python3 -m unittest bench/test_sac_peers.py)
import io
import json
import os
import stat
import subprocess
import sys
import tempfile
import types
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cleanrl_sac_eval  # noqa: E402
import sac_peers  # noqa: E402

ARGS = '''\
import os
from dataclasses import dataclass


@dataclass
class Args:
    exp_name: str = os.path.basename(__file__)[: -len(".py")]
    """the name of this experiment"""
    seed: int = 1
    wandb_entity: str = None
    env_id: str = "Hopper-v4"
    buffer_size: int = int(1e6)
    """the replay memory buffer size"""
    learning_starts: int = 5e3
    policy_lr: float = 3e-4
    target_network_frequency: int = 1  # Denis Yarats' implementation delays this by 2.
    autotune: bool = True


def make_env(env_id, seed):
    batch_size: int = 7
'''


def episodes(returns, dt=1.0, t0=0.0):
    return [(t0 + i * dt, 200 * (i + 1) - 1, float(r)) for i, r in enumerate(returns)]


class ParseTest(unittest.TestCase):
    def test_script_defaults(self):
        d = sac_peers.script_defaults(ARGS)
        self.assertEqual(d["seed"], 1)
        self.assertIsNone(d["wandb_entity"])
        self.assertEqual(d["env_id"], "Hopper-v4")
        self.assertEqual(d["buffer_size"], 1000000)
        self.assertIsInstance(d["buffer_size"], int)
        self.assertEqual(d["learning_starts"], 5000.0)
        self.assertEqual(d["policy_lr"], 3e-4)
        self.assertEqual(d["target_network_frequency"], 1)  # the comment left out
        self.assertIs(d["autotune"], True)
        self.assertEqual(d["exp_name"], 'os.path.basename(__file__)[: -len(".py")]')
        self.assertNotIn("batch_size", d)  # after the class
        self.assertEqual(sac_peers.script_defaults("x = 1\n"), {})

    def test_defaults_text(self):
        d = sac_peers.script_defaults(ARGS)
        self.assertEqual(
            sac_peers.defaults_text(d),
            "learning_starts 5000, buffer_size 1000000, policy_lr 0.0003, target_network_frequency 1, autotune True",
        )

    def test_last_json(self):
        self.assertEqual(sac_peers.last_json('warning\n{"mean": -150.5, "returns": [1]}\n\n')["mean"], -150.5)
        with self.assertRaises(ValueError):
            sac_peers.last_json("\n")

    def test_the_real_episode_lines(self):
        lines = [
            (3.0, "/venv/tyro/_fields.py:181: UserWarning: The field `wandb-entity` is annotated with type ...\n"),
            (3.5, "global_step=199, episodic_return=[-1155.9728]\n"),
            (9.0, "SPS: 187\n"),
            (9.5, "global_step=5199, episodic_return=[-126.83]\n"),
            (9.9, "model saved to /tmp/x/actor.pt\n"),
        ]
        self.assertEqual(sac_peers.parse_episodes(lines), [(3.5, 199, -1155.9728), (9.5, 5199, -126.83)])

    def test_cleanrl_seed(self):
        # 25 random episodes, then learning: the window of 3 first reaches -200 at episode 28 (index 27).
        eps = episodes([-1200] * 25 + [-400, -150, -120, -130, -125, -250, -140], t0=2.0)
        s = sac_peers.cleanrl_seed(3, eps, 40.0, -145.5, window=3, cpu=38.5)
        self.assertEqual(s["seed"], 3)
        self.assertEqual(s["final"], -145.5)
        self.assertAlmostEqual(s["to_bar_from_start"], 2.0 + 28)
        self.assertAlmostEqual(s["to_bar"], 28.0)  # from the first printed episode
        self.assertEqual(s["step_at_bar"], 200 * 29 - 1)
        self.assertAlmostEqual(s["train_last"], (-125 - 250 - 140) / 3)
        self.assertEqual((s["episodes"], s["steps"], s["process"], s["cpu"]), (32, 6400, 40.0, 38.5))
        never = sac_peers.cleanrl_seed(1, eps[:26], 10.0, -1300.0, window=3)
        self.assertIsNone(never["to_bar"])
        self.assertIsNone(never["step_at_bar"])
        self.assertIsNone(sac_peers.cleanrl_seed(1, [], 1.0, -1.0)["steps"])

    def test_evals_csv_first_row_at_the_negative_bar(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "evals.csv")
            with open(path, "w") as f:
                f.write("global_step,wall_time,mean_return,std_return\n2000,0.6,-1300.5,74.6\n")
                f.write("4000,1.2,-210,9\n6000,1.7,-180.25,45.7\n8000,2.2,-150,5\n")
            self.assertEqual(sac_peers.first_at_bar(sac_peers.read_csv(path), -200), (6000.0, 1.7))


def cugym(final=(-150.0, -170.0), to_bar=(2.0, 3.0), process=(4.0, 4.0)):
    return {
        "env": "Pendulum-v1",
        "peer": "cugym",
        "run": "cugym SAC",
        "seeds_text": "1-2",
        "final": list(final),
        "to_bar": list(to_bar),
        "process": list(process),
        "version": "0.1.0 (test)",
    }


def cleanrl(final=(-140.0, -160.0), to_bar=(60.0, 80.0), process=(150.0, 170.0), window=10):
    seeds = [
        {"seed": i + 1, "final": f, "train_last": f - 10, "to_bar": t, "process": p, "cpu": p - 5}
        for i, (f, t, p) in enumerate(zip(final, to_bar, process))
    ]
    meta = {
        "commit": "fe8d8a0",
        "versions": "Python 3.11.7, torch 2.15.0",
        "cpu": "Some CPU",
        "cores": 2,
        "load": 0.5,
        "load_end": 1.5,
        "date": "2026-01-02",
        "window": window,
        "defaults": {"learning_starts": 5e3, "batch_size": 256},
    }
    return sac_peers.cleanrl_row(seeds, "CleanRL SAC", meta)


class FormatTest(unittest.TestCase):
    def test_cleanrl_row(self):
        r = cleanrl()
        self.assertEqual(r["seeds"], [1, 2])
        self.assertEqual(r["seeds_text"], "1 2")
        self.assertEqual(r["train_last"], [-150.0, -170.0])
        self.assertEqual(r["cpu"], [145.0, 165.0])
        self.assertEqual(r["meta"]["commit"], "fe8d8a0")
        self.assertEqual(json.loads(json.dumps(r)), r)  # what --cleanrl-save writes, --cleanrl-load reads

    def test_table_rows(self):
        self.assertEqual(
            sac_peers.table_row(cugym(final=(-150.0, -170.04), to_bar=(2.345, None))),
            "| cugym SAC | 1-2 | -150.0, -170.0 | -160.0 | 2.35, never (1/2) | never | 4.0, 4.0 | 4.0 |",
        )
        self.assertEqual(
            sac_peers.table_row(cleanrl(window=7)),
            "| CleanRL SAC | 1 2 | -140.0, -160.0 (training, last 7: -150.0, -170.0) | -150.0 | "
            "60.00, 80.00 (2/2) | 70.00 | 150.0, 170.0 (CPU 145.0, 165.0) | 160.0 |",
        )
        self.assertEqual(sac_peers.process_cell(cugym(process=(4.0, 4.0)) | {"cpu": [3.5, None]}), "4.0, 4.0")

    def test_speedups_and_their_sentence(self):
        self.assertEqual(sac_peers.speedups(cugym(), cleanrl()), (28.0, 40.0))
        self.assertEqual(sac_peers.speedups(cugym(to_bar=(None, None)), cleanrl()), (None, 40.0))
        self.assertEqual(sac_peers.speedups(None, cleanrl()), (None, None))
        self.assertEqual(sac_peers.speedups(cugym(), None), (None, None))
        self.assertEqual(
            sac_peers.speedup_line(28.0, 40.0),
            "cugym reaches the bar 28.0x as fast as CleanRL (median seconds); whole process per seed 40.0x.",
        )
        self.assertEqual(
            sac_peers.speedup_line(None, 40.0),
            "No ratio to the bar (a side's median never reached it); whole process per seed 40.0x.",
        )

    def test_section_body(self):
        body = sac_peers.section_body(cugym(), cleanrl(), 0.4, 'algo = "sac"', ["--pendulum-config", "/tmp/p.toml"])
        self.assertIn("cugym 0.1.0 (test) (`--device cpu`)", body)
        self.assertIn(
            "CleanRL at fe8d8a0 with Python 3.11.7, torch 2.15.0 (its row measured on 2026-01-02, Some CPU, 2 cores) "
            "(load average 0.5 before its runs, 1.5 after)",
            body,
        )
        self.assertIn("CleanRL's SAC defaults: learning_starts 5000, batch_size 256.", body)
        self.assertIn("| cugym SAC |", body)
        self.assertIn("| CleanRL SAC |", body)
        self.assertIn("cugym reaches the bar 28.0x", body)
        self.assertIn('```toml\nalgo = "sac"\n```', body)
        self.assertTrue(body.endswith("```\npython3 bench/sac_peers.py --pendulum-config PENDULUM.toml\n```"))
        alone = sac_peers.section_body(None, cleanrl(), 0.4, None, [])
        self.assertNotIn("cugym SAC", alone)
        self.assertNotIn("as fast as", alone)
        self.assertNotIn("measured on", alone)  # only said beside a cugym row measured elsewhere

    def test_the_command_names_no_path_outside_the_repository(self):
        argv = [
            "--cugym",
            "/elsewhere/build-dev/cli/cugym",
            "--pendulum-config=/tmp/p.toml",
            "--cleanrl-sac",
            "/tmp/src/cleanrl/sac_continuous_action.py",
            "--cleanrl-python",
            "/tmp/venv/bin/python",
            "--cleanrl-load",
            "/tmp/sac_peers_cleanrl/cleanrl_sac.json",
            "--cleanrl-seeds",
            "1",
            "2",
            "--out",
            "/repo/cugym/runs/x",
            "--write",
            "docs/benchmarks.md",
        ]
        cwd = os.getcwd()
        try:
            os.chdir("/")
            shown = sac_peers.display_command(argv, root="/repo/cugym")
        finally:
            os.chdir(cwd)
        self.assertEqual(
            shown,
            "--cugym CUGYM --pendulum-config=PENDULUM.toml --cleanrl-sac CLEANRL/cleanrl/sac_continuous_action.py "
            "--cleanrl-python PYTHON --cleanrl-load CLEANRL.json --cleanrl-seeds 1 2 --out runs/x --write FILE.md",
        )
        self.assertNotIn("/tmp", shown)


FAKE_CUGYM = """\
#!{python}
import json, os, sys
a = sys.argv
if not os.path.exists(a[a.index("--config") + 1]):
    sys.exit("cugym: some detail\\nerror: unknown algo 'sac'\\n")
out = a[a.index("--out") + 1]
runs = []
for seed in (1, 2):
    d = os.path.join(out, f"seed_{{seed}}")
    os.makedirs(d)
    with open(os.path.join(d, "eval.json"), "w") as f:
        json.dump({{"version": "0.1.0 (test)", "mean_return": -150.0 - seed, "global_step": 20000}}, f)
    with open(os.path.join(d, "evals.csv"), "w") as f:
        f.write("global_step,wall_time,mean_return\\n2000,0.5,-900\\n4000,1.0,{{}}\\n".format(-250 + 40 * seed))
    runs.append({{"seed": seed, "run_dir": d}})
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump({{"points": [{{"runs": runs}}]}}, f)
"""

# A stand-in CleanRL script for cleanrl_sac_eval.run: trains only as __main__, reads its arguments.
SCRIPT = """\
import sys


class Actor:
    def state_dict(self):
        return ("trained", sys.argv[1:], __file__)


if __name__ == "__main__":
    actor = Actor()
"""

# A stand-in for the peer's Python running cleanrl_sac_eval.py: prints what the wrapped CleanRL
# script prints, then the wrapper's line.
FAKE_PYTHON = """\
#!{python}
import sys
print("UserWarning: something")
for i in range(100):
    print(f"global_step={{200 * i + 199}}, episodic_return=[{{-150.0 if i >= 30 else -1200.0}}]")
print("SPS: 100")
if "--fail" not in sys.argv:
    print("model saved to " + sys.argv[sys.argv.index("--model") + 1])
"""


class RunTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def executable(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text.format(python=sys.executable))
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def test_a_missing_config_stops_with_one_line(self):
        with self.assertRaises(SystemExit) as e:
            sac_peers.check_config(os.path.join(self.tmp.name, "pendulum_sac.toml"))
        self.assertIn("no cugym SAC config at", str(e.exception))
        self.assertNotIn("\n", str(e.exception))
        p = subprocess.run(
            [sys.executable, sac_peers.__file__, "--pendulum-config", os.path.join(self.tmp.name, "none.toml")],
            capture_output=True,
            text=True,
        )
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)
        self.assertEqual(p.stdout, "")

    def test_cugym_runs_reads_every_seed(self):
        fake = self.executable("cugym", FAKE_CUGYM)
        config = os.path.join(self.tmp.name, "sac.toml")
        open(config, "w").close()
        r = sac_peers.cugym_runs(fake, config, "1-2", os.path.join(self.tmp.name, "out"))
        self.assertEqual(r["seeds"], [1, 2])
        self.assertEqual(r["final"], [-151.0, -152.0])
        self.assertEqual(r["to_bar"], [None, 1.0])  # -210 < -200 <= -170
        self.assertEqual(r["version"], "0.1.0 (test)")
        self.assertAlmostEqual(sum(r["process"]), r["process_total"])
        self.assertGreater(r["cpu"][0], 0)

    def test_a_failing_cugym_stops_with_its_last_line(self):
        fake = self.executable("cugym", FAKE_CUGYM)
        with self.assertRaises(SystemExit) as e:
            sac_peers.cugym_runs(fake, os.path.join(self.tmp.name, "gone.toml"), "1-2", self.tmp.name)
        self.assertTrue(str(e.exception).endswith("failed (exit 1): error: unknown algo 'sac'"), str(e.exception))

    def test_cleanrl_run_times_its_episodes(self):
        python = self.executable("python", FAKE_PYTHON)
        eps, seconds, cpu, model = sac_peers.cleanrl_run(python, "sac.py", 1, [], self.tmp.name)
        self.assertGreater(cpu, 0)
        self.assertLess(cpu, seconds + 1)
        self.assertEqual(len(eps), 100)
        self.assertEqual(model, os.path.join(self.tmp.name, "actor.pt"))
        self.assertEqual([t for t, _, _ in eps], sorted(t for t, _, _ in eps))
        self.assertLessEqual(eps[-1][0], seconds)
        self.assertEqual(sac_peers.first_window_at_bar(eps, -200, 10)[1], 200 * 39 + 199)
        with open(os.path.join(self.tmp.name, "stdout.txt")) as f:
            self.assertIn("model saved to", f.read())
        with self.assertRaises(SystemExit):
            sac_peers.cleanrl_run(python, "sac.py", 1, ["--fail"], self.tmp.name)  # no model saved

    def test_the_wrapper_runs_the_script_as_main_and_saves_its_actor(self):
        script = os.path.join(self.tmp.name, "cleanrl", "sac_continuous_action.py")
        os.makedirs(os.path.dirname(script))
        with open(script, "w") as f:
            f.write(SCRIPT)
        saved = {}
        fake_torch = types.SimpleNamespace(save=lambda obj, path: saved.update(obj=obj, path=path))
        argv, path, torch = sys.argv[:], sys.path[:], sys.modules.get("torch")
        sys.modules["torch"] = fake_torch
        out = io.StringIO()
        try:
            with redirect_stdout(out):
                cleanrl_sac_eval.run("/x/actor.pt", [script, "--seed", "3"])
            self.assertEqual(sys.path[:2], [os.path.dirname(script), self.tmp.name])
        finally:
            sys.argv[:], sys.path[:] = argv, path
            if torch is None:
                del sys.modules["torch"]
            else:
                sys.modules["torch"] = torch
        self.assertEqual(saved["path"], "/x/actor.pt")
        self.assertEqual(saved["obj"], ("trained", ["--seed", "3"], script))
        self.assertEqual(out.getvalue(), "model saved to /x/actor.pt\n")

    def test_a_saved_cleanrl_row_is_shown_again(self):
        saved = os.path.join(self.tmp.name, "cleanrl_sac.json")
        with open(saved, "w") as f:
            json.dump(cleanrl(), f)
        md = os.path.join(self.tmp.name, "bench.md")
        p = subprocess.run(
            [sys.executable, sac_peers.__file__, "--cleanrl-load", saved, "--write", md],
            capture_output=True,
            text=True,
        )
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(md) as f:
            text = f.read()
        self.assertIn("## SAC against CleanRL's\n\n<!-- BEGIN sac-peers -->", text)
        self.assertIn("| CleanRL SAC | 1 2 |", text)
        self.assertIn("--cleanrl-load CLEANRL.json --write FILE.md", text)


if __name__ == "__main__":
    unittest.main()
