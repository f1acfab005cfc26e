#!/usr/bin/env bash
# scripts/gpu-check.sh without a GPU: usage errors, --help's whole header, the dry-run plans of
# every part and of the two device calls (first, second), the deadline (a part made slow is cut
# off and the later parts skipped, the call ending in time), a clean "no GPU" exit naming every
# missing piece in one line with every part still tried, and the report's verdicts on made-up
# results (a solved config, a miss, a crash, a fallback from the CUDA graph, a run cut off,
# batches judged on bytes or on their rate, PPO's and SAC's lanes against their solo runs, speed
# goals in their mode and for the card, the card's bandwidth, the CUDA cases by name, the
# sanitizer's errors and an unusable sanitizer).
#   test_gpu_check.sh SOURCE_DIR
set -u
src="$1"
unset OUT  # on the GPU machine the outer gpu-check.sh logs to $OUT: the dry runs here must not
unset CUGYM_GPU_CHECK_DEADLINE CUGYM_GPU_CHECK_FAKE_SLOW  # nor take an outer call's time limits
cugym="bash $src/scripts/gpu-check.sh"  # for common.sh's run/expect
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# The runs here write their results (an outer check's included) into the test's own folder.
export CUGYM_GPU_CHECK_RESULTS="$tmp/results"
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

check 64 "say which parts" --
check 64 "unknown argument '--fast'" -- build --fast
check 64 "unknown argument 'bench'" -- bench
check 0 '\+ CUGYM_REQUIRE_GPU=1 ctest .*-j [0-9]+ --timeout 150' -- build --dry-run
check 0 'CMAKE_CUDA_ARCHITECTURES=90 -DCUGYM_CUDA=ON -DCUGYM_SDL2=OFF -DCUGYM_BOX2D=(ON|OFF)' -- build --dry-run
check 0 'compute-sanitizer --tool memcheck --error-exitcode 99 build-gpu/tests/cugym_agent_tests' -- build --dry-run
check 0 'compute-sanitizer --tool racecheck --error-exitcode 99 build-gpu/tests/cugym_agent_tests' -- racecheck --dry-run
check 0 'bench --env CartPole-v1 --device cuda --num-envs 16777216 --steps 50 --mode fused --json' -- speed --dry-run
check 0 'bench --env MinAtar-Breakout-v1 --device cuda --num-envs 1048576 --steps 200 --mode fused --json' -- speed --dry-run
check 0 'cugym_bench_nn --device cuda .*--replicas 1,1024 ' -- speed --dry-run
check 0 'cugym_bench_nn --device cuda --nets 10x10x4c16-128-6 --layer-norm off,on ' -- speed --dry-run
check 0 'bench --env Pendulum-v1 --device cuda --num-envs 1048576 --steps 200 --mode fused --json' -- speed-more --dry-run
check 0 'cugym train --config configs/cartpole.toml --device cuda --seeds 1-1024 --lockstep on' -- dqn --dry-run
# PPO's and SAC's lanes in call 1: seed 1 solo and 64 seeds in lockstep with the same settings.
check 0 'cugym train --config configs/cartpole_ppo.toml --device cuda --seed 1 --set checkpoint_interval=0 --set total_steps=[0-9]+ --out build-gpu/dqn/cartpole_ppo_[0-9]+k-cuda-1 ' -- dqn --dry-run
check 0 'cugym train --config configs/cartpole_ppo.toml --device cuda --seeds 1-64 --lockstep on --set checkpoint_interval=0 --set total_steps=[0-9]+ --out build-gpu/dqn/cartpole_ppo_[0-9]+k-cuda-batch ' -- dqn --dry-run
check 0 'cugym train --config configs/pendulum_sac.toml --device cuda --seed 1 --set checkpoint_interval=0 --set save_replay=false --set total_steps=[0-9]+ --out build-gpu/dqn/pendulum_sac_[0-9]+k-cuda-1 ' -- dqn --dry-run
check 0 'cugym train --config configs/pendulum_sac.toml --device cuda --seeds 1-64 --lockstep on --set checkpoint_interval=0 --set save_replay=false --set total_steps=[0-9]+ --out build-gpu/dqn/pendulum_sac_[0-9]+k-cuda-batch ' -- dqn --dry-run
check 0 '\+ cmp build-gpu/dqn/pendulum_sac_[0-9]+k-cuda-batch/seed_1/model.safetensors build-gpu/dqn/pendulum_sac_[0-9]+k-cuda-1/model.safetensors' -- dqn --dry-run
# The CUDA cases by name: in ctest's second run (the slow ones among them) and the sanitizers' filters.
check 0 'ctest --test-dir build-gpu .*-L slow -R PpoCuda\|SacCuda\|Replicas.*CudaAgreement\|AgentOpsAgreement --no-tests=ignore' -- build --dry-run
check 0 "memcheck --error-exitcode 99 build-gpu/tests/cugym_agent_tests --gtest_filter='PpoCuda\*:SacCuda\*:PpoDevices/\*cuda:SacDevices/\*cuda'" -- build --dry-run
check 0 "memcheck --error-exitcode 99 build-gpu/tests/nn/cugym_nn_tests --gtest_filter='\*Replicas\*cuda\*" -- build --dry-run
check 0 "racecheck --error-exitcode 99 build-gpu/tests/cugym_agent_tests --gtest_filter='PpoCuda\*:SacCuda\*:PpoDevices/\*cuda:SacDevices/\*cuda'" -- racecheck --dry-run
check 0 '\+ python3 scripts/gpu_check_report.py card --out build-gpu/card.json' -- speed --dry-run
check 0 'cugym train --config configs/acrobot.toml --device cuda --seed 8' -- dqn-more --dry-run
check 0 'cugym train --config configs/cartpole_ppo.toml --device cuda --seeds 1-1024 --lockstep on --set checkpoint_interval=0 --out' -- dqn-more --dry-run
check 0 'cugym train --config configs/pendulum_sac.toml --device cuda --seeds 1-1024 --lockstep on' -- dqn-more --dry-run
check 0 'pip install .*--no-build-isolation --no-deps --no-index' -- python --dry-run
check 0 'apt-get download googletest libopenblas0-pthread' -- deps --dry-run
check 0 "dry run of 'build dqn speed python racecheck speed-more dqn-more'" -- all --dry-run
check 0 "dry run of 'racecheck speed-more dqn-more'" -- second --dry-run
# The first device call holds, in this order: the build, ctest, memcheck, DQN's 8 CartPole seeds
# with PPO's and SAC's seed 1 solo, DQN's 1,024 seeds in lockstep, PPO's 64 and SAC's 64, the speed
# part, and the python part last; none of what the second call measures.
cugym_run first --dry-run
order="$(grep -o -e 'scripts/build.sh build-gpu' -e 'ctest --test-dir' -e 'tool memcheck' -e 'python3 -m pytest' \
           -e 'cartpole.toml --device cuda --seed 8' -e 'cartpole_ppo.toml --device cuda --seed 1 ' \
           -e 'pendulum_sac.toml --device cuda --seed 1 ' -e 'cartpole.toml --device cuda --seeds 1-1024' \
           -e 'cartpole_ppo.toml --device cuda --seeds 1-64 ' -e 'pendulum_sac.toml --device cuda --seeds 1-64 ' \
           -e 'cugym bench --env CartPole' -e 'layer-norm off,on' "$tmp/out" | uniq | tr '\n' '|')"
