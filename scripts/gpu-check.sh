#!/usr/bin/env bash
# GPU check for a machine with an NVIDIA GPU (no network needed, installs nothing outside the
# repository), in three parts that each fit one call of at most 8 minutes on the lent H200
# machine (16 cores):
#   scripts/gpu-check.sh build [--slow]  probe, CUDA build for sm_90 into build-gpu (no SDL2/Box2D),
#                                        then ctest -j with CUGYM_REQUIRE_GPU=1 (a CUDA case that
#                                        skips is a failure); --slow adds the slow learning tests
#   scripts/gpu-check.sh bench           reuses build-gpu (builds cugym and the nn bench if absent):
#                                        env steps/s beside the bandwidth bound, nn updates/s, and
#                                        the shipped DQN configs trained on cuda over seeds, judged
#   scripts/gpu-check.sh python          the Python package built with CUDA for sm_90 by this machine's
#                                        python3 (pip, no build isolation, no index: nanobind,
#                                        scikit-build-core, numpy there; gymnasium there or carried
#                                        as wheels in .whl/), then python/tests with
#                                        CUGYM_REQUIRE_GPU=1 (test_cuda.py: DLPack with PyTorch,
#                                        CuPy and JAX, the CPU's bits, stream ordering)
#   scripts/gpu-check.sh all             build, bench and python, one after the other
#   scripts/gpu-check.sh wheels          on the development machine (PyPI): downloads the pure-Python
#                                        wheels the python part needs into .whl/ (gymnasium,
#                                        farama-notifications); carry .whl in the device call
# Options: --dry-run  print the probe and every command a part would run, run none of them
#          --rehearse no GPU needed: cpu wherever cuda, 1/64 of the env counts, fewer seeds; checks
#                     the script itself (its parsing and judging) on a machine without a GPU
# Each part ends with a summary block to paste into docs/benchmarks.md; with $OUT set, the log and
# the raw JSON lines are written there too. Env: CUGYM_GPU_ARCH (default 90).
# Exit status: 0 passed; 1 build failed; 2 a test failed; 3 a benchmark or training missed its bar
# (or crashed, or fell back from the CUDA graph); 4 no GPU or a missing prerequisite; 64 usage.
#
# Budget, measured on the 2-core development machine (no GPU, --rehearse) and scaled to 16 cores:
#   build: probe 1 s; configure + build 52 s on 2 cores (about 15 s on 16); ctest -j 70 s on 2
#          cores, of which the out-of-tree plugin build 11 s and the CLI checks 11 s (about 40 s
#          on 16 with the GPU cases running). Expected: 1-2 minutes after the machine starts.
#   bench: env table 27 runs, each 1 warm-up + 5 repeats, a second or two each (GPU context
#          start-up dominates): about 1 minute; nn bench 0.2 s per figure, 12 figures: 15 s; DQN:
#          8 CartPole seeds in parallel (about 5 s of training each on a 2-core CPU, launch-bound
#          on the GPU), then 8 Acrobot, 4 MountainCar (about 30 s each on the CPU) and one
#          CartPole on the CPU together, each cut off at 150 s: 1-5 minutes. Expected: 3-5
#          minutes, at most 7 (plus a minute to build cugym where the build part did not run).
#          --rehearse on the 2-core machine: 2 minutes for both parts.
#   python: pip build of the extension with CUDA (core, envs, nn, agents and the bindings; no
#          tests, no CLI): about 1 minute on 16 cores; pytest python/tests: under a minute
#          (importing PyTorch and JAX is most of it). --rehearse builds CPU-only and runs
#          test_cuda.py on the CPU back end (CUGYM_CUDA_TESTS_ON_CPU=1): 4 minutes on 2 cores.
set -uo pipefail
export LC_ALL=C  # '.' decimal point in printf

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1

part=""
slow=0
dry=0
rehearse=0
for arg in "$@"; do
  case "$arg" in
    build|bench|python|all|wheels) part="$arg" ;;
    --slow) slow=1 ;;
    --dry-run) dry=1 ;;
    --rehearse) rehearse=1 ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument '$arg' (try --help)" >&2; exit 64 ;;
  esac
