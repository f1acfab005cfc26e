#!/usr/bin/env bash
# Exact resume of a Box2D env: a LunarLander-v3 DQN run killed (SIGKILL) after its first periodic
# checkpoint and resumed ends with the model of the run that never stopped, bit for bit, as the
# classic envs do (test_resume.sh). The checkpoint holds each env's episode (its start and actions,
# VectorEnvSnapshot::episode_starts/episode_actions), which the resume replays to rebuild the Box2D
# worlds with their contacts and warm-start impulses. A small network and 40,000 steps (about 10 s
# a run on two cores); every run names --device cpu.
#   test_box2d_resume.sh CUGYM SOURCE_DIR
set -u
cugym="$1"
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
export OPENBLAS_NUM_THREADS=1
small=(--device cpu --config "$2/configs/lunar_lander.toml" --set total_steps=40000 --set hidden_sizes=[64,64]
  --set learning_starts=5000 --set buffer_size=40000 --set checkpoint_interval=10000 --set eval_episodes=0
  --set log_interval=1000 --set stop_at_threshold=false)
first_checkpoint=step_000000010000.safetensors

checks=$((checks + 1))
if ! "$cugym" train "${small[@]}" --out "$tmp/full" >"$tmp/log" 2>&1; then
  fail "the uninterrupted run failed: $(tail -n 2 "$tmp/log")"
  summary
  exit
fi

checks=$((checks + 1))
"$cugym" train "${small[@]}" --out "$tmp/kill" >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 1 1200); do
  [ -e "$tmp/kill/checkpoints/$first_checkpoint" ] && break
  sleep 0.05
done
sleep 0.3
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
[ -e "$tmp/kill/checkpoints/$first_checkpoint" ] || fail "no checkpoint before the kill"
[ -e "$tmp/kill/model.safetensors" ] && fail "the run finished before it was killed (nothing tested)"
"$cugym" train --resume "$tmp/kill" --device cpu >>"$tmp/log" 2>&1 || fail "resume after SIGKILL failed: $(tail -n 2 "$tmp/log")"
cmp -s "$tmp/full/model.safetensors" "$tmp/kill/model.safetensors" || fail "SIGKILL and resume: another model"
cut -d, -f1,3-7 "$tmp/full/metrics.csv" >"$tmp/full.rows"
cut -d, -f1,3-7 "$tmp/kill/metrics.csv" >"$tmp/kill.rows"
cmp -s "$tmp/full.rows" "$tmp/kill.rows" || { fail "other metrics rows"; diff "$tmp/full.rows" "$tmp/kill.rows" | head; }

# A lockstep batch (--seeds in one batched network: its agents' envs are one batch in lanes, their
# checkpoints one per run folder) killed and resumed the same way. (Gradient clipping does not
# batch, so without it.)
batch=("${small[@]}" --set max_grad_norm=0 --seeds 1-2 --lockstep on)
checks=$((checks + 1))
"$cugym" train "${batch[@]}" --out "$tmp/batch_full" >"$tmp/log" 2>&1 || fail "the uninterrupted batch failed: $(tail -n 2 "$tmp/log")"
"$cugym" train "${batch[@]}" --out "$tmp/batch_kill" >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 1 1200); do
  [ -e "$tmp/batch_kill/seed_2/checkpoints/$first_checkpoint" ] && break
  sleep 0.05
done
sleep 0.3
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
[ -e "$tmp/batch_kill/seed_2/model.safetensors" ] && fail "the batch finished before it was killed (nothing tested)"
"$cugym" train --resume "$tmp/batch_kill" --device cpu >>"$tmp/log" 2>&1 || fail "batch resume failed: $(tail -n 2 "$tmp/log")"
for seed in 1 2; do
  cmp -s "$tmp/batch_full/seed_$seed/model.safetensors" "$tmp/batch_kill/seed_$seed/model.safetensors" ||
    fail "lockstep batch, SIGKILL and resume: another model for seed $seed"
done

summary
