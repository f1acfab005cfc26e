#!/usr/bin/env bash
# GPU check for a machine with an NVIDIA GPU (no network needed, installs nothing):
# CUDA build for sm_90 into build-gpu (no SDL2/Box2D), the full ctest including the GPU cases,
# then an env benchmark table (cugym bench --json: CartPole-v1 on cuda and cpu, the other
# classic-control envs on cuda), nn updates/s, and DQN runs of the shipped configs.
#   scripts/gpu-check.sh [--slow] [--no-bench]
#     --slow      also run the tests labelled `slow`
#     --no-bench  skip the benchmark table
# Env: CUGYM_GPU_ARCH (default 90). When $OUT is set the whole log is also written to
# $OUT/gpu-check.log and the raw JSON lines to $OUT/bench.jsonl.
# Exit status: 0 all good, 1 build failed, 2 a test failed, 3 only a benchmark run failed.
set -uo pipefail
export LC_ALL=C  # '.' decimal point in printf

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1

slow=0
bench=1
for arg in "$@"; do
  case "$arg" in
    --slow) slow=1 ;;
    --no-bench) bench=0 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown option '$arg' (try --help)" >&2; exit 64 ;;
  esac
done

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

build_dir=build-gpu
cli="$build_dir/cli/cugym"
banner() { printf '\n===== %s =====\n' "$*"; }
num() {  # num FORMAT VALUE: printf for numbers, the value as is otherwise (null)
  # shellcheck disable=SC2059
  if [[ "$2" =~ ^-?[0-9.]+([eE][-+]?[0-9]+)?$ ]]; then printf "$1" "$2"; else printf '%s' "$2"; fi
}

# JSON field from one flat object line as written by cli/json.h: "key": value
json_field() {
  sed -n -E "s/.*\"$2\": (\"([^\"]*)\"|([^,}]*)).*/\2\3/p" <<<"$1"
}

