#!/usr/bin/env bash
# All tests, as CI runs them:
#   1. setup.sh (install missing packages), the formatting check (scripts/format.sh --check), and
#      ruff (format check and lint) over python/, bench/, scripts/, examples/ and plugins/ from a tools venv in
#      build-ci-tools (ruff pinned below, installed from PyPI once); the docs site, mkdocs build --strict
#      (MkDocs and Material, pinned, from the same venv)
#   2. cuda: CUDA-enabled Release build with -Werror into build-ci-cuda (only when nvcc exists;
#      archs from CUGYM_CI_CUDA_ARCH, default 90), the Python extension included, then ctest
#   3. asan: CPU-only RelWithDebInfo build with ASan+UBSan into build-ci-asan, then ctest
#   4. python: `pip install .` (Box2D required) into a fresh venv in build-ci-python, installing the
#      extension the cuda configuration built (CPU only and built by pip without nvcc), with
#      tensorboard, box2d, pygame and matplotlib from PyPI (test oracles) and the ray extra (those
#      packages are fetched in the background during steps 2-3), the example plugin as the cuda
#      configuration's plugin.out_of_tree test built it, then pytest python/tests and
#      bench/test_dqn_seeds.py, test_sections.py, test_ppo_peers.py, test_sac_peers.py, test_jax_peers.py
#      and test_profile_agents.py, python/tests/test_tune.py
#      (a two-node Ray cluster, in a network namespace of its own: unshare -n), and
#      python/tests/test_cuda.py again on the CPU back end (CUGYM_CUDA_TESTS_ON_CPU=1)
# The Release (cuda) configuration runs every test, the `slow` learning checks included (seconds
# there); the sanitizer configuration skips them unless CUGYM_SLOW_TESTS=1, runs the longest
# end-to-end checks shorter (CUGYM_SHORT_E2E, kSanitizerBuild: the same code, fewer steps) and
# MinAtar's conformance suite on small batches, and leaves the out-of-tree builds (the example
# plugins and C++ programs) to the Release one. MinAtar's step-by-step tests run its oracle from
# the Python venv (CUGYM_TEST_PYTHON), which each configuration's ctest waits for.
#   scripts/test.sh --quick   only the first configuration that can run (cuda, else asan)
# Exits non-zero if any step fails; ends with one summary line per step, with its seconds.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1

quick=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# One more job than cores: several script tests wait on signals, pacing or child processes part of
# the time (cli.resume, cli.train, cli.render), and another test can use the core meanwhile.
ctest_args=(--output-on-failure -j "$(($(nproc) + 1))")

summary=()
failed=0
banner() { printf '\n===== %s =====\n' "$*"; }
t_all=$SECONDS
took() { echo "$((SECONDS - $1)) s"; }  # took START: seconds since START

t0=$SECONDS
if bash scripts/setup.sh; then
  summary+=("setup: PASS ($(took "$t0"))")
else
  summary+=("setup: FAIL (scripts/setup.sh exited non-zero; continuing)")
  failed=1
fi

banner "format (clang-format, .clang-format)"
t0=$SECONDS
format_rc=0
bash scripts/format.sh --check || format_rc=$?
case "$format_rc" in
  0) summary+=("format: PASS ($(took "$t0"))") ;;
  77) summary+=("format: SKIP (no clang-format 14)") ;;
  *) summary+=("format: FAIL (run bash scripts/format.sh)"); failed=1 ;;
esac

# The tools venv: ruff for Python style, MkDocs and its Material theme for the docs site, pinned
# so that neither the formatting nor the site's checks move under us; made again when a pin moves.
ruff_version=0.17.6
tools_pins=("ruff==$ruff_version" "mkdocs==1.6.1" "mkdocs-material==9.8.2")
banner "ruff $ruff_version (format --check, check) over python/, bench/, scripts/, examples/, plugins/"
t0=$SECONDS
tools="$root/build-ci-tools/venv"
if [ "$(cat "$tools/pins" 2>/dev/null)" != "${tools_pins[*]}" ]; then
  rm -rf "$tools"
  python3 -m venv "$tools" && "$tools/bin/pip" install -q "${tools_pins[@]}" && echo "${tools_pins[*]}" >"$tools/pins" || true