want='scripts/build.sh build-gpu|ctest --test-dir|tool memcheck|cartpole.toml --device cuda --seed 8|'
want+='cartpole_ppo.toml --device cuda --seed 1 |pendulum_sac.toml --device cuda --seed 1 |'
want+='cartpole.toml --device cuda --seeds 1-1024|cartpole_ppo.toml --device cuda --seeds 1-64 |'
want+='pendulum_sac.toml --device cuda --seeds 1-64 |cugym bench --env CartPole|layer-norm off,on|python3 -m pytest|'
[ "$order" = "$want" ] || fail "first: the plan's order is '$order', want '$want'"
if grep -q -e racecheck -e acrobot -e Pendulum -e pqn -e 'cartpole_ppo.toml --device cuda --seeds 1-1024' \
     -e 'pendulum_sac.toml --device cuda --seeds 1-1024' "$tmp/out"; then
  fail "first: holds a part of the second call"
fi
grep -q "dry run of 'build dqn speed python'" "$tmp/out" || fail "first: not the parts build dqn speed python"
# --help prints the whole comment block at the top, the second call's lines and the budget included.
cugym_run --help
last="$(grep -B 1 '^set -uo pipefail' "$src/scripts/gpu-check.sh" | head -n 1 | sed 's/^# \{0,1\}//')"
if ! grep -q '^  call 2:' "$tmp/out" || [ "$(tail -n 1 "$tmp/out")" != "$last" ] || grep -q 'pipefail' "$tmp/out"; then
  fail "--help: not the whole header (want it to end with '$last'):"; tail -n 3 "$tmp/out" | sed 's/^/    /'
fi

# The deadline (CUGYM_GPU_CHECK_DEADLINE): a part made slow (CUGYM_GPU_CHECK_FAKE_SLOW, which sleeps
# even in a dry run) is cut off at the deadline less the reports' reserve, the parts after it are
# skipped with one line each, and the call ends in time with status 5; the part before it ran.
cugym_deadline() {  # cugym_deadline DEADLINE SLOW ARGS...
  local deadline=$1 slow=$2
  shift 2
  checks=$((checks + 1))
  CUGYM_GPU_CHECK_DEADLINE=$deadline CUGYM_GPU_CHECK_FAKE_SLOW=$slow bash "$src/scripts/gpu-check.sh" "$@" >"$tmp/out" 2>&1
}
cugym_deadline soon "" first --dry-run
if [ $? -ne 64 ] || ! grep -q 'CUGYM_GPU_CHECK_DEADLINE must be whole seconds' "$tmp/out"; then
  fail "a deadline of 'soon' is a usage error"
fi
cugym_deadline 10 dqn first --dry-run
if [ $? -ne 64 ] || ! grep -q 'CUGYM_GPU_CHECK_FAKE_SLOW must be PART:SECONDS' "$tmp/out"; then
  fail "a slow part without its seconds is a usage error"
