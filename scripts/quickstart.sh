#!/usr/bin/env bash
# The README's first command: install what is missing, build (Release), then the main job: train
# DQN on CartPole-v1 with the default config (configs/cartpole.toml) on the default device and
# evaluate the model over 100 greedy episodes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh build
run="runs/quickstart-$(date +%Y%m%d-%H%M%S)"
echo "quickstart: cugym train --config configs/cartpole.toml --out $run"
build/cli/cugym train --config configs/cartpole.toml --out "$run" --set eval_episodes=0
echo "quickstart: cugym eval --model $run/model.safetensors --episodes 100"
build/cli/cugym eval --model "$run/model.safetensors" --episodes 100
