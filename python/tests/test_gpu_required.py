"""CUGYM_REQUIRE_GPU=1 (scripts/gpu-check.sh's python part) turns every case of test_cuda.py that cannot
run into a failure: here a framework made unimportable on purpose skips its case without the
variable and fails it with it, so a GPU machine whose interop is broken cannot pass as 'skipped'."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

# A case that needs CuPy, with CuPy made unimportable (None in sys.modules fails the import).
CASE = """
import sys
sys.modules["cupy"] = None
from test_cuda import CuPy


def test_needs_cupy():
    CuPy()
"""


@pytest.mark.parametrize("required", [False, True], ids=["plain", "required"])
def test_a_framework_that_cannot_run_fails_only_when_required(tmp_path, required):
    (tmp_path / "test_case.py").write_text(CASE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    env.pop("CUGYM_REQUIRE_GPU", None)
    if required:
        env["CUGYM_REQUIRE_GPU"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout + proc.stderr
    if required:
        assert proc.returncode == 1 and "1 failed" in out, out
        assert "CUGYM_REQUIRE_GPU=1, but this case cannot run: cupy cannot be imported" in out, out
    else:
        assert proc.returncode == 0 and "1 skipped" in out, out
        assert "cupy cannot be imported" in out, out
