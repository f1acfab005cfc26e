#!/usr/bin/env bash
# docs/cli.md's list of every command's flags (between <!-- flags --> and <!-- /flags -->) against
# each command's own --help, both ways, so that neither drifts from the other.
#   test_docs_flags.sh CUGYM SOURCE_DIR
cugym="$1"
source "$(dirname "$0")/common.sh"
doc="$2/docs/cli.md"

list=$(sed -n '/^<!-- flags -->$/,/^<!-- \/flags -->$/p' "$doc")
[ -n "$list" ] || { fail "docs/cli.md has no <!-- flags --> list"; summary; exit; }
# One line per command: a line starting "cugym CMD" and the indented lines that continue it.
joined=$(printf '%s\n' "$list" | awk '/^cugym /{if (l) print l; l=$0; next} /^ +\[|^ +--/{l=l" "$0} END{if (l) print l}')
documented_commands=$(printf '%s\n' "$joined" | awk '{print $2}' | sort)
commands=$("$cugym" --help | awk '/^commands:/{f=1;next} f && /^  [a-z]/{print $1} f && /^$/{f=0}' | sort)
checks=$((checks + 1))
[ "$documented_commands" = "$commands" ] ||
  fail "commands in docs/cli.md's list: $(echo $documented_commands); in cugym --help: $(echo $commands)"

sdl=no
"$cugym" --version | grep -q 'SDL2 yes' && sdl=yes
for cmd in $commands; do
  checks=$((checks + 1))
  if [ "$cmd" = watch ] && [ "$sdl" = no ]; then
    # A build without SDL2 (the GPU image's) has no watch to list flags for: one line says so.
    out=$("$cugym" watch --help 2>&1) && fail "cugym watch --help without SDL2 exited 0"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q 'built without SDL2' ||
      fail "cugym watch without SDL2 says: $out"
    continue
  fi
  helped=$("$cugym" "$cmd" --help | awk '/^flags:/{f=1;next} f && /^  --/{print $1}' | grep -vx -- '--help' | sort -u)
  documented=$(printf '%s\n' "$joined" | awk -v c="$cmd" '$2 == c' | grep -oE -- '--[a-z][a-z-]*' | sort -u)
  if [ -z "$helped" ] && [ "$cmd" != list ]; then
    fail "cugym $cmd --help lists no flags"
  elif [ "$helped" != "$documented" ]; then
    fail "cugym $cmd: only in --help: $(comm -23 <(echo "$helped") <(echo "$documented") | tr '\n' ' ')" \
         "only in docs/cli.md: $(comm -13 <(echo "$helped") <(echo "$documented") | tr '\n' ' ')"
  fi
done
summary
