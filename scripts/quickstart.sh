#!/usr/bin/env bash
# The README's first command: install what is missing, build (Release), then the main job: train
# DQN on CartPole-v1 with the default config (configs/cartpole.toml) on the default device,
# evaluate the model over 100 greedy episodes, and end with one line: solved or not.
# It installs and builds only what that needs (the cugym program, its libraries and the shipped
# plugins; SDL2 and Box2D so that `cugym watch` and LunarLander work next), not the tests:
# scripts/test.sh builds and runs those. A fresh build/ gets the CUDA back end only where a GPU is
# usable, compiled for that GPU alone; an existing build/ keeps its settings.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
bash scripts/setup.sh --run
t_setup=$((SECONDS - t0))
config=()
if [ ! -f build/CMakeCache.txt ]; then
  config=(-DCUGYM_BUILD_TESTS=OFF)
  # The GPU's compute capability (e.g. "9.0" -> 90); none when no GPU is usable.
  arch="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')" || arch=""
  if [[ "$arch" =~ ^[1-9][0-9]{1,2}$ ]]; then
    config+=(-DCUGYM_CUDA=AUTO "-DCMAKE_CUDA_ARCHITECTURES=$arch")
  elif nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    config+=(-DCUGYM_CUDA=AUTO)  # a driver too old to say its GPU's architecture: the default list
  else
    config+=(-DCUGYM_CUDA=OFF)
  fi
fi
bash scripts/build.sh build "${config[@]}"
echo "quickstart: setup $t_setup s, build $((SECONDS - t0 - t_setup)) s"
run="runs/quickstart-$(date +%Y%m%d-%H%M%S)"
echo "quickstart: cugym train --config configs/cartpole.toml --out $run"
build/cli/cugym train --config configs/cartpole.toml --out "$run"
# The last line says whether the trained agent solved the env (eval.json: the greedy evaluation
# of the final model over 100 episodes, and the best one during training).
python3 - "$run/eval.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
best = e.get("best") or {}
solved = e["threshold"] is not None and e["mean_return"] >= e["threshold"]
print(f"quickstart: {e['env']} {'SOLVED' if solved else 'NOT solved'}: greedy mean return {e['mean_return']:.1f} "
      f"+- {e['std_return']:.1f} over {e['episodes']} episodes (threshold {e['threshold']}); best during training "
      f"{best.get('mean_return', float('nan')):.1f} at step {best.get('global_step', '-')}"
      + (f"; threshold first reached at step {e['threshold_step']} after {e['threshold_seconds']:.1f} s of training"
         if e.get("threshold_step") is not None else ""))
PY
