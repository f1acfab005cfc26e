# test_sections.py - tests of bench/sections.py, the section writer of every bench/ script: a
# section replaced with everything around it kept, a missing one appended, unbalanced markers
# refused, a failed write that leaves the file as it was, and every script's section present once
# in docs/benchmarks.md. Run from the repository root:
#   python3 -m pytest bench/test_sections.py   (or python3 -m unittest bench/test_sections.py)
import os
import re
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sections  # noqa: E402

DOC = "# Benchmarks\n\nIntro.\n\n<!-- BEGIN t -->\nold table\n<!-- END t -->\nAfter, no blank line.\n\n## Next\n"


class WriteSectionTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "doc.md")

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, text):
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(text)

    def read(self):
        with open(self.path, encoding="utf-8") as f:
            return f.read()

    def leftovers(self):
        return sorted(set(os.listdir(self.tmp.name)) - {"doc.md"})

    def test_replaces_only_the_text_between_the_markers(self):
        self.write(DOC)
        sections.write_section(self.path, "t", "| a |\n|---|\n| 1 −2 σ |\n\n")
        self.assertEqual(self.read(), DOC.replace("old table", "| a |\n|---|\n| 1 −2 σ |"))
        sections.write_section(self.path, "t", "| a |\n|---|\n| 1 −2 σ |")
        self.assertEqual(self.read(), DOC.replace("old table", "| a |\n|---|\n| 1 −2 σ |"))
        self.assertEqual(self.leftovers(), [])

    def test_other_sections_and_prefixed_names_are_left_alone(self):
        self.write(DOC + "<!-- BEGIN t2 -->\nkeep\n<!-- END t2 -->\n")
        sections.write_section(self.path, "t", "new")
        self.assertIn("<!-- BEGIN t -->\nnew\n<!-- END t -->", self.read())
        self.assertIn("<!-- BEGIN t2 -->\nkeep\n<!-- END t2 -->", self.read())

    def test_a_missing_section_is_appended_and_a_missing_file_created(self):
        self.write("# Benchmarks\n\nIntro.\n\n\n")
        sections.write_section(self.path, "t", "body", heading="A heading")
        self.assertEqual(
            self.read(), "# Benchmarks\n\nIntro.\n\n## A heading\n\n<!-- BEGIN t -->\nbody\n<!-- END t -->\n"
        )
        fresh = os.path.join(self.tmp.name, "sub", "new.md")
        sections.write_section(fresh, "t", "body")
        with open(fresh, encoding="utf-8") as f:
            self.assertEqual(f.read(), "# Benchmarks\n\n<!-- BEGIN t -->\nbody\n<!-- END t -->\n")

    def test_unbalanced_markers_are_refused_and_the_file_kept(self):
        cases = {
            "only BEGIN": "<!-- BEGIN t -->\nx\n",
            "only END": "x\n<!-- END t -->\n",
            "END first": "<!-- END t -->\nx\n<!-- BEGIN t -->\n",
            "BEGIN twice": "<!-- BEGIN t -->\n<!-- BEGIN t -->\nx\n<!-- END t -->\n",
            "two pairs": "<!-- BEGIN t -->\nx\n<!-- END t -->\n<!-- BEGIN t -->\ny\n<!-- END t -->\n",
        }
        for label, text in cases.items():
            with self.subTest(label):
                self.write(text)
                with self.assertRaises(SystemExit) as caught:
                    sections.write_section(self.path, "t", "new")
                self.assertIn(self.path, str(caught.exception))
                self.assertIn("fix the markers by hand", str(caught.exception))
                self.assertEqual(self.read(), text)
                self.assertEqual(self.leftovers(), [])

    def test_a_body_holding_the_markers_is_refused(self):
        self.write(DOC)
        with self.assertRaises(SystemExit):
            sections.write_section(self.path, "t", "x\n<!-- END t -->\ny")
        self.assertEqual(self.read(), DOC)

    def test_a_failed_write_leaves_the_file_untouched(self):
        self.write(DOC)
        os.chmod(self.path, 0o640)
        with self.assertRaises(UnicodeEncodeError):  # a lone surrogate cannot be written as UTF-8
            sections.write_section(self.path, "t", "half a table \udc80")
        self.assertEqual(self.read(), DOC)
        self.assertEqual(self.leftovers(), [])  # the temporary file is gone
        sections.write_section(self.path, "t", "new")
        self.assertEqual(os.stat(self.path).st_mode & 0o777, 0o640)  # the file keeps its mode


class BenchmarksPageTest(unittest.TestCase):
    def test_every_script_section_is_in_the_page_once(self):
        bench = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(bench, "..", "docs", "benchmarks.md"), encoding="utf-8") as f:
            page = f.read()
        names = []
        for script in (
            "bench_envs.py",
            "bench_isa.py",
            "bench_minatar.py",
            "bench_python.py",
            "compare_gymnasium.py",
            "compare_torch_nn.py",
            "pqn_vs_dqn.py",
            "ppo_peers.py",
        ):
            with open(os.path.join(bench, script), encoding="utf-8") as f:
                found = re.search(r'^SECTION = "([^"]+)"$', f.read(), re.M)
            self.assertIsNotNone(found, f"{script} names no SECTION")
            names.append(found[1])
        for name in names:
            begin, end = sections.markers(name)
            with self.subTest(name):
                self.assertEqual((page.count(begin), page.count(end)), (1, 1))
                self.assertLess(page.index(begin), page.index(end))


if __name__ == "__main__":
    unittest.main()
