#!/usr/bin/env bash
# agents/ is layered (docs/design-notes.md, "Agents by family"): common/ at the bottom, the two
# families off_policy/ and on_policy/ above it and apart, run/ and device/ on top. A file may
# include its own folder and the folders below it, never one beside or above: this lists every
# include that breaks that, and fails on any. It also checks itself on a copy with one such
# include added.
# Usage: test_layers.sh SOURCE_DIR
set -euo pipefail
src=$1

level() {
  case $1 in
    common) echo 0 ;;
    off_policy | on_policy) echo 1 ;;
    run | device) echo 2 ;;
    *) echo "unknown agents/ folder: $1" >&2; return 1 ;;
  esac
}

# Prints each bad include of the agents/ folder under $1; returns how many there are (at most 1).
arrows() {
  local root=$1 bad=0 folder file target
  for dir in "$root"/agents/*/; do
    folder=$(basename "$dir")
    level "$folder" > /dev/null
    while IFS= read -r line; do
      file=${line%%:*}
      target=$(sed -E 's|.*#include "agents/([a-z_]+)/.*|\1|' <<< "$line")
      if [[ $target != "$folder" && $(level "$target") -ge $(level "$folder") ]]; then
        echo "${file#"$root"/}: includes agents/$target/ (a layer beside or above agents/$folder/)"
        bad=1
      fi
    done < <(grep -H '#include "agents/[a-z_]*/' "$dir"* || true)
  done
  return $bad
}

if ! arrows "$src"; then
  echo "FAIL: agents/ includes across its layers (above)"
  exit 1
fi

copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -r "$src/agents" "$copy/agents"
echo '#include "agents/on_policy/ppo.h"' >> "$copy/agents/off_policy/dqn.cpp"
if arrows "$copy" > "$copy/out"; then
  echo "FAIL: an include of on_policy/ from off_policy/ went unnoticed"
  exit 1
fi
grep -q 'agents/off_policy/dqn.cpp: includes agents/on_policy/' "$copy/out"
echo "agents/ layers: no include beside or above its folder"
