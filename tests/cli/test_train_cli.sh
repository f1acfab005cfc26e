#!/usr/bin/env bash
# `cugym train` and `cugym eval` end to end: the run folder's files, JSON output, refusals of bad
# input, Ctrl-C and SIGTERM checkpoints with their exit statuses (130, 143; --seeds too) and --resume,
# and the plugin's env trained briefly.
# usage: test_train_cli.sh CUGYM_BINARY
# CUGYM_SHORT_E2E=1 (the sanitizer build's ctest sets it) resumes the interrupted run to 20k steps
# instead of 50k: the same code, less than half the time.
set -u
cugym=$1
resume_to=50000
[ "${CUGYM_SHORT_E2E:-0}" = 1 ] && resume_to=20000
source "$(dirname "$0")/common.sh"
expect_error() {  # expect_error PATTERN ARGS...: exit 2, one line naming the problem
  local pattern=$1
  shift
  run "$@"
  local rc=$?
  if [ $rc -ne 2 ] || ! grep -Eq -- "$pattern" "$tmp/err" || [ "$(grep -c error "$tmp/err")" -ne 1 ]; then
    fail "cugym $* -> exit $rc, want 2 and /$pattern/:"
    sed 's/^/    /' "$tmp/out" "$tmp/err"
  fi
}

# A short run: every file of the run folder, CleanRL's metric names, a model eval can read.
run train --env CartPole-v1 --device cpu --out "$tmp/run" --total-steps 3000 --set learning_starts=500 \
  --set eval_episodes=12 --set eval_interval=1000 --set checkpoint_interval=1000 --set keep_checkpoints=2 ||
  fail "train: $(cat "$tmp/err")"
for f in config.toml metrics.csv evals.csv best.safetensors model.safetensors eval.json; do
  [ -s "$tmp/run/$f" ] || fail "no $f in the run folder"
done
[ "$(head -1 "$tmp/run/metrics.csv")" = "global_step,wall_time,episodic_return,episodic_length,td_loss,q_values,epsilon,sps,eval_return" ] ||
  fail "metrics.csv header: $(head -1 "$tmp/run/metrics.csv")"
[ "$(wc -l <"$tmp/run/evals.csv")" -eq 4 ] || fail "evals.csv: $(cat "$tmp/run/evals.csv")"  # header + 1000, 2000, 3000
grep -Eq '"threshold": 475, "best": \{"global_step": [123]000, .*"threshold_step": (null|[0-9]+)' "$tmp/run/eval.json" ||
  fail "eval.json: $(cat "$tmp/run/eval.json")"
[ "$(ls "$tmp/run/checkpoints" | wc -l)" -eq 2 ] || fail "keep_checkpoints=2 kept $(ls "$tmp/run/checkpoints" | wc -l)"
grep -q '^total_steps = 3000$' "$tmp/run/config.toml" || fail "config.toml lacks the resolved total_steps"
grep -q '^learning_starts = 500$' "$tmp/run/config.toml" || fail "config.toml lacks the --set value"
run eval --model "$tmp/run/model.safetensors" --episodes 7 --num-envs 3 --device cpu --json
grep -Eq '"env": "CartPole-v1".*"episodes": 7.*"mean_return": [0-9.]+.*"std_return"' "$tmp/out" || fail "eval --json: $(cat "$tmp/out" "$tmp/err")"
# eval.json's final evaluation is cugym eval's with one env per episode and the run's seed + 1000003.
seed=$(sed -n 's/^seed = //p' "$tmp/run/config.toml")
run eval --model "$tmp/run/model.safetensors" --episodes 12 --num-envs 12 --seed $((seed + 1000003)) --device cpu --json
for key in mean_return std_return mean_length; do
  [ "$(grep -o "\"$key\": [-0-9.e+]*" "$tmp/out")" = "$(grep -o "\"$key\": [-0-9.e+]*" "$tmp/run/eval.json" | head -1)" ] ||
    fail "eval.json's $key is not cugym eval's: $(cat "$tmp/out" "$tmp/run/eval.json")"
