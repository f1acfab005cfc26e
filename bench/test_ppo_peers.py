# test_ppo_peers.py - tests of bench/ppo_peers.py without cugym, torch or CleanRL: CleanRL's episode
# lines parsed and smoothed into a time to the bar, evals.csv's first evaluation at the bar, the
# table and the speedup sentence, the command shown with no path outside the repository, and the
# run helpers against a stand-in `cugym` and a stand-in CleanRL script. Run from the repository root:
#   python3 -m pytest bench/test_ppo_peers.py   (or python3 -m unittest bench/test_ppo_peers.py)
import json
import os
import stat
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ppo_peers  # noqa: E402


def episodes(returns, dt=1.0):
    return [(i * dt, 4 * (i + 1), float(r)) for i, r in enumerate(returns)]


class ParseTest(unittest.TestCase):
    def test_episode_lines_are_read_and_the_rest_skipped(self):
        lines = [
            (0.5, "/venv/tyro/_parsers.py:365: UserWarning: ...\n"),
            (1.0, "global_step=36, episodic_return=[12.]\n"),
            (1.5, "SPS: 5029\n"),
            (2.0, "global_step=3996, episodic_return=[77.]\n"),
            (2.5, "global_step=4096, episodic_return=[-1183.3771]\n"),
            (3.0, "global_step=4200, episodic_return=1.5e2\n"),
        ]
        self.assertEqual(
            ppo_peers.parse_episodes(lines),
            [(1.0, 36, 12.0), (2.0, 3996, 77.0), (2.5, 4096, -1183.3771), (3.0, 4200, 150.0)],
        )

    def test_window_means_start_at_the_window_th_episode(self):
        got = ppo_peers.window_means(episodes([1, 2, 3, 4, 5]), window=3)
        self.assertEqual([(t, s) for t, s, _ in got], [(2.0, 12), (3.0, 16), (4.0, 20)])
        for (_, _, m), want in zip(got, [2.0, 3.0, 4.0]):
            self.assertAlmostEqual(m, want)

    def test_first_window_at_the_bar(self):
        eps = episodes([100, 500, 500, 500, 100, 500])
        self.assertEqual(ppo_peers.first_window_at_bar(eps, 475, window=3), (3.0, 16))
        self.assertEqual(ppo_peers.first_window_at_bar(eps, 475, window=1), (1.0, 8))
        self.assertIsNone(ppo_peers.first_window_at_bar(eps, 501, window=1))
        self.assertIsNone(ppo_peers.first_window_at_bar(eps[:2], 0, window=3))  # never a whole window
        # A negative bar (Pendulum's): the mean must reach it from below.
        pend = episodes([-1200, -300, -150, -180])
        self.assertEqual(ppo_peers.first_window_at_bar(pend, -200, window=2), (3.0, 16))

    def test_final_window(self):
        self.assertAlmostEqual(ppo_peers.final_window(episodes([0, 10, 20, 30]), window=2), 25.0)
        self.assertAlmostEqual(ppo_peers.final_window(episodes([10]), window=100), 10.0)
        self.assertIsNone(ppo_peers.final_window([], window=100))

    def test_evals_csv_first_row_at_the_bar(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "evals.csv")
            with open(path, "w") as f:
                f.write("global_step,wall_time,mean_return,std_return\n10240,0.6,377.9,74.6\n")
                f.write("20480,1.2,,\n30720,1.7,481.9,45.7\n40960,2.2,500,0\n")
            rows = ppo_peers.read_csv(path)
            self.assertIsNone(rows[1]["mean_return"])
            self.assertEqual(ppo_peers.first_at_bar(rows, 475), (30720.0, 1.7))
            self.assertIsNone(ppo_peers.first_at_bar(rows, 501))
            self.assertEqual(ppo_peers.read_csv(os.path.join(tmp, "missing.csv")), [])


def row(peer, env="CartPole-v1", final=(500.0,), to_bar=(1.0,), process=(3.0,), **kw):
    r = {
        "env": env,
        "peer": peer,
        "run": f"{peer} run",
        "seeds_text": "1-2",
        "final": list(final),
        "to_bar": list(to_bar),
        "process": list(process),
    }
    r.update(kw)
    return r


