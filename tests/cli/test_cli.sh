#!/usr/bin/env bash
# Command-line checks: exit codes and the one-line errors of `cugym` on good and bad input.
# usage: test_cli.sh CUGYM_BINARY FIXTURES_DIR [CUGYM_BENCH_NN_BINARY [CUGYM_WRITE_POLICY_MODEL_BINARY]]
set -u
cugym=$1
fixtures=$2
source "$(dirname "$0")/common.sh"

trace=$fixtures/traces/CartPole-v1.csv

expect 0 'CartPole-v1 +\(4,\) +Discrete\(2\) +500 +475' -- list
expect 0 '"id": "CartPole-v1".*"n": 2' -- list --json
expect 0 '^Acrobot-v1 .* gymnasium/envs/classic_control/acrobot\.py \(Gymnasium [0-9.]+\)$' -- list
expect 0 '"id": "CartPole-v1".*"reference": "gymnasium/envs/classic_control/cartpole\.py \(Gymnasium' -- list --json
expect 0 '^cugym [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]+(-dirty)?|unknown)\); CUDA (yes \(archs [0-9a-z,-]+\)|no), SDL2 (yes|no), Box2D (yes|no), MinAtar (yes|no); BLAS cpu \(' -- --version
expect 0 '^\{"version": "[0-9]+\.[0-9]+\.[0-9]+ \(git [^)]+\)", "env": "CartPole-v1"' -- bench --steps 2 --repeats 1 --num-envs 4 --device cpu --json
expect 0 '"version": "[0-9.]+ \(git .*"id": "Acrobot-v1"' -- list --json
# Licences: cugym's (and its built-in envs') in --version and list, each loaded plugin's beside it.
expect 0 '^licence: cugym MIT \(LICENSE\)' -- --version
expect 0 '^  built-in envs: MIT \(cugym.s LICENSE\)$' -- list
expect 0 '"id": "CartPole-v1", "license": "MIT"' -- list --json
# Options ("ID:OPTION", MinAtar's full_action_space): an env without that option is one error line.
expect 2 "^cugym bench: error: --env 'CartPole-v1' has no option 'full_action_space' \(it has none\)$" -- \
  bench --env CartPole-v1:full_action_space --device cpu
expect 0 'usage: cugym bench' -- bench --help
expect 0 '"env": "CartPole-v1", "device": "cpu".*"num_envs": 64.*"steps_per_second": [0-9.e+]+' -- \
  bench --env CartPole-v1 --num-envs 64 --steps 20 --repeats 1 --device cpu --json
expect 0 'env steps/s' -- bench --num-envs 7 --steps 10 --repeats 2 --device cpu --mode fused
expect 0 '"mode": "actions".*"steps_per_second": [0-9.e+]+' -- \
  bench --env Acrobot-v1 --num-envs 9 --steps 70 --repeats 1 --device cpu --mode actions --json
expect 0 '"mode": "actions".*"steps_per_second": [0-9.e+]+' -- \
  bench --env Pendulum-v1 --num-envs 5 --steps 3 --repeats 1 --device cpu --mode actions --json
expect 2 "--mode must be step, fused or actions, got 'random'" -- bench --device cpu --mode random
expect 0 'device auto chose (cpu|cuda)' -- bench --num-envs 8 --steps 5 --repeats 1
expect 0 'PASS' -- replay --env CartPole-v1 --trace "$trace" --device cpu
expect 0 '"rows": [0-9]+.*"terminated_mismatches": 0.*"pass": true' -- replay --env CartPole-v1 --trace "$trace" --device cpu --json

# A trace with one wrong value: a mismatch is exit 1, and the report names the line.
awk -F, 'BEGIN{OFS=","} NR==4{$9=$9+0.01} {print}' "$trace" >"$tmp/wrong.csv"
expect 1 'next_state max error +0.01.*line 4, next_state_1' -- replay --env CartPole-v1 --trace "$tmp/wrong.csv" --device cpu
expect 0 'PASS' -- replay --env CartPole-v1 --trace "$tmp/wrong.csv" --device cpu --tol 0.02