fi
if [ ! -x "$tools/bin/ruff" ]; then
  summary+=("ruff: FAIL (could not install ruff==$ruff_version from PyPI into $tools)"); failed=1
elif "$tools/bin/ruff" format --check python bench scripts examples plugins && "$tools/bin/ruff" check python bench scripts examples plugins; then
  summary+=("ruff: PASS ($(took "$t0"))")
else
  summary+=("ruff: FAIL (run: ruff format python bench scripts examples plugins; ruff check --fix python bench scripts examples plugins)"); failed=1
fi

# The docs site (mkdocs.yml): strict, so a broken link or anchor, a page left out of the nav or a
# missing image fails.
banner "docs: mkdocs build --strict (docs/ into build-docs/site)"
t0=$SECONDS
if [ ! -x "$tools/bin/mkdocs" ]; then
  summary+=("docs: FAIL (could not install ${tools_pins[*]} from PyPI into $tools)"); failed=1
elif NO_MKDOCS_2_WARNING=1 "$tools/bin/mkdocs" build --strict --config-file "$root/mkdocs.yml"; then
  summary+=("docs: PASS ($(took "$t0"))")
else
  summary+=("docs: FAIL (mkdocs build --strict: see the WARNING lines above)"); failed=1
fi

# run_config NAME BUILD_DIR CMAKE_ARGS...: build, then ctest (with $extra_ctest_args); records one
# summary line.
run_config() {
  local name="$1" dir="$2"
  shift 2
  banner "$name: build ($dir)"
  local t0=$SECONDS
  if ! bash scripts/build.sh "$dir" "$@"; then
    summary+=("$name: FAIL (build) [$dir]")
    failed=1
    return
  fi
  local build_s=$((SECONDS - t0))
  banner "$name: ctest ($dir)"
  venv_ready  # MinAtar's step-by-step tests run its oracle from the venv (CUGYM_TEST_PYTHON)
  local log="$dir/ctest-ci.log" rc=0
  t0=$SECONDS
  ctest --test-dir "$dir" "${ctest_args[@]}" "${extra_ctest_args[@]}" 2>&1 | tee "$log" || rc=$?
  local result times="build ${build_s} s, ctest $((SECONDS - t0)) s"
  result="$(grep -E '[0-9]+% tests passed' "$log" | tail -n 1)"
  if [ "$rc" -eq 0 ]; then
    summary+=("$name: PASS (${result:-no tests}; $times) [$dir]")
  else
    summary+=("$name: FAIL (ctest exit $rc: ${result:-see above}; $times) [$dir]")
    failed=1
  fi
}

# The Python phase's fresh venv. What building the extension needs (scikit-build-core, nanobind,
# numpy's headers) is installed first, so that the cuda configuration can build the extension with
# its libraries (the Python phase then installs that build: the library is compiled twice, not
# three times). The test packages from PyPI (downloads, mostly: Ray alone is 135 MB) follow in the
# background while the C++ configurations build; run_python waits for them. With the ray extra
# (cugym.tune); tensorboard to read the event files with TensorBoard's own reader; box2d and pygame
# for Gymnasium's LunarLander reference; matplotlib for cugym.report; safetensors to load cugym's
# files as Python users do; torch (PyPI's build, about 3 GB with its CUDA libraries, which run on
# the CPU here) to rebuild cugym's model files in PyTorch as docs/ppo.md shows, and
# array-api-compat for Gymnasium's NumpyToTorch wrapper.
python_dir="$root/build-ci-python"
python_build_ready=0
mkdir -p "$python_dir"
rm -rf "$python_dir/venv"
if python3 -m venv "$python_dir/venv" >"$python_dir/venv.log" 2>&1 &&
   "$python_dir/venv/bin/pip" install -q "scikit-build-core>=0.11" "nanobind>=2.2" "numpy>=2.0" >>"$python_dir/venv.log" 2>&1; then
  python_build_ready=1
