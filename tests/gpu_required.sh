#!/usr/bin/env bash
# CUGYM_REQUIRE_GPU=1 turns a CUDA case that cannot run into a failure (tests/gpu_skip.h):
# without a GPU the case skips, and fails once the variable is set; with a GPU it runs and passes
# either way. scripts/gpu-check.sh relies on this to catch CUDA cases that quietly skip.
#   gpu_required.sh TEST_BINARY GTEST_FILTER
set -u
bin="$1"
filter="$2"
out="$(env -u CUGYM_REQUIRE_GPU "$bin" --gtest_filter="$filter" 2>&1)"
rc=$?
if [ "$rc" -ne 0 ] || ! grep -q '1 test from 1 test suite ran' <<<"$out"; then
  echo "$out"
  echo "gpu_required: '$filter' did not run cleanly as one test without CUGYM_REQUIRE_GPU (exit $rc)"
  exit 1
fi
if grep -q '\[  SKIPPED \]' <<<"$out"; then
  if CUGYM_REQUIRE_GPU=1 "$bin" --gtest_filter="$filter" >/dev/null 2>&1; then
    echo "gpu_required: '$filter' skipped without a GPU but passed with CUGYM_REQUIRE_GPU=1"
    exit 1
  fi
  echo "gpu_required: ok (no GPU here: the case skips, and fails with CUGYM_REQUIRE_GPU=1)"
else
  if ! CUGYM_REQUIRE_GPU=1 "$bin" --gtest_filter="$filter"; then
    echo "gpu_required: '$filter' ran without CUGYM_REQUIRE_GPU but failed with it"
    exit 1
  fi
  echo "gpu_required: ok (a GPU is here and the case ran)"
fi