fi
t0=$SECONDS
cugym_deadline 10 dqn:600 first --dry-run
got=$? took=$((SECONDS - t0))
if [ "$got" -ne 5 ] || [ "$took" -gt 10 ] || ! grep -q '^gpu-check: part build exit 0' "$tmp/out" ||
   ! grep -q '^gpu-check: part dqn cut off at its end, after [0-9]* s (the deadline less its reserve)' "$tmp/out" ||
   ! grep -q '^gpu-check: part dqn exit 5 ([0-9]* s, cut off)' "$tmp/out" ||
   [ "$(grep -c '^gpu-check: part speed skipped: 0 s left before the deadline' "$tmp/out")" -ne 1 ] ||
   [ "$(grep -c '^gpu-check: part python skipped: 0 s left before the deadline' "$tmp/out")" -ne 1 ] ||
   grep -q -e 'seeds 1-1024' -e 'cugym bench' -e 'pytest' "$tmp/out" ||
   ! grep -q '^gpu-check: parts: build 0, dqn 5 (cut off), speed 5 (skipped), python 5 (skipped); the worst: 5' "$tmp/out"; then
  fail "deadline 10 s, dqn made slow: exit $got after $took s (want 5 within 10 s, dqn cut, speed and python skipped):"
  sed 's/^/    /' "$tmp/out" | grep -v '^    +' | tail -n 20
fi
# A part's own cut-off (dqn: 200 s) is no later than the deadline allows; a slow part that ends
# within its time is no finding.
cugym_deadline 30 speed:1 speed --dry-run
# (How much of the 30 s is left when the part starts depends on the machine's load: any.)
if [ $? -ne 0 ] || ! grep -Eq '^gpu-check: part speed: up to [0-9]+ s \(its own cut-off 75 s; [0-9]+ s to the deadline\)' "$tmp/out"; then
  fail "deadline 30 s, speed made slow for 1 s: want it to pass within its time:"; sed 's/^/    /' "$tmp/out" | tail -n 8
fi
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  check 4 'no GPU here' -- build
  check 4 'no GPU here' -- speed dqn
  check 4 'no GPU here' -- first
  # One line names every missing piece: here at least the GPU.
  cugym_run dqn
  if [ "$(grep -c '^gpu-check: missing: ' "$tmp/out")" -ne 1 ] || ! grep -q '^gpu-check: missing: .*a GPU (nvidia-smi lists none)' "$tmp/out"; then
    fail "dqn without a GPU: want one 'missing:' line naming the GPU:"; sed 's/^/    /' "$tmp/out"
  fi
  # A failed probe does not stop the call: each later part is tried (and finds no GPU either).
  cugym_run build python
  got=$?
  if [ "$got" -ne 4 ] || ! grep -q 'python part: probe' "$tmp/out" ||
     ! grep -q '^gpu-check: parts: build 4, python 4; the worst: 4' "$tmp/out"; then
    fail "build python: want both parts tried after a failed probe, exit 4 (got $got):"; sed 's/^/    /' "$tmp/out" | tail -n 8
  fi
fi

report() { checks=$((checks + 1)); python3 "$src/scripts/gpu_check_report.py" "$@" >"$tmp/out" 2>&1; }

# The card: its copy bandwidth looked up by name where it is not measured (no CuPy or PyTorch here,
# or --no-measure): an H200 4.3e12, an H100 (80 GB HBM3) 3.0e12, another card none.
card() {  # card NAME FILE: the card's JSON, looked up by name
  report card --out "$2" --name "$1" --no-measure
}
card "NVIDIA H200" "$tmp/h200.json"
if [ $? -ne 0 ] || ! grep -q '^card: NVIDIA H200, copy bandwidth 4.30 TB/s (looked up by name' "$tmp/out"; then
  fail "card: an H200 is looked up at 4.3e12:"; sed 's/^/    /' "$tmp/out"
fi
card "NVIDIA H100 80GB HBM3" "$tmp/h100.json"
if [ $? -ne 0 ] || ! grep -q '^card: NVIDIA H100 80GB HBM3, copy bandwidth 3.00 TB/s' "$tmp/out"; then
  fail "card: an H100 is looked up at 3.0e12:"; sed 's/^/    /' "$tmp/out"
fi
card "NVIDIA H100 PCIe" "$tmp/other.json"
if [ $? -ne 0 ] || ! grep -q '"bytes_per_second": null' "$tmp/other.json"; then
  fail "card: a card not in the table has no bandwidth:"; sed 's/^/    /' "$tmp/out" "$tmp/other.json"
fi

# dqn on made-up runs: cartpole-cuda 2 of 3 at 475 and one cut off; acrobot-cuda one crash;
# mountain_car-cuda one graph fallback; cartpole-cpu one run cut off (reported only).
dqn="$tmp/dqn"
mkdir -p "$dqn"
make_run() {  # make_run GROUP SEED RETURN [LOG LINE [EXIT STATUS]]
  mkdir -p "$dqn/$1-$2"
  echo "{\"mean_return\": $3}" >"$dqn/$1-$2/eval.json"
  printf 'global_step,wall_time,episodic_return\n1000,2.5,10\n60000,4.5,20\n' >"$dqn/$1-$2/metrics.csv"
  echo "${4:-trained}" >"$dqn/$1-$2.log"
  echo "${5:-0}" >"$dqn/$1-$2.rc"
}
make_run cartpole-cuda 1 500
make_run cartpole-cuda 2 480.5
make_run cartpole-cuda 3 131
mkdir -p "$dqn/cartpole-cuda-4" && echo "step 40000" >"$dqn/cartpole-cuda-4.log" && echo 124 >"$dqn/cartpole-cuda-4.rc"
make_run acrobot-cuda 1 -80
echo "terminate called after throwing" >"$dqn/acrobot-cuda-2.log" && echo 134 >"$dqn/acrobot-cuda-2.rc"
make_run mountain_car-cuda 1 -101 "cugym train: CUDA graph capture failed (x); running updates eagerly"
mkdir -p "$dqn/cartpole-cpu-1" && echo "step 9000" >"$dqn/cartpole-cpu-1.log" && echo 124 >"$dqn/cartpole-cpu-1.rc"

