"""Every ```python example in docs/python.md runs (those that use an optional package, SB3 or torch,
are skipped where it is not installed)."""

import os
import re

import pytest

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "python.md")
OPTIONAL = {"stable_baselines3", "torch"}
EXAMPLES = re.findall(r"```python\n(.*?)```", open(DOC).read(), re.S)


def test_there_are_examples():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_example_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    try:
        exec(compile(EXAMPLES[index], f"docs/python.md example {index + 1}", "exec"), {"__name__": "__doc_example__"})
    except ModuleNotFoundError as e:
        if e.name not in OPTIONAL:
            raise
        pytest.skip(f"needs {e.name}")
