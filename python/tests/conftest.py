"""Shared fixtures for the cugym package's tests (run by scripts/test.sh against the installed package)."""

import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def repo():
    return REPO


@pytest.fixture
def plugin_path():
    """The Catch example plugin built by scripts/test.sh (CUGYM_TEST_PLUGIN)."""
    path = os.environ.get("CUGYM_TEST_PLUGIN")
    if not path:
        pytest.skip("CUGYM_TEST_PLUGIN is not set (scripts/test.sh builds examples/custom_env and sets it)")
    return path


@pytest.fixture
def torch():
    """PyTorch, or a skip where it is not installed. scripts/test.sh installs it and sets
    CUGYM_REQUIRE_TORCH=1, so that in CI the tests that take this fixture run, never skip."""
    if os.environ.get("CUGYM_REQUIRE_TORCH") == "1":
        import torch

        return torch
    return pytest.importorskip("torch")