dqn_report() { report dqn --dqn-dir "$dqn" --limit 120 "$@"; }
dqn_report --bar cartpole-cuda:475:2
if [ $? -ne 0 ] || ! grep -q '| cartpole-cuda | 4 | 2 | >= 475 in 2 | 1: 500.0, 2: 480.5, 3: 131.0, 4: cut off | 4.5 | pass (1 cut off at 120 s) |' "$tmp/out"; then
  fail "dqn report: a passing bar with a run cut off:"; sed 's/^/    /' "$tmp/out"
fi
dqn_report --bar cartpole-cuda:475:3
if [ $? -ne 3 ] || ! grep -q 'FAIL (fewer than 3)' "$tmp/out"; then
  fail "dqn report: a missed bar must exit 3 (a run cut off does not count as reached):"; sed 's/^/    /' "$tmp/out"
fi
dqn_report --bar acrobot-cuda:-100:1
if [ $? -ne 3 ] || ! grep -q 'seed 2: exit 134 (terminate called after throwing)' "$tmp/out"; then
  fail "dqn report: a crashed seed must fail its group:"; sed 's/^/    /' "$tmp/out"
fi
dqn_report --bar mountain_car-cuda:-110:0
if [ $? -ne 3 ] || ! grep -q 'seed 1: fell back from the CUDA graph' "$tmp/out"; then
  fail "dqn report: a graph fallback must fail even an unjudged group:"; sed 's/^/    /' "$tmp/out"
fi
dqn_report --bar cartpole-cpu:475:0
if [ $? -ne 0 ] || ! grep -q '| cartpole-cpu | 1 | 0 | >= 475, not judged | 1: cut off | - | reported (1 cut off at 120 s) |' "$tmp/out"; then
  fail "dqn report: a run cut off in an unjudged group is reported, not failed:"; sed 's/^/    /' "$tmp/out"
fi

# A batch of seeds (`cugym train --seeds`, issue 23): each seed's model must have the bytes of
# the solo run of that seed; other bytes fail the part.
batch="$dqn/cartpole-cuda-batch"
mkdir -p "$batch/seed_1" "$batch/seed_2"
echo same >"$dqn/cartpole-cuda-1/model.safetensors" && echo same >"$batch/seed_1/model.safetensors"
echo solo >"$dqn/cartpole-cuda-2/model.safetensors" && echo batch >"$batch/seed_2/model.safetensors"
cat >"$batch/summary.json" <<JSON
{"points": [{"point": "", "seeds": 2, "solved_final": 1, "runs": [
  {"seed": 1, "run_dir": "$batch/seed_1"}, {"seed": 2, "run_dir": "$batch/seed_2"}]}]}
JSON
echo 0 >"$batch.rc" && echo 17.4 >"$batch.seconds"
dqn_report --batch cartpole-cuda-batch:cartpole-cuda
if [ $? -ne 3 ] || ! grep -q 'FAIL (seeds \[2\]: other model bytes than the solo runs)' "$tmp/out"; then
  fail "dqn report: a batch seed whose model differs from its solo run's must fail:"; sed 's/^/    /' "$tmp/out"
fi
echo solo >"$batch/seed_2/model.safetensors"
dqn_report --batch cartpole-cuda-batch:cartpole-cuda
if [ $? -ne 0 ] || ! grep -q '2 runs, solved (final) 1, wall 17.4 s; the solo run.s model bytes: seeds \[1, 2\] the same: pass' "$tmp/out"; then
  fail "dqn report: a batch with the solo runs' models passes:"; sed 's/^/    /' "$tmp/out"
fi
# In lockstep (one batched network: on CUDA cuBLAS's batched GEMM, which may round otherwise than
# a solo run's) other bytes are judged on the goal's rate instead, 95% of the seeds solved, and
# reported as a finding.
echo batch >"$batch/seed_2/model.safetensors"
dqn_report --batch cartpole-cuda-batch:cartpole-cuda:lockstep
if [ $? -ne 3 ] || ! grep -q 'FAIL (other model bytes than the solo runs, and 50% solved: the goal.s rate is 95%)' "$tmp/out"; then
  fail "dqn report: a lockstep batch with other bytes and 1 of 2 solved fails:"; sed 's/^/    /' "$tmp/out"
fi
sed -i 's/"solved_final": 1/"solved_final": 2/' "$batch/summary.json"
dqn_report --batch cartpole-cuda-batch:cartpole-cuda:lockstep
if [ $? -ne 0 ] || ! grep -q 'lockstep, one process): 2 runs.*\[2\] other: pass on the rate (100% solved, >= 95%); finding: the batched GEMM rounds otherwise' "$tmp/out"; then
  fail "dqn report: a lockstep batch whose seeds are solved passes with other bytes:"; sed 's/^/    /' "$tmp/out"
