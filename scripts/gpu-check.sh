#!/usr/bin/env bash
# GPU check for a machine with an NVIDIA GPU and nothing else: no network, no installs, and no
# GoogleTest, OpenBLAS or Box2D needed from its image (they come carried in deps/). Two device
# calls of at most 6 minutes each on the lent H200 machine (16 cores), most valuable figures first:
#   here:    bash scripts/gpu-check.sh deps          (once; carry `deps` in both calls)
#   call 1:  bash scripts/gpu-check.sh build speed   tests, then env and network speed
#   call 2:  bash scripts/gpu-check.sh dqn python    DQN trained on cuda, then the Python package
# Parts (any of them, in this order, on one command line; `all` is the four device parts):
#   deps    on the development machine (Debian's packages, PyPI): fetches into deps/ what the GPU
#           image may lack: GoogleTest's source, OpenBLAS and its Fortran runtime, Box2D (.debs,
#           unpacked there into build-gpu-deps/, never over /), gymnasium's wheels
#   build   probe, CUDA build for sm_90 into build-gpu (Box2D from deps/, no SDL2), ctest -j with
#           CUGYM_REQUIRE_GPU=1 (a CUDA case that skips is a failure), then compute-sanitizer
#           memcheck and racecheck over a few CUDA cases of envs, nn and agents where it can run;
#           --slow adds the slow learning tests
#   speed   env steps/s beside the bandwidth bound, nn updates/s (builds cugym where needed)
#   dqn     the shipped DQN configs (and PQN's CartPole and Breakout) trained on cuda over seeds, judged
#           (builds cugym where needed)
#   python  the package built with CUDA by this machine's python3 (pip, no build isolation, no
#           index), then python/tests with CUGYM_REQUIRE_GPU=1 (DLPack with PyTorch, CuPy, JAX)
# Options: --dry-run  print the probe and every command the parts would run, run none of them
#          --rehearse no GPU needed: cpu wherever cuda, 1/64 of the env counts, fewer seeds; checks
#                     the script itself (its parsing and judging) on a machine without a GPU
# Each part prints its verdict and a summary block for docs/benchmarks.md as it finishes; with $OUT
# set, the log and the raw results are written there as they come, so a call cut off keeps them.
# Env: CUGYM_GPU_ARCH (default 90). Exit status: 0 passed; 1 build failed; 2 a test failed; 3 a
# benchmark or training missed its bar (or crashed, or fell back from the CUDA graph); 4 no GPU or
# a missing prerequisite (the probe names each); 64 usage.
#
# Budget on the H200 machine, from the 2-core development machine's times (docs/gpu-check.md):
#   call 1: deps unpacked and GoogleTest built 20 s; CUDA build 1-2 min; ctest 1-1.5 min;
#           sanitizer 1 min at most (cut off at 90 s); env table 1 min, nn 15 s: about 5 minutes.
#   call 2: cugym rebuilt if the machine is fresh (1 min); DQN 8 CartPole seeds, then 8 Acrobot,
#           4 MountainCar, one CartPole on the CPU and the lockstep batches (1,024 CartPole seeds,
#           64 Acrobot) together, each cut off at 120 s: 3 minutes at
#           most; python: pip build 1 min, pytest 1 min: about 5-6 minutes.
set -uo pipefail
export LC_ALL=C  # '.' decimal point in printf

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1

parts=()
slow=0
dry=0
rehearse=0
for arg in "$@"; do
  case "$arg" in
    deps|build|speed|dqn|python) parts+=("$arg") ;;
    all) parts+=(build speed dqn python) ;;
    --slow) slow=1 ;;
    --dry-run) dry=1 ;;
    --rehearse) rehearse=1 ;;
    -h|--help) sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument '$arg' (try --help)" >&2; exit 64 ;;
  esac
done
if [ "${#parts[@]}" -eq 0 ]; then
  echo "gpu-check: say which parts: deps, build, speed, dqn, python or all (try --help)" >&2
  exit 64
fi

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

build_dir=build-gpu
cli="$build_dir/cli/cugym"
report="python3 scripts/gpu_check_report.py"
cores="$(nproc)"
dev=cuda
[ "$rehearse" -eq 0 ] || dev=cpu
# Where results go: $OUT on the device machine (they come back even from a call cut off).
results="${OUT:-$root/$build_dir/results}"
export CUGYM_JOBS="$cores" CUGYM_REHEARSE="$rehearse"
banner() { printf '\n===== %s =====\n' "$*"; }

# run CMD...: print the command; run it unless --dry-run.
run() {
  echo "+ $*"
  [ "$dry" -eq 1 ] || "$@"
}

