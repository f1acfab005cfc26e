#!/usr/bin/env bash
# GPU check for a machine with an NVIDIA GPU and nothing else: no network, no installs, and no
# GoogleTest, OpenBLAS or Box2D needed from its image (they come carried in deps/). One device call
# on the lent machine (an H100 by default, sometimes an H200; 16 cores), which the script ends by
# its deadline, 540 s, holds what must be known; a second, only if more than 4 minutes of the
# session's device time remain, measures the rest:
#   here:    bash scripts/gpu-check.sh deps     (once; carry `deps` in each call)
#   call 1:  bash scripts/gpu-check.sh first    = build dqn speed python        (timeout_s 560)
#   call 2:  CUGYM_GPU_CHECK_DEADLINE=S bash scripts/gpu-check.sh second
#                                               = racecheck speed-more dqn-more (optional; timeout_s
#                                                 the time left less a minute, S that less 20)
# Parts (any of them, in the order given, on one command line; `all` is first and second):
#   deps       on the development machine (Debian's packages, PyPI): fetches into deps/ what the GPU
#              image may lack: GoogleTest's source, OpenBLAS and its Fortran runtime, Box2D (.debs,
#              unpacked there into build-gpu-deps/, never over /), gymnasium's wheels
#   build      probe (the card's copy bandwidth measured), CUDA build for sm_90 into build-gpu (Box2D
#              from deps/, no SDL2; the Python extension too where python3 can build it), ctest -j
#              with CUGYM_REQUIRE_GPU=1 (a CUDA case that skips is a failure; each test cut off at
#              150 s), then the slow tests among the CUDA cases by name (below), then
#              compute-sanitizer memcheck over CUDA cases of envs, nn, the agents and PPO and SAC;
#              --slow runs every slow test instead
#   dqn        DQN's CartPole config on cuda over 8 seeds, with seed 1 of PPO's CartPole and SAC's
#              Pendulum configs solo (each sized by total_steps to about 20 s); then, each alone on
#              the GPU, lockstep batches of 1,024 DQN CartPole seeds, 64 PPO and 64 SAC seeds, judged
#              (builds cugym where needed)
#   speed      env steps/s of CartPole at 1M and 16M envs and MinAtar Breakout at 1M, beside the
#              card's bandwidth bound; nn updates/s at K = 1 and 1,024 and PQN's MinAtar network with
#              its LayerNorms (builds cugym where needed)
#   python     the package from build-gpu's extension (else built by pip with CUDA, no build
#              isolation, no index), then python/tests with CUGYM_REQUIRE_GPU=1; last in call 1, so
#              that a probe's miss (Python.h) costs nothing that matters more
#   racecheck  compute-sanitizer racecheck over the same cases (needs the build part's tests)
#   speed-more every other env's speed, nn updates/s on both devices
#   dqn-more   Acrobot (8 seeds, and 64 in lockstep), MountainCar (4), a CartPole run on the CPU,
#              PQN's CartPole (8) and MinAtar Breakout (1) configs on cuda, PPO's CartPole config
#              over 1,024 seeds in lockstep (goal 30 s) and SAC's Pendulum over 1,024 (its time
#              reported), judged
# The CUDA cases by name (ctest's -R and the sanitizers' --gtest_filter; a pattern that matches no
# test yet is reported, not failed): PpoCuda*, SacCuda*, *Replicas* CUDA cases, *CudaAgreement*,
# AgentOpsAgreement* (docs/gpu-check.md lists the filters).
# Options: --dry-run  print the probe and every command the parts would run, run none of them
#          --rehearse no GPU needed: cpu wherever cuda, 1/64 of the env counts, fewer seeds and steps;
#                     checks the script itself (its parsing and judging) on a machine without a GPU
# Time: the call ends by its deadline (CUGYM_GPU_CHECK_DEADLINE s from its start; default 540, none
# with --rehearse, 0 none). Each part has a cut-off of its own (build 330 s, dqn 200, speed 75,
# python 90, racecheck 90, speed-more 90, dqn-more 240; none with --rehearse) and ends by the
# smaller of it and the deadline less a reserve for the reports (20 s, or a fifth of a shorter
# deadline); each long step is cut off at the smaller of its own limit and the part's end. A part
# with less than its minimum left (build 150 s, dqn 60, speed 30, python 40, racecheck 45,
# speed-more 30, dqn-more 90, or a fifth of a shorter deadline) is skipped with one line saying so.
# Each part prints its verdict and a summary block for docs/benchmarks.md as it finishes, every
# figure labelled with the card; with $OUT set, the log and the raw results are written there as
# they come, so a call cut off keeps them (call 1 writes 7 files; a device call brings back at
# most 8). The log's "part P exit S (T s)" lines give each part's seconds (and, without $OUT,
# build-gpu/results/parts.txt).
# Env: CUGYM_GPU_ARCH (default 90), CUGYM_GPU_CHECK_RESULTS (results without $OUT; default
# build-gpu/results), CUGYM_GPU_CHECK_DEADLINE (above), CUGYM_GPU_CHECK_FAKE_SLOW=PART:SECONDS[,...]
# (for tests of the deadline: PART first sleeps SECONDS under its limits, --dry-run included).
# Exit status: 0 passed; 1 build failed; 2 a test failed; 3 a benchmark or training missed its bar
# (or crashed, or fell back from the CUDA graph); 4 no GPU or a missing prerequisite (the probe
# names each); 5 a part cut off or skipped for time (where it found nothing worse); 64 usage. A
# part that fails does not stop the call: the next part runs, and the call's status is the worst
# of its parts', in the order 1, 2, 3, 4, 5.
#
# Budget on the lent machine, H100 or H200 alike (docs/gpu-check.md gives the basis: the
# rehearsal's CPU seconds over 16 cores, its longest single steps, and the cut-offs where only a
# GPU runs). Call 1: deps unpacked, GoogleTest built, the probe and the card 20 s; CUDA build
# 2-2.5 min (the MinAtar plugin's CUDA unit is the long pole); ctest 1.5 min; memcheck 1 min at
# most: the build part 5 min (cut off at 5.5); dqn 1.7-2 min (DQN's seeds with PPO's and SAC's
# solo runs 40 s, the DQN batch 15 s, PPO's and SAC's 20 s each; cut off at 3.3); speed 35 s;
# python 45 s: about 8.2 minutes, never more than the deadline's 9. The session's 15 minutes: the
# machine's start 2-3 min, call 1 8.2-9, its output back and the give-back 0.5: 10.7-12.5 min,
# which leaves 2.5-4.3, too little for call 2 (racecheck 1-1.5 min, speed-more 1, dqn-more
# 3.5-4: 5.5-6.5 min) to finish: its deadline skips the rest, so name its parts by their worth.
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
    deps|build|python|dqn|speed|racecheck|speed-more|dqn-more) parts+=("$arg") ;;
    first) parts+=(build dqn speed python) ;;
    second) parts+=(racecheck speed-more dqn-more) ;;
    all) parts+=(build dqn speed python racecheck speed-more dqn-more) ;;
    --slow) slow=1 ;;
    --dry-run) dry=1 ;;
    --rehearse) rehearse=1 ;;
    # The whole comment block at the top, however long it grows.
    -h|--help) awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument '$arg' (try --help)" >&2; exit 64 ;;
  esac