fi
# The batch's own account of its time (its log's last note) comes with its line.
echo "cugym train: a batch of 2 agents took 17.20 s: setup 0.10 s, 60 iterations 12.00 s, the rest 5.10 s" \
  >"$batch.log"
# A speed goal: the wall time and 95% of the seeds solved.
dqn_report --batch cartpole-cuda-batch:cartpole-cuda:lockstep:20
if [ $? -ne 0 ] || ! grep -q 'goal met (20 s with 95% solved)' "$tmp/out" ||
   ! grep -q '^  a batch of 2 agents took 17.20 s: setup 0.10 s, 60 iterations' "$tmp/out"; then
  fail "dqn report: a batch within its speed goal passes, with where its time went:"; sed 's/^/    /' "$tmp/out"
fi
dqn_report --batch cartpole-cuda-batch:cartpole-cuda:lockstep:10
if [ $? -ne 3 ] || ! grep -q 'FAIL (goal: 10 s with 95% solved; 17.4 s, 100%)' "$tmp/out"; then
  fail "dqn report: a batch slower than its speed goal fails:"; sed 's/^/    /' "$tmp/out"
fi
# The time goals (set on an H200) stated for the card the batch ran on, every figure labelled.
dqn_report --batch cartpole-cuda-batch:cartpole-cuda:lockstep:20 --card "$tmp/h100.json"
if [ $? -ne 0 ] ||
   ! grep -q '^goal on NVIDIA H100 80GB HBM3: cartpole-cuda-batch within 20 s with 95% solved (the H200.s: the same GH100 chip and clocks, and the batch is launch-bound)' "$tmp/out" ||
   ! grep -q '^batch cartpole-cuda-batch on NVIDIA H100 80GB HBM3 (' "$tmp/out" || ! grep -q '^dqn verdict on NVIDIA H100 80GB HBM3: pass' "$tmp/out"; then
  fail "dqn report: the time goal stated for an H100:"; sed 's/^/    /' "$tmp/out"
fi
# A fallback from the CUDA graph inside a lockstep batch fails it, whatever its bytes and rate.
echo same >"$batch/seed_2/model.safetensors"
echo "cugym train: CUDA graph capture failed (operation not permitted); running updates eagerly" >>"$batch.log"
dqn_report --batch cartpole-cuda-batch:cartpole-cuda:lockstep:20
if [ $? -ne 3 ] || ! grep -q 'FAIL (fell back from the CUDA graph)' "$tmp/out"; then
  fail "dqn report: a lockstep batch that fell back from the CUDA graph fails:"; sed 's/^/    /' "$tmp/out"
fi
echo "cugym train: a batch of 2 agents took 17.20 s" >"$batch.log"
echo batch >"$batch/seed_2/model.safetensors"
sed -i 's/"solved_final": 2/"solved_final": 0/' "$batch/summary.json"
dqn_report --batch cartpole-cuda-batch:cartpole-cuda:lockstep
if [ $? -ne 3 ] || ! grep -q 'FAIL (other model bytes than the solo runs, and 0% solved' "$tmp/out"; then
  fail "dqn report: a lockstep batch with other bytes and unsolved seeds fails:"; sed 's/^/    /' "$tmp/out"
fi

# PPO's and SAC's lanes (--lanes GROUP:SEED:LOSSES): a completed lockstep batch and seed 1 solo with
# the same settings, no fallback from the CUDA graph, finite losses in every run, and seed 1's lane
# with the solo run's model bytes, or, where they differ, the short pair's (the first learning
# iterations) within 1e-3 normwise relative.
model() {  # model FILE DELTA: a model file of two F32 tensors, DELTA added to one weight
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
path, delta = sys.argv[1], float(sys.argv[2])
w, b = [1.0, -2.0 + delta, 3.0, 0.5], [0.25, 0.0]
header = {"__metadata__": {"cugym.algo": "ppo"},
          "0.weight": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
          "0.bias": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}}
h = json.dumps(header).encode()
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + struct.pack("<4f", *w) + struct.pack("<2f", *b))
PY
}
lanes_run() {  # lanes_run DIR [LOSS ROWS]: a run folder with metrics.csv and a model
  mkdir -p "$1"
  printf 'global_step,wall_time,policy_loss,value_loss\n512,1,,\n1024,2,%s\n2048,3,%s\n' "${2:-0.5,2.0}" "${3:-0.25,1.5}" \
    >"$1/metrics.csv"
  model "$1/model.safetensors" 0
}
lanes_batch() {  # lanes_batch GROUP: GROUP-batch with seeds 1 and 2
  local batch="$dqn/$1-batch"
  lanes_run "$batch/seed_1" && lanes_run "$batch/seed_2"
  printf '{"points": [{"point": "", "seeds": 2, "solved_final": 2, "runs": [{"seed": 1, "run_dir": "%s"}, {"seed": 2, "run_dir": "%s"}]}]}\n' \
    "$batch/seed_1" "$batch/seed_2" >"$batch/summary.json"
  echo 0 >"$batch.rc" && echo 12.5 >"$batch.seconds"
  echo "cugym train: a batch of 2 agents took 12.50 s: setup 0.50 s, 100 iterations 10.00 s, evaluations during training 1.00 s" >"$batch.log"
  echo "algo = \"ppo\"" >"$batch/seed_1/config.toml"
  printf 'num_envs = 4\nnum_steps = 128\ntotal_steps = 51200\n' >>"$batch/seed_1/config.toml"
}
lanes_report() { dqn_report --lanes "ppo-cuda:1:policy_loss,value_loss" "$@"; }
lanes_batch ppo-cuda
lanes_run "$dqn/ppo-cuda-1" && echo 0 >"$dqn/ppo-cuda-1.rc" && echo trained >"$dqn/ppo-cuda-1.log"
lanes_report --card "$tmp/h100.json"
if [ $? -ne 0 ] ||
   ! grep -q '^lanes ppo-cuda on NVIDIA H100 80GB HBM3 (.*): 2 runs, solved (final) 2, wall 12.5 s; losses (policy_loss, value_loss) finite; seed 1: the solo run.s model bytes: pass' "$tmp/out" ||
   ! grep -q '^  sizing: at this rate 20 s is about total_steps = 8.96e+04 (this run: total_steps 51200, 100 iterations of 512 env steps a lane in 10.0 s, the rest 2.5 s)' "$tmp/out"; then
  fail "dqn report: lanes with the solo run's bytes and finite losses pass (with the steps 20 s gives):"; sed 's/^/    /' "$tmp/out"