fi
prepare_python_venv() {
  [ "$python_build_ready" -eq 1 ] &&
    "$python_dir/venv/bin/pip" install -q pytest tensorboard box2d pygame matplotlib safetensors minatar==1.0.15 \
      "ray[tune]>=2.9" "gymnasium>=1.0" torch array-api-compat
}
prepare_python_venv >>"$python_dir/venv.log" 2>&1 &
python_venv_pid=$!
# venv_ready: waits for that venv once; then its status is in $python_venv_rc (0: ready), and
# CUGYM_TEST_PYTHON names its python (the MinAtar oracle, minatar==1.0.15, is installed there).
python_venv_rc=""
venv_ready() {
  [ -n "$python_venv_rc" ] && return "$python_venv_rc"
  python_venv_rc=0
  wait "$python_venv_pid" || python_venv_rc=$?
  [ "$python_venv_rc" -eq 0 ] && export CUGYM_TEST_PYTHON="$python_dir/venv/bin/python"
  return "$python_venv_rc"
}

ran=0
if command -v nvcc >/dev/null 2>&1; then
  extra_ctest_args=()
  # With the Python extension (and Box2D, which the Python phase requires): run_python installs it
  # from this build tree.
  python_args=()
  [ "$python_build_ready" -eq 1 ] &&
    python_args=(-DCUGYM_PYTHON=ON "-DPython_EXECUTABLE=$python_dir/venv/bin/python" -DCUGYM_BOX2D=ON
                 "-Dnanobind_DIR=$("$python_dir/venv/bin/python" -m nanobind --cmake_dir)")
  run_config cuda build-ci-cuda -DCMAKE_BUILD_TYPE=Release -DCUGYM_CUDA=AUTO \
    "-DCMAKE_CUDA_ARCHITECTURES=${CUGYM_CI_CUDA_ARCH:-90}" -DCUGYM_WERROR=ON "${python_args[@]}"
  ran=1
else
  summary+=("cuda: SKIP (no nvcc on PATH or in /usr/local/cuda/bin)")
fi

if [ "$quick" -eq 1 ] && [ "$ran" -eq 1 ]; then
  summary+=("asan: SKIP (--quick)")
else
  extra_ctest_args=()
  [ "${CUGYM_SLOW_TESTS:-0}" = "1" ] || extra_ctest_args=(-LE slow)
  # -g1: the line tables ASan's reports need, not full debug info, which the compile spends most
  # of its time on (the slowest build of the run).
  run_config asan build-ci-asan -DCUGYM_CUDA=OFF -DCUGYM_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
fi

