#!/usr/bin/env bash
# scripts/gpu-check.sh without a GPU: usage errors, the dry-run plans of both parts, a clean
# "no GPU" exit, and the report's verdicts on made-up results (a solved config, a miss, a crash,
# a fallback from the CUDA graph).
#   test_gpu_check.sh SOURCE_DIR
set -u
src="$1"
unset OUT  # on the GPU machine the outer gpu-check.sh logs to $OUT: the dry runs here must not
cugym="bash $src/scripts/gpu-check.sh"  # for common.sh's run/expect
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cugym_run() { checks=$((checks + 1)); bash "$src/scripts/gpu-check.sh" "$@" >"$tmp/out" 2>&1; }

# check CODE PATTERN -- ARGS...: gpu-check.sh ARGS exits CODE and its output matches PATTERN.
check() {
  local code=$1 pattern=$2
  shift 3
  cugym_run "$@"
  local got=$?
  if [ "$got" -ne "$code" ] || ! grep -Eq -- "$pattern" "$tmp/out"; then
    fail "gpu-check.sh $* -> exit $got (want $code, output matching '$pattern'):"
    sed 's/^/    /' "$tmp/out" | tail -n 20
  fi
}

check 64 "say which part" --
check 64 "unknown argument '--fast'" -- build --fast
check 0 '\+ CUGYM_REQUIRE_GPU=1 ctest .*-j [0-9]+' -- build --dry-run
check 0 'CMAKE_CUDA_ARCHITECTURES=90 -DCUGYM_CUDA=ON -DCUGYM_SDL2=OFF -DCUGYM_BOX2D=OFF' -- build --dry-run
check 0 'cugym train --config configs/acrobot.toml --device cuda --seed 8' -- bench --dry-run
check 0 'bench --env CartPole-v1 --device cuda --num-envs 16777216 --steps 50 --mode fused --json' -- bench --dry-run
check 0 "dry run of 'all'" -- all --dry-run
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  check 4 'no GPU here' -- build
  check 4 'no GPU here' -- bench
fi

# The report on made-up runs: cartpole-cuda 2 of 3 at 475, acrobot-cuda one crash, mountain_car
# one graph fallback.
report() { checks=$((checks + 1)); python3 "$src/scripts/gpu_check_report.py" "$@" >"$tmp/out" 2>&1; }
dqn="$tmp/dqn"
mkdir -p "$dqn"
make_run() {  # make_run GROUP SEED RETURN [LOG LINE]
  mkdir -p "$dqn/$1-$2"
  echo "{\"mean_return\": $3}" >"$dqn/$1-$2/eval.json"
  printf 'global_step,wall_time,episodic_return\n1000,2.5,10\n60000,4.5,20\n' >"$dqn/$1-$2/metrics.csv"
  echo "${4:-trained}" >"$dqn/$1-$2.log"
}
make_run cartpole-cuda 1 500
make_run cartpole-cuda 2 480.5
make_run cartpole-cuda 3 131
make_run acrobot-cuda 1 -80
echo "terminate called after throwing" >"$dqn/acrobot-cuda-2.log"
make_run mountain_car-cuda 1 -101 "cugym train: CUDA graph capture failed (x); running updates eagerly"
echo '{"env": "CartPole-v1", "device": "cuda", "hardware": "H", "num_envs": 1048576, "mode": "step", "steps_per_second": 2.75e10, "bytes_per_step": 78, "model_gbytes_per_second": 2145}' >"$tmp/env.jsonl"
echo '{"bench": "nn_update", "net": "4-120-84-2", "batch": 128, "loss": "mse", "max_grad_norm": 0, "device": "cuda", "mode": "graph", "hardware": "H", "updates_per_second": 40000.0, "note": ""}' >"$tmp/nn.jsonl"

report bench --env-jsonl "$tmp/env.jsonl" --nn-jsonl "$tmp/nn.jsonl" --dqn-dir "$dqn" --bar cartpole-cuda:475:2
if [ $? -ne 0 ] || ! grep -q '| cartpole-cuda | 3 | 2 | >= 475 in 2 | 1: 500.0, 2: 480.5, 3: 131.0 | 4.5 | pass |' "$tmp/out" ||
   ! grep -q '| 5.513e+10 | 50% |' "$tmp/out" || ! grep -q '| 40000 | 25.0 |' "$tmp/out"; then
  fail "report: a passing bar, the bound and the nn row:"; sed 's/^/    /' "$tmp/out"
fi
report bench --env-jsonl "$tmp/env.jsonl" --nn-jsonl "$tmp/nn.jsonl" --dqn-dir "$dqn" --bar cartpole-cuda:475:3
if [ $? -ne 3 ] || ! grep -q 'FAIL (fewer than 3)' "$tmp/out"; then
  fail "report: a missed bar must exit 3:"; sed 's/^/    /' "$tmp/out"
fi
report bench --env-jsonl "$tmp/env.jsonl" --nn-jsonl "$tmp/nn.jsonl" --dqn-dir "$dqn" --bar acrobot-cuda:-100:1
if [ $? -ne 3 ] || ! grep -q 'seed 2: no eval.json (terminate called after throwing)' "$tmp/out"; then
  fail "report: a crashed seed must fail its group:"; sed 's/^/    /' "$tmp/out"
fi
report bench --env-jsonl "$tmp/env.jsonl" --nn-jsonl "$tmp/nn.jsonl" --dqn-dir "$dqn" --bar mountain_car-cuda:-110:0
if [ $? -ne 3 ] || ! grep -q 'seed 1: fell back from the CUDA graph' "$tmp/out"; then
  fail "report: a graph fallback must fail even an unjudged group:"; sed 's/^/    /' "$tmp/out"
fi
printf '  5 - a.test (Failed)\n  7 - b.test/cuda (Skipped)\n50%% tests passed, 1 tests failed out of 2\n' >"$tmp/ctest.log"
report ctest "$tmp/ctest.log" --build-seconds 3 --ctest-seconds 4
if ! grep -q 'ctest: 2 tests, 0 passed, 1 failed, 1 skipped' "$tmp/out" || ! grep -q 'failed: a.test' "$tmp/out"; then
  fail "report: ctest counts:"; sed 's/^/    /' "$tmp/out"
fi

summary