main() {
  local status=0
  banner "machine"
  date -u '+%Y-%m-%d %H:%M:%S UTC'
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  else
    echo "nvidia-smi: not found"
  fi
  echo "nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo 'not found')"
  echo "c++: $(c++ --version 2>/dev/null | head -n1)"
  echo "cmake: $(cmake --version 2>/dev/null | head -n1)"
  echo "cores: $(nproc)"

  banner "build ($build_dir)"
  local t0=$SECONDS
  if ! bash scripts/build.sh "$build_dir" -DCMAKE_BUILD_TYPE=Release \
      "-DCMAKE_CUDA_ARCHITECTURES=${CUGYM_GPU_ARCH:-90}" \
      -DCUGYM_CUDA=ON -DCUGYM_SDL2=OFF -DCUGYM_BOX2D=OFF; then
    echo "gpu-check: BUILD FAILED"
    return 1
  fi
  echo "build time: $((SECONDS - t0)) s"

  banner "ctest"
  local ctest_args=(--output-on-failure)
  [ "$slow" -eq 1 ] || ctest_args+=(-LE slow)
  t0=$SECONDS
  local ctest_log="$build_dir/ctest-gpu.log" rc=0
  ctest --test-dir "$build_dir" "${ctest_args[@]}" 2>&1 | tee "$ctest_log" || rc=$?
  echo "ctest time: $((SECONDS - t0)) s"
  if [ "$rc" -ne 0 ]; then
    echo "gpu-check: TESTS FAILED (ctest exit $rc)"
    status=2
  fi
  # On a machine with a GPU the CUDA cases must run, not skip.
  local skipped_cuda
  skipped_cuda="$(grep -E '\(Skipped\)$' "$ctest_log" | grep -ci 'cuda')"
  if [ "$skipped_cuda" -gt 0 ] && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    echo "gpu-check: $skipped_cuda CUDA test(s) SKIPPED although a GPU is present"
    status=2
  fi

  [ "$bench" -eq 1 ] || return "$status"

  banner "benchmarks"
  # env device num_envs steps; each run is 1 warm-up + 5 timed repeats of num_envs*steps env steps.
  local runs=(
    "CartPole-v1 cuda 65536 1000" "CartPole-v1 cuda 1048576 200" "CartPole-v1 cuda 16777216 50"
    "CartPole-v1 cpu 1024 1000" "CartPole-v1 cpu 65536 200"
    "MountainCar-v0 cuda 1048576 200" "MountainCarContinuous-v0 cuda 1048576 200"
    "Acrobot-v1 cuda 1048576 100" "Pendulum-v1 cuda 1048576 200"
  )
  local jsonl="$build_dir/bench.jsonl" rows=() run env device n steps mode line rc
  : >"$jsonl"
  for run in "${runs[@]}"; do
    read -r env device n steps <<<"$run"
    for mode in step fused; do
      echo "+ $cli bench --env $env --device $device --num-envs $n --steps $steps --mode $mode --json"
      rc=0
      line="$(timeout 300 "$cli" bench --env "$env" --device "$device" --num-envs "$n" \
                --steps "$steps" --mode "$mode" --json)" || rc=$?
      line="$(grep '^{' <<<"$line" | tail -n 1)"
      if [ "$rc" -ne 0 ] || [ -z "$line" ]; then
        echo "  FAILED (exit $rc)"
        rows+=("| $env | $device | $n | $mode | FAILED (exit $rc) | |")
        [ "$status" -ne 0 ] || status=3
        continue
      fi
      echo "  $line"
      echo "$line" >>"$jsonl"
      rows+=("$(printf '| %s | %s | %s | %s | %s | %s |' \
        "$(json_field "$line" env)" "$(json_field "$line" device) ($(json_field "$line" hardware))" \
        "$(json_field "$line" num_envs)" "$(json_field "$line" mode)" \
        "$(num %.3e "$(json_field "$line" steps_per_second)")" \
        "$(num %.1f "$(json_field "$line" model_gbytes_per_second)")")")
    done
  done
  [ -z "${OUT:-}" ] || cp "$jsonl" "$OUT/bench.jsonl"

  banner "benchmark table (random actions, median of 5)"
  echo "| env | device | N | mode | steps/s | model_gbytes_per_second |"
  echo "|---|---|---:|---|---:|---:|"
  printf '%s\n' "${rows[@]}"

  banner "nn: gradient updates per second (cpu and cuda, eager and graph-replayed)"
  if "$build_dir/bench/cugym_bench_nn" --device all --json >"$build_dir/nn-bench.jsonl"; then
    "$build_dir/bench/cugym_bench_nn" --device all
    [ -z "${OUT:-}" ] || cp "$build_dir/nn-bench.jsonl" "$OUT/nn-bench.jsonl"
  else
    echo "gpu-check: cugym_bench_nn FAILED"
    [ "$status" -ne 0 ] || status=3
  fi

  banner "DQN: the shipped configs (seed 1) on cuda, CartPole also on cpu"
  local spec config device run t0
  for spec in "cartpole cuda" "cartpole cpu" "acrobot cuda" "mountain_car cuda"; do
    read -r config device <<<"$spec"
    run="$build_dir/dqn-$config-$device"
    rm -rf "$run"
    t0=$SECONDS
    if timeout 300 "$cli" train --config "configs/$config.toml" --device "$device" --out "$run" >"$run.log" 2>&1; then
      echo "dqn $config $device: $((SECONDS - t0)) s in all; $(tail -n 1 "$run/metrics.csv" | cut -d, -f1,2)" \
           "(step, train seconds); $(grep -o 'mean return .*' "$run.log")"
    else
      tail -n 3 "$run.log"
      echo "gpu-check: DQN $config on $device FAILED"
      [ "$status" -ne 0 ] || status=3
    fi
  done
  return "$status"
}

if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  main 2>&1 | tee "$OUT/gpu-check.log"
  status=${PIPESTATUS[0]}
else
  main
  status=$?
fi
echo "gpu-check: exit $status"
[ -z "${OUT:-}" ] || echo "gpu-check: exit $status" >>"$OUT/gpu-check.log"
exit "$status"