# The Python package as a user installs it: pip install . (scikit-build-core, through pyproject.toml)
# into the fresh venv, then pytest. Where the cuda configuration built the extension, pip installs
# that build (its tree as scikit-build-core's build dir, the configuration's own settings kept:
# nothing is compiled again), a CUDA-enabled package on a machine without a GPU; else pip builds a
# CPU-only one in $python_dir/build. The plugin test loads examples/custom_env as the cuda
# configuration's plugin.out_of_tree test built it (an ASan-built plugin cannot load into Python).
run_python() {
  local dir="$python_dir" rc=0 t0=$SECONDS
  banner "python: venv, pip install ., pytest ($dir)"
  if ! venv_ready; then
    cat "$dir/venv.log"
    summary+=("python: FAIL (the venv or its PyPI packages; python3-venv missing, or no network?) [$dir]")
    failed=1; return
  fi
  local cuda_tree="$root/build-ci-cuda" pip_args build_note reused=0
  if grep -q '^CUGYM_PYTHON:BOOL=ON' "$cuda_tree/CMakeCache.txt" 2>/dev/null; then
    reused=1
    pip_args=(--no-build-isolation "-Cbuild-dir=$cuda_tree" -Ccmake.define.CUGYM_BUILD_TESTS=ON
              -Ccmake.define.CUGYM_SDL2=AUTO -Ccmake.define.CUGYM_CUDA=AUTO -Ccmake.define.CUGYM_BOX2D=ON)
    build_note="the cuda configuration's build"
  else
    pip_args=(--no-build-isolation "-Cbuild-dir=$dir/build" -Ccmake.define.CUGYM_CUDA=OFF -Ccmake.define.CUGYM_BOX2D=ON)
    build_note="CPU only, built here"
  fi
  if ! CMAKE_BUILD_PARALLEL_LEVEL="${CUGYM_JOBS:-$(nproc)}" "$dir/venv/bin/pip" install -q "$root[ray]" "${pip_args[@]}"; then
    summary+=("python: FAIL (pip install .) [$dir]"); failed=1; return
  fi
  local plugin_note=""
  if [ "$reused" -eq 1 ] && [ -f "$cuda_tree/tests/plugin-out/libcugym_catch.so" ]; then
    export CUGYM_TEST_PLUGIN="$cuda_tree/tests/plugin-out/libcugym_catch.so"
  else
    plugin_note=", plugin test skipped: no plugin from the cuda configuration's tests"
  fi
  # The package's tests, and the many-seed statistics of bench/dqn_seeds.py (numpy is there).
  (cd "$dir" && CUGYM_REQUIRE_TENSORBOARD=1 CUGYM_REQUIRE_TORCH=1 "$dir/venv/bin/python" -m pytest -q -p no:cacheprovider \
     --ignore="$root/python/tests/test_tune.py" "$root/python/tests" \
     "$root/bench/test_dqn_seeds.py" "$root/bench/test_sections.py" "$root/bench/test_ppo_peers.py" \
     "$root/bench/test_sac_peers.py" "$root/bench/test_jax_peers.py" \
     "$root/bench/test_profile_agents.py") || rc=$?
  unset CUGYM_TEST_PLUGIN
  # Ray Tune on a two-node cluster that must talk over 127.0.0.1 only: in a network namespace of
  # its own where this machine allows one (root), else on the host with the test's own check
  # that every listener is on 127.0.0.1. Bounded by timeout; the test stops what it started.
  local tune_note=""
  if [ "$rc" -eq 0 ]; then
    local tune=(env CUGYM_REQUIRE_RAY=1 timeout 600 "$dir/venv/bin/python" -m pytest -q -p no:cacheprovider
                "$root/python/tests/test_tune.py")
    if unshare -n true 2>/dev/null && command -v ip >/dev/null 2>&1; then
      (cd "$dir" && unshare -n sh -c 'ip link set lo up && exec "$@"' sh "${tune[@]}") || rc=$?
      tune_note=", Ray in its own network namespace"
    else
      (cd "$dir" && "${tune[@]}") || rc=$?
      tune_note=", Ray on the host's network (no unshare -n here)"
    fi
  fi
  # The GPU tests' logic on the CPU back end (they skip above without a GPU; test_cuda.py).
  if [ "$rc" -eq 0 ]; then
    (cd "$dir" && CUGYM_CUDA_TESTS_ON_CPU=1 "$dir/venv/bin/python" -m pytest -q -p no:cacheprovider \
       "$root/python/tests/test_cuda.py") || rc=$?
  fi
  if [ "$rc" -eq 0 ]; then
    summary+=("python: PASS (pytest, ${build_note}${plugin_note}${tune_note}; $(took "$t0")) [$dir]")
  elif [ "$rc" -eq 5 ]; then
    summary+=("python: FAIL (pytest collected no tests) [$dir]"); failed=1
  else
    summary+=("python: FAIL (pytest exit $rc) [$dir]"); failed=1
  fi
}
run_python

banner "summary"
printf '%s\n' "${summary[@]}"
echo "total: $(took "$t_all")"
if [ "$failed" -ne 0 ]; then echo "test: FAILED"; exit 1; fi
echo "test: ALL PASSED"
