#!/usr/bin/env bash
# The README's first command: install what is missing, build (Release), run the main job.
# The main job is a CartPole-v1 benchmark on the default device (GPU when usable, else CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh build
echo "quickstart: cugym bench --env CartPole-v1 --num-envs 1048576 --steps 200"
build/cli/cugym bench --env CartPole-v1 --num-envs 1048576 --steps 200 --device auto