done
if [ -z "$part" ]; then echo "gpu-check: say which part: build, bench or all (try --help)" >&2; exit 64; fi

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

build_dir=build-gpu
cli="$build_dir/cli/cugym"
report="python3 scripts/gpu_check_report.py"
cores="$(nproc)"
dev=cuda
[ "$rehearse" -eq 0 ] || dev=cpu
export CUGYM_JOBS="$cores" CUGYM_REHEARSE="$rehearse"
banner() { printf '\n===== %s =====\n' "$*"; }

# run CMD...: print the command; run it unless --dry-run.
run() {
  echo "+ $*"
  [ "$dry" -eq 1 ] || "$@"
}

# One line on what the machine has; exits 4 when something the check needs is missing (in
# seconds, before any build), unless --dry-run or --rehearse.
probe() {
  local gpu missing=() line
  gpu="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  [ -n "$gpu" ] || gpu="none"
  line="probe: gpu=[$gpu] cores=$cores"
  line+=" nvcc=$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | cut -d' ' -f2 || true)"
  line+=" cmake=$(cmake --version 2>/dev/null | head -n 1 | grep -o '[0-9][0-9.]*' || true)"
  line+=" c++=$(c++ -dumpfullversion 2>/dev/null || true)"
  line+=" python3=$(python3 -c 'import sys; print(sys.version.split()[0])' 2>/dev/null || true)"
  command -v nvcc >/dev/null 2>&1 || missing+=("nvcc")
  command -v cmake >/dev/null 2>&1 || missing+=("cmake")
  command -v c++ >/dev/null 2>&1 || missing+=("c++")
  command -v python3 >/dev/null 2>&1 || missing+=("python3")
  if [ -f /usr/include/gtest/gtest.h ] || [ -f /usr/local/include/gtest/gtest.h ]; then line+=" gtest=yes"
  else line+=" gtest=no"; missing+=("GoogleTest (libgtest-dev)"); fi
  # grep -c, not -q: -q stops reading early, and the writer's SIGPIPE fails the pipeline (pipefail).
  if find /usr/include /usr/local/include -maxdepth 3 -name cblas.h 2>/dev/null | grep -c . >/dev/null &&
     ldconfig -p 2>/dev/null | grep -c 'libopenblas' >/dev/null; then line+=" openblas=yes"
  else line+=" openblas=no"; missing+=("OpenBLAS (libopenblas-dev)"); fi
  echo "$line"
  date -u '+probe: %Y-%m-%d %H:%M:%S UTC'
  [ "$gpu" != "none" ] || [ "$rehearse" -eq 1 ] || missing+=("a GPU (nvidia-smi lists none)")
  if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$dry" -eq 1 ]; then echo "probe: missing (ignored for --dry-run): ${missing[*]}"; return 0; fi
    echo "gpu-check: missing: ${missing[*]}"
    [ "$gpu" != "none" ] || echo "gpu-check: no GPU here; nothing to check (--dry-run shows the plan, --rehearse runs it on the CPU)"
    return 4
  fi
}

configure_args=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=${CUGYM_GPU_ARCH:-90}"
                -DCUGYM_CUDA=ON -DCUGYM_SDL2=OFF -DCUGYM_BOX2D=OFF)

part_build() {
  banner "build part: probe"
  probe || return $?
  banner "build ($build_dir, ${cores} jobs)"
  local t0=$SECONDS
  if ! run bash scripts/build.sh "$build_dir" "${configure_args[@]}"; then
    echo "gpu-check: BUILD FAILED"
    return 1
  fi
  local build_s=$((SECONDS - t0))

  banner "ctest (-j $cores, CUGYM_REQUIRE_GPU=1)"
  local ctest_args=(--test-dir "$build_dir" --output-on-failure -j "$cores" --timeout 600)
  [ "$slow" -eq 1 ] || ctest_args+=(-LE slow)
  local require=1
  [ "$rehearse" -eq 0 ] || require=0  # no GPU to require
  local log="$build_dir/ctest-gpu.log" rc=0
  t0=$SECONDS
  echo "+ CUGYM_REQUIRE_GPU=$require ctest ${ctest_args[*]}"
  if [ "$dry" -eq 0 ]; then
    CUGYM_REQUIRE_GPU=$require ctest "${ctest_args[@]}" 2>&1 | tee "$log" || rc=$?
  fi
  local ctest_s=$((SECONDS - t0))
  [ "$dry" -eq 0 ] || return 0
  [ -z "${OUT:-}" ] || cp "$log" "$OUT/ctest-gpu.log"
  banner "summary: build part (paste into docs/benchmarks.md)"
  $report ctest "$log" --build-seconds "$build_s" --ctest-seconds "$ctest_s"
  if [ "$rc" -ne 0 ]; then
    echo "gpu-check: TESTS FAILED (ctest exit $rc)"
    return 2
  fi
}