# ---- deps: what the image may lack, carried as Debian packages and wheels -----------------------
deps_dir="$root/deps"
deps_root="$root/build-gpu-deps/root"     # the .debs unpacked (never over /)
gtest_prefix="$root/build-gpu-deps/gtest"  # GoogleTest built from the carried source
deps_packages=(googletest libopenblas0-pthread libopenblas-pthread-dev libgfortran5 libquadmath0 libbox2d2
               libbox2d-dev)
python_wheels=(gymnasium==1.4.0 farama-notifications==0.0.4)  # pure Python: any platform's pip fetches them
multiarch=x86_64-linux-gnu
openblas_include="$deps_root/usr/include/$multiarch/openblas-pthread"
openblas_lib="$deps_root/usr/lib/$multiarch/openblas-pthread"

part_deps() {
  banner "deps: Debian packages and wheels for the GPU image (into deps/)"
  echo "+ (cd deps/debs && apt-get download ${deps_packages[*]})"
  if [ "$dry" -eq 0 ] && ! (mkdir -p "$deps_dir/debs" "$deps_dir/whl" && cd "$deps_dir/debs" &&
                            apt-get download "${deps_packages[@]}"); then
    echo "gpu-check: apt-get download failed (run 'apt-get update' first; this needs Debian's packages)"
    return 4
  fi
  run python3 -m pip download -q --no-deps --only-binary=:all: -d "$deps_dir/whl" "${python_wheels[@]}" ||
    { echo "gpu-check: pip download failed (this needs PyPI: run it on the development machine)"; return 4; }
  [ "$dry" -eq 0 ] || return 0
  # One version of each: a package fetched again after an update leaves the old .deb behind.
  local pkg
  for pkg in "${deps_packages[@]}"; do
    ls -t "$deps_dir/debs/${pkg}_"*.deb 2>/dev/null | tail -n +2 | xargs -r rm -f
  done
  du -sh "$deps_dir" | sed 's/^/deps: /'
  ls -1 "$deps_dir/debs" "$deps_dir/whl"
  echo "deps: carry 'deps' in each device call (the working tree and it must stay under 64 MiB)"
}

have_system_gtest() {
  { [ -f /usr/include/gtest/gtest.h ] || [ -f /usr/local/include/gtest/gtest.h ]; } &&
    find /usr/lib /usr/lib64 /usr/local/lib /usr/local/lib64 -maxdepth 2 -name 'libgtest.*' 2>/dev/null | grep -c . >/dev/null
}
have_system_openblas() {
  # grep -c, not -q: -q stops reading early, and the writer's SIGPIPE fails the pipeline (pipefail).
  find /usr/include /usr/local/include -maxdepth 3 -name cblas.h 2>/dev/null | grep -c . >/dev/null &&
    ldconfig -p 2>/dev/null | grep -c 'libopenblas' >/dev/null
}
have_system_box2d() { [ -f /usr/include/box2d/box2d.h ] || [ -f /usr/local/include/box2d/box2d.h ]; }
have_deps() { compgen -G "$deps_dir/debs/*.deb" >/dev/null; }
deb_unpacker() {
  if command -v dpkg-deb >/dev/null 2>&1; then echo dpkg-deb; elif command -v ar >/dev/null 2>&1; then echo ar; fi
}

