#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages cugym needs, only those that are missing.
#   scripts/setup.sh            everything (core build + SDL2, SDL2_ttf, libpng, a font, Box2D, ffmpeg, xvfb)
#   scripts/setup.sh --minimal  only the core build (compiler, cmake, make, gtest, OpenBLAS, Thrust)
#   scripts/setup.sh --run      what building and running cugym needs (core build, SDL2 rendering,
#                               Box2D), without the test tools (gtest, clang-format, the Python
#                               headers, Xvfb, unshare/ip) or ffmpeg: scripts/quickstart.sh's set
# When nothing is missing it makes no apt call at all (works offline). As root it installs;
# otherwise it uses passwordless sudo if there is one, else prints the command and exits 1.
set -euo pipefail

minimal=0
run_only=0
for arg in "$@"; do
  case "$arg" in
    --minimal) minimal=1 ;;
    --run) run_only=1 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

say() { echo "setup: $*"; }

# apt's and dpkg's chatter goes to a log that is shown only when a step fails.
log="$(mktemp "${TMPDIR:-/tmp}/cugym-setup.XXXXXX")"
trap 'rm -f "$log"' EXIT
quiet() {
  local rc=0
  "$@" >"$log" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] && return 0
  tail -n 20 "$log" | sed 's/^/  | /'
  return "$rc"
}

if ! command -v dpkg-query >/dev/null 2>&1; then
  say "no dpkg-query: not a Debian-like system; install by hand: a C++17 compiler, cmake >= 3.25," \
      "make, GoogleTest, OpenBLAS, OpenMP, Thrust (CUDA toolkit or libthrust-dev)"
  exit 1
fi

installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }

# The CUDA toolkit ships Thrust (include/cccl); without one we need Debian's libthrust-dev.
have_cuda_toolkit() {
  command -v nvcc >/dev/null 2>&1 || [ -d /usr/local/cuda/include/cccl ]
}

cmake_version() { cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9][0-9.]*\).*/\1/p' | head -n1; }
cmake_ok() {  # cmake on PATH and >= 3.25 (a pip/Kitware cmake counts as well as the dpkg one)
  local v major minor
  v="$(cmake_version)"
  [ -n "$v" ] || return 1
  major="${v%%.*}"; minor="${v#*.}"; minor="${minor%%.*}"
  [ "$major" -gt 3 ] || { [ "$major" -eq 3 ] && [ "$minor" -ge 25 ]; }
}

missing=()
need() {  # need PACKAGE [COMMAND]: missing unless the package is installed (or COMMAND works)
  local pkg="$1" alt="${2:-}"
  if installed "$pkg"; then return; fi
  if [ -n "$alt" ] && eval "$alt" >/dev/null 2>&1; then return; fi
  missing+=("$pkg")
}

# Core build.
need build-essential "installed g++ || command -v g++"
need cmake cmake_ok
need make "command -v make"
need pkg-config "command -v pkg-config"
need libopenblas-dev
if ! have_cuda_toolkit; then need libthrust-dev; fi
if [ "$run_only" -eq 0 ]; then
  need libgtest-dev
  need clang-format "command -v clang-format"  # scripts/test.sh checks the formatting
  # The Python package (scripts/test.sh installs it into a venv): venv/ensurepip and Python.h.
  need python3-venv "python3 -c 'import venv, ensurepip'"
  need python3-dev "python3 -c 'import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()[\"include\"], \"Python.h\"))'"
fi
core_count=${#missing[@]}

# Rendering (SDL2, SDL2_ttf, libpng, a font) and the Box2D envs; then video encoding, a headless
# display for the tests, and what the Ray Tune test needs (a network namespace: unshare and ip).
if [ "$minimal" -eq 0 ]; then
  for pkg in libsdl2-dev libsdl2-ttf-dev libpng-dev fonts-dejavu-core libbox2d-dev; do need "$pkg"; done
  if [ "$run_only" -eq 0 ]; then
    for pkg in ffmpeg xvfb; do need "$pkg"; done
    need util-linux "command -v unshare"
    need iproute2 "command -v ip"
  fi
fi

if [ ${#missing[@]} -eq 0 ]; then
  say "all packages present$([ "$minimal" -eq 1 ] && echo ' (minimal)')$([ "$run_only" -eq 1 ] && echo ' (run)'), nothing to install"
else
  say "missing: ${missing[*]}"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo)
    else
      say "not root; run:"
      echo "  sudo apt-get update && sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  say "apt-get update"
  quiet "${sudo[@]}" apt-get update || say "apt-get update failed (trying the install anyway)"
  say "apt-get install ${missing[*]}"
  if ! quiet "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"; then
    # An optional package that cannot be fetched must not block the core build.
    core=("${missing[@]:0:core_count}")
    if [ ${#core[@]} -gt 0 ]; then
      say "install failed; retrying with the core packages only: ${core[*]}"
      quiet "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${core[@]}" \
        || { say "ERROR: could not install the core packages: ${core[*]}"; exit 1; }
    fi
    say "WARNING: optional packages not installed: ${missing[*]:core_count}"
  fi
fi

if ! cmake_ok; then
  v="$(cmake_version)"
  say "ERROR: cmake >= 3.25 is required, found ${v:-none} at $(command -v cmake || echo '(not on PATH)')." \
      "Install a newer one, e.g. 'pip install cmake' or https://apt.kitware.com"
  exit 1
fi
say "ok (cmake $(cmake_version)$(have_cuda_toolkit && echo ', CUDA toolkit found' || echo ', no CUDA toolkit: Thrust from libthrust-dev'))"
