#!/usr/bin/env bash
# A run whose disk fills at its end keeps what it trained: model.safetensors and eval.json are
# written before the (larger) final checkpoint, and the error names what could not be written.
# The run folder is a 1 MiB tmpfs in a mount namespace of the test's own (root and unshare -m;
# skipped, exit 77, without them).
#   test_full_disk.sh CUGYM
set -u
cugym="$1"
if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
  echo "skipped: needs root and unshare -m to mount a small tmpfs"
  exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Everything is checked inside the namespace: its mount is gone once it exits.
unshare -m bash -s "$work" "$cugym" <<'INNER'
set -u
disk="$1"; cugym="$2"
mount -t tmpfs -o size=1m tmpfs "$disk" || { echo "skipped: cannot mount a tmpfs"; exit 77; }
fail() { echo "FAIL: $*"; cat "$disk/err.txt" 2>/dev/null; exit 1; }
# CartPole's replay memory (50,000 transitions, about 2.4 MB) does not fit; its model (43 KB) does.
"$cugym" train --env CartPole-v1 --total-steps 3000 --set learning_starts=500 --set eval_interval=1000 \
  --set eval_episodes=10 --set checkpoint_interval=0 --set tensorboard=false --out "$disk/run" --device cpu \
  >"$disk/out.txt" 2>"$disk/err.txt"
rc=$?
[ "$rc" -ne 0 ] || fail "a run that could not write its checkpoint exited 0"
grep -q "could not write its last checkpoint" "$disk/err.txt" || fail "the error does not name the checkpoint"
[ "$(grep -c . "$disk/err.txt")" -le 3 ] || fail "more than the notes and one error line"
[ -s "$disk/run/model.safetensors" ] || fail "model.safetensors is not there"
[ -s "$disk/run/eval.json" ] || fail "eval.json is not there"
grep -q '"mean_return"' "$disk/run/eval.json" || fail "eval.json is not the final evaluation"
"$cugym" eval --model "$disk/run/model.safetensors" --episodes 2 --device cpu >/dev/null 2>&1 ||
  fail "the model does not evaluate"
ls "$disk/run/checkpoints" | grep -q 'safetensors.tmp' && fail "a temporary file is left"
echo "PASS: exit $rc; $(tail -n 1 "$disk/err.txt")"
INNER
