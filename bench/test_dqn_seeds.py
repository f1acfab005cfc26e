# test_dqn_seeds.py - tests of bench/dqn_seeds.py and its helpers on synthetic run folders and a
# stand-in `cugym` script: success counting, the fallbacks for missing files, and a whole sweep with
# an ablation (the statistics are cugym.stats', tested in python/tests/test_stats.py). Needs numpy
# and the cugym package (matplotlib for the sweep); run from the repository root:
#   python3 -m unittest bench/test_dqn_seeds.py
import contextlib
import csv
import io
import json
import os
import stat
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import cugym  # noqa: F401 (dqn_seeds' statistics are cugym.stats)
    import numpy as np
except ImportError:
    np = None
try:
    import matplotlib
except ImportError:
    matplotlib = None

if np is not None:
    import dqn_seeds
    import run_folder

EVALS_HEADER = "global_step,wall_time,mean_return,std_return,min_return,max_return,episodes,eval_seconds"
METRICS_HEADER = "global_step,wall_time,episodic_return,episodic_length,td_loss,q_values,epsilon,sps"


def write_run(
    run_dir,
    final=None,
    best=None,
    evals=None,
    metrics=None,
    threshold="absent",
    env="CartPole-v1",
    threshold_step=None,
    threshold_seconds=None,
):
    """A run folder as cugym writes it. final None: no eval.json; threshold "absent": an eval.json
    from before the threshold fields; evals / metrics: lists of rows (tuples), None: no file."""
    os.makedirs(run_dir)
    open(os.path.join(run_dir, "model.safetensors"), "w").close()
    if final is not None:
        ev = {
            "env": env,
            "episodes": 100,
            "mean_return": final,
            "std_return": 1.0,
            "min_return": final,
            "max_return": final,
            "mean_length": final,
            "global_step": 60000,
            "version": "test",
        }
        if threshold != "absent":
            ev.update(
                threshold=threshold,
                threshold_step=threshold_step,
                threshold_seconds=threshold_seconds,
                best=None
                if best is None
                else {"global_step": 40000, "mean_return": best, "std_return": 0.0, "episodes": 100},
            )
        with open(os.path.join(run_dir, "eval.json"), "w") as f:
            json.dump(ev, f)
    if best is not None:
        open(os.path.join(run_dir, "best.safetensors"), "w").close()
    for name, header, rows in (("evals.csv", EVALS_HEADER, evals), ("metrics.csv", METRICS_HEADER, metrics)):
        if rows is not None:
            with open(os.path.join(run_dir, name), "w") as f:
                f.write(header + "\n")
                csv.writer(f).writerows(rows)


def metrics_rows(returns, every=2000, seconds_per_row=0.1):
    return [(every * (i + 1), seconds_per_row * (i + 1), r, "", 0.1, 1.0, 0.05, 20000) for i, r in enumerate(returns)]


def evals_rows(returns, every=10000, seconds_per_row=0.5):
    return [(every * (i + 1), seconds_per_row * (i + 1), r, 0, r, r, 10, 0.01) for i, r in enumerate(returns)]


FAKE_CUGYM = """\
    import json, os, sys
    args = sys.argv[1:]
    if args == ["--version"]:
        print("cugym 0.0.0 (git test); BLAS cpu (test, 2 BLAS threads)")
    elif args[0] == "eval":
        model = args[args.index("--model") + 1]
        mean = 480.0 if model.endswith("best.safetensors") else 321.0
        print(json.dumps({"env": "CartPole-v1", "episodes": int(args[args.index("--episodes") + 1]),
                          "mean_return": mean, "std_return": 0.0}))
    elif args[0] == "train":
        seed = int(args[args.index("--seed") + 1])
        out = args[args.index("--out") + 1]
        sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
        os.makedirs(out)
        open(os.path.join(out, "model.safetensors"), "w").close()
        final = 400.0 + 20 * seed - (50 if "double_dqn=true" in sets else 0)
        reached = 30000 if final >= 475 else None
        with open(os.path.join(out, "eval.json"), "w") as f:
            json.dump({"env": "CartPole-v1", "episodes": 100, "mean_return": final, "std_return": 0.0,
                       "threshold": 475.0, "best": {"global_step": 30000, "mean_return": 500.0,
                       "std_return": 0.0, "episodes": 100}, "threshold_step": reached,
                       "threshold_seconds": 1.5 if reached else None,
                       "threads": os.environ.get("OMP_NUM_THREADS")}, f)
        open(os.path.join(out, "best.safetensors"), "w").close()
        with open(os.path.join(out, "evals.csv"), "w") as f:
            f.write("global_step,wall_time,mean_return,std_return,min_return,max_return,episodes,eval_seconds\\n")
            for i in range(1, 7):
                f.write(f"{10000 * i},{0.5 * i},{min(500.0, final * i / 6)},0,0,0,10,0.01\\n")
        with open(os.path.join(out, "metrics.csv"), "w") as f:
            f.write("global_step,wall_time,episodic_return,episodic_length,td_loss,q_values,epsilon,sps\\n")
            f.write("60000,3.0,100,100,0.1,1,0.05,20000\\n")
"""