# Unusable input: exit 2 with one line.
expect 2 "unknown env 'Nope-v0' \(known: CartPole-v1" -- bench --env Nope-v0
expect 2 '--num-envs must be positive, got 0' -- bench --num-envs 0 --device cpu
expect 2 '^cugym bench: error: --num-envs 2000000000 needs [0-9]+ MiB of cpu memory but only' -- \
  bench --num-envs 2000000000 --device cpu
# The library's errors name its parameters; the CLI says the flag when one was given, not a --set key.
expect 2 '^cugym train: error: num_envs must be > 0, got 0$' -- train --env CartPole-v1 --set num_envs=0 --out "$tmp/n0"
expect 2 '^cugym train: error: --num-envs must be > 0, got 0$' -- train --env CartPole-v1 --num-envs 0 --out "$tmp/n0"

# Many runs in one process: a batch folder with a run folder per (point, seed) and a summary.
expect 0 'learning_rate=2.3e-3 \| 2 \| [0-2]/2 ' -- train --env CartPole-v1 \
  --seeds 1-2 --sweep learning_rate=1e-3,2.3e-3 --total-steps 1000 --set eval_episodes=2 --out "$tmp/batch" --device cpu
[ -f "$tmp/batch/learning_rate=1e-3/seed_2/model.safetensors" ] && [ -f "$tmp/batch/summary.json" ] ||
  fail "no run folder learning_rate=1e-3/seed_2 or summary.json"
expect 0 'learning_rate=1e-3 \| 2 \|' -- train --resume "$tmp/batch" --device cpu
# In lockstep (one batched network): the bits of the same point trained apart.
expect 0 '\(config\) \| 2 \|' -- train --env CartPole-v1 --seeds 1-2 --lockstep on --set learning_rate=1e-3 \
  --total-steps 1000 --set eval_episodes=2 --out "$tmp/lockstep" --device cpu
cmp -s "$tmp/lockstep/seed_2/model.safetensors" "$tmp/batch/learning_rate=1e-3/seed_2/model.safetensors" ||
  fail "--lockstep on: seed 2's model differs from the same point trained apart"
expect 2 "^cugym train: error: --lockstep takes on, off or auto, got 'yes'" -- \
  train --env CartPole-v1 --seeds 1-2 --lockstep yes --out "$tmp/b2" --device cpu
expect 2 "^cugym train: error: --lockstep goes with --seeds or --sweep" -- \
  train --env CartPole-v1 --lockstep on --out "$tmp/b2" --device cpu
expect 0 "each grid point's seeds in lockstep as one batch" -- \
  train --env CartPole-v1 --set algo=pqn --seeds 1-2 --lockstep on --jobs 1 --total-steps 1024 --out "$tmp/pqn_lanes" \
  --device cpu
expect 2 "^cugym train: error: --sweep key 'hidden_sizes' cannot vary within one batch" -- \
  train --seeds 1-2 --sweep hidden_sizes=[64] --out "$tmp/b2" --device cpu
expect 2 "^cugym train: error: --seeds '1-x': 'x' is not a seed" -- train --seeds 1-x --out "$tmp/b2" --device cpu
expect 2 '^cugym train: error: --seeds and --sweep need --out DIR' -- train --seeds 1-2 --device cpu
expect 2 "^cugym train: error: batch folder .*/batch exists and is not empty" -- \
  train --seeds 1-2 --out "$tmp/batch" --device cpu
expect 2 '--num-envs: expected an integer' -- bench --num-envs lots
expect 2 "^cugym bench: error: unknown flag '--frobnicate' \(see cugym bench --help\)$" -- bench --frobnicate
expect 2 "unknown device 'tpu'" -- bench --device tpu
expect 2 '--steps must be positive' -- bench --steps -3 --device cpu
expect 2 "trace file '/nonexistent.csv' does not exist" -- replay --env CartPole-v1 --trace /nonexistent.csv
expect 2 'malformed.csv line 3, column 3 \(state_2\): expected a number' -- \
  replay --env CartPole-v1 --trace "$fixtures/bad/malformed.csv" --device cpu