done
if [ "${#parts[@]}" -eq 0 ]; then
  echo "gpu-check: say which parts: deps, first, second, all or single parts (try --help)" >&2
  exit 64
fi
deadline="${CUGYM_GPU_CHECK_DEADLINE:-}"
if [ -z "$deadline" ]; then
  deadline=540
  [ "$rehearse" -eq 0 ] || deadline=0  # 2 shared cores build for a quarter of an hour: no GPU machine's times
elif ! [[ "$deadline" =~ ^[0-9]+$ ]]; then
  echo "gpu-check: CUGYM_GPU_CHECK_DEADLINE must be whole seconds (0: none), not '$deadline'" >&2
  exit 64
fi
fake_slow="${CUGYM_GPU_CHECK_FAKE_SLOW:-}"
if [ -n "$fake_slow" ] && ! [[ "$fake_slow" =~ ^[a-z-]+:[0-9]+(,[a-z-]+:[0-9]+)*$ ]]; then
  echo "gpu-check: CUGYM_GPU_CHECK_FAKE_SLOW must be PART:SECONDS[,PART:SECONDS...], not '$fake_slow'" >&2
  exit 64
fi

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

build_dir=build-gpu
cli="$build_dir/cli/cugym"
cores="$(nproc)"
dev=cuda
[ "$rehearse" -eq 0 ] || dev=cpu
# Where results go: $OUT on the device machine (they come back even from a call cut off);
# CUGYM_GPU_CHECK_RESULTS elsewhere (tests/cli/test_gpu_check.sh: not the tree's build-gpu/).
results="${OUT:-${CUGYM_GPU_CHECK_RESULTS:-$root/$build_dir/results}}"
export CUGYM_JOBS="$cores" CUGYM_REHEARSE="$rehearse"
banner() { printf '\n===== %s =====\n' "$*"; }

# run CMD...: print the command; run it unless --dry-run.
run() {
  echo "+ $*"
  [ "$dry" -eq 1 ] || "$@"
}

# ---- time: the call's deadline, each part's end, each step's cut-off ---------------------------
# The call ends by $call_end (the deadline; none when 0). A part runs until $part_end: the smaller of
# its own cut-off and the deadline less $reserve, the seconds kept for the reports (and the last
# part's summary). Every long step runs under `limited`, so that none outlives its part.
call_start=$SECONDS
call_end=0
reserve=0
if [ "$deadline" -gt 0 ]; then
  call_end=$((call_start + deadline))
  reserve=$((deadline / 5 < 20 ? deadline / 5 : 20))
fi
part_end=""  # $SECONDS at which the running part's steps stop; empty: no limit
part_cut=0   # 1 once a step of the running part was cut off (or not run) at the part's end
part_end_by=""

# part_budget PART: "CUT MIN": the part's own cut-off on the GPU machine and the least time it
# starts with, in seconds (docs/gpu-check.md: the estimates they are made of).
part_budget() {
  case "$1" in
    build) echo "330 150" ;;
    dqn) echo "200 60" ;;
    speed) echo "75 30" ;;
    python) echo "90 40" ;;
    racecheck) echo "90 45" ;;
    speed-more) echo "90 30" ;;
    dqn-more) echo "240 90" ;;
    *) echo "0 0" ;;
  esac
}

# start_part PART: sets $part_end, or says in one line why the part is skipped (status 5).
start_part() {
  local cut need left
  read -r cut need <<<"$(part_budget "$1")"
  [ "$rehearse" -eq 0 ] || cut=0  # the CPU's times are not the GPU machine's
  part_end=""
  part_cut=0
  part_end_by="its own cut-off, $cut s"
  [ "$cut" -eq 0 ] || part_end=$((SECONDS + cut))
  [ "$call_end" -gt 0 ] || return 0
  left=$((call_end - reserve - SECONDS))
  [ "$need" -le $((deadline / 5)) ] || need=$((deadline / 5))
  if [ "$left" -lt "$need" ] || [ "$left" -le 0 ]; then
    echo "gpu-check: part $1 skipped: $((left > 0 ? left : 0)) s left before the deadline (${deadline} s, less ${reserve} s for the reports), it needs ${need} s"
    return 5
  fi
  if [ -z "$part_end" ] || [ "$part_end" -gt $((call_end - reserve)) ]; then
    part_end=$((call_end - reserve))
    part_end_by="the deadline less its reserve"
  fi
  local own="its own cut-off $cut s"
  [ "$cut" -gt 0 ] || own="no cut-off of its own"
  echo "gpu-check: part $1: up to $((part_end - SECONDS)) s ($own; $((call_end - SECONDS)) s to the deadline)"
}

# step_limit OWN: the seconds a step may run: OWN (0: none of its own), or the time to the part's
# end where that comes first (0 when none is left); nothing when neither limits it.
step_limit() {
  local own=$1 left
  if [ -z "$part_end" ]; then
    [ "$own" -eq 0 ] || echo "$own"
    return 0
  fi
  left=$((part_end - SECONDS))
  [ "$left" -gt 0 ] || left=0
  if [ "$own" -gt 0 ] && [ "$own" -lt "$left" ]; then echo "$own"; else echo "$left"; fi
}

# time_up: true (and the part marked cut) once the running part's end has come.
time_up() {
  [ -n "$part_end" ] && [ "$SECONDS" -ge "$part_end" ] || return 1
  part_cut=1
}

# limited OWN CMD...: CMD under `timeout` at step_limit OWN (SIGKILL 5 s after SIGTERM); not run,
# status 124, where the part has no time left. CMD is a program, not a function.
limited() {
  local lim
  lim="$(step_limit "$1")"
  shift
  if [ -z "$lim" ]; then
    "$@"
    return
  fi
  if [ "$lim" -le 0 ]; then
    echo "gpu-check: not run (the part's time is up): ${*:1:4} ..." >&2
    return 124
  fi
  timeout -k 5 "$lim" "$@"
}

# run_limited OWN CMD...: run's printing and --dry-run, limited's cut-off.
run_limited() {
  local own=$1
  shift
  echo "+ $*"
  [ "$dry" -eq 1 ] || limited "$own" "$@"
}

# report ARGS...: gpu_check_report.py, cut off at the deadline (its reserve is for this); 5 where
# the deadline left it no time.
report() {
  local lim=60 rc=0
  if [ "$call_end" -gt 0 ]; then
    lim=$((call_end - 1 - SECONDS))
    [ "$lim" -le 60 ] || lim=60
    if [ "$lim" -le 0 ]; then echo "gpu-check: report $1 not run: the deadline has come"; return 5; fi
  fi
  timeout -k 1 "$lim" python3 scripts/gpu_check_report.py "$@" || rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "gpu-check: report $1 cut off at ${lim} s"; return 5; fi
  return "$rc"
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
      if ! { run_limited 0 cmake -S "$deps_root/usr/src/googletest" -B "$root/build-gpu-deps/gtest-build" "${gen[@]}" \
               -DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=OFF "-DCMAKE_INSTALL_PREFIX=$gtest_prefix" >/dev/null &&
             run_limited 0 cmake --build "$root/build-gpu-deps/gtest-build" -j "$cores" >/dev/null &&
             run_limited 0 cmake --install "$root/build-gpu-deps/gtest-build" >/dev/null; }; then
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
  gpu="$(timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
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
    if [ "$dry" -eq 1 ]; then echo "probe: missing (ignored for --dry-run): ${list%; }"; measure_card; return 0; fi
    echo "gpu-check: missing: ${list%; }"
    [ "$gpu" != "none" ] || echo "gpu-check: no GPU here; nothing to check (--dry-run shows the plan, --rehearse runs it on the CPU)"
    return 4
  fi
  measure_card
}