# Unpacks the carried .debs once into $deps_root (dpkg-deb -x, or ar and tar where dpkg is missing).
unpack_deps() {
  [ -f "$deps_root/.unpacked" ] && return 0
  rm -rf "$deps_root" && mkdir -p "$deps_root" || return 1
  local deb tool
  tool="$(deb_unpacker)"
  for deb in "$deps_dir"/debs/*.deb; do
    if [ "$tool" = dpkg-deb ]; then
      dpkg-deb -x "$deb" "$deps_root" || return 1
    else
      local tmp
      tmp="$(mktemp -d)"
      (cd "$tmp" && ar x "$deb" && tar -xf data.tar.* -C "$deps_root") || { rm -rf "$tmp"; return 1; }
      rm -rf "$tmp"
    fi
  done
  touch "$deps_root/.unpacked"
}

prepend_library_path() {
  case ":${LD_LIBRARY_PATH:-}:" in *":$1:"*) ;; *) export LD_LIBRARY_PATH="$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;; esac
}

# What each missing system package becomes (set by use_deps): CMake arguments, and loader paths.
dep_cmake_args=()
gtest_from=""
openblas_from=""
box2d_from=""
# use_deps NEED_GTEST: decides, for GoogleTest (when asked), OpenBLAS and Box2D, whether the system
# or deps/ provides each; unpacks deps/ and builds GoogleTest where needed. Missing pieces are
# left for the probe to name.
use_deps() {
  local need_gtest=$1 from_deps=0
  dep_cmake_args=()
  if have_system_openblas; then openblas_from=system; elif have_deps; then openblas_from=deps; from_deps=1; fi
  if have_system_box2d; then box2d_from=system; elif have_deps; then box2d_from=deps; from_deps=1; fi
  if [ "$need_gtest" -eq 1 ]; then
    if have_system_gtest; then gtest_from=system; elif have_deps; then gtest_from=deps; from_deps=1; fi
  fi
  # cuBLAS for programs run from an install or a pip build, where the loader's cache lacks it.
  local cublas
  cublas="$(cublas_dir)"
  [ -z "$cublas" ] || [ "$cublas" = loader ] || prepend_library_path "$cublas"
  [ "$from_deps" -eq 1 ] || return 0
  if [ -z "$(deb_unpacker)" ]; then
    openblas_from=""; box2d_from=""; [ "$gtest_from" != deps ] || gtest_from=""
    return 0
  fi
  echo "+ unpack deps/debs/*.deb into ${deps_root#"$root"/}"
  if [ "$dry" -eq 0 ] && ! unpack_deps; then
    echo "gpu-check: unpacking deps/debs failed"; openblas_from=""; box2d_from=""; gtest_from=""
    return 0
  fi
  local prefixes=()
  if [ "$openblas_from" = deps ]; then
    dep_cmake_args+=("-DCUGYM_CBLAS_INCLUDE_DIR=$openblas_include" "-DCUGYM_OPENBLAS_LIBRARY=$openblas_lib/libopenblas.so")
    prepend_library_path "$deps_root/usr/lib/$multiarch"  # libgfortran, libquadmath
    prepend_library_path "$openblas_lib"
  fi
  if [ "$box2d_from" = deps ]; then
    prefixes+=("$deps_root/usr")
    prepend_library_path "$deps_root/usr/lib/$multiarch"
  fi
  if [ "$gtest_from" = deps ]; then
    prefixes+=("$gtest_prefix")
    if [ ! -f "$gtest_prefix/include/gtest/gtest.h" ]; then
      local gen=()
      command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
      if ! { run cmake -S "$deps_root/usr/src/googletest" -B "$root/build-gpu-deps/gtest-build" "${gen[@]}" \
               -DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=OFF "-DCMAKE_INSTALL_PREFIX=$gtest_prefix" >/dev/null &&
             run cmake --build "$root/build-gpu-deps/gtest-build" -j "$cores" >/dev/null &&
             run cmake --install "$root/build-gpu-deps/gtest-build" >/dev/null; }; then
        echo "gpu-check: building GoogleTest from deps/ failed"; gtest_from=""
      fi
    fi
  fi
  [ "${#prefixes[@]}" -eq 0 ] || dep_cmake_args+=("-DCMAKE_PREFIX_PATH=$(IFS=';'; echo "${prefixes[*]}")")
}

# ---- probe -------------------------------------------------------------------------------------
# probe PART: one line on what the machine has, then one naming every missing piece the part needs
# (exit 4, in seconds, before any build), unless --dry-run or --rehearse.
probe() {
  local what="$1" gpu missing=() line
  gpu="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  [ -n "$gpu" ] || gpu="none"
  line="probe ($what): gpu=[$gpu] cores=$cores"
  line+=" nvcc=$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | cut -d' ' -f2 || true)"
  line+=" cmake=$(cmake --version 2>/dev/null | head -n 1 | grep -o '[0-9][0-9.]*' || true)"
  line+=" c++=$(c++ -dumpfullversion 2>/dev/null || true)"
  line+=" python3=$(python3 -c 'import sys; print(sys.version.split()[0])' 2>/dev/null || true)"
  command -v nvcc >/dev/null 2>&1 || missing+=("nvcc")
  command -v cmake >/dev/null 2>&1 || missing+=("cmake")
  command -v c++ >/dev/null 2>&1 || missing+=("c++")
  command -v python3 >/dev/null 2>&1 || missing+=("python3")
  local carry="carry deps/: run 'scripts/gpu-check.sh deps' on the development machine"
  line+=" openblas=${openblas_from:-no}"
  [ -n "$openblas_from" ] || missing+=("OpenBLAS (libopenblas-dev, or $carry)")
  if [ "$what" = python ]; then
    local py
    py="$(python3 - <<'EOF' 2>/dev/null
import importlib.util
print(" ".join(m for m in ("numpy", "nanobind", "scikit_build_core", "pytest", "gymnasium")
               if importlib.util.find_spec(m) is None))
EOF
)"
    for m in $py; do
      if [ "$m" = gymnasium ]; then missing+=("python3 module gymnasium ($carry)"); else missing+=("python3 module $m"); fi
    done
    python3 -c 'import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' \
      2>/dev/null || missing+=("Python.h (python3's headers)")
    if [ -n "$(cublas_dir)" ]; then line+=" cublas=$(cublas_dir)"; else line+=" cublas=no"; missing+=("libcublas.so.13"); fi
  else
    if [ "$what" = build ]; then
      line+=" gtest=${gtest_from:-no}"
      [ -n "$gtest_from" ] || missing+=("GoogleTest (libgtest-dev, or $carry)")
    fi
    line+=" box2d=${box2d_from:-no}"
  fi
  echo "$line"
  date -u '+probe: %Y-%m-%d %H:%M:%S UTC'
  [ "$gpu" != "none" ] || [ "$rehearse" -eq 1 ] || missing+=("a GPU (nvidia-smi lists none)")
  if [ "${#missing[@]}" -gt 0 ]; then
    local list
    list="$(printf '%s; ' "${missing[@]}")"
    if [ "$dry" -eq 1 ]; then echo "probe: missing (ignored for --dry-run): ${list%; }"; return 0; fi
    echo "gpu-check: missing: ${list%; }"
    [ "$gpu" != "none" ] || echo "gpu-check: no GPU here; nothing to check (--dry-run shows the plan, --rehearse runs it on the CPU)"
    return 4
  fi
}

# The folder of libcublas.so.13: the loader's cache, LD_LIBRARY_PATH, or the toolkit's own lib
# folder (added to LD_LIBRARY_PATH: an installed extension carries no RPATH to it).
cublas_dir() {
  local d toolkit
  toolkit="$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /nonexistent/bin/nvcc)")")"
  if ldconfig -p 2>/dev/null | grep -c 'libcublas\.so\.13' >/dev/null; then echo loader; return; fi
  for d in ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }} "$toolkit/lib64" "$toolkit/targets/x86_64-linux/lib"; do
    if [ -e "$d/libcublas.so.13" ]; then echo "$d"; return; fi
  done
}

configure_args() {
  local box2d=OFF
  [ -z "$box2d_from" ] || box2d=ON
  echo -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=${CUGYM_GPU_ARCH:-90}" -DCUGYM_CUDA=ON \
    -DCUGYM_SDL2=OFF "-DCUGYM_BOX2D=$box2d"
}

# ---- build: build, ctest, compute-sanitizer --------------------------------------------------------
part_build() {
  banner "build part: probe"
  use_deps 1
  probe build || return $?
  banner "build ($build_dir, ${cores} jobs)"
  local t0=$SECONDS args
  read -ra args <<<"$(configure_args)"
  if ! run bash scripts/build.sh "$build_dir" "${args[@]}" -DCUGYM_BUILD_TESTS=ON "${dep_cmake_args[@]}"; then
    echo "gpu-check: BUILD FAILED"
    return 1
  fi
  local build_s=$((SECONDS - t0))

  banner "ctest (-j $cores, CUGYM_REQUIRE_GPU=1)"
  local ctest_args=(--test-dir "$build_dir" --output-on-failure -j "$cores" --timeout 600)
  [ "$slow" -eq 1 ] || ctest_args+=(-LE slow)
  local require=1
  [ "$rehearse" -eq 0 ] || require=0  # no GPU to require
  local log="$results/ctest-gpu.log" rc=0
  t0=$SECONDS
  echo "+ CUGYM_REQUIRE_GPU=$require ctest ${ctest_args[*]}"
  if [ "$dry" -eq 0 ]; then
    CUGYM_REQUIRE_GPU=$require ctest "${ctest_args[@]}" 2>&1 | tee "$log" || rc=$?
  fi
  local ctest_s=$((SECONDS - t0))

  banner "compute-sanitizer (memcheck, racecheck) over CUDA cases of envs, nn and agents"
  local sanitizer_log="$results/sanitizer.log" sanitizer_rc=0
  t0=$SECONDS
  sanitize "$sanitizer_log"
  local sanitizer_s=$((SECONDS - t0))
  [ "$dry" -eq 0 ] || return 0
  banner "summary: build part (paste into docs/benchmarks.md)"
  $report ctest "$log" --build-seconds "$build_s" --ctest-seconds "$ctest_s"
  $report sanitizer "$sanitizer_log" --seconds "$sanitizer_s" || sanitizer_rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "gpu-check: TESTS FAILED (ctest exit $rc)"
    return 2
  fi
  if [ "$sanitizer_rc" -ne 0 ]; then
    echo "gpu-check: COMPUTE-SANITIZER FOUND ERRORS (see sanitizer.log)"
    return 2
  fi
  echo "build part: pass"
}

# sanitize LOG: each tool over a few CUDA cases of each CUDA file, all at once, each cut off at
# 90 s; every run's tail and exit status go into LOG for the report, which fails a run whose tool
# found an error or whose cases failed under it, and only reports an unusable sanitizer (gVisor's
# "Device not supported", none next to nvcc, --rehearse) or a run cut off.
sanitizer_cases=(
  "envs tests/cugym_tests CudaAgreement.EveryEnvGivesTheCpuBits:*Conformance.ASnapshotContinuesExactly/*cuda*"
  "nn tests/nn/cugym_nn_tests *CudaAgreement.ForwardBackwardAndLoss*"
  "agents tests/cugym_agent_tests AgentOpsAgreement.CudaGivesTheCpuBits:DqnCuda.GraphReplayGivesTheEagerWeights"
)
sanitize() {
  local log="$1" sanitizer can=1
  sanitizer="$(command -v compute-sanitizer || true)"
  [ -n "$sanitizer" ] || sanitizer="$(dirname "$(command -v nvcc 2>/dev/null || echo /x/nvcc)")/compute-sanitizer"
  [ "$dry" -eq 1 ] || : >"$log"
  if [ "$rehearse" -eq 1 ] || [ ! -x "$sanitizer" ]; then
    can=0
    local why="no compute-sanitizer next to nvcc"
    [ "$rehearse" -eq 0 ] || why="--rehearse: no GPU"
    echo "sanitizer: not run ($why); the runs would be:"
    [ "$dry" -eq 1 ] || echo "sanitizer: not run ($why)" >>"$log"
  fi
  local pids=() logs=() spec tool name bin filter
  for tool in memcheck racecheck; do
    for spec in "${sanitizer_cases[@]}"; do
      read -r name bin filter <<<"$spec"
      local run_log="$root/$build_dir/sanitizer-$tool-$name.log"
      echo "+ timeout 90 compute-sanitizer --tool $tool --error-exitcode 99 $build_dir/$bin --gtest_filter='$filter'"
      [ "$dry" -eq 0 ] && [ "$can" -eq 1 ] || continue
      (CUGYM_REQUIRE_GPU=1 timeout 90 "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 20 \
         "$build_dir/$bin" "--gtest_filter=$filter" >"$run_log" 2>&1
       echo "sanitizer exit $?" >>"$run_log") &
      pids+=($!)
      logs+=("$run_log")
    done
  done
  local i
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"
    { echo "=== $(basename "${logs[$i]}" .log)"; tail -n 40 "${logs[$i]}"; } >>"$log"
  done
}

# ---- speed: env steps and nn updates ---------------------------------------------------------------
# ensure_cli: builds cugym and the nn bench where no build part ran on this machine (a fresh one).
ensure_cli() {
  if [ -x "$cli" ] && [ -x "$build_dir/bench/cugym_bench_nn" ]; then return 0; fi
  banner "build (cugym and the nn bench only: no build part ran on this machine)"
  local args gen=()
  read -ra args <<<"$(configure_args)"
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)  # as scripts/build.sh: the image may lack make
  # Without the tests (GoogleTest is built from deps/ by the build part only, which, run later on
  # this folder, configures them back on), with the benchmark programs.
  if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    run cmake -S . -B "$build_dir" "${gen[@]}" "${args[@]}" -DCUGYM_BUILD_TESTS=OFF -DCUGYM_BUILD_BENCH=ON \
      "${dep_cmake_args[@]}" >/dev/null || { echo "gpu-check: BUILD FAILED"; return 1; }
  fi
  run cmake --build "$build_dir" -j "$cores" --target cugym cugym_bench_nn cugym_minatar ||
    { echo "gpu-check: BUILD FAILED"; return 1; }
}

# bench_env ENV DEVICE N STEPS MODE: one `cugym bench --json` line appended to $jsonl.
bench_env() {
  local n="$3"
  [ "$rehearse" -eq 0 ] || n=$(( n / 64 > 0 ? n / 64 : 1 ))
  local cmd=("$cli" bench --env "$1" --device "$2" --num-envs "$n" --steps "$4" --mode "$5" --json)
  echo "+ ${cmd[*]}"
  [ "$dry" -eq 0 ] || return 0
  local out rc=0
  out="$(timeout 120 "${cmd[@]}" 2>&1)" || rc=$?
  if [ "$rc" -ne 0 ] || ! grep -q '^{' <<<"$out"; then
    echo "  FAILED (exit $rc): $(tail -n 1 <<<"$out")"
    echo "{\"env\": \"$1\", \"device\": \"$2\", \"num_envs\": $n, \"mode\": \"$5\", \"failed\": \"exit $rc\"}" >>"$jsonl"
    return 0
  fi
  grep '^{' <<<"$out" | tail -n 1 | tee -a "$jsonl"
}

part_speed() {
  banner "speed part: probe"
  use_deps 0
  probe speed || return $?
  ensure_cli || return $?
  local t_part=$SECONDS
  banner "env benchmarks (random actions, median of 5 after a warm-up)"
  jsonl="$results/bench.jsonl"
  [ "$dry" -eq 1 ] || : >"$jsonl"
  local t0=$SECONDS run_spec env device n steps mode
  # env device num_envs steps modes
  local runs=(
    "CartPole-v1 $dev 65536 1000 step,fused" "CartPole-v1 $dev 1048576 200 step,fused"
    "CartPole-v1 $dev 16777216 50 fused" "CartPole-v1 cpu 65536 200 step,fused"
    "MountainCar-v0 $dev 1048576 200 step,fused" "MountainCarContinuous-v0 $dev 1048576 200 step,fused"
    "Acrobot-v1 $dev 1048576 100 step,fused" "Pendulum-v1 $dev 1048576 200 step,fused"
  )
  # The MinAtar plugin (built by default; loaded from the build tree): Breakout's goal is 1e9 steps/s.
  if [ -f "$build_dir/lib/cugym/plugins/libcugym_minatar.so" ]; then
    runs+=("MinAtar-Breakout-v1 $dev 1048576 200 step,fused" "MinAtar-Asterix-v1 $dev 1048576 100 step"
           "MinAtar-Freeway-v1 $dev 1048576 100 step" "MinAtar-Seaquest-v1 $dev 1048576 100 step"
           "MinAtar-SpaceInvaders-v1 $dev 1048576 100 step")
  fi
  [ "$box2d_from" = "" ] || runs+=("LunarLander-v3 $dev 4096 50 step")  # host-stepped: pinned copies
  for run_spec in "${runs[@]}"; do
    read -r env device n steps mode <<<"$run_spec"
    for m in ${mode//,/ }; do bench_env "$env" "$device" "$n" "$steps" "$m"; done
  done
  local env_s=$((SECONDS - t0))

  banner "nn: gradient updates per second"
  nn_jsonl="$results/nn-bench.jsonl"
  t0=$SECONDS
  echo "+ $build_dir/bench/cugym_bench_nn --device all --seconds 0.2 --json > $nn_jsonl"
  if [ "$dry" -eq 0 ] && ! timeout 120 "$build_dir/bench/cugym_bench_nn" --device all --seconds 0.2 --json >"$nn_jsonl"; then
    echo "gpu-check: cugym_bench_nn FAILED"
    echo '{"bench": "nn_update", "failed": "cugym_bench_nn exited non-zero"}' >>"$nn_jsonl"
  fi
  # K CartPole networks (DQN's shipped 4-120-84 with a dueling head's 3 outputs, minibatch 64, 8
  # envs acting) as one batched network, the K agents of `cugym train --seeds` (issue 23): calls
  # per second at K = 1, 64 and 1024 on the GPU.
  local replicas=(--device cuda --nets 4-120-84-3 --batch 64 --losses mse --parts update,act --act-batches 8
                  --replicas 1,64,1024 --seconds 0.2 --json)
  echo "+ $build_dir/bench/cugym_bench_nn ${replicas[*]} >> $nn_jsonl"
  if [ "$dry" -eq 0 ] && ! timeout 120 "$build_dir/bench/cugym_bench_nn" "${replicas[@]}" >>"$nn_jsonl"; then
    echo "gpu-check: cugym_bench_nn --replicas FAILED"
    echo '{"bench": "nn_update", "failed": "cugym_bench_nn --replicas exited non-zero"}' >>"$nn_jsonl"
  fi
  local nn_s=$((SECONDS - t0))
  [ "$dry" -eq 0 ] || return 0
  banner "summary: speed part (paste into docs/benchmarks.md)"
  echo "speed part: env table ${env_s} s, nn ${nn_s} s, in all $((SECONDS - t_part)) s"
  $report speed --env-jsonl "$jsonl" --nn-jsonl "$nn_jsonl"
}

# ---- dqn: the shipped configs over seeds -------------------------------------------------------------
# train_seeds CONFIG DEVICE SEEDS...: starts one training per seed in the background (run folders
# under $dqn_dir, the exit status in RUN.rc); wait_trainings waits for all of them. Each is cut
# off after $train_limit s, so the part stays inside its budget whatever happens.
train_limit=120
training_pids=()
train_seeds() {
  local config="$1" device="$2" seed
  shift 2
  for seed in "$@"; do
    local dir="$dqn_dir/$config-$device-$seed"
    local cmd=("$cli" train --config "configs/$config.toml" --device "$device" --seed "$seed" --out "$dir")
    echo "+ ${cmd[*]} > $dir.log &"
    [ "$dry" -eq 0 ] || continue
    rm -rf "$dir" "$dir.rc"
    # One BLAS thread per CPU run: several train at once.
    (OPENBLAS_NUM_THREADS=1 timeout "$train_limit" "${cmd[@]}" >"$dir.log" 2>&1; echo $? >"$dir.rc") &
    training_pids+=($!)
  done
}
# train_batch CONFIG DEVICE SEEDS LIMIT: the same config's seeds in lockstep as one `cugym train --seeds`
# process (issue 23) into $dqn_dir/CONFIG-DEVICE-batch, its exit status and wall seconds beside it.
# No periodic checkpoints and none with the replay memory (1,024 runs would write gigabytes; the
# model bits do not depend on them), as PureJaxRL's 1,024-seed figure has none.
# cut off after LIMIT seconds.
train_batch() {
  local config="$1" device="$2" seeds="$3" limit="$4"
  local dir="$dqn_dir/$config-$device-batch"
  local cmd=("$cli" train --config "configs/$config.toml" --device "$device" --seeds "$seeds" --lockstep on
             --set checkpoint_interval=0 --set save_replay=false --out "$dir")
  echo "+ ${cmd[*]} > $dir.log &"
  [ "$dry" -eq 0 ] || return 0
  rm -rf "$dir" "$dir.rc" "$dir.seconds"
  (
    # Wall seconds to a tenth (bash's EPOCHREALTIME: no other tool needed; a locale may write
    # its decimal point as a comma).
    local t0=${EPOCHREALTIME/[.,]/} t1 us
    OPENBLAS_NUM_THREADS=1 timeout "$limit" "${cmd[@]}" >"$dir.log" 2>&1
    echo $? >"$dir.rc"
    t1=${EPOCHREALTIME/[.,]/}
    us=$((10#$t1 - 10#$t0))
    printf '%d.%d\n' $((us / 1000000)) $((us % 1000000 / 100000)) >"$dir.seconds"
  ) &
  training_pids+=($!)
}
wait_trainings() {
  local pid
  for pid in "${training_pids[@]}"; do wait "$pid"; done
  training_pids=()
}

part_dqn() {
  banner "dqn part: probe"
  use_deps 0
  probe dqn || return $?
  ensure_cli || return $?
  banner "DQN: the shipped configs on $dev over seeds (in parallel), CartPole seed 1 also on cpu"
  dqn_dir="$build_dir/dqn"
  [ "$dry" -eq 1 ] || mkdir -p "$dqn_dir"
  local t0=$SECONDS
  local cartpole_seeds=(1 2 3 4 5 6 7 8) acrobot_seeds=(1 2 3 4 5 6 7 8) mountain_seeds=(1 2 3 4)
  if [ "$rehearse" -eq 1 ]; then cartpole_seeds=(1 2); acrobot_seeds=(1 2); mountain_seeds=(1); fi
  train_seeds cartpole "$dev" "${cartpole_seeds[@]}"
  wait_trainings
  # Issue 23's speed goals, in lockstep (one batched network, every op one launch for all): 1,024
  # CartPole seeds (at most 10 s, 95% solved), timed with nothing else on the GPU or the cores,
  # then 64 Acrobot seeds beside Acrobot's solo runs (the rehearsal: 2 each); seeds 1-8 of each
  # against their solo runs' model bytes.
  # (Cut off at 60 s, six times its goal, the Acrobot batch at $train_limit s as every run.)
  train_batch cartpole "$dev" "1-$([ "$rehearse" -eq 1 ] && echo 2 || echo 1024)" 60
  wait_trainings
  train_seeds acrobot "$dev" "${acrobot_seeds[@]}"
  train_seeds mountain_car "$dev" "${mountain_seeds[@]}"
  train_batch acrobot "$dev" "1-$([ "$rehearse" -eq 1 ] && echo 2 || echo 64)" "$train_limit"
  [ "$rehearse" -eq 1 ] || train_seeds cartpole cpu 1
  wait_trainings
  # PQN (docs/pqn.md): its CartPole config over the same seeds, and MinAtar Breakout's (5M steps
  # in one CUDA graph per iteration; the goal is the reference DQN's score, 10, in under 60 s).
  train_seeds cartpole_pqn "$dev" "${cartpole_seeds[@]}"
  if [ "$rehearse" -eq 0 ] && [ -f "$build_dir/lib/cugym/plugins/libcugym_minatar.so" ]; then
    train_seeds minatar_breakout_pqn "$dev" 1
  fi
  wait_trainings
  local dqn_s=$((SECONDS - t0))
  [ "$dry" -eq 0 ] || return 0
  [ -z "${OUT:-}" ] || tar -czf "$OUT/dqn-runs.tgz" -C "$build_dir" --exclude='*.safetensors' dqn 2>/dev/null || true
  banner "summary: dqn part (paste into docs/benchmarks.md)"
  echo "dqn part: ${dqn_s} s (each run cut off at ${train_limit} s)"
  # Bars (the CPU success rates of these configs are in docs/benchmarks.md): CartPole-v1 and
  # Acrobot-v1 at least 6 of 8 seeds at their thresholds (31 and 32 of 32 seeds on a 2-core CPU:
  # a working GPU path, whose sums round differently and so act like other seeds, misses this
  # bar with probability well under 1%; a broken one reaches none); MountainCar-v0 and the CPU
  # run are reported, not judged (a run of theirs cut off at the time limit is not a failure).
  local need_cartpole=6 need_acrobot=6
  [ "$rehearse" -eq 0 ] || { need_cartpole=1; need_acrobot=1; }
  local bars=(--bar "cartpole-$dev:475:$need_cartpole" --bar "acrobot-$dev:-100:$need_acrobot"
              --bar "mountain_car-$dev:-110:0" --bar "cartpole_pqn-$dev:475:$need_cartpole")
  # (Breakout's run is started only where the plugin was built, and never in a rehearsal.)
  [ ! -f "$dqn_dir/minatar_breakout_pqn-$dev-1.log" ] || bars+=(--bar "minatar_breakout_pqn-$dev:10:0")
  [ "$rehearse" -eq 1 ] || bars+=(--bar "cartpole-cpu:475:0")
  $report dqn --dqn-dir "$dqn_dir" --limit "$train_limit" "${bars[@]}" --batch "cartpole-$dev-batch:cartpole-$dev:lockstep:10" \
    --batch "acrobot-$dev-batch:acrobot-$dev:lockstep"
}

# ---- python: the package with CUDA, and its tests ----------------------------------------------------
part_python() {
  banner "python part: probe"
  use_deps 0
  local dir="$root/build-gpu-python" site="$root/build-gpu-python/site"
  if compgen -G "$deps_dir/whl/*.whl" >/dev/null; then
    run python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
      "$deps_dir"/whl/*.whl || { echo "gpu-check: installing deps/whl failed"; return 4; }
  fi
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  probe python || return $?
  # --config-settings, not -C: pip before 23.1 (Debian bookworm's) has only the long form.
  banner "pip install . (CUDA for sm_${CUGYM_GPU_ARCH:-90}, into $site)"
  local cuda=ON t0=$SECONDS defines=() a
  [ "$rehearse" -eq 0 ] || cuda=OFF
  for a in "${dep_cmake_args[@]}"; do
    case "$a" in -DCUGYM_CBLAS*|-DCUGYM_OPENBLAS*) defines+=("--config-settings=cmake.define.${a#-D}") ;; esac
  done
  if ! CUGYM_CUDA=$cuda CMAKE_BUILD_PARALLEL_LEVEL="$cores" run python3 -m pip install -q --no-build-isolation \
      --no-deps --no-index --upgrade --target "$site" "--config-settings=build-dir=$dir/build" \
      "--config-settings=cmake.define.CMAKE_CUDA_ARCHITECTURES=${CUGYM_GPU_ARCH:-90}" "${defines[@]}" "$root"; then
    echo "gpu-check: BUILD FAILED (pip install .)"
    return 1
  fi
  local build_s=$((SECONDS - t0))
  banner "pytest python/tests"
  local log="$results/pytest-gpu.log" rc=0 env_args=(CUGYM_REQUIRE_GPU=1)
  [ "$rehearse" -eq 0 ] || env_args=(CUGYM_CUDA_TESTS_ON_CPU=1)
  t0=$SECONDS
  local cmd=(env "${env_args[@]}" python3 -m pytest -q -rs -p no:cacheprovider "$root/python/tests")
  echo "+ (cd $dir && ${cmd[*]})"
  [ "$dry" -eq 0 ] || return 0
  (cd "$dir" && "${cmd[@]}") 2>&1 | tee "$log" || rc=$?
  banner "summary: python part (paste into docs/benchmarks.md)"
  echo "python part: pip build ${build_s} s, pytest $((SECONDS - t0)) s: $(grep -E '[0-9]+ (passed|failed)' "$log" | tail -n 1)"
  if [ "$rc" -ne 0 ]; then
    echo "gpu-check: PYTHON TESTS FAILED (pytest exit $rc)"
    return 2
  fi
  echo "python part: pass"
}

main() {
  local status=0 part part_status
  [ "$dry" -eq 1 ] || mkdir -p "$results"
  for part in "${parts[@]}"; do
    part_status=0
    "part_$part" || part_status=$?
    echo "gpu-check: part $part exit $part_status"
    [ "$status" -ne 0 ] || status=$part_status
    # Without a build or a prerequisite the later parts cannot run; a failed test or bar still
    # lets them measure.
    case "$part_status" in 1|4) [ "$part" = deps ] || break ;; esac
  done
  [ "$dry" -eq 0 ] || echo "gpu-check: dry run of '${parts[*]}' (nothing was built or run)"
  return "$status"
}

name="$(IFS=-; echo "${parts[*]}")"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  main 2>&1 | tee "$OUT/gpu-check-$name.log"
  status=${PIPESTATUS[0]}
else
  main
  status=$?
fi
echo "gpu-check: exit $status"
[ -z "${OUT:-}" ] || echo "gpu-check: exit $status" >>"$OUT/gpu-check-$name.log"
exit "$status"