done

# Without --config, an env's shipped config is used (and said); an env without one gets the defaults.
run train --env Acrobot-v1 --device cpu --out "$tmp/acro" --total-steps 600 --set learning_starts=200 \
  --set eval_episodes=1 || fail "train Acrobot: $(cat "$tmp/err")"
grep -q "hyperparameters of configs/acrobot.toml" "$tmp/err" || fail "train --env Acrobot-v1 did not say its config: $(cat "$tmp/err")"
grep -q '^anneal_lr = true$' "$tmp/acro/config.toml" || fail "train --env Acrobot-v1 did not use configs/acrobot.toml"
grep -q '^total_steps = 600$' "$tmp/acro/config.toml" || fail "--total-steps did not override the shipped config"
run train --env CartPole-v1 --config "$(dirname "$0")/../../configs/cartpole_cleanrl.toml" --device cpu \
  --out "$tmp/clean" --total-steps 600 --set learning_starts=200 --set eval_episodes=1 || fail "train --config: $(cat "$tmp/err")"
! grep -q "hyperparameters of" "$tmp/err" || fail "--config FILE still announced a shipped config"
# An env with a Box of actions and no DQN config gets its SAC one where one ships, else its PPO one;
# --set algo=ppo picks PPO's.
run train --env Pendulum-v1 --device cpu --out "$tmp/pend" --total-steps 1600 --set eval_episodes=2 ||
  fail "train Pendulum-v1: $(cat "$tmp/err")"
grep -q "hyperparameters of configs/pendulum_sac.toml" "$tmp/err" || fail "train --env Pendulum-v1: $(cat "$tmp/err")"
grep -q '^algo = "sac"$' "$tmp/pend/config.toml" || fail "train --env Pendulum-v1 did not train SAC"
head -1 "$tmp/pend/metrics.csv" | grep -q ',qf1_loss,qf2_loss,qf1_values,actor_loss,alpha,alpha_loss,entropy,' ||
  fail "a SAC run's metrics.csv lacks SAC's columns: $(head -1 "$tmp/pend/metrics.csv")"
run train --env MountainCarContinuous-v0 --device cpu --out "$tmp/mcc" --total-steps 400 --set learning_starts=200 \
  --set eval_episodes=1 || fail "train MountainCarContinuous-v0: $(cat "$tmp/err")"
grep -q "hyperparameters of configs/mountain_car_continuous_sac.toml" "$tmp/err" ||
  fail "train --env MountainCarContinuous-v0: $(cat "$tmp/err")"
run train --env Pendulum-v1 --set algo=ppo --device cpu --out "$tmp/pend_ppo" --total-steps 4096 --set eval_episodes=2 ||
  fail "train Pendulum-v1 with algo=ppo: $(cat "$tmp/err")"
grep -q "hyperparameters of configs/pendulum_ppo.toml" "$tmp/err" || fail "--set algo=ppo: $(cat "$tmp/err")"
head -1 "$tmp/pend_ppo/metrics.csv" | grep -q ',policy_loss,value_loss,entropy,' ||
  fail "a PPO run's metrics.csv lacks PPO's columns: $(head -1 "$tmp/pend_ppo/metrics.csv")"