# measure_card: once a call, the card's name and copy bandwidth (measured with CuPy or PyTorch,
# else looked up by its name) into $card_file, whose name labels every figure the reports print.
card_file="$root/$build_dir/card.json"
card_name="unknown card"
card_done=0
measure_card() {
  [ "$card_done" -eq 0 ] || return 0
  card_done=1
  local args=(card --out "$card_file") shown=""
  [ "$rehearse" -eq 0 ] || { args+=(--name "no GPU (--rehearse)" --no-measure); shown=" --name 'no GPU (--rehearse)' --no-measure"; }
  echo "+ python3 scripts/gpu_check_report.py card --out ${card_file#"$root"/}$shown"
  [ "$dry" -eq 0 ] || return 0
  mkdir -p "$(dirname "$card_file")" && rm -f "$card_file"
  limited 60 python3 scripts/gpu_check_report.py "${args[@]}" ||
    echo "gpu-check: the card's probe failed (the figures say 'unknown card', the bounds none)"
  time_up || true
  card_name="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["name"])' "$card_file" 2>/dev/null ||
               echo "unknown card")"
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

# python_extension_args: the CMake arguments that build the Python extension in build-gpu beside
# everything else, where python3 can (numpy, nanobind, Python's headers), so that the python part
# compiles no CUDA again; nothing otherwise (the python part then builds it with pip).
python_extension_args() {
  local nanobind
  python3 -c 'import numpy' 2>/dev/null || return 0
  nanobind="$(python3 -m nanobind --cmake_dir 2>/dev/null)" || return 0
  python3 -c 'import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' \
    2>/dev/null || return 0
  echo "-DCUGYM_PYTHON=ON -DPython_EXECUTABLE=$(command -v python3) -Dnanobind_DIR=$nanobind"
}

# part_seconds PART SECONDS STATUS: one line in parts.txt of the results folder as each part ends
# (the times docs/gpu-check.md's budget is made of); not with $OUT, whose files back are counted
# (the log's "part P exit S (T s)" lines give the same there).
part_seconds() {
  [ "$dry" -eq 0 ] && [ -z "${OUT:-}" ] || return 0
  echo "$1 $2 s, exit $3" >>"$results/parts.txt"
}

# ---- build: build, ctest, compute-sanitizer memcheck ------------------------------------------------
# The CUDA cases by name: the cases of PPO and SAC on CUDA (PpoCuda*, SacCuda*: gtest's names, as
# gtest_discover_tests gives them to ctest), the replicated networks' CUDA cases (*Replicas*, the
# CUDA parameter or a Cuda in the name), the CUDA-against-CPU agreements (*CudaAgreement*) and the
# agent ops' (AgentOpsAgreement*). ctest runs them all without a filter (-LE slow); this regex adds
# those among them labelled slow, and the report counts each pattern's tests (none: reported).
cuda_case_regexes=('PpoCuda' 'SacCuda' 'Replicas.*(/cuda|Cuda)' 'CudaAgreement' 'AgentOpsAgreement')
python_in_build=0  # the build part configured build-gpu with the Python extension
built_here=0       # the build part built everything in this call
part_build() {
  banner "build part: probe"
  use_deps 1
  probe build || return $?
  banner "build ($build_dir, ${cores} jobs)"
  local t0=$SECONDS args python_args
  read -ra args <<<"$(configure_args)"
  read -ra python_args <<<"$(python_extension_args)"
  [ "${#python_args[@]}" -eq 0 ] || python_in_build=1
  if ! run_limited 0 bash scripts/build.sh "$build_dir" "${args[@]}" -DCUGYM_BUILD_TESTS=ON "${python_args[@]}" \
       "${dep_cmake_args[@]}"; then
    if time_up; then echo "gpu-check: the build was cut off at the part's end"; return 5; fi
    # A configure that failed (no build.ninja written) with the Python extension gets one more try
    # without it, so that the image's Python cannot cost the whole call; pip builds it later.
    if [ "${#python_args[@]}" -eq 0 ] || [ -f "$build_dir/build.ninja" ] || [ -f "$build_dir/Makefile" ]; then
      echo "gpu-check: BUILD FAILED"
      return 1
    fi
    echo "gpu-check: configuring with the Python extension failed; building without it (pip builds it later)"
    python_in_build=0
    rm -rf "${build_dir:?}/CMakeCache.txt" "${build_dir:?}/CMakeFiles"
    if ! run_limited 0 bash scripts/build.sh "$build_dir" "${args[@]}" -DCUGYM_BUILD_TESTS=ON "${dep_cmake_args[@]}"; then
      if time_up; then echo "gpu-check: the build was cut off at the part's end"; return 5; fi
      echo "gpu-check: BUILD FAILED"
      return 1
    fi
  fi
  built_here=1
  local build_s=$((SECONDS - t0))

  # Each test cut off at 150 s: the slowest CUDA cases take well under a minute, and one that hangs
  # must not eat the call; ctest as a whole at the part's end.
  banner "ctest (-j $cores, CUGYM_REQUIRE_GPU=1, each test cut off at 150 s)"
  local ctest_args=(--test-dir "$build_dir" --output-on-failure -j "$cores" --timeout 150)
  [ "$slow" -eq 1 ] || ctest_args+=(-LE slow)
  local require=1
  [ "$rehearse" -eq 0 ] || require=0  # no GPU to require
  local log="$results/ctest-gpu.log" rc=0 regex
  regex="$(IFS='|'; echo "${cuda_case_regexes[*]}")"
  t0=$SECONDS
  echo "+ CUGYM_REQUIRE_GPU=$require ctest ${ctest_args[*]}"
  if [ "$dry" -eq 0 ]; then
    limited 0 env CUGYM_REQUIRE_GPU="$require" ctest "${ctest_args[@]}" 2>&1 | tee "$log" || rc=$?
    time_up || true
  fi
  # The slow tests among the CUDA cases (none matched: ctest says so, and that is no failure; CMake
  # before 3.17 has no --no-tests and never fails on none).
  if [ "$slow" -eq 0 ]; then
    local slow_args=(--test-dir "$build_dir" --output-on-failure -j "$cores" --timeout 150 -L slow -R "$regex")
    ! ctest --help 2>/dev/null | grep -c -- '--no-tests' >/dev/null || slow_args+=(--no-tests=ignore)
    echo "+ CUGYM_REQUIRE_GPU=$require ctest ${slow_args[*]}"
    if [ "$dry" -eq 0 ]; then
      limited 0 env CUGYM_REQUIRE_GPU="$require" ctest "${slow_args[@]}" 2>&1 | tee -a "$log" || rc=$((rc ? rc : $?))
      time_up || true
    fi
  fi
  local ctest_s=$((SECONDS - t0))

  banner "compute-sanitizer memcheck over CUDA cases of envs, nn, the agents, PPO and SAC"
  local sanitizer_log="$results/sanitizer-memcheck.log" sanitizer_rc=0
  t0=$SECONDS
  sanitize "$sanitizer_log" memcheck
  local sanitizer_s=$((SECONDS - t0))
  [ "$dry" -eq 0 ] || return 0
  banner "summary: build part (paste into docs/benchmarks.md)"
  local cases=() r
  for r in "${cuda_case_regexes[@]}"; do cases+=(--case "$r"); done
  report ctest "$log" --build-seconds "$build_s" --ctest-seconds "$ctest_s" "${cases[@]}" --card "$card_file"
  report sanitizer "$sanitizer_log" --seconds "$sanitizer_s" --limit "$sanitizer_used_limit" || sanitizer_rc=$?
  if [ "$rc" -eq 124 ] && [ "$part_cut" -eq 1 ]; then
    echo "gpu-check: ctest cut off at the part's end (the tests it finished are above)"
  elif [ "$rc" -ne 0 ]; then
    echo "gpu-check: TESTS FAILED (ctest exit $rc)"
    return 2
  fi
  if [ "$sanitizer_rc" -ne 0 ]; then
    echo "gpu-check: COMPUTE-SANITIZER FOUND ERRORS (see sanitizer-memcheck.log)"
    return 2
  fi
  [ "$part_cut" -eq 0 ] || return 5
  echo "build part: pass"
}

