#!/usr/bin/env bash
# GPU check of the nn library on a machine with an NVIDIA GPU (no network needed): CUDA build for
# sm_90 into build-gpu (no SDL2/Box2D), the nn and core test binaries with every CUDA case (a
# skipped CUDA case is a failure when a GPU is present), then cugym_bench_nn on cpu and cuda.
#   scripts/nn_gpu_check.sh [--no-bench]
# Env: CUGYM_GPU_ARCH (default 90). With $OUT set, the log goes to $OUT/nn-gpu-check.log and the
# benchmark's JSON lines to $OUT/nn-bench.jsonl. Exit: 0 ok, 1 build failed, 2 a test failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
bench=1
[ "${1:-}" = "--no-bench" ] && bench=0
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi

main() {
  local dir=build-gpu status=0
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: none"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=${CUGYM_GPU_ARCH:-90}" \
    -DCUGYM_CUDA=ON -DCUGYM_SDL2=OFF -DCUGYM_BOX2D=OFF >/dev/null || return 1
  cmake --build "$dir" -j "$(nproc)" --target cugym_nn_tests cugym_tests cugym_bench_nn \
    cugym_nn_safetensors_tool || return 1
  local log="$dir/nn-gpu-tests.log"
  { "$dir/tests/nn/cugym_nn_tests" && "$dir/tests/cugym_tests" --gtest_filter='Json*:Safetensors*'; } 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=2
  if nvidia-smi -L 2>/dev/null | grep -q '^GPU' && grep -q 'CUDA case skipped' "$log"; then
    echo "nn-gpu-check: CUDA cases were skipped although a GPU is present"
    status=2
  fi
  if [ "$bench" -eq 1 ]; then
    "$dir/bench/cugym_bench_nn" --device all --json | tee "$dir/nn-bench.jsonl"
    "$dir/bench/cugym_bench_nn" --device all
    [ -z "${OUT:-}" ] || cp "$dir/nn-bench.jsonl" "$OUT/nn-bench.jsonl"
  fi
  return "$status"
}

if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  main 2>&1 | tee "$OUT/nn-gpu-check.log"
  status=${PIPESTATUS[0]}
else
  main
  status=$?
fi
echo "nn-gpu-check: exit $status"
exit "$status"