# bench_env ENV DEVICE N STEPS MODE: one `cugym bench --json` line appended to $jsonl.
bench_env() {
  local n="$3"
  [ "$rehearse" -eq 0 ] || n=$(( n / 64 > 0 ? n / 64 : 1 ))
  local cmd=("$cli" bench --env "$1" --device "$2" --num-envs "$n" --steps "$4" --mode "$5" --json)
  echo "+ ${cmd[*]}"
  [ "$dry" -eq 0 ] || return 0
  local out rc=0
  out="$(timeout 300 "${cmd[@]}" 2>&1)" || rc=$?
  if [ "$rc" -ne 0 ] || ! grep -q '^{' <<<"$out"; then
    echo "  FAILED (exit $rc): $(tail -n 1 <<<"$out")"
    echo "{\"env\": \"$1\", \"device\": \"$2\", \"num_envs\": $n, \"mode\": \"$5\", \"failed\": \"exit $rc\"}" >>"$jsonl"
    return 0
  fi
  grep '^{' <<<"$out" | tail -n 1 | tee -a "$jsonl"
}

# train_seeds CONFIG DEVICE SEEDS...: starts one training per seed in the background (run folders
# under $dqn_dir); wait_trainings waits for all of them. Each is cut off after 150 s, so the part
# stays inside its budget whatever happens (a cut-off run has no eval.json and fails its group).
training_pids=()
train_seeds() {
  local config="$1" device="$2" seed
  shift 2
  for seed in "$@"; do
    local dir="$dqn_dir/$config-$device-$seed"
    local cmd=("$cli" train --config "configs/$config.toml" --device "$device" --seed "$seed" --out "$dir")
    echo "+ ${cmd[*]} > $dir.log &"
    [ "$dry" -eq 0 ] || continue
    rm -rf "$dir"
    # One BLAS thread per CPU run: several train at once.
    OPENBLAS_NUM_THREADS=1 timeout 150 "${cmd[@]}" >"$dir.log" 2>&1 &
    training_pids+=($!)
  done
}
wait_trainings() {
  local pid
  for pid in "${training_pids[@]}"; do wait "$pid"; done
  training_pids=()
}