# ---- racecheck: the same cases under compute-sanitizer racecheck (call 2) ----------------------------
part_racecheck() {
  banner "racecheck part: compute-sanitizer racecheck over CUDA cases of envs, nn and agents"
  local spec name bin filter
  for spec in "${sanitizer_cases[@]}"; do
    read -r name bin filter <<<"$spec"
    if [ "$dry" -eq 0 ] && [ "$rehearse" -eq 0 ] && [ ! -x "$build_dir/$bin" ]; then
      echo "racecheck: not run: no $build_dir/$bin (a fresh machine: the build part runs first)"
      return 0
    fi
  done
  local log="$results/sanitizer-racecheck.log" t0=$SECONDS rc=0
  sanitize "$log" racecheck
  [ "$dry" -eq 0 ] || return 0
  banner "summary: racecheck part"
  report sanitizer "$log" --seconds "$((SECONDS - t0))" --limit "$sanitizer_used_limit" || rc=$?
  [ "$rc" -eq 0 ] || { echo "gpu-check: COMPUTE-SANITIZER FOUND HAZARDS (see sanitizer-racecheck.log)"; return 2; }
  [ "$part_cut" -eq 0 ] || return 5
  echo "racecheck part: pass"
}

# sanitize LOG TOOL: the tool over a few CUDA cases of each CUDA file, all at once, each cut off at
# $sanitizer_limit s (or the part's end); every run's tail and exit status go into LOG for the
# report, which fails a run whose tool found an error or whose cases failed under it, and only
# reports an unusable sanitizer (gVisor's "Device not supported", none next to nvcc, --rehearse), a
# run cut off, or a filter that matched no case yet (PpoCuda*, SacCuda*: the cases to come).
sanitizer_limit=60
sanitizer_used_limit=$sanitizer_limit
sanitizer_cases=(
  "envs tests/cugym_tests *CudaAgreement*:*Conformance.ASnapshotContinuesExactly/*cuda*"
  "nn tests/nn/cugym_nn_tests *CudaAgreement*:*LayerNormTest.*cuda*"
  "nn-replicas tests/nn/cugym_nn_tests *Replicas*cuda*:*Replicas*Cuda*"
  "agents tests/cugym_agent_tests AgentOpsAgreement*:DqnCuda.GraphReplayGivesTheEagerWeights:*CudaAgreement*:*Replicas*cuda*:*Replicas*Cuda*"
  "ppo-sac tests/cugym_agent_tests PpoCuda*:SacCuda*:PpoDevices/*cuda:SacDevices/*cuda"
)
sanitize() {
  local log="$1" tool="$2" sanitizer can=1
  sanitizer="$(command -v compute-sanitizer || true)"
  [ -n "$sanitizer" ] || sanitizer="$(dirname "$(command -v nvcc 2>/dev/null || echo /x/nvcc)")/compute-sanitizer"
  [ "$dry" -eq 1 ] || : >"$log"
  sanitizer_used_limit="$(step_limit "$sanitizer_limit")"
  local why=""
  if [ "$rehearse" -eq 1 ]; then
    why="--rehearse: no GPU"
  elif [ ! -x "$sanitizer" ]; then
    why="no compute-sanitizer next to nvcc"
  elif [ "$sanitizer_used_limit" -le 0 ]; then
    why="the part's time is up"
    part_cut=1
  fi
  if [ -n "$why" ]; then
    can=0
    echo "sanitizer: not run ($why); the runs would be:"
    [ "$dry" -eq 1 ] || echo "sanitizer: not run ($why)" >>"$log"
  fi
  local pids=() logs=() spec name bin filter
  for spec in "${sanitizer_cases[@]}"; do
    read -r name bin filter <<<"$spec"
    local run_log="$root/$build_dir/sanitizer-$tool-$name.log"
    echo "+ timeout $sanitizer_limit compute-sanitizer --tool $tool --error-exitcode 99 $build_dir/$bin --gtest_filter='$filter'"
    [ "$dry" -eq 0 ] && [ "$can" -eq 1 ] || continue
    (CUGYM_REQUIRE_GPU=1 timeout -k 5 "$sanitizer_used_limit" "$sanitizer" --tool "$tool" --error-exitcode 99 \
       --print-limit 20 "$build_dir/$bin" "--gtest_filter=$filter" >"$run_log" 2>&1
     echo "sanitizer exit $?" >>"$run_log") &
    pids+=($!)
    logs+=("$run_log")
  done
  local i
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"
    { echo "=== $(basename "${logs[$i]}" .log)"; tail -n 40 "${logs[$i]}"; } >>"$log"
  done
  time_up || true
}