# Bad input.
expect_error "run folder .* exists and is not empty" train --env CartPole-v1 --device cpu --out "$tmp/run"
expect_error "DQN needs a discrete action space, but Pendulum-v1 has Box" train --env Pendulum-v1 --set algo=dqn --device cpu --out "$tmp/p"
expect_error "clip_coef is a PPO key \(algo = \"ppo\"\) \(algo is \"dqn\"\), got 0.1" train --device cpu --out "$tmp/x" --set clip_coef=0.1
expect_error 'policy = "categorical" does not fit Pendulum-v1' train --env Pendulum-v1 --set algo=ppo --set policy=categorical --device cpu --out "$tmp/x"
expect_error 'policy is a PPO key \(algo = "ppo"\) \(algo is "sac"\)' train --env Pendulum-v1 --set policy=categorical --device cpu --out "$tmp/x"
expect_error "SAC needs a flat Box of actions, but CartPole-v1 has Discrete\(2\) actions" train --env CartPole-v1 --set algo=sac --device cpu --out "$tmp/x"
expect_error "alpha is a SAC key \(algo = \"sac\"\) \(algo is \"dqn\"\), got 0.5" train --device cpu --out "$tmp/x" --set alpha=0.5
expect_error "unknown config key 'learnig_rate'" train --device cpu --out "$tmp/x" --set learnig_rate=1e-3
expect_error "learning_rate must be in \(0, 1\), got -0.001" train --device cpu --out "$tmp/x" --set learning_rate=-1e-3
expect_error "batch_size must not exceed buffer_size" train --device cpu --out "$tmp/x" --set buffer_size=10
expect_error "gamma must be in \[0, 1\]" train --device cpu --out "$tmp/x" --set gamma=2
expect_error "cannot open config" train --config "$tmp/none.toml" --device cpu --out "$tmp/x"
# A folder or an endless device given as the config is refused, not read as an empty config.
expect_error "^cugym train: error: --config '$tmp' is a folder, not a file$" train --config "$tmp" --device cpu --out "$tmp/x"
expect_error "--config '/dev/zero' is larger than 1048576 bytes" train --config /dev/zero --device cpu --out "$tmp/x"
[ ! -e "$tmp/x" ] || fail "a refused config left a run folder"
printf 'gamma = 0.99\ngamma = 0.9\n' >"$tmp/dup.toml"
expect_error "dup.toml line 2: gamma is set twice" train --config "$tmp/dup.toml" --device cpu --out "$tmp/x"
# A malformed value is an error naming where it is, not a string that fails (or not) later.
expect_error "^cugym train: error: --set learning_rate: cannot read the value '1e-3x'$" \
  train --device cpu --out "$tmp/x" --set learning_rate=1e-3x
printf '[dqn]\ngamma = 0.99\n[dqn]\nseed = 2\n' >"$tmp/twice.toml"
expect_error "twice.toml line 3: table \[dqn\] is defined twice \(first on line 1\)" \
  train --config "$tmp/twice.toml" --device cpu --out "$tmp/x"
expect_error "no config.toml there" train --resume "$tmp/nowhere"
expect_error "does not fit Acrobot-v1" eval --model "$tmp/run/model.safetensors" --env Acrobot-v1 --device cpu
expect_error "no such file|cannot open|cannot read" eval --model "$tmp/missing.safetensors" --device cpu
expect_error "$tmp/run: is a folder, not a safetensors file" eval --model "$tmp/run" --device cpu
head -c 100 "$tmp/run/model.safetensors" >"$tmp/cut.safetensors"
expect_error "cut.safetensors" eval --model "$tmp/cut.safetensors" --device cpu
[ -e "$tmp/x" ] && [ -n "$(ls -A "$tmp/x" 2>/dev/null)" ] && fail "a refused run left files in $tmp/x"

# signal_run NAME SIGNAL RUNS ARGS...: trains into $tmp/NAME, sends SIGNAL once RUNS metrics.csv
# files there have a few rows, waits; the exit status in $rc and the output in $tmp/NAME.out.
signal_run() {
  local name=$1 signal=$2 runs=$3
  shift 3
  "$cugym" train "$@" --out "$tmp/$name" >"$tmp/$name.out" 2>&1 &
  local pid=$!
  for _ in $(seq 200); do
    local logging=0 f
    while read -r f; do [ -n "$f" ] && [ "$(wc -l <"$f")" -gt 2 ] && logging=$((logging + 1)); done \
      < <(find "$tmp/$name" -name metrics.csv 2>/dev/null)
    [ $logging -ge "$runs" ] && break
    sleep 0.1
  done
  kill "-$signal" $pid
  wait $pid
  rc=$?
}