fi
# A loss that turned NaN (logged as nothing after a value), or inf, fails.
printf 'global_step,wall_time,policy_loss,value_loss\n1024,2,0.5,2.0\n2048,3,,1.5\n' >"$dqn/ppo-cuda-batch/seed_2/metrics.csv"
lanes_report
if [ $? -ne 3 ] || ! grep -q 'FAIL (losses not finite in 1 run(s) (2: policy_loss NaN at step 2048))' "$tmp/out"; then
  fail "dqn report: a lane whose loss turned NaN fails:"; sed 's/^/    /' "$tmp/out"
fi
lanes_run "$dqn/ppo-cuda-1" 0.5,inf
lanes_run "$dqn/ppo-cuda-batch/seed_2"
lanes_report
if [ $? -ne 3 ] || ! grep -q 'losses not finite in 1 run(s) (1 solo: value_loss inf at step 1024)' "$tmp/out"; then
  fail "dqn report: a solo run whose loss is inf fails:"; sed 's/^/    /' "$tmp/out"
fi
lanes_run "$dqn/ppo-cuda-1"
# A batch cut off is no completed run; one that fell back from the CUDA graph fails.
echo 124 >"$dqn/ppo-cuda-batch.rc"
lanes_report
if [ $? -ne 3 ] || ! grep -q 'FAIL (the batch was cut off (not a completed run))' "$tmp/out"; then
  fail "dqn report: lanes cut off fail:"; sed 's/^/    /' "$tmp/out"
fi
echo 0 >"$dqn/ppo-cuda-batch.rc"
echo "cugym train: CUDA graph capture failed (x); running updates eagerly" >>"$dqn/ppo-cuda-1.log"
lanes_report
if [ $? -ne 3 ] || ! grep -q 'FAIL (seed 1 solo fell back from the CUDA graph)' "$tmp/out"; then
  fail "dqn report: a solo run that fell back from the CUDA graph fails:"; sed 's/^/    /' "$tmp/out"
fi
echo trained >"$dqn/ppo-cuda-1.log"
# Other bytes: judged on the short pair (the first learning iterations) within 1e-3.
model "$dqn/ppo-cuda-1/model.safetensors" 1e-3
lanes_report
if [ $? -ne 3 ] || ! grep -q 'FAIL (seed 1: other model bytes than its solo run, and no short pair to compare)' "$tmp/out"; then
  fail "dqn report: other bytes and no short pair fail:"; sed 's/^/    /' "$tmp/out"
fi
lanes_batch ppo-cuda-short
lanes_run "$dqn/ppo-cuda-short-1" && model "$dqn/ppo-cuda-short-1/model.safetensors" 1e-5
lanes_report
if [ $? -ne 0 ] || ! grep -q 'seed 1: other model bytes than its solo run (.*); its first learning iterations within 0.001 (2.7e-06, normwise relative): pass' "$tmp/out"; then
  fail "dqn report: other bytes with the short pair within rounding pass:"; sed 's/^/    /' "$tmp/out"
fi
model "$dqn/ppo-cuda-short-1/model.safetensors" 0.1
lanes_report
if [ $? -ne 3 ] || ! grep -q 'FAIL (seed 1: other model bytes, and its first learning iterations 2.7e-02 from the solo run.s (> 0.001))' "$tmp/out"; then
  fail "dqn report: a short pair beyond rounding fails:"; sed 's/^/    /' "$tmp/out"
fi