# ---- speed: env steps and nn updates ---------------------------------------------------------------
# ensure_cli: builds cugym and the nn bench where no build part ran on this machine (a fresh one),
# once a call: where that failed, the later parts say so at once instead of building again.
cli_failed=0
ensure_cli() {
  [ "$built_here" -eq 0 ] || return 0
  if [ "$cli_failed" -eq 1 ]; then echo "gpu-check: not run: cugym did not build earlier in this call"; return 1; fi
  if [ -x "$cli" ] && [ -x "$build_dir/bench/cugym_bench_nn" ]; then return 0; fi
  banner "build (cugym and the nn bench only: no build part built them on this machine)"
  local args gen=()
  read -ra args <<<"$(configure_args)"
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)  # as scripts/build.sh: the image may lack make
  # Without the tests (GoogleTest is built from deps/ by the build part only, which, run later on
  # this folder, configures them back on), with the benchmark programs.
  if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    if ! run_limited 0 cmake -S . -B "$build_dir" "${gen[@]}" "${args[@]}" -DCUGYM_BUILD_TESTS=OFF \
         -DCUGYM_BUILD_BENCH=ON "${dep_cmake_args[@]}" >/dev/null; then
      time_up && { echo "gpu-check: configuring was cut off at the part's end"; return 5; }
      cli_failed=1
      echo "gpu-check: BUILD FAILED"
      return 1
    fi
  fi
  if ! run_limited 0 cmake --build "$build_dir" -j "$cores" --target cugym cugym_bench_nn cugym_minatar; then
    time_up && { echo "gpu-check: building cugym was cut off at the part's end"; return 5; }
    cli_failed=1
    echo "gpu-check: BUILD FAILED"
    return 1
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
  out="$(limited 120 "${cmd[@]}" 2>&1)" || rc=$?
  time_up || true
  if [ "$rc" -ne 0 ] || ! grep -q '^{' <<<"$out"; then
    echo "  FAILED (exit $rc): $(tail -n 1 <<<"$out")"
    echo "{\"env\": \"$1\", \"device\": \"$2\", \"num_envs\": $n, \"mode\": \"$5\", \"failed\": \"exit $rc\"}" >>"$jsonl"
    return 0
  fi
  grep '^{' <<<"$out" | tail -n 1 | tee -a "$jsonl"
}