expect 2 "trace has no column 'state_2'" -- replay --env CartPole-v1 --trace "$fixtures/traces/MountainCar-v0.csv" --device cpu
expect 2 'is a directory' -- replay --env CartPole-v1 --trace "$fixtures"
expect 2 '--trace is required' -- replay --env CartPole-v1
expect 2 "unknown command 'trian'" -- trian

# Seeds are integers >= 0 in every command that takes one (a negative one must not wrap around).
expect 2 '^cugym bench: error: --seed must be >= 0, got -1$' -- bench --seed -1 --device cpu --num-envs 8 --steps 1
expect 2 '^cugym train: error: --seed must be >= 0, got -1$' -- train --seed -1 --device cpu --out "$tmp/neg"
[ -e "$tmp/neg" ] && fail "train with a negative seed created its run folder"
expect 2 '^cugym eval: error: --seed must be >= 0, got -2$' -- \
  eval --model "$tmp/none.safetensors" --seed -2 --device cpu
expect 2 '^cugym bench: error: --seed: expected an integer, got' -- bench --seed 99999999999999999999 --device cpu
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi >/dev/null 2>&1; then
  expect 2 '--device cuda: ' -- bench --device cuda --num-envs 8 --steps 1
  expect 2 '--device cuda: ' -- replay --env CartPole-v1 --trace "$trace" --device cuda
fi