# speed: the bound beside a CUDA env row, from the card's bandwidth; the nn row; a failed benchmark
# exits 3; every figure labelled with the card.
echo '{"env": "CartPole-v1", "device": "cuda", "hardware": "H", "num_envs": 1048576, "mode": "step", "steps_per_second": 2.75e10, "bytes_per_step": 78, "model_gbytes_per_second": 2145}' >"$tmp/env.jsonl"
echo '{"bench": "nn_update", "net": "4-120-84-2", "batch": 128, "loss": "mse", "max_grad_norm": 0, "device": "cuda", "mode": "graph", "hardware": "H", "updates_per_second": 40000.0, "note": ""}' >"$tmp/nn.jsonl"
speed() { report speed --env-jsonl "$tmp/env.jsonl" --nn-jsonl "$tmp/nn.jsonl" "$@"; }
speed --card "$tmp/h200.json"
if [ $? -ne 0 ] || ! grep -q '| 5.513e+10 | 50% |' "$tmp/out" || ! grep -q '| 40000 | 25.0 |' "$tmp/out" ||
   ! grep -q 'bound steps/s (4.30 TB/s)' "$tmp/out" || ! grep -q '^Env steps per second on NVIDIA H200,' "$tmp/out" ||
   ! grep -q '^speed verdict on NVIDIA H200: pass' "$tmp/out"; then
  fail "speed report: the bound at the H200's bandwidth and the nn row:"; sed 's/^/    /' "$tmp/out"
fi
speed --card "$tmp/h100.json"
if [ $? -ne 0 ] || ! grep -q '| 3.846e+10 | 72% |' "$tmp/out" || ! grep -q 'bound steps/s (3.00 TB/s)' "$tmp/out"; then
  fail "speed report: the bound at the H100's bandwidth:"; sed 's/^/    /' "$tmp/out"
fi
speed --card "$tmp/other.json"
if [ $? -ne 0 ] || ! grep -q '| 2145.0 | - | - |' "$tmp/out" || ! grep -q 'bound steps/s (bandwidth unknown)' "$tmp/out"; then
  fail "speed report: no bound for a card of unknown bandwidth:"; sed 's/^/    /' "$tmp/out"
fi
# MinAtar Breakout's goal (1e9 steps/s at 1M envs on the H200, scaled by the copy bandwidth on
# another card) is judged in mode fused; step is reported beside it.
echo '{"env": "MinAtar-Breakout-v1", "device": "cuda", "hardware": "H", "num_envs": 1048576, "mode": "step", "steps_per_second": 4.0e8, "bytes_per_step": 1700}' >>"$tmp/env.jsonl"
echo '{"env": "MinAtar-Breakout-v1", "device": "cuda", "hardware": "H", "num_envs": 1048576, "mode": "fused", "steps_per_second": 2.0e9, "bytes_per_step": 100}' >>"$tmp/env.jsonl"
speed --card "$tmp/h200.json"
if [ $? -ne 0 ] ||
   ! grep -q 'goal: MinAtar-Breakout-v1 step at N = 1048576 on NVIDIA H200: 4.000e+08 (reported: its goal, 1e+09, is judged in mode fused)' "$tmp/out" ||
   ! grep -q 'goal: MinAtar-Breakout-v1 fused at N = 1048576 on NVIDIA H200: 2.000e+09 >= goal 1e+09' "$tmp/out"; then
  fail "speed report: Breakout judged in mode fused, step reported:"; sed 's/^/    /' "$tmp/out"
fi
sed -i '$ s/2.0e9/8.0e8/' "$tmp/env.jsonl"
speed --card "$tmp/h200.json"
if [ $? -ne 3 ] || ! grep -q 'below its goal: MinAtar-Breakout-v1 fused at N = 1048576 on NVIDIA H200: 8.000e+08 < goal 1e+09' "$tmp/out"; then
  fail "speed report: Breakout below its goal in mode fused fails:"; sed 's/^/    /' "$tmp/out"
fi
# On an H100 the goal is 1e9 x 3.0 / 4.3: 8e8 meets it.
speed --card "$tmp/h100.json"
if [ $? -ne 0 ] ||
   ! grep -q 'goal on NVIDIA H100 80GB HBM3: MinAtar-Breakout-v1 6.98e+08 steps/s at 1M envs in mode fused (the H200.s 1e+09 x 0.70' "$tmp/out" ||
   ! grep -q 'goal: MinAtar-Breakout-v1 fused at N = 1048576 on NVIDIA H100 80GB HBM3: 8.000e+08 >= goal 6.98e+08' "$tmp/out"; then
  fail "speed report: Breakout's goal scaled to an H100's bandwidth:"; sed 's/^/    /' "$tmp/out"
fi
sed -i '$ d' "$tmp/env.jsonl"
echo '{"env": "Acrobot-v1", "device": "cuda", "num_envs": 1048576, "mode": "step", "failed": "exit 134"}' >>"$tmp/env.jsonl"
speed --card "$tmp/h200.json"
if [ $? -ne 3 ] || ! grep -q 'FAILED (exit 134)' "$tmp/out"; then
  fail "speed report: a failed benchmark must exit 3:"; sed 's/^/    /' "$tmp/out"
fi
# gpu-check.sh's first row of bench.jsonl names the card; it is no env row.
{ printf '{"card": %s}\n' "$(cat "$tmp/h100.json")"; head -n 1 "$tmp/env.jsonl"; } >"$tmp/env2.jsonl"
report speed --env-jsonl "$tmp/env2.jsonl" --nn-jsonl "$tmp/nn.jsonl" --card "$tmp/h100.json"
if [ $? -ne 0 ] || [ "$(grep -c '^| CartPole-v1 |' "$tmp/out")" -ne 1 ]; then
  fail "speed report: the card's row is not an env row:"; sed 's/^/    /' "$tmp/out"
fi