# Ctrl-C: a checkpoint, exit 130 (SIGTERM: 143), and --resume continues to the end.
checks=$((checks + 1))
signal_run long INT 1 --env CartPole-v1 --device cpu --total-steps 2000000 --set checkpoint_interval=0 \
  --set stop_at_threshold=false
if [ $rc -ne 130 ] || ! grep -q "interrupted at step .*cugym train --resume" "$tmp/long.out"; then
  fail "SIGINT: exit $rc (want 130), $(cat "$tmp/long.out")"
fi
[ "$(ls "$tmp/long/checkpoints" | wc -l)" -eq 1 ] || fail "SIGINT wrote no checkpoint"
run train --resume "$tmp/long" --total-steps $resume_to --set eval_episodes=2 --device cpu
{ [ $? -eq 0 ] && grep -q "resuming" "$tmp/err" && [ -s "$tmp/long/model.safetensors" ]; } || fail "resume: $(cat "$tmp/out" "$tmp/err")"
[ "$(tail -1 "$tmp/long/metrics.csv" | cut -d, -f1)" = "$resume_to" ] || fail "resume did not reach $resume_to: $(tail -1 "$tmp/long/metrics.csv")"

# SIGTERM: exit 143 after its checkpoint.
checks=$((checks + 1))
signal_run term TERM 1 --env CartPole-v1 --device cpu --total-steps 2000000 --set checkpoint_interval=0 \
  --set stop_at_threshold=false
if [ $rc -ne 143 ] || ! grep -q "interrupted at step" "$tmp/term.out"; then
  fail "SIGTERM: exit $rc (want 143), $(cat "$tmp/term.out")"
fi
[ "$(ls "$tmp/term/checkpoints" | wc -l)" -eq 1 ] || fail "SIGTERM wrote no checkpoint"
# A batch (--seeds) the same way: every run's checkpoint, then 130 or 143.
for signal in INT TERM; do
  checks=$((checks + 1))
  signal_run "seeds_$signal" $signal 2 --env CartPole-v1 --device cpu --seeds 1-2 --jobs 2 --total-steps 2000000 \
    --set checkpoint_interval=0 --set stop_at_threshold=false
  want=130
  [ $signal = TERM ] && want=143
  if [ $rc -ne $want ] || ! grep -q "^interrupted: every run that had started wrote a checkpoint" "$tmp/seeds_$signal.out"; then
    fail "--seeds, SIG$signal: exit $rc (want $want), $(cat "$tmp/seeds_$signal.out")"
  fi
  for seed in 1 2; do
    [ "$(ls "$tmp/seeds_$signal/seed_$seed/checkpoints" 2>/dev/null | wc -l)" -eq 1 ] ||
      fail "--seeds, SIG$signal: seed $seed wrote no checkpoint"
  done
done

# The same run whichever kernels OpenBLAS picks for this CPU (OPENBLAS_CORETYPE; Prescott's SSE3
# kernels run anywhere): the CPU back end's small GEMMs are its own fused multiply-add chains, so
# a run does not depend on the BLAS kernel a CPU model gets. Without them Prescott's and Haswell's
# kernels train the shipped CartPole config to different weights within 3,000 steps.
cores=(Prescott)
grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && cores+=(Haswell)
grep -qw avx512f /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo && cores+=(SkylakeX)
for core in "${cores[@]}"; do
  OPENBLAS_CORETYPE=$core run train --env CartPole-v1 --device cpu --out "$tmp/core-$core" --total-steps 3000 \
    --set eval_episodes=0 || fail "train with OPENBLAS_CORETYPE=$core: $(cat "$tmp/err")"
  cmp -s "$tmp/core-Prescott/model.safetensors" "$tmp/core-$core/model.safetensors" ||
    fail "OPENBLAS_CORETYPE=$core trained other weights than Prescott's kernels"
done
[ ${#cores[@]} -gt 1 ] || echo "note: this CPU runs only OpenBLAS's Prescott kernels; nothing to compare"

summary