class FormatTest(unittest.TestCase):
    def test_median_time_counts_never_as_the_longest(self):
        self.assertEqual(ppo_peers.median_time([3.0, 1.0, 2.0]), 2.0)
        self.assertEqual(ppo_peers.median_time([1.0, None, 2.0]), 2.0)
        self.assertIsNone(ppo_peers.median_time([1.0, None, None]))
        self.assertIsNone(ppo_peers.median_time([]))
        self.assertEqual(ppo_peers.median_time([1.0, 3.0]), 2.0)

    def test_table_row(self):
        r = row("cugym", final=(500.0, 494.79), to_bar=(0.734, None), process=(2.5, 2.5))
        self.assertEqual(
            ppo_peers.table_row(r),
            "| CartPole-v1 | cugym run | 1-2 | 500.0, 494.8 | 497.4 | 0.73, never (1/2) | never | 2.5 |",
        )
        r = row("cleanrl", env="Pendulum-v1", final=(-180.0, -220.0), greedy=[-150.0, -170.0], to_bar=(50.0, 70.0))
        self.assertIn(
            "| -180.0, -220.0 (greedy: -150.0, -170.0) | -200.0 (-160.0) | 50.00, 70.00 (2/2) | 60.00 |",
            ppo_peers.table_row(r),
        )

    def test_speedups_and_their_sentence(self):
        rows = [
            row("cugym", to_bar=(0.5, 1.5), process=(2.0, 2.0)),
            row("cugym", to_bar=(0.5, 1.5), process=(4.0, 4.0), full=True),
            row("cleanrl", to_bar=(40.0, 60.0, 80.0), process=(100.0, 120.0, 140.0)),
            row("cugym", env="Pendulum-v1", to_bar=(None, None)),
            row("cleanrl", env="Pendulum-v1", to_bar=(30.0,), process=(60.0,)),
        ]
        self.assertEqual(ppo_peers.speedups(rows, "CartPole-v1"), (60.0, 60.0, 30.0))
        self.assertEqual(ppo_peers.speedups(rows, "Pendulum-v1"), (None, 20.0, None))
        self.assertEqual(ppo_peers.speedups(rows[:2], "CartPole-v1"), (None, None, None))
        self.assertEqual(
            ppo_peers.speedup_line("CartPole-v1", 60.0, 60.0, 30.0, goal=50),
            "CartPole-v1: cugym reaches the bar 60.0x as fast as CleanRL (median seconds); goal 50x met; "
            "whole process per seed 60.0x, 30.0x with all the steps (`stop_at_threshold=false`).",
        )
        self.assertIn("goal 50x missed", ppo_peers.speedup_line("CartPole-v1", 49.9, 10.0, None, goal=50))
        self.assertIn("goal 50x missed", ppo_peers.speedup_line("CartPole-v1", None, 10.0, None, goal=50))
        self.assertEqual(
            ppo_peers.speedup_line("Pendulum-v1", None, 20.0, None),
            "Pendulum-v1: no ratio to the bar (a side's median never reached it); whole process per seed 20.0x.",
        )

    def test_the_command_names_no_path_outside_the_repository(self):
        root = "/repo/cugym"
        argv = [
            "--cugym",
            "/elsewhere/build-dev/cli/cugym",
            "--pendulum-config=/tmp/p.toml",
            "--cleanrl-ppo",
            "/tmp/src/ppo.py",
            "--cleanrl-python",
            "/tmp/venv/bin/python",
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
            shown = ppo_peers.display_command(argv, root=root)
        finally:
            os.chdir(cwd)
        self.assertEqual(
            shown,
            "--cugym CUGYM --pendulum-config=PENDULUM.toml --cleanrl-ppo CLEANRL/cleanrl/ppo.py "
            "--cleanrl-python PYTHON --cleanrl-seeds 1 2 --out runs/x --write FILE.md",
        )
        self.assertNotIn("/tmp", shown)
        # A relative path is the working directory's: inside the repository it stays as it is.
        self.assertEqual(
            ppo_peers.display_command(["--write", "docs/benchmarks.md"], root=os.getcwd()),
            "--write docs/benchmarks.md",
        )


FAKE_CUGYM = """\
#!{python}
import json, os, sys
a = sys.argv
out = a[a.index("--out") + 1]
runs = []
for seed in (1, 2):
    d = os.path.join(out, f"seed_{{seed}}")
    os.makedirs(d)
    with open(os.path.join(d, "eval.json"), "w") as f:
        json.dump({{"version": "0.1.0 (test)", "mean_return": 490.0 + seed, "global_step": 40960}}, f)
    with open(os.path.join(d, "evals.csv"), "w") as f:
        f.write("global_step,wall_time,mean_return\\n10240,0.5,300\\n20480,1.0,{{}}\\n".format(400 + 50 * seed))
    runs.append({{"seed": seed, "run_dir": d}})
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump({{"points": [{{"runs": runs}}]}}, f)
"""

FAKE_CLEANRL = """\
import sys
print("UserWarning: something")
for i in range(150):
    print(f"global_step={{4 * i}}, episodic_return=[{{500.0 if i >= 20 else 10.0}}]")
print("SPS: 1000")
if "--save-model" in sys.argv:
    print("model saved to runs/x/model.cleanrl_model", flush=True)
    import time
    time.sleep(60)  # what the bench must not wait for
"""


class RunTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_cugym_runs_reads_every_seed(self):
        fake = os.path.join(self.tmp.name, "cugym")
        with open(fake, "w") as f:
            f.write(FAKE_CUGYM.format(python=sys.executable))
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
        r = ppo_peers.cugym_runs(fake, [], "1-2", os.path.join(self.tmp.name, "out"), "CartPole-v1", "label")
        self.assertEqual(r["seeds"], [1, 2])
        self.assertEqual(r["final"], [491.0, 492.0])
        self.assertEqual(r["to_bar"], [None, 1.0])  # 450 < 475 <= 500
        self.assertEqual(r["version"], "0.1.0 (test)")
        self.assertEqual(len(r["process"]), 2)
        self.assertAlmostEqual(sum(r["process"]), r["process_total"])

    def test_cleanrl_run_times_its_episodes_and_stops_at_the_saved_model(self):
        script = os.path.join(self.tmp.name, "ppo.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(FAKE_CLEANRL.format()))
        eps, seconds, model = ppo_peers.cleanrl_run(sys.executable, script, 1, [], self.tmp.name)
        self.assertEqual(len(eps), 150)
        self.assertIsNone(model)
        self.assertEqual([t for t, _, _ in eps], sorted(t for t, _, _ in eps))
        self.assertLessEqual(eps[-1][0], seconds)
        # The window of 100 first reaches 475 when at most 5 of its episodes are the first 20's 10s.
        self.assertEqual(ppo_peers.first_window_at_bar(eps, 475)[1], 4 * 114)
        eps, seconds, model = ppo_peers.cleanrl_run(sys.executable, script, 1, [], self.tmp.name, save_model=True)
        self.assertEqual(model, os.path.join(self.tmp.name, "runs/x/model.cleanrl_model"))
        self.assertLess(seconds, 30)  # stopped, not waited for

    def test_cleanrl_runs_rows(self):
        script = os.path.join(self.tmp.name, "ppo.py")
        with open(script, "w") as f:
            f.write(FAKE_CLEANRL.format())
        r = ppo_peers.cleanrl_runs(sys.executable, script, [1, 2], [], self.tmp.name, "CartPole-v1", "label")
        self.assertEqual(r["seeds_text"], "1 2")
        self.assertEqual(r["final"], [500.0, 500.0])
        self.assertTrue(all(t is not None and t >= 0 for t in r["to_bar"]))
        self.assertIsNone(r["greedy"])
        json.dumps(r)


if __name__ == "__main__":
    unittest.main()