# bench_envs RUN...: each "ENV DEVICE N STEPS MODES" (MODES comma-separated) through bench_env.
bench_envs() {
  local run_spec env device n steps mode m
  for run_spec in "$@"; do
    read -r env device n steps mode <<<"$run_spec"
    for m in ${mode//,/ }; do bench_env "$env" "$device" "$n" "$steps" "$m"; done
  done
}

# bench_nn NAME ARGS...: cugym_bench_nn ARGS --json appended to $nn_jsonl (a failure as a row).
bench_nn() {
  local name="$1"
  shift
  echo "+ $build_dir/bench/cugym_bench_nn $* --json >> $nn_jsonl"
  [ "$dry" -eq 0 ] || return 0
  if ! limited 120 "$build_dir/bench/cugym_bench_nn" "$@" --json >>"$nn_jsonl"; then
    time_up || true
    echo "gpu-check: cugym_bench_nn ($name) FAILED"
    echo "{\"bench\": \"nn_update\", \"failed\": \"cugym_bench_nn ($name) exited non-zero\"}" >>"$nn_jsonl"
  fi
}

have_minatar() { [ -f "$build_dir/lib/cugym/plugins/libcugym_minatar.so" ] || [ "$dry" -eq 1 ]; }

# speed (call 1): the figures the goals are about. CartPole at 1M and 16M envs; MinAtar Breakout at
# 1M (its goal, 1e9 steps/s, is judged in mode fused; step is reported beside it); K CartPole
# networks (DQN's shipped 4-120-84 with a dueling head's 3 outputs, minibatch 64, 8 envs acting) as
# one batched network at K = 1 and 1,024 (issue 23); and PQN's MinAtar network (conv 16 with its
# LayerNorms, minibatch 128: 8,192 rows of 16 channels in the convolution's LayerNorm) training.
# start_speed_part NAME SUFFIX: the probe and the CLI for part NAME, then empty result files
# $results/bench$SUFFIX.jsonl and nn-bench$SUFFIX.jsonl (in $jsonl and $nn_jsonl).
start_speed_part() {
  banner "$1 part: probe"
  use_deps 0
  probe speed || return $?
  ensure_cli || return $?
  banner "env benchmarks (random actions, median of 5 after a warm-up)"
  jsonl="$results/bench$2.jsonl"
  nn_jsonl="$results/nn-bench$2.jsonl"
  [ "$dry" -eq 0 ] || return 0
  : >"$nn_jsonl"
  # The card the figures are of, as the file's first row (the report skips it in the table).
  if [ -s "$card_file" ]; then printf '{"card": %s}\n' "$(cat "$card_file")" >"$jsonl"; else : >"$jsonl"; fi
}

part_speed() {
  start_speed_part speed "" || return $?
  local t0=$SECONDS
  local runs=("CartPole-v1 $dev 1048576 200 step,fused" "CartPole-v1 $dev 16777216 50 fused")
  ! have_minatar || runs+=("MinAtar-Breakout-v1 $dev 1048576 200 fused,step")
  bench_envs "${runs[@]}"
  banner "nn: gradient updates per second"
  bench_nn replicas --device "$dev" --nets 4-120-84-3 --batch 64 --losses mse --parts update,act --act-batches 8 \
    --replicas 1,1024 --seconds 0.2
  bench_nn layer-norm --device "$dev" --nets 10x10x4c16-128-6 --layer-norm off,on --batch 128 --losses mse \
    --parts train --seconds 0.2
  [ "$dry" -eq 0 ] || return 0
  banner "summary: speed part (paste into docs/benchmarks.md)"
  echo "speed part on $card_name: $((SECONDS - t0)) s"
  report speed --env-jsonl "$jsonl" --nn-jsonl "$nn_jsonl" --card "$card_file"
}

# speed-more (call 2): every other env, and nn updates/s of the default nets on both devices.
part_speed_more() {
  start_speed_part speed-more -more || return $?
  local t0=$SECONDS
  local runs=(
    "CartPole-v1 $dev 65536 1000 step,fused" "CartPole-v1 cpu 65536 200 step,fused"
    "MountainCar-v0 $dev 1048576 200 step,fused" "MountainCarContinuous-v0 $dev 1048576 200 step,fused"
    "Acrobot-v1 $dev 1048576 100 step,fused" "Pendulum-v1 $dev 1048576 200 step,fused"
  )
  if have_minatar; then
    runs+=("MinAtar-Asterix-v1 $dev 1048576 100 step" "MinAtar-Freeway-v1 $dev 1048576 100 step"
           "MinAtar-Seaquest-v1 $dev 1048576 100 step" "MinAtar-SpaceInvaders-v1 $dev 1048576 100 step")
  fi
  [ "$box2d_from" = "" ] || runs+=("LunarLander-v3 $dev 4096 50 step")  # host-stepped: pinned copies
  bench_envs "${runs[@]}"
  banner "nn: gradient updates per second"
  bench_nn all --device all --seconds 0.2
  bench_nn replicas-64 --device "$dev" --nets 4-120-84-3 --batch 64 --losses mse --parts update,act --act-batches 8 \
    --replicas 64 --seconds 0.2
  [ "$dry" -eq 0 ] || return 0
  banner "summary: speed-more part (paste into docs/benchmarks.md)"
  echo "speed-more part on $card_name: $((SECONDS - t0)) s"
  report speed --env-jsonl "$jsonl" --nn-jsonl "$nn_jsonl" --card "$card_file"
}

# ---- dqn: the shipped configs over seeds -------------------------------------------------------------
# train_seeds [--as GROUP] [--set K=V]... CONFIG DEVICE SEEDS...: starts one training per seed in the
# background (run folders GROUP-SEED under $dqn_dir, GROUP by default CONFIG-DEVICE, the exit
# status in RUN.rc); wait_trainings waits for all of them. Each is cut off after $train_limit s
# (or at the part's end), so the part stays inside its budget whatever happens.
train_limit=75
training_pids=()
# train_options ARGS...: the leading --as GROUP and --set K=V into $train_group and $train_sets; the
# number of arguments they took in $train_shift.
train_options() {
  train_group=""
  train_sets=()
  train_shift=0
  while [ "$#" -gt 1 ]; do
    case "$1" in
      --as) train_group="$2" ;;
      --set) train_sets+=(--set "$2") ;;
      *) return 0 ;;
    esac
    shift 2
    train_shift=$((train_shift + 2))
  done
}
train_seeds() {
  train_options "$@"
  shift "$train_shift"
  local config="$1" device="$2" seed lim
  shift 2
  local group="${train_group:-$config-$device}"
  for seed in "$@"; do
    local dir="$dqn_dir/$group-$seed"
    local cmd=("$cli" train --config "configs/$config.toml" --device "$device" --seed "$seed" "${train_sets[@]}"
               --out "$dir")
    echo "+ ${cmd[*]} > $dir.log &"
    [ "$dry" -eq 0 ] || continue
    rm -rf "$dir" "$dir.rc"
    lim="$(step_limit "$train_limit")"
    if [ "$lim" -le 0 ]; then part_cut=1; echo "gpu-check: not run (the part's time is up): $group-$seed"; continue; fi
    # One BLAS thread per CPU run: several train at once.
    (OPENBLAS_NUM_THREADS=1 timeout -k 5 "$lim" "${cmd[@]}" >"$dir.log" 2>&1; echo $? >"$dir.rc") &
    training_pids+=($!)
  done
}
# train_batch [--as GROUP] [--set K=V]... CONFIG DEVICE SEEDS LIMIT: the same config's seeds in
# lockstep as one `cugym train --seeds` process (issue 23) into $dqn_dir/GROUP-batch, its exit status
# and wall seconds beside it, cut off after LIMIT seconds (or at the part's end). No periodic
# checkpoints and none with the replay memory (1,024 runs would write gigabytes; the model bits do
# not depend on them), as PureJaxRL's 1,024-seed figure has none; then the --set options given.
train_batch() {
  train_options "$@"
  shift "$train_shift"
  local config="$1" device="$2" seeds="$3" limit="$4" lim
  local group="${train_group:-$config-$device}"
  local dir="$dqn_dir/$group-batch" replay
  read -ra replay <<<"$(replay_sets "$config")"
  local cmd=("$cli" train --config "configs/$config.toml" --device "$device" --seeds "$seeds" --lockstep on
             --set checkpoint_interval=0 "${replay[@]}" "${train_sets[@]}" --out "$dir")
  echo "+ ${cmd[*]} > $dir.log &"
  [ "$dry" -eq 0 ] || return 0
  rm -rf "$dir" "$dir.rc" "$dir.seconds"
  lim="$(step_limit "$limit")"
  if [ "$lim" -le 0 ]; then part_cut=1; echo "gpu-check: not run (the part's time is up): $group-batch"; return 0; fi
  (
    # Wall seconds to a tenth (bash's EPOCHREALTIME: no other tool needed; a locale may write
    # its decimal point as a comma).
    local t0=${EPOCHREALTIME/[.,]/} t1 us
    OPENBLAS_NUM_THREADS=1 timeout -k 5 "$lim" "${cmd[@]}" >"$dir.log" 2>&1
    echo $? >"$dir.rc"
    t1=${EPOCHREALTIME/[.,]/}
    us=$((10#$t1 - 10#$t0))
    printf '%d.%d\n' $((us / 1000000)) $((us % 1000000 / 100000)) >"$dir.seconds"
  ) &
  training_pids+=($!)
}
# replay_sets CONFIG: "--set save_replay=false" where the config's algo has a replay memory (DQN, the
# default, and SAC; PQN and PPO refuse the key).
replay_sets() {
  local algo
  algo="$(sed -n 's/^algo = "\(.*\)"/\1/p' "configs/$1.toml")"
  case "${algo:-dqn}" in dqn|sac) echo "--set save_replay=false" ;; esac
}
wait_trainings() {
  local pid
  for pid in "${training_pids[@]}"; do wait "$pid"; done
  training_pids=()
  time_up || true
}

# dqn_start NAME: probe, cugym built, $dqn_dir made.
dqn_start() {
  banner "$1 part: probe"
  use_deps 0
  probe dqn || return $?
  ensure_cli || return $?
  dqn_dir="$build_dir/dqn"
  [ "$dry" -eq 1 ] || mkdir -p "$dqn_dir"
}

# lanes_pair GROUP CONFIG DEVICE SEED LANES STEPS: seed SEED's lane of the batch GROUP-batch beside
# its solo run GROUP-SEED (the same settings), with cmp. Where the bytes differ (on CUDA the batch's
# layers are cuBLAS's strided-batched GEMMs, a solo run's single GEMMs, and a shrinking batch
# changes their count), the same pair again for STEPS env steps, the config's first learning
# iterations, into GROUP-short-batch and GROUP-short-SEED: the report compares those models within
# rounding (1e-3 normwise relative, tests/agents/solo_claim.h's tolerance), where a lane reading
# another's data would be far off.
lanes_pair() {
  local group="$1" config="$2" device="$3" seed="$4" lanes="$5" steps="$6"
  local lane="$dqn_dir/$group-batch/seed_$seed/model.safetensors" solo="$dqn_dir/$group-$seed/model.safetensors"
  echo "+ cmp $lane $solo"
  if [ "$dry" -eq 1 ]; then
    echo "  (where the bytes differ: the first learning iterations, $steps steps, compared within 1e-3)"
    return 0
  fi
  if cmp -s "$lane" "$solo"; then
    echo "lanes $group: seed $seed: the solo run's model bytes"
    return 0
  fi
  if [ ! -f "$lane" ] || [ ! -f "$solo" ]; then
    echo "lanes $group: seed $seed: a model is missing (the report says why)"
    return 0
  fi
  echo "lanes $group: seed $seed: other model bytes than its solo run; its first learning iterations ($steps" \
       "env steps) as a batch of $lanes and solo, to compare within rounding"
  local replay
  read -ra replay <<<"$(replay_sets "$config")"
  train_seeds --as "$group-short" --set checkpoint_interval=0 "${replay[@]}" --set "total_steps=$steps" \
    "$config" "$device" "$seed"
  train_batch --as "$group-short" --set "total_steps=$steps" "$config" "$device" "1-$lanes" 45
  wait_trainings
}

# dqn (call 1): 8 DQN CartPole seeds on cuda in parallel, and beside them seed 1 of PPO's CartPole
# and SAC's Pendulum configs solo; then, each alone on the GPU so that its wall time (to a tenth of
# a second) is its own: issue 23's lockstep batch of 1,024 CartPole seeds, judged on its goal
# (10 s, 95% solved) and beside seeds 1-8's solo runs (their model bytes: a finding), cut off at
# 45 s, four and a half times its goal; then 64 PPO and 64 SAC seeds in lockstep, each cut off at
# 60 s, judged on a completed run, no fallback from the CUDA graph, finite losses, and seed 1's lane
# against its solo run (lanes_pair). PPO and SAC run for a set number of env steps, sized to about
# 20 s on the GPU (estimated: PPO's shipped 500k steps, about 1,000 iterations of 4 x 128 env steps
# and 16 minibatch updates at 10-15 ms each as one CUDA graph, most lanes stopping earlier at the
# threshold; SAC's 60k, 15,000 iterations of 4 env steps and 4 updates at about 1.3 ms; the report
# prints the steps that 20 s gives at the measured rate, to size them anew).
ppo_steps=500000
sac_steps=60000
part_dqn() {
  dqn_start dqn || return $?
  banner "DQN's CartPole on $dev over 8 seeds with PPO's and SAC's seed 1 solo; then 1,024 DQN, 64 PPO, 64 SAC seeds in lockstep"
  local t0=$SECONDS seeds=(1 2 3 4 5 6 7 8) batch=1024 lanes=64 ppo_n=$ppo_steps sac_n=$sac_steps
  if [ "$rehearse" -eq 1 ]; then seeds=(1 2); batch=2; lanes=2; ppo_n=20480; sac_n=3000; fi
  local ppo="cartpole_ppo_$((ppo_n / 1000))k-$dev" sac="pendulum_sac_$((sac_n / 1000))k-$dev"
  # The solo runs' settings are their batches' (train_batch's --set options).
  train_seeds cartpole "$dev" "${seeds[@]}"
  train_seeds --as "$ppo" --set checkpoint_interval=0 --set "total_steps=$ppo_n" cartpole_ppo "$dev" 1
  train_seeds --as "$sac" --set checkpoint_interval=0 --set save_replay=false --set "total_steps=$sac_n" \
    pendulum_sac "$dev" 1
  wait_trainings
  train_batch cartpole "$dev" "1-$batch" 45
  wait_trainings
  train_batch --as "$ppo" --set "total_steps=$ppo_n" cartpole_ppo "$dev" "1-$lanes" 60
  wait_trainings
  lanes_pair "$ppo" cartpole_ppo "$dev" 1 "$lanes" 1536      # 3 iterations of 4 x 128 env steps
  train_batch --as "$sac" --set "total_steps=$sac_n" pendulum_sac "$dev" "1-$lanes" 60
  wait_trainings
  lanes_pair "$sac" pendulum_sac "$dev" 1 "$lanes" 1012      # learning starts at 1,000: 3 iterations
  local dqn_s=$((SECONDS - t0))
  [ "$dry" -eq 0 ] || return 0
  [ -z "${OUT:-}" ] ||
    limited 30 tar -czf "$OUT/dqn-runs.tgz" -C "$build_dir" --exclude='*.safetensors' dqn 2>/dev/null || true
  banner "summary: dqn part (paste into docs/benchmarks.md)"
  echo "dqn part on $card_name: ${dqn_s} s (each run cut off at ${train_limit} s, the DQN batch at 45 s, PPO's and SAC's at 60 s)"
  # Bar (the CPU's success rate of this config is in docs/benchmarks.md): at least 6 of 8 seeds at
  # the threshold (31 of 32 seeds on a 2-core CPU: a working GPU path, whose sums round
  # differently and so act like other seeds, misses this bar with probability well under 1%; a
  # broken one reaches none).
  # The batch's time goal is the GPU's (the H200's, stated for the card by the report): a
  # rehearsal's 2 seeds on the CPU are judged without it.
  local need=6 goal=:10
  [ "$rehearse" -eq 0 ] || { need=1; goal=""; }
  report dqn --dqn-dir "$dqn_dir" --limit "$train_limit" --bar "cartpole-$dev:475:$need" \
    --batch "cartpole-$dev-batch:cartpole-$dev:lockstep$goal" \
    --lanes "$ppo:1:policy_loss,value_loss" --lanes "$sac:1:qf1_loss,qf2_loss,actor_loss" --card "$card_file"
}

# dqn-more (call 2): Acrobot over 8 seeds beside 64 in lockstep, MountainCar over 4, a CartPole run
# on the CPU, then PQN's CartPole config over 8 seeds and its MinAtar Breakout config (seed 1, where
# the plugin was built; 5M steps in one CUDA graph per iteration, the goal the reference DQN's
# score, 10, in under 60 s).
part_dqn_more() {
  dqn_start dqn-more || return $?
  banner "DQN: Acrobot, MountainCar, a CPU run; PQN's CartPole and Breakout on $dev"
  local t0=$SECONDS seeds=(1 2 3 4 5 6 7 8) mountain=(1 2 3 4) batch=64
  if [ "$rehearse" -eq 1 ]; then seeds=(1 2); mountain=(1); batch=2; fi
  train_seeds acrobot "$dev" "${seeds[@]}"
  train_seeds mountain_car "$dev" "${mountain[@]}"
  train_batch acrobot "$dev" "1-$batch" "$train_limit"
  [ "$rehearse" -eq 1 ] || train_seeds cartpole cpu 1
  wait_trainings
  train_seeds cartpole_pqn "$dev" "${seeds[@]}"
  if [ "$rehearse" -eq 0 ] && have_minatar; then train_seeds minatar_breakout_pqn "$dev" 1; fi
  wait_trainings
  # PPO's CartPole (issue 41's goal: 1,024 seeds in lockstep in 30 s, 95% solved) and SAC's
  # Pendulum (issue 42: 1,024 seeds in lockstep, the time reported), each alone on the GPU.
  local ppo_batch=1024
  [ "$rehearse" -eq 0 ] || ppo_batch=2
  train_batch cartpole_ppo "$dev" "1-$ppo_batch" 90
  wait_trainings
  train_batch pendulum_sac "$dev" "1-$ppo_batch" "$train_limit"
  wait_trainings
  local dqn_s=$((SECONDS - t0))
  [ "$dry" -eq 0 ] || return 0
  [ -z "${OUT:-}" ] ||
    limited 30 tar -czf "$OUT/dqn-more-runs.tgz" -C "$build_dir" --exclude='*.safetensors' dqn 2>/dev/null || true
  banner "summary: dqn-more part (paste into docs/benchmarks.md)"
  echo "dqn-more part on $card_name: ${dqn_s} s (each run cut off at ${train_limit} s)"
  # Bars as dqn's: Acrobot-v1 and PQN's CartPole at least 6 of 8 (32 of 32 Acrobot seeds on the
  # CPU); MountainCar, the CPU run and PQN's Breakout are reported, not judged (a run of theirs cut
  # off at the time limit is not a failure).
  local need=6
  [ "$rehearse" -eq 0 ] || need=1
  local bars=(--bar "acrobot-$dev:-100:$need" --bar "mountain_car-$dev:-110:0" --bar "cartpole_pqn-$dev:475:$need")
  # (Breakout's run is started only where the plugin was built, and never in a rehearsal.)
  [ ! -f "$dqn_dir/minatar_breakout_pqn-$dev-1.log" ] || bars+=(--bar "minatar_breakout_pqn-$dev:10:0")
  [ "$rehearse" -eq 1 ] || bars+=(--bar "cartpole-cpu:475:0")
  local ppo_goal=:30
  [ "$rehearse" -eq 0 ] || ppo_goal=""
  report dqn --dqn-dir "$dqn_dir" --limit "$train_limit" "${bars[@]}" --batch "acrobot-$dev-batch:acrobot-$dev:lockstep" \
    --batch "cartpole_ppo-$dev-batch:cartpole_ppo-$dev:lockstep$ppo_goal" \
    --batch "pendulum_sac-$dev-batch:pendulum_sac-$dev:lockstep:report" --card "$card_file"
}

# ---- python: the package with CUDA, and its tests ----------------------------------------------------
# The package is build-gpu's extension and plugin (`cmake --install --component python`, the
# wheel's files) beside python/cugym, where the build part built them in this call: no CUDA
# compiled twice. Otherwise (the part alone on a fresh machine) pip builds it with CUDA.
part_python() {
  banner "python part: probe"
  use_deps 0
  local dir="$root/build-gpu-python" site="$root/build-gpu-python/site"
  if compgen -G "$deps_dir/whl/*.whl" >/dev/null; then
    run_limited 0 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
      "$deps_dir"/whl/*.whl || { time_up && return 5; echo "gpu-check: installing deps/whl failed"; return 4; }
  fi
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  probe python || return $?
  local t0=$SECONDS
  if [ "$python_in_build" -eq 1 ]; then
    banner "the package from $build_dir (its extension and plugin, python/cugym), into $site"
    if ! { run_limited 0 cmake --build "$build_dir" -j "$cores" --target _cugym &&
           run rm -rf "$site/cugym" &&
           run_limited 0 cmake --install "$build_dir" --component python --prefix "$site" >/dev/null &&
           run cp -r python/cugym/. "$site/cugym/"; }; then
      time_up && { echo "gpu-check: the package was cut off at the part's end"; return 5; }
      echo "gpu-check: BUILD FAILED (the package from $build_dir)"
      return 1
    fi
  else
    # --config-settings, not -C: pip before 23.1 (Debian bookworm's) has only the long form.
    banner "pip install . (CUDA for sm_${CUGYM_GPU_ARCH:-90}, into $site)"
    local cuda=ON defines=() a
    [ "$rehearse" -eq 0 ] || cuda=OFF
    for a in "${dep_cmake_args[@]}"; do
      case "$a" in -DCUGYM_CBLAS*|-DCUGYM_OPENBLAS*) defines+=("--config-settings=cmake.define.${a#-D}") ;; esac
    done
    if ! run_limited 0 env CUGYM_CUDA="$cuda" CMAKE_BUILD_PARALLEL_LEVEL="$cores" python3 -m pip install -q \
        --no-build-isolation --no-deps --no-index --upgrade --target "$site" "--config-settings=build-dir=$dir/build" \
        "--config-settings=cmake.define.CMAKE_CUDA_ARCHITECTURES=${CUGYM_GPU_ARCH:-90}" "${defines[@]}" "$root"; then
      time_up && { echo "gpu-check: pip install . was cut off at the part's end"; return 5; }
      echo "gpu-check: BUILD FAILED (pip install .)"
      return 1
    fi
  fi
  local build_s=$((SECONDS - t0))
  banner "pytest python/tests"
  local log="$results/pytest-gpu.log" rc=0 env_args=(CUGYM_REQUIRE_GPU=1)
  [ "$rehearse" -eq 0 ] || env_args=(CUGYM_CUDA_TESTS_ON_CPU=1)
  t0=$SECONDS
  local cmd=(env "${env_args[@]}" python3 -m pytest -q -rs -p no:cacheprovider "$root/python/tests")
  # A package installed from the build tree has no pip metadata for the licence test to read (CI's
  # pip install checks it).
  [ "$python_in_build" -eq 0 ] ||
    cmd+=(-k "not test_the_metadata_names_every_licence")
  echo "+ (cd $dir && ${cmd[*]})"
  [ "$dry" -eq 0 ] || return 0
  mkdir -p "$dir"
  (cd "$dir" && limited 0 "${cmd[@]}") 2>&1 | tee "$log" || rc=$?
  time_up || true
  banner "summary: python part (paste into docs/benchmarks.md)"
  echo "python part on $card_name: package ${build_s} s, pytest $((SECONDS - t0)) s:" \
       "$(grep -E '[0-9]+ (passed|failed)' "$log" | tail -n 1)"
  if [ "$rc" -eq 124 ] && [ "$part_cut" -eq 1 ]; then
    echo "gpu-check: pytest cut off at the part's end (the tests it finished are above)"
    return 5
  fi
  if [ "$rc" -ne 0 ]; then
    echo "gpu-check: PYTHON TESTS FAILED (pytest exit $rc)"
    return 2
  fi
  echo "python part: pass"
}

# fake_slow PART: for tests of the deadline (CUGYM_GPU_CHECK_FAKE_SLOW=PART:SECONDS), PART first
# sleeps SECONDS under its limits, --dry-run included; 5 when that used up the part's time.
fake_slow() {
  local entry secs=""
  for entry in ${fake_slow//,/ }; do [ "${entry%%:*}" != "$1" ] || secs="${entry#*:}"; done
  [ -n "$secs" ] || return 0
  echo "+ sleep $secs (CUGYM_GPU_CHECK_FAKE_SLOW: part $1 made slow)"
  limited 0 sleep "$secs"
  ! time_up || return 5
}

# severity STATUS: the order in which a call's status is its worst part's: 1 (the build), 2 (a
# test), 3 (a bar), 4 (a prerequisite), 5 (time), then 0; a status no part should give first.
severity() {
  case "$1" in 0) echo 0 ;; 5) echo 1 ;; 4) echo 2 ;; 3) echo 3 ;; 2) echo 4 ;; 1) echo 5 ;; *) echo 6 ;; esac
}

main() {
  local status=0 part part_status t0 how done_parts=()
  [ "$dry" -eq 1 ] || { mkdir -p "$results" && rm -f "$results/parts.txt"; }
  if [ "$call_end" -gt 0 ]; then
    echo "gpu-check: deadline ${deadline} s from the start (CUGYM_GPU_CHECK_DEADLINE), ${reserve} s of it kept for the reports"
  fi
  # A part that fails does not stop the call: a later one may still build what it needs (the dqn
  # and speed parts build cugym alone), find its own prerequisites, or measure.
  for part in "${parts[@]}"; do
    part_status=0
    how=""
    t0=$SECONDS
    if start_part "$part"; then
      fake_slow "$part" || part_status=$?
      [ "$part_status" -ne 0 ] || "part_${part//-/_}" || part_status=$?
      if [ "$part_cut" -eq 1 ]; then
        how="cut off"
        echo "gpu-check: part $part cut off at its end, after $((SECONDS - t0)) s ($part_end_by)"
        # What it missed for want of time is no finding; a failed build or test still is.
        case "$part_status" in 0|3) part_status=5 ;; esac
      fi
    else
      part_status=5
      how="skipped"
    fi
    echo "gpu-check: part $part exit $part_status ($((SECONDS - t0)) s${how:+, $how})"
    part_seconds "$part" "$((SECONDS - t0))" "$part_status${how:+ ($how)}"
    done_parts+=("$part $part_status${how:+ ($how)}")
    [ "$(severity "$part_status")" -le "$(severity "$status")" ] || status=$part_status
  done
  [ "$dry" -eq 0 ] || echo "gpu-check: dry run of '${parts[*]}' (nothing was built or run)"
  echo "gpu-check: parts: $(printf '%s, ' "${done_parts[@]}" | sed 's/, $//'); the worst: $status ($((SECONDS - call_start)) s in all)"
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