# sanitizer: a clean run passes, an unusable sanitizer and a cut-off run are reported, an error
# or a case failing under the tool fails.
san() {  # san NAME EXIT LINES...: one block of sanitize()'s log
  local name=$1 status=$2
  shift 2
  echo "=== sanitizer-$name"; printf '%s\n' "$@"; echo "sanitizer exit $status"
}
{ san memcheck-nn 0 '[  PASSED  ] 3 tests.' '========= ERROR SUMMARY: 0 errors'
  san racecheck-envs 99 '========= Error: Device not supported' '========= ERROR SUMMARY: 0 errors'
  san memcheck-agents 124 '[ RUN      ] DqnCuda.GraphReplayGivesTheEagerWeights'; } >"$tmp/san.log"
report sanitizer "$tmp/san.log" --seconds 5 --limit 60
if [ $? -ne 0 ] || ! grep -q 'memcheck-nn: pass, 3 test(s) passed' "$tmp/out" ||
   ! grep -q 'racecheck-envs: not usable here (Device not supported)' "$tmp/out" ||
   ! grep -q 'memcheck-agents: cut off at 60 s' "$tmp/out"; then
  fail "sanitizer report: pass, unusable, cut off:"; sed 's/^/    /' "$tmp/out"
fi
{ san memcheck-envs 99 '========= Invalid __global__ write of size 4 bytes' '========= ERROR SUMMARY: 1 error'
  san racecheck-nn 99 '========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)'
  san memcheck-agents 1 '[  FAILED  ] 1 test, listed below:' '========= ERROR SUMMARY: 0 errors'; } >"$tmp/san.log"
report sanitizer "$tmp/san.log" --seconds 5
if [ $? -ne 2 ] || ! grep -q 'memcheck-envs: FAIL (1 error(s)/hazard(s))' "$tmp/out" ||
   ! grep -q 'racecheck-nn: FAIL (2 error(s)/hazard(s))' "$tmp/out" || ! grep -q 'memcheck-agents: FAIL (exit 1)' "$tmp/out"; then
  fail "sanitizer report: errors, hazards and a failing case must fail:"; sed 's/^/    /' "$tmp/out"
fi
echo "sanitizer: not run (--rehearse: no GPU)" >"$tmp/san.log"
report sanitizer "$tmp/san.log" --seconds 0
if [ $? -ne 0 ] || ! grep -q 'sanitizer: not run (--rehearse: no GPU)' "$tmp/out"; then
  fail "sanitizer report: a sanitizer that did not run is reported:"; sed 's/^/    /' "$tmp/out"
fi

printf '  5 - a.test (Failed)\n  7 - b.test/cuda (Skipped)\n50%% tests passed, 1 tests failed out of 2\n' >"$tmp/ctest.log"
report ctest "$tmp/ctest.log" --build-seconds 3 --ctest-seconds 4
if ! grep -q 'ctest: 2 tests, 0 passed, 1 failed, 1 skipped' "$tmp/out" || ! grep -q 'failed: a.test' "$tmp/out"; then
  fail "report: ctest counts:"; sed 's/^/    /' "$tmp/out"
fi
# Two ctest runs in one log (the slow tests among the CUDA cases after the rest), summed; each
# pattern of CUDA case names counted, one that matches no test reported.
{ echo '1/3 Test  #1: Devices/Replicas.BatchedGemmIsEachProductOnItsOwn/cuda ....   Passed    0.05 sec'
  echo '2/3 Test  #2: AgentOpsAgreement.CudaGivesTheCpuBits ...................   Passed    0.30 sec'
  echo '3/3 Test  #3: Nets/CudaAgreement.ForwardBackwardAndLoss/mlp ...........***Failed    0.10 sec'
  echo '67% tests passed, 1 tests failed out of 3'
  echo 'No tests were found!!!'
  echo '1/1 Test #9: SacCuda.LanesGiveTheSoloRunsBits .........................   Passed    9.00 sec'
  echo '100% tests passed, 0 tests failed out of 1'; } >"$tmp/ctest.log"
report ctest "$tmp/ctest.log" --build-seconds 3 --ctest-seconds 4 --case PpoCuda --case SacCuda \
  --case 'Replicas.*(/cuda|Cuda)' --case CudaAgreement --card "$tmp/h200.json"
if [ $? -ne 0 ] || ! grep -q 'ctest: 4 tests, 3 passed, 1 failed, 0 skipped' "$tmp/out" ||
   ! grep -q '^CUDA cases by name: PpoCuda: none (no test has the name yet); SacCuda: 1 of 1 passed; Replicas.\*(/cuda|Cuda): 1 of 1 passed; CudaAgreement: 0 of 1 passed$' "$tmp/out" ||
   ! grep -q '^build part on NVIDIA H200: ' "$tmp/out"; then
  fail "report: two ctest runs summed, the CUDA cases by name:"; sed 's/^/    /' "$tmp/out"
fi
{ san memcheck-ppo-sac 0 '[==========] 0 tests from 0 test suites ran. (0 ms total)' '[  PASSED  ] 0 tests.'; } >"$tmp/san.log"
report sanitizer "$tmp/san.log" --seconds 1
if [ $? -ne 0 ] || ! grep -q 'memcheck-ppo-sac: pass, no case matched its filter (reported)' "$tmp/out"; then
  fail "sanitizer report: a filter that matches no case yet is reported:"; sed 's/^/    /' "$tmp/out"
fi

summary
