#!/usr/bin/env bash
# Env plugins end to end, as an env author uses them: install cugym, build examples/custom_env
# out of tree against the installed CMake package, load it with --plugin into the installed
# cugym, run the shared conformance suite on its env, bench and record it; then the ways loading
# can fail (missing file, not a shared library, not a plugin, another ABI, duplicate id); DQN
# trains on the plugin's env. examples/host_env, a host env with its own physics engine, goes through
# the same list, bench and conformance checks.
# usage: test_plugin.sh BUILD_DIR SOURCE_DIR CUGYM_TESTS CMAKE_ARGS...
set -u
build=$1
source=$2
tests_bin=$3
shift 3
source "$(dirname "$0")/../cli/common.sh"

echo "== install cugym into $tmp/prefix"
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; echo "0 passed, 1 failed"; exit 1; }
cugym=$tmp/prefix/bin/cugym

echo "== build examples/custom_env against the installed package"
if ! cmake -S "$source/examples/custom_env" -B "$tmp/catch" -DCMAKE_PREFIX_PATH="$tmp/prefix" "$@" >"$tmp/configure.log" 2>&1 ||
   ! cmake --build "$tmp/catch" -j "$(nproc)" >"$tmp/build.log" 2>&1; then
  cat "$tmp/configure.log" "$tmp/build.log" | tail -40
  echo "0 passed, 1 failed"
  exit 1
fi
plugin=$tmp/catch/libcugym_catch.so
grep -E 'CUDA' "$tmp/configure.log" | head -3
# Kept for scripts/test.sh's Python phase (its conftest loads it), which then need not build it again.
mkdir -p "$build/tests/plugin-out" && cp "$plugin" "$build/tests/plugin-out/"

expect 0 'Catch-v0 +\(3,\) +Discrete\(3\) +100' -- list --plugin "$plugin"
expect 0 'CartPole-v1' -- --plugin "$plugin" list
expect 0 '"env": "Catch-v0", "device": "cpu"' -- bench --plugin="$plugin" --env Catch-v0 --num-envs 256 --steps 50 --repeats 1 --device cpu --json
if "$cugym" record --help >/dev/null 2>&1; then
  expect 0 'recorded 1 frame' -- record --plugin "$plugin" --env Catch-v0 --out "$tmp/catch.png" --device cpu
  [ "$(head -c 4 "$tmp/catch.png" 2>/dev/null | od -An -c | tr -d ' ')" = "211PNG" ] || fail "catch.png is not a PNG"
fi

echo "== DQN learns the plugin's env (20k env steps, a few seconds)"
if "$cugym" train --help >/dev/null 2>&1; then
  expect 0 'no tuned config ships for Catch-v0; using the defaults' -- \
    train --plugin "$plugin" --env Catch-v0 --device cpu \
    --out "$tmp/catch-run" --total-steps 20000 --set learning_starts=500 --set exploration_fraction=0.3
  mean=$(grep -Eo '"mean_return": [-0-9.e]+' "$tmp/catch-run/eval.json" 2>/dev/null | grep -Eo '[-0-9.e]+$')
  checks=$((checks + 1))
  awk -v m="${mean:-nan}" 'BEGIN { exit !(m >= 0.9) }' || fail "Catch-v0 greedy mean return ${mean:-?} < 0.9 (its threshold)"
fi

echo "== the shared conformance suite on the plugin's env"
checks=$((checks + 1))
CUGYM_TEST_PLUGINS=$plugin "$tests_bin" --gtest_filter='*Catch*' >"$tmp/conf.log" 2>&1
rc=$?
ran=$(grep -Eo '^\[==========\] [0-9]+ tests? from' "$tmp/conf.log" | grep -Eo '[0-9]+' | head -1)
if [ $rc -ne 0 ] || [ "${ran:-0}" -lt 12 ]; then
  fail "conformance on Catch-v0: exit $rc, ${ran:-0} tests"
  tail -30 "$tmp/conf.log"
else
  grep -E '^\[  (PASSED|SKIPPED) ' "$tmp/conf.log"
fi

echo "== a host-env plugin (its own physics engine, CPU threads): examples/host_env"
if cmake -S "$source/examples/host_env" -B "$tmp/balls" -DCMAKE_PREFIX_PATH="$tmp/prefix" "$@" >"$tmp/configure-balls.log" 2>&1 &&
   cmake --build "$tmp/balls" -j "$(nproc)" >"$tmp/build-balls.log" 2>&1; then
  balls=$tmp/balls/libcugym_ball_drop.so
  expect 0 'BallDrop-v0 +\(2,\) +Discrete\(2\) +200 +none +cpu threads' -- list --plugin "$balls"
  expect 0 '"env": "BallDrop-v0", "device": "cpu"' -- bench --plugin "$balls" --env BallDrop-v0 --num-envs 100 --steps 30 --repeats 1 --device cpu --json
  checks=$((checks + 1))
  CUGYM_TEST_PLUGINS=$balls "$tests_bin" --gtest_filter='*BallDrop*' >"$tmp/conf-balls.log" 2>&1 ||
    { fail "conformance on BallDrop-v0"; tail -30 "$tmp/conf-balls.log"; }
else
  fail "examples/host_env did not build"
  cat "$tmp/configure-balls.log" "$tmp/build-balls.log" | tail -30
fi

echo "== loading failures"
expect 2 "plugin '$tmp/nothing.so': no such file" -- list --plugin "$tmp/nothing.so"
echo "not a library" >"$tmp/text.so"
expect 2 'is not a loadable shared library' -- list --plugin "$tmp/text.so"
printf 'int unrelated_symbol = 1;\n' >"$tmp/other.c"
cc -shared -fPIC -o "$tmp/other.so" "$tmp/other.c"
expect 2 'is not a cugym plugin \(it has no cugym_plugin_entry\)' -- list --plugin "$tmp/other.so"
cat >"$tmp/old.c" <<'C'
#include <stdio.h>
int cugym_plugin_entry(unsigned host_abi, void* registry, char* error, unsigned long size) {
  (void)host_abi; (void)registry;
  snprintf(error, size, "plugin ABI 0");
  return 1;
}
C
cc -shared -fPIC -o "$tmp/old.so" "$tmp/old.c"
expect 2 'was built against another cugym \(plugin ABI 0; this cugym has plugin ABI [0-9]+\): rebuild it' -- list --plugin "$tmp/old.so"
expect 0 'Catch-v0' -- list --plugin "$plugin" --plugin "$plugin"  # the same file twice: loaded once
cp "$plugin" "$tmp/catch-copy.so"
expect 2 "env id 'Catch-v0' is already registered" -- list --plugin "$plugin" --plugin "$tmp/catch-copy.so"
# CUGYM_PLUGIN_PATH: files and folders of plugins loaded without --plugin
mkdir -p "$tmp/plugdir" && cp "$plugin" "$tmp/plugdir/"
CUGYM_PLUGIN_PATH="$tmp/plugdir" expect 0 'Catch-v0 +\(3,\) +Discrete\(3\)' -- list
CUGYM_PLUGIN_PATH="$plugin:$tmp/catch-copy.so" expect 2 "catch-copy.so.*named by CUGYM_PLUGIN_PATH" -- list
CUGYM_PLUGIN_PATH="$tmp/nothing.so" expect 2 "nothing.so': no such file \(named by CUGYM_PLUGIN_PATH\)" -- list
expect 2 '--plugin needs a value' -- list --plugin

summary
