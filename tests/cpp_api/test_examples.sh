#!/usr/bin/env bash
# The C++ library as a user gets it: install cugym, build examples/cpp_loop and examples/cpp_train
# out of tree against the installed CMake package (find_package(cugym 0.1) and
# target_link_libraries, nothing else), run them on the CPU, and on CUDA where a GPU is usable;
# without one, --device cuda stops with one error line and exit 2, as bad options do. The
# package's version file refuses the next minor version.
#   test_examples.sh BUILD_DIR SOURCE_DIR CMAKE_ARGS...
set -u
build=$1
source=$2
shift 2
cugym=""  # the program common.sh's run/expect call: set to each example in turn
# shellcheck source=SCRIPTDIR/../cli/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cli/common.sh"
export OPENBLAS_NUM_THREADS=1  # the same BLAS kernels in every run, whatever else runs beside

echo "== install cugym into $tmp/prefix"
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; echo "0 passed, 1 failed"; exit 1; }

# build NAME CMAKE_ARGS...: configures and builds examples/NAME against the install into $tmp/NAME.
build() {
  local name=$1
  shift
  echo "== build examples/$name against the installed package"
  checks=$((checks + 1))
  if ! cmake -S "$source/examples/$name" -B "$tmp/$name" -DCMAKE_PREFIX_PATH="$tmp/prefix" "$@" >"$tmp/configure-$name.log" 2>&1 ||
     ! cmake --build "$tmp/$name" -j "$(nproc)" >"$tmp/build-$name.log" 2>&1; then
    cat "$tmp/configure-$name.log" "$tmp/build-$name.log" 2>/dev/null | tail -40
    fail "examples/$name did not build"
    summary
    exit 1
  fi
}
# at_least VALUE MIN WHAT: one check that the number VALUE is >= MIN.
at_least() {
  checks=$((checks + 1))
  awk -v v="${1:-nan}" -v m="$2" 'BEGIN { exit !(v + 0 == v && v >= m) }' || fail "$3: ${1:-?} < $2"
}
# One line: the CUDA case runs where a GPU is usable, else it must be refused.
cuda_refusal='error: .*cuda.*: (this cugym was built without CUDA|no usable CUDA GPU|no CUDA GPU found)'

build cpp_loop "$@"
cugym=$tmp/cpp_loop/cpp_loop
expect 0 'CartPole-v1 on cpu: 512 envs x 600 steps in [0-9.]+ s, [0-9.e+]+ env steps/s' -- \
  --device cpu --num-envs 512 --steps 600 --seed 3
cat "$tmp/out"
# The hand-written controller keeps the pole up far longer than chance (a random policy: about 22).
at_least "$(grep -Eo 'mean return [0-9.]+' "$tmp/out" | grep -Eo '[0-9.]+$')" 100 "cpp_loop's controller mean return"
expect 2 "^cpp_loop: error: unknown option '--bogus'" -- --bogus 1
expect 2 "^cpp_loop: error: --steps needs a whole number >= 1, got 'x'" -- --steps x
expect 2 "^cpp_loop: error: unknown device 'tpu'" -- --device tpu
expect 2 "^cpp_loop: error: unknown option or missing value: '--num-envs'" -- --num-envs
"$cugym" --device auto --num-envs 1 --steps 1 >"$tmp/auto" 2>&1
if grep -q 'on cuda' "$tmp/auto"; then
  expect 0 'CartPole-v1 on cuda: 4096 envs x 300 steps' -- --device cuda --num-envs 4096 --steps 300
  cat "$tmp/out"
else
  expect 2 "^cpp_loop: $cuda_refusal" -- --device cuda
  cat "$tmp/err"
fi

build cpp_train "$@"
cugym=$tmp/cpp_train/cpp_train
expect 0 "greedy evaluation of $tmp/model.safetensors: 100 episodes, mean return" -- \
  --device cpu --steps 20000 --model "$tmp/model.safetensors"
cat "$tmp/out"
checks=$((checks + 1))
[ -s "$tmp/model.safetensors" ] || fail "cpp_train wrote no model"
# the same run every time on the CPU; it learns, though it need not solve
at_least "$(grep -Eo 'mean return [0-9.]+' "$tmp/out" | grep -Eo '[0-9.]+$')" 50 "cpp_train's greedy mean return"
expect 2 "^cpp_train: error: --eval-episodes needs a whole number >= 1, got '0'" -- --eval-episodes 0
if grep -q 'on cuda' "$tmp/auto"; then
  expect 0 'training DQN on CartPole-v1 \(cuda\)' -- --device cuda --steps 5000 --model "$tmp/model-cuda.safetensors"
else
  expect 2 "^cpp_train: $cuda_refusal" -- --device cuda
fi

# The examples ask for this minor version; the next one must be refused.
version=$(grep -Eo 'PACKAGE_VERSION "[0-9]+\.[0-9]+' "$tmp/prefix/lib/cmake/cugym/cugymConfigVersion.cmake" | grep -Eo '[0-9.]+$')
next="${version%%.*}.$((${version#*.} + 1))"
echo "== the version file: $version is found above, $next is refused"
mkdir -p "$tmp/version"
printf 'cmake_minimum_required(VERSION 3.25)\nproject(v LANGUAGES NONE)\nfind_package(cugym %s REQUIRED)\n' "$next" \
  >"$tmp/version/CMakeLists.txt"
checks=$((checks + 1))
# (The same generator and tools as the examples: a machine may have ninja and no make.)
if cmake -S "$tmp/version" -B "$tmp/version/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" "$@" >"$tmp/version.log" 2>&1 ||
   ! grep -q 'not accepted' "$tmp/version.log"; then
  fail "find_package(cugym $next) was not refused:"
  tail -20 "$tmp/version.log"
fi

summary
