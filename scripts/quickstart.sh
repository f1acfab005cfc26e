#!/usr/bin/env bash
# The README's first command: install what is missing, build (Release), then the main job: train
# DQN on CartPole-v1 with the default config (configs/cartpole.toml) on the default device,
# evaluate the model over 100 greedy episodes, and end with one line: solved or not.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh build
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
