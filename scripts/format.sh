#!/usr/bin/env bash
# Formats cugym's C++ and CUDA sources with clang-format (.clang-format at the root).
#   scripts/format.sh           format every tracked .h/.cpp/.cu/.cuh in place
#   scripts/format.sh --check   list the files that are not formatted; exit 1 if any, 0 if none,
#                               77 (skipped) without clang-format 14, the version the tree uses
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "format: unknown option '$1' (try --help)" >&2; exit 2 ;;
esac

if ! command -v clang-format >/dev/null 2>&1; then
  echo "format: clang-format not found (scripts/setup.sh installs it)"
  exit 77
fi
major="$(clang-format --version | grep -o 'version [0-9]*' | grep -o '[0-9]*$')"
if [ "$check" -eq 1 ] && [ "$major" != "14" ]; then
  echo "format: check skipped: clang-format $major breaks lines differently from 14, which the tree uses"
  exit 77
fi

mapfile -t files < <(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh')
if [ "$check" -eq 0 ]; then
  clang-format -i "${files[@]}"
  echo "format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ "${#bad[@]}" -gt 0 ]; then
  printf 'format: not formatted (run bash scripts/format.sh): %s\n' "${bad[@]}"
  exit 1
fi
echo "format: ${#files[@]} files formatted"
