#!/usr/bin/env bash
# Exact resume with a shipped config as it is (configs/acrobot.toml, on the CPU): a run stopped
# by SIGINT twice and resumed, and a run killed (SIGKILL) after its first periodic checkpoint and
# resumed, end with the model of the run that never stopped, bit for bit, and their metrics.csv
# has the same rows (but for the wall-clock columns), none missing and none twice. Every train and
# resume names --device cpu: the default, auto, would resume on CUDA on a GPU machine and compare
# those bits with the CPU's.
# The same SIGINT case for PQN (configs/cartpole_pqn.toml without its early stop), whose checkpoints
# fall between rollouts.
#   test_resume.sh CUGYM SOURCE_DIR
# CUGYM_SHORT_E2E=1 (the sanitizer build's ctest sets it) trains 20k steps with checkpoints every
# 5k instead: the same code, a fifth of the time.
set -u
cugym="$1"
config="$2/configs/acrobot.toml"  # 100k steps without an early stop, checkpoints every 25k
short=(--set total_steps=20000 --set checkpoint_interval=5000)
first_checkpoint=step_000000025000.safetensors
if [ "${CUGYM_SHORT_E2E:-0}" = 1 ]; then first_checkpoint=step_000000005000.safetensors; else short=(); fi
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
export OPENBLAS_NUM_THREADS=1  # the same BLAS kernels in every run, whatever else runs beside

train() { "$cugym" train --device cpu --config "$config" "${short[@]}" "$@"; }
# interrupt_after SECONDS ARGS...: runs cugym ARGS, sends it SIGINT after SECONDS unless it finished,
# waits; succeeds when cugym exited 130 after saying it was interrupted, or 0 after finishing.
# (cugym itself, not a shell function: the signal must reach its process.)
interrupt_after() {
  local seconds=$1
  shift
  "$cugym" "$@" >"$tmp/one" 2>&1 &
  local pid=$!
  sleep "$seconds"
  kill -INT "$pid" 2>/dev/null
  wait "$pid"
  local rc=$?
  cat "$tmp/one" >>"$tmp/log"
  if grep -q '^interrupted at step' "$tmp/one"; then [ $rc -eq 130 ]; else [ $rc -eq 0 ]; fi
}
# Rows without wall_time (2nd column) and sps (8th).
rows() { cut -d, -f1,3-7 "$1/metrics.csv"; }

checks=$((checks + 1))
train --out "$tmp/full" >"$tmp/log" 2>&1 || fail "the uninterrupted run failed: $(tail -n 2 "$tmp/log")"

checks=$((checks + 1))
interrupt_after 0.7 train --device cpu --config "$config" "${short[@]}" --out "$tmp/int" ||
  fail "interrupted run: not exit 130 after its interruption (or 0 finished)"
interrupt_after 0.7 train --resume "$tmp/int" --device cpu || fail "first resume: not exit 130 after its interruption (or 0 finished)"
"$cugym" train --resume "$tmp/int" --device cpu >>"$tmp/log" 2>&1 || fail "second resume failed: $(tail -n 2 "$tmp/log")"
stops=$(grep -c '^interrupted at step' "$tmp/log")
echo "test_resume: the SIGINT run stopped $stops time(s) before finishing"
if ! cmp -s "$tmp/full/model.safetensors" "$tmp/int/model.safetensors"; then fail "SIGINT: another model"; fi
if [ "$(rows "$tmp/full")" != "$(rows "$tmp/int")" ]; then
  fail "SIGINT: other metrics rows"; diff <(rows "$tmp/full") <(rows "$tmp/int") | head -n 10
fi

checks=$((checks + 1))
"$cugym" train --device cpu --config "$config" "${short[@]}" --out "$tmp/kill" >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do  # the first periodic checkpoint, then a few more rows
  [ -e "$tmp/kill/checkpoints/$first_checkpoint" ] && break
  sleep 0.05
done
sleep 0.3
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
echo "test_resume: killed with $(($(wc -l <"$tmp/kill/metrics.csv") - 1)) rows written"
"$cugym" train --resume "$tmp/kill" --device cpu >>"$tmp/log" 2>&1 || fail "resume after SIGKILL failed: $(tail -n 2 "$tmp/log")"
if ! cmp -s "$tmp/full/model.safetensors" "$tmp/kill/model.safetensors"; then fail "SIGKILL: another model"; fi
if [ "$(rows "$tmp/full")" != "$(rows "$tmp/kill")" ]; then
  fail "SIGKILL: other metrics rows"; diff <(rows "$tmp/full") <(rows "$tmp/kill") | head -n 10
fi

checks=$((checks + 1))
pqn=(--device cpu --config "$2/configs/cartpole_pqn.toml" --set stop_at_threshold=false --set total_steps=60000
  --set checkpoint_interval=16384)
if [ "${CUGYM_SHORT_E2E:-0}" = 1 ]; then pqn+=(--set total_steps=12000 --set eval_episodes=10); fi
"$cugym" train "${pqn[@]}" --out "$tmp/pqn_full" >"$tmp/log" 2>&1 || fail "PQN: the uninterrupted run failed: $(tail -n 2 "$tmp/log")"
interrupt_after 0.3 train "${pqn[@]}" --out "$tmp/pqn_int" || fail "PQN: interrupted run: not exit 130 (or 0 finished)"
"$cugym" train --resume "$tmp/pqn_int" --device cpu >>"$tmp/log" 2>&1 || fail "PQN: resume failed: $(tail -n 2 "$tmp/log")"
echo "test_resume: the PQN run stopped $(grep -c '^interrupted at step' "$tmp/log") time(s) before finishing"
if ! cmp -s "$tmp/pqn_full/model.safetensors" "$tmp/pqn_int/model.safetensors"; then fail "PQN SIGINT: another model"; fi
if [ "$(rows "$tmp/pqn_full")" != "$(rows "$tmp/pqn_int")" ]; then
  fail "PQN SIGINT: other metrics rows"; diff <(rows "$tmp/pqn_full") <(rows "$tmp/pqn_int") | head -n 10
fi

summary
