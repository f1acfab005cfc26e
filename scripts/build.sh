#!/usr/bin/env bash
# Configures and builds cugym.
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]
# BUILD_DIR defaults to build/ in the repository root (a relative BUILD_DIR is taken from the
# current directory); a new build dir gets Release (-DCMAKE_BUILD_TYPE=... overrides it).
# Uses Ninja when installed, else make; an existing build dir keeps its generator.
# Builds with -j$(nproc) (set CUGYM_JOBS to change).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

build_dir="$root/build"
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then  # first argument is a directory, not a cmake flag
  build_dir="$1"
  shift
fi
case "$build_dir" in /*) ;; *) build_dir="$PWD/$build_dir" ;; esac

# The CUDA toolkit installs nvcc outside the default PATH.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

# A fresh build dir gets a generator and Release; an existing one keeps what it has.
fresh=()
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  if command -v ninja >/dev/null 2>&1; then fresh=(-G Ninja); else fresh=(-G "Unix Makefiles"); fi
  fresh+=(-DCMAKE_BUILD_TYPE=Release)
fi

jobs="${CUGYM_JOBS:-$(nproc)}"
echo "build: configuring $build_dir ${*}"
cmake -S "$root" -B "$build_dir" "${fresh[@]}" "$@"
echo "build: building with $jobs jobs"
cmake --build "$build_dir" -j "$jobs"
echo "build: done ($build_dir)"