part_bench() {
  banner "bench part: probe"
  probe || return $?
  if [ ! -x "$cli" ] || [ ! -x "$build_dir/bench/cugym_bench_nn" ]; then
    banner "build (cugym and the nn bench only: no build part ran on this machine)"
    if [ -f "$build_dir/CMakeCache.txt" ]; then
      run cmake --build "$build_dir" -j "$cores" --target cugym cugym_bench_nn || { echo "gpu-check: BUILD FAILED"; return 1; }
    else
      run cmake -S . -B "$build_dir" "${configure_args[@]}" >/dev/null &&
        run cmake --build "$build_dir" -j "$cores" --target cugym cugym_bench_nn || { echo "gpu-check: BUILD FAILED"; return 1; }
    fi
  fi
  local t_part=$SECONDS

  banner "env benchmarks (random actions, median of 5 after a warm-up)"
  jsonl="$build_dir/bench.jsonl"
  [ "$dry" -eq 1 ] || : >"$jsonl"
  local t0=$SECONDS run_spec env device n steps mode
  # env device num_envs steps modes
  local runs=(
    "CartPole-v1 $dev 65536 1000 step,fused" "CartPole-v1 $dev 1048576 200 step,fused"
    "CartPole-v1 $dev 16777216 50 fused" "CartPole-v1 cpu 65536 200 step,fused"
    "MountainCar-v0 $dev 1048576 200 step,fused" "MountainCarContinuous-v0 $dev 1048576 200 step,fused"
    "Acrobot-v1 $dev 1048576 100 step,fused" "Pendulum-v1 $dev 1048576 200 step,fused"
  )
  for run_spec in "${runs[@]}"; do
    read -r env device n steps mode <<<"$run_spec"
    for m in ${mode//,/ }; do bench_env "$env" "$device" "$n" "$steps" "$m"; done
  done
  local env_s=$((SECONDS - t0))

  banner "nn: gradient updates per second"
  nn_jsonl="$build_dir/nn-bench.jsonl"
  t0=$SECONDS
  echo "+ $build_dir/bench/cugym_bench_nn --device all --seconds 0.2 --json > $nn_jsonl"
  if [ "$dry" -eq 0 ] && ! timeout 300 "$build_dir/bench/cugym_bench_nn" --device all --seconds 0.2 --json >"$nn_jsonl"; then
    echo "gpu-check: cugym_bench_nn FAILED"
    echo '{"bench": "nn_update", "failed": "cugym_bench_nn exited non-zero"}' >>"$nn_jsonl"
  fi
  local nn_s=$((SECONDS - t0))

  banner "DQN: the shipped configs on $dev over seeds (in parallel), CartPole seed 1 also on cpu"
  dqn_dir="$build_dir/dqn"
  [ "$dry" -eq 1 ] || mkdir -p "$dqn_dir"
  t0=$SECONDS
  local cartpole_seeds=(1 2 3 4 5 6 7 8) acrobot_seeds=(1 2 3 4 5 6 7 8) mountain_seeds=(1 2 3 4)
  if [ "$rehearse" -eq 1 ]; then cartpole_seeds=(1 2); acrobot_seeds=(1 2); mountain_seeds=(1); fi
  train_seeds cartpole "$dev" "${cartpole_seeds[@]}"
  wait_trainings
  train_seeds acrobot "$dev" "${acrobot_seeds[@]}"
  train_seeds mountain_car "$dev" "${mountain_seeds[@]}"
  [ "$rehearse" -eq 1 ] || train_seeds cartpole cpu 1
  wait_trainings
  local dqn_s=$((SECONDS - t0))
  [ "$dry" -eq 0 ] || return 0

  if [ -n "${OUT:-}" ]; then
    cp "$jsonl" "$OUT/bench.jsonl"
    cp "$nn_jsonl" "$OUT/nn-bench.jsonl"
    tar -czf "$OUT/dqn-runs.tgz" -C "$build_dir" --exclude='*.safetensors' dqn 2>/dev/null || true
  fi
  banner "summary: bench part (paste into docs/benchmarks.md)"
  echo "bench part: env table ${env_s} s, nn ${nn_s} s, DQN ${dqn_s} s, in all $((SECONDS - t_part)) s"
  # Bars (the CPU success rates of these configs are in docs/benchmarks.md): CartPole-v1 and
  # Acrobot-v1 at least 6 of 8 seeds at their thresholds (31 and 32 of 32 seeds on a 2-core CPU:
  # a working GPU path, whose sums round differently and so act like other seeds, misses this
  # bar with probability well under 1%; a broken one reaches none); MountainCar-v0 is reported,
  # not judged (29 of 32 on the CPU, 4 seeds here).
  local need_cartpole=6 need_acrobot=6
  [ "$rehearse" -eq 0 ] || { need_cartpole=1; need_acrobot=1; }
  $report bench --env-jsonl "$jsonl" --nn-jsonl "$nn_jsonl" --dqn-dir "$dqn_dir" \
    --bar "cartpole-$dev:475:$need_cartpole" --bar "acrobot-$dev:-100:$need_acrobot" \
    --bar "mountain_car-$dev:-110:0" --bar "cartpole-cpu:475:0"
}

# The wheels the python part installs from .whl/ (pure Python, so any platform's pip fetches them).
python_wheels=(gymnasium==1.4.0 farama-notifications==0.0.4)

part_wheels() {
  banner "wheels for the python part (into .whl/)"
  run python3 -m pip download -q --no-deps --only-binary=:all: -d "$root/.whl" "${python_wheels[@]}" ||
    { echo "gpu-check: pip download failed (this needs PyPI: run it on the development machine)"; return 4; }
  [ "$dry" -eq 1 ] || ls -1 "$root/.whl"
}

part_python() {
  banner "python part: probe"
  probe || return $?
  local dir="$root/build-gpu-python" site="$root/build-gpu-python/site"
  if [ -d "$root/.whl" ] && ls "$root"/.whl/*.whl >/dev/null 2>&1; then
    run python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
      "$root"/.whl/*.whl || { echo "gpu-check: installing .whl/ failed"; return 4; }
  fi
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  echo "+ python3 -c 'import nanobind, scikit_build_core, numpy, gymnasium, pytest'"
  if [ "$dry" -eq 0 ] && ! python3 -c 'import nanobind, scikit_build_core, numpy, gymnasium, pytest'; then
    echo "gpu-check: missing: a Python package the python part needs (gymnasium: run scripts/gpu-check.sh wheels here and carry .whl)"
    return 4
  fi
  banner "pip install . (CUDA for sm_${CUGYM_GPU_ARCH:-90}, into $site)"
  local cuda=ON t0=$SECONDS
  [ "$rehearse" -eq 0 ] || cuda=OFF
  if ! CUGYM_CUDA=$cuda CMAKE_BUILD_PARALLEL_LEVEL="$cores" run python3 -m pip install -q --no-build-isolation \
      --no-deps --no-index --upgrade --target "$site" "-Cbuild-dir=$dir/build" \
      "-Ccmake.define.CMAKE_CUDA_ARCHITECTURES=${CUGYM_GPU_ARCH:-90}" "$root"; then
    echo "gpu-check: BUILD FAILED (pip install .)"
    return 1
  fi
  local build_s=$((SECONDS - t0))
  banner "pytest python/tests"
  local log="$dir/pytest-gpu.log" rc=0 env_args=(CUGYM_REQUIRE_GPU=1)
  [ "$rehearse" -eq 0 ] || env_args=(CUGYM_CUDA_TESTS_ON_CPU=1)
  t0=$SECONDS
  local cmd=(env "${env_args[@]}" python3 -m pytest -q -rs -p no:cacheprovider "$root/python/tests")
  [ "$rehearse" -eq 0 ] || cmd=(env "${env_args[@]}" python3 -m pytest -q -rs -p no:cacheprovider "$root/python/tests/test_cuda.py")
  echo "+ (cd $dir && ${cmd[*]})"
  [ "$dry" -eq 0 ] || return 0
  (cd "$dir" && "${cmd[@]}") 2>&1 | tee "$log" || rc=$?
  [ -z "${OUT:-}" ] || cp "$log" "$OUT/pytest-gpu.log"
  banner "summary: python part (paste into docs/benchmarks.md)"
  echo "python part: pip build ${build_s} s, pytest $((SECONDS - t0)) s: $(grep -E '[0-9]+ (passed|failed)' "$log" | tail -n 1)"
  if [ "$rc" -ne 0 ]; then
    echo "gpu-check: PYTHON TESTS FAILED (pytest exit $rc)"
    return 2
  fi
}

main() {
  local status=0
  case "$part" in
    build) part_build || status=$? ;;
    bench) part_bench || status=$? ;;
    python) part_python || status=$? ;;
    wheels) part_wheels || status=$? ;;
    all)
      part_build || status=$?
      if [ "$status" -eq 0 ] || [ "$status" -eq 2 ]; then
        local next_status=0
        part_bench || next_status=$?
        [ "$status" -ne 0 ] || status=$next_status
        next_status=0
        part_python || next_status=$?
        [ "$status" -ne 0 ] || status=$next_status
      fi
      ;;
  esac
  [ "$dry" -eq 0 ] || echo "gpu-check: dry run of '$part' (nothing was built or run)"
  return "$status"
}

if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  main 2>&1 | tee "$OUT/gpu-check-$part.log"
  status=${PIPESTATUS[0]}
else
  main
  status=$?
fi
echo "gpu-check: exit $status"
[ -z "${OUT:-}" ] || echo "gpu-check: exit $status" >>"$OUT/gpu-check-$part.log"
exit "$status"
