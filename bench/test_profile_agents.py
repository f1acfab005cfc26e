# test_profile_agents.py - tests of bench/profile_agents.py without perf or cugym: the top symbols
# read from perf report's text, the short names and the table. Run from the repository root:
#   python3 -m pytest bench/test_profile_agents.py   (or python3 -m unittest bench/test_profile_agents.py)
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import profile_agents  # noqa: E402

REPORT = """# Samples: 2K of event 'cpu-clock:ppp'
#
# Overhead  Symbol
# ........  ......
#
    35.96%  [.] __expm1f
    24.37%  [.] __tanhf                                       -      -
     8.00%  [.] cugym::nn::internal::(anonymous namespace)::Kernel<2, 6>
     2.47%  [k] __schedule
     1.93%  [.] cugym::nn::internal::SmallGemm
"""


class ProfileTest(unittest.TestCase):
    def test_top_symbols_in_order_with_kernel_ones(self):
        self.assertEqual(
            profile_agents.top_symbols(REPORT, 4),
            [
                (35.96, "__expm1f"),
                (24.37, "__tanhf"),
                (8.0, "cugym::nn::internal::(anonymous namespace)::Kernel<2, 6>"),
                (2.47, "__schedule"),
            ],
        )
        self.assertEqual(len(profile_agents.top_symbols(REPORT, 10)), 5)
        self.assertEqual(profile_agents.top_symbols("# nothing sampled\n", 5), [])

    def test_table_shortens_cugym_names(self):
        text = profile_agents.table(
            {"ppo": ("PPO CartPole-v1, 1000 steps", 2.5, profile_agents.top_symbols(REPORT, 3))}
        )
        self.assertIn(
            "| PPO CartPole-v1, 1000 steps | 2.5 | `__expm1f` 36.0%; `__tanhf` 24.4%; "
            "`nn::internal::Kernel<2, 6>` 8.0% |",
            text,
        )
        self.assertTrue(profile_agents.short("x" * 100).endswith("..."))

    def test_every_run_is_a_cugym_train_of_bounded_steps(self):
        for name, (label, args, steps) in profile_agents.RUNS.items():
            self.assertTrue(label, name)
            self.assertIn("--env", args, name)
            self.assertGreater(steps, 0, name)


if __name__ == "__main__":
    unittest.main()
