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
