#!/usr/bin/env bash
# The model files a build gives for every shipped DQN and PQN config family (CartPole, Acrobot,
# MountainCar, LunarLander, one MinAtar game) at a short --total-steps, seeds 1-3: trained alone,
# as one `--seeds 1-3` batch trained apart and in lockstep, and resumed from the half-way
# checkpoint of a run folder written by another build (OLD: an earlier output of this script).
# Writes OUT (a new folder)/hashes.tsv (config, mode, seed, sha256 of model.safetensors but its cugym.version);
# compare two with diff.
#
#   bash bench/model_bytes.sh BIN OUT [OLD]
#
# BIN is a cugym binary (build/cli/cugym). A batch mode the build refuses (lockstep PQN before
# lanes) is written as "refused". CPU only: the bits are the CPU's claim.
set -euo pipefail
bin=$(realpath "$1")
out=$2
old=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then
  echo "model_bytes.sh: $out exists and is not empty; give a new folder" >&2
  exit 2
fi
mkdir -p "$out"
out=$(realpath "$out")
hashes=$out/hashes.tsv
: >"$hashes"

# config total_steps (a multiple of 2 * num_envs * num_steps, so the half-way checkpoint falls
# on an iteration)
runs=(
  "cartpole 8000" "acrobot 8000" "mountain_car 8000" "lunar_lander 12000" "minatar_breakout 6000"
  "cartpole_pqn 8192" "acrobot_pqn 8192" "minatar_breakout_pqn 16384"
)

# The file's tensors and metadata but its cugym.version, which names the build.
sha() {
  python3 -c '
import hashlib, json, os, struct, sys
path = sys.argv[1]
if not os.path.exists(path):
    sys.exit(print("missing"))
data = open(path, "rb").read()
size = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8 : 8 + size])
header.get("__metadata__", {}).pop("cugym.version", None)
print(hashlib.sha256(json.dumps(header, sort_keys=True).encode() + data[8 + size :]).hexdigest()[:16])
' "$1"
}

for entry in "${runs[@]}"; do
  read -r name steps <<<"$entry"
  common=(--config "$root/configs/$name.toml" --device cpu --total-steps "$steps"
    --set "checkpoint_interval=$((steps / 2))" --set stop_at_threshold=false)
  for seed in 1 2 3; do
    dir=$out/$name/solo_$seed
    "$bin" train "${common[@]}" --seed "$seed" --out "$dir" >/dev/null
    printf '%s\tsolo\t%s\t%s\n' "$name" "$seed" "$(sha "$dir/model.safetensors")" >>"$hashes"
  done
  for lockstep in off on; do
    dir=$out/$name/batch_$lockstep
    if "$bin" train "${common[@]}" --seeds 1-3 --lockstep "$lockstep" --jobs 1 --out "$dir" >/dev/null 2>&1; then
      for seed in 1 2 3; do
        printf '%s\tlockstep_%s\t%s\t%s\n' "$name" "$lockstep" "$seed" "$(sha "$dir/seed_$seed/model.safetensors")" >>"$hashes"
      done
    else
      printf '%s\tlockstep_%s\t-\trefused\n' "$name" "$lockstep" >>"$hashes"
    fi
  done
  if [ -n "$old" ]; then
    for seed in 1 2 3; do
      # OLD's solo run cut back to its half-way checkpoint, resumed by BIN.
      dir=$out/$name/resumed_$seed
      rm -rf "$dir"
      cp -r "$old/$name/solo_$seed" "$dir"
      rm -f "$dir/model.safetensors" "$dir/best.safetensors" "$dir/eval.json"
      rm -f "$dir/checkpoints/step_$(printf '%012d' "$steps").safetensors"
      "$bin" train --resume "$dir" >/dev/null
      printf '%s\tresumed\t%s\t%s\n' "$name" "$seed" "$(sha "$dir/model.safetensors")" >>"$hashes"
    done
  fi
done
cat "$hashes"