# The benchmark programs read their flags with the same parser: a bad value is one line, exit 2.
if [ $# -ge 3 ]; then
  cugym_main=$cugym
  cugym=$3
  expect 2 "^cugym_bench_nn: error: --seconds: expected a number, got '1x'$" -- --seconds 1x --device cpu
  expect 2 "^cugym_bench_nn: error: --batch: expected an integer, got '12k'$" -- --batch 12k --device cpu
  expect 2 "^cugym_bench_nn: error: unknown flag '--sec' \(see cugym_bench_nn --help\)$" -- --sec 1
  expect 0 'usage: cugym_bench_nn' -- --help
  # PQN's network with its LayerNorms (the GPU check's row for their parameter gradient), in small.
  expect 0 '"bench": "nn_train", "net": "6x6x2c4-8-3", .*"layer_norm": true, .*"updates_per_second": [0-9]' -- \
    --device cpu --nets 6x6x2c4-8-3 --layer-norm on --batch 4 --losses mse --parts train --seconds 0.01 --json
  expect 2 "^cugym_bench_nn: error: --layer-norm takes off and on, got 'yes'$" -- --layer-norm yes --device cpu
  cugym=$cugym_main
fi

# PPO policy model files (a hand-made actor written by cugym_write_policy_model): eval on a Box env
# and a Discrete one, record with float actions, and the refusals of the other action space.
if [ $# -ge 4 ]; then
  writer=$4
  "$writer" "$tmp/pendulum.safetensors" Pendulum-v1 --normalize && "$writer" "$tmp/squash.safetensors" Pendulum-v1 \
    --squash && "$writer" "$tmp/cartpole.safetensors" CartPole-v1 || fail "cugym_write_policy_model failed"
  expect 0 '^Pendulum-v1, 10 episodes: mean return -[0-9.]+ \+- [0-9.]+, min -[0-9.]+, max -[0-9.]+, mean length 200\.0$' \
    -- eval --model "$tmp/pendulum.safetensors" --episodes 10 --num-envs 4 --device cpu
  expect 0 '"env": "Pendulum-v1", "model": ".*squash.safetensors", "device": "cpu", "episodes": 6, "mean_return": -' \
    -- eval --model "$tmp/squash.safetensors" --episodes 6 --num-envs 3 --device cpu --json
  expect 0 '^CartPole-v1, 5 episodes: mean return [0-9.]+' -- eval --model "$tmp/cartpole.safetensors" --episodes 5 \
    --device cpu
  expect 0 '^CartPole-v1, 5 episodes: ' -- eval --model "$tmp/cartpole.safetensors" --episodes 5 --epsilon 0.5 --device cpu
  expect 2 '^cugym eval: error: epsilon-greedy needs discrete actions, but Pendulum-v1 has Box\(1,\) float32 actions' -- \
    eval --model "$tmp/pendulum.safetensors" --epsilon 0.1 --device cpu
  expect 2 "^cugym eval: error: .*pendulum.safetensors is a gaussian policy \(continuous actions\), but CartPole-v1 has Discrete\(2\) actions$" \
    -- eval --model "$tmp/pendulum.safetensors" --env CartPole-v1 --device cpu
  expect 2 "^cugym record: error: .*cartpole.safetensors is a categorical policy \(discrete actions\), but Pendulum-v1 has Box\(1,\) float32 actions$" \
    -- record --model "$tmp/cartpole.safetensors" --env Pendulum-v1 --out "$tmp/no.png" --device cpu
  # record: the policy's frames (float actions), not the random ones of the same seed.
  run record --model "$tmp/pendulum.safetensors" --out "$tmp/ppo-frames" --max-frames 6 --num-envs 2 --device cpu ||
    fail "record --model (PPO, Pendulum-v1): $(cat "$tmp/err")"
  [ "$(ls "$tmp/ppo-frames" | grep -c '^frame_[0-9]\{5\}\.png$')" -eq 6 ] ||
    fail "record --model (PPO) wrote $(ls "$tmp/ppo-frames" | wc -l) frames, not 6"
  run record --env Pendulum-v1 --out "$tmp/random-frames" --max-frames 6 --num-envs 2 --device cpu ||
    fail "record Pendulum-v1 at random: $(cat "$tmp/err")"
  checks=$((checks + 1))
  cmp -s "$tmp/ppo-frames/frame_00005.png" "$tmp/random-frames/frame_00005.png" &&
    fail "record --model (PPO) drew the random actions' frame"
  run record --model "$tmp/squash.safetensors" --out "$tmp/ppo-squash.png" --device cpu &&
    [ "$(head -c 4 "$tmp/ppo-squash.png" | tail -c 3)" = PNG ] || fail "record --model (PPO, squash): $(cat "$tmp/err")"
  run record --model "$tmp/cartpole.safetensors" --out "$tmp/ppo-cartpole.png" --device cpu &&
    [ -s "$tmp/ppo-cartpole.png" ] || fail "record --model (PPO, CartPole-v1): $(cat "$tmp/err")"
fi

# Box2D envs (built when Box2D is found): listed with where they step, benchmarked, and bad
# actions refused with one line.
if "$cugym" list | grep -q LunarLander-v3; then
  expect 0 'LunarLander-v3 +\(8,\) +Discrete\(4\) +1000 +200 +cpu threads' -- list
  expect 0 'LunarLanderContinuous-v3 +\(8,\) +Box\(2,\) float32 +1000 +200 +cpu threads' -- list
  expect 0 '"id": "LunarLander-v3".*"host_stepped": true' -- list --json
  expect 0 '"env": "LunarLanderContinuous-v3".*"steps_per_second"' -- \
    bench --env LunarLanderContinuous-v3 --num-envs 16 --steps 20 --repeats 1 --device cpu --json
  # One-row traces: a Box action for the discrete id, an out-of-range action, a NaN action.
  header() { for k in $(seq 0 37); do printf 'state_%d,' "$k"; done; printf '%s' "$1"; printf ',reward,terminated'
             for k in $(seq 0 37); do printf ',next_state_%d' "$k"; done; for k in $(seq 0 7); do printf ',next_obs_%d' "$k"; done; echo; }
  zeros() { local n=$1 line=; for _ in $(seq 1 "$n"); do line+="0,"; done; echo "${line%,}"; }
  { header action_0,action_1; zeros 88; } >"$tmp/box.csv"
  { header action; echo "$(zeros 38),7,$(zeros 48)"; } >"$tmp/range.csv"
  { header action_0,action_1; echo "$(zeros 38),nan,0,$(zeros 48)"; } >"$tmp/nan.csv"
  expect 2 "trace has no column 'action'" -- replay --env LunarLander-v3 --trace "$tmp/box.csv" --device cpu
  expect 2 'action 7.000000 is not in Discrete\(4\)' -- replay --env LunarLander-v3 --trace "$tmp/range.csv" --device cpu
  expect 2 'LunarLanderContinuous-v3: action\[0\] of env 0 is NaN' -- \
    replay --env LunarLanderContinuous-v3 --trace "$tmp/nan.csv" --device cpu
  if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi >/dev/null 2>&1; then
    expect 2 '--device cuda: ' -- bench --env LunarLander-v3 --device cuda --num-envs 8 --steps 1
  fi
else
  # A build without Box2D says what LunarLander needs, not "unknown env".
  expect 2 "^cugym bench: error: env 'LunarLander-v3' needs Box2D, which this cugym was built without: install it" -- \
    bench --env LunarLander-v3 --device cpu
fi

# The shipped MinAtar plugin loads without --plugin from lib/cugym/plugins beside the program's
# folder; a copy of the program elsewhere says where the games went and how to load them.
if "$cugym" --version | grep -q 'MinAtar yes'; then
  expect 0 'MinAtar-Breakout-v1 +\(10,10,4\) +Discrete\(3\)' -- list
  # One id per game; the full action set is its option, listed apart; the old -v0 ids still load.
  if "$cugym" list | grep -Eq '^MinAtar-[A-Za-z]+-v0 '; then fail "list shows a MinAtar -v0 id"; fi
  checks=$((checks + 1))
  expect 0 '^  MinAtar-Breakout-v1:full_action_space +action space Discrete\(6\)$' -- list
  expect 0 '^  MinAtar-Breakout-v0 += MinAtar-Breakout-v1:full_action_space$' -- list
  expect 0 '"env": "MinAtar-Breakout-v1:full_action_space"' -- \
    bench --env MinAtar-Breakout-v1:full_action_space --steps 2 --repeats 1 --num-envs 4 --device cpu --json
  expect 0 '^cugym: note: MinAtar-Breakout-v0 \(all six actions\) is now MinAtar-Breakout-v1 with full_action_space: name it MinAtar-Breakout-v1:full_action_space \(CLI, configs\)' -- \
    bench --env MinAtar-Breakout-v0 --steps 2 --repeats 1 --num-envs 4 --device cpu
  [ "$(grep -c 'note:' "$tmp/err")" -eq 1 ] || fail "the old id's note is not one line: $(cat "$tmp/err")"
  checks=$((checks + 1))
  expect 2 "^cugym bench: error: --env 'MinAtar-Breakout-v1' has no option 'full' \(its options: full_action_space\)$" -- \
    bench --env MinAtar-Breakout-v1:full --device cpu
  # The plugin's licence: GPL-3.0-only, in --version, list and list --json.
  expect 0 '^licence: cugym MIT \(LICENSE\); plugin .*/libcugym_minatar\.so GPL-3.0-only$' -- --version
  expect 0 '^  MinAtar-Breakout-v1, MinAtar-Freeway-v1, .*MinAtar-Seaquest-v1: GPL-3.0-only \(plugin .*libcugym_minatar\.so\)$' -- list
  expect 0 '"id": "MinAtar-Breakout-v1", "license": "GPL-3.0-only"' -- list --json
  mkdir -p "$tmp/alone" && cp "$cugym" "$tmp/alone/cugym"
  "$tmp/alone/cugym" list >"$tmp/out" 2>&1
  grep -q "not available here: MinAtar-Asterix-v1, .*MinAtar-SpaceInvaders-v0" "$tmp/out" &&
    grep -q "each is in the MinAtar plugin .*which was not found in .*load it with --plugin PATH" "$tmp/out" ||
    fail "list without the plugin: $(cat "$tmp/out")"
  checks=$((checks + 1))
  "$tmp/alone/cugym" bench --env MinAtar-Breakout-v1 --device cpu >"$tmp/out" 2>&1
  [ $? -eq 2 ] && grep -q "env 'MinAtar-Breakout-v1' is in the MinAtar plugin" "$tmp/out" ||
    fail "bench MinAtar without the plugin: $(cat "$tmp/out")"
  checks=$((checks + 1))
fi

summary
