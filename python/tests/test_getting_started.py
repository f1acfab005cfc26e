"""The ```python block of docs/getting-started.md runs as written (tests/cli/test_getting_started.sh
runs the page's bash blocks against the C++ build)."""

import os
import re

DOC = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "getting-started.md"
)
EXAMPLES = re.findall(r"```python\n(.*?)```", open(DOC).read(), re.S)


def test_the_python_block_runs(tmp_path, monkeypatch):
    assert len(EXAMPLES) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(EXAMPLES[0], "docs/getting-started.md", "exec"), {"__name__": "__doc_example__"})
    assert (tmp_path / "runs" / "py_cartpole" / "model.safetensors").exists()
