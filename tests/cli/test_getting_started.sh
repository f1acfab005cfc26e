#!/usr/bin/env bash
# docs/getting-started.md as a user types it: every ```bash block, in order, in one scratch folder
# that looks like the repository root after quickstart (build/ is this build tree; configs/ and
# examples/ are the sources'). The blocks run as written; only the environment carries this
# build's generator, compiler and CUDA architectures, so that the out-of-tree plugin is built as
# this build was. A block that opens a window runs under xvfb-run, and is skipped where this build
# has no SDL2 or there is no xvfb-run; one that writes a GIF or MP4 is skipped without ffmpeg.
#   test_getting_started.sh BUILD_DIR SOURCE_DIR GENERATOR MAKE_PROGRAM CXX [CUDA_ARCHS CUDACXX]
set -uo pipefail
build="$1" src="$2"
export CMAKE_GENERATOR="$3" CMAKE_MAKE_PROGRAM="$4" CXX="$5"
[ -n "${6:-}" ] && export CUDAARCHS="$6" CUDACXX="$7"
doc="$src/docs/getting-started.md"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ln -s "$build" "$tmp/build"
ln -s "$src/configs" "$tmp/configs"
ln -s "$src/examples" "$tmp/examples"

# The blocks, one file each: block_1.sh, block_2.sh, ...
awk -v dir="$tmp" '
  /^```bash$/ { n++; file = dir "/block_" n ".sh"; inside = 1; next }
  /^```/ && inside { inside = 0; close(file); next }
  inside { print > file }
' "$doc"
blocks=$(ls "$tmp"/block_*.sh 2>/dev/null | wc -l)
if [ "$blocks" -lt 6 ]; then
  echo "FAIL: expected at least 6 bash blocks in $doc, found $blocks"
  exit 1
fi

sdl=no
"$build/cli/cugym" --version | grep -q 'SDL2 yes' && sdl=yes
failures=0
for i in $(seq 1 "$blocks"); do
  block="$tmp/block_$i.sh"
  runner=(bash -euo pipefail "$block")
  if grep -q 'cugym watch' "$block"; then
    if [ "$sdl" = no ] || ! command -v xvfb-run >/dev/null 2>&1; then
      echo "SKIP block $i (a window: needs SDL2 in this build and xvfb-run)"
      continue
    fi
    runner=(xvfb-run -a -s "-screen 0 1024x768x24" "${runner[@]}")
  fi
  if grep -Eq '\.(gif|mp4)( |$)' "$block" && ! command -v ffmpeg >/dev/null 2>&1; then
    # Without ffmpeg (the GPU image) the block's other lines still run: record's PNG frames.
    echo "SKIP the GIF and MP4 lines of block $i (they need ffmpeg)"
    grep -Ev '\.(gif|mp4)( |$)' "$block" >"$block.rest" || true
    mv "$block.rest" "$block"
    [ -s "$block" ] || continue
  fi
  echo "== block $i:"
  sed 's/^/   $ /' "$block"
  t0=$SECONDS
  if (cd "$tmp" && "${runner[@]}") >"$tmp/out_$i" 2>&1; then
    echo "   ok ($((SECONDS - t0)) s)"
  else
    echo "FAIL: block $i exited non-zero; its output:"
    sed 's/^/   | /' "$tmp/out_$i" | tail -n 40
    failures=$((failures + 1))
  fi
done

# What the page says the commands give.
check() { [ -e "$tmp/$1" ] || { echo "FAIL: $1 missing after the page's commands"; failures=$((failures + 1)); }; }
check runs/cartpole/model.safetensors
check runs/cartpole/eval.json
check cartpole_frames/frame_00000.png
check runs/cartpole4/summary.md
check runs/cartpole4/seed_4/model.safetensors
check build-catch/libcugym_catch.so
check runs/catch/model.safetensors
echo "$blocks blocks, $failures failed"
[ "$failures" -eq 0 ]