@unittest.skipIf(np is None, "numpy or cugym is not installed")
class RunFolders(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_a_run_with_every_file(self):
        write_run(
            self.path("r"),
            final=500.0,
            best=498.0,
            threshold=475.0,
            threshold_step=30000,
            threshold_seconds=1.25,
            evals=evals_rows([100, 300, 480, 500]),
            metrics=metrics_rows([20, 60]),
        )
        r = run_folder.read_run(self.path("r"))
        self.assertEqual((r["threshold"], r["final"], r["best"], r["best_step"]), (475.0, 500.0, 498.0, 40000))
        self.assertEqual(
            (r["threshold_step"], r["threshold_seconds"], r["threshold_source"]), (30000, 1.25, "eval.json")
        )
        self.assertEqual((r["train_seconds"], r["steps"]), (0.2, 4000))
        self.assertEqual((r["curve_source"], r["curve_returns"]), ("evals.csv", [100, 300, 480, 500]))

    def test_success_counts_the_final_model_at_or_above_the_threshold(self):
        runs = []
        for i, (final, best) in enumerate([(500.0, 500.0), (474.9, 476.0), (475.0, 400.0)]):
            write_run(self.path(str(i)), final=final, best=best, threshold=475.0, metrics=metrics_rows([1]))
            runs.append(run_folder.read_run(self.path(str(i))))
        s = dqn_seeds.summarize(runs, 475.0)
        self.assertEqual((s["runs"], s["successes"], s["best_successes"]), (3, 2, 2))
        self.assertAlmostEqual(s["success_rate"], 2 / 3)
        self.assertAlmostEqual(s["final"]["mean"], (500 + 474.9 + 475) / 3)
        self.assertIsNone(s["threshold_seconds"])

    def test_an_older_build_without_evals_csv_or_threshold_fields(self):
        write_run(self.path("r"), final=-105.0, env="MountainCar-v0", metrics=metrics_rows([-200, "", -150]))
        r = run_folder.read_run(self.path("r"))
        self.assertEqual(r["threshold"], -110.0)  # Gymnasium's, by env id
        self.assertIsNone(r["best"])
        self.assertIsNone(r["threshold_step"])
        self.assertEqual(r["curve_source"], "metrics.csv")
        self.assertEqual((r["curve_steps"], r["curve_returns"]), ([2000, 6000], [-200, -150]))  # empty row skipped
        self.assertTrue(run_folder.success(r["final"], r["threshold"]))

    def test_time_to_threshold_from_evals_csv_when_eval_json_lacks_it(self):
        write_run(self.path("r"), final=500.0, evals=evals_rows([100, 475, 500]), metrics=metrics_rows([1]))
        r = run_folder.read_run(self.path("r"))
        self.assertEqual(
            (r["threshold_step"], r["threshold_seconds"], r["threshold_source"]), (20000, 1.0, "evals.csv")
        )

    def test_another_threshold_ignores_the_recorded_time(self):
        write_run(
            self.path("r"),
            final=500.0,
            threshold=475.0,
            threshold_step=20000,
            threshold_seconds=1.0,
            evals=evals_rows([100, 475, 500]),
            metrics=metrics_rows([1]),
        )
        r = run_folder.read_run(self.path("r"), threshold=490.0)
        self.assertEqual((r["threshold"], r["threshold_step"], r["threshold_source"]), (490.0, 30000, "evals.csv"))
        self.assertFalse(run_folder.success(run_folder.read_run(self.path("r"), threshold=501.0)["final"], 501.0))

    def test_no_files_at_all(self):
        write_run(self.path("r"))
        r = run_folder.read_run(self.path("r"))
        self.assertEqual((r["final"], r["threshold"], r["train_seconds"], r["curve_source"]), (None, None, None, None))

    def test_missing_evaluations_come_from_cugym_eval(self):
        cugym = self.path("cugym")
        with open(cugym, "w") as f:
            f.write(f"#!{sys.executable}\n" + textwrap.dedent(FAKE_CUGYM))
        os.chmod(cugym, os.stat(cugym).st_mode | stat.S_IEXEC)
        write_run(self.path("r"), metrics=metrics_rows([1]))
        open(self.path("r/best.safetensors"), "w").close()
        a = dqn_seeds.parse_args(["--cugym", cugym, "--out", self.path("out")])
        r = dqn_seeds.complete(a, run_folder.read_run(self.path("r")), self.path("r"))
        self.assertEqual((r["env"], r["threshold"], r["final"], r["episodes"]), ("CartPole-v1", 475.0, 321.0, 100))
        self.assertEqual((r["best"], r["best_episodes"]), (480.0, 100))

    def test_common_curve_holds_each_runs_last_value(self):
        runs = [
            {"curve_steps": [10, 20, 30], "curve_returns": [1, 2, 3]},
            {"curve_steps": [15, 25, 35], "curve_returns": [10, 20, 30]},
        ]
        grid, values = dqn_seeds.common_curve(runs)
        # The first run ended at 30 (say at the threshold): it keeps its last value to 35.
        np.testing.assert_array_equal(grid, [15, 20, 25, 30, 35])
        np.testing.assert_array_equal(values, [[1, 2, 2, 3, 3], [10, 10, 20, 20, 30]])

    @unittest.skipIf(matplotlib is None, "matplotlib is not installed")
    def test_a_sweep_with_an_ablation(self):
        cugym = self.path("cugym")
        with open(cugym, "w") as f:
            f.write(f"#!{sys.executable}\n" + textwrap.dedent(FAKE_CUGYM))
        os.chmod(cugym, os.stat(cugym).st_mode | stat.S_IEXEC)
        out = self.path("out")
        argv = [
            "--cugym",
            cugym,
            "--seeds",
            "1-4",
            "--jobs",
            "2",
            "--out",
            out,
            "--ablate",
            "double_dqn=true",
            "--write",
            self.path("doc.md"),
            "--figure",
            self.path("fig.png"),
        ]
        with contextlib.redirect_stdout(io.StringIO()):
            dqn_seeds.main(argv)
        with open(os.path.join(out, "summary.json")) as f:
            result = json.load(f)
        base, ablated = result["variants"]
        self.assertEqual([r["final"] for r in base["runs"]], [420.0, 440.0, 460.0, 480.0])
        self.assertEqual((base["summary"]["successes"], ablated["summary"]["successes"]), (1, 0))
        self.assertEqual(base["summary"]["best_successes"], 4)
        self.assertEqual(base["summary"]["threshold_seconds"]["count"], 1)
        self.assertEqual(result["threads"], 1)
        with open(os.path.join(out, "cartpole.toml", "seed_1", "eval.json")) as f:
            self.assertEqual(json.load(f)["threads"], "1")  # parallel runs get one thread each
        self.assertTrue(os.path.getsize(self.path("fig.png")) > 0)
        with open(self.path("doc.md")) as f:
            doc = f.read()
        self.assertIn("<!-- BEGIN dqn-cartpole -->", doc)
        self.assertIn("| double_dqn=true | 0/4 |", doc)
        self.assertIn("![CartPole-v1 learning curves, configs/cartpole.toml](fig.png)", doc)
        model = os.path.join(out, "cartpole.toml", "seed_1", "model.safetensors")
        written = os.stat(model).st_mtime_ns
        with contextlib.redirect_stdout(io.StringIO()):  # finished runs are read again, not retrained
            dqn_seeds.main(argv)
        self.assertEqual(os.stat(model).st_mtime_ns, written)


if __name__ == "__main__":
    unittest.main()
